"""ZKL-RADMM items (SPEC §5.5): pure functions, arrays and parameters in, tidy results out."""

from __future__ import annotations

import numpy as np

from ..algorithms import decentralized as dz
from ..privacy.bounds import zhang2018 as bounds
from ._zhang2018 import initial_points, network, noise_generators, summary

PAPER = "zhang2018_radmm"


def _solver(params):
    return {"tol": float(params.get("newton_tol", 1e-9)), "max_steps": int(params.get("newton_max_steps", 50))}


def fig1(X, y, params: dict, seed: int) -> dict:
    """Fig. 1: non-private R-ADMM for several gamma vs conventional ADMM (8)-(9), eta fixed, per network."""
    T = int(params["iterations"])
    K = T // 2
    out = {}
    for net_name, net in params["networks"].items():
        p = {**params, "graph": net}
        data, A = network(X, y, p, seed, PAPER, "fig1", net_name)
        N, d = data.n_nodes, data.dim
        C, rho, eta = float(params["C"]), float(params["rho"]), float(params["eta"])
        fc = dz.centralized_optimum(data, C, rho)
        f0 = initial_points(seed, 1, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig1", net_name)
        res = {"L_star": float(dz.average_loss(data, np.broadcast_to(fc, (1, N, d)))[0]), "N": N, "radmm": {}}
        h = dz.conventional_admm(data, A, C=C, rho=rho, eta=eta, T=2 * K, f0=f0, fc=fc, **_solver(params))
        res["admm"] = {"L": h.traces["L"][0], "dist": h.traces["dist"][0]}
        for gamma in params["gammas"]:
            h = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=float(gamma), K=K, f0=f0, fc=fc, **_solver(params))
            res["radmm"][float(gamma)] = {"L": h.traces["L"][0], "dist": h.traces["dist"][0]}
        out[net_name] = res
    return out


def oscillation(L: np.ndarray) -> float:
    """Mean |L(2k) - L(2k-1)| over the pairs k: the even/odd oscillation of an R-ADMM trace L(0..2K)."""
    return float(np.abs(L[2::2] - L[1::2]).mean())


def fig2(X, y, params: dict, seed: int, alpha: float) -> dict:
    """Fig. 2 for one noise level: private R-ADMM (gamma, eta, alpha_i(k) = alpha) vs DVP (conventional ADMM, eta = theta
    = eta_dvp, constant alpha) and PP (theta, eta(t) = theta q1^{t-1}, alpha(t) = alpha_pp q2^{t-1}); the DVP and PP
    alphas are matched by bisection so that their P(T) equals R-ADMM's (SPEC §5.4)."""
    data, A = network(X, y, params, seed, PAPER, "fig2")
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    K = T // 2
    C, rho, eta, gamma = float(params["C"]), float(params["rho"]), float(params["eta"]), float(params["gamma"])
    V = A.sum(1)
    P_r = bounds.allerton_P(C, data.B, V, rho, eta, alpha, T)
    target = float(P_r[-1])
    eta_dvp = float(params["dvp"]["eta"])
    pp = params["pp"]
    eta_pp = dz.geometric(float(pp["theta"]), float(pp["q1"]), T)
    q2 = dz.geometric(1.0, float(pp["q2"]), T)

    def P_dvp(a):
        return bounds.icml_P(C, data.B, V, np.full(T, eta_dvp), np.full(T, a))

    def P_pp(a):
        return bounds.icml_P(C, data.B, V, eta_pp, a * q2)

    m_dvp = bounds.match_alpha(lambda a: P_dvp(a)[-1], target)
    m_pp = bounds.match_alpha(lambda a: P_pp(a)[-1], target)
    for name, m in (("DVP", m_dvp), ("PP", m_pp)):
        if not m["reached"]:
            raise ValueError(f"cannot match {name}'s privacy bound to R-ADMM's P(T) = {target:.4g}: {m['reason']}")
    f0 = initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig2")
    lab = (PAPER, "fig2", f"alpha={alpha}")
    h_r = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=gamma, K=K, f0=f0, alpha=alpha,
                    rngs=noise_generators(seed, R, *lab, "radmm"), **_solver(params))
    h_d = dz.m_admm(data, A, C=C, rho=rho, eta=np.full(T, eta_dvp), theta=np.full(T, eta_dvp), f0=f0,
                    alpha=np.full(T, m_dvp["alpha"]), rngs=noise_generators(seed, R, *lab, "dvp"), **_solver(params))
    h_p = dz.m_admm(data, A, C=C, rho=rho, eta=eta_pp, theta=np.full(T, float(pp["theta"])), f0=f0,
                    alpha=m_pp["alpha"] * q2, rngs=noise_generators(seed, R, *lab, "pp"), **_solver(params))
    return {
        "target": target, "alpha_dvp": m_dvp["alpha"], "alpha_pp": m_pp["alpha"],
        "floor_dvp": m_dvp["floor"], "floor_pp": m_pp["floor"],
        "curves": {
            "radmm": {**summary(h_r.traces["L"]), "L": h_r.traces["L"], "P": P_r},
            "dvp": {**summary(h_d.traces["L"]), "L": h_d.traces["L"], "P": P_dvp(m_dvp["alpha"])},
            "pp": {**summary(h_p.traces["L"]), "L": h_p.traces["L"], "P": P_pp(m_pp["alpha"])},
        },
    }


def fig3(X, y, params: dict, seed: int) -> dict:
    """Fig. 3: private R-ADMM (eta, gamma fixed) vs R-ADMM + M-ADMM with eta(t) = q^t, gamma(t) = gamma q^t and dual
    step theta, where alpha_i(k) is adjusted so that P(t) is identical at every t (SPEC §5.5 [D])."""
    data, A = network(X, y, params, seed, PAPER, "fig3")
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
    P_fixed = bounds.allerton_P(C, data.B, V, rho, eta, alpha, T)
    P_var = bounds.allerton_P(C, data.B, V, rho, eta_odd, alpha_var, T)
    f0 = initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig3")
    h_f = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=gamma, K=K, f0=f0, alpha=alpha,
                    rngs=noise_generators(seed, R, PAPER, "fig3", "fixed"), **_solver(params))
    h_v = dz.r_admm(data, A, C=C, rho=rho, eta=eta_t, gamma=gamma_t, theta=theta, K=K, f0=f0, alpha=alpha_var,
                    rngs=noise_generators(seed, R, PAPER, "fig3", "varying"), **_solver(params))
    return {"alpha_var_min": float(alpha_var.min()), "alpha_var_max": float(alpha_var.max()),
            "curves": {"radmm": {**summary(h_f.traces["L"]), "L": h_f.traces["L"], "P": P_fixed},
                       "radmm_madmm": {**summary(h_v.traces["L"]), "L": h_v.traces["L"], "P": P_var}}}
