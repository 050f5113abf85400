"""ZKL-ICML items (SPEC §4.7): pure functions, arrays and parameters in, tidy results out.

Every result is a dict of numpy arrays (traces over t = 0..T) and scalars; the notebooks plot them and write metrics.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import decentralized as dz
from ..privacy.bounds import zhang2018 as bounds
from ..rng import seed_sequence
from ._zhang2018 import initial_points, network, noise_generators, summary

PAPER = "zhang2018_madmm"


def _solver(params):
    return {"tol": float(params.get("newton_tol", 1e-9)), "max_steps": int(params.get("newton_max_steps", 50))}


def fig1(X, y, params: dict, seed: int) -> dict:
    """Fig. 1: non-private M-ADMM convergence. (a) private penalties eta_i(1) q_i^{t-1} with a fixed, time-varying or
    per-node dual step theta; (b) a common eta(t) = eta(1) q1^{t-1} for increasing q1. Traces L(t) and the distance
    ||f-hat(t) - 1 f_c*^T||_F to the centralised optimum of (1)."""
    data, A = network(X, y, params, seed, PAPER, "fig1")
    N, d, T = data.n_nodes, data.dim, int(params["iterations"])
    C, rho = float(params["C"]), float(params["rho"])
    fc = dz.centralized_optimum(data, C, rho)
    L_star = float(dz.average_loss(data, np.broadcast_to(fc, (1, N, d)))[0])
    f0 = initial_points(seed, 1, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig1")
    eta_a = dz.geometric(np.asarray(params["eta1"], float), np.asarray(params["q"], float), T)  # (T, N)
    lo, hi = params["theta_random"]
    u = np.random.default_rng(seed_sequence(seed, PAPER, "fig1", "theta")).random(T)
    thetas = {
        "fixed": np.full(T, float(params["theta_fixed"])),
        "time_varying": lo + (hi - lo) * u,
        "per_node": np.broadcast_to(np.asarray(params["eta1"], float) - float(params["theta_node_offset"]), (T, N)),
    }
    out = {"L_star": L_star, "a": {}, "b": {}, "theta_time_varying": thetas["time_varying"],
           "theta_per_node": thetas["per_node"][0]}
    for name, th in thetas.items():
        h = dz.m_admm(data, A, C=C, rho=rho, eta=eta_a, theta=th, f0=f0, fc=fc, **_solver(params))
        out["a"][name] = {"L": h.traces["L"][0], "dist": h.traces["dist"][0]}
    for q1 in params["q1_list"]:
        eta = dz.geometric(float(params["eta_b"]), float(q1), T)
        h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=np.full(T, float(params["theta_b"])), f0=f0, fc=fc,
                      **_solver(params))
        out["b"][float(q1)] = {"L": h.traces["L"][0], "dist": h.traces["dist"][0]}
    return out


def private_comparison(X, y, params: dict, seed: int, alpha1: float, item: str) -> dict:
    """PP vs DVP (Figs. 2-4): eta(t) = theta q1^{t-1}, alpha(t) = alpha1 q2^{t-1} for every node, per curve of
    params['curves'] ({name: {q1, q2}}; q1 = 1 is DVP). Returns per curve L_mean, L_range, P(t), plus graph facts."""
    data, A = network(X, y, params, seed, PAPER, item)
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    C, rho, theta = float(params["C"]), float(params["rho"]), float(params["theta"])
    if 2 * bounds.C1 >= np.min(data.B / C * (rho / N + 2 * theta * A.sum(1))):
        raise ValueError("Algorithm 1 needs 2 c_1 < (B_i / C)(rho/N + 2 theta V_i) for every node; raise theta")
    f0 = initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, item)
    V = A.sum(1)
    curves = {}
    for name, qs in params["curves"].items():
        eta = dz.geometric(theta, float(qs["q1"]), T)
        alpha = dz.geometric(float(alpha1), float(qs["q2"]), T)
        rngs = noise_generators(seed, R, PAPER, item, f"alpha={alpha1}", name)
        h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=np.full(T, theta), f0=f0, alpha=alpha, rngs=rngs,
                      **_solver(params))
        curves[name] = {**summary(h.traces["L"]), "L": h.traces["L"],
                        "P": bounds.icml_P(C, data.B, V, eta, alpha), "q1": float(qs["q1"]), "q2": float(qs["q2"]),
                        "newton_steps_max": h.meta["newton_steps_max"]}
    return {"curves": curves, "B": data.B, "V": V, "N": N}


def P_final_for_split(X, y, params: dict, seed: int, item: str, split: str, alpha1: float) -> dict:
    """P(T) per curve on the same graph with another split ('even' / 'uneven'): bounds only, no runs."""
    data, A = network(X, y, {**params, "split": split}, seed, PAPER, item if split == params["split"] else
                      f"{item}:{split}")
    T, theta = int(params["iterations"]), float(params["theta"])
    return {name: float(bounds.icml_P(float(params["C"]), data.B, A.sum(1), dz.geometric(theta, qs["q1"], T),
                                      dz.geometric(alpha1, qs["q2"], T))[-1])
            for name, qs in params["curves"].items()}
