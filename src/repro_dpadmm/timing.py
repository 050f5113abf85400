"""Interleaved wall-clock timing: several functions timed in alternation, round after round, and the ratio of any
two with a confidence interval.

On a shared machine the load drifts; timing method A for a while and then method B confounds their difference with
the drift. Here every round calls each function once, in an order drawn afresh per round from a seeded generator, so
drift hits all of them alike, and the ratio of two functions is judged on the per-round ratios (paired by round):
the geometric mean of t_a / t_b with a Student-t interval on the mean log-ratio.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping

import numpy as np


def interleaved(funcs: Mapping[str, Callable[[int], object]], rounds: int, *, rng: np.random.Generator,
                warmup: bool = True, clock: Callable[[], float] = time.perf_counter,
                each_round: Callable[[Iterable[int]], Iterable[int]] | None = None) -> dict[str, np.ndarray]:
    """Seconds per round of every function: {name: (rounds,)}. Each function is called as ``f(r)`` with the round
    index r (so it may use round r's data), once per round, in a random order per round; with `warmup` every
    function is called once, untimed, before the first round (imports, caches). `each_round` wraps the rounds'
    iterator (e.g. a progress line per round, printed between rounds, outside every timed call)."""
    names = list(funcs)
    if not names:
        raise ValueError("give at least one function to time")
    if int(rounds) < 2:
        raise ValueError(f"rounds must be >= 2 (a confidence interval needs two), got {rounds}")
    if warmup:
        for name in names:
            funcs[name](0)
    out = {name: np.empty(int(rounds)) for name in names}
    for r in (each_round or iter)(range(int(rounds))):
        for j in rng.permutation(len(names)):
            name = names[j]
            t0 = clock()
            funcs[name](r)
            out[name][r] = clock() - t0
    return out


def ratio_ci(t_a, t_b, level: float = 0.95) -> dict[str, float]:
    """Ratio of two interleaved timings (paired by round): geometric mean of t_a / t_b, its `level` confidence
    interval (Student t on the mean log-ratio), and `se`, the delta-method standard error of the ratio."""
    a, b = np.asarray(t_a, dtype=float), np.asarray(t_b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"need two equal-length 1-D timings of >= 2 rounds, got shapes {a.shape} and {b.shape}")
    if np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("timings must be positive")
    logr = np.log(a) - np.log(b)
    mean, se_log = float(logr.mean()), float(logr.std(ddof=1) / math.sqrt(logr.size))
    from scipy import stats  # here, not above: its import takes about 0.4 s, which most users of this module skip

    half = float(stats.t.ppf(0.5 + level / 2, logr.size - 1)) * se_log
    ratio = math.exp(mean)
    return {"ratio": ratio, "lo": math.exp(mean - half), "hi": math.exp(mean + half), "se": ratio * se_log,
            "rounds": int(logr.size), "level": float(level)}
