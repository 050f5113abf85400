"""Beyond the papers: the equal-privacy frontier (item beyond/frontier).

Every record-level private method of the papers, on one problem (l2-regularised logistic regression on Adult, the
same 40,000/5,222 split per repeat), calibrated by bisection to the same TOTAL privacy guarantee, epsilon in
`levels` at one delta (replace-one neighbours), then run for `repeats` repeats: test error against total epsilon.
The methods and their calibration are in `_frontier_methods.py`.

The grid is split into one job per (method, level) so that a cluster runs it in parallel: `run_job` (CLI
`repro-dpadmm frontier-job METHOD LEVEL`, Snakemake rule `frontier_job`) writes
`results/beyond/frontier/jobs/<method>/<level>.json`, plus one job for the non-private floor
(`jobs/floor/nonprivate.json`); the notebook only loads them (`load_jobs`, which runs a missing or stale job itself
when the notebook is run by hand) and aggregates (`summarise`, `metrics`, `conclusions`, `figure`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..datasets import load
from ..datasets.partition import train_test
from ..problems import logistic
from ..report.provenance import canonical_hash
from ..rng import repeat_generators
from . import _frontier_methods as fm
from ._frontier_methods import METHODS, level_key

PAPER, ITEM = "beyond", "frontier"
FLOOR = ("floor", "nonprivate")   # (method, level) of the non-private reference job
DATASET = "adult_huang2019"


# ------------------------------------------------------------------------------------------------- parameters
def check_params(params: dict) -> dict:
    """Raise a ValueError that says what is wrong, before any work starts. Returns params."""
    need = ("levels", "delta", "repeats", "n_train", "iterations", "lam", "methods", "huang", "zhang", "xu")
    missing = [k for k in need if k not in params]
    if missing:
        raise ValueError(f"beyond/frontier parameters lack {missing}; see config/config.yaml (beyond: frontier:)")
    levels = [float(v) for v in params["levels"]]
    if not levels or any(not (v > 0 and np.isfinite(v)) for v in levels):
        raise ValueError(f"levels must be positive total epsilons, got {params['levels']}")
    if len({level_key(v) for v in levels}) != len(levels):
        raise ValueError(f"levels must be distinct, got {params['levels']}")
    if not 0 < float(params["delta"]) < 1:
        raise ValueError(f"delta must lie in (0, 1), got {params['delta']}")
    unknown = [m for m in params["methods"] if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; known: {list(METHODS)}")
    if int(params["iterations"]) < 2 or int(params["iterations"]) % 2:
        raise ValueError(f"iterations must be an even integer >= 2 (R-ADMM pairs odd and even steps), got "
                         f"{params['iterations']}")
    if int(params["repeats"]) < 1:
        raise ValueError(f"repeats must be >= 1, got {params['repeats']}")
    fm.context(params)  # checks the split sizes and the graph
    return params


def job_params(params: dict) -> dict:
    """The parameters a job depends on: all but the grid itself (which jobs exist)."""
    return {k: v for k, v in params.items() if k not in ("levels", "methods", "datasets")}


def jobs_of(params: dict) -> list[tuple[str, str]]:
    """Every (method, level) job of the grid, and the floor job, in plotting order."""
    return [(m, level_key(v)) for m in params["methods"] for v in params["levels"]] + [FLOOR]


def job_path(out_dir: str | Path, method: str, level: str) -> Path:
    return Path(out_dir) / "jobs" / method / f"{level}.json"


# ------------------------------------------------------------------------------------------------- data
def data(params: dict, root: Path | None = None):
    """(X, y, splits): the Adult rows (HUANG's 104 columns, unit-norm rows) and one (train, test) index pair per
    repeat, shared by every method. Smoke runs may use only `rows` seeded rows."""
    d = load(DATASET, root)
    X, y = np.asarray(d["X"], dtype=float), np.asarray(d["y"], dtype=float)
    seed = int(params.get("seed", 0))
    if params.get("rows"):
        keep = np.sort(repeat_generators(seed, 1, PAPER, ITEM, "rows")[0].permutation(len(y))[:int(params["rows"])])
        X, y = X[keep], y[keep]
    norms = np.linalg.norm(X, axis=1)
    if norms.max() > 1 + 1e-9:
        raise ValueError(f"every row must have norm <= 1 (the sensitivities assume it); max is {norms.max():.6g}")
    n_train = int(params["n_train"])
    if not 0 < n_train < len(y):
        raise ValueError(f"n_train = {n_train} must be below the {len(y)} rows available")
    rngs = repeat_generators(seed, int(params["repeats"]), PAPER, ITEM, "split")
    return X, y, [train_test(len(y), n_train, g) for g in rngs]


def _rngs(params: dict, method: str, level: str, family: str) -> dict:
    seed, R = int(params.get("seed", 0)), int(params["repeats"])
    return {"agents": repeat_generators(seed, R, PAPER, ITEM, "agents", family),
            "noise": repeat_generators(seed, R, PAPER, ITEM, method, level, "noise")}


def _evaluate(models: np.ndarray, X, y, splits, lam: float) -> dict:
    """Test error and training objective of each agent's final model, averaged over agents, per repeat."""
    err, obj = [], []
    for w, (tr, te) in zip(models, splits):  # w: (agents, d)
        err.append(float(logistic.error_rate(X[te], y[te], w).mean()))
        Xs = sp.csr_matrix(X[tr])
        z = y[tr][:, None] * np.asarray(Xs @ w.T)
        obj.append(float((logistic.loss(z).mean(axis=0) + 0.5 * lam * (w ** 2).sum(1)).mean()))
    return {"test_error": err, "train_objective": obj}


# ------------------------------------------------------------------------------------------------- jobs
def run_job(method: str, level: str, params: dict, root: Path | None = None) -> dict:
    """One (method, level) of the grid, or the non-private floor: calibrate, run every repeat, evaluate."""
    check_params(params)
    ctx = fm.context(params)
    t0 = time.perf_counter()
    X, y, splits = data(params, root)
    base = {"method": method, "level": level, "params_hash": canonical_hash(job_params(params)),
            "repeats": len(splits)}
    if (method, level) == FLOOR:
        models = np.stack([_nonprivate_optimum(X[tr], y[tr], ctx.lam) for tr, _ in splits])[:, None, :]
        return {**base, **_evaluate(models, X, y, splits, ctx.lam), "wall_time_s": time.perf_counter() - t0}
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {list(METHODS)} and {FLOOR[0]!r}")
    levels = {level_key(v): float(v) for v in params["levels"]}
    if level not in levels:
        raise ValueError(f"unknown level {level!r}; the config's levels are {list(levels)}")
    tc = time.perf_counter()
    cal = fm.calibrate_method(method, levels[level], ctx)
    cal_time = time.perf_counter() - tc
    m = METHODS[method]
    rngs = _rngs(params, method, level, m.family)
    runner = getattr(fm, f"run_{m.family}")
    models = runner(method, cal, splits, X, y, ctx, rngs)
    return {**base, "calibration": cal, **_evaluate(models, X, y, splits, ctx.lam),
            "calibration_time_s": cal_time, "wall_time_s": time.perf_counter() - t0}


def _nonprivate_optimum(X, y, lam: float, tol: float = 1e-10) -> np.ndarray:
    """argmin mean loss + (lam/2)||w||^2 by Newton's method (the floor of the frontier)."""
    from ..algorithms.decentralized import centralized_optimum, node_data

    # one node with C = 1, rho = lam: ZKL's eq. (1) is then exactly this objective (reuses its exact Newton solver)
    return centralized_optimum(node_data(X, y, [np.arange(len(y))]), C=1.0, rho=lam, tol=tol)


def write_job(result: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True, default=_json_default) + "\n")
    tmp.replace(path)
    return path


def _json_default(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"cannot write {type(v).__name__} to a job file")


def load_jobs(params: dict, out_dir: str | Path, *, run_missing: bool = True, root: Path | None = None,
              log=print) -> dict[tuple[str, str], dict]:
    """Every job of the grid from `out_dir/jobs/`. A job file that is missing, or was written with other parameters
    (its params_hash differs), is recomputed and rewritten if `run_missing`, else it is an error."""
    want = canonical_hash(job_params(params))
    out = {}
    for method, level in jobs_of(params):
        path = job_path(out_dir, method, level)
        job = json.loads(path.read_text()) if path.is_file() else None
        if job is not None and job.get("params_hash") != want:
            job, why = None, f"{path} was written with other parameters"
        else:
            why = f"{path} is missing"
        if job is None:
            if not run_missing:
                raise FileNotFoundError(f"{why}; run `snakemake --cores all beyond_frontier` or "
                                        f"`repro-dpadmm frontier-job {method} {level}`")
            log(f"{why}: running job {method}/{level} here")
            job = run_job(method, level, params, root)
            write_job(job, path)
        out[(method, level)] = job
    return out
