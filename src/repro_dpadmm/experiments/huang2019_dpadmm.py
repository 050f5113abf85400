"""Huang et al. 2019 (DP-ADMM) items, docs/choices.md#huang: per item, ``run_<item>(params)`` (loads Adult, runs, returns the
result), ``plot_<item>(result)`` ({figure file name: figure}), ``metrics_<item>(result)`` (the keyword arguments of
``write_metrics``: flat metrics and per-repeat values) and ``table_<item>(result, metrics)`` (the notebook's results
table, markdown). Items of one shape share one implementation (config in, tidy results out, on arrays X, y):

* fig1 / fig4: ``n_sweep`` - DP-ADMM (l1 / l2) for several numbers of agents n at one (eps, delta), beside the
  centralised optimum.
* fig2 / fig5: ``privacy_sweep`` - DP-ADMM's augmented objective value for an eps-sweep (delta fixed) and a
  delta-sweep (eps fixed) [D].
* fig3 / fig6: ``comparison`` - DP-ADMM against ADMM, DPSGD (sum convention; average as a variant) and, for l2, PVP
  and DVP, at every setting of the two sweeps; DPSGD's learning-rate sweep (``lr_sweep``), which shows the convention
  under which the paper's "optimal learning rate 0.1" is nearest the optimum; non-private ADMM's distance to the
  centralised optimum.
* table2: ``timing`` - seconds for 100 iterations of ADMM, PVP, DVP and DP-ADMM (l2), timed interleaved (every
  round runs each method once, in a random order) so that each ratio has a confidence interval (``repro_dpadmm.timing``).

Privacy totals are those of what each run recorded (``History.spends``, turned into the paper's eps-bar, RDP and
PLD totals by ``privacy.bounds.huang2019.spend_totals``), never recomputed from (eps, delta).

Randomness (docs/choices.md#seeded-randomness): repeat r of every item uses the train/test split drawn from
``repeat_generators(seed, R, PAPER, "split")[r]`` (the same split in every item and for every n; the agent partition
is drawn after it). Each method has one noise stream per regulariser and n, shared by every (eps, delta) setting:
common random numbers, i.e. repeat r of every setting draws the same standard normals (scaled by its own sigma), so
the differences between settings of a sweep are paired and not swamped by independent noise. Identical runs in two
items (e.g. DP-ADMM in fig2 and fig3) give identical numbers.

Metrics: every mean over repeats that a claim compares is also written per repeat (``repeats``), so that the claims
engine judges differences against their standard error; DPSGD's average convention and the error of the global model
w^k are written as variants (``<key>@dpsgd_avg``, ``<key>@global_model``). Every item writes the trivial references
its comparisons need: the majority-class test error of each repeat's split (``majority.err``) and the loss of the
zero start w^0 = 0 (``el_x0``, and ``aov_x0`` for the augmented objective).

Figures: the paper's figure first (``<item>.png``: its panels and curves, means over runs, iterations 1..t, linear
axes except the augmented objective's log axis [D]); our additions in further figures (``<item>_detail*.png``,
``<item>_summary.png``, ``<item>_lr.png``).
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from functools import cache

import numpy as np

from .. import timing as timing_mod
from ..algorithms import centralized as ce
from ..algorithms import consensus as cs
from ..algorithms import sgd
from ..datasets import load
from ..privacy.bounds import huang2019 as hb
from ..problems import regularizers
from ..rng import repeat_generators
from .parts import gather
from .progress import progress

PAPER = "huang2019_dpadmm"

# Table II of the paper (MATLAB, "Intel(R) Core(TM) 3.40 GHz computer with 16 GB RAM"): seconds for 100 iterations.
PAPER_TABLE2 = {
    0.01: {"admm": 67.242, "pvp": 102.282, "dvp": 59.743, "dpadmm": 6.937},
    0.05: {"admm": 67.242, "pvp": 78.798, "dvp": 65.935, "dpadmm": 5.322},
    0.1: {"admm": 67.242, "pvp": 79.013, "dvp": 69.855, "dpadmm": 5.218},
}

LABELS = {"dpadmm": "DP-ADMM", "admm": "ADMM (non-private)", "pvp": "ADMM + PVP", "dvp": "DVP",
          "dpsgd_avg": "DPSGD (average)", "dpsgd_sum": "DPSGD (sum)", "central": "centralised optimum",
          "dpadmm_const": "DP-ADMM, constant eta = eta_i^1 (constant noise)",
          "dpadmm_const_last": "DP-ADMM, constant eta = eta_i^t (constant noise)"}

# The ablation of time-varying noise (§III-B, the abstract's "time-varying Gaussian noise addition"): DP-ADMM with its
# step size, hence by eq. (14) its noise, frozen at the schedule's first (k = 1) or last (k = t) value, at the same
# per-iteration (eps, delta) and on the same noise draws. {run name: index into the schedule}.
CONSTANT_ETA = {"dpadmm_const": 0, "dpadmm_const_last": -1}


# --------------------------------------------------------------------------------------------------- helpers
def dkey(delta: float) -> str:
    """1e-4 -> '1e-4' (metric keys)."""
    e = math.log10(delta)
    return f"1e{round(e)}" if abs(e - round(e)) < 1e-9 else f"{delta:g}"


def skey(eps: float, delta: float) -> str:
    """The setting key of metric names, e.g. 'eps0.1_delta1e-4'."""
    return f"eps{eps:g}_delta{dkey(delta)}"


def settings(params: dict) -> dict[str, list[tuple[float, float]]]:
    """The two sweeps of Figs. 2/3/5/6 [D]: eps over `epsilons` at `fixed_delta`, delta over `deltas` at
    `fixed_epsilon`."""
    eps_sweep = [(float(e), float(params["fixed_delta"])) for e in params["epsilons"]]
    delta_sweep = [(float(params["fixed_epsilon"]), float(d)) for d in params["deltas"]]
    return {"eps": eps_sweep, "delta": delta_sweep}


def unique_settings(params: dict) -> list[tuple[float, float]]:
    out = []
    for sweep in settings(params).values():
        for s in sweep:
            if s not in out:
                out.append(s)
    return out


def _data(X, y, params: dict, seed: int, n: int) -> cs.StarData:
    R = int(params["repeats"])
    return cs.split_star(X, y, n, repeat_generators(seed, R, PAPER, "split"), int(params.get("n_train", 40_000)),
                         params.get("n_test"))


def _noise(seed: int, R: int, *labels) -> list:
    return repeat_generators(seed, R, PAPER, *map(str, labels))


def _common(params: dict) -> dict:
    return {"rho": float(params.get("rho", 0.1)), "lam_n": float(params.get("lam_n", 1e-6))}


def summarise(trace: np.ndarray) -> dict:
    """Mean, min and max over repeats of a (R, T+1) trace (NaN where not evaluated), the per-repeat final values and
    the whole trace ('all')."""
    with np.errstate(all="ignore"):
        return {"mean": trace.mean(0), "min": trace.min(0), "max": trace.max(0), "final": trace[:, -1],
                "all": trace}


def put(m: dict, rep: dict, key: str, values) -> None:
    """Metric `key` = the mean of the per-repeat `values`, which go to the repeats record."""
    v = np.asarray(values, dtype=float).ravel()
    m[key] = float(v.mean())
    rep[key] = v


def majority_error(data) -> np.ndarray:
    """Per repeat, the test error of the constant classifier that predicts the majority label of the training
    set: what a model that learnt nothing gets."""
    maj = np.where(data.b.reshape(data.D, -1).mean(1) > 0, 1.0, -1.0)
    return (data.y_test != maj[:, None]).mean(1)


def majority_share(data, w: np.ndarray) -> np.ndarray:
    """Per repeat, the share of test rows that the single model w (R, d) labels as the training majority class
    (1.0: a constant classifier)."""
    maj = np.where(data.b.reshape(data.D, -1).mean(1) > 0, 1.0, -1.0)
    pred = np.where(data.test_scores(w[:, None, :])[..., 0] > 0, 1.0, -1.0)  # tie -> -1 as in test_error
    return (pred == maj[:, None]).mean(1)


def _curves(h) -> dict:
    return {k: summarise(v) for k, v in h.traces.items()}


def _global_el(data, w: np.ndarray) -> np.ndarray:
    """Per repeat, the empirical loss (1/n) sum_i (1/m_i) sum_j l(a_ij, b_ij, w) of one model per repeat, w (R, d):
    for DP-ADMM, PVP and DVP the aggregator's w^k of (10c), the reading `global_model` (scored as DPSGD's one model
    is). By (10d) the duals sum to zero from gamma^0 = 0, so w^k is the mean of the shared models."""
    R = w.shape[0]
    return data.mean_loss(np.ascontiguousarray(np.broadcast_to(w[:, None, :], (R, data.n, data.d)))).mean(-1)


def _dpadmm_run(data, reg, eps, delta, params, seed, n):
    c = _common(params)
    T, R = int(params["iterations"]), int(params["repeats"])
    # one stream for every (eps, delta): common random numbers across the settings (module docstring)
    return cs.dpadmm(data, reg=reg, T=T, rngs=_noise(seed, R, "dpadmm", reg, f"n{n}"),
                     epsilon=eps, delta=delta, err_every=int(params.get("err_every", 1)), **c)


def _central_summary(data, w_star) -> dict:
    R = w_star.shape[0]
    W = np.broadcast_to(w_star[:, None, :], (R, data.n, data.d))
    return {"el": data.mean_loss(W).mean(-1), "err": data.test_error(w_star),
            "w_norm": np.linalg.norm(w_star, axis=-1), "w": w_star}


def _objective_gap(data, reg, lam_n, w_bar, w_star) -> np.ndarray:
    """sum_i (f_i(w-bar_i) - f_i(w*)) per repeat (Theorems 3/4 with beta = 0)."""
    R = w_star.shape[0]
    W = np.broadcast_to(w_star[:, None, :], (R, data.n, data.d))
    def f(v):
        return data.mean_loss(v) + lam_n * regularizers.value(reg, v)

    return (f(w_bar) - f(W)).sum(-1)


def eta_plugin_rel_diff(reg: str, T: int, m: int, eps: float, delta: float, n: int) -> float:
    """Largest relative difference over k between eta of eq. (29)/(34) and the paper's plugged-in form (§VI-E/F)."""
    k = np.arange(1, T + 1)
    L = np.log(1.25 / delta)
    if reg == "l1":  # [!] the plugged-in form has 10^-6 sqrt(104)/n where (29) gives 10^-6 sqrt(104)
        plug = 23 * (2 * k * (1 + 1e-6 * np.sqrt(104) / n) ** 2 + 1664 * k * L / (m ** 2 * eps ** 2)) ** -0.5
    else:
        plug = 1 / (0.25 + 1e-6 + 2 * np.sqrt(416 * k * L) / (89 * m * eps))
    eq = hb.eta_schedule(reg, T, m, eps, delta)
    return float(np.max(np.abs(eq - plug) / plug))


# --------------------------------------------------------------------------------------------------- fig1 / fig4
def n_sweep(X, y, params: dict, seed: int) -> dict:
    """Figs. 1 (l1) and 4 (l2): DP-ADMM at (epsilon, delta) for every n in `agents`, and the centralised optimum of
    each repeat's training set (the split is the same for every n)."""
    reg, eps, delta = params["reg"], float(params["epsilon"]), float(params["delta"])
    c = _common(params)
    T = int(params["iterations"])
    out = {"reg": reg, "eps": eps, "delta": delta, "T": T, "runs": {}}
    for n in progress(params["agents"], "DP-ADMM", name=lambda n: f"n = {n}"):
        n = int(n)
        data = _data(X, y, params, seed, n)
        h = _dpadmm_run(data, reg, eps, delta, params, seed, n)
        if "privacy" not in out:  # sigma_{i,k} and Delta_{i,k} share 1/m_i (eq. (14)): every n records the same z
            out["privacy"] = hb.spend_totals(h.spends[0], delta)
        run = {"m": data.m, "curves": _curves(h), "sigma": h.meta["sigma"], "eta": h.meta["eta"],
               "time_s": h.meta["wall_time_s"]}
        if "central" not in out:
            t0 = time.perf_counter()
            w_star = ce.star_optimum(data, reg, c["lam_n"])
            out["central"] = {**_central_summary(data, w_star), "time_s": time.perf_counter() - t0}
            out["n_train"], out["n_test"] = data.n * data.m, data.y_test.shape[1]
            out["max_row_norm"] = data.row_norm_max
            out["majority_err"] = majority_error(data)  # the split is the same for every n
        w_bar = h.meta["w_tilde_mean_prev" if reg == "l1" else "w_tilde_mean"]
        run["thm_gap"] = _objective_gap(data, reg, c["lam_n"], w_bar, out["central"]["w"])
        bound = hb.utility_bound_l1 if reg == "l1" else hb.utility_bound_l2
        run["thm_bound"] = float(bound(T, data.m, n, eps, delta, rho=c["rho"], lam_n=c["lam_n"], d=data.d))
        run["eta_plugin_rel_diff"] = eta_plugin_rel_diff(reg, T, data.m, eps, delta, n)
        out["runs"][n] = run
    return out


def n_sweep_metrics(res: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of Figs. 1 / 4."""
    m = {"n_train": res["n_train"], "n_test": res["n_test"], "max_row_norm": res["max_row_norm"],
         "central.w_norm": res["central"]["w_norm"].mean(), "central.w_norm_min": res["central"]["w_norm"].min(),
         "central.w_norm_max": res["central"]["w_norm"].max()}
    rep = {}
    put(m, rep, "central.el", res["central"]["el"])
    put(m, rep, "central.err", res["central"]["err"])
    put(m, rep, "majority.err", res["majority_err"])
    first = next(iter(res["runs"].values()))
    put(m, rep, "el_x0", first["curves"]["el"]["all"][:, 0])  # F(x0), the loss of the zero start (ln 2 at every n)
    for n, r in res["runs"].items():
        k = f"n{n}"
        m[f"m.{k}"] = r["m"]
        put(m, rep, f"el_final.{k}", r["curves"]["el"]["final"])
        m[f"el_final_sd.{k}"] = r["curves"]["el"]["final"].std()
        put(m, rep, f"err_final.{k}", r["curves"]["err"]["final"])
        m[f"err_final_sd.{k}"] = r["curves"]["err"]["final"].std()
        put(m, rep, f"errw_final.{k}", r["curves"]["err_global"]["final"])
        rep[f"err_final.{k}@global_model"] = rep[f"errw_final.{k}"]
        m[f"err_final.{k}@global_model"] = m[f"errw_final.{k}"]
        sig = np.asarray(r["sigma"]).reshape(len(r["sigma"]), -1)[:, 0]  # sigma_{i,k}, k = 1..t (equal m_i)
        m[f"sigma_k1.{k}"] = float(sig[0])
        m[f"sigma_k10.{k}"] = float(sig[min(10, len(sig)) - 1])
        m[f"sigma_kT.{k}"] = float(sig[-1])
        m[f"sigma_nonincreasing.{k}"] = bool(np.all(np.diff(sig) <= 0))
        m[f"thm_gap.{k}"] = r["thm_gap"].mean()
        m[f"thm_bound.{k}"] = r["thm_bound"]
        m[f"eta_plugin_rel_diff.{k}"] = r["eta_plugin_rel_diff"]
    _privacy_keys(m, "dpadmm", res["eps"], res["delta"], res["privacy"])
    return m, rep


def _privacy_keys(m: dict, method: str, eps: float, delta: float, p: dict) -> None:
    base = f"privacy.{method}.{skey(eps, delta)}"
    for k in ("paper_eps", "rdp_eps", "pld_eps", "delta", "noise_multiplier", "steps", "paper_eps_int32"):
        if k in p:
            m[f"{base}.{k}"] = p[k]


# --------------------------------------------------------------------------------------------------- fig2 / fig5
def privacy_sweep(X, y, params: dict, seed: int) -> dict:
    """Figs. 2 (l1) and 5 (l2): DP-ADMM at n agents for every setting of the eps- and delta-sweeps."""
    reg, n, T = params["reg"], int(params["agents"]), int(params["iterations"])
    data = _data(X, y, params, seed, n)
    out = {"reg": reg, "n": n, "T": T, "sweeps": settings(params), "runs": {}, "majority_err": majority_error(data)}
    for eps, delta in progress(unique_settings(params), "DP-ADMM", name=lambda s: skey(*s)):
        h = _dpadmm_run(data, reg, eps, delta, params, seed, n)
        out["runs"][(eps, delta)] = {"curves": _curves(h), "privacy": hb.spend_totals(h.spends[0], delta),
                                     "sigma": h.meta["sigma"], "eta": h.meta["eta"]}
    return out


def privacy_sweep_metrics(res: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of Figs. 2 / 5."""
    m, rep = {}, {}
    T = res["T"]
    put(m, rep, "majority.err", res["majority_err"])
    first = True
    for (eps, delta), r in res["runs"].items():
        k = skey(eps, delta)
        cur = r["curves"]
        aov = cur["aov"]["all"]
        if first:  # every setting starts at w = 0: the AOV and EL of the zero model (F(x0))
            put(m, rep, "aov_x0", aov[:, 0])
            put(m, rep, "el_x0", cur["el"]["all"][:, 0])
            first = False
        put(m, rep, f"aov_k1.{k}", aov[:, 1])  # where the paper's plot starts (k = 1, Algorithm 3)
        put(m, rep, f"aov_final.{k}", cur["aov"]["final"])
        put(m, rep, f"aov_last10.{k}", aov[:, -10:].mean(1))
        lag = min(10, T - 1)
        put(m, rep, f"aov_drift10.{k}", aov[:, -1] - aov[:, -1 - lag])  # change over the last 10 iterations
        put(m, rep, f"aov_min.{k}", aov[:, 1:].min(1))
        # how much of its fall from k = 1 the curve still makes in the second half of the run: an a + b / sqrt(k)
        # curve (the form of Theorems 3 / 4's bound) makes (1/sqrt(t/2) - 1/sqrt(t)) / (1 - 1/sqrt(t)) of it
        # (0.046 at t = 100), a 1/k curve less, a straight line half
        half = T // 2
        put(m, rep, f"aov_half.{k}", aov[:, half])
        with np.errstate(divide="ignore", invalid="ignore"):
            put(m, rep, f"aov_tail_share.{k}", (aov[:, half] - aov[:, -1]) / (aov[:, 1] - aov[:, -1]))
        put(m, rep, f"el_final.{k}", cur["el"]["final"])
        put(m, rep, f"err_final.{k}", cur["err"]["final"])
        put(m, rep, f"errw_final.{k}", cur["err_global"]["final"])
        m[f"c0.{k}"] = r["privacy"]["paper_eps"] / (math.sqrt(T) * eps)
        # Theorem 2's sqrt(t): the same accountant at 4t (its c_0 is constant only if eps-bar doubles)
        m[f"c0_4t.{k}"] = hb.eps_bar(eps, delta, 4 * T) / (math.sqrt(4 * T) * eps)
        _privacy_keys(m, "dpadmm", eps, delta, r["privacy"])
    return m, rep


# --------------------------------------------------------------------------------------------------- fig3 / fig6
# DPSGD's aggregation convention (algorithms.sgd): the first of params['dpsgd']['conventions'] is the default (metric
# name "dpsgd"), any other a variant of the same keys; the names of their runs and variants:
DPSGD_RUN = {"sum": "dpsgd_sum", "average": "dpsgd_avg"}


def _comparison_parts(params: dict) -> dict[str, tuple]:
    """Figs. 3 / 6 run as parts (experiments.parts): non-private ADMM (with the centralised optimum); per (eps, delta)
    setting DP-ADMM (with its constant-step ablation), DPSGD and, for l2, PVP; for l2, DVP once per eps (pure DP: one
    run serves every delta); per setting DPSGD's learning-rate sweep (`lr_sweep`) if params['dpsgd'] has an
    `lr_grid`. {key: what the part runs}."""
    out = {"admm": ("admm",)}
    for eps, delta in unique_settings(params):
        out[f"eps{eps:g}-delta{delta:g}"] = ("setting", eps, delta)
    if params["reg"] == "l2":
        for eps in dict.fromkeys(e for e, _ in unique_settings(params)):
            out[f"dvp-eps{eps:g}"] = ("dvp", eps)
    if params["dpsgd"].get("lr_grid"):
        for eps, delta in unique_settings(params):
            out[f"dpsgd-lr-eps{eps:g}-delta{delta:g}"] = ("lr", eps, delta)
    return out


def _dpsgd_run(data, reg, eps, delta, params, seed, n, conv, lr):
    """DPSGD at (eps, delta) with one noise stream per convention, regulariser and n, shared by every setting and
    learning rate (common random numbers: the sweep's run at the configured lr is the comparison's run)."""
    dp, R, T = params["dpsgd"], int(params["repeats"]), int(params["iterations"])
    return sgd.dpsgd(data, reg=reg, T=T, rngs=_noise(seed, R, "dpsgd", conv, reg, f"n{n}"), epsilon=eps, delta=delta,
                     lr=float(lr), convention=conv, clip=float(dp["clip"]), err_every=int(params.get("err_every", 1)),
                     **_common(params))


def lr_sweep(data, params: dict, seed: int, at: list[tuple[float, float]] | None = None) -> dict:
    """DPSGD per repeat for every learning rate of params['dpsgd']['lr_grid'] (in the units of the default
    convention) at every setting of `at` (default: both sweeps): {(lr, eps, delta): {'el', 'err', 'el_k10',
    'majority_share': (R,)}}, the final EL and test error, the EL at k = 10 and the share of test rows labelled as
    the majority class. One sweep covers both conventions: the sum convention at lr is the average convention at n
    lr, draw for draw (algorithms.sgd), so the grid's best lr reads in either unit and DPSGD tuned on the grid is the
    same model in both (the reading `dpsgd_tuned`)."""
    reg, n, dp, T = params["reg"], int(params["agents"]), params["dpsgd"], int(params["iterations"])
    conv = dp["conventions"][0]
    k10 = min(ADMM_FAST_K, T)
    out = {}
    for eps, delta in (unique_settings(params) if at is None else at):
        for lr in map(float, dp["lr_grid"]):
            h = _dpsgd_run(data, reg, eps, delta, params, seed, n, conv, lr)
            out[(lr, eps, delta)] = {"el": h.traces["el"][:, -1], "err": h.traces["err"][:, -1],
                                     "el_k10": h.traces["el"][:, k10],
                                     "majority_share": majority_share(data, h.meta["w"])}
    return out


def comparison_part(X, y, params: dict, seed: int, key: str, data: cs.StarData | None = None) -> dict:
    """One part of `comparison` (see _comparison_parts), with the wall time of each method's runs. `data`: the
    item's split (``_data(X, y, params, seed, agents)``) if already made (every part uses the same)."""
    what = _comparison_parts(params)[key]
    reg, n, T, R = params["reg"], int(params["agents"]), int(params["iterations"]), int(params["repeats"])
    c = _common(params)
    ev = int(params.get("err_every", 1))
    data = _data(X, y, params, seed, n) if data is None else data
    a = params.get("admm", {})
    t0 = time.perf_counter()
    if what[0] == "admm":
        h = cs.admm(data, reg=reg, T=T, repeats=R, tol=float(a.get("tol", 1e-8)), max_inner=a.get("max_inner"),
                    err_every=ev, **c)
        t = time.perf_counter() - t0
        w_star = ce.star_optimum(data, reg, c["lam_n"])  # where ADMM converges to (its distance at k = t)
        return {"admm": {"curves": _curves(h), "inner_steps_mean": h.meta["inner_steps_mean"],
                         "inner_residual_max": h.meta["inner_residual_max"], "w": h.meta["w"]},
                "central": _central_summary(data, w_star), "time": t, "majority_err": majority_error(data)}
    if what[0] == "lr":
        return {"lr_sweep": lr_sweep(data, params, seed, at=[what[1:]]), "time": time.perf_counter() - t0}
    if what[0] == "dvp":
        eps = what[1]
        h = cs.dvp(data, T=T, rngs=_noise(seed, R, "dvp", f"n{n}"), epsilon=eps, tol=float(a.get("tol", 1e-8)),
                   err_every=ev, **c)
        t = time.perf_counter() - t0
        el_global = _global_el(data, h.meta["w"])
        # pure DP: its totals at the eps-sweep's delta (PLD; paper_eps: basic composition, docs/choices.md#huang-total-privacy)
        return {"curves": _curves(h), "Delta": h.meta["Delta"], "eps_prime": h.meta["eps_prime"],
                "privacy": hb.spend_totals(h.spends[0], float(params["fixed_delta"])), "time": t,
                "el_global": el_global}
    _, eps, delta = what
    dp = params["dpsgd"]
    runs, spends, times, share = {}, {}, {}, {}  # spends: what each private method recorded
    h = _dpadmm_run(data, reg, eps, delta, params, seed, n)
    runs["dpadmm"], spends["dpadmm"] = _curves(h), h.spends[0]
    times["dpadmm"] = time.perf_counter() - t0
    el_global = {"dpadmm": _global_el(data, h.meta["w"])}
    for name, at in CONSTANT_ETA.items():  # the same draws (DP-ADMM's stream), a constant step and noise
        eta = np.asarray(h.meta["eta"])
        hc = cs.dpadmm(data, reg=reg, T=T, rngs=_noise(seed, R, "dpadmm", reg, f"n{n}"), epsilon=eps, delta=delta,
                       eta=np.broadcast_to(eta[at], eta.shape).copy(), err_every=ev, **c)
        runs[name] = _curves(hc)
        el_global[name] = _global_el(data, hc.meta["w"])
    for conv in dp["conventions"]:
        t0 = time.perf_counter()
        h = _dpsgd_run(data, reg, eps, delta, params, seed, n, conv, dp["lr"])
        name = DPSGD_RUN[conv]
        runs[name] = _curves(h)
        spends.setdefault("dpsgd", h.spends[0])  # both conventions release the same noisy gradients
        share[(name, eps, delta)] = majority_share(data, h.meta["w"])
        times[name] = time.perf_counter() - t0
    if reg == "l2":
        t0 = time.perf_counter()
        h = cs.pvp(data, T=T, rngs=_noise(seed, R, "pvp", f"n{n}"), epsilon=eps, delta=delta,
                   tol=float(a.get("tol", 1e-8)), err_every=ev, **c)
        runs["pvp"], spends["pvp"] = _curves(h), h.spends[0]
        times["pvp"] = time.perf_counter() - t0
        el_global["pvp"] = _global_el(data, h.meta["w"])
    # accounted after the timed runs
    return {"curves": runs, "privacy": {name: hb.spend_totals(sp, delta) for name, sp in spends.items()},
            "times": times, "majority_share": share, "el_global": el_global}


def combine_comparison(params: dict, parts: dict) -> dict:
    """The result of Figs. 3 / 6 from every part of `comparison` ({key: comparison_part(...)})."""
    keys = _comparison_parts(params)
    dvp_key = {what[1]: key for key, what in keys.items() if what[0] == "dvp"}
    adm = parts["admm"]
    dp = params["dpsgd"]
    out = {"reg": params["reg"], "n": int(params["agents"]), "T": int(params["iterations"]),
           "sweeps": settings(params), "runs": {}, "times": {"admm": adm["time"]},
           "majority_err": adm["majority_err"], "majority_share": {}, "admm": adm["admm"], "central": adm["central"],
           "dpsgd": {"conventions": list(dp["conventions"]), "lr": float(dp["lr"])}}
    lr_keys = [key for key, what in keys.items() if what[0] == "lr"]
    if lr_keys:
        out["lr_sweep"] = {k: v for key in lr_keys for k, v in parts[key]["lr_sweep"].items()}
        out["times"]["dpsgd_lr_sweep"] = sum(parts[key]["time"] for key in lr_keys)
    dvp_done = {}
    for key, (kind, *setting) in keys.items():
        if kind != "setting":
            continue
        eps, delta = setting
        p = parts[key]
        runs = dict(p["curves"])
        for name, t in p["times"].items():
            out["times"][name] = out["times"].get(name, 0.0) + t
        out["majority_share"].update(p["majority_share"])
        if params["reg"] == "l2":
            if eps not in dvp_done:
                d = parts[dvp_key[eps]]
                out["times"]["dvp"] = out["times"].get("dvp", 0.0) + d["time"]
                dvp_done[eps] = {k: d[k] for k in ("curves", "Delta", "eps_prime", "privacy", "el_global")}
            runs["dvp"] = dvp_done[eps]["curves"]
        el_global = dict(p["el_global"])
        if params["reg"] == "l2":
            el_global["dvp"] = dvp_done[eps]["el_global"]
        out["runs"][(eps, delta)] = {"curves": runs, "privacy": p["privacy"]["dpadmm"], "privacy_by": p["privacy"],
                                     "el_global": el_global}
    out["dvp"] = dvp_done
    return out


def comparison(X, y, params: dict, seed: int) -> dict:
    """Figs. 3 (l1) and 6 (l2): DP-ADMM, non-private ADMM, DPSGD (each convention in params['dpsgd']['conventions'])
    and, for l2, PVP (same (eps, delta)) and DVP (same per-iteration eps, pure DP) at every setting of the sweeps,
    and DPSGD's learning-rate sweep: every part in this process (the items gather their parts, `run_fig3` /
    `run_fig6`)."""
    return combine_comparison(params, {k: comparison_part(X, y, params, seed, k) for k in _comparison_parts(params)})


def metric_names(res: dict) -> dict[str, tuple[str, str]]:
    """Metric name and variant suffix of each run: DPSGD's default convention is "dpsgd", another one the variant
    `dpsgd_sum` / `dpsgd_avg` of the same keys."""
    conv = res["dpsgd"]["conventions"]
    out = {"dpadmm": ("dpadmm", ""), "pvp": ("pvp", ""), "dvp": ("dvp", ""), "dpadmm_const": ("dpadmm_const", ""),
           "dpadmm_const_last": ("dpadmm_const", "@const_eta_last")}
    for i, c in enumerate(conv):
        out[DPSGD_RUN[c]] = ("dpsgd", "" if i == 0 else f"@{DPSGD_RUN[c]}")
    return out


ADMM_FAST_K = 10  # "ADMM has fast convergence": every method compared at this k


def _finite_or_inf(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.inf)


def _lr_sweep_metrics(res: dict, m: dict, rep: dict) -> None:
    """The learning-rate sweep: EL and test error per lr and setting, and per setting the grid's best lr (lowest
    mean EL) in the default convention's units and, as the variant of each other convention, in its units; the
    EL of the configured lr above the best (`paper_el_excess`, per repeat)."""
    sw, dp = res["lr_sweep"], res["dpsgd"]
    conv, lr_paper, n = dp["conventions"], dp["lr"], res["n"]
    grid = sorted({lr for lr, _, _ in sw})
    # lr in the default convention's units that equals lr_paper in convention c: sum lr = average lr / n
    scale = {c: (1.0 if c == conv[0] else (1.0 / n if c == "average" else float(n))) for c in conv}
    for eps, delta in res["sweeps"]["eps"]:
        k = skey(eps, delta)
        for lr in grid:
            put(m, rep, f"lr_sweep.el.lr{lr:g}.{k}", sw[(lr, eps, delta)]["el"])
            put(m, rep, f"lr_sweep.err.lr{lr:g}.{k}", sw[(lr, eps, delta)]["err"])
        # a learning rate with a diverged (non-finite) repeat never wins, as in the frontier's step rule
        means = _finite_or_inf([np.mean(sw[(lr, eps, delta)]["el"]) for lr in grid])
        best = grid[int(np.argmin(means))]
        errs = _finite_or_inf([np.mean(sw[(lr, eps, delta)]["err"]) for lr in grid])
        put(m, rep, f"lr_sweep.best_err.{k}", sw[(best, eps, delta)]["err"])  # error at the best-EL lr
        put(m, rep, f"lr_sweep.min_err.{k}", sw[(grid[int(np.argmin(errs))], eps, delta)]["err"])
        for c in conv:
            var = "" if c == conv[0] else f"@{DPSGD_RUN[c]}"
            best_c = best / scale[c]  # the best lr in convention c's units
            m[f"lr_sweep.best_lr.{k}{var}"] = best_c
            m[f"lr_sweep.best_over_paper_log10.{k}{var}"] = float(np.log10(best_c / lr_paper))
            on_grid = [lr for lr in grid if np.isclose(lr, lr_paper * scale[c], rtol=1e-9)]
            if on_grid:  # the configured lr of convention c, read on the grid
                put(m, rep, f"lr_sweep.paper_el_excess.{k}{var}",
                    sw[(on_grid[0], eps, delta)]["el"] - sw[(best, eps, delta)]["el"])
    # the reading `dpsgd_tuned`: DPSGD at the grid's best lr (lowest mean final EL) of each setting, the same model in
    # either convention (sum lr = average lr / n, draw for draw); whether that lr is at an end of the grid
    for eps, delta in res["runs"]:
        if (grid[0], eps, delta) not in sw:
            continue
        k = skey(eps, delta)
        means = _finite_or_inf([np.mean(sw[(lr, eps, delta)]["el"]) for lr in grid])
        i = int(np.argmin(means))
        best = sw[(grid[i], eps, delta)]
        m[f"lr_sweep.tuned_lr.{k}"] = grid[i]
        m[f"lr_sweep.tuned_at_edge.{k}"] = bool(i in (0, len(grid) - 1))
        put(m, rep, f"el_final.dpsgd.{k}@dpsgd_tuned", best["el"])
        put(m, rep, f"el_k10.dpsgd.{k}@dpsgd_tuned", best["el_k10"])
        for key in ("err_final", "errw_final"):  # one model: its error is the global model's
            put(m, rep, f"{key}.dpsgd.{k}@dpsgd_tuned", best["err"])
        put(m, rep, f"majority_share.dpsgd.{k}@dpsgd_tuned", best["majority_share"])
        put(m, rep, f"err_minus_majority.dpsgd.{k}@dpsgd_tuned", best["err"] - res["majority_err"])
    tuned = [m.get(f"el_final.dpsgd.{skey(e, d)}@dpsgd_tuned") for e, d in res["sweeps"]["eps"]]
    if tuned and all(v is not None for v in tuned):
        m["dpsgd.el_spread_eps@dpsgd_tuned"] = max(tuned) - min(tuned)


def comparison_metrics(res: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of Figs. 3 / 6. DPSGD's other convention is a variant of the DPSGD keys
    (`dpsgd_avg` when the sum convention is the default), the error of the global model w^k the variant
    `global_model` of the error keys."""
    T = res["T"]
    k10 = min(ADMM_FAST_K, T)
    adm = res["admm"]["curves"]
    names = metric_names(res)
    m, rep = {"admm.inner_steps_mean": res["admm"]["inner_steps_mean"], "admm_fast.k": k10}, {}
    put(m, rep, "el_x0", adm["el"]["all"][:, 0])  # every method starts at w = 0: F(x0) = ln 2
    put(m, rep, "el_final.admm", adm["el"]["final"])
    put(m, rep, "err_final.admm", adm["err"]["final"])
    put(m, rep, "errw_final.admm", adm["err_global"]["final"])
    put(m, rep, "el_k10.admm", adm["el"]["all"][:, k10])
    m["admm.el_k10_rel"] = (m["el_k10.admm"] - m["el_final.admm"]) / m["el_final.admm"]
    put(m, rep, "majority.err", res["majority_err"])
    # non-private ADMM at k = t against the centralised optimum it converges to
    cen, w_admm = res["central"], res["admm"]["w"]
    put(m, rep, "central.el", cen["el"])
    put(m, rep, "central.err", cen["err"])
    put(m, rep, "central.w_norm", cen["w_norm"])
    put(m, rep, "admm.w_norm", np.linalg.norm(w_admm, axis=-1))
    put(m, rep, "admm.dist_to_opt", np.linalg.norm(w_admm - cen["w"], axis=-1))
    put(m, rep, "admm.el_gap_to_opt", adm["el"]["final"] - cen["el"])
    methods = set()
    for (eps, delta), r in res["runs"].items():
        k = skey(eps, delta)
        for run, cur in r["curves"].items():
            name, var = names[run]
            methods.add(run)
            put(m, rep, f"el_final.{name}.{k}{var}", cur["el"]["final"])
            put(m, rep, f"el_k10.{name}.{k}{var}", cur["el"]["all"][:, k10])
            put(m, rep, f"err_final.{name}.{k}{var}", cur["err"]["final"])
            put(m, rep, f"errw_final.{name}.{k}{var}", cur["err_global"]["final"])
            if not var:  # the error of the global model w^k instead of the agents' mean (docs/choices.md#huang-metrics [D-alt])
                put(m, rep, f"err_final.{name}.{k}@global_model", cur["err_global"]["final"])
                if run in r.get("el_global", {}):  # and its empirical loss (DPSGD's one model needs no variant)
                    put(m, rep, f"el_final.{name}.{k}@global_model", r["el_global"][run])
        for run in ("dpadmm", "pvp", "dvp"):  # how far the shared models still move over the last 10 iterations,
            if "pvp" in r["curves"] and run in r["curves"]:  # beside PVP's (Fig. 6: §III-A's claim about PVP)
                put(m, rep, f"iterate_change.{run}.{k}", r["curves"][run]["step"]["all"][:, -min(10, T):].mean(1))
        for run in ("pvp", "dvp"):  # "poor": above the better of DP-ADMM and the constant classifier, per repeat
            if run in r["curves"]:
                best = np.minimum(r["curves"]["dpadmm"]["err"]["final"], res["majority_err"])
                put(m, rep, f"excess_err.{run}.{k}", r["curves"][run]["err"]["final"] - best)
        for run in DPSGD_RUN.values():
            if (run, eps, delta) in res["majority_share"]:
                name, var = names[run]
                put(m, rep, f"majority_share.{name}.{k}{var}", res["majority_share"][(run, eps, delta)])
                put(m, rep, f"err_minus_majority.{name}.{k}{var}",
                    r["curves"][run]["err"]["final"] - res["majority_err"])
        for name, p in r["privacy_by"].items():
            _privacy_keys(m, name, eps, delta, p)
    for eps, dv in res.get("dvp", {}).items():
        base, tot = f"privacy.dvp.eps{eps:g}", dv["privacy"]
        m[f"{base}.paper_eps"], m[f"{base}.pld_eps"], m[f"{base}.rdp_eps"] = tot["paper_eps"], tot["pld_eps"], None
        m[f"{base}.delta"] = tot["delta"]
    # spread of the final EL over the eps-sweep (how much a method's loss moves with the privacy budget)
    for run in [*DPSGD_RUN.values(), "dpadmm"]:
        if run in methods:
            name, var = names[run]
            vals = [res["runs"][s]["curves"][run]["el"]["mean"][-1] for s in res["sweeps"]["eps"]]
            m[f"{name}.el_spread_eps{var}"] = max(vals) - min(vals)
    if "lr_sweep" in res:
        _lr_sweep_metrics(res, m, rep)
    return m, rep


def majority_markdown(m: dict, res: dict) -> str:
    """Per setting: DPSGD's final test error, the majority-class error and the share of test rows DPSGD labels as
    the majority class (every convention run): the fact behind "DP-ADMM beats DPSGD"."""
    names = metric_names(res)
    runs = [DPSGD_RUN[c] for c in res["dpsgd"]["conventions"]]
    lines = [f"Majority-class test error (constant classifier): {m['majority.err']:.4f}.", "",
             "| setting | " + " | ".join(f"{LABELS[r]} error | {LABELS[r]}: share predicted majority" for r in runs)
             + " |", "|---|" + "---|---|" * len(runs)]
    for eps, delta in res["runs"]:  # every setting of the two sweeps, once
        k = skey(eps, delta)
        cells = []
        for r in runs:
            var = names[r][1]
            e, sh = m.get(f"err_final.dpsgd.{k}{var}"), m.get(f"majority_share.dpsgd.{k}{var}")
            cells += ["-" if e is None else f"{e:.4f}", "-" if sh is None else f"{sh:.3f}"]
        lines.append(f"| eps {eps:g}, delta {delta:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def lr_sweep_markdown(m: dict, res: dict) -> str:
    """DPSGD's learning-rate sweep: final EL / test error per lr (default convention's units, with the other
    convention's equal lr) and setting, the best lr of each setting in every convention's units."""
    dp, n = res["dpsgd"], res["n"]
    conv = dp["conventions"]
    grid = sorted({lr for lr, _, _ in res["lr_sweep"]})
    eps_sweep = res["sweeps"]["eps"]
    other = [c for c in conv[1:]]
    unit = {c: (1.0 / n if c == "sum" else float(n)) for c in other}  # lr in c's units per unit of the default's
    head = (f"| lr ({conv[0]} convention)" + "".join(f" | = lr ({c})" for c in other) + " | "
            + " | ".join(f"eps {e:g}: EL / error" for e, _ in eps_sweep) + " |")
    lines = [head, "|---|" + "---|" * (len(other) + len(eps_sweep))]
    for lr in grid:
        mark = " (configured)" if np.isclose(lr, dp["lr"]) else ""
        cells = [f"{lr:g}{mark}"] + [f"{lr * unit[c]:g}" for c in other]
        cells += [f"{m[f'lr_sweep.el.lr{lr:g}.{skey(e, d)}']:.4f} / {m[f'lr_sweep.err.lr{lr:g}.{skey(e, d)}']:.4f}"
                  for e, d in eps_sweep]
        lines.append("| " + " | ".join(cells) + " |")
    best = []
    for c in conv:
        var = "" if c == conv[0] else f"@{DPSGD_RUN[c]}"
        best.append(f"{c} convention: " + ", ".join(
            f"eps {e:g}: {m[f'lr_sweep.best_lr.{skey(e, d)}{var}']:g}" for e, d in eps_sweep))
    return ("**DPSGD's learning rate** (final EL and test error at k = t, mean over runs; delta = "
            f"{eps_sweep[0][1]:g}). The {conv[0]} convention at lr equals the "
            + ", ".join(f"{c} convention at {'lr / n' if c == 'sum' else 'n lr'}" for c in other)
            + f" (n = {n}), draw for draw. Best lr (lowest EL) per setting: " + "; ".join(best) + ".\n\n"
            + "\n".join(lines))


# --------------------------------------------------------------------------------------------------- table2
def machine_info() -> dict:
    """CPU model, cores and library versions (Table II's context)."""
    from importlib.metadata import version

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:  # Linux; elsewhere platform.processor() is used
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "os": platform.system()}
    for lib in ("numpy", "scipy", "dp-accounting"):
        info[lib] = version(lib)
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = ", ".join(sorted({f"{i['internal_api']} {i.get('version', '')}" for i in threadpool_info()}))
    except Exception:  # noqa: BLE001 - informational only
        info["blas"] = "unknown"
    return info


TIMED = ("admm", "pvp", "dvp", "dpadmm")


def timing(X, y, params: dict, seed: int) -> dict:
    """Table II: wall-clock seconds of `iterations` iterations (training only, no metrics) of ADMM, PVP, DVP and
    DP-ADMM (l2, n agents, delta) at each eps, timed interleaved (``repro_dpadmm.timing``): in each of
    `timing_rounds` rounds every (method, eps) runs once on that round's data draw, in a random order, so that the
    machine's load drifts alike over all of them and every ratio gets a confidence interval from the per-round
    ratios. ADMM is non-private: one run per round serves every eps (as in the paper, whose ADMM column is
    constant)."""
    n, T, rounds = int(params["agents"]), int(params["iterations"]), int(params["timing_rounds"])
    delta = float(params["delta"])
    c = _common(params)
    tol = float(params.get("admm", {}).get("tol", 1e-8))
    gens = repeat_generators(seed, rounds, PAPER, "split")
    datas = [cs.split_star(X, y, n, [g], int(params.get("n_train", 40_000)), params.get("n_test")) for g in gens]
    inner: dict = {}  # mean exact-solve steps per iteration, one value per call

    def note(key, h):
        inner.setdefault(key, []).append(h.meta["inner_steps_mean"])

    def admm(r):
        note("admm", cs.admm(datas[r], reg="l2", T=T, repeats=1, tol=tol, record=False, **c))

    def make(meth, eps):
        def run(r):
            rng = _noise(seed, 1, "timing", meth, f"round{r}", skey(eps, delta))
            if meth == "pvp":
                note((meth, eps), cs.pvp(datas[r], T=T, rngs=rng, epsilon=eps, delta=delta, tol=tol, record=False,
                                         **c))
            elif meth == "dvp":
                note((meth, eps), cs.dvp(datas[r], T=T, rngs=rng, epsilon=eps, tol=tol, record=False, **c))
            else:
                cs.dpadmm(datas[r], reg="l2", T=T, rngs=rng, epsilon=eps, delta=delta, record=False, **c)
        return run

    funcs = {"admm": admm}
    for eps in map(float, params["epsilons"]):
        for meth in TIMED[1:]:
            funcs[f"{meth}.eps{eps:g}"] = make(meth, eps)
    order = repeat_generators(seed, 1, PAPER, "timing", "order")[0]
    times = timing_mod.interleaved(funcs, rounds, rng=order, warmup=True,
                                   each_round=lambda rs: progress(rs, "timing", name=lambda r: f"round {r + 1}"))
    level = float(params.get("timing_level", 0.95))
    rows, ratios = {}, {}
    for eps in map(float, params["epsilons"]):
        e = f"eps{eps:g}"
        t = {"admm": times["admm"], **{meth: times[f"{meth}.{e}"] for meth in TIMED[1:]}}
        rows[eps] = {meth: float(np.mean(v)) for meth, v in t.items()}
        for a, b in (("admm", "dpadmm"), ("pvp", "dpadmm"), ("dvp", "dpadmm"), ("pvp", "admm"), ("dvp", "admm"),
                     ("pvp", "dvp")):
            ratios[(a, b, eps)] = timing_mod.ratio_ci(t[a], t[b], level)
    # DP-ADMM at each eps against itself at the largest: does its time change with eps (Table II's column)?
    top = f"eps{max(map(float, params['epsilons'])):g}"
    for eps in map(float, params["epsilons"]):
        ratios[("dpadmm", f"dpadmm_{top}", eps)] = timing_mod.ratio_ci(times[f"dpadmm.eps{eps:g}"],
                                                                      times[f"dpadmm.{top}"], level)
    inner = {k: statistics.median(v) for k, v in inner.items()}
    return {"rows": rows, "ratios": ratios, "raw": times, "inner_steps": inner, "machine": machine_info(), "n": n,
            "T": T, "delta": delta, "rounds": rounds, "level": level}


def timing_metrics(res: dict) -> dict:
    """Flat metrics of Table II: mean seconds per method and eps, and each ratio (geometric mean of the per-round
    ratios) with its confidence interval (`.lo`, `.hi`) and standard error (`.se`), which the claims engine reads."""
    m = {f"machine.{k}": v for k, v in res["machine"].items()}
    for eps, row in res["rows"].items():
        e = f"eps{eps:g}"
        for meth, sec in row.items():
            m[f"time.{meth}.{e}"] = sec
        paper = PAPER_TABLE2.get(eps)
        if paper:  # the paper's ratios (its machine's), shown beside ours
            for a, b in (("admm", "dpadmm"), ("pvp", "dpadmm"), ("dvp", "dpadmm"), ("pvp", "admm"), ("dvp", "admm"),
                         ("pvp", "dvp")):
                m[f"paper_ratio.{a}_over_{b}.{e}"] = paper[a] / paper[b]
    for (a, b, eps), ci in res["ratios"].items():
        key = f"ratio.{a}_over_{b}.eps{eps:g}"
        m[key], m[f"{key}.lo"], m[f"{key}.hi"], m[f"{key}.se"] = ci["ratio"], ci["lo"], ci["hi"], ci["se"]
    for k, v in res["inner_steps"].items():  # exact-solve steps per iteration: why PVP / DVP cost what they cost
        m["inner_steps.admm" if k == "admm" else f"inner_steps.{k[0]}.eps{k[1]:g}"] = v
    m["timing_rounds"] = res["rounds"]
    m["timing_level"] = res["level"]
    return m


# --------------------------------------------------------------------------------------------------- figures
# Each item draws the paper's figure first (`<item>.png`: its panels and curves, means over runs, k = 1..t as in the
# paper's loop, linear axes) and our additions in further figures (`<item>_detail*.png`: min-max bands, k = 0, the
# trivial references, variants; `<item>_summary.png`, `<item>_lr.png`).
def _band(ax, k, s, color, label, ls="-"):
    mean = s["mean"]
    ok = np.isfinite(mean)
    ax.plot(k[ok], mean[ok], color=color, ls=ls, label=label, lw=1.4)
    ax.fill_between(k[ok], s["min"][ok], s["max"][ok], color=color, alpha=0.15, lw=0)


def _line(ax, s, color, label, ls="-", lw=1.4, start=1):
    """The mean over runs from iteration `start` on (NaN where not evaluated are skipped)."""
    mean = s["mean"]
    k = np.arange(len(mean))
    ok = np.isfinite(mean) & (k >= start)
    ax.plot(k[ok], mean[ok], color=color, ls=ls, label=label, lw=lw)


def eps_label(p: dict) -> str:
    return f"eps-bar {p['paper_eps']:.3g} (MA), {p['pld_eps']:.3g} (PLD)"


def plot_n_sweep(res: dict):
    """Figs. 1 / 4 as the paper: (a) EL and (b) test error against k = 1..t, one curve per n, the centralised
    approach as a line."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(res["runs"])))
    for (n, r), col in zip(res["runs"].items(), colors):
        for ax, key in zip(axes, ("el", "err")):
            _line(ax, r["curves"][key], col, f"n = {n}")
    for ax, key, lab in zip(axes, ("el", "err"), ("(a) empirical loss", "(b) classification error rate")):
        ax.axhline(res["central"][key].mean(), color="k", ls="--", lw=1.2, label="centralised")
        ax.set_xlabel("iteration")
        ax.set_ylabel(lab[4:])
        ax.set_title(lab, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"DP-ADMM, {res['reg']}-regularised logistic regression, eps = {res['eps']:g}, delta = "
                 f"{res['delta']:g} (mean over {len(res['central']['el'])} runs)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_n_sweep_detail(res: dict):
    """Our additions to Figs. 1 / 4: from k = 0 with min-max bands over runs, the error of the global model w^k
    (dotted), the majority-class error and the zero model's loss (the trivial references)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(res["runs"])))
    for (n, r), col in zip(res["runs"].items(), colors):
        k = np.arange(len(r["curves"]["el"]["mean"]))
        _band(axes[0], k, r["curves"]["el"], col, f"DP-ADMM n = {n} (m_i = {r['m']})")
        _band(axes[1], k, r["curves"]["err"], col, f"DP-ADMM n = {n}")
        _line(axes[1], r["curves"]["err_global"], col, None, ls=":", lw=1.0, start=0)
    for ax, key in zip(axes, ("el", "err")):
        ax.axhline(res["central"][key].mean(), color="k", ls="--", lw=1.2, label=LABELS["central"])
        ax.set_xlabel("iteration k")
    axes[0].axhline(np.log(2.0), color="0.4", ls="-.", lw=1.0, label="zero model (ln 2)")
    axes[1].axhline(res["majority_err"].mean(), color="0.4", ls="-.", lw=1.0, label="majority class")
    axes[0].set_ylabel("empirical loss (training)")
    axes[1].set_ylabel("test error rate (mean over agents; dotted: global w^k)")
    fig.suptitle(f"{res['reg']}: eps = {res['eps']:g}, delta = {res['delta']:g} per iteration "
                 f"({eps_label(res['privacy'])}); mean and min-max over runs", fontsize=10)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_privacy_sweep(res: dict, detail: bool = False):
    """Figs. 2 / 5: the augmented objective value against the iteration, (a) the eps-sweep and (b) the delta-sweep.
    The paper's form (`detail` False): means, k = 1..t. Our detail: from k = 0 (the zero model, every curve's
    start), min-max bands, the eps-bar of each setting."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, (name, sweep) in zip(axes, res["sweeps"].items()):
        colors = plt.cm.plasma(np.linspace(0, 0.85, len(sweep)))
        for (eps, delta), col in zip(sweep, colors):
            r = res["runs"][(eps, delta)]
            cur = r["curves"]["aov"]
            if detail:
                _band(ax, np.arange(len(cur["mean"])), cur, col,
                      f"eps {eps:g}, delta {delta:g}: {eps_label(r['privacy'])}")
            else:
                _line(ax, cur, col, f"eps = {eps:g}" if name == "eps" else f"delta = {delta:g}")
        if detail:
            ax.axhline(res["n"] * np.log(2.0), color="0.4", ls="-.", lw=1.0, label="zero model (k = 0): n ln 2")
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        ax.set_title("(a) eps-sweep" if name == "eps" else "(b) delta-sweep", fontsize=10)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("augmented objective value")
    fig.suptitle(f"DP-ADMM ({res['reg']}), n = {res['n']}; " + ("mean and min-max over runs, from k = 0" if detail
                 else f"mean over runs, iterations 1..{res['T']}"), fontsize=10)
    fig.tight_layout()
    return fig


METHOD_STYLE = {"dpadmm": ("tab:red", "-"), "admm": ("black", "-"), "pvp": ("tab:green", "-."),
                "dvp": ("tab:purple", ":"), "dpsgd_sum": ("tab:blue", "--"), "dpsgd_avg": ("tab:cyan", "--"),
                "dpadmm_const": ("tab:orange", ":"), "dpadmm_const_last": ("tab:brown", ":")}


def plot_comparison_paper(res: dict):
    """Figs. 3 / 6 as the paper: empirical loss and error rate against the iteration (k = 1..t), (a)-(b) the
    eps-sweep, (c)-(d) the delta-sweep; DP-ADMM and each private baseline at every setting (colour: the setting,
    line style: the method; DPSGD in its default convention), non-private ADMM; linear axes, means over runs. The
    loss axis spans DP-ADMM, DPSGD and ADMM: PVP's and DVP's losses run above it (their values: the detail figures)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    default = DPSGD_RUN[res["dpsgd"]["conventions"][0]]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4))
    methods = ["dpadmm", default] + [x for x in ("pvp", "dvp") if x in next(iter(res["runs"].values()))["curves"]]
    style = {"dpadmm": "-", default: "--", "pvp": "-.", "dvp": ":"}
    for j, name in enumerate(("eps", "delta")):
        sw = res["sweeps"][name]
        colors = plt.cm.plasma(np.linspace(0, 0.8, len(sw)))
        for i, key in enumerate(("el", "err")):
            ax = axes[j, i]
            top = []
            for (eps, delta), col in zip(sw, colors):
                cur = res["runs"][(eps, delta)]["curves"]
                for meth in methods:
                    _line(ax, cur[meth][key], col, None, ls=style[meth])
                    if meth in ("dpadmm", default):
                        top.append(np.nanmax(cur[meth][key]["mean"][1:]))
            _line(ax, res["admm"]["curves"][key], "k", None, lw=1.6)
            top.append(np.nanmax(res["admm"]["curves"][key]["mean"][1:]))
            ax.set_ylim(0, 1.08 * max(top))
            ax.set_xlabel("iteration")
            ax.set_ylabel("empirical loss" if key == "el" else "classification error rate")
            tag = "abcd"[2 * j + i]
            ax.set_title(f"({tag}) {'eps' if name == 'eps' else 'delta'}-sweep "
                         f"({'delta' if name == 'eps' else 'eps'} = {sw[0][1] if name == 'eps' else sw[0][0]:g})",
                         fontsize=10)
            handles = [Line2D([], [], color="k", lw=1.6, label=LABELS["admm"])]
            handles += [Line2D([], [], color="0.3", ls=style[x], label=LABELS[x]) for x in methods]
            handles += [Line2D([], [], color=c, label=(f"eps = {e:g}" if name == "eps" else f"delta = {d:g}"))
                        for (e, d), c in zip(sw, colors)]
            ax.legend(handles=handles, fontsize=7, ncol=2)
    fig.suptitle(f"{res['reg']}-regularised logistic regression, n = {res['n']} (mean over runs)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_comparison(res: dict, sweep: str):
    """Our detail of Figs. 3 / 6: 2 x len(sweep) panels, rows EL (log scale: PVP / DVP run orders of magnitude
    above) and test error, one column per setting, every method and DPSGD convention, min-max bands, from k = 0."""
    import matplotlib.pyplot as plt

    sw = res["sweeps"][sweep]
    fig, axes = plt.subplots(2, len(sw), figsize=(3.6 * len(sw), 6.4), sharey="row", squeeze=False)
    for j, (eps, delta) in enumerate(sw):
        r = res["runs"][(eps, delta)]
        for i, key in enumerate(("el", "err")):
            ax = axes[i, j]
            k = np.arange(len(res["admm"]["curves"][key]["mean"]))
            _band(ax, k, res["admm"]["curves"][key], METHOD_STYLE["admm"][0], LABELS["admm"])
            for name, cur in r["curves"].items():
                col, ls = METHOD_STYLE[name]
                _band(ax, k, cur[key], col, LABELS[name], ls=ls)
            if i == 0:
                ax.set_title(f"eps {eps:g}, delta {delta:g}\n{eps_label(r['privacy'])}", fontsize=8)
            ax.set_xlabel("iteration k")
        axes[0, j].set_yscale("log")
        axes[0, j].axhline(np.log(2.0), color="0.4", ls="-.", lw=1.0, label="zero model (ln 2)")
        axes[1, j].axhline(res["majority_err"].mean(), color="0.4", ls="-.", lw=1.0, label="majority class")
    axes[0, 0].set_ylabel("empirical loss (training, log scale)")
    axes[1, 0].set_ylabel("test error rate")
    axes[0, -1].legend(fontsize=7)
    axes[1, -1].legend(fontsize=7)
    fig.suptitle(f"{res['reg']}-regularised logistic regression, n = {res['n']}, "
                 f"{'eps-sweep' if sweep == 'eps' else 'delta-sweep'}; mean and min-max over runs", fontsize=10)
    fig.tight_layout()
    return fig


def plot_final_summary(res: dict):
    """Final EL and test error against eps (delta fixed) and delta (eps fixed), one line per method."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for j, (name, sweep) in enumerate(res["sweeps"].items()):
        x = [e if name == "eps" else d for e, d in sweep]
        for i, key in enumerate(("el", "err")):
            ax = axes[i, j]
            methods = list(res["runs"][sweep[0]]["curves"])
            for meth in methods:
                col, ls = METHOD_STYLE[meth]
                ax.plot(x, [res["runs"][s]["curves"][meth][key]["mean"][-1] for s in sweep], color=col, ls=ls,
                        marker="o", label=LABELS[meth])
            ax.axhline(res["admm"]["curves"][key]["mean"][-1], color="k", lw=1, label=LABELS["admm"])
            ref = np.log(2.0) if key == "el" else res["majority_err"].mean()
            ax.axhline(ref, color="0.4", ls="-.", lw=1.0, label="zero model / majority class")
            ax.set_xscale("log")
            if key == "el":
                ax.set_yscale("log")
            ax.set_xlabel("per-iteration epsilon" if name == "eps" else "per-iteration delta")
            ax.set_ylabel(("empirical loss" if key == "el" else "test error") + f" at k = {res['T']}")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.suptitle(f"{res['reg']}: final values against the privacy budget (mean over runs)", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def plot_lr_sweep(res: dict):
    """DPSGD's final EL and test error against its learning rate, one line per eps of the eps-sweep; the lower axis
    in the default convention's units, the upper one in the other convention's (the same runs); the configured lr
    marked."""
    import matplotlib.pyplot as plt

    sw, dp, n = res["lr_sweep"], res["dpsgd"], res["n"]
    conv = dp["conventions"]
    grid = np.array(sorted({lr for lr, _, _ in sw}))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    colors = plt.cm.plasma(np.linspace(0, 0.8, len(res["sweeps"]["eps"])))
    for ax, key in zip(axes, ("el", "err")):
        for (eps, delta), col in zip(res["sweeps"]["eps"], colors):
            ax.plot(grid, [np.mean(sw[(lr, eps, delta)][key]) for lr in grid], color=col, marker="o",
                    label=f"eps = {eps:g}")
        ref = np.log(2.0) if key == "el" else res["majority_err"].mean()
        ax.axhline(ref, color="0.4", ls="-.", lw=1.0, label="zero model (ln 2)" if key == "el" else "majority class")
        ax.axvline(dp["lr"], color="k", ls=":", lw=1.0, label=f"lr {dp['lr']:g} ({conv[0]})")
        ax.set_xscale("log")
        if key == "el":
            ax.set_yscale("log")
        ax.set_xlabel(f"learning rate, {conv[0]} convention")
        ax.set_ylabel(f"{'empirical loss' if key == 'el' else 'test error'} at k = {res['T']}")
        for c in conv[1:]:
            f = (1.0 / n) if c == "sum" else float(n)
            top = ax.secondary_xaxis("top", functions=(lambda x, f=f: x * f, lambda x, f=f: x / f))
            top.set_xlabel(f"the same, {c} convention")
            if dp["lr"] / f >= grid.min() * 0.99:
                ax.axvline(dp["lr"] / f, color="0.5", ls=":", lw=1.0, label=f"lr {dp['lr']:g} ({c})")
        ax.legend(fontsize=7)
    fig.suptitle(f"DPSGD ({res['reg']}, n = {n}): learning rate against final loss and error, delta = "
                 f"{res['sweeps']['eps'][0][1]:g} (mean over runs)", fontsize=10)
    fig.tight_layout()
    return fig


def table2_markdown(res: dict) -> str:
    lines = ["| eps | ADMM | PVP | DVP | DP-ADMM | ADMM / DP-ADMM (CI) | PVP / ADMM (CI) | DVP / ADMM (CI) | "
             "paper ADMM / DP-ADMM |", "|---|---|---|---|---|---|---|---|---|"]
    lvl = f"{100 * res['level']:g}%"
    for eps, row in res["rows"].items():
        p = PAPER_TABLE2.get(eps, {})
        ours = " | ".join(f"{row[k]:.3f} s" + (f" (paper {p[k]:.3f} s)" if k in p else "") for k in TIMED)

        def ci(a, b):
            c = res["ratios"][(a, b, eps)]
            return f"{c['ratio']:.2f} ({c['lo']:.2f}-{c['hi']:.2f})"
        pr = f"{p['admm'] / p['dpadmm']:.1f}x" if p else "-"
        lines.append(f"| {eps:g} | {ours} | {ci('admm', 'dpadmm')} | {ci('pvp', 'admm')} | {ci('dvp', 'admm')} | "
                     f"{pr} |")
    return "\n".join(lines) + f"\n\nMeans over {res['rounds']} interleaved rounds; ratios: geometric means with {lvl} " \
        "confidence intervals (paired by round)."


def plot_timing(res: dict):
    """Table II as bars: this reproduction's mean seconds (log scale) beside the paper's MATLAB seconds."""
    import matplotlib.pyplot as plt

    eps = list(res["rows"])
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    w = 0.2
    for j, meth in enumerate(TIMED):
        x = np.arange(len(eps)) + (j - 1.5) * w
        ax[0].bar(x, [res["rows"][e][meth] for e in eps], w, label=LABELS[meth])
        ax[1].bar(x, [PAPER_TABLE2[e][meth] if e in PAPER_TABLE2 else np.nan for e in eps], w, label=LABELS[meth])
    for a, t in zip(ax, ("this reproduction (s, mean over rounds)", "paper, MATLAB (s)")):
        a.set_xticks(np.arange(len(eps)), [f"eps = {e:g}" for e in eps])
        a.set_yscale("log")
        a.set_title(t)
    fig.legend(*ax[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# --------------------------------------------------------------------------------------------------- tables
def dataset_line(info: dict) -> str:
    return (f"Adult (HUANG preprocessing): {info['rows']} rows x {info['features']} features; largest row norm "
            f"{info['max_row_norm']:.6f} (so c_1 = 1 bounds ||l'||).")


def privacy_line(eps: float, delta: float, T: int, p: dict) -> str:
    return (f"Per-iteration eps = {eps:g}, delta = {delta:g}: z = {p['noise_multiplier']:.2f}; total over t = {T} "
            f"(from the runs' records): eps-bar = {p['paper_eps']:.4f} (moments accountant, the paper's method), "
            f"{p['paper_eps_int32']:.4f} (integer orders <= 32), {p['rdp_eps']:.4f} (dp-accounting RDP), "
            f"{p['pld_eps']:.4f} (PLD).")


def n_sweep_table(res: dict, m: dict) -> str:
    """Figs. 1 / 4: the data, the privacy totals and the final values per n (mean +- sd over runs)."""
    rows = ["| n | m_i | EL at k = t | test error at k = t | sigma_{i,1} | sigma_{i,t} | eta_i^1 | DP-ADMM time |",
            "|---|---|---|---|---|---|---|---|"]
    for n, r in res["runs"].items():
        rows.append(f"| {n} | {r['m']} | {m[f'el_final.n{n}']:.4f} ± {m[f'el_final_sd.n{n}']:.4f} | "
                    f"{m[f'err_final.n{n}']:.4f} ± {m[f'err_final_sd.n{n}']:.4f} | {m[f'sigma_k1.n{n}']:.4f} | "
                    f"{m[f'sigma_kT.n{n}']:.4f} | {np.ravel(r['eta'])[0]:.4f} | {r['time_s']:.1f} s |")
    rows.append(f"| centralised | all | {m['central.el']:.4f} | {m['central.err']:.4f} | - | - | - | - |")
    c = res["central"]
    c_w = hb.CW_L1 if res["reg"] == "l1" else hb.CW_L2
    return "\n\n".join([dataset_line(res["dataset"]), privacy_line(res["eps"], res["delta"], res["T"], res["privacy"]),
                        f"Centralised optimum: {c['time_s']:.1f} s for {len(c['el'])} runs; ||w*|| = "
                        f"{m['central.w_norm']:.1f} (runs {m['central.w_norm_min']:.1f} to "
                        f"{m['central.w_norm_max']:.1f}) against the paper's c_w = {c_w:g}.",
                        "Final values (mean ± sd over runs):\n\n" + "\n".join(rows)])


def privacy_sweep_table(res: dict, m: dict) -> str:
    """Figs. 2 / 5: final AOV, EL and error per setting beside the privacy totals of the runs' records."""
    rows = ["| eps | delta | AOV at k = t | EL | test error | eps-bar (MA) | MA, integer orders <= 32 | RDP | PLD |",
            "|---|---|---|---|---|---|---|---|---|"]
    for (eps, delta), r in res["runs"].items():
        k, p = skey(eps, delta), r["privacy"]
        rows.append(f"| {eps:g} | {delta:g} | {m['aov_final.' + k]:.2f} | {m['el_final.' + k]:.4f} | "
                    f"{m['err_final.' + k]:.4f} | {p['paper_eps']:.4f} | {p['paper_eps_int32']:.4f} | "
                    f"{p['rdp_eps']:.4f} | {p['pld_eps']:.4f} |")
    return dataset_line(res["dataset"]) + "\n\n" + "\n".join(rows)


def comparison_table(res: dict, m: dict) -> str:
    """Figs. 3 / 6: compute times, EL / test error at k = t of every method and setting, non-private ADMM against the
    centralised optimum, DPSGD against the constant classifier and its learning-rate sweep, and (l2) DVP's
    calibration and totals."""
    times = ", ".join(f"{LABELS.get(k, k)} {v:.1f} s" for k, v in res["times"].items())
    adm = res["admm"]
    parts = [dataset_line(res["dataset"]), f"Compute time per method (all settings): {times}.",
             f"ADMM: mean Newton / proximal steps per local solve {adm['inner_steps_mean']:.1f}, largest final "
             f"residual {adm['inner_residual_max']:.2g}. At k = {res['T']} its EL is {m['el_final.admm']:.4f} against "
             f"the centralised optimum's {m['central.el']:.4f} (gap {m['admm.el_gap_to_opt']:.4f}); ||w^t|| = "
             f"{m['admm.w_norm']:.1f} against ||w*|| = {m['central.w_norm']:.1f} (distance {m['admm.dist_to_opt']:.1f}). "
             f"Zero model (k = 0): EL {m['el_x0']:.4f}; majority class: test error {m['majority.err']:.4f}."]
    names = metric_names(res)
    meths = list(next(iter(res["runs"].values()))["curves"])
    rows = ["| setting | " + " | ".join(LABELS[x] for x in meths) + " | eps-bar (MA / PLD) |",
            "|" + "---|" * (len(meths) + 2)]
    for (eps, delta), r in res["runs"].items():
        k = skey(eps, delta)
        key = {x: f"{names[x][0]}.{k}{names[x][1]}" for x in meths}
        cells = " | ".join(f"{m[f'el_final.{key[x]}']:.4f} / {m[f'err_final.{key[x]}']:.4f}" for x in meths)
        rows.append(f"| eps {eps:g}, delta {delta:g} | {cells} | {r['privacy']['paper_eps']:.3f} / "
                    f"{r['privacy']['pld_eps']:.3f} |")
    parts.append("EL / test error at k = t (mean over runs):\n\n" + "\n".join(rows))
    parts.append(f"Non-private ADMM at k = t: EL {m['el_final.admm']:.4f} / error {m['err_final.admm']:.4f}.")
    parts.append("**DPSGD against the constant (majority-class) classifier** at k = t:\n\n" + majority_markdown(m, res))
    if "lr_sweep" in res:
        parts.append(lr_sweep_markdown(m, res))
    for eps, dv in res.get("dvp", {}).items():
        b = f"privacy.dvp.eps{eps:g}"
        parts.append(f"DVP eps = {eps:g}: eps' = {dv['eps_prime']:.4g}, extra regulariser Delta = {dv['Delta']:.4g}; "
                     f"total over t: {m[f'{b}.paper_eps']:.3g} (basic composition, pure DP), {m[f'{b}.pld_eps']:.3g} "
                     f"(PLD at delta {m[f'{b}.delta']:g}).")
    return "\n\n".join(parts)


def timing_table(res: dict, m: dict) -> str:
    """Table II: the machine, the timing table with the ratios' intervals, seconds per round and exact-solve steps."""
    raw = "; ".join(f"{k}: " + ", ".join(f"{t:.3f}" for t in v) for k, v in res["raw"].items())
    inner = "; ".join(f"{k if isinstance(k, str) else f'{k[0]} eps {k[1]:g}'}: {v:.2f}"
                      for k, v in res["inner_steps"].items())
    return "\n\n".join([dataset_line(res["dataset"]),
                        "Machine: " + ", ".join(f"{k} {v}" for k, v in res["machine"].items()), table2_markdown(res),
                        f"Seconds per round: {raw}.", f"Mean exact-solve steps per iteration: {inner}."])


# --------------------------------------------------------------------------------------------------- items
DATASET = "adult_huang2019"


def adult(root=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Adult with HUANG's preprocessing (docs/choices.md#adult-preprocessing): X, y and what the tables say about them."""
    d = load(DATASET, root)
    X, y = d["X"], d["y"]
    return X, y, {"rows": X.shape[0], "features": X.shape[1], "max_row_norm": float(np.linalg.norm(X, axis=1).max())}


def _run(item: str, fn, params: dict, root=None) -> dict:
    X, y, info = adult(root)
    return {**fn(X, y, params, int(params.get("seed", 0))), "item": item, "dataset": info}


def _kwargs(metrics_and_repeats: tuple[dict, dict]) -> dict:
    m, rep = metrics_and_repeats
    return {"metrics": m, "repeats": rep}


def run_fig1(params: dict, root=None) -> dict:
    """Fig. 1 (l1): DP-ADMM for several numbers of agents beside the centralised optimum (``n_sweep``)."""
    return _run("fig1", n_sweep, params, root)


def run_fig4(params: dict, root=None) -> dict:
    """Fig. 4 (l2): as Fig. 1 (``n_sweep``)."""
    return _run("fig4", n_sweep, params, root)


def plot_fig1(res: dict) -> dict:
    """Figs. 1 / 4: the paper's EL and test error against k, one curve per n (`<item>`), and our detail
    (`<item>_detail`)."""
    return {res["item"]: plot_n_sweep(res), f"{res['item']}_detail": plot_n_sweep_detail(res)}


def metrics_fig1(res: dict) -> dict:
    return _kwargs(n_sweep_metrics(res))


def run_fig2(params: dict, root=None) -> dict:
    """Fig. 2 (l1): DP-ADMM's augmented objective value over the eps- and delta-sweeps (``privacy_sweep``)."""
    return _run("fig2", privacy_sweep, params, root)


def run_fig5(params: dict, root=None) -> dict:
    """Fig. 5 (l2): as Fig. 2 (``privacy_sweep``)."""
    return _run("fig5", privacy_sweep, params, root)


def plot_fig2(res: dict) -> dict:
    """Figs. 2 / 5: AOV against k, panel (a) the eps-sweep, (b) the delta-sweep: the paper's form (`<item>`) and
    our detail (`<item>_detail`)."""
    return {res["item"]: plot_privacy_sweep(res), f"{res['item']}_detail": plot_privacy_sweep(res, detail=True)}


def metrics_fig2(res: dict) -> dict:
    return _kwargs(privacy_sweep_metrics(res))


def _run_comparison(item: str, params: dict, root=None) -> dict:
    """Figs. 3 / 6 from their parts (experiments.parts): Fig. 6 (l2, with PVP and DVP: the heaviest item) from the
    part files of rule item_part, or computed here; Fig. 3 (l1, about a minute) is not split."""
    X, y, info = adult(root)
    seed = int(params.get("seed", 0))
    split = cache(lambda: _data(X, y, params, seed, int(params["agents"])))  # made once, shared by the parts here
    parts = gather(PAPER, item, params, lambda key: comparison_part(X, y, params, seed, key, split()),
                   keys=_comparison_parts(params))
    return {**combine_comparison(params, parts), "item": item, "dataset": info}


def run_fig3(params: dict, root=None) -> dict:
    """Fig. 3 (l1): DP-ADMM against ADMM and DPSGD at every setting of both sweeps (``comparison``)."""
    return _run_comparison("fig3", params, root)


def run_fig6(params: dict, root=None) -> dict:
    """Fig. 6 (l2): as Fig. 3, with PVP and DVP (``comparison``)."""
    return _run_comparison("fig6", params, root)


def parts_fig6(params: dict) -> list[str]:
    """Figs. 3 and 6 run as one part per method and setting (`_comparison_parts`)."""
    return list(_comparison_parts(params))


def part_fig6(params: dict, key: str) -> dict:
    X, y, _ = adult(None)
    return comparison_part(X, y, params, int(params.get("seed", 0)), key)


parts_fig3, part_fig3 = parts_fig6, part_fig6   # Fig. 3 (l1) is split the same way (one job was 114 s)


def plot_fig3(res: dict) -> dict:
    """Figs. 3 / 6: the paper's figure (`<item>`); our detail of the eps-sweep (`<item>_detail`) and of the
    delta-sweep (`<item>_detail_delta`), the final values against the budget (`<item>_summary`) and DPSGD's
    learning-rate sweep (`<item>_lr`)."""
    item = res["item"]
    out = {item: plot_comparison_paper(res), f"{item}_detail": plot_comparison(res, "eps"),
           f"{item}_detail_delta": plot_comparison(res, "delta"), f"{item}_summary": plot_final_summary(res)}
    if "lr_sweep" in res:
        out[f"{item}_lr"] = plot_lr_sweep(res)
    return out


def metrics_fig3(res: dict) -> dict:
    return _kwargs(comparison_metrics(res))


def run_table2(params: dict, root=None) -> dict:
    """Table II: interleaved timing of ADMM, PVP, DVP and DP-ADMM (l2) (``timing``)."""
    return _run("table2", timing, params, root)


def plot_table2(res: dict) -> dict:
    return {"table2": plot_timing(res)}


def metrics_table2(res: dict) -> dict:
    return {"metrics": timing_metrics(res)}


# items of one shape share their plot, metrics and table functions
plot_fig4, plot_fig5, plot_fig6 = plot_fig1, plot_fig2, plot_fig3
metrics_fig4, metrics_fig5, metrics_fig6 = metrics_fig1, metrics_fig2, metrics_fig3
table_fig1 = table_fig4 = n_sweep_table
table_fig2 = table_fig5 = privacy_sweep_table
table_fig3 = table_fig6 = comparison_table
table_table2 = timing_table
