"""ZKL-RADMM items (SPEC §5.5): per item `run_<item>(params)` (loads Adult, runs), `plot_<item>(result)` ({file name:
figure}), `metrics_<item>(result)` (write_metrics keyword arguments) and, where the notebook shows one,
`table_<item>(result, metrics)`; below them pure functions over arrays (`fig1`, `fig2`, `fig3`, ...).

Private runs record what they spent (History.spends, algorithms.decentralized); the privacy totals P(T) reported here
are taken from those records, and the curves P(t) from the schedules the records hold. The DVP / PP noise is matched
to R-ADMM's P(T) before the runs, from the bounds (SPEC §5.4).
"""

from __future__ import annotations

import numpy as np

from ..algorithms import decentralized as dz
from ..datasets import load
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
        res = {"L_star": float(dz.average_loss(data, np.broadcast_to(fc, (1, N, d)))[0]), "N": N, "radmm": {}}
        h = dz.conventional_admm(data, A, C=C, rho=rho, eta=eta, T=2 * K, f0=f0, fc=fc, **_solver(params))
        res["admm"] = _trace(h)
        for gamma in progress(params["gammas"], f"{net_name}: R-ADMM", name=lambda g: f"gamma = {g}"):
            h = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=float(gamma), K=K, f0=f0, fc=fc, **_solver(params))
            res["radmm"][float(gamma)] = _trace(h)
        out[net_name] = res
    return out


def _trace(h) -> dict:
    """One run's traces: L(t), the distance to f_c* and the Newton steps of its local solves."""
    return {"L": h.traces["L"][0], "dist": h.traces["dist"][0], "newton_steps_max": h.meta["newton_steps_max"],
            "newton_steps_mean": h.meta["newton_steps_mean"], "local_residual_max": h.meta["local_residual_max"]}


def even_increase(L: np.ndarray) -> np.ndarray:
    """max(L(2k) - L(2k-1), 0) for k = 1..K: how much each even (linearised) step raised the loss."""
    return np.maximum(L[2::2] - L[1::2], 0.0)


def half_odd(T: int) -> int:
    """The odd iteration at about T/2, where the 'odd iterations like ADMM' claim is judged."""
    h = T // 2
    return h if h % 2 else h - 1


def fig1_metrics(res: dict, T: int) -> dict:
    """Fig. 1 metrics per network `net` and gamma `g`: at t_h = half_odd(T) (an odd iteration, about T/2) and at the
    last odd iteration T-1, the gap L(t) - L* and the distance ||f-hat(t) - 1 f_c*^T||_F of R-ADMM and of ADMM, and
    their R-ADMM / ADMM ratios; the oscillation as the mean loss increase at even steps, mean_k max(L(2k) - L(2k-1), 0);
    the fraction of even steps that raise the loss; Newton steps of the local solves."""
    th = half_odd(T)
    m = {"t_half": th}
    for net, r in res.items():
        Ls, a = r["L_star"], r["admm"]
        m[f"{net}.L_star"] = Ls
        m[f"{net}.admm.L_final"] = a["L"][-1]
        m[f"{net}.admm.gap_half"] = a["L"][th] - Ls
        m[f"{net}.admm.dist_half"] = a["dist"][th]
        m[f"{net}.admm.gap_odd_final"] = a["L"][T - 1] - Ls
        m[f"{net}.admm.dist_odd_final"] = a["dist"][T - 1]
        m[f"{net}.admm.newton_steps_max"] = a["newton_steps_max"]
        for g, rr in r["radmm"].items():
            L, dist, k = rr["L"], rr["dist"], f"{net}.g{g:g}"
            m[f"{k}.L_final"] = L[-1]
            m[f"{k}.gap_half"] = L[th] - Ls
            m[f"{k}.dist_half"] = dist[th]
            m[f"{k}.gap_ratio_half"] = (L[th] - Ls) / (a["L"][th] - Ls)
            m[f"{k}.dist_ratio_half"] = dist[th] / a["dist"][th]
            m[f"{k}.gap_odd_final"] = L[T - 1] - Ls
            m[f"{k}.dist_odd_final"] = dist[T - 1]
            m[f"{k}.dist_ratio_odd_final"] = dist[T - 1] / a["dist"][T - 1]
            m[f"{k}.even_increase_mean"] = even_increase(L).mean()
            m[f"{k}.even_increase_frac"] = float(np.mean(L[2::2] > L[1::2]))
            m[f"{k}.newton_steps_max"] = rr["newton_steps_max"]
            m[f"{k}.newton_steps_mean"] = rr["newton_steps_mean"]
    return m


def pp_schedule(pp: dict, T: int):
    """A PP comparator's penalty eta(t) = eta1 q1^(t-1) and noise shape q2^(t-1), t = 1..T."""
    return dz.geometric(float(pp.get("eta1", pp["theta"])), float(pp["q1"]), T), dz.geometric(1.0, float(pp["q2"]), T)


def fig2(X, y, params: dict, seed: int, alpha: float, only=None) -> dict:
    """Fig. 2 for one noise level: private R-ADMM (gamma, eta, alpha_i(k) = alpha) vs DVP (conventional ADMM, eta = theta
    = eta_dvp, constant alpha) and PP (dual step theta, eta(t) = eta1 q1^(t-1), alpha(t) = alpha_pp q2^(t-1)), one PP
    run per setting in params['pp'] (the comparator's settings are not stated; each is judged separately); the DVP
    and PP alphas are matched by bisection so that their P(T) equals R-ADMM's (SPEC §5.4). `only` (a set of curve
    names: 'radmm', 'dvp', PP settings) runs a subset, e.g. to spread the curves over processes; every curve's
    numbers are the same as in a full run (each has its own noise streams)."""
    data, A = _network(X, y, params, params["graph"], seed, "fig2")
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    K = T // 2
    C, rho, eta, gamma = float(params["C"]), float(params["rho"]), float(params["eta"]), float(params["gamma"])
    V = A.sum(1)
    target = bounds.allerton_total(C, data.B, V, rho, eta, alpha, T)  # R-ADMM's P(T), matched before the runs
    eta_dvp = float(params["dvp"]["eta"])

    def P_dvp(a):
        return bounds.icml_P(C, data.B, V, np.full(T, eta_dvp), np.full(T, a))

    def matched(name, P_of):
        m = bounds.match_alpha(lambda a: P_of(a)[-1], target)
        if not m["reached"]:
            raise ValueError(f"cannot match {name}'s privacy bound to R-ADMM's P(T) = {target:.4g}: {m['reason']}")
        return m

    f0 = dz.initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig2")
    lab = (PAPER, "fig2", f"alpha={alpha}")
    run = (lambda name: only is None or name in only)
    m_dvp = matched("DVP", P_dvp)
    out = {"target": target, "curves": {}, "match": {"dvp": m_dvp}}
    if run("radmm"):
        h_r = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=gamma, K=K, f0=f0, alpha=alpha,
                        rngs=dz.noise_generators(seed, R, *lab, "radmm"), **_solver(params))
        out["curves"]["radmm"] = _private_curve(h_r)
    if run("dvp"):
        h_d = dz.m_admm(data, A, C=C, rho=rho, eta=np.full(T, eta_dvp), theta=np.full(T, eta_dvp), f0=f0,
                        alpha=np.full(T, m_dvp["alpha"]), rngs=dz.noise_generators(seed, R, *lab, "dvp"),
                        **_solver(params))
        out["curves"]["dvp"] = _private_curve(h_d)
    for name, pp in params["pp"].items():
        eta_pp, shape = pp_schedule(pp, T)

        def P_pp(a, eta_pp=eta_pp, shape=shape):
            return bounds.icml_P(C, data.B, V, eta_pp, a * shape)

        m_pp = matched(f"PP ({name})", P_pp)
        out["match"][name] = m_pp
        if not run(name):
            continue
        h_p = dz.m_admm(data, A, C=C, rho=rho, eta=eta_pp, theta=np.full(T, float(pp["theta"])), f0=f0,
                        alpha=m_pp["alpha"] * shape, rngs=dz.noise_generators(seed, R, *lab, "pp"), **_solver(params))
        out["curves"][name] = _private_curve(h_p)
    return out


def _private_curve(h) -> dict:
    """A private run's traces and its privacy, from the Spend it recorded: P(t) of the recorded schedules under the
    bound the record names, and P(T) = the record's paper total."""
    spend = h.spends[0]
    return {**summary(h.traces["L"]), "L": h.traces["L"], "P": bounds.P_curve(spend),
            "P_total": bounds.paper_total(spend),
            "newton_steps_max": h.meta["newton_steps_max"], "newton_steps_mean": h.meta["newton_steps_mean"]}


def fig2_metrics(results: dict, pp_default: str) -> tuple[dict, dict]:
    """Fig. 2 metrics per noise level a<alpha> (R-ADMM's alpha): P(T) of each method and the matched alphas; per
    method L_mean(T) (per-repeat L(T) in `repeats`), L_range(T), Newton steps; the improvement of R-ADMM over each
    comparator, L_comparator(T) - L_R-ADMM(T) per repeat. The PP comparator's default setting `pp_default` writes
    the keys '... .pp'; every other PP setting V writes '... .pp@V' (a claims-file variant)."""
    m, rep = {}, {}
    for a, r in results.items():
        k = f"a{a:g}"
        m[f"{k}.P_target"] = r["target"]
        L_r = r["curves"]["radmm"]["L"][:, -1]
        for name, c in r["curves"].items():
            method, at = ("pp", "" if name == pp_default else f"@{name}") if name not in ("radmm", "dvp") else (name, "")
            rep[f"{k}.L_final_mean.{method}{at}"] = c["L"][:, -1]
            m[f"{k}.L_final_range.{method}{at}"] = c["L_range"][-1]
            m[f"{k}.P_final.{method}{at}"] = c["P_total"]
            m[f"{k}.newton_steps_max.{method}{at}"] = c["newton_steps_max"]
            m[f"{k}.newton_steps_mean.{method}{at}"] = c["newton_steps_mean"]
            if method != "radmm":
                rep[f"{k}.improvement.{method}{at}"] = c["L"][:, -1] - L_r
                m[f"{k}.alpha_{method}{at}"] = r["match"][name]["alpha"]
                m[f"{k}.floor_{method}{at}"] = r["match"][name]["floor"]
    m.update({key: float(np.mean(v)) for key, v in rep.items()})
    return m, rep


def fig3(X, y, params: dict, seed: int) -> dict:
    """Fig. 3: private R-ADMM (eta, gamma fixed) vs R-ADMM + M-ADMM with eta(t) = q^t, gamma(t) = gamma q^t and dual
    step theta, where alpha_i(k) is adjusted so that P(t) is identical at every t (SPEC §5.5 [D])."""
    data, A = _network(X, y, params, params["graph"], seed, "fig3")
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    K = T // 2
    C, rho, eta, gamma = float(params["C"]), float(params["rho"]), float(params["eta"]), float(params["gamma"])
    alpha, q, theta = float(params["alpha"]), float(params["q"]), float(params["theta"])
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
    return {"alpha_var_min": float(alpha_var.min()), "alpha_var_max": float(alpha_var.max()), "curves": curves}


def fig3_metrics(res: dict, T: int) -> tuple[dict, dict]:
    """Fig. 3 metrics: the re-tuned alpha range, max_t |P_fixed(t) - P_varying(t)|, P(T); per curve L_mean(T)
    (per-repeat L(T) in `repeats`), L_range(T), the mean of L_mean over t > T/2 (per repeat) and Newton steps."""
    c = res["curves"]
    m = {"alpha_var_min": res["alpha_var_min"], "alpha_var_max": res["alpha_var_max"],
         "P_max_abs_diff": float(np.abs(c["radmm"]["P"] - c["radmm_madmm"]["P"]).max()), "P_final": c["radmm"]["P_total"]}
    rep = {}
    for name, cc in c.items():
        rep[f"L_final_mean.{name}"] = cc["L"][:, -1]
        rep[f"L_late_mean.{name}"] = cc["L"][:, T // 2 + 1:].mean(axis=1)
        m[f"L_final_range.{name}"] = cc["L_range"][-1]
        m[f"newton_steps_max.{name}"] = cc["newton_steps_max"]
        m[f"newton_steps_mean.{name}"] = cc["newton_steps_mean"]
    m.update({key: float(np.mean(v)) for key, v in rep.items()})
    return m, rep


# ------------------------------------------------------------------------------------------------- items
def run_fig1(params: dict) -> dict:
    """Fig. 1 on Adult (`fig1`), with T for the plot and the metrics."""
    X, y = _adult()
    return {"T": int(params["iterations"]), "networks": fig1(X, y, params, int(params["seed"]))}


def plot_fig1(res: dict) -> dict:
    """Per network: L(t) of R-ADMM for every gamma and of conventional ADMM; L at odd iterations only; the distance
    to f_c* at odd iterations (dotted line: t_half, where 'similar convergence' is judged)."""
    import matplotlib.pyplot as plt

    T, nets = res["T"], res["networks"]
    t, odd = np.arange(T + 1), np.arange(1, T + 1, 2)
    fig, axes = plt.subplots(3, len(nets), figsize=(6 * len(nets), 11), squeeze=False)
    for j, (net, r) in enumerate(nets.items()):
        for c, (g, rr) in zip(plt.cm.plasma(np.linspace(0, 0.8, len(r["radmm"]))), r["radmm"].items()):
            axes[0, j].plot(t, rr["L"], color=c, lw=1, label=f"N={r['N']}, gamma={g:g}")
            axes[1, j].plot(odd, rr["L"][odd], color=c, marker=".", label=f"gamma={g:g}, odd iterations")
            axes[2, j].semilogy(odd, rr["dist"][odd], color=c, marker=".", label=f"gamma={g:g}, odd iterations")
        for ax in axes[:2, j]:
            ax.plot(t, r["admm"]["L"], color="k", ls="--", label=f"N={r['N']}, original ADMM")
            ax.axhline(r["L_star"], color="grey", ls=":", lw=1)
            ax.set_ylim(r["L_star"] - 0.01, r["L_star"] + 0.3)
            ax.set_ylabel("average loss L(t)")
        axes[2, j].semilogy(t, r["admm"]["dist"], color="k", ls="--", label="original ADMM")
        axes[2, j].axvline(half_odd(T), color="grey", ls=":", lw=1)
        axes[2, j].set_ylabel("||f(t) - 1 f_c*||_F")
        axes[2, j].set_xlabel("iteration t")
        for ax in axes[:, j]:
            ax.legend(fontsize=8)
        axes[0, j].set_title(f"N = {r['N']}: all iterations")
        axes[1, j].set_title(f"N = {r['N']}: odd iterations only")
        axes[2, j].set_title(f"N = {r['N']}: distance to f_c* (odd iterations)")
    fig.tight_layout()
    return {"fig1": fig}


def metrics_fig1(res: dict) -> dict:
    return {"metrics": fig1_metrics(res["networks"], res["T"])}


def _fig2_parts(params: dict) -> dict[str, float]:
    """Fig. 2 runs as one part per R-ADMM noise level (experiments.parts): {key: alpha}."""
    return {f"alpha{float(a):g}": float(a) for a in params["alphas"]}


def parts_fig2(params: dict) -> list[str]:
    return list(_fig2_parts(params))


def part_fig2(params: dict, key: str) -> dict:
    """`fig2` at one noise level (its numbers are those of the whole run)."""
    X, y = _adult()
    return fig2(X, y, params, int(params["seed"]), _fig2_parts(params)[key])


def run_fig2(params: dict) -> dict:
    """Fig. 2 on Adult at every R-ADMM noise level of params['alphas'], combined from its parts."""
    keys = _fig2_parts(params)
    return {"pp_default": params["pp_default"],
            "alphas": {keys[k]: r for k, r in gather(PAPER, "fig2", params).items()}}


_COLORS = {"radmm": "tab:red", "dvp": "black", "pp_icml_blue": "tab:blue", "pp_allerton": "tab:green"}
_LABELS = {"radmm": "private R-ADMM", "dvp": "DVP (conventional ADMM)", "radmm_madmm": "R-ADMM + M-ADMM"}


def _styled(curves: dict) -> list[dict]:
    return [{**c, "label": _LABELS.get(name, f"PP (M-ADMM), {name}"), "color": _COLORS.get(name, "tab:blue"),
             "ls": "--" if name == "radmm_madmm" else "-"} for name, c in curves.items()]


def plot_fig2(res: dict) -> dict:
    """Accuracy (L_mean(t) with L_range(t) bars, capped at 1.5) above privacy (P(t)), one column per alpha."""
    columns = [{"accuracy": f"Accuracy, R-ADMM alpha = {a:g}", "privacy": f"Privacy, R-ADMM alpha = {a:g}",
                "curves": _styled(r["curves"])} for a, r in res["alphas"].items()]
    return {"fig2": accuracy_privacy(columns, legend_size=8, loss_top=1.5)}


def metrics_fig2(res: dict) -> dict:
    m, rep = fig2_metrics(res["alphas"], res["pp_default"])
    return {"metrics": m, "repeats": rep}


def table_fig2(res: dict, metrics: dict) -> str:
    """R-ADMM's P(T) (the target) and the matched DVP / PP noise: alphas and the alpha-free floors of the bounds."""
    return metrics_table(metrics, lambda k: any(s in k for s in (".P_target", ".P_final.", ".alpha_", ".floor_")))


def run_fig3(params: dict) -> dict:
    """Fig. 3 on Adult (`fig3`), with T for the metrics."""
    X, y = _adult()
    return {**fig3(X, y, params, int(params["seed"])), "T": int(params["iterations"])}


def plot_fig3(res: dict) -> dict:
    """Accuracy (L_mean(t) with L_range(t) bars) and privacy (P(t)) of R-ADMM and R-ADMM + M-ADMM."""
    columns = [{"accuracy": "Average loss L_mean(t)", "privacy": "Privacy P(t) (alpha_i(k) re-tuned to match)",
                "curves": _styled(res["curves"])}]
    return {"fig3": accuracy_privacy(columns, legend_size=8, width=6.0, height=7.0)}


def metrics_fig3(res: dict) -> dict:
    m, rep = fig3_metrics(res, res["T"])
    return {"metrics": m, "repeats": rep}


def table_fig3(res: dict, metrics: dict) -> str:
    """The range of the re-tuned alpha_i(k) and how far the two P(t) curves are apart."""
    return metrics_table(metrics, ["alpha_var_min", "alpha_var_max", "P_max_abs_diff", "P_final"])
