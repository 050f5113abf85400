"""ZKL-ICML items (SPEC §4.7): per item `run_<item>(params)` (loads Adult, runs), `plot_<item>(result)` ({file name:
figure}), `metrics_<item>(result)` (write_metrics keyword arguments) and, where the notebook shows one,
`table_<item>(result, metrics)`; below them pure functions over arrays (`fig1`, `private_comparison`, ...).

Private runs record what they spent (History.spends, algorithms.decentralized); the privacy totals P(T) reported here
are taken from those records, and the curves P(t) from the schedules the records hold.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import decentralized as dz
from ..datasets import load
from ..privacy.bounds import zhang2018 as bounds
from ..rng import seed_sequence
from .parts import gather
from .plotting import accuracy_privacy, metrics_table, summary
from .progress import progress

PAPER = "zhang2018_madmm"
DATASET = "adult_zhang2018"


def _adult():
    data = load(DATASET)
    return data["X"], data["y"]


def _network(X, y, params: dict, seed: int, *labels: str):
    return dz.network(X, y, params["graph"], seed, PAPER, *labels, split=params.get("split", "even"),
                      min_size=params.get("min_size"), subsample=params.get("subsample"))


def _solver(params):
    return {"tol": float(params.get("newton_tol", 1e-9)), "max_steps": int(params.get("newton_max_steps", 50))}


def fig1(X, y, params: dict, seed: int) -> dict:
    """Fig. 1: non-private M-ADMM convergence. (a) private penalties eta_i(1) q_i^{t-1} with a fixed, time-varying or
    per-node dual step theta; (b) a common eta(t) = eta(1) q1^{t-1} for increasing q1. Traces L(t) and the distance
    ||f-hat(t) - 1 f_c*^T||_F to the centralised optimum of (1)."""
    data, A = _network(X, y, params, seed, "fig1")
    N, d, T = data.n_nodes, data.dim, int(params["iterations"])
    C, rho = float(params["C"]), float(params["rho"])
    fc = dz.centralized_optimum(data, C, rho)
    L_star = float(dz.average_loss(data, np.broadcast_to(fc, (1, N, d)))[0])
    f0 = dz.initial_points(seed, 1, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig1")
    eta_a = dz.geometric(np.asarray(params["eta1"], float), np.asarray(params["q"], float), T)  # (T, N)
    lo, hi = params["theta_random"]
    u = np.random.default_rng(seed_sequence(seed, PAPER, "fig1", "theta")).random(T)
    thetas = {
        "fixed": np.full(T, float(params["theta_fixed"])),
        "time_varying": lo + (hi - lo) * u,
        "per_node": np.broadcast_to(np.asarray(params["eta1"], float) - float(params["theta_node_offset"]), (T, N)),
    }
    out = {"L_star": L_star, "a": {}, "b": {}, "theta_time_varying": thetas["time_varying"],
           "theta_per_node": thetas["per_node"][0], "T": T}
    # the fixed-theta run goes on to `freeze_iterations` [D]: its first T iterations are panel (a)'s blue curve
    T_long = max(T, int(params.get("freeze_iterations", T)))
    eta_long = dz.geometric(np.asarray(params["eta1"], float), np.asarray(params["q"], float), T_long)
    for name, th in progress(thetas.items(), "(a) dual step", name=lambda kv: f"theta {kv[0]}"):
        if name == "fixed":
            h = dz.m_admm(data, A, C=C, rho=rho, eta=eta_long, theta=np.full(T_long, float(params["theta_fixed"])),
                          f0=f0, fc=fc, **_solver(params))
            out["long"] = {"L": h.traces["L"][0], "dist": h.traces["dist"][0], "T": T_long,
                           "inv_eta_sum": (1.0 / eta_long).sum(axis=0)}
            out["a"][name] = _cut(h, T)
        else:
            out["a"][name] = _cut(dz.m_admm(data, A, C=C, rho=rho, eta=eta_a, theta=th, f0=f0, fc=fc,
                                            **_solver(params)), T)
    for q1 in progress(params["q1_list"], "(b) common penalty", name=lambda q: f"q1 = {q}"):
        eta = dz.geometric(float(params["eta_b"]), float(q1), T)
        h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=np.full(T, float(params["theta_b"])), f0=f0, fc=fc,
                      **_solver(params))
        out["b"][float(q1)] = _cut(h, T)
    return out


def _cut(h, T: int) -> dict:
    return {"L": h.traces["L"][0, :T + 1], "dist": h.traces["dist"][0, :T + 1],
            "newton_steps_max": int(h.traces["newton_steps"][0, :T].max()),
            "newton_steps_mean": h.meta["newton_steps_mean"]}


def fig1_metrics(res: dict) -> dict:
    """Fig. 1 metrics: per curve L(T), |L(T) - L*|, the distance to f_c* at T and its ratio to t = 0; panel (b)'s
    distance at T and gap at T/4 per q1; the freeze of the fixed-theta run (distance and L at T and at the long
    run's end, and min_i sum_t 1/eta_i(t), the bounded total step budget of the fastest-growing penalty)."""
    T, L_star = res["T"], res["L_star"]
    m = {"L_star": L_star}
    for name, r in res["a"].items():
        m[f"a.L_final.{name}"] = r["L"][-1]
        m[f"a.L_absgap_final.{name}"] = abs(r["L"][-1] - L_star)
        m[f"a.dist_final.{name}"] = r["dist"][-1]
        m[f"a.dist_ratio.{name}"] = r["dist"][-1] / r["dist"][0]
        m[f"a.newton_steps_max.{name}"] = r["newton_steps_max"]
    lg = res["long"]
    m["a.freeze.T_long"] = lg["T"]
    m["a.freeze.dist_T"] = lg["dist"][T]
    m["a.freeze.dist_long"] = lg["dist"][-1]
    m["a.freeze.dist_ratio_long_T"] = lg["dist"][-1] / lg["dist"][T]
    m["a.freeze.L_gap_T"] = lg["L"][T] - L_star
    m["a.freeze.L_gap_long"] = lg["L"][-1] - L_star
    m["a.freeze.inv_eta_sum_min"] = float(lg["inv_eta_sum"].min())
    for q1, r in res["b"].items():
        k = f"q1_{q1:.2f}"
        m[f"b.L_final.{k}"] = r["L"][-1]
        m[f"b.dist_final.{k}"] = r["dist"][-1]
        m[f"b.L_gap_mid.{k}"] = r["L"][T // 4] - L_star
        m[f"b.newton_steps_max.{k}"] = r["newton_steps_max"]
    return m


def private_comparison(X, y, params: dict, seed: int, alpha1: float, item: str, only=None) -> dict:
    """PP vs DVP (Figs. 2-4): eta(t) = theta q1^{t-1}, alpha(t) = alpha1 q2^{t-1} for every node, per curve of
    params['curves'] ({name: {q1, q2}}; q1 = 1 is DVP). Returns per curve the traces L (repeats, T+1), L_mean,
    L_range, P(t), plus graph facts.

    params['equal_noise'] (optional, [D]) = {curve: {of, q1}}: extra curves with the noise schedule AND the noise
    stream of curve `of` but another q1: the same eps draws under a different penalty growth, so that repeat r of
    both is paired (§6.1's stated reason for stability, tested at equal noise). `only` (a set of curve names) runs
    a subset, e.g. to spread the curves over processes; each curve's numbers are those of a full run."""
    data, A = _network(X, y, params, seed, item)
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    C, rho, theta = float(params["C"]), float(params["rho"]), float(params["theta"])
    if 2 * bounds.C1 >= np.min(data.B / C * (rho / N + 2 * theta * A.sum(1))):
        raise ValueError("Algorithm 1 needs 2 c_1 < (B_i / C)(rho/N + 2 theta V_i) for every node; raise theta")
    f0 = dz.initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, item)
    V = A.sum(1)
    specs = {name: (float(qs["q1"]), float(qs["q2"]), name) for name, qs in params["curves"].items()}
    for name, eq in (params.get("equal_noise") or {}).items():
        if eq["of"] not in params["curves"]:
            raise ValueError(f"equal_noise.{name}.of = {eq['of']!r} is not a curve; curves: {list(params['curves'])}")
        specs[name] = (float(eq["q1"]), float(params["curves"][eq["of"]]["q2"]), eq["of"])
    curves = {}
    for name, (q1, q2, stream) in specs.items():
        if only is not None and name not in only:
            continue
        eta = dz.geometric(theta, q1, T)
        alpha = dz.geometric(float(alpha1), q2, T)
        rngs = dz.noise_generators(seed, R, PAPER, item, f"alpha={alpha1}", stream)
        h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=np.full(T, theta), f0=f0, alpha=alpha, rngs=rngs,
                      **_solver(params))
        curves[name] = {**summary(h.traces["L"]), "L": h.traces["L"], "P": bounds.P_curve(h.spends[0]),
                        "P_total": bounds.paper_total(h.spends[0]), "q1": q1, "q2": q2, "stream": stream,
                        "newton_steps_max": h.meta["newton_steps_max"],
                        "newton_steps_mean": h.meta["newton_steps_mean"]}
    return {"curves": curves, "B": data.B, "V": V, "N": N}


def late_deviation(L: np.ndarray) -> np.ndarray:
    """Per repeat, the mean over t > T/2 of |L^r(t) - L_mean(t)|: a per-run dispersion whose mean over the runs is
    comparable between curves with a standard error (L_range(t), the paper's bar, is one number per curve)."""
    T = L.shape[1] - 1
    late = L[:, T // 2 + 1:]
    return np.abs(late - late.mean(axis=0)).mean(axis=1)


def private_metrics(results: dict, T: int) -> tuple[dict, dict]:
    """Figs. 2-4 metrics per noise level a<alpha1> and curve: L_mean(T) (per-repeat L(T) in `repeats`), L_range(T),
    mean of L_range over t > T/2, late deviation (per repeat), P(T), Newton steps. Returns (metrics, repeats)."""
    first = next(iter(results.values()))
    m = {"N": first["N"], "B_min": first["B"].min(), "B_median": float(np.median(first["B"])),
         "B_max": first["B"].max(), "V_min": first["V"].min(), "V_max": first["V"].max()}
    rep = {}
    for a, res in results.items():
        for name, c in res["curves"].items():
            k = f"a{a:g}"
            rep[f"{k}.L_final_mean.{name}"] = c["L"][:, -1]
            rep[f"{k}.L_dev_late.{name}"] = late_deviation(c["L"])
            m[f"{k}.L_final_range.{name}"] = c["L_range"][-1]
            m[f"{k}.L_range_late.{name}"] = c["L_range"][T // 2 + 1:].mean()
            m[f"{k}.P_final.{name}"] = c["P_total"]
            m[f"{k}.newton_steps_max.{name}"] = c["newton_steps_max"]
            m[f"{k}.newton_steps_mean.{name}"] = c["newton_steps_mean"]
    m.update({k: float(np.mean(v)) for k, v in rep.items()})
    return m, rep


def P_final_for_split(X, y, params: dict, seed: int, item: str, split: str, alpha1: float) -> dict:
    """P(T) per curve on the same graph with another split ('even' / 'uneven'): bounds only, no runs."""
    data, A = _network(X, y, {**params, "split": split}, seed, item if split == params["split"] else f"{item}:{split}")
    T, theta = int(params["iterations"]), float(params["theta"])
    return {name: float(bounds.icml_P(float(params["C"]), data.B, A.sum(1), dz.geometric(theta, qs["q1"], T),
                                      dz.geometric(alpha1, qs["q2"], T))[-1])
            for name, qs in params["curves"].items()}


# ------------------------------------------------------------------------------------------------- items
def run_fig1(params: dict) -> dict:
    """Fig. 1 on Adult (`fig1`)."""
    X, y = _adult()
    return fig1(X, y, params, int(params["seed"]))


_A_STYLE = {"fixed": ("tab:blue", "theta = 0.5 fixed"), "time_varying": ("black", "theta(t) non-fixed"),
            "per_node": ("tab:red", "theta_i per node")}


def plot_fig1(res: dict) -> dict:
    """Panels (a) and (b): L(t) (top) and the distance to f_c* (bottom); right: the fixed-theta run continued to
    `freeze_iterations`, |L(t) - L*| and the distance."""
    import matplotlib.pyplot as plt

    T, L_star = res["T"], res["L_star"]
    t = np.arange(T + 1)
    fig, axes = plt.subplots(2, 3, figsize=(16, 7.5))
    for name, r in res["a"].items():
        color, label = _A_STYLE[name]
        axes[0, 0].plot(t, r["L"], color=color, label=label)
        axes[1, 0].semilogy(t, r["dist"], color=color, label=label)
    for c, (q1, r) in zip(plt.cm.viridis(np.linspace(0, 0.9, len(res["b"]))), res["b"].items()):
        axes[0, 1].plot(t, r["L"], color=c, label=f"q1 = {q1:g}")
        axes[1, 1].semilogy(t, r["dist"], color=c, label=f"q1 = {q1:g}")
    lg = res["long"]
    tl = np.arange(lg["T"] + 1)
    axes[0, 2].semilogy(tl, np.abs(lg["L"] - L_star), color="tab:blue")
    axes[0, 2].set_ylabel("|L(t) - L*|")
    axes[0, 2].set_title(f"(a) theta = 0.5 continued to t = {lg['T']}")
    axes[1, 2].semilogy(tl, lg["dist"], color="tab:blue")
    for ax in axes[0, :2]:
        ax.axhline(L_star, color="grey", ls=":", lw=1, label="L at f_c*")
        ax.set_ylabel("average loss L(t)")
        ax.set_ylim(L_star - 0.01, L_star + 0.25)
    for ax in axes[1]:
        ax.set_ylabel("||f(t) - 1 f_c*||_F")
        ax.set_xlabel("iteration t")
    axes[0, 0].set_title("(a) private eta_i(t), different theta")
    axes[0, 1].set_title("(b) eta(t) = 0.5 q1^(t-1)")
    for ax in axes[:, :2].ravel():
        ax.legend(fontsize=8)
    fig.tight_layout()
    return {"fig1": fig}


def metrics_fig1(res: dict) -> dict:
    return {"metrics": fig1_metrics(res)}


def table_fig1(res: dict, metrics: dict) -> str:
    """L* and the freeze of the fixed-theta run."""
    return metrics_table(metrics, lambda k: k == "L_star" or k.startswith("a.freeze"))


def _alpha_keys(params: dict) -> dict[str, float]:
    """{part key: alpha(1)}: Fig. 2 runs as one part per alpha(1) (experiments.parts); Figs. 3 and 4 (one alpha(1),
    about a minute at paper scale) are not split, and gather computes their one key here."""
    return {f"alpha{float(a):g}": float(a) for a in params["alpha1"]}


def _run_private(params: dict, item: str) -> dict:
    """Figs. 2-4: `private_comparison` at every alpha(1) of params['alpha1'] (Fig. 2: from its parts)."""
    X, y = _adult()
    seed = int(params["seed"])
    keys = _alpha_keys(params)
    alphas = gather(PAPER, item, params, lambda k: private_comparison(X, y, params, seed, keys[k], item), keys=keys)
    out = {"item": item, "T": int(params["iterations"]), "alphas": {keys[k]: r for k, r in alphas.items()}}
    if item == "fig4":  # the uneven-vs-even claim: P(T) of the same curves with an even split of the same graph
        out["P_even"] = P_final_for_split(X, y, params, seed, item, "even", params["alpha1"][0])
    return out


def run_fig2(params: dict) -> dict:
    """Fig. 2: PP vs DVP on the five-node network, alpha(1) = 3 and 5."""
    return _run_private(params, "fig2")


def run_fig3(params: dict) -> dict:
    """Fig. 3: PP vs DVP on 100 nodes, even split."""
    return _run_private(params, "fig3")


def run_fig4(params: dict) -> dict:
    """Fig. 4: PP vs DVP on 100 nodes, uneven split; with P(T) of the even split of the same graph."""
    return _run_private(params, "fig4")


def parts_fig2(params: dict) -> list[str]:
    return list(_alpha_keys(params))


def part_fig2(params: dict, key: str) -> dict:
    """`private_comparison` at one alpha(1) (its numbers are those of the whole run)."""
    X, y = _adult()
    return private_comparison(X, y, params, int(params["seed"]), _alpha_keys(params)[key], "fig2")


_COLORS = {"blue": "tab:blue", "red": "tab:red", "black": "black", "magenta": "magenta", "blue_eta_const": "tab:cyan"}


def plot_private(res: dict) -> dict:
    """Accuracy (L_mean(t) with L_range(t) bars) above privacy (P(t)), one column per alpha(1); an equal-noise
    twin is dashed. File name: the item."""
    columns = []
    for a, r in res["alphas"].items():
        curves = []
        for name, c in r["curves"].items():
            twin = c["stream"] != name
            label = (f"{'DVP' if c['q1'] == 1 else 'PP'} {name}: q1={c['q1']:g}, q2={c['q2']:g}"
                     + (f" (noise of {c['stream']})" if twin else ""))
            curves.append({**c, "label": label, "color": _COLORS.get(name), "ls": "--" if twin else "-"})
        columns.append({"accuracy": f"Accuracy: alpha(t) = {a:g} q2^(t-1)",
                        "privacy": f"Privacy: alpha(t) = {a:g} q2^(t-1)", "curves": curves})
    return {res["item"]: accuracy_privacy(columns)}


plot_fig2 = plot_fig3 = plot_fig4 = plot_private


def metrics_private(res: dict) -> dict:
    """`private_metrics` of every alpha(1); Fig. 4 adds P(T) of the even split ('P_final_even.<curve>')."""
    m, rep = private_metrics(res["alphas"], res["T"])
    m.update({f"P_final_even.{n}": v for n, v in res.get("P_even", {}).items()})
    return {"metrics": m, "repeats": rep}


metrics_fig2 = metrics_fig3 = metrics_fig4 = metrics_private


def table_private(res: dict, metrics: dict) -> str:
    """The graph and split facts and every metric but the Newton-step diagnostics."""
    return metrics_table(metrics, lambda k: "newton" not in k)


table_fig2 = table_fig3 = table_fig4 = table_private
