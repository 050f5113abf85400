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
        res["admm"] = _trace(h)
        for gamma in params["gammas"]:
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
    data, A = network(X, y, params, seed, PAPER, "fig2")
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    K = T // 2
    C, rho, eta, gamma = float(params["C"]), float(params["rho"]), float(params["eta"]), float(params["gamma"])
    V = A.sum(1)
    P_r = bounds.allerton_P(C, data.B, V, rho, eta, alpha, T)
    target = float(P_r[-1])
    eta_dvp = float(params["dvp"]["eta"])

    def P_dvp(a):
        return bounds.icml_P(C, data.B, V, np.full(T, eta_dvp), np.full(T, a))

    def matched(name, P_of):
        m = bounds.match_alpha(lambda a: P_of(a)[-1], target)
        if not m["reached"]:
            raise ValueError(f"cannot match {name}'s privacy bound to R-ADMM's P(T) = {target:.4g}: {m['reason']}")
        return m

    f0 = initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig2")
    lab = (PAPER, "fig2", f"alpha={alpha}")
    run = (lambda name: only is None or name in only)
    m_dvp = matched("DVP", P_dvp)
    out = {"target": target, "curves": {}, "match": {"dvp": m_dvp}}
    if run("radmm"):
        h_r = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=gamma, K=K, f0=f0, alpha=alpha,
                        rngs=noise_generators(seed, R, *lab, "radmm"), **_solver(params))
        out["curves"]["radmm"] = _private_curve(h_r, P_r)
    if run("dvp"):
        h_d = dz.m_admm(data, A, C=C, rho=rho, eta=np.full(T, eta_dvp), theta=np.full(T, eta_dvp), f0=f0,
                        alpha=np.full(T, m_dvp["alpha"]), rngs=noise_generators(seed, R, *lab, "dvp"),
                        **_solver(params))
        out["curves"]["dvp"] = _private_curve(h_d, P_dvp(m_dvp["alpha"]))
    for name, pp in params["pp"].items():
        eta_pp, shape = pp_schedule(pp, T)

        def P_pp(a, eta_pp=eta_pp, shape=shape):
            return bounds.icml_P(C, data.B, V, eta_pp, a * shape)

        m_pp = matched(f"PP ({name})", P_pp)
        out["match"][name] = m_pp
        if not run(name):
            continue
        h_p = dz.m_admm(data, A, C=C, rho=rho, eta=eta_pp, theta=np.full(T, float(pp["theta"])), f0=f0,
                        alpha=m_pp["alpha"] * shape, rngs=noise_generators(seed, R, *lab, "pp"), **_solver(params))
        out["curves"][name] = _private_curve(h_p, P_pp(m_pp["alpha"]))
    return out


def _private_curve(h, P) -> dict:
    return {**summary(h.traces["L"]), "L": h.traces["L"], "P": P, "newton_steps_max": h.meta["newton_steps_max"],
            "newton_steps_mean": h.meta["newton_steps_mean"]}


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
            m[f"{k}.P_final.{method}{at}"] = c["P"][-1]
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
            "curves": {"radmm": _private_curve(h_f, P_fixed), "radmm_madmm": _private_curve(h_v, P_var)}}


def fig3_metrics(res: dict, T: int) -> tuple[dict, dict]:
    """Fig. 3 metrics: the re-tuned alpha range, max_t |P_fixed(t) - P_varying(t)|, P(T); per curve L_mean(T)
    (per-repeat L(T) in `repeats`), L_range(T), the mean of L_mean over t > T/2 (per repeat) and Newton steps."""
    c = res["curves"]
    m = {"alpha_var_min": res["alpha_var_min"], "alpha_var_max": res["alpha_var_max"],
         "P_max_abs_diff": float(np.abs(c["radmm"]["P"] - c["radmm_madmm"]["P"]).max()), "P_final": c["radmm"]["P"][-1]}
    rep = {}
    for name, cc in c.items():
        rep[f"L_final_mean.{name}"] = cc["L"][:, -1]
        rep[f"L_late_mean.{name}"] = cc["L"][:, T // 2 + 1:].mean(axis=1)
        m[f"L_final_range.{name}"] = cc["L_range"][-1]
        m[f"newton_steps_max.{name}"] = cc["newton_steps_max"]
        m[f"newton_steps_mean.{name}"] = cc["newton_steps_mean"]
    m.update({key: float(np.mean(v)) for key, v in rep.items()})
    return m, rep
