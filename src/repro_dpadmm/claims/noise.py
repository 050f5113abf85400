"""The numbers a check reads and how a comparison of noisy numbers is decided.

A check reads flat metrics (`<key>@<variant>` where a variant overrides the key) with what is known of their noise
(per-repeat values under `metrics["repeats"]`, or a `<key>.se`); a difference is decided only beyond `z` standard
errors, paired when both sides have per-repeat values of one length, and is inconclusive inside that band. Every
check kind (`claims.kinds`) decides through these helpers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_NOISE_Z = 2.0
REPEATS_KEY = "repeats"     # the one reserved non-flat key of metrics.json: {key: [per-repeat values]}


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fmt(value) -> str:
    """A number as the report shows it: integers with thousands separators, floats to 4 significant digits, and a
    float that is not an integer never as one (1.00001 reads "1.00001", not "1", wherever it is shown: a value just
    past a bound must not look as if it sat on it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value == 0:
            return "0"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        short = f"{value:.4g}"
        if float(short).is_integer():
            return next((t for t in (f"{value:.{d}g}" for d in (6, 8, 10)) if not float(t).is_integer()), short)
        return short
    return str(value)


PASS, FAIL, INCONCLUSIVE, MISSING = "pass", "fail", "inconclusive", "not evaluated"
DEGENERATE = "degenerate"     # a comparison with a side no better than its trivial reference: it decides nothing



class _Missing(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _name(key) -> str:
    return fmt(key) if _is_number(key) else str(key)



@dataclass
class _Operand:
    """One number a check reads, with what is known of its noise."""
    key: str | None               # the key actually read (`<key>@<variant>` when the variant overrides it)
    value: float
    reps: np.ndarray | None = None    # per-repeat values (at least two, all finite)
    se: float | None = None           # its standard error (None: exact)


class _Metrics:
    """Flat metrics read under a variant: `<key>@<variant>` where it exists, else `<key>`; plus their noise."""

    def __init__(self, metrics: dict, variant: str | None = None, replace: dict[str, str] | None = None):
        self.metrics = metrics
        self.variant = variant
        self.replace = replace or {}
        reps = metrics.get(REPEATS_KEY)
        self.repeats = reps if isinstance(reps, dict) else {}

    def key(self, key: str) -> str:
        swapped = swap(key, self.replace)
        if swapped != key and (swapped in self.metrics or f"{swapped}@{self.variant}" in self.metrics):
            key = swapped       # a reading whose setting is written in the key
        if self.variant and f"{key}@{self.variant}" in self.metrics:
            return f"{key}@{self.variant}"
        return key

    def raw(self, key: str):
        k = self.key(key)
        if k not in self.metrics:
            raise _Missing(f"metric {k!r} is missing")
        return self.metrics[k]

    def number(self, key) -> float:
        """The numeric value of `key` (a number given in place of a key is itself)."""
        if _is_number(key):
            return float(key)
        v = self.raw(key)
        k = self.key(key)
        if v is None:
            raise _Missing(f"metric {k!r} is null (not computed, NaN or infinite)")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Missing(f"metric {k!r} is not a number ({v!r})")
        if math.isnan(v) or math.isinf(v):
            raise _Missing(f"metric {k!r} is {v}")
        return float(v)

    def operand(self, key) -> _Operand:
        value = self.number(key)
        if _is_number(key):
            return _Operand(None, value)
        k = self.key(key)
        reps = self.repeats.get(k)
        if isinstance(reps, list) and len(reps) >= 2 and all(_is_number(x) and math.isfinite(x) for x in reps):
            arr = np.asarray(reps, dtype=float)
            return _Operand(k, value, arr, float(arr.std(ddof=1) / math.sqrt(arr.size)))
        for se_key in (f"{k}.se",) + ((f"{key}.se@{self.variant}",) if k != key else ()):
            se = self.metrics.get(se_key)
            if _is_number(se) and math.isfinite(se) and se >= 0:
                return _Operand(k, value, None, float(se))
        return _Operand(k, value)


def swap(key: str, replace: dict[str, str]) -> str:
    """A key read under a reading that swaps part of it (`tol0.005` -> `tol0.01`): a setting written in the key."""
    for old, new in replace.items():
        key = key.replace(old, new)
    return key


def _pair(a: _Operand, b: _Operand, check: dict) -> bool:
    return (check.get("paired", True) is not False and a.reps is not None and b.reps is not None
            and a.reps.size == b.reps.size)


def _diff_se(a: _Operand, b: _Operand, check: dict) -> tuple[float | None, bool, int | None]:
    """(SE of a - b, paired?, n): paired per-repeat differences when both have repeats of one length; else the
    independent sqrt(se_a^2 + se_b^2) over the operands that have an SE; None when neither is noisy."""
    if _pair(a, b, check):
        d = a.reps - b.reps
        return float(d.std(ddof=1) / math.sqrt(d.size)), True, int(d.size)
    ses = [x.se for x in (a, b) if x.se is not None]
    if not ses:
        return None, False, None
    ns = [x.reps.size for x in (a, b) if x.reps is not None]
    return float(math.sqrt(sum(s * s for s in ses))), False, (min(ns) if ns else None)


def _decide(d: float, se: float | None, z: float, strict: bool = True) -> str:
    """A signed margin d (> 0 is the claim's side) against z standard errors; exact when there is no noise."""
    if not se:
        return PASS if (d > 0 if strict else d >= 0) else FAIL
    if d > z * se:
        return PASS
    if d < -z * se:
        return FAIL
    return INCONCLUSIVE


def _decide_interval(v: float, se: float | None, z: float, lo: float | None, hi: float | None) -> str:
    """v ± z·SE against [lo, hi]: pass if inside, fail if entirely outside, else inconclusive.

    Exact (no SE): lo <= v <= hi."""
    half = z * se if se else 0.0
    a, b = v - half, v + half
    if (lo is None or a >= lo) and (hi is None or b <= hi):
        return PASS
    if (lo is not None and b < lo) or (hi is not None and a > hi):
        return FAIL
    return INCONCLUSIVE


def _noise_text(se: float | None, paired: bool, n: int | None) -> str:
    if not se:
        return ""
    return f" ± {fmt(se)} SE" + (f", paired over {n} repeats" if paired else f", n = {n}" if n else "")



@dataclass
class _Measured:
    outcome: str
    measured: str
    observed: str
    se: float | None = None
    paired: bool = False
    reason: str = ""
    gap: float | None = None      # distance of the measured value from the decision boundary (for an undecided check)
    n: int | None = None          # repeats behind the SE (None: no per-repeat values)
    effect: float | None = None   # signed distance from the boundary in standard errors (> 0: the claim's side;
                                  # None for an exact check)


def _effect(d: float, se: float | None) -> float | None:
    """A signed margin d (> 0: the claim's side) in standard errors; None for an exact number (no SE)."""
    return d / se if se else None


def _interval_effect(v: float, se: float | None, lo: float | None, hi: float | None) -> float | None:
    """How far v is inside [lo, hi] (> 0) or outside it (< 0), in standard errors; None when exact."""
    inside = (lo is None or v >= lo) and (hi is None or v <= hi)
    return _effect((1.0 if inside else -1.0) * _interval_gap(v, lo, hi), se)


def _interval_gap(v: float, lo: float | None, hi: float | None) -> float:
    """Distance of v from the nearer bound of [lo, hi] (the boundary a noisy value straddles)."""
    return min(abs(v - b) for b in (lo, hi) if b is not None)


def _within(what: str, d: float, se: float, z: float) -> str:
    return f"{what} {fmt(d)} is within {fmt(z)} SE ({fmt(abs(d) / se)} SE) of the noise"

