"""XU (Xu et al., "Differentially Private ADMM Algorithms for Machine Learning"): Table I, Fig. 1 and Fig. 2.

Per item (table1, fig1, fig2): `run_<item>(params)` runs it (loading its datasets; a dataset that is not available
is recorded as not run), `plot_<item>(result)` returns its figures by file name, `metrics_<item>(result)` the keyword
arguments of `write_metrics` (flat metrics and per-repeat values), `table_<item>(result, metrics)` a Markdown table of
what the notebook shows. Figs. 1 and 2 are split into parts (`parts_<item>`, `part_<item>`: one job per dataset and
step size holding every T of the sweep, per reference run, per extra setting), combined by `run_<item>`. The claims of
config/claims/xu2020_dpaccadmm.yaml are judged by the report's claims engine only (experiments.common.claims_table),
never here.

Algorithms: "admm" and "acc_admm" are Algorithms 2 and 3 with sigma = 0; "dp_admm" (XU's DP-ADMM, not HUANG's) and
"dp_acc_admm" add N(0, sigma^2 I) to every gradient, sigma from Theorem 1.

Choices the paper leaves open, each a config key ([D] in config/config.yaml):
* Step size. The paper sets gamma = 1 and "eta as a constant on each dataset but differs among these datasets"
  (§V-B), nothing more. `eta: tuned` takes, per dataset, the step the noise-free methods tune to: the eta of
  `eta_grid` at which ADMM and AccADMM reach the lowest mean objective after `tune_iterations` iterations
  (algorithms.linearized.tune_step). The grid (0.25 ... 4 = 1/L_f, Lemma 5's bound 0 <= eta <= 1/L_f with the
  unit-norm rows' L_f = 1/4) is also swept: every claim is judged at every step of the grid and every T of
  `variants.iterations` (the paper states no T), as the variants eta<e>_T<T>.
* Features. The paper says nothing about them; Theorem 1 only needs a bound c on every per-sample gradient. Every
  dataset's rows are scaled to norm <= 1 (c = 1). `feature_scaling` adds, per dataset, LIBSVM's scaling of each
  feature to [-1, 1] by its training minimum and maximum before that (`minmax`; bio_train's raw features reach
  6.4e4, the three LIBSVM datasets come scaled); `variants.feature_scaling` runs it as the variant `minmax`.
* Noise. DP-ADMM and DP-AccADMM each draw from their own fresh Generators, created alike for the same (dataset,
  epsilon, repeat): the two methods (and every step size, every T, every rho) use the same draws P_t, so their
  differences are judged paired over the repeats. Metric keys of a variant V are `<key>@V`.

Trivial references (written by every item): F(x_0) (the objective at the starting point x_0 = 0, log 2), the
majority-class rate of the test split, and derived from them the objective gap F(x_0) - F*, the excess
F(x_0) - F(x_T) of staying at x_0 and the accuracy of the majority class.

Privacy: each private run records what it released (algorithms.linearized: one `Spend` per repeat, replace-one
neighbours, sensitivity 2c/n, Theorem 1 named as the paper bound); Fig. 2's totals are accounted from those records
(`privacy_metrics`), at the recorded 2c/n and at the sensitivity the noise was calibrated for (`sensitivity_factor`
c/n; 1 is the proof's c/n), never recomputed from (epsilon, delta) on the side.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ..algorithms import linearized as lin
from ..datasets import is_available, load, sidecar
from ..datasets.processed import atomic_write
from ..paths import resources_dir
from ..privacy import accounting
from ..privacy.bounds import xu2020
from ..privacy.spend import totals
from ..problems import fused_lasso as fl
from ..problems import logistic
from ..provenance import canonical_hash
from ..rng import repeat_generators
from .common import dataset_status
from .parts import gather
from .plotting import rows_table

PAPER = "xu2020_dpaccadmm"
ALGORITHMS = ("admm", "acc_admm", "dp_admm", "dp_acc_admm")
PRIVATE = ("dp_admm", "dp_acc_admm")
NOISE_FREE = {"dp_admm": "admm", "dp_acc_admm": "acc_admm"}  # each private method's noise-free counterpart
PAIRS = {"admm_pair": ("dp_admm", "admm"), "acc_pair": ("dp_acc_admm", "acc_admm")}
LABELS = {"admm": "ADMM", "acc_admm": "AccADMM", "dp_admm": "DP-ADMM", "dp_acc_admm": "DP-AccADMM"}
PANEL_ORDER = ("a8a", "a9a", "bio_train", "ijcnn1")  # the paper's panels (a)-(d)
REFERENCE_RUNS = {"admm": ("admm", "none"), "acc_admm": ("acc_admm", "none"),
                  "acc_admm_restart": ("acc_admm", "goldstein")}
FEATURE_SCALINGS = ("none", "minmax")
MEMO_VERSION = 2  # bumped when the graph estimation, the step rule or the tuning runs' numerics change what it holds

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


def eta_key(eta: float) -> str:
    """Key form of a step: 0.25 -> 'eta0.25'."""
    return f"eta{float(eta):g}"


def variant_name(eta: float, T: int) -> str:
    """The variant of step `eta` and `T` iterations: 'eta0.25_T30'."""
    return f"{eta_key(eta)}_T{int(T)}"


def at(key: str, variant: str) -> str:
    """The metric key of `key` under `variant` ("" is the default): 'F_T.admm.a9a' -> 'F_T.admm.a9a@T30'."""
    return f"{key}@{variant}" if variant else key


# ------------------------------------------------------------------------------------------------- the settings
def eta_grid(params: dict) -> list[float]:
    """The step sizes tuned over and swept (`eta_grid`), ascending."""
    grid = params.get("eta_grid", [0.25, 1.0, 4.0, 16.0, 64.0, 256.0])
    if not grid or any(not isinstance(e, (int, float)) or isinstance(e, bool) or not e > 0 for e in grid):
        raise ValueError(f"eta_grid must be a non-empty list of positive numbers, got {grid!r}")
    return sorted({float(e) for e in grid})


def configured_eta(params: dict, name: str):
    """`eta` for dataset `name`: "tuned" or a positive number (from a number or a mapping dataset -> either)."""
    eta = params.get("eta", "tuned")
    if isinstance(eta, dict):
        eta = eta.get(name, "tuned")
    if eta == "tuned":
        return eta
    if not (isinstance(eta, (int, float)) and not isinstance(eta, bool) and eta > 0):
        raise ValueError(f"eta must be 'tuned', a positive number or a mapping dataset -> either, got {eta!r}")
    return float(eta)


def steps_of(params: dict, name: str) -> list[float]:
    """Every step a figure runs on dataset `name`: the grid, and a configured number beside it."""
    eta = configured_eta(params, name)
    return sorted(set(eta_grid(params)) | ({eta} if eta != "tuned" else set()))


def sweep_T(params: dict) -> list[int]:
    """The T of every run of a figure: the headline `iterations` and `variants.iterations`."""
    Ts = (params.get("variants") or {}).get("iterations", [])
    if any(int(T) != T or T < 1 for T in Ts):
        raise ValueError(f"variants.iterations must be integers >= 1, got {Ts!r}")
    return sorted({int(params["iterations"]), *(int(T) for T in Ts)})


def swept(params: dict) -> bool:
    """Whether the figure sweeps (eta, T) as variants (a `variants` block is given)."""
    return bool(params.get("variants"))


def feature_scaling(params: dict, name: str) -> str:
    how = (params.get("feature_scaling") or {}).get(name, "none")
    if how not in FEATURE_SCALINGS:
        raise ValueError(f"feature_scaling.{name} must be one of {FEATURE_SCALINGS}, got {how!r}")
    return how


def scaling_variants(params: dict) -> dict[str, str]:
    """{dataset: its other feature scaling} of `variants.feature_scaling` (each the variant named after it)."""
    v = (params.get("variants") or {}).get("feature_scaling") or {}
    for name, how in v.items():
        if how not in FEATURE_SCALINGS:
            raise ValueError(f"variants.feature_scaling.{name} must be one of {FEATURE_SCALINGS}, got {how!r}")
    return {name: how for name, how in v.items() if how != feature_scaling(params, name)}


def scale_features(X_train: np.ndarray, X_test: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """`how` = "none": the features as they are; "minmax": each feature mapped to [-1, 1] by its training minimum
    and maximum (LIBSVM's svm-scale; the test split with the training split's map)."""
    if how == "none":
        return X_train, X_test
    if how != "minmax":
        raise ValueError(f"feature scaling must be one of {FEATURE_SCALINGS}, got {how!r}")
    from sklearn.preprocessing import MinMaxScaler

    scaler = MinMaxScaler(feature_range=(-1.0, 1.0)).fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test)


# ----------------------------------------------------------------------------------------------- problem set-up
@dataclass
class Setup:
    """One dataset ready for the algorithms: problem (11), its graph, the test data, the step size and the trivial
    references (F(x_0), the majority-class rate of the test split)."""

    name: str
    problem: fl.FusedLasso
    graph: fl.Graph
    X_test: object
    y_test: np.ndarray
    eta: float
    eta_source: str            # "tuned" (the grid rule) or "config"
    tuning: dict               # {eta: {"admm": F(x_T), "acc_admm": F(x_T)}} of the rule ({} when configured)
    features: str              # the feature scaling applied before the unit-norm rows
    max_row_norm_raw: float
    max_abs_feature_raw: float
    L_avg: float = float("nan")              # the averaged loss's smoothness (the lenient reading of L_f)
    eta_bound: float = float("inf")          # Lemma 5's 1/L under `eta_bound` (inf: no bound)
    eta_fastest: float = float("nan")        # the step the noise-free methods tune to without the bound

    @property
    def F_x0(self) -> float:
        return float(self.problem.objective(np.zeros(self.problem.d)))

    @property
    def majority_rate(self) -> float:
        return float(max(np.mean(self.y_test > 0), np.mean(self.y_test < 0)))

    def info(self) -> dict:
        """What a part keeps of its set-up (small: never the data)."""
        p = self.problem
        return {"name": self.name, "n": p.n, "d": p.d, "edges": self.graph.n_edges, "alpha_g": self.graph.alpha,
                "graph_seconds": self.graph.seconds, "L_f": p.L_f, "norm_AtA": p.norm_AtA, "eta": self.eta,
                "eta_source": self.eta_source, "tuning": self.tuning, "features": self.features,
                "F_x0": self.F_x0, "majority_rate": self.majority_rate, "max_row_norm_raw": self.max_row_norm_raw,
                "max_abs_feature_raw": self.max_abs_feature_raw, "positive_fraction_train": float(np.mean(p.y > 0)),
                "L_avg": self.L_avg, "eta_bound": self.eta_bound, "eta_fastest": self.eta_fastest}


def graph_options(params: dict, d: int) -> dict:
    g = params.get("graph", {})
    return {"alphas": tuple(g.get("alphas", fl.ALPHA_GRID)),
            "min_edges": int(round(g.get("min_edges_per_feature", 1) * d)),
            "max_edges": int(round(g.get("max_edges_per_feature", 5) * d)),
            "tol": float(g.get("tol", 1e-4)), "max_iter": int(g.get("max_iter", 200))}


def check_gamma(params: dict) -> float:
    """gamma as configured; the paper sets gamma = 1 (§V-B)."""
    gamma = params.get("gamma", 1.0)
    if not (isinstance(gamma, (int, float)) and not isinstance(gamma, bool) and gamma > 0):
        raise ValueError(f"gamma must be a positive number (the paper: 1), got {gamma!r}")
    return float(gamma)


def _memo_path(name: str, key: dict, root: Path | None) -> Path:
    return resources_dir(root) / "cache" / PAPER / f"{name}-{canonical_hash(key)}.json"


def _prepared(name: str, X: np.ndarray, y: np.ndarray, params: dict, features: str, root: Path | None):
    """(problem, graph, tuning) of one dataset, through a memo on disk.

    Every part of Figs. 1 and 2 starts from the same feature graph and the same tuned step; the graphical lasso
    (up to 15 s on a9a) and the tuning runs (10 s on bio_train) would otherwise run in each of about 60 jobs. The
    memo (resources/cache/xu2020_dpaccadmm/<dataset>-<hash>.json, written atomically) is keyed by the processed
    data's sha256 and every setting the graph and the rule depend on, so it only saves time: a missing or stale file
    is computed again, and the numbers are the same either way."""
    lam, rho, T_tune = float(params.get("lam", 1e-5)), float(params.get("rho", 1.0)), params.get("tune_iterations", 100)
    opts = graph_options(params, X.shape[1])
    tuned = configured_eta(params, name) == "tuned"
    key = {"version": MEMO_VERSION, "npz": (sidecar(name, root).get("npz") or {}).get("sha256"), "features": features,
           "graph": opts, "tuning": [lam, rho, check_gamma(params), params.get("u0", "paper"),
                                     params.get("restart", "none"), eta_grid(params), T_tune] if tuned else None}
    path = _memo_path(name, key, root)
    memo = json.loads(path.read_text()) if path.is_file() and key["npz"] else None
    if memo is not None:
        graph = fl.Graph(edges=np.asarray(memo["edges"], dtype=np.int64).reshape(-1, 2), d=X.shape[1],
                         alpha=memo["alpha"], seconds=memo["seconds"], tried=memo["tried"],
                         capped_from=memo["capped_from"])
        problem, _ = fl.build(X, y, lam, graph=graph)
        tuning = {float(e): r for e, r in memo["tuning"].items()}
        return problem, graph, tuning
    with threadpool_limits(limits=params.get("blas_threads", 1)):
        problem, graph = fl.build(X, y, lam, **opts)
        tuning = {}
        if tuned:
            _, tuning = lin.tune_step(problem, eta_grid(params), T=T_tune, rho=rho, gamma=check_gamma(params),
                                      u0=params.get("u0", "paper"), restart=params.get("restart", "none"), name=name)
    if key["npz"]:
        content = {"edges": graph.edges.tolist(), "alpha": graph.alpha, "seconds": graph.seconds,
                   "tried": {str(k): v for k, v in graph.tried.items()}, "capped_from": graph.capped_from,
                   "tuning": {str(e): r for e, r in tuning.items()}, "key": key}
        atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(content)))
    return problem, graph, tuning


def setup(name: str, params: dict, root: Path | None = None, features: str | None = None) -> Setup:
    """Load `name`, scale its features (`feature_scaling`, or `features`), scale rows to norm <= 1, estimate the
    feature graph and build problem (11); the step is the tuned one (`eta: tuned`) or the configured number."""
    data = load(name, root)
    features = features or feature_scaling(params, name)
    X_raw, X_test = scale_features(np.asarray(data["X_train"], dtype=np.float64),
                                   np.asarray(data["X_test"], dtype=np.float64), features)
    problem, graph, tuning = _prepared(name, X_raw, data["y_train"], params, features, root)
    eta = configured_eta(params, name)
    L_avg = averaged_smoothness(problem)
    bound = step_bound(problem.L_f, L_avg, eta_bound_reading(params))
    fastest = float("nan")
    if eta == "tuned":
        eta, fastest = choose_step(tuning, bound)
        source = "tuned"
    else:
        source = "config"
    raw = np.asarray(data["X_train"], dtype=np.float64)
    return Setup(name=name, problem=problem, graph=graph,
                 X_test=fl.as_compute_matrix(fl.normalise_rows(X_test)), y_test=np.asarray(data["y_test"], float),
                 eta=float(eta), eta_source=source, tuning=tuning, features=features,
                 max_row_norm_raw=float(np.linalg.norm(raw, axis=1).max()),
                 max_abs_feature_raw=float(np.abs(raw).max()), L_avg=L_avg, eta_bound=bound, eta_fastest=fastest)


ETA_BOUNDS = ("averaged", "worst_case", "none")


def eta_bound_reading(params: dict) -> str:
    """`eta_bound`: which reading of Lemma 5's L_f caps the tuned step ("averaged": the averaged loss's smoothness,
    the lenient reading and the default; "worst_case": 0.25 max_i ||l_i||^2; "none": no cap, outside Lemma 5)."""
    how = params.get("eta_bound", "averaged")
    if how not in ETA_BOUNDS:
        raise ValueError(f"eta_bound must be one of {ETA_BOUNDS}, got {how!r}")
    return how


def step_bound(L_f: float, L_avg: float, how: str) -> float:
    """Lemma 5's largest step 1/L_f ("If 0 <= eta <= 1/L_f"; Algorithm 1: eta < 1/L_F) under reading `how`."""
    if how not in ETA_BOUNDS:
        raise ValueError(f"eta_bound must be one of {ETA_BOUNDS}, got {how!r}")
    return {"averaged": 1.0 / L_avg, "worst_case": 1.0 / L_f, "none": float("inf")}[how]


def choose_step(tuning: dict, bound: float) -> tuple[float, float]:
    """(the tuned step, the step the tuning gives without the bound) from {eta: {"admm": F, "acc_admm": F}}: the
    step with the lowest mean noise-free F(x_T) among the steps <= `bound` (ties to the smaller step). The bound is
    the paper's (Lemma 5, Algorithm 1): a step beyond it is not the paper's algorithm, so the unbounded best is kept
    only as a reading. Raises when no step of the grid obeys the bound, or none of those is stable."""
    score = {float(e): 0.5 * (r["admm"] + r["acc_admm"]) for e, r in tuning.items()}
    if not score:
        raise ValueError("no tuning runs to choose a step from")
    fastest = min(score, key=lambda e: (score[e], e))
    allowed = {e: v for e, v in score.items() if e <= bound * (1 + 1e-12)}
    if not allowed:
        raise ValueError(f"no step of the grid {sorted(score)} is at most Lemma 5's bound {bound:.4g}")
    eta = min(allowed, key=lambda e: (allowed[e], e))
    if not np.isfinite(allowed[eta]):
        raise ValueError(f"every step at most Lemma 5's bound {bound:.4g} diverged: {sorted(allowed)}")
    return float(eta), float(fastest)


def noise_sigma(params: dict, n: int, epsilon, T: int | None = None) -> np.ndarray | float:
    """Theorem 1's sigma for T (default: the item's iterations), delta, mu, c and sensitivity factor."""
    return xu2020.sigma(epsilon, T=T or params["iterations"], n=n, delta=params.get("delta", xu2020.DELTA),
                        mu=params.get("mu", xu2020.MU), c=params.get("c", xu2020.C),
                        sensitivity_factor=params.get("sensitivity_factor", 1.0))


def run_algorithm(s: Setup, algorithm: str, params: dict, *, sigma=0.0, repeats: int = 1, rngs=None,
                  T: int | None = None, restart: str | None = None, eta: float | None = None,
                  rho: float | None = None) -> lin.LinearizedRun:
    """One batch of repeats of one of the four algorithms on a prepared dataset (at its step unless `eta` is
    given; raises DivergedError on a non-finite iterate)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    private = algorithm in PRIVATE
    theorem1 = {"delta": params.get("delta", xu2020.DELTA), "mu": params.get("mu", xu2020.MU)}
    with threadpool_limits(limits=params.get("blas_threads", 1)):
        return lin.run(s.problem, T=T or params["iterations"], eta=eta or s.eta,
                       rho=rho or params.get("rho", 1.0), gamma=check_gamma(params),
                       sigma=sigma if private else 0.0, accelerated=algorithm.endswith("acc_admm"),
                       repeats=repeats, rngs=rngs if private else None, u0=params.get("u0", "paper"),
                       restart=restart or params.get("restart", "none"), name=s.name,
                       gradient_bound=params.get("c", xu2020.C), bound_args=theorem1)


def noise_free_trace(s: Setup, algorithm: str, params: dict, T: int, eta: float | None = None,
                     rho: float | None = None):
    """(run, F(x_t) for t = 0..T) of a noise-free algorithm, checked stable (DivergedError names dataset and eta)."""
    if algorithm in PRIVATE:
        raise ValueError(f"noise_free_trace runs the noise-free algorithms only, got {algorithm!r}")
    run = run_algorithm(s, algorithm, params, T=T, eta=eta, rho=rho)
    with threadpool_limits(limits=1):
        return run, lin.check_stable(s.problem, run, s.name)


def objective_trace(s: Setup, run: lin.LinearizedRun) -> np.ndarray:
    """F(x_t) = f(x_t) + lambda ||A x_t||_1 on the training data for every repeat and t: (R, T+1)."""
    with threadpool_limits(limits=1):
        return s.problem.objective(run.x)


def noise_streams(params: dict, item: str, name: str, epsilons, R: int) -> list:
    """Fresh Generators, one per (epsilon, repeat): call once per private method, so that both methods (and every
    step size, T and rho) draw the same noise P_t for the same (dataset, epsilon, repeat)."""
    return [g for e in epsilons for g in repeat_generators(params.get("seed", 0), R, PAPER, item, name, eps_key(e))]


def part_key(name: str, what: str) -> str:
    return f"{name}.{what}"


def split_part_key(key: str, params: dict) -> tuple[str, str]:
    """('a9a', 'eta0.25') from 'a9a.eta0.25' (the dataset is the longest configured name the key starts with)."""
    for name in sorted(params["datasets"], key=len, reverse=True):
        if key.startswith(name + "."):
            return name, key[len(name) + 1:]
    raise ValueError(f"{PAPER}: part key {key!r} names no configured dataset ({params['datasets']})")


# ---------------------------------------------------------------------------------------------------- Table I
def table1_row(name: str, params: dict, root: Path | None = None) -> dict:
    """Counts from the processed sidecar and, for an available dataset, the graph, the step size and the references
    actually used."""
    ok, reason = is_available(name, root)   # a damaged sidecar or npz: this row is "not run", the others run
    row = {"dataset": name, "available": ok, "reason": reason,
           **{f"paper_{k}": v for k, v in TABLE1_PAPER[name].items()}}
    if not ok:
        return row
    arrays = sidecar(name, root)["arrays"]
    row.update(n_train=arrays["X_train"][0], n_test=arrays["X_test"][0], d=arrays["X_train"][1],
               lam=float(params.get("lam", 1e-5)))
    s = setup(name, params, root)
    info = s.info()
    grid = eta_grid(params)
    row.update(L_avg=s.L_avg, eta_steps_from_edge=steps_from_edge(s.eta, grid), eta_source=s.eta_source,
               eta_bound=s.eta_bound, eta_fastest=s.eta_fastest,
               eta_bound_binds=bool(s.eta_source == "tuned" and s.eta_fastest > s.eta))
    row["eta_times_L_avg"] = s.eta * row["L_avg"]
    row.update({f"c1.rho{r:g}": c1 for r, c1 in eq18_c1(s.problem, s.eta, params).items()})
    row.update({k: info[k] for k in ("edges", "alpha_g", "graph_seconds", "L_f", "norm_AtA", "eta", "F_x0",
                                      "majority_rate", "max_row_norm_raw", "max_abs_feature_raw", "features",
                                      "positive_fraction_train")},
               eta_times_L_f=s.eta * s.problem.L_f, gamma=check_gamma(params),
               gamma_min=lin.gamma_min(s.problem, s.eta, params.get("rho", 1.0)), tuning=s.tuning,
               edges_capped_from=s.graph.capped_from)
    return row


def table1_metrics(rows: list[dict]) -> dict:
    out = {}
    for r in rows:
        ds = r["dataset"]
        out[f"available.{ds}"] = r["available"]
        for key in ("n_train", "n_test", "d", "lam", "edges", "alpha_g", "graph_seconds", "eta", "L_f",
                    "eta_times_L_f", "gamma", "gamma_min", "norm_AtA", "max_row_norm_raw", "max_abs_feature_raw",
                    "F_x0", "majority_rate", "positive_fraction_train", "L_avg", "eta_times_L_avg",
                    "eta_steps_from_edge", "eta_fastest", "eta_bound", "eta_bound_binds",
                    *(k for k in r if k.startswith("c1.rho"))):
            if key in r:  # a non-finite number (no bound, no tuning) is written as null
                out[f"{key}.{ds}"] = r[key] if not isinstance(r[key], float) or np.isfinite(r[key]) else None
        for eta, row in (r.get("tuning") or {}).items():
            for alg, F in row.items():
                out[f"tune_F.{alg}.{ds}.{eta_key(eta)}"] = F if np.isfinite(F) else None  # inf: unstable there
    tuned = [r["eta"] for r in rows if r.get("eta_source") == "tuned"]
    if tuned:
        out["eta_distinct"] = len(set(tuned))  # how many different steps the tuned datasets use (§V-B: they differ)
    return out


def averaged_smoothness(problem) -> float:
    """The smoothness of the averaged logistic loss f(x) = (1/n) sum_i log(1 + exp(-m_i l_i^T x)): 0.25 times the
    largest eigenvalue of X^T X / n (scipy's Lanczos, `eigsh`). Assumption 1's L_f is any constant with
    ||grad f(x1) - grad f(x2)|| <= L_f ||x1 - x2||; this is the least such bound of the Hessian's form, against the
    worst case 0.25 max_i ||l_i||^2 that `FusedLasso.L_f` takes (a second reading of L_f, docs/choices.md#xu-step-size)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    X, n, d = problem.X, problem.n, problem.d
    op = LinearOperator((d, d), matvec=lambda v: X.T @ (X @ v) / n, dtype=float)
    return float(0.25 * eigsh(op, k=1, which="LA", return_eigenvectors=False, v0=np.ones(d))[0])


def steps_from_edge(eta: float, grid: list[float]) -> int:
    """How many grid steps lie between `eta` and the nearer end of `grid` (0: eta is an end, or not on the grid)."""
    if eta not in grid:
        return 0
    i = grid.index(eta)
    return min(i, len(grid) - 1 - i)


def eq18_c1(problem, eta: float, params: dict, rhos=(0.1, 1.0, 10.0)) -> dict:
    """eq. (18)'s constant c_1 = ||G||_2 / (2 eta) + rho ||A^T A||_2 / 2 + L_f ||A^+ (A^+)^T||_2 / (2 rho) at each rho,
    with G = gamma I - eta rho A^T A (gamma as configured, the paper's 1) and ||A^+ (A^+)^T||_2 = 1 / lambda_min(A^T A)
    (A = [W; I] has full column rank), L_f the worst-case 0.25 max_i ||l_i||^2. The paper's O() form (9) drops c_1;
    (18) itself has rho in two of its three terms."""
    lam = np.linalg.eigvalsh(problem.AtA)
    gamma = check_gamma(params)
    out = {}
    for rho in rhos:
        norm_G = float(np.max(np.abs(gamma - eta * rho * lam)))
        out[float(rho)] = norm_G / (2 * eta) + rho * lam[-1] / 2 + problem.L_f / (2 * rho * lam[0])
    return out


# ----------------------------------------------------------------------------------------------------- Fig. 1
def fig1_reference(s: Setup, params: dict, label: str) -> dict:
    """One long noise-free run for F* (`reference_iterations` at the step the tuning found fastest, inside Lemma 5's
    bound or not: F* is the problem's minimum, not a property of the method; the grid reaches beyond the stable
    steps, so its largest is no reference; F on `reference_evaluations`
    evenly spaced iterates and the last): {"F": ..., "t": ...}."""
    alg, restart = REFERENCE_RUNS[label]
    TL = params.get("reference_iterations", 5000)
    stride = max(1, TL // params.get("reference_evaluations", 500))
    eta = s.eta_fastest if np.isfinite(s.eta_fastest) else s.eta
    run = run_algorithm(s, alg, params, T=TL, restart=restart, eta=eta)
    idx = np.unique(np.r_[np.arange(0, TL + 1, stride), TL])
    run.x = run.x[:, idx]
    return {"F": objective_trace(s, run)[0], "t": idx, "eta": eta}


def reference_minimum(refs: dict) -> dict:
    """F* from the reference runs ({label: fig1_reference(...)}): the least objective of all of them, where it came
    from, how far the best one's objective still moved over its last tenth (max minus min there: F* is an upper bound
    on the minimum, settled to about that; a run still falling or oscillating shows here), and each run's last
    objective minus F*."""
    best = min(refs, key=lambda k: refs[k]["F"].min())
    F = refs[best]["F"]
    F_star = float(F.min())
    last = int(0.9 * (len(F) - 1))
    tail = F[last:]
    # How much the least objective still fell over the last tenth: F* is the least value, so it has settled when
    # the running minimum stops falling. The spread of the last tenth also counts the oscillation of AccADMM
    # without restart about the minimum, which leaves F* unchanged.
    return {"F_star": F_star, "source": best, "last_spread": float(tail.max() - tail.min()),
            "last_improvement": float(F[:last].min() - F_star) if last > 0 else float("nan"),
            "final_gap": {k: float(v["F"][-1] - F_star) for k, v in refs.items()}}


def cpu_per_iteration(s: Setup, params: dict, sigma: float) -> dict:
    """CPU seconds per iteration of each algorithm: one run of the headline T (one repeat, each iteration's noise
    draw inside the timer), the least of `timing_runs` rounds (the one least disturbed by other processes; the four
    algorithms take turns within a round, so a busy spell of the machine touches all of them alike)."""
    T = params["iterations"]
    best = {alg: np.inf for alg in ALGORITHMS}
    for k in range(params.get("timing_runs", 3)):
        for alg in ALGORITHMS:
            run = run_algorithm(s, alg, params, sigma=sigma, repeats=1, T=T,
                                rngs=repeat_generators(params.get("seed", 0), 1, PAPER, "fig1-timing", s.name, alg,
                                                       str(k)))
            best[alg] = min(best[alg], float(run.cpu_time[-1]) / T)
    return best


def fig1_step(s: Setup, params: dict, eta: float, T: int, timed: bool = True) -> dict:
    """Fig. 1's runs at one step and one T: the noise-free ADMM and AccADMM (checked stable) and the private ones at
    Fig. 1's epsilon (sigma from Theorem 1 at T), `repeats` runs at the dataset's own step and the headline T,
    `variants.repeats` elsewhere. Objective traces F(x_t) for every t (the private ones per run: (R, T+1)), test
    accuracy at T. At the dataset's own step and the headline T the CPU cost per iteration of each algorithm is
    measured too (`cpu_per_iteration`)."""
    default = eta == s.eta and T == params["iterations"]
    R = params["repeats"] if default else (params.get("variants") or {}).get("repeats", params["repeats"])
    e = params["epsilon"]
    out = {"eta": eta, "T": T, "sigma": noise_sigma(params, s.problem.n, e, T=T), "F": {}, "acc": {}}
    for alg in ALGORITHMS:
        if alg in PRIVATE:
            run = run_algorithm(s, alg, params, sigma=out["sigma"], repeats=R, T=T, eta=eta,
                                rngs=noise_streams(params, "fig1", s.name, [e], R))
            out["F"][alg] = objective_trace(s, run)
        else:
            run, F = noise_free_trace(s, alg, params, T=T, eta=eta)
            out["F"][alg] = F[None]
        with threadpool_limits(limits=1):
            out["acc"][alg] = fl.accuracy(s.X_test, s.y_test, run.x_T)
    if default and timed:
        out["cpu_per_iter"] = cpu_per_iteration(s, params, out["sigma"])
    return out


def first_passage(gap: np.ndarray, level) -> np.ndarray:
    """When each row of `gap` (..., T+1) first reaches `level` (a number, or one per row), in iterations: the first t with gap_t <= level, less
    the fraction of the step from t - 1 to t still to go (linear in log gap), so that runs which cross in the same
    iteration are told apart; NaN where a row never reaches it (and for a NaN level)."""
    gap = np.asarray(gap, dtype=float)
    level = np.asarray(level, dtype=float)[..., None] if np.ndim(level) else level  # a level per row
    below = gap <= level
    gap = np.broadcast_to(gap, below.shape)
    t = np.argmax(below, axis=-1)
    level = level[..., 0] if np.ndim(level) else level
    prev = np.take_along_axis(gap, np.maximum(t - 1, 0)[..., None], axis=-1)[..., 0]
    here = np.take_along_axis(gap, t[..., None], axis=-1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.log(prev / level) / np.log(prev / here)
    crossing = np.where(t > 0, t - 1 + np.clip(frac, 0.0, 1.0), 0.0)
    return np.where(below.any(axis=-1), crossing, np.nan).astype(float)


FLOOR_FACTOR = 2.0  # [D] "at its floor": within this factor of the lowest gap the run reaches


def floor_of(gap: np.ndarray) -> float:
    """The least mean gap (over the runs, rows of `gap` (R, T+1)) after t = 0: where a private run levels off."""
    return float(np.min(np.asarray(gap).mean(0)[1:]))


def level_between(gap_x0: float, floor: float) -> float:
    """The gap level half way (geometrically) between the start's gap and a floor: a level a run that levels off
    at that floor passes on its way down, well above the floor. NaN if the floor is not below the start's gap."""
    return float(np.sqrt(gap_x0 * floor)) if 0 < floor < gap_x0 else float("nan")


def fig1_setting_metrics(name: str, r: dict, F_star: float, F_x0: float, longest: dict,
                         variant: str = "") -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset at one (step, T) setting (`fig1_step` result `r`), against
    F*; `variant` suffixes every key. `longest`: the noise-free traces of the longest T at the same step (the
    rates' gap ratios)."""
    out, reps = {}, {}

    def put(key, values):
        values = np.asarray(values, dtype=float)
        out[at(key, variant)] = float(np.mean(values)) if np.all(np.isfinite(values)) else float("nan")
        if values.size > 1:
            reps[at(key, variant)] = values

    T = r["T"]
    F = r["F"]
    gap = {a: F[a] - F_star for a in ALGORITHMS}
    gap_x0 = F_x0 - F_star
    out[at(f"sigma.{name}", variant)] = r["sigma"]
    out[at(f"eta.{name}", variant)] = r["eta"]
    out[at(f"iterations.{name}", variant)] = T
    for a in ALGORITHMS:
        put(f"gap_T.{a}.{name}", gap[a][:, -1])
        put(f"F_T.{a}.{name}", F[a][:, -1])
        put(f"second_half.{a}.{name}", gap[a][:, -1] / gap[a][:, T // 2])
        put(f"acc_T.{a}.{name}", r["acc"][a])
    for pair, (dp, np_) in PAIRS.items():
        put(f"excess_T.{pair}.{name}", F[dp][:, -1] - F[np_][0, -1])
        out[at(f"excess_x0.{pair}.{name}", variant)] = F_x0 - float(F[np_][0, -1])
        # how fast the private method gets half way (in log) to its floor, against its noise-free counterpart: in
        # iterations, which cost both the same work (the private one adds d normal draws to two products with the
        # n x d data), so equal work counts as equal time
        level = level_between(gap_x0, floor_of(gap[dp]))
        put(f"speed_ratio.{pair}.{name}", first_passage(gap[dp], level) / first_passage(gap[np_][0], level))
    # DP-AccADMM against DP-ADMM: the iterations each takes to get half way from x_2 to the higher of their floors.
    # Their iterates agree up to x_2 (the same draws, and Algorithm 3's first extrapolation weight is 0), so only a
    # level below x_2's gap can tell them apart; their work per iteration differs by O(|E| + d) vector operations.
    level = level_between(float(gap["dp_admm"].mean(0)[min(2, T)]),
                          max(floor_of(gap["dp_admm"]), floor_of(gap["dp_acc_admm"])))
    for a in PRIVATE:
        put(f"iters_to_level.{a}.{name}", first_passage(gap[a], level))
    # the whole run: how far each run ends above the lowest gap it reached (a run that levels off ends near it, one
    # whose momentum accumulates the noise climbs away from it), and the iterations to get within FLOOR_FACTOR of that
    # lowest gap, the whole descent to the floor rather than its first half
    for a in ALGORITHMS:
        put(f"end_over_min.{a}.{name}", gap[a][:, -1] / np.min(gap[a][:, 1:], axis=1))
    for pair, (dp, np_) in PAIRS.items():
        level = FLOOR_FACTOR * np.min(gap[dp][:, 1:], axis=1)   # per run
        with np.errstate(divide="ignore", invalid="ignore"):  # NaN where a floor lies above half the start's gap
            put(f"settle_ratio.{pair}.{name}", first_passage(gap[dp], level) / first_passage(gap[np_], level))
    level = FLOOR_FACTOR * np.maximum(np.min(gap["dp_admm"][:, 1:], axis=1), np.min(gap["dp_acc_admm"][:, 1:], axis=1))
    for a in PRIVATE:
        put(f"iters_to_floor.{a}.{name}", first_passage(gap[a], level))
    T_max = longest["admm"].size - 1  # the rates' ratio at a tenth, a third and the end of the longest run
    for label, t in (("t_tenth", T_max // 10), ("t_third", T_max // 3), ("t_end", T_max)):
        g = {a: float(longest[a][t] - F_star) for a in ("admm", "acc_admm")}
        out[at(f"gap_ratio.acc_over_admm.{name}.{label}", variant)] = g["acc_admm"] / g["admm"]
    for a in ("admm", "acc_admm"):  # each rate bound on its own: the fall of the gap from a tenth of the run to its end
        out[at(f"gap_fall.{a}.{name}", variant)] = (float(longest[a][T_max // 10] - F_star)
                                                    / float(longest[a][T_max] - F_star))
    for a in ("admm", "acc_admm"):
        out[at(f"max_rise.{a}.{name}", variant)] = float(np.max(np.diff(F[a][0])))
    return out, reps


def fig1_dataset_metrics(d: dict, params: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset's Fig. 1 parts: the default (its own step, the headline T)
    unsuffixed, and every (step, T) of the sweep as a variant eta<e>_T<T>; the references F(x_0), F(x_0) - F*, the
    majority-class rate; F* and its reference runs."""
    info, name, ref = d["info"], d["info"]["name"], d["reference"]
    F_star, F_x0 = ref["F_star"], info["F_x0"]
    T0 = params["iterations"]
    cpu = d["steps"][(info["eta"], T0)]["cpu_per_iter"]
    out = {f"F_star.{name}": F_star, f"F_star_last_spread.{name}": ref["last_spread"],
           f"F_star_last_improvement.{name}": ref["last_improvement"], f"F_x0.{name}": F_x0,
           f"gap_x0.{name}": F_x0 - F_star, f"majority_rate.{name}": info["majority_rate"],
           f"edges.{name}": info["edges"], f"graph_seconds.{name}": info["graph_seconds"]}
    out.update({f"reference_final_gap.{k}.{name}": v for k, v in ref["final_gap"].items()})
    out[f"diverged_settings.{name}"] = len(d.get("diverged", {}))
    out.update({at(f"diverged.{name}", v): why for v, why in d.get("diverged", {}).items()})
    out.update({f"cpu_per_iter.{a}.{name}": c for a, c in cpu.items()})
    out[f"lowest_short_minus_F_star.{name}"] = min(float(np.min(F)) for r in d["steps"].values()
                                                   for F in r["F"].values()) - F_star
    reps = {}
    settings = [("", (info["eta"], T0))] + [(variant_name(*k), k) for k in sorted(d["steps"]) if swept(params)]
    for variant, (eta, T) in settings:
        longest = d["steps"][(eta, max(t for e, t in d["steps"] if e == eta))]["F"]
        m, rp = fig1_setting_metrics(name, d["steps"][(eta, T)], F_star, F_x0,
                                     {a: longest[a][0] for a in ("admm", "acc_admm")}, variant)
        out.update(m)
        reps.update(rp)
    readings = ({"restart": d["restart"]} if d.get("restart") is not None else {}) | d.get("budgets", {})
    for variant, r in readings.items():  # the restart and other budgets: the headline setting, the same F*
        m, rp = fig1_setting_metrics(name, r, F_star, F_x0, {a: r["F"][a][0] for a in ("admm", "acc_admm")}, variant)
        out.update(m)
        reps.update(rp)
    for variant, r in d.get("scaled", {}).items():  # another feature scaling: its own F*, references and step
        m, rp = fig1_setting_metrics(name, r["step"], r["reference"]["F_star"], r["info"]["F_x0"],
                                     {a: r["step"]["F"][a][0] for a in ("admm", "acc_admm")}, variant)
        out.update(m)
        reps.update(rp)
        out[at(f"F_x0.{name}", variant)] = r["info"]["F_x0"]
        out[at(f"gap_x0.{name}", variant)] = r["info"]["F_x0"] - r["reference"]["F_star"]
    return out, reps


# ----------------------------------------------------------------------------------------------------- Fig. 2
def fig2_dataset(s: Setup, params: dict, *, T: int, epsilons, repeats: int, eta: float | None = None,
                 rho: float | None = None) -> dict:
    """F(x_T) on the training set and test accuracy of sign(l^T x_T) against epsilon for the four algorithms.

    All budgets and repeats of a private algorithm run in one batch (repeat axis = epsilon x repeat; each
    (epsilon, repeat) has its own Generator, created alike for both private algorithms). Per-repeat values are kept
    (F_T[alg]: (E, R)); the noise-free runs are checked stable and their objective traces kept. `spends`: what the
    private runs released, one `Spend` per (epsilon, repeat) in that order (both private algorithms spend the same).
    """
    eps = np.asarray(epsilons, dtype=float)
    sigma = np.asarray(noise_sigma(params, s.problem.n, eps, T=T))
    out = {"T": T, "eta": eta or s.eta, "epsilons": eps, "sigma": sigma, "F_T": {}, "acc_T": {}, "F_trace": {}}
    for alg in ALGORITHMS:
        if alg in PRIVATE:
            run = run_algorithm(s, alg, params, sigma=np.repeat(sigma, repeats), repeats=len(eps) * repeats, T=T,
                                rngs=noise_streams(params, "fig2", s.name, eps, repeats), eta=eta, rho=rho)
            xT = run.x_T.reshape(len(eps), repeats, -1)
            out["spends"] = run.spends
        else:
            run, out["F_trace"][alg] = noise_free_trace(s, alg, params, T=T, eta=eta, rho=rho)
            xT = run.x_T[None]  # (1, 1, d): deterministic
        with threadpool_limits(limits=1):
            out["F_T"][alg] = s.problem.objective(xT)
            out["acc_T"][alg] = fl.accuracy(s.X_test, s.y_test, xT)
    return out


def fig2_step(s: Setup, params: dict, eta: float, T: int) -> dict:
    """Fig. 2's runs at one step and one T: at the dataset's own step and the headline T every budget of `epsilons`
    with `repeats` runs (the figure), elsewhere the budgets of `variants.epsilons` with `variants.repeats` runs."""
    v = params.get("variants") or {}
    default = eta == s.eta and T == params["iterations"]
    eps = params["epsilons"] if default else v.get("epsilons", params["epsilons"])
    R = params["repeats"] if default else v.get("repeats", params["repeats"])
    return fig2_dataset(s, params, T=T, epsilons=eps, repeats=R, eta=eta)


def fig2_rho(s: Setup, params: dict) -> dict:
    """DP-ADMM and ADMM at the dataset's step and the headline T with the penalty rho of `rho_sweep.rhos` (the
    default rho = 1 is Fig. 2's own run), at `rho_sweep.epsilons` with `repeats` runs and the same noise draws:
    {rho: fig2_dataset result restricted to those two methods}."""
    rs = params.get("rho_sweep") or {}
    out = {}
    for rho in rs.get("rhos", []):
        eps = np.asarray(rs.get("epsilons", [0.05]), dtype=float)
        sigma = np.asarray(noise_sigma(params, s.problem.n, eps))
        R = params["repeats"]
        run = run_algorithm(s, "dp_admm", params, sigma=np.repeat(sigma, R), repeats=len(eps) * R,
                            rngs=noise_streams(params, "fig2", s.name, eps, R), rho=rho)
        base, F = noise_free_trace(s, "admm", params, T=params["iterations"], rho=rho)
        with threadpool_limits(limits=1):
            out[float(rho)] = {"epsilons": eps, "F_T": s.problem.objective(run.x_T.reshape(len(eps), R, -1)),
                               "F_T_admm": float(F[-1])}
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


def privacy_metrics(params: dict, r: dict) -> dict:
    """Theorem 1's noise at each budget and what exact accounting of the runs' records says it buys, at both
    sensitivities: the replace-one 2c/n of Definition 1's neighbours as recorded, and the sensitivity the noise was
    calibrated for (`sensitivity_factor` c/n; 1 is the proof's c/n, App. A). RDP (dp-accounting, all orders) and
    PLD (tight) totals at the item's delta. `r`: a `fig2_dataset` result (its budgets and `spends`). The noise
    multiplier sigma / (c/n) of Theorem 1 does not depend on the dataset, so neither do these keys."""
    delta, sf = params.get("delta", xu2020.DELTA), params.get("sensitivity_factor", 1.0)
    per_budget = len(r["spends"]) // len(r["epsilons"])
    out, ratios_rdp, ratios_rdp2 = {}, [], []
    for i, e in enumerate(r["epsilons"]):
        k = eps_key(e)
        record = r["spends"][i * per_budget]        # every repeat of a budget spends the same
        grid = accounting.pld_grid(e)
        calibrated = totals(xu2020.at_sensitivity(record, sf), delta, discretization=grid)
        replace_one = totals(record, delta, discretization=grid)
        vals = {"eps_rdp": calibrated["rdp_eps"], "eps_pld": calibrated["pld_eps"],
                "eps_rdp_replace_one": replace_one["rdp_eps"], "eps_pld_replace_one": replace_one["pld_eps"]}
        for key, v in vals.items():
            out[f"{key}.{k}"] = v
        out[f"eps_pld_replace_one_over_target.{k}"] = vals["eps_pld_replace_one"] / e
        ratios_rdp.append(vals["eps_rdp"] / e)
        ratios_rdp2.append(vals["eps_rdp_replace_one"] / e)
    out["eps_rdp_over_target_max"] = float(np.max(ratios_rdp))
    out["eps_rdp_replace_one_over_target_max"] = float(np.max(ratios_rdp2))
    return out


def fig2_setting_metrics(name: str, r: dict, info: dict, variant: str = "") -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset at one (step, T) setting (`fig2_dataset` result `r`);
    `variant` suffixes every key. References: F(x_0) and the majority-class rate (`info`), and per private method
    the excess F(x_0) - F(x_T) of its noise-free counterpart and the accuracy that counterpart gains over the
    majority class."""
    out, reps = {}, {}
    for a in ("admm", "acc_admm"):
        F = r["F_trace"][a]
        out[at(f"F_T.{a}.{name}", variant)] = float(r["F_T"][a][0, 0])
        out[at(f"acc_T.{a}.{name}", variant)] = float(r["acc_T"][a][0, 0])
        out[at(f"F_drop.{a}.{name}", variant)] = float(F[0] - F[-1])
        out[at(f"max_rise.{a}.{name}", variant)] = float(np.max(np.diff(F)))
    for a in PRIVATE:
        base = NOISE_FREE[a]
        out[at(f"excess_x0.{a}.{name}", variant)] = info["F_x0"] - float(r["F_T"][base][0, 0])
        out[at(f"acc_gain_x0.{a}.{name}", variant)] = float(r["acc_T"][base][0, 0]) - info["majority_rate"]
    for i, e in enumerate(r["epsilons"]):
        k = eps_key(e)
        out[at(f"sigma.{name}.{k}", variant)] = float(r["sigma"][i])
        for a in PRIVATE:
            base = NOISE_FREE[a]
            for key, values in ((f"F_T.{a}.{name}.{k}", r["F_T"][a][i]), (f"acc_T.{a}.{name}.{k}", r["acc_T"][a][i]),
                                (f"excess_F.{a}.{name}.{k}", r["F_T"][a][i] - r["F_T"][base][0, 0]),
                                (f"acc_loss.{a}.{name}.{k}", r["acc_T"][base][0, 0] - r["acc_T"][a][i])):
                out[at(key, variant)] = float(np.mean(values))
                reps[at(key, variant)] = np.asarray(values, dtype=float)
    out[at(f"eta.{name}", variant)] = r["eta"]
    out[at(f"iterations.{name}", variant)] = r["T"]
    return out, reps


def fig2_dataset_metrics(d: dict, params: dict) -> tuple[dict, dict]:
    """(flat metrics, per-repeat values) of one dataset's Fig. 2 parts: the default unsuffixed, every (step, T) of
    the sweep as a variant, the other feature scaling, the rho sweep, Theorem 2's predicted noise ratios."""
    info, name = d["info"], d["info"]["name"]
    out = {f"F_x0.{name}": info["F_x0"], f"majority_rate.{name}": info["majority_rate"],
           f"majority_gain.{name}": 0.0,  # the majority class's accuracy gain over itself: what acc_gain_x0 must beat
           f"edges.{name}": info["edges"], f"graph_seconds.{name}": info["graph_seconds"],
           f"sensitivity_witness.{name}": d["witness"], f"majority_error.{name}": 1.0 - info["majority_rate"],
           f"diverged_settings.{name}": len(d.get("diverged", {}))}
    out.update({at(f"diverged.{name}", v): why for v, why in d.get("diverged", {}).items()})
    reps = {}
    default_key = (info["eta"], params["iterations"])
    settings = [("", d["steps"][default_key])]
    if swept(params):
        v_eps = {eps_key(e) for e in (params.get("variants") or {}).get("epsilons", params["epsilons"])}
        for k in sorted(d["steps"]):
            r = d["steps"][k]
            if k == default_key:  # the default's own variant: its numbers on the variants' budgets
                keep = [i for i, e in enumerate(r["epsilons"]) if eps_key(e) in v_eps]
                r = {**r, "epsilons": r["epsilons"][keep], "sigma": r["sigma"][keep],
                     "F_T": {a: (v[keep] if a in PRIVATE else v) for a, v in r["F_T"].items()},
                     "acc_T": {a: (v[keep] if a in PRIVATE else v) for a, v in r["acc_T"].items()}}
            settings.append((variant_name(*k), r))
    for variant, r in settings:
        m, rp = fig2_setting_metrics(name, r, info, variant)
        out.update(m)
        reps.update(rp)
    for variant, sc in d.get("scaled", {}).items():
        m, rp = fig2_setting_metrics(name, sc["run"], sc["info"], variant)
        out.update(m)
        reps.update(rp)
        out[at(f"F_x0.{name}", variant)] = sc["info"]["F_x0"]
    for rho, r in d.get("rho", {}).items():
        for i, e in enumerate(r["epsilons"]):
            key = f"excess_F.dp_admm.{name}.{eps_key(e)}.rho{rho:g}"
            reps[key] = np.asarray(r["F_T"][i] - r["F_T_admm"], dtype=float)
            out[key] = float(np.mean(reps[key]))
        out[f"F_T.admm.{name}.rho{rho:g}"] = r["F_T_admm"]
    return out, reps


def theorem2_noise_ratios(params: dict, epsilons, pairs=((0.01, 0.02), (0.05, 0.1))) -> dict:
    """Theorem 2's noise term eta sigma^2 d_1 (eq. (18): c^2 alpha T eta d_1 / (2 n^2 eps mu)) at budget e1 over
    the same at e2: alpha(e1) e2 / (alpha(e2) e1), for the pairs whose budgets are both in `epsilons`."""
    delta, mu = params.get("delta", xu2020.DELTA), params.get("mu", xu2020.MU)
    grid = {float(e) for e in epsilons}
    out = {}
    for e1, e2 in (p for p in pairs if set(p) <= grid):
        a1, a2 = xu2020.rdp_order(e1, delta, mu), xu2020.rdp_order(e2, delta, mu)
        out[f"theorem2_noise_ratio.{eps_key(e1)}_{eps_key(e2)}"] = (a1 / e1) / (a2 / e2)
    return out


# ----------------------------------------------------------------------------------------------------- figures
COLOURS = {"admm": "tab:blue", "acc_admm": "tab:orange", "dp_admm": "tab:green", "dp_acc_admm": "tab:red"}
STYLES = {"admm": "--", "acc_admm": "--", "dp_admm": "-", "dp_acc_admm": "-"}
T_COLOURS = ("tab:purple", "tab:gray", "tab:brown", "tab:olive", "tab:cyan")


def _grid(names, rows: int, height: float):
    """A rows x len(names) figure and its axes (one column per dataset)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, len(names), figsize=(4 * len(names), height), squeeze=False)
    return fig, axes


def _not_run(axes_column):
    for ax in axes_column:
        ax.text(0.5, 0.5, "not run:\ndataset unavailable", ha="center", va="center", transform=ax.transAxes,
                fontsize=10, color="0.4")
        ax.set_xticks([])
        ax.set_yticks([])


def _step_axis(ax, steps):
    """A log-2 axis of step sizes labelled with the steps themselves."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(steps)
    ax.set_xticklabels([f"{e:g}" for e in steps])
    ax.minorticks_off()


def _fig1_curves(d: dict, params: dict) -> dict:
    """{alg: (mean gap over the runs against t, its std)} at the default step and the headline T."""
    r, F_star = d["steps"][(d["info"]["eta"], params["iterations"])], d["reference"]["F_star"]
    return {a: ((r["F"][a] - F_star).mean(0), (r["F"][a] - F_star).std(0)) for a in ALGORITHMS}


def fig1_figure(datasets: dict, params: dict, names=PANEL_ORDER):
    """Fig. 1 in the paper's form: one panel per dataset, the objective gap F(x_t) - F* (log scale) of the four
    algorithms against CPU time, mean over the runs. Iteration t is drawn at t times the dataset's CPU seconds per
    iteration (the median of the four algorithms' `cpu_per_iteration`): each does the same work per iteration (two
    products with the n x d data, plus d normal draws for the private ones and O(|E| + d) vector operations for the
    accelerated ones), so equal work is drawn at equal time, whatever a shared machine's timer jitter makes of it."""
    fig, axes = _grid(names, 1, 3.6)
    for j, name in enumerate(names):
        ax = axes[0, j]
        ax.set_title(f"({'abcd'[j]}) {name}")
        if name not in datasets:
            _not_run([ax])
            continue
        d = datasets[name]
        cpu = float(np.median(list(d["steps"][(d["info"]["eta"], params["iterations"])]["cpu_per_iter"].values())))
        for a, (g, _) in _fig1_curves(d, params).items():
            ax.semilogy(np.arange(len(g)) * cpu, np.maximum(g, 1e-16), color=COLOURS[a], ls=STYLES[a],
                        label=LABELS[a])
        ax.set_xlabel("CPU time (s)")
        if j == 0:
            ax.set_ylabel(r"objective minus minimum, $F(x_t) - F^*$")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig1_sweep_figure(datasets: dict, params: dict, names=PANEL_ORDER):
    """Our additions to Fig. 1: top, the same curves against the iteration with +- one std over the runs; bottom,
    the noise's cost at T (F(x_T) of each private method minus its noise-free counterpart's, mean) against the step
    size, one line per T, for both pairs (solid: accelerated, dashed: plain)."""
    fig, axes = _grid(names, 2, 7.0)
    for j, name in enumerate(names):
        top, bottom = axes[:, j]
        top.set_title(f"({'abcd'[j]}) {name}")
        if name not in datasets:
            _not_run([top, bottom])
            continue
        d = datasets[name]
        for a, (g, sd) in _fig1_curves(d, params).items():
            t = np.arange(len(g))
            top.semilogy(t, np.maximum(g, 1e-16), color=COLOURS[a], ls=STYLES[a], label=LABELS[a])
            if a in PRIVATE:
                top.fill_between(t, np.maximum(g - sd, 1e-16), g + sd, color=COLOURS[a], alpha=0.2, lw=0)
        top.set_xlabel("iteration t")
        steps = sorted({e for e, _ in d["steps"]})
        for k, T in enumerate(sweep_T(params)):
            for pair, ls in (("acc_pair", "-"), ("admm_pair", "--")):
                dp, np_ = PAIRS[pair]
                y = [d["steps"][(e, T)]["F"][dp][:, -1].mean() - d["steps"][(e, T)]["F"][np_][0, -1]
                     if (e, T) in d["steps"] else np.nan for e in steps]  # NaN: diverged there
                bottom.plot(steps, y, marker="o", ms=3, ls=ls, color=T_COLOURS[k % len(T_COLOURS)],
                            label=f"T = {T}, {'DP-AccADMM - AccADMM' if pair == 'acc_pair' else 'DP-ADMM - ADMM'}")
        bottom.axvline(d["info"]["eta"], color="0.5", lw=0.8, ls=":")
        _step_axis(bottom, steps)
        bottom.set_yscale("symlog", linthresh=1e-3)
        bottom.set_xlabel(r"step size $\eta$ (dotted: the tuned step)")
        if j == 0:
            top.set_ylabel(r"$F(x_t) - F^*$ (mean $\pm$ std)")
            bottom.set_ylabel(r"$F(x_T)$: private minus noise-free")
        top.legend(fontsize=7)
        bottom.legend(fontsize=6)
    fig.tight_layout()
    return fig


def fig2_figure(datasets: dict, params: dict, names=PANEL_ORDER):
    """Fig. 2 in the paper's form: per dataset, the objective F(x_T) against epsilon (top, log scale so that every
    curve is readable: DP-AccADMM's objective at small epsilon is many times the others') and the test accuracy
    against epsilon (bottom; dotted: the majority-class rate), the four algorithms, mean +- std over the runs."""
    fig, axes = _grid(names, 2, 6.6)
    for j, name in enumerate(names):
        top, bottom = axes[:, j]
        top.set_title(f"({'abcd'[j]}) {name}")
        if name not in datasets:
            _not_run([top, bottom])
            continue
        d = datasets[name]
        r = d["steps"][(d["info"]["eta"], params["iterations"])]
        e = r["epsilons"]
        for a in ALGORITHMS:
            kw = dict(color=COLOURS[a], ls=STYLES[a], label=LABELS[a])
            for ax, key in ((top, "F_T"), (bottom, "acc_T")):
                v = np.asarray(r[key][a])
                if a in PRIVATE:
                    ax.errorbar(e, v.mean(1), yerr=v.std(1), marker="o", ms=3, capsize=2, **kw)
                else:
                    ax.axhline(float(v.mean()), **kw)
        top.set_yscale("log")
        bottom.axhline(d["info"]["majority_rate"], color="0.5", lw=0.8, ls=":", label="majority class")
        top.set_xlabel(r"$\epsilon$")
        bottom.set_xlabel(r"$\epsilon$")
        if j == 0:
            top.set_ylabel(r"objective value $F(x_T)$")
            bottom.set_ylabel("classification accuracy (test)")
        top.legend(fontsize=7)
        bottom.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig2_sweep_figure(datasets: dict, params: dict, names=PANEL_ORDER):
    """Our additions to Fig. 2: DP-AccADMM minus DP-ADMM against the step size, one line per T (mean +- two
    standard errors over the paired runs), objective at the largest and the smallest budget of the variants (rows
    1-2: below 0 DP-AccADMM is better) and accuracy at the largest (row 3: above 0 DP-AccADMM is better). The
    paper's crossover needs row 1 below 0 and row 2 above it."""
    v_eps = (params.get("variants") or {}).get("epsilons", params["epsilons"])
    lo, hi = eps_key(min(v_eps)), eps_key(max(v_eps))
    rows = (("F_T", hi, f"objective, $\\epsilon$ = {max(v_eps):g}"), ("F_T", lo, f"objective, $\\epsilon$ = {min(v_eps):g}"),
            ("acc_T", hi, f"accuracy, $\\epsilon$ = {max(v_eps):g}"))
    fig, axes = _grid(names, 3, 9.6)
    for j, name in enumerate(names):
        axes[0, j].set_title(f"({'abcd'[j]}) {name}")
        if name not in datasets:
            _not_run(axes[:, j])
            continue
        d = datasets[name]
        steps = sorted({e for e, _ in d["steps"]})
        for i, (key, k, label) in enumerate(rows):
            ax = axes[i, j]
            for c, T in enumerate(sweep_T(params)):
                mean, err = [], []
                for e in steps:
                    r = d["steps"].get((e, T))
                    idx = [n for n, b in enumerate(r["epsilons"]) if eps_key(b) == k] if r else []
                    if not idx:
                        mean.append(np.nan)
                        err.append(np.nan)
                        continue
                    diff = np.asarray(r[key]["dp_acc_admm"][idx[0]]) - np.asarray(r[key]["dp_admm"][idx[0]])
                    mean.append(diff.mean())
                    err.append(2 * diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else 0.0)
                ax.errorbar(steps, mean, yerr=err, marker="o", ms=3, capsize=2, color=T_COLOURS[c % len(T_COLOURS)],
                            label=f"T = {T}")
            ax.axhline(0.0, color="0.3", lw=0.8)
            ax.axvline(d["info"]["eta"], color="0.5", lw=0.8, ls=":")
            _step_axis(ax, steps)
            if key == "F_T":
                ax.set_yscale("symlog", linthresh=1e-2)
            ax.set_xlabel(r"step size $\eta$ (dotted: the tuned step)")
            if j == 0:
                ax.set_ylabel(f"DP-AccADMM - DP-ADMM\n{label}")
            ax.legend(fontsize=7)
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


def _not_run_metrics(missing: dict) -> dict:
    return {f"status.{n}": UNAVAILABLE for n in missing}


def _with_missing(result: dict, text: str) -> str:
    lines = [f"- **{n}**: {UNAVAILABLE} ({why})" for n, why in result["missing"].items()]
    return "\n".join(lines + ["", text] if lines else [text])


def _gathered(item: str, params: dict) -> tuple[dict, dict]:
    """({available dataset: {setting suffix: value}}, {unavailable dataset: why}) from the item's parts (a step
    part's settings one by one: 'eta0.25.T30', 'eta0.25.T100', ...); a part written while its dataset was missing is
    computed again here."""
    available, missing = datasets_to_run(params)
    part = globals()[f"part_{item}"]
    values = gather(PAPER, item, params)
    grouped: dict = {name: {} for name in available}
    for key, value in values.items():
        name, what = split_part_key(key, params)
        if name not in grouped:
            continue
        if value is None:  # its part ran while the dataset was missing (Snakemake reruns it; a hand run may not)
            print(f"{PAPER}/{item}: part {key} was written while {name} was unavailable: computing it here")
            value = part(params, key)
        if is_step_part(what):  # a step part: its settings, one per T, each as computed alone
            grouped[name].update(value["settings"])
        else:
            grouped[name][what] = value
    return grouped, missing


# Table I
TABLE1_COLUMNS = ("dataset", "n_train", "paper_n_train", "n_test", "paper_n_test", "d", "paper_d", "lam", "paper_lam",
                  "edges", "alpha_g", "graph_seconds", "L_f", "L_avg", "eta", "eta_steps_from_edge", "gamma", "gamma_min",
                  "c1.rho0.1", "c1.rho1", "c1.rho10", "F_x0", "majority_rate",
                  "max_abs_feature_raw", "features")


def run_table1(params: dict) -> dict:
    """Table I: one row per configured dataset (counts beside the paper's; graph, step size and references where
    available)."""
    return {"rows": [table1_row(n, params) for n in params["datasets"]], "missing": datasets_to_run(params)[1],
            "grid": eta_grid(params)}


def metrics_table1(result: dict) -> dict:
    return {"metrics": {**table1_metrics(result["rows"]), **_not_run_metrics(result["missing"])}}


def table_table1(result: dict, metrics: dict) -> str:
    main = rows_table([{c: r.get(c, UNAVAILABLE if c == "n_train" else None) for c in TABLE1_COLUMNS}
                       for r in result["rows"]])
    tuning = [{"dataset": r["dataset"], "algorithm": LABELS[a]}
              | {f"F(x_T), eta = {e:g}": r["tuning"][e][a] for e in result["grid"] if e in r["tuning"]}
              for r in result["rows"] if r.get("tuning") for a in ("admm", "acc_admm")]
    main = _with_missing(result, main)   # each dataset not run, with why (its sidecar's reason, or the damaged file)
    return main + ("\n\nThe step each dataset uses: the noise-free objective after `tune_iterations` iterations at "
                   "every step of the grid (the lowest mean of ADMM and AccADMM wins):\n\n" + rows_table(tuning)
                   if tuning else "")


# Fig. 1
def step_settings(params: dict, name: str) -> list[str]:
    """The (step, T) settings of a figure on one dataset, as keys '<dataset>.eta<e>.T<T>': every step at every T when
    it sweeps, else the configured step (every grid step when it is tuned: which one wins is known only once the data
    are read) at the headline T."""
    Ts = sweep_T(params) if swept(params) else [params["iterations"]]
    eta = configured_eta(params, name)
    steps = steps_of(params, name) if swept(params) or eta == "tuned" else [eta]
    return [part_key(name, f"{eta_key(e)}.T{T}") for e in steps for T in Ts]


def step_parts(params: dict, name: str) -> list[str]:
    """The (step, T) parts of a figure on one dataset: one part '<dataset>.eta<e>' per step, holding that step's
    settings at every T of `step_settings` (a job per step, not per (step, T): each setting takes a few CPU-seconds,
    of which a process's start-up, imports and set-up would otherwise be a large share)."""
    return list(dict.fromkeys(key.rsplit(".T", 1)[0] for key in step_settings(params, name)))


def step_group(params: dict, key: str, setting: Callable[[dict, str], dict | None]) -> dict | None:
    """The value of a step part '<dataset>.eta<e>' (see `step_parts`): {"settings": {"eta<e>.T<T>": setting(params,
    '<dataset>.eta<e>.T<T>')}} for each of its settings, each computed exactly as alone; None when the dataset is
    unavailable."""
    name, _ = split_part_key(key, params)
    keys = [k for k in step_settings(params, name) if k.rsplit(".T", 1)[0] == key]
    if not keys:
        raise ValueError(f"{PAPER}: no part {key}: its steps' parts are {step_parts(params, name)}")
    values = {k[len(name) + 1:]: setting(params, k) for k in keys}
    return None if any(v is None for v in values.values()) else {"settings": values}


def is_step_part(what: str) -> bool:
    """Whether a part suffix names a step part ('eta0.25'; a setting is 'eta0.25.T30')."""
    return what.startswith("eta") and ".T" not in what


def _setting_of(what: str, params: dict, name: str) -> tuple[float, int]:
    """(eta, T) of a part suffix 'eta0.25.T30'."""
    step, T = what.rsplit(".T", 1)
    eta, T = float(step.removeprefix("eta")), int(T)
    if eta not in steps_of(params, name) or T not in sweep_T(params):
        raise ValueError(f"{PAPER}: no part {name}.{what}: steps {steps_of(params, name)}, T {sweep_T(params)}")
    return eta, T


def parts_fig1(params: dict) -> list[str]:
    """Per dataset: one part per step (holding every T, `step_parts`), one per reference run for F*, and for each
    other feature scaling one for its headline setting and one per reference run of its own."""
    keys = []
    refs = [f"ref.{label}" for label in params.get("reference_runs", list(REFERENCE_RUNS))]
    for name in params["datasets"]:
        keys += step_parts(params, name)
        keys += [part_key(name, ref) for ref in refs]
        for how in (how for n, how in scaling_variants(params).items() if n == name):
            keys += [part_key(name, how)] + [part_key(name, f"{how}.{ref}") for ref in refs]
        if swept(params):
            keys.append(part_key(name, "restart"))
            keys += [part_key(name, eps_key(e)) for e in fig1_epsilon_readings(params)]
    return keys


def fig1_epsilon_readings(params: dict) -> list[float]:
    """Fig. 1's other budgets (`variants.epsilons` of fig1): the paper states no epsilon for Fig. 1 and puts the
    crossover in epsilon near 0.07 (§V-D), so the headline setting also runs at these, as the variants eps<e>."""
    return [float(e) for e in (params.get("variants") or {}).get("epsilons", []) if float(e) != params["epsilon"]]


RESTART = "goldstein"   # the restart reading: Goldstein et al.'s rule, in (DP-)AccADMM and its noise-free counterpart


def one_part(params: dict, key: str, setting) -> dict | None:
    """One part of Fig. 1 or 2: a step part holds every T of its step (`step_group`), any other part is one
    `setting`; None when its dataset is unavailable."""
    name, what = split_part_key(key, params)
    if not dataset_status([name])[name][0]:
        return None
    if is_step_part(what):
        return step_group(params, key, setting)
    return setting(params, key)


def part_fig1(params: dict, key: str) -> dict | None:
    """One part of Fig. 1 (see `parts_fig1`; `one_part`)."""
    return one_part(params, key, setting_fig1)


def setting_fig1(params: dict, key: str) -> dict | None:
    """One setting of Fig. 1: a (step, T) '<dataset>.eta<e>.T<T>', or any other part of `parts_fig1`."""
    name, what = split_part_key(key, params)
    if not dataset_status([name])[name][0]:
        return None
    how = what.split(".", 1)[0]
    scaled = how in FEATURE_SCALINGS  # the headline setting with another feature scaling: its own graph, step, F*
    s = setup(name, params, features=how if scaled else None)
    rest = what[len(how) + 1:] if scaled else what
    if what.startswith("eps"):  # the headline setting at another budget (a reading of Fig. 1's unstated epsilon)
        return {"info": s.info(), "step": fig1_step(s, {**params, "epsilon": float(what[3:])}, s.eta,
                                                    params["iterations"], timed=False)}
    if what == "restart":  # the headline setting with Goldstein et al.'s restart in both accelerated methods
        return {"info": s.info(), "step": fig1_step(s, {**params, "restart": RESTART}, s.eta, params["iterations"],
                                                    timed=False)}
    if rest.startswith("ref."):
        label = rest.removeprefix("ref.")
        if label not in REFERENCE_RUNS:
            raise ValueError(f"{PAPER}/fig1: reference run must be one of {list(REFERENCE_RUNS)}, got {label!r}")
        return {"info": s.info(), "ref": fig1_reference(s, params, label)}
    if scaled:
        return {"info": s.info(), "step": fig1_step(s, params, s.eta, params["iterations"])}
    eta, T = _setting_of(what, params, name)
    if not swept(params) and (eta, T) != (s.eta, params["iterations"]):
        return {"info": s.info(), "step": None}  # another grid step than the tuned one, and no sweep
    return {"info": s.info(), "step": swept_setting(fig1_step, s, params, eta, T)}


def swept_setting(run, s: Setup, params: dict, eta: float, T: int) -> dict:
    """`run(s, params, eta, T)` (fig1_step or fig2_step); at a swept setting other than the dataset's own step and the
    headline T, a run that diverges (lin.DivergedError: a non-finite iterate, or a noise-free objective that ends
    above its start) is recorded as {"eta", "T", "diverged": the error's message}: the grid reaches beyond the stable
    steps on purpose (the tuned step must lie inside it), and a setting where a method diverges is no reading of the
    paper's (its metrics are not written, so no claim is judged there). At the default setting it raises."""
    try:
        return run(s, params, eta, T)
    except lin.DivergedError as exc:
        if eta == s.eta and T == params["iterations"]:
            raise
        print(f"{PAPER}: {s.name} at eta = {eta:g}, T = {T} diverged; recorded, not judged ({exc})")
        return {"eta": eta, "T": T, "diverged": str(exc)}


def stable_steps(parts: dict) -> tuple[dict, dict]:
    """({(eta, T): step result} of the settings that ran stable, {"eta<e>_T<T>": why} of those that diverged)."""
    steps, diverged = {}, {}
    for w, p in parts.items():
        r = p.get("step") if w.startswith("eta") else None
        if r is None:
            continue
        if "diverged" in r:
            diverged[variant_name(r["eta"], r["T"])] = r["diverged"]
        else:
            steps[(r["eta"], r["T"])] = r
    return steps, diverged


def headline_info(name: str, params: dict) -> dict:
    """The set-up of dataset `name` as the combined item reports it (its graph, its step under Lemma 5's bound, the
    references), from `setup` (the graph and the tuning runs come from the memo): the headline step is chosen here,
    not read from whichever part comes first, so that a part run at one (eta, T) of the sweep never decides it."""
    return setup(name, params).info()


def run_fig1(params: dict) -> dict:
    """Fig. 1 on every available dataset, from its parts."""
    grouped, missing = _gathered("fig1", params)
    datasets = {}
    for name, parts in grouped.items():
        info = headline_info(name, params)
        refs = {w.removeprefix("ref."): p["ref"] for w, p in parts.items() if w.startswith("ref.")}
        restarted = parts.get("restart", {}).get("step")
        budgets = {w: p["step"] for w, p in parts.items() if w.startswith("eps")}
        scaled = {how: {"info": p["info"], "step": p["step"],
                        "reference": reference_minimum({w.removeprefix(f"{how}.ref."): q["ref"] for w, q in parts.items()
                                                        if w.startswith(f"{how}.ref.")})}
                  for how, p in parts.items() if how in FEATURE_SCALINGS}
        steps, diverged = stable_steps(parts)
        datasets[name] = {"info": info, "reference": reference_minimum(refs), "steps": steps, "diverged": diverged,
                          "scaled": scaled, "restart": restarted, "budgets": budgets}
    return {"params": params, "datasets": datasets, "missing": missing}


def plot_fig1(result: dict) -> dict:
    """{"fig1": the paper's figure, "fig1_sweep": our additions}."""
    d, p = result["datasets"], result["params"]
    figs = {"fig1": fig1_figure(d, p)}
    if swept(p):
        figs["fig1_sweep"] = fig1_sweep_figure(d, p)
    return figs


def metrics_fig1(result: dict) -> dict:
    metrics, repeats = {}, {}
    for d in result["datasets"].values():
        m, rp = fig1_dataset_metrics(d, result["params"])
        metrics.update(m)
        repeats.update(rp)
    metrics.update(_not_run_metrics(result["missing"]))
    return {"metrics": metrics, "repeats": repeats}


def table_fig1(result: dict, metrics: dict) -> str:
    """Each dataset's set-up (graph, step, sigma, F*), then the default runs' gap at T, test accuracy and speed."""
    setups = [{"dataset": n, "n": d["info"]["n"], "d": d["info"]["d"], "|E|": d["info"]["edges"],
               "eta": d["info"]["eta"], "sigma": metrics[f"sigma.{n}"], "F(x_0)": d["info"]["F_x0"],
               "F*": d["reference"]["F_star"], "F* from": d["reference"]["source"]}
              for n, d in result["datasets"].items()]
    runs = [{"dataset": n, "algorithm": LABELS[a], "gap at T": metrics[f"gap_T.{a}.{n}"],
             "F(x_T)": metrics[f"F_T.{a}.{n}"], "test accuracy": metrics[f"acc_T.{a}.{n}"],
             "CPU s / iteration": metrics[f"cpu_per_iter.{a}.{n}"],
             "gap_T / gap_T/2": metrics[f"second_half.{a}.{n}"]}
            for n in result["datasets"] for a in ALGORITHMS]
    return _with_missing(result, rows_table(setups) + "\n\n" + rows_table(runs))


# Fig. 2
def parts_fig2(params: dict) -> list[str]:
    """Per dataset: one part per step (holding every T, `step_parts`), one for the rho sweep, one per other feature
    scaling."""
    keys = []
    for name in params["datasets"]:
        keys += step_parts(params, name)
        if (params.get("rho_sweep") or {}).get("rhos"):
            keys.append(part_key(name, "rho"))
        keys += [part_key(name, how) for n, how in scaling_variants(params).items() if n == name]
    return keys


def part_fig2(params: dict, key: str) -> dict | None:
    """One part of Fig. 2 (see `parts_fig2`; `one_part`)."""
    return one_part(params, key, setting_fig2)


def setting_fig2(params: dict, key: str) -> dict | None:
    """One setting of Fig. 2: a (step, T) '<dataset>.eta<e>.T<T>', or any other part of `parts_fig2`."""
    name, what = split_part_key(key, params)
    if not dataset_status([name])[name][0]:
        return None
    if what in FEATURE_SCALINGS:
        s = setup(name, params, features=what)
        v = params.get("variants") or {}
        run = fig2_dataset(s, params, T=params["iterations"], epsilons=v.get("epsilons", params["epsilons"]),
                           repeats=v.get("repeats", params["repeats"]))
        return {"info": s.info(), "run": run}
    s = setup(name, params)
    if what == "rho":
        return {"info": s.info(), "rho": fig2_rho(s, params)}
    eta, T = _setting_of(what, params, name)
    if not swept(params) and (eta, T) != (s.eta, params["iterations"]):
        return {"info": s.info(), "step": None}  # another grid step than the tuned one, and no sweep
    out = {"info": s.info(), "step": swept_setting(fig2_step, s, params, eta, T)}
    if eta == s.eta and T == params["iterations"]:
        out["witness"] = replace_one_witness(s.problem)
    return out


def run_fig2(params: dict) -> dict:
    """Fig. 2 on every available dataset, from its parts."""
    grouped, missing = _gathered("fig2", params)
    datasets = {}
    for name, parts in grouped.items():
        info = headline_info(name, params)
        steps, diverged = stable_steps(parts)
        datasets[name] = {"info": info, "steps": steps, "diverged": diverged,
                          "witness": next(p["witness"] for p in parts.values() if "witness" in p),
                          "rho": parts.get("rho", {}).get("rho", {}),
                          "scaled": {w: p for w, p in parts.items() if w in FEATURE_SCALINGS}}
    return {"params": params, "datasets": datasets, "missing": missing}


def plot_fig2(result: dict) -> dict:
    """{"fig2": the paper's figure, "fig2_sweep": DP-AccADMM minus DP-ADMM across the (eta, T) sweep}."""
    d, p = result["datasets"], result["params"]
    figs = {"fig2": fig2_figure(d, p)}
    if swept(p):
        figs["fig2_sweep"] = fig2_sweep_figure(d, p)
    return figs


def metrics_fig2(result: dict) -> dict:
    params = result["params"]
    metrics, repeats = {}, {}
    for name, d in result["datasets"].items():
        m, rp = fig2_dataset_metrics(d, params)
        metrics.update(m)
        repeats.update(rp)
    if result["datasets"]:  # Theorem 1's accounting: the same on every dataset (its multiplier is n-free)
        first = next(iter(result["datasets"].values()))
        metrics.update(privacy_metrics(params, first["steps"][(first["info"]["eta"], params["iterations"])]))
        metrics.update(theorem2_noise_ratios(params, params["epsilons"]))
    metrics.update(_not_run_metrics(result["missing"]))
    return {"metrics": metrics, "repeats": repeats}


def table_fig2(result: dict, metrics: dict) -> str:
    """The default runs' noise-free objective and accuracy beside the references, then Theorem 1's sigma and what it
    buys (total epsilon accounted from the runs' records)."""
    p = result["params"]
    rows = [{"dataset": n, "eta": d["info"]["eta"], "T": p["iterations"], "F(x_0)": d["info"]["F_x0"],
             "majority rate": d["info"]["majority_rate"]}
            | {f"{LABELS[a]}: {what}": metrics[f"{k}.{a}.{n}"] for a in ("admm", "acc_admm")
               for what, k in (("F(x_T)", "F_T"), ("test accuracy", "acc_T"), ("max rise", "max_rise"))}
            for n, d in result["datasets"].items()]
    sf = p.get("sensitivity_factor", 1.0)
    privacy = [{"target epsilon": float(e)}
               | {col: metrics.get(f"{key}.{eps_key(e)}")
                  for col, key in ((f"RDP, {sf:g}c/n", "eps_rdp"), (f"PLD, {sf:g}c/n", "eps_pld"),
                                   ("RDP, 2c/n (replace-one)", "eps_rdp_replace_one"),
                                   ("PLD, 2c/n (replace-one)", "eps_pld_replace_one"))}
               for e in p["epsilons"]] if result["datasets"] else []
    return _with_missing(result, rows_table(rows) + "\n\nWhat Theorem 1's sigma buys, accounted from the runs' "
                         "records (the same on every dataset):\n\n" + rows_table(privacy))
