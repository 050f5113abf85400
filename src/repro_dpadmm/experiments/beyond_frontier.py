"""Beyond the papers: the equal-privacy frontier (item beyond/frontier).

Every record-level private method of the papers, on one problem (l2-regularised logistic regression on Adult, the
same 40,000/5,222 split per repeat, mean loss + (lam/2)||w||^2, lam = HUANG's lambda/n = 1e-6), calibrated to the
same TOTAL privacy guarantee, epsilon in `levels` at one delta (replace-one neighbours), then run for `repeats`
repeats: test error against total epsilon. Each method is a mechanism of repro_dpadmm.mechanisms with the FRONTIER
capability (`METHODS`, a view of the catalogue: a new mechanism class with that capability is a new method here):

* Gaussian mechanisms (HUANG DP-ADMM, PVP, DPSGD; XU DP-ADMM and DP-AccADMM corrected): the noise multiplier
  z = sigma / (replace-one l2-sensitivity) of T composed Gaussian steps, by dp-accounting's PLD accountant.
* Pure-DP mechanisms (HUANG DVP; ZKL PP, DVP, private R-ADMM): the paper's own per-iteration pure-epsilon bound,
  composed over the iterations by the optimal composition theorem (dp-accounting PLD of the (eps_t, 0)
  dominating pairs) or, with `pure_composition: basic`, by summation as the papers do (ZKL's P(T), T eps).
* XU "paper" variants: sigma from XU's Theorem 1 (sensitivity c/n, its single-order RDP conversion) and u_0 built
  from the exact gradient, exactly as the paper runs it; what they really spend is accounted as for the corrected
  runs, with the extra sensitivity u_0 adds.

For every method the job also records what the paper's own accounting says for the same noise (`paper_eps`, from
the mechanism's Spend), so the table shows where the papers' accounting is looser (paper_eps > target) or unsound
(XU: below the truth).

Learning rates, one rule for every method (`tune_step`): a method with a learning rate (its mechanism's `step_name`:
HUANG DP-ADMM's eta_i^k of Theorem 4, HUANG DPSGD's lr, XU's eta) runs at each multiple `step_grid` of its paper's
value (HUANG DPSGD: lr 0.1 in the sum convention, where §VI-C's "optimal 0.1" is nearest the optimum), on the same
noise draws (`step_runs`: the multiples run as lanes of one batched run, `Mechanism.run_lanes`, one sweep of the data
per iteration for all of them and each noise draw made once, the same numbers as one run after another), and
keeps the one with the lowest mean training objective over the repeats at that level (never the test error; like the
papers' own tuning, the choice is not charged to the privacy budget). Methods whose local step is an exact
minimisation (HUANG PVP, DVP; ZKL PP, DVP, R-ADMM's exact odd steps) have no learning rate: their penalties stay the
papers' values. The table and `step_scale.<method>.<level>` say which multiple won.

The grid is split into one job per (method, level) so that a cluster runs it in parallel: `run_job` (CLI
`repro-dpadmm frontier-job METHOD LEVEL`) writes `results/beyond/frontier/jobs/<method>/<level>.json`, plus one job
for the non-private floor (`jobs/floor/nonprivate.json`) and, per method, its optimiser floor: the same method,
calibration and T without the noise (`jobs/<method>/<level>-noiseless.json`, or `jobs/<method>/noiseless.json`
where the noise-free run does not depend on the level); ZKL's methods run every level's job and its noiseless one
as lanes of one run (`run_job_lanes`, rules `frontier_job_lanes_<k>`, CLI `frontier-job METHOD LEVEL... --out ...
--floor-out ...`: every file, the numbers of the jobs alone), and every other method's jobs run `jobs_per_run` to a
process (`run_jobs`, `job_groups`, rules `frontier_jobs_<k>`, CLI `frontier-job METHOD LEVEL... --out ...`: one
after another on the data loaded once); the notebook only loads them (`load_jobs`, which runs a missing or stale job
itself when the notebook is run by hand) and aggregates (`summarise`, `metrics`, `conclusions`, `figure`).

What the aggregation decides, every part from the numbers (differences judged paired over the repeats, which share
their splits, at `Z` standard errors):
* a method whose test error is not below the majority-class classifier's by more than the noise is "no better than
  constant" and cannot win;
* the winner of a level is the distributed method (HUANG's star, ZKL's graph: every agent protects its own records)
  with the lowest mean error among those better than constant, or none; XU's centralised algorithms assume a trusted
  curator (another threat model) and are shown as a reference, not ranked;
* HUANG's star methods with several agents' models (DP-ADMM, PVP, DVP) are scored by the mean over their agents'
  own shared models and, as the reading `global_model` (`READINGS`), by the aggregated w^T the aggregator forms
  (DPSGD's one model is scored so anyway); a winner is stated only where the same method wins, separated from the
  next, under every reading (`winner_robust.<level>`);
* a method is "limited by the noise" where its error is above its own noiseless run by more than the noise, else
  "limited by the optimiser" (step sizes, T);
* each paper's accounting is loose (states more than the tight total), or understates it, by the ratio measured.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from .. import safeload
from ..datasets import load
from ..datasets.partition import train_test
from ..datasets.processed import atomic_write
from ..mechanisms import FRONTIER, catalogue_view
from ..mechanisms.base import Mechanism
from ..mechanisms.layouts import LAYOUTS, STAR
from ..problems import logistic
from ..problems.l2_logistic import L2Logistic
from ..paths import results_dir
from ..provenance import canonical_hash
from ..rng import repeat_generators
from .progress import progress

PAPER, ITEM = "beyond", "frontier"
FLOOR = ("floor", "nonprivate")   # (method, level) of the non-private reference job
NOISELESS = "noiseless"           # level suffix of a method's optimiser-floor job
Z = 2.0                           # standard errors that separate two mean test errors (paired over repeats)
DATASET = "adult_huang2019"
JOB_FORMAT = 4  # bump when a job file's content changes: older files then count as stale
READINGS = ("global_model",)  # scored-model readings a job records beside its default (see run_job)


# ------------------------------------------------------------------------------------------------- methods
@dataclass(frozen=True)
class Method:
    """One line of the frontier: a mechanism of the catalogue (its paper defaults; `configured` sets the frontier's
    constants) and the data layout it runs on (its class's `layout`, mechanisms.layouts)."""

    id: str             # job and metric name, one word
    prototype: Mechanism

    layout = property(lambda self: self.prototype.layout)
    paper = property(lambda self: self.prototype.paper)
    label = property(lambda self: self.prototype.label)
    noise_name = property(lambda self: self.prototype.noise_name)
    paper_accounting = property(lambda self: self.prototype.paper_accounting)
    distributed = property(lambda self: self.prototype.distributed)  # each agent protects its own records

    @property
    def calibrated(self) -> bool:
        """Its noise is set so that a sound accounting meets the level (all but the XU runs as published)."""
        return self.prototype.sound

    @property
    def kind(self) -> str:
        """"gaussian", "pure", or "xu_paper" for a run whose own calibration is unsound."""
        return self.prototype.kind if self.calibrated else "xu_paper"

    @property
    def noiseless_per_level(self) -> bool:
        """Whether its noise-free run still depends on the level (HUANG DP-ADMM's step sizes, DVP's Delta, ZKL's C)."""
        return self.prototype.noiseless_needs_calibration

    @property
    def has_noiseless(self) -> bool:
        """Whether the frontier runs its optimiser floor (the XU runs as published share the corrected runs')."""
        return self.calibrated

    @property
    def tunable(self) -> bool:
        """Whether it has a learning rate, tuned by the frontier's one rule (`tune_step`)."""
        return self.prototype.step_name is not None


# {id: Method} of every mechanism with the FRONTIER capability, read from the catalogue at each use
METHODS = catalogue_view(FRONTIER, lambda cls: Method(cls.id, cls()))


def level_key(epsilon: float) -> str:
    """Job and metric name of a privacy level: 0.1 -> 'eps0.1', 1.0 -> 'eps1'."""
    return f"eps{float(epsilon):g}"


@dataclass(frozen=True)
class Context:
    """Everything a calibration needs (public: sizes, schedules, constants) and the run settings."""

    params: dict
    n_train: int            # training samples per repeat
    delta: float
    T: int                  # iterations of every method
    lam: float              # (lam/2)||w||^2 next to the mean loss
    rtol: float


def context(params: dict) -> Context:
    """The run settings, after every layout checked that the config can be laid out its way (HUANG's even split,
    ZKL's network)."""
    for lay in LAYOUTS:
        lay.check(params)
    return Context(params=params, n_train=int(params["n_train"]), delta=float(params["delta"]),
                   T=int(params["iterations"]), lam=float(params["lam"]), rtol=float(params.get("rtol", 2e-3)))


def _config_value(block: dict, key: str):
    """block["a"]["b"] for key "a.b"."""
    for part in key.split("."):
        block = block[part]
    return block


def configured(method: str, ctx: Context) -> Mechanism:
    """The method's mechanism with the frontier's constants: the common problem's lam and size, what its layout's
    methods share (mechanisms.layouts: HUANG rho; ZKL's network and floor_share; XU rho, gamma, mu, c and its step
    rule) and its own `parameters` from its layout's config block (DPSGD's lr; ZKL's schedules), each converted to
    the type of the field's default."""
    m = METHODS[method]
    block = ctx.params[m.layout.block]
    kw = m.layout.constants(ctx.params, n_train=ctx.n_train, lam=ctx.lam, dataset=DATASET)
    for key, name in type(m.prototype).parameters.items():
        value, default = _config_value(block, key), getattr(m.prototype, name)
        kw[name] = float(value) if isinstance(default, float) else value
    return replace(m.prototype, **kw)


def calibrate_method(method: str, target: float, ctx: Context) -> dict:
    """The noise parameter(s) of one method at one target, and every accounting of the result (no data needed)."""
    mech = configured(method, ctx)
    how = ctx.params.get("pure_composition", "optimal")
    out = {"method": method, "target": float(target), "delta": ctx.delta, "steps": ctx.T,
           "noise_name": mech.noise_name}
    out.update(mech.calibrate(target, ctx.delta, ctx.T, rtol=ctx.rtol, how=how))
    out["calibrated"] = mech.sound
    out["rel_gap"] = (target - out["tight_eps"]) / target
    return out


def layout(method: str, X, y, splits, ctx: Context, agent_rngs, train=None):
    """The method's data on the common problem, every repeat, as its layout lays it out (mechanisms.layouts: HUANG's
    StarData of the star, all repeats; per repeat, ZKL's NodeData of the network's nodes or XU's L2Logistic of one
    curator on `train`, the repeats' training rows as CSR, `train_csr`; the per-repeat ones built as the run
    reaches them)."""
    train = train_csr(X, splits) if train is None else train
    return METHODS[method].layout.data(X, y, splits, ctx.params, agent_rngs, lam=ctx.lam, train=train)


def train_csr(X, splits) -> list:
    """Each repeat's training rows X[tr] as CSR: row slices of one CSR copy of X. The same arrays as
    sp.csr_matrix(X[tr]) (a dense row becomes its nonzeros in column order either way; tests/experiments), at one
    conversion of the dense rows per job instead of one per repeat and use (about 40 ms each at paper scale)."""
    Xs = sp.csr_matrix(X)
    return [Xs[tr] for tr, _ in splits]


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
    grid = step_grid(params)
    if not grid or any(not (g > 0 and np.isfinite(g)) for g in grid) or len(set(grid)) != len(grid):
        raise ValueError(f"step_grid must be distinct positive multipliers, got {params.get('step_grid')}")
    context(params)  # checks the split sizes and the graph
    return params


def job_params(params: dict) -> dict:
    """The parameters a job depends on: all but the grid itself (which jobs exist) and how its jobs are grouped
    (`lane_levels`, `jobs_per_run`: the numbers are the same), and the job format."""
    return {**{k: v for k, v in params.items() if k not in ("levels", "methods", "datasets", "lane_levels",
                                                             "jobs_per_run")},
            "job_format": JOB_FORMAT}


def noiseless_level(method: str, level: str) -> str:
    """Job level of the method's optimiser floor at `level`: '<level>-noiseless', or 'noiseless' when the noise-free
    run is the same at every level."""
    return f"{level}-{NOISELESS}" if METHODS[method].noiseless_per_level else NOISELESS


def jobs_of(params: dict) -> list[tuple[str, str]]:
    """Every (method, level) job of the grid, each method's noiseless jobs, and the floor job, in plotting order."""
    grid = [(m, level_key(v)) for m in params["methods"] for v in params["levels"]]
    quiet = []
    for m, lv in grid:
        if METHODS[m].has_noiseless and (m, noiseless_level(m, lv)) not in quiet:
            quiet.append((m, noiseless_level(m, lv)))
    return grid + quiet + [FLOOR]


def check_job(method: str, level: str, params: dict) -> None:
    """Raise a ValueError naming the known methods or levels if (method, level) is not a job of the grid."""
    check_params(params)
    if (method, level) == FLOOR:
        return
    if method == FLOOR[0]:
        raise ValueError(f"the {FLOOR[0]} job has the one level {FLOOR[1]!r}, not {level!r}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {list(METHODS)} and {FLOOR[0]!r}")
    levels = [level_key(v) for v in params["levels"]]
    allowed = levels + ([noiseless_level(method, lv) for lv in levels] if METHODS[method].has_noiseless else [])
    if level not in allowed:
        raise ValueError(f"unknown level {level!r} for {method}; the config's levels are {allowed}")


def job_path(out_dir: str | Path, method: str, level: str) -> Path:
    return Path(out_dir) / "jobs" / method / f"{level}.json"


def step_grid(params: dict) -> list[float]:
    """The multiples of each tunable method's paper learning rate the frontier tries (`step_grid`, default [1])."""
    return [float(g) for g in params.get("step_grid", [1.0])]


def tune_step(sweep: dict[str, dict]) -> str:
    """The frontier's one rule for learning rates: of the runs at each multiple ({multiple: _evaluate(...)}), the
    one with the lowest mean training objective over the repeats (a diverged run, non-finite, never wins; ties: the
    first)."""
    def score(key):
        v = float(np.mean(sweep[key]["train_objective"]))
        return v if np.isfinite(v) else np.inf
    return min(sweep, key=score)


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
    """The agents' split (labelled by the layout's block, `family`: every method of a layout draws the same) and the
    method's noise at the level."""
    seed, R = int(params.get("seed", 0)), int(params["repeats"])
    return {"agents": repeat_generators(seed, R, PAPER, ITEM, "agents", family),
            "noise": repeat_generators(seed, R, PAPER, ITEM, method, level, "noise")}


def _evaluate(models: np.ndarray, X, y, splits, lam: float, train: list | None = None) -> dict:
    """Test error and training objective (on `train`, `train_csr`) of each agent's final model, averaged over
    agents, per repeat."""
    train = train_csr(X, splits) if train is None else train
    err, obj = [], []
    for w, (tr, te), Xtr in zip(models, splits, train):  # w: (agents, d)
        err.append(float(logistic.error_rate(X[te], y[te], w).mean()))
        obj.append(float(L2Logistic(X=Xtr, y=y[tr], lam=lam).objective(w).mean()))
    return {"test_error": err, "train_objective": obj}


# ------------------------------------------------------------------------------------------------- jobs
def step_runs(method: str, mech: Mechanism, grid: list[float], X, y, splits, train, cal, ctx: Context, level: str,
              noiseless: bool) -> Iterator[tuple[float, np.ndarray]]:
    """(step multiple, final models (R, models, d)) for each multiple of `grid`, every one on the same data and the
    same noise draws (the method's Generators of this level, fresh for each multiple). A tunable method whose
    mechanism has a lane form (`Mechanism.has_lanes`) runs them all as lanes of one batched run (`run_lanes`: one
    sweep of the data per iteration for every multiple, each noise draw made once), equal bit for bit to the runs
    one after another (tests/experiments/test_beyond_frontier.py); any other method runs them in turn."""
    tunable = METHODS[method].tunable
    block = METHODS[method].layout.block
    if tunable and type(mech).has_lanes():
        rngs = _rngs(ctx.params, method, level, block)
        data_ = layout(method, X, y, splits, ctx, rngs["agents"], train)
        lanes = mech.run_lanes(data_, cal, ctx.T, rngs["noise"], grid, noiseless=noiseless)
        yield from zip(grid, lanes)
        return
    shared = None   # the layout's data, built once where it is not a lazy per-repeat sequence
    for scale in grid:
        rngs = _rngs(ctx.params, method, level, block)  # the same draws at every step
        data_ = shared if shared is not None else layout(method, X, y, splits, ctx, rngs["agents"], train)
        if not isinstance(data_, Iterator):   # HUANG's StarData: about 0.3 s a build at paper scale
            shared = data_
        run = replace(mech, step_scale=scale) if tunable else mech
        yield scale, run.run(data_, cal, ctx.T, rngs["noise"], noiseless=noiseless)


def run_job(method: str, level: str, params: dict, root: Path | None = None, *, loaded: tuple | None = None) -> dict:
    """One (method, level) of the grid, or the non-private floor: calibrate, run every repeat, evaluate. `loaded`:
    (X, y, splits, train) as `data` and `train_csr` make them, if already made (`run_jobs`)."""
    check_job(method, level, params)
    levels = {level_key(v): float(v) for v in params["levels"]}
    ctx = context(params)
    t0, c0 = time.perf_counter(), time.process_time()
    if loaded is None:
        X, y, splits = data(params, root)
        train = train_csr(X, splits)
    else:
        X, y, splits, train = loaded
    base = {"method": method, "level": level, "params_hash": canonical_hash(job_params(params)),
            "repeats": len(splits)}
    if (method, level) == FLOOR:
        from ..algorithms.centralized import newton_l2

        with threadpool_limits(limits=int(params.get("blas_threads", 1))):
            # HUANG's centralised baseline (1): the same objective on all training rows, solved to ||grad|| < 1e-10
            models = np.stack([newton_l2(Xtr, y[tr], ctx.lam) for Xtr, (tr, _) in zip(train, splits)])[:, None, :]
        # the majority-class classifier (the training split's majority label): what a model that learnt nothing gets
        trivial = [float(np.mean(y[te] != (1.0 if np.mean(y[tr] > 0) > 0.5 else -1.0))) for tr, te in splits]
        return {**base, **_evaluate(models, X, y, splits, ctx.lam, train), "trivial_error": trivial,
                "wall_time_s": time.perf_counter() - t0, "cpu_time_s": time.process_time() - c0}
    noiseless = level.endswith(NOISELESS)
    base_level = level.removesuffix(f"-{NOISELESS}") if noiseless else level
    tc = time.perf_counter()
    # a noiseless job needs the level's calibration only where its noise-free run depends on it
    cal = calibrate_method(method, levels[base_level], ctx) if base_level in levels else None
    cal_time = time.perf_counter() - tc
    mech = configured(method, ctx)
    grid = step_grid(params) if METHODS[method].tunable else [1.0]
    sweep, readings = {}, {r: {} for r in READINGS}
    with threadpool_limits(limits=int(params.get("blas_threads", 1))):
        for scale, models in step_runs(method, mech, grid, X, y, splits, train, cal, ctx, level, noiseless):
            sweep[f"{scale:g}"] = _evaluate(models, X, y, splits, ctx.lam, train)
            if METHODS[method].layout is STAR and models.shape[1] > 1:
                # the reading `global_model`: the aggregator's w^T (HUANG (10c)) instead of the agents' own shared
                # models, scored as DPSGD's one model is; the duals sum to zero from gamma^0 = 0 ((10d)), so w^T is
                # the mean of the shared models
                readings["global_model"][f"{scale:g}"] = _evaluate(models.mean(axis=1, keepdims=True), X, y, splits,
                                                                   ctx.lam, train)
    chosen = tune_step(sweep)
    out = {**base, "calibration": cal, "noiseless": noiseless, **sweep[chosen],
           "calibration_time_s": cal_time, "wall_time_s": time.perf_counter() - t0,
           "cpu_time_s": time.process_time() - c0}
    if METHODS[method].tunable:
        out.update(step_scale=float(chosen), step_sweep=sweep)
    # each reading at the step the default chose (the one rule tunes on the agents' own models)
    out["readings"] = {r: by_step[chosen] for r, by_step in readings.items() if by_step}
    return out


def run_jobs(method: str, levels: list[str], params: dict, root: Path | None = None) -> list[dict]:
    """Several jobs of one method (any of its levels and noiseless runs, or the floor) one after another in one
    process, on the data loaded once (`job_groups`: a job's start and the data's load are a large share of a HUANG or
    XU job). Each record is the one `run_job` writes for that job alone, bit for bit but for the timings: the load's
    time is split evenly between the records (tests/experiments/test_beyond_frontier.py)."""
    if not levels or len(set(levels)) != len(levels):
        raise ValueError(f"{method}: one or more distinct levels expected, got {levels}")
    for level in levels:
        check_job(method, level, params)
    t0, c0 = time.perf_counter(), time.process_time()
    X, y, splits = data(params, root)
    loaded = (X, y, splits, train_csr(X, splits))
    wall, cpu = (time.perf_counter() - t0) / len(levels), (time.process_time() - c0) / len(levels)
    out = []
    for level in levels:
        rec = run_job(method, level, params, root, loaded=loaded)
        rec.update(wall_time_s=rec["wall_time_s"] + wall, cpu_time_s=rec["cpu_time_s"] + cpu)
        out.append(rec)
    return out


def job_groups(params: dict) -> list[tuple[str, list[str]]]:
    """(method, job levels) of every job the rules `frontier_jobs_<k>` run: each method that does not pair with its
    floor (`pairs_with_floor`: ZKL's run as lanes, `frontier_lane_groups` in workflow/rules/common.smk) has its jobs,
    in `jobs_of`'s order, dealt into the fewest groups of at most `jobs_per_run` (sizes differing by one at most), and
    the floor is a group of its own. Which jobs share a process changes no number (`run_jobs`)."""
    k = int(params.get("jobs_per_run", 4))
    by_method: dict[str, list[str]] = {}
    for method, level in jobs_of(params):
        if not pairs_with_floor(method, level.removesuffix(f"-{NOISELESS}")):
            by_method.setdefault(method, []).append(level)
    # np.array_split: the fewest groups of at most k, the first ones one longer where they cannot all be equal
    return [(method, group.tolist()) for method, levels in by_method.items()
            for group in np.array_split(levels, -(-len(levels) // k))]


def pairs_with_floor(method: str, level: str) -> bool:
    """Whether the job (method, level) runs together with its optimiser floor (`run_job_lanes`): a method without a
    learning rate whose noise-free run depends on the level (ZKL's C) and whose mechanism runs the private run and
    its noise-free twin as two lanes of one run (`Mechanism.run_with_floor`), at a level of the grid (not a
    noiseless job itself)."""
    m = METHODS.get(method)
    return (m is not None and not level.endswith(NOISELESS) and m.has_noiseless and m.noiseless_per_level
            and not m.tunable and type(m.prototype).has_floor_lanes())


def run_job_lanes(method: str, levels: list[str], params: dict, root: Path | None = None) -> list[tuple[dict, dict]]:
    """The jobs (method, level) and (method, '<level>-noiseless') of every level of `levels` as one run: each level
    calibrated on its own, and every level's private run and noise-free twin as lanes of one run
    (`Mechanism.run_with_floor`, on the data every job of the method draws), each evaluated. Per level, the two
    records are those `run_job` writes for each job, bit for bit but for the timings: the time of the shared part
    (data, calibrations, the run) is split evenly between the records, each adds its own evaluation, and the
    calibration time is the level's own, in its private record (tests/experiments/test_beyond_frontier.py)."""
    if not levels or len(set(levels)) != len(levels):
        raise ValueError(f"{method}: one or more distinct levels expected, got {levels}")
    for level in levels:
        check_job(method, level, params)
        if not pairs_with_floor(method, level):
            raise ValueError(f"{method}/{level} does not run paired with its noise-free run; run its jobs one by one")
    ctx = context(params)
    t0, c0 = time.perf_counter(), time.process_time()
    X, y, splits = data(params, root)
    train = train_csr(X, splits)
    base = {"method": method, "params_hash": canonical_hash(job_params(params)), "repeats": len(splits)}
    values = {level_key(v): float(v) for v in params["levels"]}
    cals, cal_times = [], []
    for level in levels:
        tc = time.perf_counter()
        cals.append(calibrate_method(method, values[level], ctx))
        cal_times.append(time.perf_counter() - tc)
    mech = configured(method, ctx)
    block = METHODS[method].layout.block
    rngs = [_rngs(params, method, level, block) for level in levels]   # every level's job draws the same agents
    out, times = [], []
    with threadpool_limits(limits=int(params.get("blas_threads", 1))):
        runs = mech.run_with_floor(layout(method, X, y, splits, ctx, rngs[0]["agents"], train), cals, ctx.T,
                                   [r["noise"] for r in rngs])
        shared = (time.perf_counter() - t0, time.process_time() - c0)
        for level, cal, cal_time, (noisy, floor) in zip(levels, cals, cal_times, runs):
            for lv, models, quiet in ((level, noisy, False), (f"{level}-{NOISELESS}", floor, True)):
                w, c = time.perf_counter(), time.process_time()
                out.append({**base, "level": lv, "calibration": cal, "noiseless": quiet,
                            **_evaluate(models, X, y, splits, ctx.lam, train), "readings": {},
                            "calibration_time_s": 0.0 if quiet else cal_time})
                times.append((time.perf_counter() - w, time.process_time() - c))
    for rec, (w, c) in zip(out, times):
        rec.update(wall_time_s=shared[0] / len(out) + w, cpu_time_s=shared[1] / len(out) + c)
    return [(out[2 * k], out[2 * k + 1]) for k in range(len(levels))]


# Every key a job file holds (run_job's record, the floor's, a "not run" record's): a JSON file with any other key,
# or without a method and a level, is not a job file, and `frontier-job --out` never replaces it.
JOB_KEYS = {"method", "level", "params_hash", "repeats", "test_error", "train_objective", "trivial_error",
            "wall_time_s", "cpu_time_s", "calibration", "noiseless", "calibration_time_s", "step_scale", "step_sweep",
            "readings", "status", "reason"}


def is_job_file(path: Path, method: str | None = None, level: str | None = None) -> bool:
    """Whether the file at `path` is a job file this package wrote (a mapping of JOB_KEYS naming its method and
    level), of `method` and `level` when given: a job of another level is not one to replace (its result would be
    lost and read as this level's)."""
    from ..safeload import LoadError, load_json

    try:
        record = load_json(path, expect=dict)
    except LoadError:
        return False
    return (set(record) <= JOB_KEYS and isinstance(record.get("method"), str) and isinstance(record.get("level"), str)
            and method in (None, record["method"]) and level in (None, record["level"]))


def write_job(result: dict, path: str | Path) -> Path:
    path = Path(path)
    text = json.dumps(result, indent=1, sort_keys=True, default=_json_default) + "\n"
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))
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
    out, todo = {}, []
    for method, level in jobs_of(params):
        path = job_path(out_dir, method, level)
        try:
            job = safeload.load_json(path, expect=dict) if path.is_file() else None
            why = f"{path} is missing"
        except safeload.LoadError as exc:
            job, why = None, f"{exc}"
        if job is not None and job.get("params_hash") != want:
            job, why = None, f"{path} was written with other parameters"
        elif job is not None and (job.get("method"), job.get("level")) != (method, level):
            job, why = None, f"{path} holds the job {job.get('method')}/{job.get('level')}, not {method}/{level}"
        elif job is not None and (method, level) != FLOOR and METHODS[method].layout is STAR and "readings" not in job:
            # HUANG's star jobs record the aggregated model's scores beside their own (`readings`); one written
            # before they did is stale (the other layouts' jobs are unchanged by it)
            job, why = None, f"{path} lacks the scored-model readings of a star job"
        if job is None:
            if not run_missing:
                raise FileNotFoundError(f"{why}; run `snakemake --cores all beyond_frontier` or "
                                        f"`repro-dpadmm frontier-job {method} {level}`")
            log(f"{why}: running job {method}/{level} here")
            todo.append((method, level))
        out[(method, level)] = job
    # a ZKL method's levels whose noise-free runs are missing too run with them as lanes of one run (run_job_lanes:
    # the same numbers)
    lanes: dict[str, list[str]] = {}
    for m, lv in todo:
        if pairs_with_floor(m, lv) and (m, f"{lv}-{NOISELESS}") in todo:
            lanes.setdefault(m, []).append(lv)
    laned = {(m, lv) for m, lvs in lanes.items() for level in lvs for lv in (level, f"{level}-{NOISELESS}")}
    units = [(m, None) for m in lanes] + [ml for ml in todo if ml not in laned]
    for method, level in progress(units, "frontier jobs", name=lambda ml: f"{ml[0]}/{ml[1] or 'levels'}"):
        if level is None:   # a line per job run here
            done = [(lv, job) for pair in run_job_lanes(method, lanes[method], params, root) for job in pair
                    for lv in (job["level"],)]
        else:
            done = ((level, run_job(method, level, params, root)),)
        for lv, job in done:
            out[(method, lv)] = job
            write_job(job, job_path(out_dir, method, lv))
    return out


# ------------------------------------------------------------------------------------------------- aggregation
def separated(err_a, err_b, z: float = Z) -> bool:
    """Whether method a's test error is below b's by more than `z` standard errors of the mean paired difference
    over the repeats (both ran on the same split in every repeat). Fewer than 2 repeats: never."""
    d = np.asarray(err_b, dtype=float) - np.asarray(err_a, dtype=float)
    if d.size < 2:
        return False
    se = d.std(ddof=1) / np.sqrt(d.size)
    return bool(d.mean() > z * se) if se > 0 else bool(d.mean() > 0)


def summarise(jobs: dict, params: dict) -> dict:
    """Rows per (method, level) with the calibration, the test error over repeats, its noiseless run (optimiser
    floor), whether it beats the majority class and what limits it; and the non-private floor."""
    f = jobs[FLOOR]
    trivial = np.asarray(f["trivial_error"], dtype=float)
    rows = []
    for method in params["methods"]:
        m = METHODS[method]
        for v in params["levels"]:
            level = level_key(v)
            job = jobs[(method, level)]
            cal = job["calibration"]
            err = np.asarray(job["test_error"])
            quiet = jobs.get((method, noiseless_level(method, level))) if m.has_noiseless else None
            scale = job.get("step_scale")
            if quiet is not None and scale is not None:  # the optimiser floor at the step the level chose
                quiet = quiet["step_sweep"][f"{scale:g}"]
            qerr = None if quiet is None else np.asarray(quiet["test_error"], dtype=float)
            rows.append({
                "method": method, "label": m.label, "paper": m.paper, "kind": m.kind, "level": level,
                "distributed": m.distributed,
                "target": float(v), "noise_name": cal["noise_name"], "noise": cal["noise"], "C": cal.get("C"),
                "z": cal.get("z"), "sigma": cal.get("sigma"),
                "accounting": cal["accounting"], "paper_accounting": m.paper_accounting,
                "tight_eps": cal.get("tight_eps"), "paper_eps": cal.get("paper_eps"), "rdp_eps": cal.get("rdp_eps"),
                "spend_eps": cal.get("spend_eps"),
                "u0_factor_max": cal.get("u0_factor_max"), "calibrated": bool(cal["calibrated"]),
                "rel_gap": cal.get("rel_gap"), "step_scale": scale, "err": err.tolist(), "err_mean": float(err.mean()),
                "err_std": float(err.std()),
                "err_min": float(err.min()), "err_max": float(err.max()),
                "beats_constant": separated(err, trivial),
                "noiseless_err": None if qerr is None else qerr.tolist(),
                "noiseless_mean": None if qerr is None else float(qerr.mean()),
                "limited_by": None if qerr is None else ("noise" if separated(qerr, err) else "optimiser"),
                "obj_mean": float(np.mean(job["train_objective"])), "wall_time_s": float(job["wall_time_s"]),
                "readings": {name: [float(e) for e in r["test_error"]] for name, r in job.get("readings", {}).items()},
                "step_at_edge": None if scale is None else bool(np.isclose(scale, min(step_grid(params)))
                                                                or np.isclose(scale, max(step_grid(params)))),
                "calibration_time_s": float(job.get("calibration_time_s", 0.0)),
            })
    ferr = np.asarray(f["test_error"])
    floor = {"err": ferr.tolist(), "err_mean": float(ferr.mean()), "err_std": float(ferr.std()),
             "err_min": float(ferr.min()), "err_max": float(ferr.max()), "obj_mean": float(np.mean(f["train_objective"])),
             "trivial_err": trivial.tolist(), "trivial_mean": float(trivial.mean()),
             "wall_time_s": float(f["wall_time_s"]) + sum(float(j["wall_time_s"]) for (mm, lv), j in jobs.items()
                                                          if lv.endswith(NOISELESS))}
    return {"rows": rows, "floor": floor}


def under_reading(summary: dict, reading: str) -> dict:
    """The summary with each row's test error read under `reading` (a scored-model reading its job recorded:
    `global_model`, HUANG's aggregated w^T) where the row has one, and whether it beats the majority class judged
    again on it; the other rows as they are."""
    trivial = np.asarray(summary["floor"]["trivial_err"], dtype=float)
    rows = []
    for r in summary["rows"]:
        err = r.get("readings", {}).get(reading)
        if err is None:
            rows.append(r)
            continue
        e = np.asarray(err, dtype=float)
        rows.append({**r, "err": e.tolist(), "err_mean": float(e.mean()), "err_std": float(e.std()),
                     "err_min": float(e.min()), "err_max": float(e.max()), "beats_constant": separated(e, trivial)})
    return {**summary, "rows": rows}


def ranked(summary: dict, level: str, *, distributed: bool = True, eligible_only: bool = True) -> list[dict]:
    """The soundly calibrated methods of `level` by mean test error: the distributed ones (or XU's, with
    distributed=False), and only those better than the majority class if `eligible_only`."""
    rows = (r for r in summary["rows"] if r["level"] == level and r["calibrated"] and r["distributed"] == distributed
            and (r["beats_constant"] or not eligible_only))
    return sorted(rows, key=lambda r: r["err_mean"])


def _span(lo: float, hi: float, digits: int = 2) -> str:
    """'1.20x', or '1.20-1.50x' when the two differ at that precision."""
    a, b = f"{lo:.{digits}f}", f"{hi:.{digits}f}"
    return f"{a}x" if a == b else f"{a}-{b}x"


def _ratio_phrase(lo: float, hi: float) -> str:
    """How a paper's own total compares with the tight one, read from the ratio range paper / tight."""
    span = _span(lo, hi)
    if lo >= 1.0:
        return f"states {span} the tight total of the same noise: loose by that factor, and sound"
    if hi < 1.0:
        return f"states only {span} the true total of the same noise: it **understates** the privacy loss"
    return f"states {span} the tight total: loose at some levels, understating at others"


def metrics(summary: dict, params: dict) -> tuple[dict, dict]:
    """(flat metrics.json, per-repeat values) of the item (keys documented in config/claims/beyond.yaml)."""
    rows, floor = summary["rows"], summary["floor"]
    rep: dict = {}
    levels = [level_key(v) for v in params["levels"]]
    lo, hi = levels[int(np.argmin(params["levels"]))], levels[int(np.argmax(params["levels"]))]
    agents, n_train = int(params["huang"]["agents"]), int(params["n_train"])
    out = {"delta": float(params["delta"]), "repeat_count": int(params["repeats"]),
           "iterations": int(params["iterations"]),
           "levels": ", ".join(levels), "lowest_level": min(map(float, params["levels"])),
           "highest_level": max(map(float, params["levels"])), "pure_composition": params.get("pure_composition",
                                                                                              "optimal"),
           "floor.test_error_std": floor["err_std"], "floor.train_objective_mean": floor["obj_mean"],
           "separation_z": Z}

    def put(key, values):
        v = np.asarray(values, dtype=float)
        out[key], rep[key] = float(v.mean()), v

    put("floor.test_error_mean", floor["err"])
    put("trivial.test_error_mean", floor["trivial_err"])
    for r in rows:
        k = f"{r['method']}.{r['level']}"
        put(f"err.{k}", r["err"])
        out[f"err_std.{k}"] = r["err_std"]
        out[f"noise.{k}"] = r["noise"]
        out[f"beats_constant.{k}"] = r["beats_constant"]
        if r["step_scale"] is not None:
            out[f"step_scale.{k}"] = r["step_scale"]
        if r["noiseless_err"] is not None:
            put(f"noiseless_err.{k}", r["noiseless_err"])
            out[f"limited_by.{k}"] = r["limited_by"]
        p = f"privacy.{r['method']}.{r['level']}"
        out[f"{p}.paper_eps"] = r["paper_eps"]
        out[f"{p}.pld_eps"] = r["tight_eps"]
        out[f"{p}.rdp_eps"] = r["rdp_eps"]
        out[f"{p}.delta"] = float(params["delta"])
        out[f"{p}.{r['noise_name']}"] = r["noise"]
        if r["C"] is not None:
            out[f"{p}.C"] = r["C"]
        if r["u0_factor_max"] is not None:
            out[f"{p}.u0_factor_max"] = r["u0_factor_max"]
        out[f"{p}.calibrated"] = r["calibrated"]
    sound = [r for r in rows if r["calibrated"]]
    gaps = [r["rel_gap"] for r in sound]
    out["calibration.max_rel_gap"] = max(gaps) if gaps else None
    # from each method's own spend (what its run records), not from the calibrator's own number
    out["calibration.max_excess"] = max(r["spend_eps"] / r["target"] - 1 for r in sound) if sound else None
    out["calibration.jobs"] = len(sound)
    for r in rows:  # each scored-model reading of the rows that recorded one (`<key>@<reading>`)
        for name, err in r.get("readings", {}).items():
            put(f"err.{r['method']}.{r['level']}@{name}", err)
        if r.get("step_at_edge") is not None:
            out[f"step_at_edge.{r['method']}.{r['level']}"] = r["step_at_edge"]

    def winners(summ: dict, level: str, at: str = "") -> list[dict]:
        """The level's winner keys under one reading (suffix `at`, "" for the default)."""
        win = ranked(summ, level)
        everyone = ranked(summ, level, eligible_only=False)
        out[f"winner_found.{level}{at}"] = bool(win)
        out[f"winner.{level}{at}"] = win[0]["method"] if win else "none"
        out[f"no_better_than_constant.{level}{at}"] = len(everyone) - len(win)
        if win:
            put(f"winner_err.{level}{at}", win[0]["err"])
            out[f"winner_gap_to_floor.{level}{at}"] = win[0]["err_mean"] - floor["err_mean"]
            out[f"winner_limited_by.{level}{at}"] = win[0]["limited_by"]
        if len(win) > 1:
            out[f"runner_up.{level}{at}"] = win[1]["method"]
            out[f"winner_margin.{level}{at}"] = win[1]["err_mean"] - win[0]["err_mean"]
            out[f"winner_separated.{level}{at}"] = separated(win[0]["err"], win[1]["err"])
        if everyone:
            put(f"best_err.distributed.{level}{at}", everyone[0]["err"])
            out[f"best.distributed.{level}{at}"] = everyone[0]["method"]
        star = sorted((r for r in summ["rows"] if r["level"] == level and r["calibrated"]
                       and METHODS[r["method"]].layout is STAR and r["kind"] == "gaussian"),
                      key=lambda r: r["err_mean"])
        if star:
            put(f"best_err.huang_gaussian.{level}{at}", star[0]["err"])
            out[f"best.huang_gaussian.{level}{at}"] = star[0]["method"]
        return win

    compared = better = 0
    for level in levels:
        win = winners(summary, level)
        # a winner is stated only where it is the same method, separated from the next, under every reading
        robust = bool(win) and out.get(f"winner_separated.{level}", len(win) == 1)
        for name in READINGS:
            w = winners(under_reading(summary, name), level, f"@{name}")
            robust = robust and bool(w) and w[0]["method"] == win[0]["method"] and out.get(
                f"winner_separated.{level}@{name}", len(w) == 1)
        out[f"winner_robust.{level}"] = bool(robust)
        xu = ranked(summary, level, distributed=False, eligible_only=False)
        if xu:
            out[f"xu_reference.method.{level}"] = xu[0]["method"]
            put(f"xu_reference.err.{level}", xu[0]["err"])
        best = {kind: next((r for r in win if r["kind"] == kind), None) for kind in ("gaussian", "pure")}
        for kind, r in best.items():
            if r is not None:
                put(f"best_err.{kind}.{level}", r["err"])
        if best["gaussian"] and best["pure"]:
            compared += 1
            better += separated(best["gaussian"]["err"], best["pure"]["err"])
        # the sqrt(n) effect: HUANG DPSGD's noise on the aggregated gradient against XU's on the full gradient
        dp = next((r for r in rows if r["method"] == "huang_dpsgd" and r["level"] == level), None)
        xr = next((r for r in rows if r["method"] == "xu_dpadmm" and r["level"] == level), None)
        if dp and xr and dp["z"] and xr["sigma"]:
            agent_sigma = dp["z"] * 2.0 / (n_train // agents)       # replace-one sensitivity 2 c_1 / m_i, c_1 = 1
            out[f"averaging.agent_sigma.{level}"] = agent_sigma
            out[f"averaging.aggregate_over_xu.{level}"] = agent_sigma / np.sqrt(agents) / xr["sigma"]
    out["averaging.sensitivity_ratio"] = float(agents)             # (2c/m) / (2c/N) = N/m = n
    out["averaging.sqrt_n"] = float(np.sqrt(agents))
    out["gaussian_beats_pure.levels_compared"] = compared
    out["gaussian_beats_pure.levels"] = better
    out["gaussian_beats_pure.all_compared"] = bool(compared) and better == compared
    for role, level in (("lowest", lo), ("highest", hi)):
        for key in ("winner", "winner_found", "winner_err", "winner_gap_to_floor", "best_err.distributed",
                    "best_err.gaussian", "best_err.pure", "best_err.huang_gaussian", "xu_reference.err",
                    "winner_separated", "winner_robust"):
            for at in ("", *(f"@{name}" for name in READINGS)):
                if f"{key}.{level}{at}" in out:
                    out[f"{key}.{role}{at}"] = out[f"{key}.{level}{at}"]
                    if f"{key}.{level}{at}" in rep:
                        rep[f"{key}.{role}{at}"] = rep[f"{key}.{level}{at}"]
    if sound:
        best = min(sound, key=lambda r: r["err_mean"])
        put("min_private_err_minus_floor", np.asarray(best["err"]) - np.asarray(floor["err"]))
    # where the papers' own accounting disagrees with the tight one, for the noise actually used: the soundly
    # calibrated methods with a paper bound, per layout (named by its block: huang, zhang, xu)
    for lay in LAYOUTS:
        ratios = [r["paper_eps"] / r["tight_eps"] for r in rows if r["calibrated"] and r["paper_eps"] is not None
                  and r["tight_eps"] and METHODS[r["method"]].layout is lay]
        fam = lay.block
        if ratios:
            out[f"paper_over_tight.{fam}.min"] = min(ratios)
            out[f"paper_over_tight.{fam}.max"] = max(ratios)
    paper_rows = [r for r in rows if r["kind"] == "xu_paper"]
    if paper_rows:
        ratio = [r["tight_eps"] / r["target"] for r in paper_rows]
        out["xu_paper.true_over_claimed.min"] = min(ratio)
        out["xu_paper.true_over_claimed.max"] = max(ratio)
        out["xu_paper.u0_factor_max"] = max(r["u0_factor_max"] for r in paper_rows)
        for r in paper_rows:
            twin = next((q for q in rows if q["method"] == r["method"].removesuffix("_paper")
                         and q["level"] == r["level"]), None)
            if twin:
                out[f"xu_paper.err_advantage.{r['method'].removesuffix('_paper')}.{r['level']}"] = (
                    twin["err_mean"] - r["err_mean"])
    out["wall_time.jobs_sum_s"] = sum(r["wall_time_s"] for r in rows) + floor["wall_time_s"]
    return out, rep


def _fmt(v, digits=3):
    return "—" if v is None else f"{v:.{digits}g}"


def table_markdown(summary: dict, params: dict) -> str:
    """One row per (method, level): noise parameter found, accounting used, the epsilons, test error, the same
    method without noise, and what the numbers say about it."""
    head = ("| method | level ε | noise parameter | learning rate (× the paper's) | accounting used (total) | ε tight | "
            "ε paper's own | test error (mean ± std) | without noise | verdict |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in summary["rows"]:
        noise = f"{r['noise_name']} = {r['noise']:.4g}" + (f", C = {r['C']:.4g}" if r["C"] is not None else "")
        step = "— (exact local steps)" if r["step_scale"] is None else \
            f"{METHODS[r['method']].prototype.step_name} × {r['step_scale']:g}"
        tight = _fmt(r["tight_eps"], 4) + ("" if r["calibrated"] else " (true ε; the paper claims the level)")
        used = r["accounting"] if r["calibrated"] else "none: Theorem 1 as published (c/n; u₀ from the exact gradient)"
        verdict = ("no better than constant" if not r["beats_constant"] else
                   f"limited by the {r['limited_by']}" if r["limited_by"] else "better than constant")
        if not r["distributed"]:
            verdict += " (trusted-curator reference, not ranked)"
        lines.append(f"| {r['label']} | {r['target']:g} | {noise} | {step} | {used} | {tight} | "
                     f"{_fmt(r['paper_eps'], 4)} ({r['paper_accounting']}) | "
                     f"{r['err_mean']:.4f} ± {r['err_std']:.4f} | {_fmt(r['noiseless_mean'], 4)} | {verdict} |")
    f = summary["floor"]
    lines.append(f"| non-private optimum | ∞ | — | — | — | — | — | {f['err_mean']:.4f} ± {f['err_std']:.4f} | — | — |")
    lines.append(f"| majority class | 0 | — | — | — | — | — | {f['trivial_mean']:.4f} | — | — |")
    return "\n".join(lines)


def conclusions(m: dict, summary: dict, params: dict) -> str:
    """The closing text (markdown paragraphs), every number and every judgement from the metrics and the summary."""
    labels = {k: v.label for k, v in METHODS.items()}
    levels = [level_key(v) for v in params["levels"]]
    rows = summary["rows"]
    agents, n_train = int(params["huang"]["agents"]), int(params["n_train"])
    z = f"{m['separation_z']:g}"

    def at(lv):
        return f"ε = {float(lv[3:]):g}"

    def win(lv):
        if not m[f"winner_found.{lv}"]:
            best = m.get(f"best.distributed.{lv}")
            tail = (f"; the best, {labels[best]}, has {m[f'best_err.distributed.{lv}']:.4f} against the constant "
                    f"{m['trivial.test_error_mean']:.4f}" if best else "")
            return f"{at(lv)}: **none better than constant**{tail}"
        if not m.get(f"winner_robust.{lv}", True):
            # no winner is stated where the scored model decides it: each reading's first, side by side
            firsts = []
            for name, at_ in (("agents' own models", ""), *((f"reading {r}", f"@{r}") for r in READINGS)):
                if m.get(f"winner_found.{lv}{at_}"):
                    nxt = m.get(f"runner_up.{lv}{at_}")
                    firsts.append(f"{name}: {labels[m[f'winner.{lv}{at_}']]} {m[f'winner_err.{lv}{at_}']:.4f}"
                                  + (f", next {labels[nxt]} +{m[f'winner_margin.{lv}{at_}']:.4f}"
                                     + ("" if m[f"winner_separated.{lv}{at_}"] else f" (not separated by {z} paired SE)")
                                     if nxt else ""))
            return f"{at(lv)}: **no winner under every scoring** (" + "; ".join(firsts) + ")"
        text = f"{at(lv)}: **{labels[m[f'winner.{lv}']]}** ({m[f'winner_err.{lv}']:.4f}"
        if f"runner_up.{lv}" in m:
            sep = "" if m[f"winner_separated.{lv}"] else f", not separated by {z} paired SE"
            text += f"; next {labels[m[f'runner_up.{lv}']]}, +{m[f'winner_margin.{lv}']:.4f}{sep}"
        if m.get(f"winner_limited_by.{lv}"):
            text += f"; limited by the {m[f'winner_limited_by.{lv}']}"
        return text + ")"

    parts = [f"**Winners among the distributed methods** (every agent protects its own records; lowest mean test "
             f"error among the methods with a sound guarantee that beat the majority class by more than {z} paired "
             f"standard errors, stated where the same method wins, separated from the next, whether HUANG's "
             f"star methods are scored by the agents' own models or by the aggregated w^T; δ = {m['delta']:g}, "
             f"{m['repeat_count']} repeats): " + "; ".join(win(lv) for lv in levels)
             + f". Non-private optimum: {m['floor.test_error_mean']:.4f}; majority class: "
             f"{m['trivial.test_error_mean']:.4f}."]
    constant = []
    for lv in levels:
        names = [r["label"] for r in rows if r["level"] == lv and r["calibrated"] and not r["beats_constant"]]
        if names:
            constant.append(f"{at(lv)}: " + ", ".join(names))
    if constant:
        parts.append("**No better than the constant classifier** (not ranked): " + "; ".join(constant) + ".")
    lim = {"noise": [], "optimiser": []}
    for r in rows:
        if r["calibrated"] and r["beats_constant"] and r["limited_by"]:
            lim[r["limited_by"]].append(f"{r['label']} at {at(r['level'])} ({r['err_mean']:.4f}; without noise "
                                        f"{r['noiseless_mean']:.4f})")
    if lim["optimiser"]:
        parts.append(f"**Limited by the optimiser** (within {z} paired SE of the same method without noise, same T = "
                     f"{m['iterations']}): " + "; ".join(lim["optimiser"]) + ".")
    if lim["noise"]:
        parts.append(f"**Limited by the noise** (above the same method without noise by more than {z} paired SE): "
                     + "; ".join(lim["noise"]) + ".")
    tuned = {}
    for r in rows:
        if r["step_scale"] is not None:
            tuned.setdefault(r["method"], []).append(f"×{r['step_scale']:g} at {at(r['level'])}")
    if tuned:
        parts.append(f"**Learning rates, one rule** (every method with a learning rate runs at each multiple "
                     f"{', '.join(f'{g:g}' for g in step_grid(params))} of its paper's and keeps the lowest mean "
                     "training objective at that level; exact local solvers have none): "
                     + "; ".join(f"{labels[k]} ({METHODS[k].prototype.step_name}) {', '.join(v)}"
                                 for k, v in tuned.items()) + ".")
    xu = [lv for lv in levels if f"xu_reference.err.{lv}" in m]
    if xu:
        cmp = []
        for lv in xu:
            txt = f"{at(lv)}: {labels[m[f'xu_reference.method.{lv}']]} {m[f'xu_reference.err.{lv}']:.4f}"
            if m[f"winner_found.{lv}"]:
                w = next(r for r in rows if r["method"] == m[f"winner.{lv}"] and r["level"] == lv)
                x = next(r for r in rows if r["method"] == m[f"xu_reference.method.{lv}"] and r["level"] == lv)
                if separated(x["err"], w["err"]):
                    rel = "below"
                elif separated(w["err"], x["err"]):
                    rel = "above"
                else:
                    rel = "not separated from"
                # the default scoring's first: "the distributed winner" only where every scoring agrees
                txt += (f" ({rel} the distributed winner)" if m.get(f"winner_robust.{lv}", True) else
                        f" ({rel} {labels[w['method']]}, the best distributed method by the agents' own models)")
            cmp.append(txt)
        parts.append("**XU as a reference, not ranked.** XU's algorithms are centralised: one trusted curator holds "
                     f"all {n_train} records, another threat model than the agents' own protection. Best XU run per "
                     "level: " + "; ".join(cmp) + ".")
    if "averaging.aggregate_over_xu." + levels[-1] in m:
        ratios = [m[f"averaging.aggregate_over_xu.{lv}"] for lv in levels if f"averaging.aggregate_over_xu.{lv}" in m]
        parts.append(f"**Why centralisation helps, by how much.** A record moves a HUANG agent's "
                     f"{n_train // agents}-record mean gradient {m['averaging.sensitivity_ratio']:g}x more than the "
                     f"curator's {n_train}-record mean, so each agent's noise is {m['averaging.sensitivity_ratio']:g}x "
                     f"XU's at the same multiplier; but the aggregator combines {agents} independently noised agents "
                     f"(summed or averaged, the noise relative to the gradient is the same), which divides it by "
                     f"√{agents} = {m['averaging.sqrt_n']:.3g}: DPSGD's noise on the aggregated mean gradient is "
                     f"{_span(min(ratios), max(ratios), 1)} XU's (from the calibrated noise), not "
                     f"{m['averaging.sensitivity_ratio']:g}x.")
    star = {lv: [r for r in rows if r["level"] == lv and METHODS[r["method"]].layout is STAR and r["calibrated"]]
            for lv in levels}
    gauss = [at(lv) for lv in levels if any(r["kind"] == "gaussian" and r["beats_constant"] for r in star[lv])]
    pure = [at(lv) for lv in levels if any(r["kind"] == "pure" and r["beats_constant"] for r in star[lv])]
    if any(star.values()):
        parts.append(f"**Gaussian against pure-ε noise, on the same records** (HUANG's star, {n_train // agents} per "
                     f"agent): a Gaussian-mechanism method (DP-ADMM, PVP, DPSGD) beats the constant classifier at "
                     f"{', '.join(gauss) or 'no level'}; the pure-ε DVP at {', '.join(pure) or 'no level'}. ZKL's "
                     "pure-ε methods run on other records (the five-node network's 8,000 per node), so they are no "
                     "comparison of mechanisms.")
    acc = []
    for fam, what in (("huang", "HUANG's total (classic moments accountant; T ε for DVP)"),
                      ("zhang", "ZKL's P(T), a sum over iterations,"),
                      ("xu", "XU's Theorem 1 (sensitivity c/n, one RDP order)")):
        if f"paper_over_tight.{fam}.min" in m:
            acc.append(f"{what} {_ratio_phrase(m[f'paper_over_tight.{fam}.min'], m[f'paper_over_tight.{fam}.max'])}.")
    if acc:
        parts.append("**Accounting.** " + " ".join(acc))
    if "xu_paper.true_over_claimed.min" in m:
        parts.append(f"Run as published, XU's algorithms spend {m['xu_paper.true_over_claimed.min']:.2f}-"
                     f"{m['xu_paper.true_over_claimed.max']:.2f}x the ε they claim. Their u₀, built from the exact "
                     "gradient, reaches the released x_t on this l2 problem only through (λ/(λ+ρ))^t ∇f(x₀): it "
                     f"raises a step's sensitivity by a factor of at most {m['xu_paper.u0_factor_max']:.7f}, which "
                     "the true ε includes.")
    return "\n\n".join(parts)


STYLE = {  # colour per paper, marker per method
    "huang_dpadmm": ("tab:red", "o"), "huang_pvp": ("tab:orange", "s"), "huang_dvp": ("tab:brown", "v"),
    "huang_dpsgd": ("tab:pink", "D"),
    "zhang_pp": ("tab:blue", "o"), "zhang_dvp": ("tab:cyan", "v"), "zhang_radmm": ("navy", "^"),
    "xu_dpadmm": ("tab:green", "o"), "xu_dpaccadmm": ("olive", "s"),
    "xu_dpadmm_paper": ("tab:green", "o"), "xu_dpaccadmm_paper": ("olive", "s"),
}


def figure(summary: dict, params: dict):
    """(a) the distributed methods' test error against total epsilon (mean with min-max bars over repeats), each
    beside its optimiser floor (the same method without noise, thin dotted), the non-private optimum as a band and the
    majority class; (b) the same for XU's centralised algorithms, a trusted-curator reference (runs with XU's own,
    unsound, accounting dashed at the epsilon they truly spend); (c) the paper's own accounting of the noise used,
    relative to the tight one (> 1: looser; < 1: understates)."""
    import matplotlib.pyplot as plt

    fig, (ax, cx, bx) = plt.subplots(1, 3, figsize=(18, 6.4), gridspec_kw={"width_ratios": [1.3, 1, 1]})
    f = summary["floor"]
    for a in (ax, cx):
        a.axhspan(f["err_min"], f["err_max"], color="0.85", zorder=0)
        a.axhline(f["err_mean"], color="k", lw=1.2, label=f"non-private optimum ({f['err_mean']:.3f})")
        a.axhline(f["trivial_mean"], color="k", lw=1.0, ls=":", label=f"majority class ({f['trivial_mean']:.3f})")
    ratios = {}  # methods whose accounting states the same ratio (HUANG's Gaussian ones: one z) share one line
    for method in params["methods"]:
        rows = sorted((r for r in summary["rows"] if r["method"] == method), key=lambda r: r["target"])
        c, mk = STYLE.get(method, ("0.5", "o"))
        paper = rows[0]["kind"] == "xu_paper"
        target = ax if rows[0]["distributed"] else cx
        x = np.array([r["tight_eps"] if paper else r["target"] for r in rows])  # as published: at its true epsilon
        y = np.array([r["err_mean"] for r in rows])
        yerr = np.array([[r["err_mean"] - r["err_min"] for r in rows], [r["err_max"] - r["err_mean"] for r in rows]])
        target.errorbar(x, y, yerr=yerr, color=c, marker=mk, ms=5, lw=1.4, capsize=2, ls="--" if paper else "-",
                        mfc="white" if paper else c, label=rows[0]["label"] + (" (at its true ε)" if paper else ""))
        if rows[0]["noiseless_mean"] is not None:
            target.plot(x, [r["noiseless_mean"] for r in rows], color=c, marker=mk, ms=3, lw=0.8, ls=":",
                        mfc="white")
        if any(r["paper_eps"] is None for r in rows):  # no paper bound: nothing to compare in panel (c)
            continue
        ratio = np.array([r["paper_eps"] / r["tight_eps"] for r in rows])
        same = next((k for k in ratios if len(k) == len(ratio) and np.allclose(k, ratio, rtol=0.01)), tuple(ratio))
        ratios.setdefault(same, []).append((rows, c, mk, paper))
    for ratio, group in ratios.items():
        rows, c, mk, paper = group[0]
        bx.plot([r["target"] for r in rows], ratio, color=c, marker=mk, ls="--" if paper else "-",
                mfc="white" if paper else c, label=", ".join(g[0][0]["label"] for g in group)
                + (" (the same ratio, within 1%)" if len(group) > 1 else ""))
    cx.plot([], [], color="0.3", ls=":", lw=0.8, marker="o", ms=3, mfc="white", label="thin dotted: the same method "
            "without noise (optimiser floor)")
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    for a in (ax, cx):
        a.set_xscale("log")
        a.xaxis.set_minor_formatter(NullFormatter())
        a.set_xlabel(f"total ε at δ = {float(params['delta']):g} (tight accounting)")
        a.set_xticks([float(v) for v in params["levels"]], [f"{float(v):g}" for v in params["levels"]])
        a.legend(fontsize=7, loc="upper right")
    cx.set_title("(b) XU, centralised: trusted-curator reference, not ranked")
    top = max(r["err_max"] for r in summary["rows"])
    cx.set_ylim(min(f["err_min"], min(r["err_min"] for r in summary["rows"])) - 0.01, min(top + 0.01, 0.6))
    ax.set_ylabel(f"test error ({int(params['repeats'])} repeats: mean, min-max)")
    ax.set_title("(a) distributed methods at equal total privacy")
    ax.set_ylim(*cx.get_ylim())
    bx.axhline(1.0, color="k", lw=0.8)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xticks([float(v) for v in params["levels"]], [f"{float(v):g}" for v in params["levels"]])
    bx.set_xlabel("level ε")
    bx.set_ylabel("paper's own ε / tight ε, same noise")
    bx.xaxis.set_minor_formatter(NullFormatter())
    lo_y, hi_y = bx.get_ylim()
    ticks = [t for t in (0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0) if lo_y <= t <= hi_y] or [1.0]
    bx.yaxis.set_major_locator(FixedLocator(ticks))
    bx.yaxis.set_major_formatter(ScalarFormatter())
    bx.yaxis.set_minor_formatter(NullFormatter())
    bx.set_title("(c) > 1: the paper's accounting is loose; < 1: it understates")
    bx.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13))  # below: the lines fill the panel
    fig.tight_layout()
    return fig


def report_note(conclusions_text: str) -> str:
    """The winners (first two paragraphs of `conclusions`) as plain text, for the report's note on the item."""
    return " ".join(conclusions_text.split("\n\n")[:2]).replace("**", "")


# ------------------------------------------------------------------------------------------------- the item
def run_frontier(params: dict, out_dir: str | Path | None = None) -> dict:
    """Every job of the grid from `out_dir/jobs/` (default results/beyond/frontier/jobs, where rule frontier_job and
    `repro-dpadmm frontier-job` write them; a missing or stale job is run here, see `load_jobs`), summarised."""
    check_params(params)
    jobs = load_jobs(params, results_dir() / PAPER / ITEM if out_dir is None else out_dir)
    return {"params": params, "summary": summarise(jobs, params)}


def plot_frontier(result: dict) -> dict:
    return {"frontier": figure(result["summary"], result["params"])}


def metrics_frontier(result: dict) -> dict:
    """write_metrics arguments: the flat metrics, the per-repeat values, and the winners as the report's note."""
    m, rep = metrics(result["summary"], result["params"])
    return {"metrics": m, "repeats": rep, "note": report_note(conclusions(m, result["summary"], result["params"]))}


def table_frontier(result: dict, m: dict) -> str:
    """The table of every (method, level), then the closing text computed from the metrics."""
    return (table_markdown(result["summary"], result["params"]) + "\n\n"
            + conclusions(m, result["summary"], result["params"]))
