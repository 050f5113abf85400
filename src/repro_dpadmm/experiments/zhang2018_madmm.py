"""ZKL-ICML items: per item `run_<item>(params)` (loads Adult, runs), `plot_<item>(result)` ({file name: figure}: the
paper's form first, `<item>_ours` with our additions), `metrics_<item>(result)` (write_metrics keyword arguments)
and, where the notebook shows one, `table_<item>(result, metrics)`; below them pure functions over arrays (`fig1`,
`private_comparison`, ...).

Private runs record what they spent (History.spends, algorithms.decentralized); the privacy totals P(T) reported here
are taken from those records, and the curves P(t) from the schedules the records hold.

Metrics name every loss beside its trivial references: `L_init` (L(0), the loss of the random starting point, per
repeat) and `L_zero` (the loss of the zero model on the item's data, ln 2), so that a comparison can say when a curve
is no better than a model that learnt nothing.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..algorithms import decentralized as dz
from ..datasets import load
from ..privacy.bounds import zhang2018 as bounds
from ..rng import seed_sequence
from .parts import gather
from .plotting import accuracy_privacy, metrics_table, range_se, summary
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


# ------------------------------------------------------------------------------------------------- Fig. 1
FIG1_GROUPS = ("a", "const_eta", "capped", "b")  # panel (a)'s runs, its constant and capped penalties, panel (b)


def fig1(X, y, params: dict, seed: int, groups=FIG1_GROUPS) -> dict:
    """Fig. 1: non-private M-ADMM convergence. (a) private penalties eta_i(1) q_i^{t-1} with a fixed, time-varying or
    per-node dual step theta; (b) a common eta(t) = eta(1) q1^{t-1} for increasing q1. Every run goes on to
    T_long = freeze_iterations (>= T; the paper's panels are its first T iterations) so that a stall shows. Beside
    panel (a)'s runs, the same dual steps with (i) a constant penalty eta_i(1) and (ii) the paper's penalty capped at
    eta_cap: they separate what the growing penalty does (the freeze) from what a per-node theta does (it breaks the
    invariant sum_i lambda_i = 0, so the iterates settle away from f_c*). Traces L(t), the distance
    ||f-hat(t) - 1 f_c*^T||_F and ||sum_i lambda_i(t)||. `groups`: the runs to make (FIG1_GROUPS; the item runs
    one part per group, each with the references)."""
    data, A = _network(X, y, params, seed, "fig1")
    N, d, T = data.n_nodes, data.dim, int(params["iterations"])
    T_long = max(T, int(params.get("freeze_iterations", T)))
    C, rho = float(params["C"]), float(params["rho"])
    fc = dz.centralized_optimum(data, C, rho)
    L_star = dz.optimum_loss(data, fc)
    f0 = dz.initial_points(seed, 1, N, d, float(params.get("init_scale", 1.0)), PAPER, "fig1")
    eta1 = np.asarray(params["eta1"], float)
    eta_a = dz.geometric(eta1, np.asarray(params["q"], float), T_long)  # (T_long, N)
    lo, hi = params["theta_random"]
    u = np.random.default_rng(seed_sequence(seed, PAPER, "fig1", "theta")).random(T_long)
    thetas = {
        "fixed": np.full(T_long, float(params["theta_fixed"])),
        "time_varying": lo + (hi - lo) * u,
        "per_node": np.broadcast_to(eta1 - float(params["theta_node_offset"]), (T_long, N)),
    }
    cap = float(params.get("eta_cap", 5.0))
    penalties = {"a": eta_a, "const_eta": np.broadcast_to(eta1, (T_long, N)), "capped": np.minimum(eta_a, cap)}
    out = {"L_star": L_star, "L_init": float(dz.average_loss(data, f0)[0]), "L_zero": dz.zero_model_loss(data),
           "T": T, "T_long": T_long,
           "theta_time_varying": thetas["time_varying"][:T], "theta_per_node": thetas["per_node"][0],
           "inv_eta_sum": (1.0 / eta_a).sum(axis=0), "eta_cap": cap, "b": {}}
    f_star = np.broadcast_to(fc, (1, N, d))
    grad_star = C * dz.local_grad(data, f_star)[0] + rho / N * fc  # rows: grad O(f_c*, D_i), (17)
    for group, eta in progress([(g, e) for g, e in penalties.items() if g in groups], "(a) penalties",
                               name=lambda kv: kv[0]):
        out[group] = {}
        for name, th in thetas.items():
            h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=th, f0=f0, fc=fc, keep_iterates=name == "fixed",
                          **_solver(params))
            out[group][name] = _trace(h)
            if name == "fixed":  # Theorem 3.1 fixes theta: (19) along the run
                out[group][name]["thm31"] = thm31_inner_products(h.meta["f_path"][:, 0], h.meta["lam_path"][:, 0],
                                                                 np.asarray(eta, float), float(th[0]), A, grad_star, fc)
            if group == "a" and name == "fixed":  # §6.2's KKT reconstruction of every node's first sample
                out["attack"] = {mode: [{k: v for k, v in kkt_attack(data, A, h.meta["f_path"][:T + 1, 0], C, rho,
                                                                      float(th[0]), np.asarray(eta)[:T, i], node=i,
                                                                      eta=mode).items() if k in ("cos", "rel_err",
                                                                                                "label_ok")}
                                        for i in range(N)] for mode in ("known", "theta", "estimated")}
    # Assumption 3 on (2): m_i = rho/N (the logistic loss adds a curvature that vanishes far out), M_i = C c_1
    # lambda_max(X_i^T X_i / B_i) + rho/N, the Lipschitz constant of grad O(., D_i)
    m_o, M_O = rho / N, float(C * bounds.C1 * np.linalg.eigvalsh(data.G)[:, -1].max() + rho / N)
    for q1 in progress(params["q1_list"] if "b" in groups else [], "(b) common penalty", name=lambda q: f"q1 = {q}"):
        eta = dz.geometric(float(params["eta_b"]), float(q1), T_long)
        theta_b = np.full(T_long, float(params["theta_b"]))
        out["b"][float(q1)] = _trace(dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=theta_b, f0=f0, fc=fc,
                                               **_solver(params)))
        out["b"][float(q1)]["delta_lb"] = {
            reading: thm32_delta_lower_bound(A, eta[:T], float(params["theta_b"]), m_o, M_O, sigma_min=reading)
            for reading in ("tilde", "bar")}
    return out


def thm31_inner_products(f_path: np.ndarray, lam_path: np.ndarray, eta: np.ndarray, theta: float, A: np.ndarray,
                         grad_star: np.ndarray, fc: np.ndarray) -> np.ndarray:
    """ICML Theorem 3.1, (19), along a run: for t = 0..T-1 the inner product <Z(t+1) - Z*, J(t+1)(Z(t+1) - Z(t))>_F
    divided by the sum of the two blocks' |norm products| (so -1 <= value <= 1; (19) says <= 0). Z = [Y; f-hat],
    J(t) = diag(I / theta, W(t)(D + A)), W(t) = diag(eta_i(t)); Y(t) from 2 Lambda(t) = sqrt(D - A) Y(t) (the paper's
    'sqrt(D-A) A Y(t)' has a stray A: with it (15) does not follow from (13)), taken in the column space of
    sqrt(D - A); Y* = -sqrt(D - A)^+ grad O-hat(f-hat*) by (17), f-hat* = 1 f_c*^T. f_path, lam_path: (T+1, N, d) of
    one run; eta: (T, N) or (T,), eta_i(t+1) in row t; grad_star: (N, d), row i = grad O(f_c*, D_i)."""
    D = np.diag(A.sum(1))
    eta = np.asarray(eta, float)
    eta = eta if eta.ndim == 2 else eta[:, None] * np.ones(len(A))
    w, U = np.linalg.eigh(D - A)
    S = (U * np.sqrt(np.clip(w, 0, None))) @ U.T
    S_pinv = np.linalg.pinv(S, rcond=1e-10, hermitian=True)
    Y = np.einsum("ij,tjd->tid", S_pinv, 2.0 * lam_path)
    Y_star = -S_pinv @ grad_star
    F, F_star = f_path, np.broadcast_to(fc, f_path.shape[1:])
    dY, eY = Y[1:] - Y[:-1], Y[1:] - Y_star
    dF, eF = F[1:] - F[:-1], F[1:] - F_star
    JdF = eta[:, :, None] * np.einsum("ij,tjd->tid", D + A, dF)
    inner = (eY * dY).sum(axis=(1, 2)) / theta + (eF * JdF).sum(axis=(1, 2))
    scale = (np.sqrt((eY ** 2).sum(axis=(1, 2)) * (dY ** 2).sum(axis=(1, 2))) / theta
             + np.sqrt((eF ** 2).sum(axis=(1, 2)) * (JdF ** 2).sum(axis=(1, 2))))
    return np.divide(inner, scale, out=np.zeros_like(inner), where=scale > 0)


def thm32_delta_lower_bound(A: np.ndarray, eta: np.ndarray, theta: float, m_o: float, M_O: float, mu: float = 2.0,
                            sigma_min: str = "tilde") -> np.ndarray:
    """ICML Theorem 3.2, (23): the lower bound on delta(t) (the rate is 1 + delta(t)) for penalties eta (T, N),
    min{theta s(D-A) / (mu^2 s~max(t)), (2 m_o + 2 s_min(t)) / ((mu^2 M_O^2 + mu s~max(t)^2) / (theta s(D-A)(mu - 1))
    + s~max(t))}, s(D-A) the smallest nonzero singular value of the Laplacian, s~max(t) = sigma_max(W(t)(D + A)).
    (23) writes s~min(t) in the numerator, which the theorem never defines: sigma_min='tilde' reads it as the smallest
    nonzero singular value of W(t)(D + A), 'bar' as that of (W(t) - theta I)(D - A) (0 where that matrix is 0)."""
    D = np.diag(A.sum(1))
    sv = np.linalg.svd(D - A, compute_uv=False)
    s_lap = sv[sv > 1e-12 * sv.max()].min()

    def smin(M):
        v = np.linalg.svd(M, compute_uv=False)
        v = v[v > 1e-12 * max(v.max(), 1e-300)]
        return float(v.min()) if v.size else 0.0

    eta = np.asarray(eta, float)
    eta = eta if eta.ndim == 2 else eta[:, None] * np.ones(len(A))
    out = np.empty(len(eta))
    for t, e in enumerate(eta):
        Wt = np.diag(e)
        st_max = float(np.linalg.svd(Wt @ (D + A), compute_uv=False).max())
        s_num = smin(Wt @ (D + A)) if sigma_min == "tilde" else smin((Wt - theta * np.eye(len(A))) @ (D - A))
        term1 = theta * s_lap / (mu ** 2 * st_max)
        term2 = (2 * m_o + 2 * s_num) / ((mu ** 2 * M_O ** 2 + mu * st_max ** 2) / (theta * s_lap * (mu - 1)) + st_max)
        out[t] = min(term1, term2)
    return out


@threadpool_limits.wrap(limits=1)   # its BLAS products' round-off depends on the thread count: one, as the DAG's jobs
def kkt_attack(data, A: np.ndarray, f_path: np.ndarray, C: float, rho: float, theta: float, eta_i: np.ndarray,
               node: int = 0, eta: str = "known", sweeps: int = 50) -> dict:
    """ICML §6.2's threat model, as a measured attack on the released iterates of one (non-private) M-ADMM run: the
    attacker knows every sample of `node` but its first, the iterates f_j(t) of the node and its neighbours for all t,
    and the dual step theta. It rebuilds lambda_i(t) from (11), and from the KKT condition (12) at every t,
      a_t := -(grad O_known(f_i(t+1)) + 2 lambda_i(t)) = eta_i(t+1) b_t + (C/B_i) L'(y_1 f_i(t+1)^T x_1) y_1 x_1,
    b_t = sum_j (2 f_i(t+1) - f_i(t) - f_j(t)), so that r_t = a_t - eta_i(t+1) b_t is a negative multiple of v = y_1 x_1.
    eta: 'known' (the penalties eta_i, the paper's attacker), 'theta' (a private eta guessed as the conventional
    theta), or 'estimated' (a private eta estimated with v: alternating least squares of a_t on (b_t, v), our attacker).
    Then v's direction is the mean of -r_t, its length the rho minimising sum_t (||r_t|| - (C/B_i) rho
    sigmoid(-rho f_i(t+1)^T u))^2 (L' = -sigmoid(-z) for the logistic loss), and the sign of (x_1, y_1) is the one with
    nonnegative features (Adult's are). f_path: (T+1, N, d), one run. Returns the cosine of x_1-hat with x_1, ||x_1-hat - x_1|| / ||x_1||, whether
    y_1 is right, and the estimate."""
    d, N = data.dim, data.n_nodes
    rows = np.flatnonzero(data.node == node)
    cols = slice(node * d, (node + 1) * d)
    X_o, y_o = data.Xb[rows[1:]][:, cols].toarray(), data.y[rows[1:]]
    x1, y1, B = data.Xb[rows[0]][:, cols].toarray().ravel(), float(data.y[rows[0]]), float(data.B[node])
    F = f_path[:, node]
    nb = np.flatnonzero(A[node])
    V = len(nb)
    Fnb = f_path[:, nb].sum(axis=1)
    lam = np.vstack([np.zeros(d), np.cumsum(0.5 * theta * (V * F[1:] - Fnb[1:]), axis=0)])   # lambda_i(t), (11)
    f_next = F[1:]
    z = y_o[None, :] * (f_next @ X_o.T)
    grad_known = (C / B) * (-1.0 / (1.0 + np.exp(np.clip(z, -500, 500))) * y_o) @ X_o + rho / N * f_next
    a = -(grad_known + 2.0 * lam[:-1])
    b = V * (2.0 * f_next - F[:-1]) - Fnb[:-1]
    if eta == "known":
        r = a - np.asarray(eta_i, float)[:, None] * b
    elif eta == "theta":
        r = a - theta * b
    elif eta == "estimated":
        v = a.sum(axis=0)   # start: the sum of a_t, b_t's share left in it
        for _ in range(sweeps):   # a_t ~ eta_t b_t + s_t v, per t by the 2 x 2 normal equations, then v from the s_t
            v = v / np.linalg.norm(v)
            bb, bv, vv = (b * b).sum(1), b @ v, np.full(len(a), v @ v)
            ab, av = (a * b).sum(1), a @ v
            det = bb * vv - bv ** 2
            eta_t = (ab * vv - av * bv) / det
            s_t = (av * bb - ab * bv) / det
            r = a - eta_t[:, None] * b
            v = (s_t[:, None] * r).sum(axis=0)
    else:
        raise ValueError(f"eta must be 'known', 'theta' or 'estimated', not {eta!r}")
    norms = np.linalg.norm(r, axis=1)
    u = -r.sum(axis=0)
    u /= np.linalg.norm(u)
    proj = f_next @ u
    grid = np.geomspace(1e-4, 10.0, 4001)
    fit = ((norms[None, :] - (C / B) * grid[:, None] / (1.0 + np.exp(np.clip(grid[:, None] * proj[None, :], -500, 500))))
           ** 2).sum(axis=1)
    v_hat = grid[np.argmin(fit)] * u
    y_hat = 1.0 if v_hat.sum() >= 0 else -1.0
    x_hat = y_hat * v_hat
    return {"cos": float(x_hat @ x1 / (np.linalg.norm(x_hat) * np.linalg.norm(x1))),
            "rel_err": float(np.linalg.norm(x_hat - x1) / np.linalg.norm(x1)), "label_ok": bool(y_hat == y1),
            "x_hat": x_hat, "x1": x1}


def _trace(h) -> dict:
    lam = h.meta["lambda_final"][0]
    return {"L": h.traces["L"][0], "dist": h.traces["dist"][0], "dual_sum": h.traces["dual_sum"][0],
            "lambda_norm": float(np.sqrt((lam ** 2).sum())),
            "newton_steps_max": int(h.traces["newton_steps"][0].max()),
            "newton_steps_mean": h.meta["newton_steps_mean"]}


def fig1_metrics(res: dict) -> dict:
    """Fig. 1 metrics. Panel (a), per dual step `n`: at T (the paper's panel) L(T), |L(T) - L*|, the share of the
    starting gap still open (L(T) - L*) / (L(0) - L*) (the convergence rule of both ZKL papers), the distance to f_c*
    and its ratio to t = 0; at T_long the distance and the plateau ratio dist(T_long) / dist(T) (1 = frozen); the
    dual invariant ||sum_i lambda_i|| / ||Lambda||_F at T_long; the same with a constant penalty ('const_eta.') and
    with the penalty capped ('capped.'). Panel (b), per q1: L(T), the share of the gap still open, the distance at T and T_long, their plateau ratio,
    L(T/4) - L*. References: L*, L(0) = L_init, ln 2 = L_zero; min_i sum_t 1/eta_i(t) (finite: the freeze)."""
    T, L_star = res["T"], res["L_star"]
    m = {"L_star": L_star, "L_init": res["L_init"], "L_zero": res["L_zero"], "T_long": res["T_long"],
         "eta_cap": res["eta_cap"], "inv_eta_sum_min": float(res["inv_eta_sum"].min())}
    for name, r in res["a"].items():
        m[f"a.L_final.{name}"] = r["L"][T]
        m[f"a.L_absgap_final.{name}"] = abs(r["L"][T] - L_star)
        m[f"a.gap_left.{name}"] = (r["L"][T] - L_star) / (r["L"][0] - L_star)
        m[f"a.dist_final.{name}"] = r["dist"][T]
        m[f"a.dist_ratio.{name}"] = r["dist"][T] / r["dist"][0]
        m[f"a.newton_steps_max.{name}"] = r["newton_steps_max"]
    for group in ("a", "const_eta", "capped"):
        for name, r in res[group].items():
            m[f"{group}.dist_long.{name}"] = r["dist"][-1]
            m[f"{group}.dist_ratio_long.{name}"] = r["dist"][-1] / r["dist"][0]
            m[f"{group}.plateau.{name}"] = r["dist"][-1] / r["dist"][T]
            m[f"{group}.dual_sum_rel.{name}"] = r["dual_sum"][-1] / r["lambda_norm"]
            m[f"{group}.L_gap_long.{name}"] = r["L"][-1] - L_star
    for group in ("a", "const_eta", "capped"):
        r = res[group].get("fixed")
        if r is not None and "thm31" in r:
            m[f"{group}.thm31_max.fixed"] = float(r["thm31"].max())
    for mode, nodes in (res.get("attack") or {}).items():   # every node's first sample, from the iterates to T
        cos = np.array([n["cos"] for n in nodes])
        m[f"attack.{mode}.cos_min"], m[f"attack.{mode}.cos_max"] = float(cos.min()), float(cos.max())
        m[f"attack.{mode}.rel_err_max"] = float(max(n["rel_err"] for n in nodes))
        m[f"attack.{mode}.labels_right"] = int(sum(n["label_ok"] for n in nodes))
    for q1, r in res["b"].items():
        k = f"q1_{q1:.2f}"
        if "delta_lb" in r:
            for reading, dl in r["delta_lb"].items():
                at = "" if reading == "tilde" else "@sigma_bar"
                m[f"b.delta_lb_T.{k}{at}"] = float(dl[-1])
                m[f"b.delta_lb_rises.{k}{at}"] = int(np.sum(dl[1:] > dl[:-1] * (1 + 1e-12)))
        m[f"b.L_final.{k}"] = r["L"][T]
        m[f"b.gap_left.{k}"] = (r["L"][T] - L_star) / (r["L"][0] - L_star)
        m[f"b.dist_final.{k}"] = r["dist"][T]
        m[f"b.dist_long.{k}"] = r["dist"][-1]
        m[f"b.plateau.{k}"] = r["dist"][-1] / r["dist"][T]
        m[f"b.L_gap_mid.{k}"] = r["L"][T // 4] - L_star
        m[f"b.newton_steps_max.{k}"] = r["newton_steps_max"]
    return m


# ------------------------------------------------------------------------------------------------- Figs. 2-4
def _fmt_q(q: float) -> str:
    """1.05 -> '1.05', 1.0 -> '1.00', 1.005 -> '1.005'."""
    s = f"{q:.3f}"
    return s[:-1] if s.endswith("0") else s


def pp_variant(q1: float, q2: float) -> str:
    """Variant name of a swept PP setting (it stands in for the blue and the red curve)."""
    return f"pp_{_fmt_q(q1)}_{_fmt_q(q2)}"


def dvp_variant(q2: float) -> str:
    """Variant name of a swept DVP setting, eta = theta, alpha(t) = alpha(1) q2^(t-1) (it stands in for the black and
    the magenta curve)."""
    return f"dvp_{_fmt_q(q2)}"


def curve_specs(params: dict, alpha1: float, T: int, N: int, seed: int, item: str) -> dict:
    """Every run of a private item at noise level alpha(1), name -> {eta, alpha, stream, group, q1, q2, key, variant}.

    * `curves` (the paper's four roles; group 'paper'): eta(t) = theta q1^(t-1), alpha(t) = alpha(1) q2^(t-1).
    * `twins` (group 'paper'), per listed PP curve c, two runs with c's noise draws and eta = theta (ICML §6.1 at equal
      noise): 'c_twin', the equal overall perturbation of §6.1-6.2, alpha_twin(t) = alpha_c(t) theta / eta_c(t), so
      2 eta V eps is the same vector as c's at every t; 'c_twin_fixed_eps', c's alpha(t) itself (the noise eps kept,
      so its overall perturbation is eta_c(t) / theta times smaller: a variant, `fixed_epsilon`).
    * `node_varying` (group 'paper'), per listed curve c: 'c_nodes' with node-specific q1_i = q1 + s1 u_i and
      q2_i = q2 + s2 v_i (u evenly spaced on [-1, 1], v a seeded permutation of u): ICML §5.2's "eta_i(t) and
      alpha_i(t) vary from node to node". Each (s1, s2) of its `spread_sweep` (group 'sweep') adds 'c_nodes_<s1>_<s2>',
      the same u and v scaled, written as the variant 'nodes_<s1>_<s2>' of the 'c_nodes' keys.
    * `sweep` (group 'sweep'): PP at every listed (q1, q2) (variant 'pp_<q1>_<q2>' of the blue and red keys) and DVP
      at every listed q2 (run 'black_<q2>', variant 'dvp_<q2>' of the black and magenta keys); points equal to a paper
      curve are that curve."""
    theta = float(params["theta"])
    specs = {}

    def add(name, q1, q2, stream, group, key, variant=None, eta=None, alpha=None):
        specs[name] = {"eta": dz.geometric(theta, q1, T) if eta is None else eta,
                       "alpha": dz.geometric(alpha1, q2, T) if alpha is None else alpha,
                       "stream": stream, "group": group, "q1": q1, "q2": q2, "key": key, "variant": variant}

    curves = {name: (float(c["q1"]), float(c["q2"])) for name, c in params["curves"].items()}
    for name, (q1, q2) in curves.items():
        add(name, q1, q2, name, "paper", name)
    for c in params.get("twins") or []:
        if c not in curves:
            raise ValueError(f"twins: {c!r} is not a curve; curves: {list(curves)}")
        q1, q2 = curves[c]
        eta_c, alpha_c = dz.geometric(theta, q1, T), dz.geometric(alpha1, q2, T)
        add(f"{c}_twin", 1.0, q2, c, "paper", f"{c}_twin", alpha=alpha_c * theta / eta_c)
        add(f"{c}_twin_fixed_eps", 1.0, q2, c, "paper", f"{c}_twin", variant="fixed_epsilon", alpha=alpha_c)
    nv = params.get("node_varying")
    if nv:
        u = np.linspace(-1.0, 1.0, N)
        v = u[np.random.default_rng(seed_sequence(seed, PAPER, item, "node_varying")).permutation(N)]
        spreads = [(tuple(nv["spread"]), "paper")] + [(tuple(sp), "sweep") for sp in nv.get("spread_sweep") or []]
        for c in nv["curves"]:
            if c not in curves:
                raise ValueError(f"node_varying.curves: {c!r} is not a curve; curves: {list(curves)}")
            q1, q2 = curves[c]
            for (s1, s2), group in spreads:
                q1_i, q2_i = (q1 + float(s1) * u if q1 > 1 else np.ones(N)), q2 + float(s2) * v
                if np.any(q1_i < 1) or np.any(q2_i < 1):
                    raise ValueError(f"node_varying spread {[s1, s2]} takes a growth factor of {c!r} below 1")
                variant = None if group == "paper" else f"nodes_{float(s1):g}_{float(s2):g}"
                name = f"{c}_nodes" if variant is None else f"{c}_{variant}"
                add(name, q1, q2, name, group, f"{c}_nodes", variant=variant, eta=dz.geometric(theta, q1_i, T),
                    alpha=dz.geometric(alpha1, q2_i, T))
    sw = params.get("sweep") or {}
    taken = set(curves.values())
    for q1, q2 in sw.get("pp") or []:
        if (float(q1), float(q2)) not in taken:
            name = pp_variant(float(q1), float(q2))
            add(name, float(q1), float(q2), name, "sweep", None, variant=name)
    for q2 in sw.get("dvp_q2") or []:
        if (1.0, float(q2)) not in taken:
            name = f"black_{_fmt_q(float(q2))}"  # the run's name and noise stream label
            add(name, 1.0, float(q2), name, "sweep", None, variant=dvp_variant(float(q2)))
    return specs


def private_comparison(X, y, params: dict, seed: int, alpha1: float, item: str, only=None,
                       network: str | None = None, names=None, references: bool | None = None) -> dict:
    """PP vs DVP (Figs. 2-4) at noise level alpha(1): every run of `curve_specs` (or those of the groups in `only`,
    e.g. {'paper'} or {'sweep'}, or those named in `names`, to spread them over processes; each run's numbers are
    those of a full run, its noise stream being labelled by its stream name). Returns per run the traces L
    (repeats, T+1), L_mean, L_range, P(t), and the graph facts; with `references` (default: when group 'paper' runs),
    L* of objective (1), L(0) per repeat and the noise-free L(T) of each paper curve's penalty schedule (1 run), the
    reference of §6.3's "accuracy does not degrade".
    network: the name of one of params['extra_networks'] (ICML §5.2's "networks with tens ... of nodes"): the four
    paper curves on that graph instead (its split drawn with its own label); or of params['extra_settings']: the four
    curves with those values (C, the uneven split's floor) in place of the item's."""
    if network is not None:   # an extra graph, or an extra setting (a reading of C) on the item's own graph
        over = ({"graph": params["extra_networks"][network]} if network in (params.get("extra_networks") or {})
                else dict(params["extra_settings"][network]))
        params = {**params, **over, "twins": None, "node_varying": None, "sweep": None}
        item_label = (item, network)
    else:
        item_label = (item,)
    data, A = _network(X, y, params, seed, *item_label)
    N, d, T, R = data.n_nodes, data.dim, int(params["iterations"]), int(params["repeats"])
    C, rho, theta = float(params["C"]), float(params["rho"]), float(params["theta"])
    if 2 * bounds.C1 >= np.min(data.B / C * (rho / N + 2 * theta * A.sum(1))):
        raise ValueError("Algorithm 1 needs 2 c_1 < (B_i / C)(rho/N + 2 theta V_i) for every node; raise theta")
    f0 = dz.initial_points(seed, R, N, d, float(params.get("init_scale", 1.0)), PAPER, *item_label)
    V = A.sum(1)
    out = {"curves": {}, "B": data.B, "V": V, "N": N, "network": network}
    for name, s in curve_specs(params, alpha1, T, N, seed, item).items():
        if (only is not None and s["group"] not in only) or (names is not None and name not in names):
            continue
        rngs = dz.noise_generators(seed, R, PAPER, *item_label, f"alpha={alpha1}", s["stream"])
        h = dz.m_admm(data, A, C=C, rho=rho, eta=s["eta"], theta=np.full(T, theta), f0=f0, alpha=s["alpha"],
                      rngs=rngs, **_solver(params))
        out["curves"][name] = {**summary(h.traces["L"]), "L": h.traces["L"], "P": bounds.P_curve(h.spends[0]),
                               "P_total": bounds.paper_total(h.spends[0]),
                               **{k: s[k] for k in ("q1", "q2", "stream", "group", "key", "variant")},
                               "newton_steps_max": h.meta["newton_steps_max"],
                               "newton_steps_mean": h.meta["newton_steps_mean"]}
    if (only is None or "paper" in only) if references is None else references:
        fc = dz.centralized_optimum(data, C, rho)
        out["L_star"] = dz.optimum_loss(data, fc)
        out["L_init"] = dz.average_loss(data, f0)
        out["L_nonprivate"] = {}
        for q1 in sorted({float(c["q1"]) for c in params["curves"].values()}):
            h = dz.m_admm(data, A, C=C, rho=rho, eta=dz.geometric(theta, q1, T), theta=np.full(T, theta),
                          f0=f0[:1], **_solver(params))
            out["L_nonprivate"][q1] = float(h.traces["L"][0, -1])
    return out


def late_deviation(L: np.ndarray) -> np.ndarray:
    """Per repeat, the mean over t > T/2 of |L^r(t) - L_mean(t)|: a per-run dispersion whose mean over the runs is
    comparable between paired curves with a standard error (our addition beside the paper's L_range)."""
    T = L.shape[1] - 1
    late = L[:, T // 2 + 1:]
    return np.abs(late - late.mean(axis=0)).mean(axis=1)


def _is_schedule(name: str) -> bool:
    """A PP or DVP schedule of its own (a paper curve or a swept point), not a twin or a node-varying run."""
    return "_twin" not in name and "_nodes" not in name


def pareto_points(curves: dict, z: float = 2.0) -> dict:
    """ICML §5.2's core claim, "PP can outperform DVP ... both in accuracy and in privacy", over every schedule run:
    for each DVP schedule (eta = theta; q1 = 1) the PP schedule (q1 > 1) that is more private (a smaller P(T)) and,
    among those, the most accurate (the lowest L_mean(T)); where no PP schedule is more private, the most private one
    (so that the claim can fail on privacy). Twins and node-varying runs are no schedules of their own.

    Returns {dvp q2 label: {"pp": run name, "L_pp", "L_dvp" (per-run L(T)), "P_pp", "P_dvp", "n_more_private",
    "dominated"}}, where `dominated` says the chosen PP point is more private and more accurate beyond z standard errors
    of the mean difference, paired over the runs (run r of every schedule starts from the same f(0)), as the claims
    engine pairs them: the count behind the share the notebook prints. The per-case claims judge the same pair with the engine's own noise rule."""
    pp = {n: c for n, c in curves.items() if _is_schedule(n) and c["q1"] > 1}
    dvp = {n: c for n, c in curves.items() if _is_schedule(n) and c["q1"] == 1}
    out = {}
    for name, d in sorted(dvp.items(), key=lambda kv: kv[1]["q2"]):
        more = {n: c for n, c in pp.items() if c["P_total"] < d["P_total"]}
        if more:
            best = min(more, key=lambda n: float(more[n]["L"][:, -1].mean()))
        elif pp:
            best = min(pp, key=lambda n: pp[n]["P_total"])
        else:
            continue
        Lp, Ld = pp[best]["L"][:, -1], d["L"][:, -1]
        se = float(np.std(Ld - Lp, ddof=1) / np.sqrt(Lp.size)) if Lp.size > 1 else 0.0
        out[_fmt_q(d["q2"])] = {"pp": best, "dvp": name, "L_pp": Lp, "L_dvp": Ld, "P_pp": pp[best]["P_total"],
                                "P_dvp": d["P_total"], "n_more_private": len(more),
                                "dominated": bool(more) and float(Ld.mean() - Lp.mean()) > z * se}
    return out


def private_metrics(results: dict, T: int, seed: int, item: str, L_zero: float) -> tuple[dict, dict]:
    """Figs. 2-4 metrics per noise level a<alpha1> and run. A paper curve, twin or node-varying run c writes
    '<a>.<metric>.<key>' (a fixed-epsilon twin under the variant '@fixed_epsilon'); a swept PP point V writes the blue
    and red keys under '@V' (it can stand in for either role), a swept DVP point the black and magenta keys, and each
    paper curve the other role's keys under its setting's name. Metrics: L_mean(T)
    (per-repeat L(T) in `repeats`), the paper's stability measure L_range at T and its mean over t > T/2 (each with a
    bootstrap standard error '.se'), the per-run late deviation (repeats), the share of the initial gap closed
    (L(0) - L(T)) / (L(0) - L*) and the share closed in the second half (L(T/2) - L(T)) / (L(0) - L*) (repeats;
    a converged curve has little left to close), the degradation by the noise (L(T) - L_np(T)) / (L(0) - L_np(T))
    against the noise-free run of the same penalty schedule (paper curves and twins), P(T), Newton steps (paper
    curves). L_zero: the zero model's loss on the item's data. Returns (metrics, repeats)."""
    m, rep = {"L_zero": L_zero}, {}
    boot = np.random.default_rng(seed_sequence(seed, PAPER, item, "bootstrap"))
    nets = {}  # the network's facts and references: the item's own (None) and each extra network's
    for res in results.values():
        nets[None] = res
        nets.update(res.get("networks", {}))
    for net, first in nets.items():
        at = "" if net is None else f"@{net}"
        m.update({f"N{at}": first["N"], f"B_min{at}": first["B"].min(), f"B_median{at}": float(np.median(first["B"])),
                  f"B_max{at}": first["B"].max(), f"V_min{at}": first["V"].min(), f"V_max{at}": first["V"].max(),
                  f"L_star{at}": first["L_star"]})
        rep[f"L_init{at}"] = first["L_init"]
        for q1, L in first["L_nonprivate"].items():
            m[f"L_nonprivate.q1_{q1:.2f}{at}"] = L
    runs = [(a, None, c_name, c) for a, res in results.items() for c_name, c in res["curves"].items()]
    runs += [(a, net, c_name, c) for a, res in results.items() for net, r in res.get("networks", {}).items()
             for c_name, c in r["curves"].items()]
    roles = {"blue": "red", "red": "blue", "black": "magenta", "magenta": "black"}
    # every PP setting can stand in for either PP role and every DVP setting for either DVP role: a paper curve is
    # also written as the variant of its setting under the other role (blue's (1.05, 1.04) as red@pp_1.05_1.04)
    runs += [(a, None, c_name, {**c, "key": roles[c_name], "group": "sweep",
                                "variant": pp_variant(c["q1"], c["q2"]) if c["q1"] > 1 else dvp_variant(c["q2"])})
             for a, res in results.items() for c_name, c in res["curves"].items() if c_name in roles]
    for a, net, name, c in runs:
        k = f"a{a:g}"
        L_star, L_init = nets[net]["L_star"], nets[net]["L_init"]
        keys = [c["key"]] if c["key"] else (["blue", "red"] if c["q1"] > 1 else ["black", "magenta"])
        at = f"@{c['variant'] or net}" if (c["variant"] or net) else ""
        rs = range_se(c["L"], boot, T // 2 + 1)
        LT = c["L"][:, -1]
        # the noise-free run of the same (common) penalty schedule, for the paper's curves and the twins
        L_np = nets[net]["L_nonprivate"].get(c["q1"]) if c["group"] == "paper" and not name.endswith("_nodes") else None
        for key in keys:
            rep[f"{k}.L_final_mean.{key}{at}"] = LT
            rep[f"{k}.L_dev_late.{key}{at}"] = late_deviation(c["L"])
            rep[f"{k}.gap_closed.{key}{at}"] = (L_init - LT) / (L_init - L_star)
            rep[f"{k}.late_progress.{key}{at}"] = (c["L"][:, T // 2] - LT) / (L_init - L_star)
            if L_np is not None:
                rep[f"{k}.degradation.{key}{at}"] = (LT - L_np) / (L_init - L_np)
            m[f"{k}.L_final_range.{key}{at}"] = rs["final"]
            m[f"{k}.L_final_range.{key}{at}.se"] = rs["final_se"]
            m[f"{k}.L_range_late.{key}{at}"] = rs["late"]
            m[f"{k}.L_range_late.{key}{at}.se"] = rs["late_se"]
            m[f"{k}.P_final.{key}{at}"] = c["P_total"]
            if c["group"] == "paper" and not at:  # diagnostics of the paper's curves
                m[f"{k}.newton_steps_max.{key}"] = c["newton_steps_max"]
                m[f"{k}.newton_steps_mean.{key}"] = c["newton_steps_mean"]
    for a, res in results.items():  # the core claim over every schedule run (pareto_points), and DVP's P(t)
        k = f"a{a:g}"
        for net, curves in [(None, res["curves"]), *((n, r["curves"]) for n, r in res.get("networks", {}).items())]:
            at = "" if net is None else f"@{net}"
            pts = pareto_points(curves)
            for dq, pt in pts.items():
                rep[f"{k}.core.L_pp.{dq}{at}"] = pt["L_pp"]
                rep[f"{k}.core.L_dvp.{dq}{at}"] = pt["L_dvp"]
                m[f"{k}.core.P_pp.{dq}{at}"] = pt["P_pp"]
                m[f"{k}.core.P_dvp.{dq}{at}"] = pt["P_dvp"]
                m[f"{k}.core.pp.{dq}{at}"] = pt["pp"]
                m[f"{k}.core.n_more_private.{dq}{at}"] = pt["n_more_private"]
            if pts:
                m[f"{k}.core.P_pp_max{at}"] = max(c["P_total"] for n, c in curves.items()
                                                  if _is_schedule(n) and c["q1"] > 1)
                m[f"{k}.core.n_dvp{at}"] = len(pts)
                m[f"{k}.core.n_dominated{at}"] = sum(pt["dominated"] for pt in pts.values())
                m[f"{k}.core.share_dominated{at}"] = m[f"{k}.core.n_dominated{at}"] / len(pts)
        mag = res["curves"].get("magenta")
        if mag is not None and mag["q2"] == 1.0:  # constant noise: Theorem 4.1's sum has T equal terms
            m[f"{k}.P_T_over_T_P1.magenta"] = float(mag["P"][-1] / ((len(mag["P"]) - 1) * mag["P"][1]))
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
def parts_fig1(params: dict) -> list[str]:
    """Fig. 1 runs as one part per group of runs (FIG1_GROUPS): nine runs of 300 iterations were one job of 106 s."""
    return list(FIG1_GROUPS)


def part_fig1(params: dict, key: str) -> dict:
    X, y = _adult()
    return fig1(X, y, params, int(params["seed"]), groups=(key,))


def run_fig1(params: dict) -> dict:
    """Fig. 1 on Adult (`fig1`), combined from its parts (every run is deterministic: no noise): each part holds
    the references and its own group of runs (part 'a' also the KKT attack on its fixed-theta run)."""
    parts = gather(PAPER, "fig1", params)
    out = dict(parts[FIG1_GROUPS[0]])
    out.update({g: parts[g][g] for g in FIG1_GROUPS})
    return out


_A_STYLE = {"fixed": ("tab:blue", "theta = 0.5 fixed"), "time_varying": ("black", "theta(t) non-fixed"),
            "per_node": ("tab:red", "theta_i per node")}


def plot_fig1(res: dict) -> dict:
    """'fig1', the paper's form: (a) L(t) of the three dual steps, (b) L(t) per q1, t <= T. 'fig1_ours': the distance
    to f_c* up to T_long for panel (a)'s runs (solid), with a constant penalty (dashed) and the capped penalty
    (dotted); the dual invariant ||sum_i lambda_i(t)||; panel (b)'s distance up to T_long."""
    import matplotlib.pyplot as plt

    T, L_star = res["T"], res["L_star"]
    t = np.arange(T + 1)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, r in res["a"].items():
        color, label = _A_STYLE[name]
        axes[0].plot(t, r["L"][:T + 1], color=color, label=label)
    for c, (q1, r) in zip(plt.cm.viridis(np.linspace(0, 0.9, len(res["b"]))), res["b"].items()):
        axes[1].plot(t, r["L"][:T + 1], color=c, label=f"q1 = {q1:g}")
    for ax, title in zip(axes, ("(a) private eta_i(t), different theta", "(b) eta(t) = 0.5 q1^(t-1)")):
        ax.axhline(L_star, color="grey", ls=":", lw=1, label="L at f_c*")
        ax.set_ylim(L_star - 0.01, L_star + 0.25)
        ax.set(title=title, xlabel="iteration t", ylabel="average loss L(t)")
        ax.legend(fontsize=8)
    fig.tight_layout()

    ours, ax2 = plt.subplots(1, 3, figsize=(16, 4.5))
    tl = np.arange(res["T_long"] + 1)
    for group, ls in (("a", "-"), ("const_eta", "--"), ("capped", ":")):
        for name, r in res[group].items():
            color, label = _A_STYLE[name]
            lab = {"a": label, "const_eta": f"{label}, eta_i = eta_i(1)",
                   "capped": f"{label}, eta_i capped at {res['eta_cap']:g}"}[group]
            ax2[0].semilogy(tl, r["dist"], color=color, ls=ls, label=lab)
            ax2[1].semilogy(tl, np.maximum(r["dual_sum"], 1e-17), color=color, ls=ls, label=lab)
    for c, (q1, r) in zip(plt.cm.viridis(np.linspace(0, 0.9, len(res["b"]))), res["b"].items()):
        ax2[2].semilogy(tl, r["dist"], color=c, label=f"q1 = {q1:g}")
    for ax in (ax2[0], ax2[2]):
        ax.axvline(T, color="grey", ls=":", lw=1)
        ax.set_ylabel("||f(t) - 1 f_c*||_F")
    ax2[0].set_title("(a) distance to f_c*: the freeze and the per-node theta")
    ax2[1].set(title="(a) dual invariant ||sum_i lambda_i(t)|| (0 = kept)", ylabel="||sum_i lambda_i(t)||")
    ax2[2].set_title("(b) distance to f_c* to t = %d" % res["T_long"])
    for ax in ax2:
        ax.set_xlabel("iteration t")
        ax.legend(fontsize=7)
    ours.tight_layout()
    return {"fig1": fig, "fig1_ours": ours}


def metrics_fig1(res: dict) -> dict:
    return {"metrics": fig1_metrics(res)}


def table_fig1(res: dict, metrics: dict) -> str:
    """The references, the freeze (plateau ratios) and the dual invariant."""
    return metrics_table(metrics, lambda k: k in ("L_star", "L_init", "T_long", "eta_cap", "inv_eta_sum_min")
                         or ".plateau." in k or ".dual_sum_rel." in k)


RUNS_PER_PART = 3  # runs of one group in one part: a 100-node run (Figs. 3-4) takes about 23 s at paper settings (jobs < 90 s)


def _alpha_keys(params: dict, item: str) -> dict[str, tuple[float, str, tuple[str, ...], bool, str | None]]:
    """{part key: (alpha(1), group, run names, with references, network)}: each private item runs, per alpha(1), the
    runs of group 'paper' (the paper's curves, the twins, the node-varying runs) and, where `sweep` or a node-varying
    `spread_sweep` is set, those of group 'sweep', in parts of at most RUNS_PER_PART runs ('alpha<a>', 'alpha<a>.2',
    ...; 'alpha<a>_sweep', 'alpha<a>_sweep.2', ...; the first paper part also computes the references), and one part
    per extra network (the paper's four curves on it). Every run draws from its own labelled noise stream, so the
    way they are grouped changes no number."""
    keys = {}
    for a in params["alpha1"]:
        a = float(a)
        specs = curve_specs(params, a, 1, 2, 0, item)   # names and groups only: they depend on neither T nor N
        for group, stem in (("paper", f"alpha{a:g}"), ("sweep", f"alpha{a:g}_sweep")):
            names = [n for n, sp in specs.items() if sp["group"] == group]
            chunks = np.array_split(np.array(names, dtype=object), -(-len(names) // RUNS_PER_PART)) if names else []
            for j, chunk in enumerate(chunks):
                keys[stem if j == 0 else f"{stem}.{j + 1}"] = (a, group, tuple(chunk), group == "paper" and j == 0,
                                                               None)
        for net in params.get("extra_networks") or {}:
            keys[f"alpha{a:g}_{net}"] = (a, "paper", tuple(params["curves"]), True, net)
        for net in params.get("extra_settings") or {}:   # on the item's own graph: in parts like the item's runs
            names = list(params["curves"])
            for j, start in enumerate(range(0, len(names), RUNS_PER_PART)):
                keys[f"alpha{a:g}_{net}" if j == 0 else f"alpha{a:g}_{net}.{j + 1}"] = (
                    a, "paper", tuple(names[start:start + RUNS_PER_PART]), j == 0, net)
    return keys


def _part(params: dict, key: str, item: str) -> dict:
    X, y = _adult()
    alpha1, _, names, references, net = _alpha_keys(params, item)[key]
    return private_comparison(X, y, params, int(params["seed"]), alpha1, item, names=names, references=references,
                              network=net)


def _run_private(params: dict, item: str) -> dict:
    """Figs. 2-4: `private_comparison` at every alpha(1) of params['alpha1'], from the item's parts."""
    X, y = _adult()
    seed = int(params["seed"])
    keys = _alpha_keys(params, item)
    parts = gather(PAPER, item, params, lambda k: _part(params, k, item))
    alphas = {}
    for k, r in parts.items():
        a, *_, net = keys[k]
        merged = alphas.setdefault(a, {"curves": {}, "networks": {}})
        if net is not None:  # an extra setting comes in several parts: merge their curves
            prev = merged["networks"].get(net)
            merged["networks"][net] = r if prev is None else {**prev, **{f: v for f, v in r.items() if f != "curves"},
                                                              "curves": {**prev["curves"], **r["curves"]}}
            continue
        merged["curves"].update(r["curves"])
        merged.update({f: v for f, v in r.items() if f not in ("curves", "network")})
    data, _ = _network(X, y, params, seed, item)
    out = {"item": item, "T": int(params["iterations"]), "seed": seed, "alphas": alphas,
           "L_zero": dz.zero_model_loss(data)}
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
    return list(_alpha_keys(params, "fig2"))


def part_fig2(params: dict, key: str) -> dict:
    """`private_comparison` at one alpha(1) for one group of runs (its numbers are those of the whole run)."""
    return _part(params, key, "fig2")


def parts_fig3(params: dict) -> list[str]:
    return list(_alpha_keys(params, "fig3"))


def part_fig3(params: dict, key: str) -> dict:
    return _part(params, key, "fig3")


def parts_fig4(params: dict) -> list[str]:
    return list(_alpha_keys(params, "fig4"))


def part_fig4(params: dict, key: str) -> dict:
    return _part(params, key, "fig4")


_COLORS = {"blue": "tab:blue", "red": "tab:red", "black": "black", "magenta": "magenta"}
_PAPER_CURVES = ("blue", "red", "black", "magenta")


def _label(name: str, c: dict) -> str:
    return f"{'DVP' if c['q1'] == 1 else 'PP'} {name}: q1={c['q1']:g}, q2={c['q2']:g}"


def setting_label(variant: str) -> str:
    """The name a swept setting's point carries in 'fig<k>_ours', in the paper's terms (ICML §5.2: PP, "eta_i(t)
    increasing geometrically", against DVP, eta_i(t) = theta; growth factors q1, q2) rather than its variant key:
    'pp_1.10_1.00' -> 'PP (q1=1.10, q2=1.00)', 'dvp_1.02' -> 'DVP (q2=1.02)', 'nodes_0.01_0.02' ->
    'node-varying (q1_i = q1 +- 0.01, q2_i = q2 +- 0.02)'. Raises ValueError naming a key of none of these forms."""
    kind, _, rest = variant.partition("_")
    parts = rest.split("_")
    if kind == "pp" and len(parts) == 2:
        return f"PP (q1={parts[0]}, q2={parts[1]})"
    if kind == "dvp" and len(parts) == 1 and parts[0]:
        return f"DVP (q2={parts[0]})"
    if kind == "nodes" and len(parts) == 2:
        return f"node-varying (q1_i = q1 +- {parts[0]}, q2_i = q2 +- {parts[1]})"
    raise ValueError(f"setting_label: {variant!r} is not a swept setting's variant (pp_<q1>_<q2>, dvp_<q2>, "
                     "nodes_<s1>_<s2>)")


def plot_private(res: dict) -> dict:
    """'<item>', the paper's form: accuracy (L_mean(t) with L_range(t) bars) above privacy (P(t)) of its four curves,
    one column per alpha(1). '<item>_ours': per alpha(1), L_range(t) of each PP curve beside its equal-perturbation
    twin (solid) and fixed-epsilon twin (dashed), then every swept setting and the node-varying runs as (P(T),
    L_mean(T)) points against the paper's four curves."""
    import matplotlib.pyplot as plt

    columns = []
    for a, r in res["alphas"].items():
        curves = [{**c, "label": _label(n, c), "color": _COLORS[n]} for n, c in r["curves"].items()
                  if n in _PAPER_CURVES]
        columns.append({"accuracy": f"Accuracy: alpha(t) = {a:g} q2^(t-1)",
                        "privacy": f"Privacy: alpha(t) = {a:g} q2^(t-1)", "curves": curves})
    figs = {res["item"]: accuracy_privacy(columns)}

    alphas = res["alphas"]
    ours, axes = plt.subplots(2, len(alphas), figsize=(6.5 * len(alphas), 9), squeeze=False)
    for j, (a, r) in enumerate(alphas.items()):
        cs = r["curves"]
        ax = axes[0, j]
        for name in _PAPER_CURVES:
            for suffix, ls, extra in (("", "-", ""), ("_twin", "--", " twin: equal overall perturbation"),
                                      ("_twin_fixed_eps", ":", " twin: same eps (fixed epsilon)")):
                c = cs.get(name + suffix)
                if c is not None and (suffix or f"{name}_twin" in cs):
                    ax.semilogy(np.arange(len(c["L_range"])), np.maximum(c["L_range"], 1e-6),
                                color=_COLORS[name], ls=ls, label=f"{name}{extra}")
        ax.set(title=f"alpha(1) = {a:g}: L_range(t), eta growing vs eta = theta at the same draws",
               xlabel="iteration t", ylabel="L_range(t)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax = axes[1, j]
        for name, c in cs.items():
            x, yv = c["P_total"], c["L_mean"][-1]
            if name in _PAPER_CURVES:
                ax.scatter(x, yv, color=_COLORS[name], s=60, zorder=3, label=_label(name, c))
            elif c["group"] == "sweep" and (c["key"] or "").endswith("_nodes"):  # a swept spread of c_nodes
                ax.scatter(x, yv, edgecolors=_COLORS.get(c["key"][:-6], "k"), marker="^", s=30, facecolors="none")
                ax.annotate(f"{c['key'][:-6]}, {setting_label(c['variant'])}", (x, yv), fontsize=6)
            elif c["group"] == "sweep":
                ax.scatter(x, yv, color="tab:blue" if c["q1"] > 1 else "grey", marker="x", s=30)
                ax.annotate(setting_label(c["variant"]), (x, yv), fontsize=6)
            elif name.endswith("_nodes"):
                ax.scatter(x, yv, color=_COLORS.get(name[:-6], "k"), marker="^", s=40,
                           label=f"{name[:-6]}, node-varying q1_i, q2_i")
        ax.axhline(r.get("L_star", np.nan), color="grey", ls=":", lw=1, label="L at f_c*")
        ax.axhline(res["L_zero"], color="grey", ls="--", lw=1, label="the zero model")
        ax.set(title=f"alpha(1) = {a:g}: every setting, (P(T), L_mean(T)) (x: swept)", xlabel="P(T)",
               ylabel="L_mean(T)", xscale="log", yscale="log")
        ax.legend(fontsize=7)
    ours.tight_layout()
    figs[f"{res['item']}_ours"] = ours
    return figs


plot_fig2 = plot_fig3 = plot_fig4 = plot_private


def metrics_private(res: dict) -> dict:
    """`private_metrics` of every alpha(1); Fig. 4 adds P(T) of the even split ('P_final_even.<curve>')."""
    m, rep = private_metrics(res["alphas"], res["T"], res["seed"], res["item"], res["L_zero"])
    m.update({f"P_final_even.{n}": v for n, v in res.get("P_even", {}).items()})
    return {"metrics": m, "repeats": rep}


metrics_fig2 = metrics_fig3 = metrics_fig4 = metrics_private


def table_private(res: dict, metrics: dict) -> str:
    """The graph and split facts, the references, and the paper curves' and twins' metrics (not the swept
    settings, which the second figure shows, nor the Newton-step diagnostics)."""
    return metrics_table(metrics, lambda k: "newton" not in k and "@" not in k and not k.endswith(".se"))


table_fig2 = table_fig3 = table_fig4 = table_private
