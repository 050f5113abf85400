"""ZKL-RADMM items: per item `run_<item>(params)` (loads Adult, runs), `plot_<item>(result)` ({file name:
figure}), `metrics_<item>(result)` (write_metrics keyword arguments) and, where the notebook shows one,
`table_<item>(result, metrics)`; below them pure functions over arrays (`fig1`, `fig2`, `fig3`, ...).

Private runs record what they spent (History.spends, algorithms.decentralized); the privacy totals P(T) reported here
are taken from those records, and the curves P(t) from the schedules the records hold. The DVP / PP noise is matched
to R-ADMM's P(T) before the runs, by bisection on the bounds.

Every loss compared is written beside its trivial references: `L_init` (L(0) of the random starting point, per
repeat) and `L_zero` (the zero model's loss on the item's data, ln 2). Figures: `<item>` in the paper's form,
`<item>_ours` with our additions.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import decentralized as dz
from ..datasets import load
from ..mechanisms import zhang2018 as zm
from ..privacy.bounds import zhang2018 as bounds
from .parts import gather
from .plotting import accuracy_privacy, metrics_table, summary
from .progress import progress

PAPER = "zhang2018_radmm"
DATASET = "adult_zhang2018"


def _adult():
    data = load(DATASET)
    return data["X"], data["y"]


def _network(X, y, params: dict, graph: dict, seed: int, *labels: str):
    return dz.network(X, y, graph, seed, PAPER, *labels, split=params.get("split", "even"),
                      min_size=params.get("min_size"), subsample=params.get("subsample"))


def _solver(params):
    return {"tol": float(params.get("newton_tol", 1e-9)), "max_steps": int(params.get("newton_max_steps", 50))}


def fig1(X, y, params: dict, seed: int) -> dict:
    """Fig. 1: non-private R-ADMM for several gamma vs conventional ADMM (8)-(9), eta fixed, per network."""
    T = int(params["iterations"])
    K = T // 2
    out = {}
    for net_name, net in progress(params["networks"].items(), "networks", name=lambda kv: kv[0]):
        data, A = _network(X, y, params, net, seed, "fig1", net_name)
        N, d = data.n_nodes, data.dim
        C, rho, eta = float(params["C"]), float(params["rho"]), float(params["eta"])
        fc = dz.centralized_optimum(data, C, rho)
        f0 = dz.initial_points(seed, 1, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig1", net_name)
        res = {"L_star": dz.optimum_loss(data, fc), "N": N, "radmm": {},
               "L_init": float(dz.average_loss(data, f0)[0]), "edges": int(A.sum() // 2)}
        h = dz.conventional_admm(data, A, C=C, rho=rho, eta=eta, T=2 * K, f0=f0, fc=fc, **_solver(params))
        res["admm"] = {**_trace(h), "step_seconds": h.meta["step_seconds"]}
        for gamma in progress(params["gammas"], f"{net_name}: R-ADMM", name=lambda g: f"gamma = {g}"):
            h = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=float(gamma), K=K, f0=f0, fc=fc, **_solver(params))
            res["radmm"][float(gamma)] = {**_trace(h), "odd_seconds": h.meta["odd_seconds"],
                                          "even_seconds": h.meta["even_seconds"]}
        out[net_name] = res
    return out


def _trace(h) -> dict:
    """One run's traces: L(t), the distance to f_c* and the Newton steps of its local solves (their sum over every
    node and local solve: the passes over the data that the run's Newton steps made)."""
    return {"L": h.traces["L"][0], "dist": h.traces["dist"][0], "newton_steps_max": h.meta["newton_steps_max"],
            "newton_steps_mean": h.meta["newton_steps_mean"], "local_residual_max": h.meta["local_residual_max"],
            "newton_steps_total": h.meta["newton_steps_total"], "local_solves": h.meta["local_solves"]}


def even_increase(L: np.ndarray) -> np.ndarray:
    """max(L(2k) - L(2k-1), 0) for k = 1..K: how much each even (linearised) step raised the loss."""
    return np.maximum(L[2::2] - L[1::2], 0.0)


def half_odd(T: int) -> int:
    """The odd iteration at about T/2, where the 'odd iterations like ADMM' claim is judged."""
    h = T // 2
    return h if h % 2 else h - 1


def odd_rate(dist: np.ndarray, T: int) -> float:
    """The linear convergence rate of the odd iterates: minus the least-squares slope of ln ||f-hat(t) - 1 f_c*^T||
    over the odd t from half_odd(T) to T - 1 (per iteration, past the start's transient)."""
    t = np.arange(half_odd(T), T, 2)
    return float(-np.polyfit(t, np.log(dist[t]), 1)[0])


def compensated(L: np.ndarray, floor: float = 1e-12) -> tuple[int, float]:
    """ "The odd iterations will always compensate this increase" (Allerton §V-A): over the pairs k whose even step
    raised the loss, L(2k) > L(2k-1) + floor, (their number, the fraction whose next odd step brings the loss back
    below where it was before the increase, L(2k+1) <= L(2k-1) + floor). `floor` keeps round-off out of both counts.
    """
    rise = np.flatnonzero(L[2:-1:2] > L[1:-2:2] + floor)  # k - 1 for pairs with an odd step after them
    if rise.size == 0:
        return 0, float("nan")
    return int(rise.size), float(np.mean(L[3::2][rise] <= L[1:-2:2][rise] + floor))


def _ratio_se(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """mean(a) / mean(b) of two independent samples of step times, and its delta-method standard error."""
    ma, mb = a.mean(), b.mean()
    sa, sb = a.std(ddof=1) / np.sqrt(a.size), b.std(ddof=1) / np.sqrt(b.size)
    return float(ma / mb), float(np.hypot(sa / mb, ma * sb / mb ** 2))


def fig1_metrics(res: dict, T: int, gamma_default: float) -> dict:
    """Fig. 1 metrics per network `net` and gamma `g`: at t_h = half_odd(T) (an odd iteration, about T/2) and at the
    last odd iteration T-1, the gap L(t) - L* and the distance ||f-hat(t) - 1 f_c*^T||_F of R-ADMM and of ADMM, and
    their R-ADMM / ADMM ratios; the convergence rule of both ZKL papers: the share of the starting gap still open at
    T-1, (L(T-1) - L*) / (L(0) - L*), and the distance's shrink dist(T-1) / dist(t_h); the linear rate of the odd iterates (`odd_rate`) and its ratio to ADMM's; the
    oscillation as the mean loss increase at even steps, mean_k max(L(2k) - L(2k-1), 0), and the fraction of even
    steps that raise the loss; how often the next odd step compensates a rise (`compensated`); computation: the mean
    wall time of an even update and of an odd update over ADMM's mean update (with standard errors), and the Newton
    steps (passes over the data) of the whole run over ADMM's. The default gamma's metrics are also written as
    '<net>.radmm.<metric>', the other gammas' as '<net>.radmm.<metric>@g<gamma>' (variants)."""
    th = half_odd(T)
    m = {"t_half": th}
    for net, r in res.items():
        Ls, a = r["L_star"], r["admm"]
        m[f"{net}.L_star"] = Ls
        m[f"{net}.L_init"] = r["L_init"]
        m[f"{net}.edges"] = r["edges"]
        m[f"{net}.admm.L_final"] = a["L"][-1]
        m[f"{net}.admm.gap_half"] = a["L"][th] - Ls
        m[f"{net}.admm.dist_half"] = a["dist"][th]
        m[f"{net}.admm.gap_odd_final"] = a["L"][T - 1] - Ls
        m[f"{net}.admm.dist_odd_final"] = a["dist"][T - 1]
        m[f"{net}.admm.gap_left_odd_final"] = (a["L"][T - 1] - Ls) / (r["L_init"] - Ls)
        m[f"{net}.admm.dist_shrink"] = a["dist"][T - 1] / a["dist"][th]
        m[f"{net}.admm.rate"] = odd_rate(a["dist"], T)
        m[f"{net}.admm.step_seconds_mean"] = float(a["step_seconds"].mean())
        m[f"{net}.admm.newton_steps_total"] = a["newton_steps_total"]
        m[f"{net}.admm.newton_steps_max"] = a["newton_steps_max"]
        for g, rr in r["radmm"].items():
            L, dist, k = rr["L"], rr["dist"], f"{net}.g{g:g}"
            n_rise, comp = compensated(L)
            even, even_se = _ratio_se(rr["even_seconds"], a["step_seconds"])
            pair, pair_se = _ratio_se(rr["odd_seconds"] + rr["even_seconds"], 2.0 * a["step_seconds"])
            g_m = {"L_final": L[-1], "gap_half": L[th] - Ls, "dist_half": dist[th],
                   "gap_ratio_half": (L[th] - Ls) / (a["L"][th] - Ls), "dist_ratio_half": dist[th] / a["dist"][th],
                   "gap_odd_final": L[T - 1] - Ls, "dist_odd_final": dist[T - 1],
                   "dist_ratio_odd_final": dist[T - 1] / a["dist"][T - 1], "rate": odd_rate(dist, T),
                   "gap_left_odd_final": (L[T - 1] - Ls) / (r["L_init"] - Ls), "dist_shrink": dist[T - 1] / dist[th],
                   "rate_ratio": odd_rate(dist, T) / odd_rate(a["dist"], T),
                   "even_increase_mean": even_increase(L).mean(), "even_increase_frac": float(np.mean(L[2::2] > L[1::2])),
                   "rises": n_rise, "odd_compensates_frac": comp,
                   "even_over_admm": even, "even_over_admm.se": even_se, "pair_over_admm": pair,
                   "pair_over_admm.se": pair_se, "newton_ratio": rr["newton_steps_total"] / a["newton_steps_total"],
                   "newton_steps_total": rr["newton_steps_total"],
                   "newton_steps_max": rr["newton_steps_max"], "newton_steps_mean": rr["newton_steps_mean"]}
            for name, v in g_m.items():
                m[f"{k}.{name}"] = v
            at = "" if float(g) == float(gamma_default) else f"@g{g:g}"
            for name in ("rate_ratio", "dist_ratio_odd_final", "dist_ratio_half", "even_increase_frac", "rises",
                         "gap_left_odd_final", "dist_shrink",
                         "odd_compensates_frac", "even_over_admm", "pair_over_admm", "newton_ratio"):
                m[f"{net}.radmm.{name}{at}"] = g_m[name]
                if f"{name}.se" in g_m:
                    m[f"{net}.radmm.{name}{at}.se"] = g_m[f"{name}.se"]
    return m


def comparator_mechanism(cmp: dict, A: np.ndarray, B: np.ndarray) -> zm.DualPerturbation | zm.PenaltyPerturbation:
    """A comparator of `comparators` as its mechanism (mechanisms.zhang2018): DVP at its eta; PP with dual step
    theta, penalty eta(t) = eta1 q1^(t-1) and noise shape q2^(t-1), t = 1..T."""
    st = cmp["setting"]
    if cmp["method"] == "dvp":
        return zm.DualPerturbation(A=A, B=B, eta=float(st["eta"]))
    return zm.PenaltyPerturbation(A=A, B=B, theta=float(st["theta"]), q1=float(st["q1"]), q2=float(st["q2"]),
                                  eta1=float(st.get("eta1", st["theta"])))


def _fmt_q(q: float) -> str:
    """1.05 -> '1.05', 1.0 -> '1.00', 1.005 -> '1.005'."""
    s = f"{q:.3f}"
    return s[:-1] if s.endswith("0") else s


def comparators(params: dict) -> dict:
    """The comparators of Fig. 2, name -> {method ('dvp' / 'pp'), setting, group, variant}. The Allerton paper states
    neither the PP nor the DVP schedule, so each is a set of settings: DVP (conventional ADMM, eta = theta) at
    dvp.eta (the headline) and at every dvp.eta_sweep value (variant 'dvp_eta<eta>'); PP at every named setting of
    `pp` and every point (q1, q2), q2 <= q1, of `pp_grid` (variant 'pp_<q1>_<q2>'), `pp_default` being the headline.
    Group 'main' holds the headline comparators, 'sweep' the others."""
    out = {"dvp": {"method": "dvp", "setting": {"eta": float(params["dvp"]["eta"])}, "group": "main",
                   "variant": None}}
    for e in params["dvp"].get("eta_sweep") or []:
        name = f"dvp_eta{float(e):g}"
        out[name] = {"method": "dvp", "setting": {"eta": float(e)}, "group": "sweep", "variant": name}
    pps = dict(params.get("pp") or {})
    grid = params.get("pp_grid")
    if grid:
        eta1 = grid.get("eta1", grid["theta"])
        taken = {(float(v.get("eta1", v["theta"])), float(v["q1"]), float(v["q2"])) for v in pps.values()}
        for q1 in grid["q1"]:
            for q2 in grid["q2"]:
                if float(q2) <= float(q1) and (float(eta1), float(q1), float(q2)) not in taken:
                    pps[f"pp_{_fmt_q(float(q1))}_{_fmt_q(float(q2))}"] = {
                        "theta": grid["theta"], "eta1": eta1, "q1": q1, "q2": q2}
    if params["pp_default"] not in pps:
        raise ValueError(f"pp_default {params['pp_default']!r} is not a PP setting; settings: {list(pps)}")
    for name, pp in pps.items():
        default = name == params["pp_default"]
        out[name] = {"method": "pp", "setting": pp, "group": "main" if default else "sweep",
                     "variant": None if default else name}
    return out


def fig2(X, y, params: dict, seed: int, alpha: float, only=None, names=None) -> dict:
    """Fig. 2 for one noise level: private R-ADMM (gamma, eta, alpha_i(k) = alpha) vs DVP (conventional ADMM, eta = theta
    = its eta, constant alpha) and PP (dual step theta, eta(t) = eta1 q1^(t-1), alpha(t) = alpha_pp q2^(t-1)), one run
    per comparator setting (`comparators`); every comparator's alpha is matched by bisection so that its P(T) equals
    R-ADMM's. `only` (a set of groups: 'main' = R-ADMM and the headline comparators, 'sweep' = the other settings)
    runs a subset (and `names`, of the comparators, a smaller one), to spread the runs over processes; every run's
    numbers are the same as in a full run (its noise stream is labelled by its method). With group 'main': L* of
    objective (1) and L(0) per repeat (references)."""
    data, A = _network(X, y, params, params["graph"], seed, "fig2")
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    K = T // 2
    C, rho, eta, gamma = float(params["C"]), float(params["rho"]), float(params["eta"]), float(params["gamma"])
    V = A.sum(1)
    target = bounds.allerton_total(C, data.B, V, rho, eta, alpha, T)  # R-ADMM's P(T), matched before the runs

    def matched(name, mech):
        m = mech.match_noise(target, T, C)     # the comparator's P(T), its mechanism's paper total, = R-ADMM's
        if not m["reached"]:
            raise ValueError(f"cannot match {name}'s privacy bound to R-ADMM's P(T) = {target:.4g}: {m['reason']}")
        return m

    f0 = dz.initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig2")
    lab = (PAPER, "fig2", f"alpha={alpha}")
    run = (lambda group: only is None or group in only)
    out = {"target": target, "curves": {}, "match": {}, "comparators": {}}
    if run("main"):
        h_r = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=gamma, K=K, f0=f0, alpha=alpha,
                        rngs=dz.noise_generators(seed, R, *lab, "radmm"), **_solver(params))
        out["curves"]["radmm"] = _private_curve(h_r)
        fc = dz.centralized_optimum(data, C, rho)
        out["L_star"] = dz.optimum_loss(data, fc)
        out["L_init"] = dz.average_loss(data, f0)
    for name, cmp in comparators(params).items():
        if not run(cmp["group"]) or (names is not None and name not in names):
            continue
        mech = comparator_mechanism(cmp, A, data.B)
        mt = matched(f"{cmp['method'].upper()} ({name})", mech)
        _, _, kw = mech.schedules(T)          # eta(t), theta(t) and the noise's shape alpha(t) / alpha
        h = dz.m_admm(data, A, C=C, rho=rho, eta=kw["eta"], theta=kw["theta"], f0=f0,
                      alpha=mt["alpha"] * kw["alpha_shape"], rngs=dz.noise_generators(seed, R, *lab, cmp["method"]),
                      **_solver(params))
        out["match"][name] = mt
        out["comparators"][name] = cmp
        out["curves"][name] = _private_curve(h)
    return out


def _private_curve(h) -> dict:
    """A private run's traces and its privacy, from the Spend it recorded: P(t) of the recorded schedules under the
    bound the record names, and P(T) = the record's paper total."""
    spend = h.spends[0]
    return {**summary(h.traces["L"]), "L": h.traces["L"], "P": bounds.P_curve(spend),
            "P_total": bounds.paper_total(spend),
            "newton_steps_max": h.meta["newton_steps_max"], "newton_steps_mean": h.meta["newton_steps_mean"]}


def fig2_metrics(results: dict, L_zero: float) -> tuple[dict, dict]:
    """Fig. 2 metrics per noise level a<alpha> (R-ADMM's alpha): P(T) of each method and the matched alphas; per
    method L_mean(T) (per-repeat L(T) in `repeats`), L_range(T), Newton steps; the improvement of R-ADMM over each
    comparator, L_comparator(T) - L_R-ADMM(T) per repeat. The headline comparators write the keys '... .dvp' and
    '... .pp'; every other setting V of a comparator writes '... .dvp@V' / '... .pp@V' (claims-file variants).
    References: L* (`L_star`), L(0) per repeat (`L_init`, the same starting points for every method), the zero
    model's loss L_zero."""
    first = next(r for r in results.values() if "L_star" in r)
    m, rep = {"L_star": first["L_star"], "L_zero": L_zero}, {"L_init": first["L_init"]}
    for a, r in results.items():
        k = f"a{a:g}"
        m[f"{k}.P_target"] = r["target"]
        L_r = r["curves"]["radmm"]["L"][:, -1]
        for name, c in r["curves"].items():
            cmp = r["comparators"].get(name)
            method, at = ("radmm", "") if cmp is None else (cmp["method"], f"@{cmp['variant']}" if cmp["variant"] else "")
            rep[f"{k}.L_final_mean.{method}{at}"] = c["L"][:, -1]
            m[f"{k}.L_final_range.{method}{at}"] = c["L_range"][-1]
            m[f"{k}.P_final.{method}{at}"] = c["P_total"]
            m[f"{k}.newton_steps_max.{method}{at}"] = c["newton_steps_max"]
            m[f"{k}.newton_steps_mean.{method}{at}"] = c["newton_steps_mean"]
            if cmp is not None:
                rep[f"{k}.improvement.{method}{at}"] = c["L"][:, -1] - L_r
                m[f"{k}.alpha_{method}{at}"] = r["match"][name]["alpha"]
                m[f"{k}.floor_{method}{at}"] = r["match"][name]["floor"]
    m.update({key: float(np.mean(v)) for key, v in rep.items()})
    return m, rep


def fig3(X, y, params: dict, seed: int, alpha: float) -> dict:
    """Fig. 3 at one noise level alpha: private R-ADMM (eta, gamma fixed) vs R-ADMM + M-ADMM with eta(t) = eta q^t,
    gamma(t) = gamma q^t and dual step theta, whose alpha_i(k) is re-tuned so that P(t) is identical at every t: a
    larger eta shrinks the Jacobian term of Theorem IV.1, alpha_i(k) = alpha + 1.4 c_1 / (rho/N + 2 eta V_i)
    - 1.4 c_1 / (rho/N + 2 eta(2k-1) V_i). Every alpha draws the same unit noise (its streams are labelled by the
    curve only), so the noise levels are paired. Also L* of (1) and L(0) per repeat (references)."""
    data, A = _network(X, y, params, params["graph"], seed, "fig3")
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    K = T // 2
    C, rho, eta, gamma = float(params["C"]), float(params["rho"]), float(params["eta"]), float(params["gamma"])
    q, theta = float(params["q"]), float(params["theta"])
    V = A.sum(1)
    t = np.arange(1, T + 1, dtype=float)
    eta_t = eta * q ** t
    gamma_t = gamma * q ** t
    eta_odd = eta_t[0::2]  # eta(2k-1), k = 1..K
    c = 1.4 * bounds.C1
    alpha_var = alpha + c / (rho / N + 2 * eta * V)[None, :] - c / (rho / N + 2 * eta_odd[:, None] * V[None, :])
    f0 = dz.initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig3")
    runs = {"radmm": {"eta": eta, "gamma": gamma, "alpha": alpha, "label": "fixed"},
            "radmm_madmm": {"eta": eta_t, "gamma": gamma_t, "theta": theta, "alpha": alpha_var, "label": "varying"}}
    curves = {}
    for name, kw in progress(runs.items(), "private R-ADMM", name=lambda kv: kv[0]):
        label = kw.pop("label")
        curves[name] = _private_curve(dz.r_admm(data, A, C=C, rho=rho, K=K, f0=f0, **kw, **_solver(params),
                                                rngs=dz.noise_generators(seed, R, PAPER, "fig3", label)))
    fc = dz.centralized_optimum(data, C, rho)
    return {"alpha_var_min": float(alpha_var.min()), "alpha_var_max": float(alpha_var.max()),
            "L_star": dz.optimum_loss(data, fc),
            "L_init": dz.average_loss(data, f0), "curves": curves}


PAPER_FIG3_AXIS = (0.38, 0.44)  # the y-axis of Allerton Fig. 3 ("Average Loss", ticks 0.38 to 0.44)


def fig3_metrics(results: dict, T: int, alpha_default: float, L_zero: float) -> tuple[dict, dict]:
    """Fig. 3 metrics per noise level (the default alpha's as plain keys, every other alpha a as '<key>@alpha<a>'):
    the re-tuned alpha range, max_t |P_fixed(t) - P_varying(t)|, P(T); per curve L_mean(T) (per-repeat L(T) in
    `repeats`), L_range(T), the mean of L over t > T/2 (per repeat), the lowest and highest L_mean(t) over t > T/2
    (where the curves sit against the paper's axis, 0.38-0.44) and Newton steps. References L*, L(0) per repeat,
    the zero model's loss L_zero."""
    first = results[alpha_default]
    m, rep = {"L_star": first["L_star"], "L_zero": L_zero, "paper_axis_lo": PAPER_FIG3_AXIS[0],
              "paper_axis_hi": PAPER_FIG3_AXIS[1]}, {"L_init": first["L_init"]}
    for a, res in results.items():
        at = "" if a == alpha_default else f"@alpha{a:g}"
        c = res["curves"]
        m.update({f"alpha_var_min{at}": res["alpha_var_min"], f"alpha_var_max{at}": res["alpha_var_max"],
                  f"P_max_abs_diff{at}": float(np.abs(c["radmm"]["P"] - c["radmm_madmm"]["P"]).max()),
                  f"P_final{at}": c["radmm"]["P_total"]})
        for name, cc in c.items():
            rep[f"L_final_mean.{name}{at}"] = cc["L"][:, -1]
            rep[f"L_late_mean.{name}{at}"] = cc["L"][:, T // 2 + 1:].mean(axis=1)
            m[f"L_final_range.{name}{at}"] = cc["L_range"][-1]
            m[f"L_late_lo.{name}{at}"] = float(cc["L_mean"][T // 2 + 1:].min())
            m[f"L_late_hi.{name}{at}"] = float(cc["L_mean"][T // 2 + 1:].max())
            m[f"newton_steps_max.{name}{at}"] = cc["newton_steps_max"]
            m[f"newton_steps_mean.{name}{at}"] = cc["newton_steps_mean"]
    m.update({key: float(np.mean(v)) for key, v in rep.items()})
    return m, rep


# ------------------------------------------------------------------------------------------------- items
def run_fig1(params: dict) -> dict:
    """Fig. 1 on Adult (`fig1`), with T for the plot and the metrics."""
    X, y = _adult()
    return {"T": int(params["iterations"]), "gamma_default": float(params.get("gamma_default", params["gammas"][0])),
            "networks": fig1(X, y, params, int(params["seed"]))}


def plot_fig1(res: dict) -> dict:
    """'fig1', the paper's form: one panel, L(t) of R-ADMM for every gamma and of the original ADMM on each
    network, t = 0..T. 'fig1_ours', per network: L at odd iterations only, and the distance to f_c* (odd
    iterations; dotted line: t_half, from where the linear rates are fitted)."""
    import matplotlib.pyplot as plt

    T, nets = res["T"], res["networks"]
    t, odd = np.arange(T + 1), np.arange(1, T + 1, 2)
    fig, ax = plt.subplots(figsize=(7, 4.8))
    styles = ("-", "--", "-.", ":")
    lo, hi = np.inf, -np.inf
    for j, (net, r) in enumerate(nets.items()):
        ls = styles[j % len(styles)]
        for c, (g, rr) in zip(plt.cm.plasma(np.linspace(0, 0.8, len(r["radmm"]))), r["radmm"].items()):
            ax.plot(t, rr["L"], color=c, ls=ls, lw=1, label=f"N={r['N']}, gamma={g:g}")
        ax.plot(t, r["admm"]["L"], color="k", ls=ls, lw=1.5, label=f"N={r['N']}, original ADMM")
        lo, hi = min(lo, r["L_star"]), max(hi, r["admm"]["L"][1])
    ax.set(xlim=(0, T), ylim=(lo - 0.01, hi + 0.02), xlabel="iteration t", ylabel="average loss L(t)",
           title="Convergence properties of R-ADMM")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()

    ours, axes = plt.subplots(2, len(nets), figsize=(6 * len(nets), 8), squeeze=False)
    for j, (net, r) in enumerate(nets.items()):
        for c, (g, rr) in zip(plt.cm.plasma(np.linspace(0, 0.8, len(r["radmm"]))), r["radmm"].items()):
            axes[0, j].plot(odd, rr["L"][odd], color=c, marker=".", label=f"gamma={g:g}, odd iterations")
            axes[1, j].semilogy(odd, rr["dist"][odd], color=c, marker=".", label=f"gamma={g:g}, odd iterations")
        axes[0, j].plot(t, r["admm"]["L"], color="k", ls="--", label="original ADMM")
        axes[0, j].axhline(r["L_star"], color="grey", ls=":", lw=1)
        axes[0, j].set_ylim(r["L_star"] - 0.01, r["L_star"] + 0.1)
        axes[0, j].set_ylabel("average loss L(t)")
        axes[1, j].semilogy(t, r["admm"]["dist"], color="k", ls="--", label="original ADMM")
        axes[1, j].axvline(half_odd(T), color="grey", ls=":", lw=1)
        axes[1, j].set(ylabel="||f(t) - 1 f_c*||_F", xlabel="iteration t")
        for ax_ in axes[:, j]:
            ax_.legend(fontsize=8)
        axes[0, j].set_title(f"N = {r['N']} ({r['edges']} edges): odd iterations only")
        axes[1, j].set_title(f"N = {r['N']}: distance to f_c* (rates fitted right of the dotted line)")
    ours.tight_layout()
    return {"fig1": fig, "fig1_ours": ours}


def metrics_fig1(res: dict) -> dict:
    return {"metrics": fig1_metrics(res["networks"], res["T"], res["gamma_default"])}


SWEEP_RUNS_PER_PART = 6  # comparator settings of the sweep in one part: about 7.5 s a run at paper settings (< 90 s)


def _fig2_parts(params: dict) -> dict[str, tuple[float, str, tuple[str, ...] | None]]:
    """Fig. 2 runs as parts (experiments.parts): per R-ADMM noise level, the headline runs and, where other
    comparator settings are given, those, at most SWEEP_RUNS_PER_PART per part ('alpha<a>_sweep',
    'alpha<a>_sweep.2', ...): {key: (alpha, group, the sweep's comparator names or None)}."""
    swept = [name for name, c in comparators(params).items() if c["group"] == "sweep"]
    chunks = [tuple(c) for c in np.array_split(np.array(swept, dtype=object), -(-len(swept) // SWEEP_RUNS_PER_PART))
              ] if swept else []
    keys = {}
    for a in params["alphas"]:
        keys[f"alpha{float(a):g}"] = (float(a), "main", None)
        for j, names in enumerate(chunks):
            keys[f"alpha{float(a):g}_sweep" + (f".{j + 1}" if j else "")] = (float(a), "sweep", names)
    return keys


def parts_fig2(params: dict) -> list[str]:
    return list(_fig2_parts(params))


def part_fig2(params: dict, key: str) -> dict:
    """`fig2` at one noise level for one group of runs (its numbers are those of the whole run)."""
    X, y = _adult()
    alpha, group, names = _fig2_parts(params)[key]
    return fig2(X, y, params, int(params["seed"]), alpha, only={group}, names=names)


def run_fig2(params: dict) -> dict:
    """Fig. 2 on Adult at every R-ADMM noise level of params['alphas'], combined from its parts."""
    keys = _fig2_parts(params)
    X, y = _adult()
    data, _ = _network(X, y, params, params["graph"], int(params["seed"]), "fig2")
    alphas = {}
    for k, r in gather(PAPER, "fig2", params).items():
        merged = alphas.setdefault(keys[k][0], {"curves": {}, "match": {}, "comparators": {}})
        for f in ("curves", "match", "comparators"):
            merged[f].update(r[f])
        merged.update({f: v for f, v in r.items() if f not in ("curves", "match", "comparators")})
    return {"pp_default": params["pp_default"], "alphas": alphas, "L_zero": dz.zero_model_loss(data)}


_COLORS = {"radmm": "tab:red", "dvp": "black", "pp": "tab:blue"}
_LABELS = {"radmm": "private R-ADMM", "dvp": "private ADMM (DVP)", "pp": "private M-ADMM (PP)",
           "radmm_madmm": "R-ADMM + M-ADMM"}


def plot_fig2(res: dict) -> dict:
    """'fig2', the paper's form: accuracy (L_mean(t) with L_range(t) bars, capped at 1.5) above privacy (P(t)) of
    private R-ADMM, DVP and PP (the headline settings), one column per alpha. 'fig2_ours': per alpha, L_mean(T) of
    every comparator setting against R-ADMM's, with the zero model's loss and the starting loss L(0)."""
    import matplotlib.pyplot as plt

    columns = []
    for a, r in res["alphas"].items():
        curves = []
        for name, c in r["curves"].items():
            cmp = r["comparators"].get(name)
            method = "radmm" if cmp is None else cmp["method"]
            if cmp is None or cmp["group"] == "main":
                curves.append({**c, "label": _LABELS[method], "color": _COLORS[method]})
        columns.append({"accuracy": f"Accuracy, R-ADMM alpha = {a:g}", "privacy": f"Privacy, R-ADMM alpha = {a:g}",
                        "curves": curves})
    figs = {"fig2": accuracy_privacy(columns, legend_size=8, loss_top=1.5)}

    ours, axes = plt.subplots(1, len(res["alphas"]), figsize=(7 * len(res["alphas"]), 5), squeeze=False)
    for ax, (a, r) in zip(axes[0], res["alphas"].items()):
        names = [n for n in r["curves"] if n != "radmm"]
        for y, n in enumerate(names):
            L = r["curves"][n]["L"][:, -1]
            ax.errorbar(L.mean(), y, xerr=[[L.mean() - L.min()], [L.max() - L.mean()]], fmt="o", capsize=2,
                        color=_COLORS[r["comparators"][n]["method"]])
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.axvline(r["curves"]["radmm"]["L"][:, -1].mean(), color=_COLORS["radmm"], label="private R-ADMM")
        ax.axvline(res["L_zero"], color="grey", ls=":", label="the zero model")
        if "L_init" in r:
            ax.axvline(float(np.mean(r["L_init"])), color="grey", ls="--", label="L(0), the starting point")
        ax.set(xscale="log", xlabel="L_mean(T) (bars: min to max over the runs)",
               title=f"alpha = {a:g}: every comparator setting at R-ADMM's P(T)")
        ax.legend(fontsize=8)
    ours.tight_layout()
    figs["fig2_ours"] = ours
    return figs


def metrics_fig2(res: dict) -> dict:
    m, rep = fig2_metrics(res["alphas"], res["L_zero"])
    return {"metrics": m, "repeats": rep}


def table_fig2(res: dict, metrics: dict) -> str:
    """R-ADMM's P(T) (the target) and the matched DVP / PP noise: alphas and the alpha-free floors of the bounds."""
    return metrics_table(metrics, lambda k: any(s in k for s in (".P_target", ".P_final.", ".alpha_", ".floor_")))


def _fig3_alphas(params: dict) -> dict[str, float]:
    """Fig. 3 runs as one part per noise level: the default alpha and every alpha of alpha_sweep."""
    alphas = [float(params["alpha"])] + [float(a) for a in params.get("alpha_sweep") or [] if
                                         float(a) != float(params["alpha"])]
    return {f"alpha{a:g}": a for a in alphas}


def parts_fig3(params: dict) -> list[str]:
    return list(_fig3_alphas(params))


def part_fig3(params: dict, key: str) -> dict:
    X, y = _adult()
    return fig3(X, y, params, int(params["seed"]), _fig3_alphas(params)[key])


def run_fig3(params: dict) -> dict:
    """Fig. 3 on Adult (`fig3`) at every noise level, with T and the default alpha for the metrics."""
    keys = _fig3_alphas(params)
    X, y = _adult()
    data, _ = _network(X, y, params, params["graph"], int(params["seed"]), "fig3")
    return {"alphas": {keys[k]: r for k, r in gather(PAPER, "fig3", params).items()}, "T": int(params["iterations"]),
            "L_zero": dz.zero_model_loss(data),
            "alpha": float(params["alpha"]), "q": float(params["q"]), "gamma": float(params["gamma"])}


def plot_fig3(res: dict) -> dict:
    """'fig3', the paper's form: L_mean(t) of R-ADMM and R-ADMM + M-ADMM at the default alpha, on the paper's y-axis
    (0.38-0.44, shaded) widened where our curves leave it after t = T/10. 'fig3_ours': L_mean(T) of both curves at
    every alpha against the paper's axis, and their P(t) (identical by construction)."""
    import matplotlib.pyplot as plt

    r = res["alphas"][res["alpha"]]
    T = res["T"]
    t = np.arange(T + 1)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    late = slice(max(1, T // 10), None)
    lo, hi = PAPER_FIG3_AXIS
    for name, c in r["curves"].items():
        ax.plot(t, c["L_mean"], color=_COLORS.get(name, "tab:blue"), ls="--" if name == "radmm_madmm" else "-",
                marker="o" if name == "radmm" else "s", markevery=max(1, T // 20), ms=4, label=_LABELS[name])
        lo, hi = min(lo, c["L_mean"][late].min()), max(hi, c["L_mean"][late].max())
    ax.axhspan(*PAPER_FIG3_AXIS, color="grey", alpha=0.12, label="the paper's axis, 0.38-0.44")
    ax.set(ylim=(lo - 0.005, hi + 0.005), xlabel="iteration t", ylabel="Average Loss",
           title=f"Accuracy comparison: eta(t) = {res['q']:g}^t, gamma(t) = {res['gamma']:g} x {res['q']:g}^t")
    ax.text(0.02, 0.02, f"alpha = {res['alpha']:g}", transform=ax.transAxes, fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()

    ours, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    alphas = sorted(res["alphas"])
    for name in ("radmm", "radmm_madmm"):
        axes[0].errorbar(alphas, [res["alphas"][a]["curves"][name]["L"][:, -1].mean() for a in alphas],
                         yerr=[res["alphas"][a]["curves"][name]["L_range"][-1] / 2 for a in alphas],
                         color=_COLORS.get(name, "tab:blue"), ls="--" if name == "radmm_madmm" else "-",
                         marker="o", capsize=3, label=_LABELS[name])
    axes[0].axhspan(*PAPER_FIG3_AXIS, color="grey", alpha=0.12, label="the paper's axis, 0.38-0.44")
    axes[0].axhline(r["L_star"], color="grey", ls=":", lw=1, label="L at f_c*")
    axes[0].set(xscale="log", xlabel="noise parameter alpha", ylabel="L_mean(T), bars: L_range(T)",
                title="Where the curves end, by noise level")
    axes[0].legend(fontsize=8)
    for name, c in r["curves"].items():
        axes[1].plot(np.arange(len(c["P"])), c["P"], color=_COLORS.get(name, "tab:blue"),
                     ls="--" if name == "radmm_madmm" else "-", label=_LABELS[name])
    axes[1].set(xlabel="iteration t", ylabel="P(t)", title=f"Privacy P(t), alpha = {res['alpha']:g} (re-tuned to match)")
    axes[1].legend(fontsize=8)
    ours.tight_layout()
    return {"fig3": fig, "fig3_ours": ours}


def metrics_fig3(res: dict) -> dict:
    m, rep = fig3_metrics(res["alphas"], res["T"], res["alpha"], res["L_zero"])
    return {"metrics": m, "repeats": rep}


def table_fig3(res: dict, metrics: dict) -> str:
    """The range of the re-tuned alpha_i(k), how far the two P(t) curves are apart, and where the curves end."""
    return metrics_table(metrics, lambda k: k.split("@")[0] in ("alpha_var_min", "alpha_var_max", "P_max_abs_diff",
                                                                 "P_final", "L_star", "L_init")
                         or k.startswith(("L_final_mean.", "L_late_lo.", "L_late_hi.")))
