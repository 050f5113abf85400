"""Hu et al. (ADMM sharing over distributed features): per item (fig1, fig2, fig3, eps_sweep) `run_<item>(params)`
runs it (loading its datasets), `plot_<item>(result)` returns its figure by file name, `metrics_<item>(result)` the
keyword arguments of `write_metrics`, and `table_<item>(result, metrics)` (fig1, fig2, eps_sweep) a Markdown table.

fig1 / fig2: training objective and test log-loss against epochs for ADMM sharing (noise-free and noisy) and the
FDML-SGD baseline (a9a / gisette). fig3: test log-loss against the noise level, with scikit-learn logistic
regression on all features and on party 1's features only. eps_sweep: the (epsilon, delta) runs, under two
calibrations (Theorem 1 as stated; the authors' data-dependent one), with Corollary 1 and dp-accounting side by side.
Where the paper is silent, settings follow the authors' public code (docs/choices.md#hu-authors-code,
docs/choices.md#hu-noise-placement).

Noise (`noise_on`): "shared" (default) is per-sample noise on the shared value D_m x_m, Theorem 1's mechanism and
what the authors' noise sweeps ran; "params" is eq. (7) read literally (noise on x_m), written as the variant
`eq7_literal`: neither the authors' runs nor Theorem 1. Variant metrics are written as `<key>@<variant>`; noisy
quantities are the mean over repeats with the per-repeat values beside them (the `repeats` of write_metrics, which
the claims engine judges against their standard error). The *_metrics functions return (metrics, repeats).

Privacy: the (epsilon, delta) runs record each party's release (algorithms.sharing: a `Spend` per run and party,
multiplier sigma_m / C_m of Theorem 1, Corollary 1 as the paper bound); the eps sweep's totals (Corollary 1,
dp-accounting PLD and RDP) are read from those records, never recomputed from (epsilon, delta) on the side.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..algorithms.fdml_sgd import fdml_sgd, select_lr
from ..algorithms import sharing
from ..algorithms.sharing import admm_sharing, centralised_optimum, regularised_objective, setup
from ..datasets import load
from ..datasets.partition import vertical
from ..history import History
from ..privacy.bounds import hu2020 as bounds
from ..rng import repeat_generators, seed_sequence
from ..solvers import NotConvergedError
from .common import dataset_status
from .parts import gather
from .plotting import metrics_table
from .progress import progress

PAPER = "hu2020_sharing"
UNAVAILABLE = "not run: dataset unavailable"
EQ7 = "eq7_literal"                 # variant: eq. (7) read literally (isotropic noise on x_m)
AUTHORS = "authors_calibration"     # variant: the authors' data-dependent (epsilon, delta) calibration
SK_DEFAULTS = "sklearn_defaults"    # variant: sklearn's LogisticRegression defaults (C = 1, lbfgs)
Z_CODE = "z_penalty_code"           # variant: the authors' z-step penalty 2 rho (the paper's is rho/2)
AS_RUN = "authors_as_run"           # variant: as the authors ran it (their solvers, their z-step; algorithms.sharing)
BLAS_THREADS = 1                    # BLAS threads of the ADMM sharing runs (see run_admm)


# ---------------------------------------------------------------------------------------------------- data
def make_problem(X_train, y_train, X_test, y_test, boundaries, *, bias: bool = True,
                 sparse_below: float = 0.25) -> dict:
    """Vertical partition of a LIBSVM-style dataset; with `bias`, a constant-1 column joins party 1's block only
    (the authors' code; docs/choices.md#hu-authors-code). Returns D, Y, D_test, Y_test and the partition (with the bias column).
    Data with fewer than `sparse_below` nonzeros (a9a: 11%) are kept as CSR matrices, dense ones (gisette) dense."""
    d = X_train.shape[1]
    vertical(d, boundaries)
    if X_test.shape[1] != d:
        raise ValueError(f"test data has {X_test.shape[1]} features, training data {d}: pad the test file to the "
                         "training width")
    b = [int(v) for v in boundaries]
    if bias:
        at = b[1]
        X_train = np.insert(X_train, at, 1.0, axis=1)
        X_test = np.insert(X_test, at, 1.0, axis=1)
        b = [0] + [v + 1 for v in b[1:]]
    as_ = (lambda A: sp.csr_matrix(A)) if np.count_nonzero(X_train) < sparse_below * X_train.size \
        else np.ascontiguousarray
    return {"D": as_(X_train), "Y": np.asarray(y_train, float),
            "D_test": as_(X_test), "Y_test": np.asarray(y_test, float),
            "boundaries": tuple(b), "n_train": X_train.shape[0], "n_test": X_test.shape[0],
            "n_features": d, "d_m": np.diff(boundaries).tolist(), "bias": bool(bias),
            "party1_cols": np.arange(boundaries[0], boundaries[1])}


def load_problem(name: str, boundaries, *, bias: bool = True, train_rows: int | None = None, root=None) -> dict:
    """`make_problem` on a processed dataset (raises DatasetUnavailable with the reason when it is missing).
    `train_rows` keeps only the first rows of the training set (smoke runs only; null = all)."""
    data = load(name, root)
    if train_rows:
        data = {**data, "X_train": data["X_train"][:train_rows], "y_train": data["y_train"][:train_rows]}
    prob = make_problem(data["X_train"], data["y_train"], data["X_test"], data["y_test"], boundaries, bias=bias)
    prob["raw"] = data
    return prob


def lam_sum(params: dict, N: int) -> float:
    """The weight of ||x||^2 next to the *summed* loss: lam itself (lam_scale "sum", the authors' code) or N lam
    (lam_scale "mean": lam in the mean-form objective, docs/choices.md#hu-lam-scale)."""
    return float(params["lam"]) * (N if params.get("lam_scale", "sum") == "mean" else 1.0)


# ---------------------------------------------------------------------------------------------------- runs
def run_admm(prob: dict, params: dict, sigmas, *, repeats: int, iterations: int, seed: int, label: str,
             noise_on: str | None = None, z_penalty: str | None = None, b1: float | None = None,
             bound_args: dict | None = None, solvers: str = "exact") -> History:
    """ADMM sharing for every noise level x repeat at once (runs ordered level-major). Level k's repeat r draws from
    its own generator (seed, label, level), so adding levels never changes another level's numbers. For
    noise_on="authors" the levels are noise multipliers (see algorithms.sharing.authors_sigma). With `b1` (and
    `bound_args`) the runs record their releases (algorithms.sharing.admm_sharing). `solvers="code"`: the authors'
    L-BFGS-B and Brent (algorithms.sharing)."""
    sigmas = np.asarray(sigmas, dtype=float)
    levels = sigmas if sigmas.ndim == 2 else sigmas.reshape(-1)
    rngs = [g for k, s in enumerate(levels)
            for g in repeat_generators(seed, repeats, PAPER, label, f"level{k}:{np.round(s, 12).tolist()}")]
    sigma_runs = np.repeat(levels, repeats, axis=0)
    # One BLAS thread: an iteration's BLAS calls are small (the d x d triangular solves of the x-update); with two
    # threads on a shared 2-core machine each took 50x longer (the results agree bit for bit on a9a and in the tests).
    with threadpool_limits(limits=BLAS_THREADS):
        return admm_sharing(prob["D"], prob["Y"], prob["boundaries"], rho=float(params["rho"]),
                            lam=lam_sum(params, prob["n_train"]), iterations=int(iterations), sigma=sigma_runs,
                            noise_on=noise_on or params.get("noise_on", "shared"), rngs=rngs,
                            D_test=prob["D_test"], Y_test=prob["Y_test"],
                            z_penalty=z_penalty or params.get("z_penalty", "paper"), c1=float(params.get("c1", 2.0)),
                            b1=b1, bound_args=bound_args, solvers=solvers)


def run_as_run(prob: dict, params: dict, sigmas, *, repeats: int, iterations: int, seed: int, label: str,
               noise_on: str) -> History:
    """The variant `authors_as_run`: the same runs as the authors' prototype ran them (their L-BFGS-B and Brent
    solvers, their z-step penalty 2 rho; algorithms.sharing), noise `noise_on` ("shared" for the noise sweeps,
    "authors" for the (epsilon, delta) runs). Its own random streams (label + "-as-run")."""
    return run_admm(prob, params, sigmas, repeats=repeats, iterations=iterations, seed=seed, label=label + "-as-run",
                    noise_on=noise_on, z_penalty="code", solvers="code")


def references(prob: dict) -> dict:
    """The trivial references of every log-loss comparison (a side no better than them makes it degenerate): on the
    test split, the
    log loss of the zero model x = 0 (the initial point of ADMM sharing, ln 2), of the constant model that predicts the
    training split's positive rate, and the majority-class rate; on the training split, the objective at x = 0."""
    from ..problems.logistic import loss

    Y, Yt = prob["Y"], prob["Y_test"]
    p = float(np.mean(Y > 0))
    prior = -np.mean(np.where(Yt > 0, np.log(p), np.log1p(-p)))
    return {"ref.zero_model_test_logloss": float(loss(np.zeros_like(Yt)).mean()),
            "ref.prior_test_logloss": float(prior),
            "ref.majority_rate_test": float(max(np.mean(Yt > 0), np.mean(Yt < 0))),
            "ref.objective_x0": float(loss(np.zeros_like(Y)).mean())}


def theorem1_epsilons(b1: float, prob: dict, params: dict, sigmas) -> dict:
    """The per-iteration epsilon each noise level sigma buys under Theorem 1 (sigma = sqrt(2 ln(1.25/delta)) C / eps,
    at `privacy_delta`) with party 1's Lemma 1 bound C_1 from the observed b_1 of the noise-free run (Assumption 1.1's
    bound, the smallest the run allows); Theorem 1 itself is stated for eps <= 1. Keys: b1, lemma1_C.party1,
    theorem1_epsilon.sigma<s>."""
    d_m = np.diff(prob["boundaries"])                  # party 1 includes its bias column
    C = bounds.sensitivity_bound(lam_sum(params, prob["n_train"]), float(params.get("c1", 2.0)), b1, len(d_m),
                                 float(params["rho"]), d_m)
    delta = float(params["privacy_delta"])
    out = {"b1": float(b1), "lemma1_C.party1": float(C[0])}
    out.update({f"theorem1_epsilon.{sigma_key(s)}": float(bounds.epsilon_for_sigma(C[0], s, delta))
                for s in sigmas if s > 0})
    return out


def run_sgd(prob: dict, params: dict, *, seed: int, label: str, repeats: int = 1) -> tuple[History, float, dict]:
    """FDML-SGD with the learning rate chosen on the grid after `lr_select_epochs` epoch(s) (docs/choices.md#hu-sgd-baseline)."""
    sgd = params["sgd"]
    lam = lam_sum(params, prob["n_train"])
    make = lambda: np.random.default_rng(seed_sequence(seed, PAPER, label, "lr-selection"))  # noqa: E731
    lr, scores = select_lr(prob["D"], prob["Y"], prob["boundaries"], lam=lam, grid=sgd["lr_grid"],
                           batch_size=int(sgd["batch_size"]), make_rng=make, epochs=int(sgd["lr_select_epochs"]),
                           init_std=float(sgd["init_std"]))
    h = fdml_sgd(prob["D"], prob["Y"], prob["boundaries"], lam=lam, lr=lr, epochs=int(sgd["epochs"]),
                 batch_size=int(sgd["batch_size"]), rngs=repeat_generators(seed, repeats, PAPER, label, "sgd"),
                 init_std=float(sgd["init_std"]), D_test=prob["D_test"], Y_test=prob["Y_test"])
    return h, lr, {f"{v:g}": float(s) for v, s in zip(sgd["lr_grid"], scores)}


def sklearn_C(sk: dict, lam: float) -> float:
    """The inverse regularisation strength: `C: inverse_lam` gives C = 1 / lambda (the authors' baselines,
    C = 1000 at lambda = 1e-3, docs/choices.md#hu-sklearn-baselines); a number is used as it is."""
    C = sk["C"]
    if C == "inverse_lam":
        if not lam > 0:
            raise ValueError(f"sklearn C = inverse_lam needs lambda > 0, got {lam}")
        return 1.0 / float(lam)
    if not float(C) > 0:
        raise ValueError(f"sklearn C must be 'inverse_lam' or a number > 0, got {C!r}")
    return float(C)


def sklearn_model(sk: dict, lam: float):
    """The scikit-learn LogisticRegression of one baseline setting (C, solver, intercept, max_iter)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=sklearn_C(sk, lam), solver=str(sk["solver"]),
                              fit_intercept=bool(sk.get("fit_intercept", True)), max_iter=int(sk["max_iter"]))


def sklearn_baselines(prob: dict, sk: dict, lam: float) -> dict:
    """Test log-loss of scikit-learn LogisticRegression on all features and on party 1's features only (HU §5,
    Fig. 3), on the raw LIBSVM features (the model's own intercept, no bias column). Raises NotConvergedError when
    the solver stops at max_iter."""
    from sklearn.metrics import log_loss

    raw, cols = prob["raw"], prob["party1_cols"]
    out = {"C": sklearn_C(sk, lam)}
    for name, sel in (("all", slice(None)), ("party1", cols)):
        clf = sklearn_model(sk, lam)
        clf.fit(raw["X_train"][:, sel], raw["y_train"])
        n_iter = int(np.max(clf.n_iter_))
        if n_iter >= int(sk["max_iter"]):
            raise NotConvergedError(f"sklearn LogisticRegression ({sk['solver']}, {name} features)", n_iter,
                                    float("nan"), float(clf.tol), "raise max_iter")
        out[name] = float(log_loss(raw["y_test"], clf.predict_proba(raw["X_test"][:, sel]), labels=[-1.0, 1.0]))
        out[f"{name}_iterations"] = n_iter
    return out


def sklearn_lines(prob: dict, params: dict, lam: float) -> dict:
    """{None: the authors' baselines, "sklearn_defaults": sklearn's defaults (when that variant is asked for)}."""
    out = {None: sklearn_baselines(prob, params["sklearn"], lam)}
    if SK_DEFAULTS in params.get("variants", []):
        out[SK_DEFAULTS] = sklearn_baselines(prob, params["sklearn_defaults"], lam)
    return out


def epochs_to_reach(trace: np.ndarray, tol: float) -> int:
    """First epoch at which the trace comes within `tol` of its final value. (A "stays within" rule would charge
    constant-step SGD for its late fluctuations rather than for its speed.)"""
    trace = np.asarray(trace, dtype=float)
    return int(np.argmax(np.abs(trace - trace[-1]) <= tol))


def epochs_to_reach_value(trace: np.ndarray, target: float, tol: float) -> int:
    """First epoch from which the trace stays within `tol` of `target` (another run's final value, e.g. the noise-free
    run's), or len(trace) when its last value is outside. Unlike `epochs_to_reach`, a run that levels off away from
    the target, or only passes through its band on the way, does not count as converged."""
    out = np.abs(np.asarray(trace, dtype=float) - target) > tol
    return int(out.size - np.argmax(out[::-1])) if out.any() else 0


def sigma_key(s: float) -> str:
    return f"sigma{float(s):g}"


def tol_key(tol: float) -> str:
    return f"tol{float(tol):g}"


def put(m: dict, reps: dict, key: str, values, variant: str | None = None) -> None:
    """`key` (the mean over repeats) into the metrics and its per-repeat values into `reps`, both under
    `key@variant` when a variant is given."""
    v = np.asarray(values, dtype=float).reshape(-1)
    name = key + (f"@{variant}" if variant else "")
    m[name] = float(v.mean())
    if v.size > 1:
        reps[name] = v


# ---------------------------------------------------------------------------------------------------- items
def rho_key(rho: float) -> str:
    """The variant name of an alternative ADMM penalty rho (`rho_variants`): rho0.5, rho2."""
    return f"rho{float(rho):g}"


def convergence_variants(params: dict) -> dict:
    """The noise-free runs of fig1/fig2 beside the default, by variant: the authors' z-step (z_penalty_code), each
    penalty of `rho_variants` (the paper states no rho; the authors' code uses 1), and the noise-free run as the
    authors ran it (authors_as_run: their L-BFGS-B and Brent solvers, their z-step 2 rho). Values: the keyword
    overrides of `run_admm` and the parameters (a rho variant's)."""
    variants = list(params.get("variants", []))
    out = {}
    if Z_CODE in variants:
        out[Z_CODE] = ({"z_penalty": "code"}, params)
    for r in params.get("rho_variants", []):
        out[rho_key(r)] = ({}, {**params, "rho": float(r)})
    if AS_RUN in variants:
        out[AS_RUN] = ({"z_penalty": "code", "solvers": "code"}, params)
    return out


def noise_free_b1(prob: dict, params: dict, history: History | None = None, rows=None) -> float:
    """Assumption 1.1's b_1, one definition for every item (docs/choices.md#hu-privacy): the largest ||x||, ||y||,
    ||z|| of the noise-free run over its first `b1_updates` updates. `history` (its `rows`, default all): noise-free
    runs of the same problem and settings with at least that many updates to read it from; else one is run here
    (noise-free runs are deterministic, so both give the same number). The iterates' norms still grow after the
    100 updates an item reads (y tends to y*), so a b_1 read from runs of different lengths gave one sigma two
    epsilons; the longest noise-free run any item makes (Fig. 3's 150 updates) is the common horizon."""
    n = int(params["b1_updates"])
    if history is None or history.traces["norm_x"].shape[1] < n + 1:
        history, rows = run_admm(prob, params, [0.0], repeats=1, iterations=n, seed=int(params["seed"]),
                                 label="b1"), None
    rows = slice(None) if rows is None else rows
    return float(max(history.traces[k][rows, :n + 1].max() for k in ("norm_x", "norm_y", "norm_z")))


def convergence_item(dataset: str, params: dict, *, root=None) -> dict:
    """Fig. 1 (a9a) / Fig. 2 (gisette): traces of ADMM sharing (noise-free and noisy) and FDML-SGD; the variants of
    `params["variants"]` and `rho_variants` beside them: eq. (7) literally (noisy curves only), the authors' z-step
    penalty and each alternative rho (noise-free and noisy), the noise-free run as the authors ran it."""
    seed = int(params["seed"])
    variants = list(params.get("variants", []))
    if int(params["sgd"]["read_at"]) > int(params["sgd"]["epochs"]):
        raise ValueError(f"sgd.read_at = {params['sgd']['read_at']} exceeds sgd.epochs = {params['sgd']['epochs']}")
    runs = min(int(params["iterations"]), int(params["noise_iterations"]) if params["noise_sigmas"] else 10 ** 9)
    if int(params["settle_horizon"]) > runs + 1:
        raise ValueError(f"settle_horizon = {params['settle_horizon']} exceeds iterations / noise_iterations + 1 "
                         f"= {runs + 1}")
    prob = load_problem(dataset, params["boundaries"], bias=params["bias"], train_rows=params.get("train_rows"),
                        root=root)
    lam = lam_sum(params, prob["n_train"])
    clean = run_admm(prob, params, [0.0], repeats=1, iterations=params["iterations"], seed=seed, label="clean")
    others = convergence_variants(params)
    clean_var = {var: run_admm(prob, p, [0.0], repeats=1, iterations=params["iterations"], seed=seed, label="clean",
                               **kw)
                 for var, (kw, p) in progress(list(others.items()), "noise-free variants", name=lambda k: k[0])}
    noisy = {}
    if params["noise_sigmas"]:
        # every noisy variant draws the same noise (label "noisy"): its difference from the default is the setting's
        kinds = [(None, {"noise_on": params.get("noise_on", "shared")}, params)] + \
            ([(EQ7, {"noise_on": "params"}, params)] if EQ7 in variants else []) + \
            [(var, kw, p) for var, (kw, p) in others.items() if var != AS_RUN]
        for var, kw, p in progress(kinds, "noisy ADMM sharing", name=lambda k: k[0] or "default"):
            noisy[var] = run_admm(prob, p, params["noise_sigmas"], repeats=int(params["repeats"]),
                                  iterations=params["noise_iterations"], seed=seed, label="noisy", **kw)
    sgd, lr, lr_scores = run_sgd(prob, params, seed=seed, label="sgd")
    x_opt = centralised_optimum(prob["D"], prob["Y"], lam)
    return {"problem": prob, "lam": lam, "admm": clean, "noisy": noisy, "clean_variants": clean_var,
            "z_code": clean_var.get(Z_CODE), "sgd": sgd, "lr": lr,
            "lr_scores": lr_scores, "objective_opt": regularised_objective(prob["D"], prob["Y"], x_opt, lam),
            "test_logloss_opt": float(regularised_objective(prob["D_test"], prob["Y_test"], x_opt, 0.0)),
            "privacy": theorem1_epsilons(noise_free_b1(prob, params), prob, params, params["noise_sigmas"])}


def settle_gap(trace, target: float, start: int) -> float:
    """The largest distance of a trace from `target` from update `start` on: a run has converged within tol in
    fewer than `start + 1` updates when this is at most tol. As a number (not an epoch count) the tolerance becomes
    a threshold of the claim, judged at both ends of its plausible range."""
    tr = np.asarray(trace, dtype=float)
    if start >= tr.size:
        raise ValueError(f"settle_gap: start {start} beyond the trace's {tr.size} points")
    return float(np.max(np.abs(tr[start:] - target)))


def convergence_metrics(res: dict, params: dict) -> tuple[dict, dict]:
    """Flat metrics of fig1/fig2 (documented in config/claims/hu2020_sharing.yaml). Index t of a trace is the
    state after t updates; SGD is read at `sgd.read_at` epochs (the paper's plotted window), its last epoch beside.
    Convergence in fewer than h = `settle_horizon` updates: `*settle_gap*`, the largest distance of the trace from
    its final value (a noisy run: from the noise-free final value of the same setting) from update h - 1 on."""
    prob, admm, sgd, noisy = res["problem"], res["admm"], res["sgd"], res["noisy"]
    tols = [float(t) for t in params["settle_tols"]]
    read = int(params["sgd"]["read_at"])
    start = int(params["settle_horizon"]) - 1
    m = {"n_train": prob["n_train"], "n_test": prob["n_test"], "n_features": prob["n_features"],
         "n_parties": len(prob["d_m"])}
    m.update({f"d_party{k + 1}": v for k, v in enumerate(prob["d_m"])})
    a_obj, a_test = admm.traces["objective"][0], admm.traces["test_logloss_clean"][0]
    s_obj, s_test = sgd.traces["objective"][0, :read + 1], sgd.traces["test_logloss"][0, :read + 1]
    m.update({
        "admm_final_objective": a_obj[-1],
        "admm_rel_gap_final": (a_obj[-1] - res["objective_opt"]) / res["objective_opt"],
        "admm_iterations": len(a_obj) - 1,
        "sgd_final_objective": s_obj[-1], "sgd_final_test_logloss": s_test[-1], "sgd_read_at": read,
        "sgd_last_test_logloss": sgd.traces["test_logloss"][0, -1], "sgd_epochs": sgd.traces["objective"].shape[1] - 1,
        "sgd_lr": res["lr"],
        "centralised_objective": res["objective_opt"], "centralised_test_logloss": res["test_logloss_opt"],
        "admm_iter_time_ms_median": 1e3 * float(np.median(admm.meta["iter_time_s"])),
        "admm_iter_time_ms_max": 1e3 * float(np.max(admm.meta["iter_time_s"])),
        "admm_setup_time_s": admm.meta["setup_time_s"],
    })
    m.update(references(prob))
    m.update(res["privacy"])
    m["final_objective_gap_admm_minus_sgd"] = a_obj[-1] - s_obj[-1]
    for tol in tols:
        m[f"sgd_epochs_to_settle.{tol_key(tol)}"] = epochs_to_reach(s_test, tol)
        m[f"sgd_objective_epochs_to_settle.{tol_key(tol)}"] = epochs_to_reach(s_obj, tol)
    finals = {}
    for var, h in [(None, admm)] + list(res.get("clean_variants", {}).items()):
        sfx = f"@{var}" if var else ""
        zt, zo = h.traces["test_logloss_clean"][0], h.traces["objective"][0]
        finals[var] = zt[-1]
        m["admm_final_test_logloss" + sfx] = zt[-1]
        m["final_test_logloss_gap_admm_minus_sgd" + sfx] = zt[-1] - s_test[-1]
        m["admm_settle_gap" + sfx] = settle_gap(zt, zt[-1], start)
        m["admm_objective_settle_gap" + sfx] = settle_gap(zo, zo[-1], start)
        for tol in tols:
            m[f"admm_epochs_to_settle.{tol_key(tol)}" + sfx] = epochs_to_reach(zt, tol)
            m[f"admm_objective_epochs_to_settle.{tol_key(tol)}" + sfx] = epochs_to_reach(zo, tol)
    if params.get("published_noise_free"):      # the authors' published noise-free run, on the same criteria
        pub = np.asarray(params["published_noise_free"], dtype=float)[:len(a_test)]
        m["published_settle_gap"] = settle_gap(pub, pub[-1], start)
        m["published_final_test_logloss"] = float(pub[-1])
        m.update({f"published_epochs_to_settle.{tol_key(tol)}": epochs_to_reach(pub, tol) for tol in tols})
    if params.get("published_sgd"):             # and their FDML-SGD run, read as ours is (at sgd.read_at epochs)
        pub = np.asarray(params["published_sgd"], dtype=float)[:read + 1]
        m.update({f"published_sgd_epochs_to_settle.{tol_key(tol)}": epochs_to_reach(pub, tol) for tol in tols})
    R = int(params["repeats"])
    reps = {}
    for var, h in noisy.items():
        target = finals.get(var, finals[None])     # eq7_literal changes only the noise: the default's noise-free run
        for k, s in enumerate(params["noise_sigmas"]):
            runs = slice(k * R, (k + 1) * R)
            t_clean = h.traces["test_logloss_clean"][runs]
            put(m, reps, f"noisy_final_test_logloss.{sigma_key(s)}", t_clean[:, -1], var)
            put(m, reps, f"noisy_final_test_logloss_noisy_x.{sigma_key(s)}", h.traces["test_logloss"][runs, -1], var)
            put(m, reps, f"noisy_settle_gap.{sigma_key(s)}", [settle_gap(tr, target, start) for tr in t_clean],
                var)                                                          # per run: its spread decides ties
            for tol in tols:
                sfx = f"@{var}" if var else ""
                key = f"noisy_epochs_to_settle.{sigma_key(s)}.{tol_key(tol)}"
                m[key + sfx] = epochs_to_reach(t_clean.mean(0), tol)
                put(m, reps, f"noisy_epochs_to_reach_clean.{sigma_key(s)}.{tol_key(tol)}",
                    [epochs_to_reach_value(tr, target, tol) for tr in t_clean], var)
    return m, reps


def _noise_reads(dataset: str, params: dict) -> tuple[list[int], list[int]]:
    """(the updates Fig. 3 reads the default curves at, every update any curve is read at) of a panel; raises, naming
    the key, on a read past the run or a published list of the wrong length (before any work)."""
    panel = params["panels"][dataset]
    variants = params.get("variants", [])
    main = list(dict.fromkeys([int(panel["read_at"])] + [int(t) for t in panel.get("also_read_at", [])]))
    reads = main + ([int(panel["published_read_at"])] if AS_RUN in variants and panel.get("published") else [])
    if max(reads) > int(params["iterations"]):
        raise ValueError(f"{dataset}: read_at / also_read_at / published_read_at {reads} exceed iterations = "
                         f"{params['iterations']}")
    if panel.get("published") and len(panel["published"]) != len(panel["sigmas"]):
        raise ValueError(f"{dataset}: published needs one value per sigma ({len(panel['sigmas'])}), got "
                         f"{len(panel['published'])}")
    return main, list(dict.fromkeys(reads))


def _panel_problem(dataset: str, params: dict, root=None) -> dict:
    panel = params["panels"][dataset]
    return load_problem(dataset, panel["boundaries"], bias=params["bias"], train_rows=params.get("train_rows"),
                        root=root)


def noise_variants(params: dict) -> list:
    """The runs of a Fig. 3 panel: the default (None), then each configured variant with runs of its own."""
    return [None] + [v for v in (EQ7, Z_CODE, AS_RUN) if v in params.get("variants", [])]


def noise_run(prob: dict, dataset: str, params: dict, var) -> History:
    """One run batch of a Fig. 3 panel: every noise level x repeat under the default (var None) or a variant."""
    panel = params["panels"][dataset]
    seed, T = int(params["seed"]), int(params["iterations"])
    if var == AS_RUN:
        return run_as_run(prob, params, panel["sigmas"], repeats=int(params.get("as_run_repeats", params["repeats"])),
                          iterations=T, seed=seed, label=f"fig3-{dataset}", noise_on="shared")
    return run_admm(prob, params, panel["sigmas"], repeats=int(params["repeats"]), iterations=T, seed=seed,
                    label=f"fig3-{dataset}", noise_on="params" if var == EQ7 else params.get("noise_on", "shared"),
                    z_penalty="code" if var == Z_CODE else None)


def noise_panel(dataset: str, params: dict, *, root=None, histories: dict | None = None) -> dict:
    """Fig. 3 panel: ADMM sharing for every noise level (and the variants: eq. (7) literally, the authors' z-step,
    as the authors ran it), test log-loss read after `read_at` updates (and after each of `also_read_at`), the sklearn
    lines (the authors' and sklearn's defaults), the per-iteration epsilon each level buys under Theorem 1, and the
    authors' published values beside the variant `authors_as_run` (read after `published_read_at` updates).
    `histories`: {variant: its `noise_run`} computed elsewhere (the item's parts); the ones missing run here."""
    panel = params["panels"][dataset]
    main, reads = _noise_reads(dataset, params)
    prob = _panel_problem(dataset, params, root)
    S = len(panel["sigmas"])
    histories = histories or {}
    runs = {}
    for var in progress(noise_variants(params), f"{dataset} noise levels", name=lambda v: v or "default"):
        h = histories[var] if histories.get(var) is not None else noise_run(prob, dataset, params, var)
        R = h.traces["test_logloss_clean"].shape[0] // S
        runs[var] = {"history": h, "repeats": R,
                     "clean": {t: h.traces["test_logloss_clean"][:, t].reshape(S, R) for t in reads},
                     "noisy": {t: h.traces["test_logloss"][:, t].reshape(S, R) for t in reads}}
    sig = np.asarray(panel["sigmas"], float)
    h0, R0 = runs[None]["history"], runs[None]["repeats"]
    at0 = np.repeat(sig == 0, R0)                      # the batch's noise-free runs give b_1 when long enough
    b1 = noise_free_b1(prob, params, h0 if at0.any() else None, at0)
    return {"problem": prob, "runs": runs, "sigmas": sig, "read_at": reads[0], "reads": main,
            "sklearn": sklearn_lines(prob, params, lam_sum(params, prob["n_train"])),
            "privacy": theorem1_epsilons(b1, prob, params, sig),
            "published": panel.get("published"), "published_read_at": panel.get("published_read_at")}


def noise_metrics(dataset: str, res: dict) -> tuple[dict, dict]:
    p = f"{dataset}."
    h0 = res["runs"][None]["history"]
    m = {p + "status": "ok", p + "read_at": res["read_at"],
         p + "iter_time_ms_median_batch": 1e3 * float(np.median(h0.meta["iter_time_s"])),
         p + "runs_per_batch": h0.traces["objective"].shape[0]}
    m.update({p + k: v for k, v in references(res["problem"]).items()})
    m.update({p + k: v for k, v in res["privacy"].items()})
    for var, sk in res["sklearn"].items():
        sfx = f"@{var}" if var else ""
        m.update({p + "sklearn_all" + sfx: sk["all"], p + "sklearn_party1" + sfx: sk["party1"],
                  p + "sklearn_C" + sfx: sk["C"], p + "sklearn_all_iterations" + sfx: sk["all_iterations"]})
    reps = {}
    for var, run in res["runs"].items():
        for k, s in enumerate(res["sigmas"]):
            extra = [res["published_read_at"]] if var == AS_RUN and res["published"] else []
            for t in dict.fromkeys(res["reads"] + extra):
                at = "" if t == res["read_at"] else f"_t{t}"
                put(m, reps, f"{p}test_logloss{at}.{sigma_key(s)}", run["clean"][t][k], var)
                put(m, reps, f"{p}test_logloss_noisy_x{at}.{sigma_key(s)}", run["noisy"][t][k], var)
    if 0.0 in res["sigmas"]:       # §5: "the ADMM sharing is better at datasets with a large number of features"
        k0 = list(res["sigmas"]).index(0.0)
        put(m, reps, f"{p}admm_gain_over_sklearn_all",
            res["sklearn"][None]["all"] - np.asarray(res["runs"][None]["clean"][res["read_at"]][k0]))
    if AS_RUN in res["runs"] and res["published"]:
        m.update(published_comparison(p, res["sigmas"], res["published"],
                                      res["runs"][AS_RUN]["clean"][res["published_read_at"]], sigma_key))
        st = res["runs"][AS_RUN]["history"].meta["solver_stats"]
        m.update({f"{p}as_run.{k}": float(v.mean()) for k, v in st.items()})
    return m, reps


# The floor of what a run of ours can match in the authors' published runs beyond run-to-run noise: their noise-free runs
# are deterministic, and ours match them to 3e-5 in test log loss over 101 updates (rounding: a Gram-matrix function
# value against their sparse products, scipy's C L-BFGS-B against their Fortran one). Near-noise-free levels
# (sigma = 0.03) vary less than that from run to run, so a prediction interval alone would call rounding a mismatch.
PUBLISHED_FLOOR = 5e-5


def published_comparison(p: str, levels, published, runs: np.ndarray, key) -> dict:
    """The authors' published single run at each level beside our runs of the variant `authors_as_run` (runs:
    (levels, repeats)): `published_test_logloss.<level>` (their value), `published_gap.<level>` (our mean minus
    theirs) and `published_z.<level>` = (theirs - our mean) / sqrt(sd^2 (1 + 1/R) + floor^2): how many standard
    deviations of one more run of ours (a prediction interval), with PUBLISHED_FLOOR for the rounding, their run is
    from ours."""
    out = {}
    for lev, pub, r in zip(levels, published, runs):
        k = key(lev)
        r = np.asarray(r, float)
        sd = float(r.std(ddof=1)) if r.size > 1 else 0.0
        out[f"{p}published_test_logloss.{k}"] = float(pub)
        out[f"{p}published_gap.{k}"] = float(r.mean() - pub)
        out[f"{p}published_z.{k}"] = float((pub - r.mean()) / np.sqrt(sd ** 2 * (1.0 + 1.0 / r.size)
                                                                      + PUBLISHED_FLOOR ** 2))
    return out


CALIBRATIONS = {None: "shared", AUTHORS: "authors", EQ7: "params"}


def _eps_calibration(prob: dict, params: dict, dataset: str) -> dict:
    """The noise of the (epsilon, delta) runs: the noise-free reference run (its b_1), Lemma 1's C_m, Theorem 1's
    sigma_m per epsilon (E, M) and the bare multiplier sqrt(2 ln(1.25/delta)) / epsilon (E, M)."""
    panel = params["panels"][dataset]
    T, seed, delta = int(panel["iterations"]), int(params["seed"]), float(params["delta"])
    ref = run_admm(prob, params, [0.0], repeats=1, iterations=T, seed=seed, label=f"eps-{dataset}-ref")
    b1 = noise_free_b1(prob, params, ref)
    d_m = np.diff(prob["boundaries"])                  # party 1 includes its bias column
    M = len(d_m)
    C = bounds.sensitivity_bound(lam_sum(params, prob["n_train"]), float(params["c1"]), b1, M, float(params["rho"]),
                                 d_m)
    eps = np.asarray(panel["epsilons"], dtype=float)
    # The authors' runs use epsilon > 1, outside Theorem 1's proven range (0, 1]: applied as stated, flagged.
    sig = np.stack([bounds.theorem1_sigma(C, e, delta, strict=False) for e in eps])    # (E, M)
    mult = np.stack([bounds.theorem1_sigma(np.ones(M), e, delta, strict=False) for e in eps])   # (E, M)
    return {"reference": ref, "b1": b1, "C": C, "sigma": sig, "multiplier": mult, "epsilons": eps}


AS_RUN_NOISE_FREE = "as_run_noise_free"   # the eps sweep's noise-free run as the authors ran it


def eps_variants(params: dict) -> list:
    """The runs of an eps-sweep panel: the default (None), each configured variant, and with `authors_as_run` its
    noise-free run."""
    variants = params.get("variants", [])
    return [None] + [v for v in (AUTHORS, AS_RUN, EQ7) if v in variants] + \
        ([AS_RUN_NOISE_FREE] if AS_RUN in variants else [])


def eps_run(prob: dict, dataset: str, params: dict, var, cal: dict | None = None) -> History:
    """One run batch of an eps-sweep panel (every epsilon x repeat) under the default calibration (var None) or a
    variant's; `cal`: `_eps_calibration` (computed here when None and the variant needs it)."""
    panel = params["panels"][dataset]
    T, R, seed = int(panel["iterations"]), int(params["repeats"]), int(params["seed"])
    if var == AS_RUN_NOISE_FREE:
        return run_as_run(prob, params, [0.0], repeats=1, iterations=T, seed=seed, label=f"eps-{dataset}-ref",
                          noise_on="shared")
    if var in (AUTHORS, AS_RUN):    # their multipliers do not depend on the data: no reference run needed
        M = len(np.diff(prob["boundaries"]))
        levels = np.stack([bounds.theorem1_sigma(np.ones(M), e, float(params["delta"]), strict=False)
                           for e in np.asarray(panel["epsilons"], dtype=float)])
    else:
        cal = cal or _eps_calibration(prob, params, dataset)
        levels = cal["sigma"]
    if var == AS_RUN:
        return run_as_run(prob, params, levels, repeats=int(params.get("as_run_repeats", R)), iterations=T,
                          seed=seed, label=f"eps-{dataset}", noise_on="authors")
    record = {"b1": cal["b1"], "bound_args": {"delta": float(params["delta"]),
                                              "delta_prime": float(params["delta_prime"])}} if var is None else {}
    return run_admm(prob, params, levels, repeats=R, iterations=T, seed=seed, label=f"eps-{dataset}",
                    noise_on=CALIBRATIONS[var], **record)


def eps_panel(dataset: str, params: dict, *, root=None, histories: dict | None = None) -> dict:
    """(epsilon, delta) runs under each calibration of `params["variants"]`:
    * default: Theorem 1 as stated, per-sample noise on D_m x_m with sigma_m = Theorem 1 (C_m of Lemma 1 with the
      observed b_1);
    * `authors_calibration`: the authors' data-dependent noise D_m xi, xi ~ N(0, sigma_t^2 (D_m^T D_m)^+), sigma_t
      recomputed every iteration (algorithms.sharing.authors_sigma) with the same multiplier sqrt(2 ln(1.25/delta))
      / epsilon; not covered by the paper's proof;
    * `eq7_literal`: Theorem 1's sigma_m put on x_m (eq. (7) read literally).
    `histories`: {variant: its `eps_run`} computed elsewhere (the item's parts); the ones missing run here."""
    panel = params["panels"][dataset]
    prob = _panel_problem(dataset, params, root)
    T, R = int(panel["iterations"]), int(params["repeats"])
    cal = _eps_calibration(prob, params, dataset)
    eps, M = cal["epsilons"], len(cal["C"])
    E = len(eps)
    if panel.get("published") and len(panel["published"]) != E:
        raise ValueError(f"{dataset}: published needs one value per epsilon ({E}), got {len(panel['published'])}")
    histories = histories or {}

    def history(var):
        return histories[var] if histories.get(var) is not None else eps_run(prob, dataset, params, var, cal)

    runs = {}
    for var in progress([v for v in eps_variants(params) if v != AS_RUN_NOISE_FREE], f"{dataset} epsilons",
                        name=lambda v: v or "default"):
        h = history(var)
        Rv = h.traces["test_logloss_clean"].shape[0] // E
        runs[var] = {"history": h, "test_clean": h.traces["test_logloss_clean"][:, -1].reshape(E, Rv),
                     "test_noisy": h.traces["test_logloss"][:, -1].reshape(E, Rv),
                     "sigma_party1": h.meta["sigma_t"][:, :, 0].reshape(E, Rv, T)}
    # the noise-free run as the authors ran it, beside their published noise-free run
    clean_as_run = history(AS_RUN_NOISE_FREE) if AS_RUN_NOISE_FREE in eps_variants(params) else None
    spends = runs[None]["history"].spends              # one per run and party, run-major
    acct = [release_totals(spends[k * R * M], float(params["accounting_delta"])) for k in range(E)]  # party 1
    ref = cal["reference"]
    return {"problem": prob, "reference": ref, "runs": runs, "b1": cal["b1"], "C": cal["C"], "sigma": cal["sigma"],
            "multiplier": cal["multiplier"], "epsilons": eps, "T": T,
            "reference_test": float(ref.traces["test_logloss_clean"][0, -1]),
            "accounting": acct, "sklearn": sklearn_lines(prob, params, lam_sum(params, prob["n_train"])),
            "clean_as_run": clean_as_run,
            "published": panel.get("published"), "published_noise_free": panel.get("published_noise_free")}


def eps_metrics(dataset: str, res: dict) -> tuple[dict, dict]:
    p = f"{dataset}."
    m = {p + "status": "ok", p + "b1": res["b1"], p + "iterations": res["T"],
         p + "noise_free_test_logloss": res["reference_test"]}
    m.update({p + k: v for k, v in references(res["problem"]).items()})
    if res["clean_as_run"] is not None:
        m[p + f"noise_free_test_logloss@{AS_RUN}"] = float(res["clean_as_run"].traces["test_logloss_clean"][0, -1])
        if res["published_noise_free"] is not None:
            m.update(published_comparison(p, ["noise_free"], [res["published_noise_free"]],
                                          [[m[p + f"noise_free_test_logloss@{AS_RUN}"]]], str))
    if AS_RUN in res["runs"]:
        if res["published"]:
            m.update(published_comparison(p, res["epsilons"], res["published"], res["runs"][AS_RUN]["test_clean"],
                                          lambda e: f"eps{float(e):g}"))
        st = res["runs"][AS_RUN]["history"].meta["solver_stats"]
        m.update({f"{p}as_run.{k}": float(v.mean()) for k, v in st.items()})
    for var, sk in res["sklearn"].items():
        sfx = f"@{var}" if var else ""
        m.update({p + "sklearn_party1" + sfx: sk["party1"], p + "sklearn_all" + sfx: sk["all"],
                  p + "sklearn_C" + sfx: sk["C"]})
    m.update({f"{p}C.party{k + 1}": c for k, c in enumerate(res["C"])})
    reps = {}
    for k, e in enumerate(res["epsilons"]):
        q = f"{p}eps{e:g}."
        m.update({q + key: val for key, val in res["accounting"][k].items()})
        m[q + "cor1_vacuous"] = bool(res["accounting"][k]["cor1_delta"] >= 1.0)
        for var, run in res["runs"].items():
            sfx = f"@{var}" if var else ""
            put(m, reps, q + "test_logloss", run["test_clean"][k], var)
            put(m, reps, q + "test_logloss_noisy_x", run["test_noisy"][k], var)
            m[q + "sigma_party1" + sfx] = float(np.median(run["sigma_party1"][k]))   # median over repeats, steps
            if var in (AUTHORS, AS_RUN):
                m[q + "sigma_party1_max" + sfx] = float(np.max(run["sigma_party1"][k]))
    return m, reps


def release_totals(record, accounting_delta: float) -> dict:
    """What one party's recorded release (a `Spend` of Theorem 1's mechanism) totals to: its noise multiplier
    sigma_m / C_m, Corollary 1's (epsilon', T delta + delta') as the paper states it, and dp-accounting's tight PLD and
    RDP epsilon of the same record at `accounting_delta`."""
    args = record.bound_args
    t = bounds.tight_totals(record, accounting_delta)
    return {"noise_multiplier": args["noise_multiplier"], "cor1_epsilon": t["paper_eps"],
            "cor1_delta": bounds.corollary1_delta(args["delta"], args["T"], args["delta_prime"]),
            "pld_epsilon": t["pld_eps"], "rdp_epsilon": t["rdp_eps"]}


def corollary1_table(epsilons, Ts, delta_prime: float) -> dict:
    """eq. (10) for a grid (the examples of docs/choices.md#hu-privacy): {'cor1_example.eps{e}.T{T}': eps'}."""
    return {f"cor1_example.eps{e:g}.T{T}": bounds.corollary1_epsilon(e, T, delta_prime)
            for e in epsilons for T in Ts}


def composed_table(epsilon: float, delta: float, Ts, accounting_delta: float) -> dict:
    """Tight total epsilon (dp-accounting PLD) of T Theorem-1 Gaussian steps at per-step (epsilon, delta): the
    record of a release calibrated by Theorem 1 (sigma = C sqrt(2 ln(1.25/delta)) / epsilon, here C = 1)."""
    sigma = float(bounds.theorem1_sigma(1.0, epsilon, delta, strict=False))
    return {f"pld_example.eps{epsilon:g}.T{T}": bounds.tight_totals(bounds.spend(sigma, 1.0, T), accounting_delta)
            ["pld_eps"] for T in Ts}


def theorem1_step_table(epsilons, delta: float) -> dict:
    """Theorem 1 for a true sensitivity bound C: the tight epsilon (dp-accounting PLD) of one Gaussian release with
    sigma = C sqrt(2 ln(1.25/delta)) / epsilon, accounted at the same delta: {'theorem1_step.eps{e}.pld_eps': ...}.
    At most epsilon where the classical calibration (Dwork & Roth [17], Thm. A.1; the paper's source) holds, which
    Theorem 1 restricts to epsilon <= 1. Whether Lemma 1's C bounds the sensitivity is another question (the audits)."""
    out = {}
    for e in epsilons:
        sigma = float(bounds.theorem1_sigma(1.0, e, delta, strict=False))
        out[f"theorem1_step.eps{e:g}.pld_eps"] = bounds.tight_totals(bounds.spend(sigma, 1.0, 1), delta)["pld_eps"]
    return out


def accounting_table(m: dict, dataset: str, epsilons, accounting_delta: float) -> str:
    """Markdown: each curve of the eps sweep with its total epsilon where an accounting applies (from the metrics)."""
    p, T = f"{dataset}.", m[f"{dataset}.iterations"]
    rows = [f"| per-iteration epsilon | curve | test log loss | total epsilon after T = {T} |", "|---|---|---|---|"]
    for e in epsilons:
        q = f"{p}eps{float(e):g}."
        rows.append(f"| {float(e):g} | Theorem 1 as stated (per-sample noise on D_m x_m, C of Lemma 1) | "
                    f"{m[q + 'test_logloss']:.4f} | dp-accounting PLD {m[q + 'pld_epsilon']:.4g} at delta = "
                    f"{accounting_delta:g}; Corollary 1 {m[q + 'cor1_epsilon']:.4g} at delta = "
                    f"{m[q + 'cor1_delta']:.3g}" + (" (vacuous)" if m[q + "cor1_vacuous"] else "") + " |")
        if q + f"test_logloss@{AUTHORS}" in m:
            rows.append(f"| {float(e):g} | the authors' calibration (D_m xi, xi ~ N(0, sigma_t^2 (D_m^T D_m)^+)) | "
                        f"{m[q + f'test_logloss@{AUTHORS}']:.4f} | none: not covered by the paper's proof (the "
                        f"noise lies in the column space of D_m) |")
        if q + f"test_logloss@{EQ7}" in m:
            rows.append(f"| {float(e):g} | eq. (7) read literally (Theorem 1's sigma on x_m) | "
                        f"{m[q + f'test_logloss@{EQ7}']:.4f} | none: not Theorem 1's mechanism |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------------- figures
NOISE_LABEL = {None: "noise on D_m x_m (Theorem 1; the authors' runs)", EQ7: "eq. (7) literally: noise on x_m",
               Z_CODE: "the authors' z-step (2 rho), exact solves", AS_RUN: "as the authors ran it (their solvers, 2 rho)"}


def variant_label(var) -> str:
    """A run's label in the figures: NOISE_LABEL's, or an alternative penalty rho's."""
    return NOISE_LABEL.get(var) or (f"rho = {var[3:]} (the paper states none; code: 1)" if str(var).startswith("rho")
                                    else str(var))


def _eps_note(privacy: dict, s: float, delta: float) -> str:
    e = privacy.get(f"theorem1_epsilon.{sigma_key(s)}")
    return "" if e is None else f" (Theorem 1: eps = {e:.3g} per iteration at delta = {delta:g})"


def plot_convergence(res: dict, params: dict, dataset: str):
    """The paper's form (the authors' plot script): (a) training objective and test log loss of ADMM sharing and
    FDML-SGD on one linear axis over the first `figure.a_epochs` epochs; (b) test log loss of ADMM sharing without
    noise and at each noise level of panel (b) (noise on the shared values, mean over repeats), over the first
    `figure.b_epochs` epochs, each level labelled with the per-iteration epsilon it buys under Theorem 1."""
    import matplotlib.pyplot as plt

    fig_p = params.get("figure", {})
    ea, eb = int(fig_p.get("a_epochs", 50)), int(fig_p.get("b_epochs", 50))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    admm, sgd, noisy = res["admm"], res["sgd"], res["noisy"]
    def window(tr, start, stop):               # epochs start..stop (fewer when the run is shorter)
        y = tr[start:stop + 1]
        return np.arange(start, start + y.size), y

    for tr, style, name in ((admm.traces["objective"][0], "k-", "ADMM train log loss + regulariser"),
                            (admm.traces["test_logloss_clean"][0], "k--", "ADMM test log loss"),
                            (sgd.traces["objective"][0], "b-", "SGD train log loss + regulariser"),
                            (sgd.traces["test_logloss"][0], "b--", "SGD test log loss")):
        a.plot(*window(tr, 1, ea), style, label=name)
    a.set(xlabel="epoch", ylabel="loss", xlim=(0, ea), title=f"(a) {dataset}")
    if fig_p.get("a_ylim"):
        a.set_ylim(*fig_p["a_ylim"])
    R = int(params["repeats"])
    b.plot(*window(admm.traces["test_logloss_clean"][0], 0, eb), "r-", label="standard deviation 0")
    delta = float(params["privacy_delta"])
    styles = ["k--", "b-", "r--", "k-", "b--"]
    if len(params["noise_sigmas"]) > len(styles):   # zip would drop the extra levels from the figure silently
        raise ValueError(f"noise_sigmas: at most {len(styles)} levels can be drawn, got {len(params['noise_sigmas'])}")
    for k, (s, style) in enumerate(zip(params["noise_sigmas"], styles) if None in noisy else []):
        tr = noisy[None].traces["test_logloss_clean"][k * R:(k + 1) * R].mean(0)
        b.plot(*window(tr, 0, eb), style, label=f"standard deviation {s:g}{_eps_note(res['privacy'], s, delta)}")
    b.set(xlabel="epoch", ylabel="testing loss", xlim=(0, eb), title=f"(b) {dataset}: noise on the shared values")
    if fig_p.get("b_ylim"):
        b.set_ylim(*fig_p["b_ylim"])
    for ax in (a, b):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_convergence_more(res: dict, params: dict, dataset: str):
    """Our additions: (a) training objective minus the centralised optimum (log scale) over every epoch run, SGD to its
    last epoch and every noise-free variant (the authors' z-step, each rho, as the authors ran it); (b) test log loss of
    every noisy run with its variants, the authors' published noise-free run, and the update from which the
    convergence claims read (settle_horizon - 1)."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    admm, sgd, noisy = res["admm"], res["sgd"], res["noisy"]
    opt = res["objective_opt"]
    read = int(params["sgd"]["read_at"])
    gap = lambda tr: np.maximum(tr - opt, 1e-12)  # noqa: E731 - the optimum is the minimum; clip round-off
    a.plot(gap(admm.traces["objective"][0]), label="ADMM sharing (sigma = 0)")
    for var, h in res.get("clean_variants", {}).items():
        a.plot(gap(h.traces["objective"][0]), ls="--", label=f"ADMM sharing, {variant_label(var)}")
    a.plot(gap(sgd.traces["objective"][0]), label=f"FDML-SGD (lr = {res['lr']:g})")
    a.axvline(read, color="grey", ls=":", lw=1)
    a.set(xlabel="epoch t (iterate after t updates)", ylabel="training objective minus centralised optimum",
          yscale="log", title=f"(a) {dataset}: optimum {opt:.4f} subtracted")
    b.plot(admm.traces["test_logloss_clean"][0], color="k", label="ADMM sharing (sigma = 0)")
    if params.get("published_noise_free"):
        pub = np.asarray(params["published_noise_free"], dtype=float)[:admm.traces["test_logloss_clean"].shape[1]]
        b.plot(pub, "m:", lw=2, label="the authors' published noise-free run")
    h_start = int(params["settle_horizon"]) - 1
    b.axvline(h_start, color="m", ls=":", lw=1)
    R = int(params["repeats"])
    for var, h in noisy.items():
        for k, s in enumerate(params["noise_sigmas"]):
            b.plot(h.traces["test_logloss_clean"][k * R:(k + 1) * R].mean(0), lw=1, ls="-" if var is None else "--",
                   label=f"ADMM, sigma = {s:g}, {variant_label(var)}")
    b.plot(sgd.traces["test_logloss"][0], label=f"FDML-SGD (read at epoch {read})")
    b.axvline(read, color="grey", ls=":", lw=1)
    b.set(xlabel="epoch t (iterate after t updates)", ylabel="test log loss (noise-free x)", yscale="log",
          title=f"(b) {dataset}: every run and variant")
    for ax in (a, b):
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _unavailable(ax, dataset: str, reason: str):
    ax.text(0.5, 0.5, f"{dataset}\n{UNAVAILABLE}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _panel_axes(panels: dict, reasons: dict, width: float, height: float):
    """One axis per dataset panel, an unavailable dataset's saying so: (figure, [(axis, dataset, result, tag)] of the
    available panels)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), height), squeeze=False)
    live = []
    for ax, (ds, res), tag in zip(axes[0], panels.items(), "abcdef"):
        if res is None:
            _unavailable(ax, ds, reasons.get(ds, ""))
            ax.set_title(f"({tag}) {ds}")
        else:
            live.append((ax, ds, res, tag))
    return fig, live


def plot_noise(panels: dict, reasons: dict):
    """The paper's form (the authors' plot script): per dataset, the noise levels as equally spaced categories, the test
    log loss of ADMM sharing at each (noise on the shared values, the paper's z-step, mean over repeats) and the two
    sklearn baselines as lines (full features, party 1's features), linear axes."""
    fig, live = _panel_axes(panels, reasons, 5.5, 4.0)
    for ax, ds, res, tag in live:
        s, t = res["sigmas"], res["read_at"]
        x = np.arange(s.size)
        sk = res["sklearn"][None]
        ax.plot(x, np.full(s.size, sk["all"]), "r--", lw=2, label="Full features (centralized training)")
        ax.plot(x, np.full(s.size, sk["party1"]), "b--", lw=2, label="Local features only")
        ax.plot(x, res["runs"][None]["clean"][t].mean(1), "k-", lw=2, label="ADMM with noise")
        _noise_axis(ax, s, "standard deviation of added Gaussian noise", f"test log loss after {t} updates",
                    f"({tag}) {ds}", 7)
    fig.tight_layout()
    return fig


def _noise_axis(ax, sigmas, xlabel: str, ylabel: str, title: str, legend_size: int):
    """The noise levels as equally spaced categories, labels, legend and grid of a Fig. 3 panel."""
    ax.set_xticks(np.arange(len(sigmas)), [f"{v:g}" for v in sigmas])
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=legend_size)
    ax.grid(alpha=0.3)


def plot_noise_variants(panels: dict, reasons: dict, delta: float):
    """Our additions to Fig. 3: every variant's curve (eq. (7) literally, the authors' z-step with exact solves, as the
    authors ran it) with its run-to-run spread, the authors' published values, sklearn's defaults, and the
    per-iteration epsilon each level buys under Theorem 1 (top axis)."""
    fig, live = _panel_axes(panels, reasons, 6.0, 4.4)
    for ax, ds, res, tag in live:
        s, t = res["sigmas"], res["read_at"]
        x = np.arange(s.size)
        # linear axis scaled to every curve but eq. (7)'s, whose values run far above; its points beyond the top are
        # drawn at the top edge with their values, so they do not hide where the other curves cross party 1's line
        inside = [run["clean"][t].mean(1) for var, run in res["runs"].items() if var != EQ7]
        inside += [np.asarray(res["published"] or [], float)] + [[sk["all"], sk["party1"]]
                                                                   for sk in res["sklearn"].values()]
        lo, hi = min(np.min(v) for v in inside if len(v)), max(np.max(v) for v in inside if len(v))
        pad = 0.08 * (hi - lo)
        ax.set_ylim(lo - pad, hi + pad)
        for (var, run), mk in zip(res["runs"].items(), "osx^"):
            v = run["clean"][t]
            mean = v.mean(1)
            shown = mean <= hi + pad
            ax.errorbar(x[shown], mean[shown], yerr=v.std(1, ddof=1)[shown] if v.shape[1] > 1 else None,
                        fmt=mk + "-", lw=1, capsize=3, label=f"ADMM sharing, {NOISE_LABEL[var]}")
            for xi, val in zip(x[~shown], mean[~shown]):
                ax.annotate(f"{val:.3g}", (xi, hi + pad), xytext=(0, -12), textcoords="offset points", fontsize=6,
                            ha="center", color="tab:orange", arrowprops={"arrowstyle": "->", "color": "tab:orange"})
        if res["published"] is not None:
            ax.plot(x, res["published"], "D", mfc="none", color="m", ms=8,
                    label=f"the authors' published runs (after {res['published_read_at']} updates)")
        for var, sk in res["sklearn"].items():
            how = f"C = {sk['C']:g}" + (", sklearn defaults" if var else ", as the authors ran it")
            ax.axhline(sk["all"], color="g", ls=":" if var is None else "-.", lw=1, label=f"sklearn LR, all ({how})")
            ax.axhline(sk["party1"], color="r", ls=":" if var is None else "-.", lw=1,
                       label=f"sklearn LR, party 1 only ({how})")
        eps = [res["privacy"].get(f"theorem1_epsilon.{sigma_key(v)}") for v in s]
        top = ax.secondary_xaxis("top")
        top.set_xticks(x, ["-" if e is None else f"{e:.3g}" for e in eps], fontsize=7)
        top.set_xlabel(f"per-iteration epsilon under Theorem 1 (delta = {delta:g}, observed C_1)", fontsize=7)
        _noise_axis(ax, s, "noise level sigma", f"test log loss after {t} updates (mean +- sd over repeats)",
                    f"({tag}) {ds}: variants (values off the scale written at the top)", 6)
    fig.tight_layout()
    return fig


def plot_eps(panels: dict, reasons: dict, delta: float):
    import matplotlib.pyplot as plt

    labels = {None: "Theorem 1 as stated (per-sample noise, C of Lemma 1)",
              AUTHORS: "the authors' calibration, exact solves, the paper's z-step (no proof)",
              AS_RUN: "the authors' calibration as the authors ran it (their solvers, 2 rho; no proof)",
              EQ7: "eq. (7) literally (Theorem 1's sigma on x_m)"}
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (ds, res) in zip(axes[0], panels.items()):
        if res is None:
            _unavailable(ax, ds, reasons.get(ds, ""))
            ax.set_title(ds)
            continue
        e = res["epsilons"]
        for (var, run), mk in zip(res["runs"].items(), "os^x"):
            v = run["test_clean"]
            ax.errorbar(e, v.mean(1), yerr=v.std(1, ddof=1) if v.shape[1] > 1 else None, fmt=mk + "-", lw=1,
                        capsize=3, label=labels[var])
        if res["published"] is not None:
            ax.plot(e, res["published"], "D", mfc="none", color="m", ms=8, label="the authors' published runs")
        ax.axhline(res["reference_test"], color="k", ls=":", label="ADMM sharing, no noise")
        ax.axhline(res["sklearn"][None]["party1"], color="r", ls=":", label="sklearn LR, party 1 only (C = 1/lambda)")
        ax.set(xscale="log", yscale="log", xlabel="per-iteration epsilon",
               ylabel=f"test log loss of x after {res['T']} updates (mean +- sd)",
               title=f"{ds}: per-iteration delta = {delta:g}")
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------------- items
def run_convergence(params: dict) -> dict:
    """Fig. 1 (a9a) / Fig. 2 (gisette): `convergence_item` on the item's dataset, with its parameters."""
    dataset = params["datasets"][0]
    return {"params": params, "dataset": dataset, **convergence_item(dataset, params)}


def metrics_convergence(result: dict) -> dict:
    m, reps = convergence_metrics(result, result["params"])
    return {"metrics": m, "repeats": reps}


def table_convergence(result: dict, metrics: dict) -> str:
    """FDML-SGD's learning rate (the objective after the selection epochs for each candidate) and the wall time of
    one ADMM sharing update (6)-(9) of all parties (the z-step and the dual step included, evaluation excluded; the
    one-time Cholesky factorisation apart)."""
    t = result["admm"].meta["iter_time_s"] * 1e3
    scores = ", ".join(f"{lr}: {v:.4g}" for lr, v in result["lr_scores"].items())
    return "\n".join(["| quantity | value |", "|---|---|",
                      f"| FDML-SGD learning rate (chosen on the grid) | {result['lr']:g} |",
                      f"| objective after selection, per candidate | {scores} |",
                      f"| ADMM per-iteration time, median / min / max (ms) | {np.median(t):.2f} / {t.min():.2f} / "
                      f"{t.max():.2f} over {t.size} iterations |",
                      f"| ADMM factorisation (s) | {result['admm'].meta['setup_time_s']:.3f} |"])


def _plot_convergence_item(name: str, result: dict) -> dict:
    return {name: plot_convergence(result, result["params"], result["dataset"]),
            f"{name}_more": plot_convergence_more(result, result["params"], result["dataset"])}


run_fig1 = run_fig2 = run_convergence
metrics_fig1 = metrics_fig2 = metrics_convergence
table_fig1 = table_fig2 = table_convergence


def plot_fig1(result: dict) -> dict:
    """{"fig1": the paper's form, (a) training objective and test log loss, (b) test log loss under noise, against
    epochs on a9a; "fig1_more": our additions}."""
    return _plot_convergence_item("fig1", result)


def plot_fig2(result: dict) -> dict:
    """{"fig2": the paper's form of Fig. 2 (gisette), "fig2_more": our additions}."""
    return _plot_convergence_item("fig2", result)


def _panels(params: dict, build) -> tuple[dict, dict]:
    """({dataset: build(dataset, params), or None when it is unavailable}, {unavailable dataset: reason})."""
    status = dataset_status(params["datasets"])
    panels = {ds: build(ds, params) if status[ds][0] else None
              for ds in progress(params["datasets"], "panels", name=lambda ds: f"panel {ds}")}
    return panels, {ds: status[ds][1] for ds, res in panels.items() if res is None}


def _panel_metrics(panels: dict, metrics_of) -> dict:
    metrics, repeats = {}, {}
    for ds, res in panels.items():
        if res is None:
            metrics[f"{ds}.status"] = UNAVAILABLE
            continue
        m, r = metrics_of(ds, res)
        metrics.update(m)
        repeats.update(r)
    return {"metrics": metrics, "repeats": repeats}


def _part_keys(params: dict, variants) -> list[str]:
    return [f"{ds}.{var or 'default'}" for ds in params["datasets"] for var in variants]


def _split_key(params: dict, key: str, variants) -> tuple[str, object]:
    """(dataset, variant) of a part key '<dataset>.<variant or default>'."""
    by_key = {f"{ds}.{var or 'default'}": (ds, var) for ds in params["datasets"] for var in variants}
    if key not in by_key:
        raise ValueError(f"{PAPER}: no part {key!r}; its parts: {', '.join(by_key)}")
    return by_key[key]


def _histories(params: dict, item: str, variants) -> dict[str, dict]:
    """{dataset: {variant: its History from the item's part, None where the part ran without its dataset}}."""
    out = {}
    for key, h in gather(PAPER, item, params).items():
        ds, var = _split_key(params, key, variants)
        out.setdefault(ds, {})[var] = h
    return out


# Figs. 3 and the eps sweep run as one part per dataset and run batch (the default, each variant): each batch draws
# from its own labelled streams, so a part computes exactly what the whole item computes, and the heaviest (the
# variant authors_as_run: an L-BFGS-B call per run, party and update) no longer waits for the others.
def parts_fig3(params: dict) -> list[str]:
    """One part per dataset and run batch of `noise_variants`: '<dataset>.<variant or default>'."""
    return _part_keys(params, noise_variants(params))


def part_fig3(params: dict, key: str) -> History | None:
    """One run batch of a Fig. 3 panel (`noise_run`); None when its dataset is unavailable."""
    ds, var = _split_key(params, key, noise_variants(params))
    if not dataset_status([ds])[ds][0]:
        return None
    _noise_reads(ds, params)
    return noise_run(_panel_problem(ds, params), ds, params, var)


def run_fig3(params: dict) -> dict:
    """Fig. 3: one `noise_panel` per available dataset, from the item's parts."""
    histories = _histories(params, "fig3", noise_variants(params))
    panels, reasons = _panels(params, lambda ds, p: noise_panel(ds, p, histories=histories.get(ds)))
    return {"params": params, "panels": panels, "reasons": reasons}


def plot_fig3(result: dict) -> dict:
    """{"fig3": the paper's form, "fig3_variants": our additions}."""
    return {"fig3": plot_noise(result["panels"], result["reasons"]),
            "fig3_variants": plot_noise_variants(result["panels"], result["reasons"],
                                                 float(result["params"]["privacy_delta"]))}


def metrics_fig3(result: dict) -> dict:
    return _panel_metrics(result["panels"], noise_metrics)


def run_eps_sweep(params: dict) -> dict:
    """The (epsilon, delta) runs (`eps_panel` per available dataset) and the examples: eq. (10) on the grid of docs/choices.md#hu-privacy
    and the tight total of T Theorem-1 steps at per-step (0.1, delta) for the same T."""
    ce = params["corollary_examples"]
    examples = corollary1_table(ce["epsilons"], ce["T"], params["delta_prime"])
    examples.update(composed_table(0.1, params["delta"], ce["T"], params["accounting_delta"]))
    examples.update(theorem1_step_table(ce["epsilons"], params["delta"]))
    histories = _histories(params, "eps_sweep", eps_variants(params))
    panels, reasons = _panels(params, lambda ds, p: eps_panel(ds, p, histories=histories.get(ds)))
    return {"params": params, "examples": examples, "panels": panels, "reasons": reasons}


def parts_eps_sweep(params: dict) -> list[str]:
    """One part per dataset and run batch of `eps_variants`: '<dataset>.<variant or default>'."""
    return _part_keys(params, eps_variants(params))


def part_eps_sweep(params: dict, key: str) -> History | None:
    """One run batch of an eps-sweep panel (`eps_run`); None when its dataset is unavailable."""
    ds, var = _split_key(params, key, eps_variants(params))
    if not dataset_status([ds])[ds][0]:
        return None
    panel = params["panels"][ds]
    if panel.get("published") and len(panel["published"]) != len(panel["epsilons"]):
        raise ValueError(f"{ds}: published needs one value per epsilon ({len(panel['epsilons'])}), got "
                         f"{len(panel['published'])}")
    return eps_run(_panel_problem(ds, params), ds, params, var)


def plot_eps_sweep(result: dict) -> dict:
    return {"eps_sweep": plot_eps(result["panels"], result["reasons"], result["params"]["delta"])}


def metrics_eps_sweep(result: dict) -> dict:
    out = _panel_metrics(result["panels"], eps_metrics)
    out["metrics"] = {**result["examples"], **out["metrics"]}
    return out


def table_eps_sweep(result: dict, metrics: dict) -> str:
    """Corollary 1 against tight accounting on the examples grid, then each curve of the sweep with its total."""
    params = result["params"]
    parts = ["Eq. (10) on the grid of docs/choices.md#hu-privacy (delta' as configured), the dp-accounting (PLD) epsilon of T composed "
             "Theorem-1 Gaussian steps at per-step (epsilon, delta) = (0.1, delta) for the same T, and of one Theorem-1 step "
             "at each epsilon of the grid (theorem1_step: C the true sensitivity, accounted at the same delta):", "",
             metrics_table(result["examples"])]
    for ds, res in result["panels"].items():
        if res is not None:
            parts += ["", f"**{ds}**", "", accounting_table(metrics, ds, params["panels"][ds]["epsilons"],
                                                           params["accounting_delta"])]
    return "\n".join(parts)
