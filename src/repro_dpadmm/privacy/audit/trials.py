"""The trials of a two-dataset audit, produced by a mechanism's own code, and one audit of a release with its noise
as claimed and as a mis-calibrated control.

A mechanism hands the audit a `Step`: (dataset b, noise factor, one "generator" per trial) -> the outputs of one
release on D_b, (trials, dim); the noise factor multiplies the mechanism's own sigma (1: as claimed; 0.25: noise 4x
too small). The library's steps take one Generator per repeat; `TrialNoise` hands each trial its row of one
vectorised draw. Running the whole update once per trial costs ~60 microseconds a trial (XU's step), so by default
(`sampling="affine"`) the step runs on a few hundred probe trials, its map from the standard normals it draws to its
output, out = f_b + z J_b, is read off by least squares (exact for a Gaussian mechanism; checked out of sample to
1e-9), and the trials are f_b + z J_b for fresh normals z: one matrix product per chunk, and the same outputs the
library gives for those draws (tests/privacy/audit/test_trials.py checks it). `sampling="direct"` runs the step on
every trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...rng import seed_sequence
from .two_datasets import AuditResult, Sampler, run_audit

SAMPLING = ("affine", "direct")

# A release: (dataset b, noise factor, one "generator" per trial) -> the outputs of one release on D_b, (trials, dim).
Step = Callable[[int, float, Sequence], np.ndarray]


# ------------------------------------------------------------------------------------------------- trial noise
class TrialNoise:
    """Stands in for a list of per-repeat Generators (`rng.repeat_generators`) so that the library's per-repeat code
    runs 10^5 trials at the cost of one vectorised draw.

    `handles[r]` is trial r's "generator": its k-th `standard_normal(size)` call returns row r of the k-th block, a
    (trials,) + size array of standard normals drawn at once from one seeded Generator. Trials are independent, and
    the same seed gives the same numbers. Only `standard_normal` and `normal` exist: a mechanism that draws anything
    else is not Gaussian and fails loudly.
    """

    def __init__(self, rng: np.random.Generator, trials: int, record: bool = False):
        self._rng, self.trials = rng, int(trials)
        self._blocks: dict[int, list] = {}            # call index -> [block, handles yet to read it]
        self._calls = np.zeros(self.trials, dtype=np.int64)
        self._record = [] if record else None
        self.handles = [_TrialRng(self, r) for r in range(self.trials)]

    def drawn(self) -> np.ndarray:
        """(trials, p): every standard normal each trial received, in call order (needs record=True)."""
        if self._record is None:
            raise ValueError("TrialNoise(record=True) is needed to read back the draws")
        if not self._record:
            return np.zeros((self.trials, 0))
        return np.concatenate([b.reshape(self.trials, -1) for b in self._record], axis=1)

    def _draw(self, r: int, size: tuple) -> np.ndarray:
        k = int(self._calls[r])
        self._calls[r] += 1
        entry = self._blocks.get(k)
        if entry is None:
            block = self._rng.standard_normal((self.trials,) + size)
            block.flags.writeable = False
            entry = self._blocks[k] = [block, self.trials]
            if self._record is not None:
                self._record.append(block)
        elif entry[0].shape[1:] != size:
            raise ValueError(f"trial {r} asked for noise of shape {size} where other trials drew {entry[0].shape[1:]}; "
                             "TrialNoise needs every trial to draw the same shapes in the same order")
        entry[1] -= 1
        out = entry[0][r]
        if entry[1] == 0:
            del self._blocks[k]
        return out


class _TrialRng:
    __slots__ = ("_pool", "_r")

    def __init__(self, pool: TrialNoise, r: int):
        self._pool, self._r = pool, r

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        if out is not None or np.dtype(dtype) != np.float64:
            raise ValueError("TrialNoise draws float64 arrays only (no dtype, no out)")
        size = () if size is None else (tuple(int(s) for s in size) if np.iterable(size) else (int(size),))
        return self._pool._draw(self._r, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return loc + scale * self.standard_normal(size)


def streams(seed: int, *labels: str) -> tuple[np.random.Generator, np.random.Generator]:
    """One Generator per dataset (D_0, D_1) for one audit; depends only on (seed, labels)."""
    return tuple(np.random.default_rng(seed_sequence(seed, *labels, f"D{b}")) for b in (0, 1))


# ------------------------------------------------------------------------------------------------- samplers
def direct_sampler(step: Step, noise_factor: float, rngs: Sequence[np.random.Generator]) -> Sampler:
    """Every trial is one run of the library's step (exact, slow: the whole update runs once per trial)."""
    def sample(b: int, k: int) -> np.ndarray:
        return step(b, noise_factor, TrialNoise(rngs[b], k).handles)
    return sample


@dataclass(frozen=True)
class AffineFit:
    """out = f + z J for the standard normals z (p,) a step draws; `max_error`: largest deviation on held-out trials;
    `used`: the draws that reach the output (rows of J not zero; e.g. only party m's noise reaches its share)."""

    f: np.ndarray
    J: np.ndarray
    max_error: float
    used: np.ndarray


def fit_affine(step: Step, b: int, noise_factor: float, rng: np.random.Generator, *, check_trials: int = 32,
               extra: int = 64, rtol: float = 1e-9) -> AffineFit:
    """Read the step's map from its Gaussian draws to its output off the library itself.

    The library's step runs on `check_trials` trials (which reveals the number p of normals a step draws), then on
    p + `extra` trials, from which least squares gives f and J in out = f + z J exactly (for a Gaussian mechanism the
    released value is affine in the noise); the first trials then check the fit out of sample. A step that is not
    affine in its draws (noise clipped, data-dependent noise, ...) fails here with a clear error.
    """
    pool = TrialNoise(rng, check_trials, record=True)
    out_check = np.asarray(step(b, noise_factor, pool.handles), float)
    Z_check = pool.drawn()
    p = Z_check.shape[1]
    pool = TrialNoise(rng, p + extra, record=True)
    out = np.asarray(step(b, noise_factor, pool.handles), float)
    Z = pool.drawn()
    design = np.hstack([np.ones((len(Z), 1)), Z])
    coef = np.linalg.lstsq(design, out, rcond=None)[0]
    f, J = coef[0], coef[1:]
    err = float(np.max(np.abs(out_check - (f + Z_check @ J)), initial=0.0))
    scale = 1.0 + float(np.max(np.abs(out_check), initial=0.0))
    if not err <= rtol * scale:
        raise ValueError(f"the step is not affine in its Gaussian draws (out-of-sample error {err:.3g} for outputs of "
                         f"size {scale:.3g}): audit it with sampling='direct'")
    used = np.abs(J).max(axis=1, initial=0.0) > rtol * (1.0 + np.abs(J).max(initial=0.0))
    return AffineFit(f, J, err, used)


def affine_sampler(step: Step, noise_factor: float, rngs: Sequence[np.random.Generator],
                   probe_rng: np.random.Generator) -> tuple[Sampler, list[AffineFit]]:
    """Trials as one array op: out = f_b + z J_b with f_b, J_b read off the library's step (`fit_affine`) and fresh
    standard normals z for the draws that reach the output: the outputs the library would give for such draws, at the
    cost of one matrix product."""
    fits = [fit_affine(step, b, noise_factor, probe_rng) for b in (0, 1)]
    maps = [fit.J[fit.used] for fit in fits]

    def sample(b: int, k: int) -> np.ndarray:
        return fits[b].f + rngs[b].standard_normal((k, maps[b].shape[0])) @ maps[b]
    return sample, fits


# ------------------------------------------------------------------------------------------------- one audit
@dataclass
class AuditCase:
    """One release of a mechanism as implemented, ready to audit on a neighbouring pair (built by the mechanism).

    step: the release on D_b (see `Step`). epsilon, delta: the claim. sigma: the mechanism's noise standard deviation
    for the claim (in the units of the value it perturbs); sensitivity: the worst-case l2 distance of that value
    between neighbours under the audit's relation (None when the noise is not isotropic on it); paper_sensitivity:
    the one the calibration assumes; pair_distance: the pair's actual distance (the most any test on this pair can
    see). None of these enters the audit, which sees only outputs; they give the ceilings shown beside its bound.
    score: outputs -> scores (None: the projection test). correct: expected to keep its claim. caveat: what a bound
    found for this case does and does not say about the paper (one sentence, shown with a violation).
    """

    label: str
    paper: str
    epsilon: float
    delta: float
    sigma: float
    sensitivity: float | None
    paper_sensitivity: float | None
    pair_distance: float | None
    step: Step
    neighbours: str
    score: Callable[[np.ndarray], np.ndarray] | None = None
    score_name: str = "projection"
    correct: bool = True
    caveat: str = ""
    notes: list = field(default_factory=list)
    extras: dict = field(default_factory=dict)   # further numbers of this case, written as <key>.<name>


@dataclass(frozen=True)
class VariantAudit:
    """The audit of one variant of a case: its result, its noise factor, the affine fits (None: direct), seconds."""

    result: AuditResult
    noise_factor: float
    fits: list | None
    seconds: float


def check_sampling(sampling: str) -> None:
    if sampling not in SAMPLING:
        raise ValueError(f"sampling must be 'affine' (trials as one array op, the step's affine map read off the "
                         f"library) or 'direct' (the library's step on every trial), got {sampling!r}")


def audit_variants(case: AuditCase, noise_factors: Mapping[str, float], *, seed: int, labels: Sequence[str],
                   alpha: float, trials: int, calibration_trials: int, chunk: int = 50_000,
                   sampling: str = "affine") -> dict[str, VariantAudit]:
    """Audit `case` once per variant {name: noise factor} (e.g. {"claimed": 1.0, "control": 0.25}). Each variant
    draws from its own streams, seeded by (seed, *labels, variant): `streams(...)` for D_0 and D_1 and a "probe"
    stream for the affine fit."""
    check_sampling(sampling)
    out = {}
    for variant, factor in noise_factors.items():
        t0 = time.perf_counter()
        rngs = streams(seed, *labels, variant)
        fits = None
        if sampling == "affine":
            probe = np.random.default_rng(seed_sequence(seed, *labels, variant, "probe"))
            sample, fits = affine_sampler(case.step, factor, rngs, probe)
        else:
            sample = direct_sampler(case.step, factor, rngs)
        res = run_audit(sample, delta=case.delta, alpha=alpha, trials=int(trials),
                        calibration_trials=int(calibration_trials), chunk=int(chunk), score=case.score,
                        score_name=case.score_name)
        out[variant] = VariantAudit(res, float(factor), fits, time.perf_counter() - t0)
    return out
