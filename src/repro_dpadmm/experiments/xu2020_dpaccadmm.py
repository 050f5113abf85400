"""XU (Xu et al., "Differentially Private ADMM Algorithms for Machine Learning"): Table I, Fig. 1 and Fig. 2.

Per item (table1, fig1, fig2): `run_<item>(params)` runs it (loading its datasets; a dataset that is not available
is recorded as not run), `plot_<item>(result)` returns its figures by file name, `metrics_<item>(result)` the keyword
arguments of `write_metrics` (flat metrics and per-repeat values), `table_<item>(result, metrics)` a Markdown table of
what the notebook shows. Below them, one pure function per dataset (SPEC §6.6, §6.7). The claims of
config/claims/xu2020_dpaccadmm.yaml are judged by the report's claims engine only (experiments.common.claims_table),
never here.

Algorithms (SPEC §6.2-6.4): "admm" and "acc_admm" are Algorithms 2 and 3 with sigma = 0; "dp_admm" (XU's DP-ADMM,
not HUANG's) and "dp_acc_admm" add N(0, sigma^2 I) to every gradient, sigma from Theorem 1.

Step size (SPEC §0.5(2)): gamma = 1 (§V-B) and eta = 1/L_f by default (`eta_rule: paper`, Lemma 5's bound); the
old eta = 1/(L_f + rho ||A^T A||) is the variant `eta_rule: conservative`. Every noise-free run is checked for
stability (linearized.check_stable: a DivergedError names the dataset and eta).

Noise: DP-ADMM and DP-AccADMM draw their noise from the same stream for the same (dataset, epsilon, repeat), and
the T variants and the step-size variant reuse it, so differences between them are judged paired over repeats.
Metric keys of a variant V are `<key>@V` (variants T30, T300 of the T sweep, and `conservative`).

Privacy: each private run records what it released (algorithms.linearized: one `Spend` per repeat, replace-one
neighbours, sensitivity 2c/n, Theorem 1 named as the paper bound); Fig. 2's totals are accounted from those records
(`privacy_metrics`), at the recorded 2c/n and at the sensitivity the noise was calibrated for (`sensitivity_factor`
c/n; 1 is the proof's c/n), never recomputed from (epsilon, delta) on the side.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ..algorithms import linearized as lin
from ..datasets import load, sidecar
from ..privacy import accounting
from ..privacy.bounds import xu2020
from ..privacy.spend import totals
from ..problems import fused_lasso as fl
from ..problems import logistic
from ..rng import repeat_generators
from .common import dataset_status
from .parts import gather
from .plotting import rows_table

PAPER = "xu2020_dpaccadmm"
ALGORITHMS = ("admm", "acc_admm", "dp_admm", "dp_acc_admm")
PRIVATE = ("dp_admm", "dp_acc_admm")
LABELS = {"admm": "ADMM", "acc_admm": "AccADMM", "dp_admm": "DP-ADMM", "dp_acc_admm": "DP-AccADMM"}
PANEL_ORDER = ("a8a", "a9a", "bio_train", "ijcnn1")  # the paper's panels (a)-(d)

# Table I as printed in the paper (the reference column of table1; never used as a result).
TABLE1_PAPER = {
    "a9a": {"n_train": 32561, "n_test": 16281, "d": 123, "lam": 1e-5},
    "a8a": {"n_train": 22696, "n_test": 9865, "d": 123, "lam": 1e-5},
    "ijcnn1": {"n_train": 49990, "n_test": 91701, "d": 22, "lam": 1e-5},
    "bio_train": {"n_train": 72876, "n_test": 72875, "d": 74, "lam": 1e-5},
}


def eps_key(epsilon: float) -> str:
    """Metric-key form of a budget: 0.07 -> 'eps0.07'."""
    return f"eps{float(epsilon):g}"


def at(key: str, variant: str) -> str:
    """The metric key of `key` under `variant` ("" is the default): 'F_T.admm.a9a' -> 'F_T.admm.a9a@T30'."""
    return f"{key}@{variant}" if variant else key


# ----------------------------------------------------------------------------------------------- problem set-up
@dataclass
class Setup:
    """One dataset ready for the algorithms: problem (11), its graph, the test data and the step size."""

    name: str
    problem: fl.FusedLasso
    graph: fl.Graph
    X_test: object
    y_test: np.ndarray
    eta: float
    eta_rule: str
    max_row_norm_raw: float


def graph_options(params: dict, d: int) -> dict:
    g = params.get("graph", {})
    return {"alphas": tuple(g.get("alphas", fl.ALPHA_GRID)),
            "min_edges": int(round(g.get("min_edges_per_feature", 1) * d)),
            "max_edges": int(round(g.get("max_edges_per_feature", 5) * d)),
            "tol": float(g.get("tol", 1e-4)), "max_iter": int(g.get("max_iter", 200))}


def with_rule(s: Setup, params: dict, rule: str) -> Setup:
    """The same dataset with the step size of `rule` (for the `eta_rule` variant)."""
    eta, how = fl.resolve_step_size({**params, "eta": "auto", "eta_rule": rule}, s.name, s.problem)
    return dataclasses.replace(s, eta=eta, eta_rule=how)


def setup(name: str, params: dict, root: Path | None = None) -> Setup:
    """Load `name`, normalise rows, estimate the feature graph (timed) and build problem (11)."""
    data = load(name, root)
    X_raw = np.asarray(data["X_train"], dtype=np.float64)
    with threadpool_limits(limits=params.get("blas_threads", 1)):
        problem, graph = fl.build(X_raw, data["y_train"], params.get("lam", 1e-5),
                                  **graph_options(params, X_raw.shape[1]))
    eta, rule = fl.resolve_step_size(params, name, problem)
    X_test = fl.as_compute_matrix(fl.normalise_rows(data["X_test"]))
    return Setup(name=name, problem=problem, graph=graph, X_test=X_test, y_test=np.asarray(data["y_test"], float),
                 eta=eta, eta_rule=rule, max_row_norm_raw=float(np.linalg.norm(X_raw, axis=1).max()))


def check_gamma(params: dict) -> float:
    """gamma as configured; the paper sets gamma = 1 (§V-B)."""
    gamma = params.get("gamma", 1.0)
    if not (isinstance(gamma, (int, float)) and not isinstance(gamma, bool) and gamma > 0):
        raise ValueError(f"gamma must be a positive number (the paper: 1), got {gamma!r}")
    return float(gamma)


def noise_sigma(params: dict, n: int, epsilon, T: int | None = None) -> np.ndarray | float:
    """Theorem 1's sigma for T (default: the item's iterations), delta, mu, c and sensitivity factor."""
    return xu2020.sigma(epsilon, T=T or params["iterations"], n=n, delta=params.get("delta", xu2020.DELTA),
                        mu=params.get("mu", xu2020.MU), c=params.get("c", xu2020.C),
                        sensitivity_factor=params.get("sensitivity_factor", 1.0))


def run_algorithm(s: Setup, algorithm: str, params: dict, *, sigma=0.0, repeats: int = 1, rngs=None,
                  T: int | None = None, restart: str | None = None) -> lin.LinearizedRun:
    """One batch of repeats of one of the four algorithms on a prepared dataset (raises DivergedError on a
    non-finite iterate; `stable_trace` checks the objective of a noise-free run)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    private = algorithm in PRIVATE
    accelerated = algorithm.endswith("acc_admm")
    theorem1 = {"delta": params.get("delta", xu2020.DELTA), "mu": params.get("mu", xu2020.MU)}
    with threadpool_limits(limits=params.get("blas_threads", 1)):
        return lin.run(s.problem, T=T or params["iterations"], eta=s.eta, rho=params.get("rho", 1.0),
                       gamma=check_gamma(params), sigma=sigma if private else 0.0, accelerated=accelerated,
                       repeats=repeats, rngs=rngs if private else None, u0=params.get("u0", "paper"),
                       restart=restart or params.get("restart", "none"), name=s.name,
                       gradient_bound=params.get("c", xu2020.C), bound_args=theorem1)


def stable_trace(s: Setup, algorithm: str, params: dict, T: int | None = None, restart: str | None = None):
    """(run, F(x_t) for t = 0..T) of a noise-free algorithm, checked stable (DivergedError names dataset and eta)."""
    if algorithm in PRIVATE:
        raise ValueError(f"stable_trace runs the noise-free algorithms only, got {algorithm!r}")
    run = run_algorithm(s, algorithm, params, T=T, restart=restart)
    with threadpool_limits(limits=1):
        return run, lin.check_stable(s.problem, run, s.name)


def objective_trace(s: Setup, run: lin.LinearizedRun) -> np.ndarray:
    """F(x_t) = f(x_t) + lambda ||A x_t||_1 on the training data for every repeat and t: (R, T+1)."""
    with threadpool_limits(limits=1):
        return s.problem.objective(run.x)


def noise_streams(params: dict, item: str, name: str, epsilons, R: int) -> list:
    """One Generator per (epsilon, repeat), shared by DP-ADMM and DP-AccADMM and by every variant (paired)."""
    return [g for e in epsilons for g in repeat_generators(params.get("seed", 0), R, PAPER, item, name, eps_key(e))]


def loglog_slope(gap: np.ndarray, t_lo: int, t_hi: int) -> np.ndarray:
    """Least-squares slope of log(gap_t) against log(t) over t_lo <= t <= t_hi: the exponent p of gap ~ C t^p.

    `gap` (..., T+1) indexed by t; returns one slope per leading index. An O(1/t^2) rate shows as p <= -2, O(1/t)
    as p <= -1. Gaps must be > 0 on the window (a gap at or below 0 means F* is not below the run)."""
    gap = np.asarray(gap, dtype=float)
    if not 1 <= t_lo < t_hi < gap.shape[-1]:
        raise ValueError(f"need 1 <= t_lo < t_hi <= T, got t_lo = {t_lo}, t_hi = {t_hi}, T = {gap.shape[-1] - 1}")
    g = gap[..., t_lo:t_hi + 1]
    if np.any(~(g > 0)):
        raise ValueError(f"the gap must be > 0 on t in [{t_lo}, {t_hi}] to take its logarithm")
    lt = np.log(np.arange(t_lo, t_hi + 1, dtype=float))
    lt -= lt.mean()
    lg = np.log(g)
    return ((lg - lg.mean(-1, keepdims=True)) * lt).sum(-1) / (lt * lt).sum()


# ---------------------------------------------------------------------------------------------------- Table I
def table1_row(name: str, params: dict, root: Path | None = None) -> dict:
    """Counts from the processed sidecar and, for an available dataset, the graph and step size actually used."""
    meta = sidecar(name, root)
    row = {"dataset": name, "available": bool(meta.get("available")), "reason": meta.get("reason", ""),
           **{f"paper_{k}": v for k, v in TABLE1_PAPER[name].items()}}
    if not row["available"]:
        return row
    arrays = meta["arrays"]
    row.update(n_train=arrays["X_train"][0], n_test=arrays["X_test"][0], d=arrays["X_train"][1],
               lam=float(params.get("lam", 1e-5)))
    s = setup(name, params, root)
    rho = params.get("rho", 1.0)
    row.update(edges=s.graph.n_edges, alpha_g=s.graph.alpha, graph_seconds=s.graph.seconds,
               edges_capped_from=s.graph.capped_from, eta=s.eta, eta_rule=s.eta_rule, L_f=s.problem.L_f,
               eta_times_L_f=s.eta * s.problem.L_f, gamma=check_gamma(params),
               eta_conservative=s.problem.step_size("conservative", rho),
               gamma_min=lin.gamma_min(s.problem, s.eta, rho),
               norm_AtA=s.problem.norm_AtA, max_row_norm_raw=s.max_row_norm_raw,
               positive_fraction_train=float((s.problem.y > 0).mean()))
    return row


def table1_metrics(rows: list[dict]) -> dict:
    out = {}
    for r in rows:
        ds = r["dataset"]
        out[f"available.{ds}"] = r["available"]
        for key in ("n_train", "n_test", "d", "lam", "edges", "alpha_g", "graph_seconds", "eta", "L_f",
                    "eta_times_L_f", "gamma", "eta_conservative", "gamma_min", "norm_AtA", "max_row_norm_raw"):
            if key in r:
                out[f"{key}.{ds}"] = r[key]
    return out


# ----------------------------------------------------------------------------------------------------- Fig. 1
def reference_minimum(s: Setup, params: dict) -> dict:
    """F* (SPEC §6.7 [D]): the least objective of long noise-free runs (ADMM, AccADMM, and AccADMM with Goldstein's
    restart, `reference_iterations` each at the default step; F on `reference_evaluations` evenly spaced iterates
    and the last). Also how much the best of them still fell over its last tenth: F* is an upper bound on the
    minimum, tight to about that amount."""
    TL = params.get("reference_iterations", 5000)
    stride = max(1, TL // params.get("reference_evaluations", 500))
    ref = {}
    for label, alg, restart in (("admm", "admm", "none"), ("acc_admm", "acc_admm", "none"),
                                ("acc_admm_restart", "acc_admm", "goldstein")):
        ref_run = run_algorithm(s, alg, params, T=TL, restart=restart)
        idx = np.unique(np.r_[np.arange(0, TL + 1, stride), TL])
        ref_run.x = ref_run.x[:, idx]
        ref[label] = objective_trace(s, ref_run)[0]
    best = min(ref, key=lambda k: ref[k].min())
    F_star = float(ref[best].min())
    return {"F_star": F_star, "source": best, "iterations": TL,
            "last_decrease": float(ref[best][int(0.9 * (len(ref[best]) - 1))] - ref[best][-1]),
            "final_gap": {k: float(v[-1] - F_star) for k, v in ref.items()}}


def fig1_dataset(s: Setup, params: dict, F_star: dict | None = None) -> dict:
    """Objective gap F(x_t) - F* against iteration and CPU time for the four algorithms at one epsilon.

    Per-repeat gaps (R, T+1) for the private algorithms (one run for the deterministic ones, checked stable). The time
    axis is the cumulative process time of one run of each algorithm (repeats = 1, best of `timing_runs`),
    excluding objective evaluation. `F_star` (from `reference_minimum`) is computed when not given.
    """
    T, R = params["iterations"], params["repeats"]
    sigma = noise_sigma(params, s.problem.n, params["epsilon"])
    rngs = noise_streams(params, "fig1", s.name, [params["epsilon"]], R)
    traces, times, acc = {}, {}, {}
    for alg in ALGORITHMS:
        if alg in PRIVATE:
            run = run_algorithm(s, alg, params, sigma=sigma, repeats=R, rngs=rngs)
            traces[alg] = objective_trace(s, run)
        else:
            run, F = stable_trace(s, alg, params)
            traces[alg] = F[None]
        with threadpool_limits(limits=1):
            acc[alg] = fl.accuracy(s.X_test, s.y_test, run.x_T)
        timings = [run_algorithm(s, alg, params, sigma=sigma, repeats=1,
                                 rngs=repeat_generators(params.get("seed", 0), 1, PAPER, "fig1-timing", s.name, alg,
                                                        str(k))).cpu_time
                   for k in range(params.get("timing_runs", 3))]
        times[alg] = min(timings, key=lambda c: c[-1])  # best of k: the least disturbed by other processes
    ref = F_star or reference_minimum(s, params)
    gaps = {alg: traces[alg] - ref["F_star"] for alg in ALGORITHMS}
    return {"T": T, "sigma": sigma, "eta": s.eta, "F_star": ref["F_star"], "F_star_source": ref["source"],
            "reference_iterations": ref["iterations"], "F_star_last_decrease": ref["last_decrease"],
            "reference_final_gap": ref["final_gap"],
            "lowest_short_minus_F_star": min(float(v.min()) for v in traces.values()) - ref["F_star"],
            "F": traces, "acc_T": acc, "gap": gaps, "gap_mean": {a: g.mean(0) for a, g in gaps.items()},
            "gap_std": {a: g.std(0) for a, g in gaps.items()}, "cpu_time": times}


def level_off(gap_dp: np.ndarray, gap_np: np.ndarray, factor: float = 2.0) -> int:
    """First t at which the mean private gap exceeds `factor` x the noise-free gap (T+1 if it never does): where the
    private run leaves the noise-free curve and levels off at its noise floor."""
    above = np.flatnonzero(gap_dp.mean(0) > factor * gap_np.mean(0))
    return int(above[0]) if len(above) else len(gap_np.mean(0))


def fig1_metrics(name: str, r: dict, params: dict, variant: str = "") -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset; `variant` suffixes every key (`<key>@<variant>`)."""
    g, T = r["gap"], r["T"]
    k = min(params.get("early_iteration", 10), T)
    t_lo, t_hi = params.get("rate_window", [10, T])
    t_hi = min(t_hi, T)
    out, reps = {}, {}

    def put(key, values):
        values = np.asarray(values, dtype=float)
        out[at(key, variant)] = float(values.mean())
        if values.size > 1:
            reps[at(key, variant)] = values

    out[at(f"sigma.{name}", variant)] = r["sigma"]
    out[at(f"eta.{name}", variant)] = r["eta"]
    for a in ALGORITHMS:
        put(f"gap_T.{a}.{name}", g[a][:, -1])
        put(f"gap_early.{a}.{name}", g[a][:, k])
        put(f"F_T.{a}.{name}", r["F"][a][:, -1])
        put(f"acc_T.{a}.{name}", r["acc_T"][a])
        out[at(f"cpu_per_iter.{a}.{name}", variant)] = r["cpu_time"][a][-1] / T
    for a in ("admm", "acc_admm"):
        put(f"slope.{a}.{name}", loglog_slope(g[a], t_lo, t_hi))
        out[at(f"max_rise.{a}.{name}", variant)] = float(np.max(np.diff(r["F"][a][0])))
    put(f"excess_T.acc_pair.{name}", r["F"]["dp_acc_admm"][:, -1] - r["F"]["acc_admm"][0, -1])
    put(f"excess_T.admm_pair.{name}", r["F"]["dp_admm"][:, -1] - r["F"]["admm"][0, -1])
    out[at(f"gap_ratio_T.acc_over_admm.{name}", variant)] = g["acc_admm"][0, -1] / g["admm"][0, -1]
    out[at(f"cpu_ratio.dp_acc_over_acc.{name}", variant)] = r["cpu_time"]["dp_acc_admm"][-1] / \
        r["cpu_time"]["acc_admm"][-1]
    out[at(f"level_off_t.dp_admm.{name}", variant)] = level_off(g["dp_admm"], g["admm"])
    out[at(f"level_off_t.dp_acc_admm.{name}", variant)] = level_off(g["dp_acc_admm"], g["acc_admm"])
    if not variant:  # F* and the reference runs do not depend on the variant
        out.update({f"F_star.{name}": r["F_star"], f"F_star_last_decrease.{name}": r["F_star_last_decrease"],
                    f"lowest_short_minus_F_star.{name}": r["lowest_short_minus_F_star"]})
        for label, v in r["reference_final_gap"].items():
            out[f"reference_final_gap.{label}.{name}"] = v
    return out, reps


# ----------------------------------------------------------------------------------------------------- Fig. 2
def fig2_dataset(s: Setup, params: dict, *, T: int | None = None, epsilons=None, stream: str = "fig2") -> dict:
    """F(x_T) on the training set and test accuracy of sign(l^T x_T) against epsilon for the four algorithms.

    All budgets and repeats of a private algorithm run in one batch (repeat axis = epsilon x repeat; each
    (epsilon, repeat) has its own Generator, shared by both private algorithms). Per-repeat values are kept
    (F_T[alg]: (E, R)). The noise-free runs are checked stable and their objective traces kept. `spends`: what the
    private runs released, one `Spend` per (epsilon, repeat) in that order (both private algorithms spend the same).
    """
    T = int(T or params["iterations"])
    R = params["repeats"]
    eps = np.asarray(params["epsilons"] if epsilons is None else epsilons, dtype=float)
    sigma = np.asarray(noise_sigma(params, s.problem.n, eps, T=T))
    out = {"T": T, "eta": s.eta, "epsilons": eps, "sigma": sigma, "F_T": {}, "acc_T": {}, "F_trace": {}}
    rngs = noise_streams(params, stream, s.name, eps, R)
    for alg in ALGORITHMS:
        if alg in PRIVATE:
            run = run_algorithm(s, alg, params, sigma=np.repeat(sigma, R), repeats=len(eps) * R, rngs=rngs, T=T)
            xT = run.x_T.reshape(len(eps), R, -1)
            out["spends"] = run.spends
        else:
            run, out["F_trace"][alg] = stable_trace(s, alg, params, T=T)
            xT = run.x_T[None]  # (1, 1, d): deterministic
        with threadpool_limits(limits=1):
            out["F_T"][alg] = s.problem.objective(xT)
            out["acc_T"][alg] = fl.accuracy(s.X_test, s.y_test, xT)
    out["majority_rate"] = float(max(np.mean(s.y_test > 0), np.mean(s.y_test < 0)))
    return out


def replace_one_witness(problem, angle: float = 1e-2, margin: float = 40.0) -> float:
    """n ||grad f_D(x) - grad f_D'(x)|| / c for one replace-one pair, built from the dataset's longest row.

    Replace sample i (a_i = m_i l_i, ||a_i|| = c = 1 after scaling) by a sample whose a_z makes the angle pi - `angle`
    with a_i, and evaluate at the x with a_i^T x = a_z^T x = -`margin`, where both logistic terms have slope
    sigma(margin) ~ 1: the mean gradient moves by sigma(margin) ||a_z - a_i|| / n = 2 cos(angle/2) c / n, about
    2c/n. Theorem 1's proof takes c/n (App. A), so a value above 1 is a pair of neighbouring datasets that its
    sensitivity does not cover.
    """
    X = problem.X
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if hasattr(X, "multiply") else np.einsum("nd,nd->n", X, X)
    i = int(np.argmax(sq))
    a_i = (np.asarray(X[i].todense()).ravel() if hasattr(X, "todense") else np.asarray(X[i], float)) * problem.y[i]
    c = float(np.linalg.norm(a_i))
    e = np.zeros_like(a_i)
    e[int(np.argmin(np.abs(a_i)))] = 1.0
    e -= (e @ a_i) / c ** 2 * a_i          # a unit direction orthogonal to a_i
    e /= np.linalg.norm(e)
    a_z = c * (np.cos(np.pi - angle) * a_i / c + np.sin(np.pi - angle) * e)
    x = -margin * (a_i + a_z) / (c * c * (1.0 - np.cos(angle)))   # a_i^T x = a_z^T x = -margin
    grad_i = -a_i * logistic.sigmoid_neg(a_i @ x)
    grad_z = -a_z * logistic.sigmoid_neg(a_z @ x)
    return float(np.linalg.norm(grad_i - grad_z) / c)


def privacy_metrics(name: str, problem, params: dict, r: dict) -> dict:
    """Theorem 1's sigma at each budget and what exact accounting of the runs' records says it buys, at both
    sensitivities: the replace-one 2c/n of Definition 1's neighbours as recorded (SPEC §6.8), and the sensitivity the
    noise was calibrated for (`sensitivity_factor` c/n; 1 is the proof's c/n, App. A). RDP (dp-accounting, all
    orders) and PLD (tight) totals at the item's delta. `r`: a `fig2_dataset` result (its sigmas and `spends`)."""
    delta, sf = params.get("delta", xu2020.DELTA), params.get("sensitivity_factor", 1.0)
    per_budget = len(r["spends"]) // len(r["epsilons"])
    out = {f"sensitivity_witness.{name}": replace_one_witness(problem)}
    ratios_rdp, ratios_rdp2 = [], []
    for i, e in enumerate(r["epsilons"]):
        k = eps_key(e)
        record = r["spends"][i * per_budget]        # every repeat of a budget spends the same
        grid = accounting.pld_grid(e)
        calibrated = totals(xu2020.at_sensitivity(record, sf), delta, discretization=grid)
        replace_one = totals(record, delta, discretization=grid)
        vals = {"eps_rdp": calibrated["rdp_eps"], "eps_pld": calibrated["pld_eps"],
                "eps_rdp_replace_one": replace_one["rdp_eps"], "eps_pld_replace_one": replace_one["pld_eps"]}
        out[f"sigma.{name}.{k}"] = float(r["sigma"][i])
        for key, v in vals.items():
            out[f"{key}.{name}.{k}"] = v
        out[f"eps_pld_replace_one_over_target.{name}.{k}"] = vals["eps_pld_replace_one"] / e
        ratios_rdp.append(vals["eps_rdp"] / e)
        ratios_rdp2.append(vals["eps_rdp_replace_one"] / e)
    out[f"eps_rdp_over_target_max.{name}"] = float(np.max(ratios_rdp))
    out[f"eps_rdp_replace_one_over_target_max.{name}"] = float(np.max(ratios_rdp2))
    return out


def fig2_metrics(name: str, r: dict, variant: str = "") -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset's sweep; `variant` suffixes every key (`<key>@<variant>`)."""
    out, reps = {}, {}
    for i, e in enumerate(r["epsilons"]):
        k = eps_key(e)
        for a in PRIVATE:
            base = "acc_admm" if a == "dp_acc_admm" else "admm"
            for key, values in ((f"F_T.{a}.{name}.{k}", r["F_T"][a][i]), (f"acc_T.{a}.{name}.{k}", r["acc_T"][a][i]),
                                (f"excess_F.{a}.{name}.{k}", r["F_T"][a][i] - r["F_T"][base][0, 0])):
                out[at(key, variant)] = float(np.mean(values))
                reps[at(key, variant)] = np.asarray(values, dtype=float)
        if variant:  # Theorem 1's sigma grows with sqrt(T): record it for the T variants too
            out[at(f"sigma.{name}.{k}", variant)] = float(r["sigma"][i])
    for a in ("admm", "acc_admm"):
        F = r["F_trace"][a]
        out[at(f"F_T.{a}.{name}", variant)] = float(r["F_T"][a][0, 0])
        out[at(f"acc_T.{a}.{name}", variant)] = float(r["acc_T"][a][0, 0])
        out[at(f"F_drop.{a}.{name}", variant)] = float(F[0] - F[-1])
        out[at(f"max_rise.{a}.{name}", variant)] = float(np.max(np.diff(F)))
    out[at(f"eta.{name}", variant)] = r["eta"]
    out[at(f"iterations.{name}", variant)] = r["T"]
    if not variant:
        out[f"majority_rate.{name}"] = r["majority_rate"]
    return out, reps


def fig2_variants(params: dict) -> dict[str, dict]:
    """The variants fig2 runs beside its default: {name: {"T": ..., "eta_rule": ...}} from `variants`.

    `variants.iterations` (the T sweep beyond the headline T) gives `T<n>`; `variants.eta_rules` gives one variant
    per rule (named after it). All run on `variants.epsilons` with the item's repeats."""
    v = params.get("variants") or {}
    out = {}
    for T in v.get("iterations", []):
        if int(T) != T or T < 1:
            raise ValueError(f"variants.iterations must be integers >= 1, got {T!r}")
        if int(T) != params["iterations"]:
            out[f"T{int(T)}"] = {"T": int(T), "eta_rule": None}
    for rule in v.get("eta_rules", []):
        if rule not in fl.ETA_RULES:
            raise ValueError(f"variants.eta_rules: each must be one of {fl.ETA_RULES}, got {rule!r}")
        if rule != params.get("eta_rule", "paper"):
            out[rule] = {"T": params["iterations"], "eta_rule": rule}
    return out


def fig2_runs(s: Setup, params: dict) -> dict:
    """Fig. 2 of one dataset with every variant: {variant ("" = default): `fig2_dataset` result}."""
    results = {"": fig2_dataset(s, params)}
    v = params.get("variants") or {}
    for name, spec in fig2_variants(params).items():
        sv = with_rule(s, params, spec["eta_rule"]) if spec["eta_rule"] else s
        results[name] = fig2_dataset(sv, params, T=spec["T"], epsilons=v.get("epsilons", params["epsilons"]))
    return results


def fig2_dataset_metrics(s: Setup, params: dict, runs: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset's Fig. 2 runs (`fig2_runs`): every variant, and the privacy
    totals of the default runs' records."""
    metrics, reps = privacy_metrics(s.name, s.problem, params, runs[""]), {}
    for name, r in runs.items():
        m, rp = fig2_metrics(s.name, r, name)
        metrics.update(m)
        reps.update(rp)
    return metrics, reps


# ----------------------------------------------------------------------------------------------------- figures
COLOURS = {"admm": "tab:blue", "acc_admm": "tab:orange", "dp_admm": "tab:green", "dp_acc_admm": "tab:red"}
STYLES = {"admm": "--", "acc_admm": "--", "dp_admm": "-", "dp_acc_admm": "-"}


def _panels(results: dict, names, height: float = 6.4):
    """A 2 x len(names) figure, one column per dataset titled like the paper's panels, and the columns that have
    results as (column, top axis, bottom axis, result); a dataset without results is marked not run."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(names), figsize=(4 * len(names), height), squeeze=False)
    columns = []
    for j, name in enumerate(names):
        top, bottom = axes[0, j], axes[1, j]
        top.set_title(f"({'abcdefgh'[j]}) {name}")
        if results.get(name) is None:
            for ax in (top, bottom):
                ax.text(0.5, 0.5, "not run:\ndataset unavailable", ha="center", va="center", transform=ax.transAxes,
                        fontsize=10, color="0.4")
                ax.set_xticks([])
                ax.set_yticks([])
        else:
            columns.append((j, top, bottom, results[name]))
    return fig, axes, columns


def _fig1_figure(results: dict, names=PANEL_ORDER):
    """Top: objective gap vs cumulative CPU time; bottom: the same vs iteration (log y). One column per dataset."""
    fig, axes, columns = _panels(results, names)
    for j, top, bottom, r in columns:
        it = np.arange(r["T"] + 1)
        for a in ALGORITHMS:
            g, sd = np.maximum(r["gap_mean"][a], 1e-16), r["gap_std"][a]
            kw = dict(color=COLOURS[a], ls=STYLES[a], label=LABELS[a])
            top.semilogy(r["cpu_time"][a], g, **kw)
            bottom.semilogy(it, g, **kw)
            if a in PRIVATE:
                bottom.fill_between(it, np.maximum(g - sd, 1e-16), g + sd, color=COLOURS[a], alpha=0.2, lw=0)
        top.set_xlabel("CPU time (s), one run")
        bottom.set_xlabel("iteration t")
        if j == columns[0][0]:
            top.set_ylabel(r"$F(x_t) - F^*$")
            bottom.set_ylabel(r"$F(x_t) - F^*$")
    if columns:
        columns[0][1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _fig2_figure(results: dict, names=PANEL_ORDER):
    """Top: F(x_T) vs epsilon; bottom: test accuracy vs epsilon (mean +- std over repeats)."""
    fig, axes, columns = _panels(results, names)
    for j, top, bottom, r in columns:
        e = r["epsilons"]
        for a in ALGORITHMS:
            kw = dict(color=COLOURS[a], ls=STYLES[a], label=LABELS[a])
            for ax, key in ((top, "F_T"), (bottom, "acc_T")):
                v = np.asarray(r[key][a])
                if a in PRIVATE:
                    ax.errorbar(e, v.mean(1), yerr=v.std(1), marker="o", ms=3, capsize=2, **kw)
                else:
                    ax.axhline(float(v.mean()), **kw)
        bottom.axhline(r["majority_rate"], color="0.5", lw=0.8, ls=":", label="majority class")
        top.set_xlabel(r"$\epsilon$")
        bottom.set_xlabel(r"$\epsilon$")
        if j == columns[0][0]:
            top.set_ylabel(r"objective $F(x_T)$ (train)")
            bottom.set_ylabel("test accuracy")
    for ax in (columns[:1] and columns[0][1:3]):
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _variants_figure(results: dict, variants: list[str], names=PANEL_ORDER):
    """DP-AccADMM minus DP-ADMM against epsilon for the default and each variant (mean +- standard error over the
    paired runs): top F(x_T) (below 0: DP-AccADMM better), bottom test accuracy (above 0: DP-AccADMM better)."""
    fig, axes, columns = _panels(results, names, 6.0)
    for j, top, bottom, rs in columns:
        for v in ["", *variants]:
            r = rs.get(v)
            if r is None:
                continue
            label = f"T = {r['T']}, eta = {r['eta']:.3g}" + ("" if v else " (default)")
            for ax, key in ((top, "F_T"), (bottom, "acc_T")):
                d = np.asarray(r[key]["dp_acc_admm"]) - np.asarray(r[key]["dp_admm"])
                se = d.std(1, ddof=1) / np.sqrt(d.shape[1]) if d.shape[1] > 1 else np.zeros(len(d))
                ax.errorbar(r["epsilons"], d.mean(1), yerr=2 * se, marker="o", ms=3, capsize=2, label=label)
        for ax in (top, bottom):
            ax.axhline(0.0, color="0.3", lw=0.8)
            ax.set_xlabel(r"$\epsilon$")
        top.set_yscale("symlog", linthresh=1e-2)
        if j == columns[0][0]:
            top.set_ylabel("F(x_T): DP-AccADMM - DP-ADMM")
            bottom.set_ylabel("test accuracy: DP-AccADMM - DP-ADMM")
    if columns:
        columns[0][1].legend(fontsize=7)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------------- items
UNAVAILABLE = "not run: dataset unavailable"


def datasets_to_run(params: dict) -> tuple[list[str], dict[str, str]]:
    """(the available datasets in config order, {unavailable dataset: the first line of its reason})."""
    status = dataset_status(params["datasets"])
    available = [n for n in params["datasets"] if status[n][0]]
    missing = {n: r.splitlines()[0] if r else "unavailable" for n, (ok, r) in status.items() if not ok}
    return available, missing


def _not_run(missing: dict) -> dict:
    return {f"status.{n}": UNAVAILABLE for n in missing}


def _with_missing(result: dict, text: str) -> str:
    lines = [f"- **{n}**: {UNAVAILABLE} ({why})" for n, why in result["missing"].items()]
    return "\n".join(lines + ["", text] if lines else [text])


# Table I
TABLE1_COLUMNS = ("dataset", "n_train", "paper_n_train", "n_test", "paper_n_test", "d", "paper_d", "lam", "paper_lam",
                  "edges", "alpha_g", "graph_seconds", "L_f", "eta", "eta_conservative", "gamma", "gamma_min",
                  "max_row_norm_raw")


def run_table1(params: dict) -> dict:
    """Table I: one row per configured dataset (counts beside the paper's; graph and step size where available)."""
    return {"rows": [table1_row(n, params) for n in params["datasets"]], "missing": datasets_to_run(params)[1]}


def metrics_table1(result: dict) -> dict:
    return {"metrics": {**table1_metrics(result["rows"]), **_not_run(result["missing"])}}


def table_table1(result: dict, metrics: dict) -> str:
    return rows_table([{c: r.get(c, UNAVAILABLE if c == "n_train" else None) for c in TABLE1_COLUMNS}
                           for r in result["rows"]])


# Figs. 1 and 2 are made of one piece per configured dataset (None where it is unavailable); Fig. 2 runs them as
# parts (experiments.parts), Fig. 1 (about a minute at paper scale) in its notebook.

def _rules(params: dict) -> list[str]:
    return [r for r in (params.get("variants") or {}).get("eta_rules", []) if r != params.get("eta_rule", "paper")]


def part_fig1(params: dict, name: str) -> dict | None:
    """Fig. 1 on one dataset: the default runs and, per step-size variant, the same runs (same noise) at that step
    against the same F*; None when the dataset is unavailable."""
    if not dataset_status([name])[name][0]:
        return None
    s = setup(name, params)
    ref = reference_minimum(s, params)
    runs = {"": fig1_dataset(s, params, ref)}
    for rule in _rules(params):
        runs[rule] = fig1_dataset(with_rule(s, params, rule), params, ref)
    return {"setup": s, "runs": runs}


def _per_dataset(item: str, params: dict, part) -> tuple[dict, dict]:
    """({available dataset: its part}, {unavailable dataset: why}); a part written while its dataset was missing
    is computed again here."""
    available, missing = datasets_to_run(params)
    parts = gather(PAPER, item, params, lambda name: part(params, name), keys=params["datasets"])
    for name in available:
        if parts[name] is None:  # its part ran while the dataset was missing (Snakemake reruns it; a hand run may not)
            print(f"{PAPER}/{item}: the part of {name} was written while {name} was unavailable: computing it here")
            parts[name] = part(params, name)
    return {name: parts[name] for name in available}, missing


# Fig. 1
def run_fig1(params: dict) -> dict:
    """Fig. 1 on every available dataset (`part_fig1`)."""
    datasets, missing = _per_dataset("fig1", params, part_fig1)
    return {"params": params, "datasets": datasets, "rules": _rules(params), "missing": missing}


def plot_fig1(result: dict) -> dict:
    """{"fig1": the default runs, "fig1_<rule>": each step-size variant}."""
    figs = {"fig1": _fig1_figure({n: d["runs"][""] for n, d in result["datasets"].items()})}
    for rule in result["rules"]:
        fig = _fig1_figure({n: d["runs"][rule] for n, d in result["datasets"].items()})
        fig.suptitle(f"variant {rule}: eta = 1/(L_f + rho ||A^T A||)", y=1.02)
        figs[f"fig1_{rule}"] = fig
    return figs


def _item_metrics(result: dict, dataset_metrics) -> dict:
    """write_metrics arguments of a figure: `dataset_metrics(setup, params, runs)` of every dataset that ran, its
    graph (edges, estimation time), and "not run" for the unavailable ones."""
    metrics, repeats = {}, {}
    for name, d in result["datasets"].items():
        m, rp = dataset_metrics(d["setup"], result["params"], d["runs"])
        metrics.update(m)
        repeats.update(rp)
        metrics[f"edges.{name}"] = d["setup"].graph.n_edges
        metrics[f"graph_seconds.{name}"] = d["setup"].graph.seconds
    metrics.update(_not_run(result["missing"]))
    return {"metrics": metrics, "repeats": repeats}


def fig1_dataset_metrics(s: Setup, params: dict, runs: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset's Fig. 1 runs ({variant ("" = default): result})."""
    metrics, reps = {}, {}
    for variant, r in runs.items():
        m, rp = fig1_metrics(s.name, r, params, variant)
        metrics.update(m)
        reps.update(rp)
    return metrics, reps


def metrics_fig1(result: dict) -> dict:
    return _item_metrics(result, fig1_dataset_metrics)


def table_fig1(result: dict, metrics: dict) -> str:
    """Each dataset's set-up (graph, step, sigma, F*), then each run's gap at T, test accuracy and rate slopes."""
    setups = [{"dataset": n, "n": d["setup"].problem.n, "d": d["setup"].problem.d, "|E|": d["setup"].graph.n_edges,
               "graph (s)": d["setup"].graph.seconds, "L_f": d["setup"].problem.L_f, "eta": d["setup"].eta,
               "sigma": d["runs"][""]["sigma"], "F*": d["runs"][""]["F_star"],
               "F* from": d["runs"][""]["F_star_source"]} for n, d in result["datasets"].items()]
    runs = []
    for n, d in result["datasets"].items():
        for v in d["runs"]:
            key = lambda k: at(f"{k}.{n}", v)  # noqa: E731
            runs.append({"dataset": n, "variant": v or "default", "eta": metrics[key("eta")]}
                        | {f"{LABELS[a]}: {what}": metrics[key(f"{k}.{a}")]
                           for a in ALGORITHMS for what, k in (("gap at T", "gap_T"), ("test accuracy", "acc_T"))}
                        | {"slope ADMM": metrics[key("slope.admm")], "slope AccADMM": metrics[key("slope.acc_admm")]})
    return _with_missing(result, rows_table(setups) + "\n\n" + rows_table(runs))


# Fig. 2
def parts_fig2(params: dict) -> list[str]:
    return list(params["datasets"])


def part_fig2(params: dict, name: str) -> dict | None:
    """Fig. 2 on one dataset with every variant (`fig2_runs`); None when the dataset is unavailable."""
    if not dataset_status([name])[name][0]:
        return None
    s = setup(name, params)
    return {"setup": s, "runs": fig2_runs(s, params)}


def run_fig2(params: dict) -> dict:
    """Fig. 2 on every available dataset, with every variant (`part_fig2`)."""
    datasets, missing = _per_dataset("fig2", params, part_fig2)
    return {"params": params, "datasets": datasets, "missing": missing, "variants": sorted(fig2_variants(params))}


def plot_fig2(result: dict) -> dict:
    """{"fig2": objective and accuracy against epsilon, "fig2_variants": DP-AccADMM minus DP-ADMM per variant}."""
    runs = {n: d["runs"] for n, d in result["datasets"].items()}
    return {"fig2": _fig2_figure({n: r[""] for n, r in runs.items()}),
            "fig2_variants": _variants_figure(runs, result["variants"])}


def metrics_fig2(result: dict) -> dict:
    return _item_metrics(result, fig2_dataset_metrics)


def table_fig2(result: dict, metrics: dict) -> str:
    """The step size and stability of every run (noise-free objective drop F(x_0) - F(x_T) and its largest one-step
    rise), then Theorem 1's sigma and what it buys (total epsilon accounted from the runs' records)."""
    stability = [{"dataset": n, "variant": v or "default", "T": r["T"], "eta": r["eta"]}
                 | {f"{LABELS[a]}: {what}": metrics[at(f"{k}.{a}.{n}", v)] for a in ("admm", "acc_admm")
                    for what, k in (("F drop", "F_drop"), ("max rise", "max_rise"), ("F(x_T)", "F_T"),
                                    ("test accuracy", "acc_T"))}
                 for n, d in result["datasets"].items() for v, r in d["runs"].items()]
    sf = result["params"].get("sensitivity_factor", 1.0)
    privacy = [{"dataset": n, "target epsilon": float(e)}
               | {col: metrics[f"{key}.{n}.{eps_key(e)}"]
                  for col, key in (("sigma (Thm 1)", "sigma"), (f"RDP, {sf:g}c/n", "eps_rdp"),
                                   (f"PLD, {sf:g}c/n", "eps_pld"), ("RDP, 2c/n (replace-one)", "eps_rdp_replace_one"),
                                   ("PLD, 2c/n (replace-one)", "eps_pld_replace_one"))}
               for n in result["datasets"] for e in result["params"]["epsilons"]]
    return _with_missing(result, rows_table(stability) + "\n\nTheorem 1's sigma and the total epsilon the runs' "
                         "records account to:\n\n" + rows_table(privacy))
