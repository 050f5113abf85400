"""The check kinds: one small class per `kind:` of a claims file, found by name in `CHECKS`.

A kind says which metric keys a check reads, how it reads in words, how it is measured and decided beyond the noise
(`claims.noise`), when a comparison is degenerate (a side no better than its trivial reference), and how its
threshold can be looser than the paper's own (`paper_threshold:`). A new kind is one subclass of `CheckKind` with
its `name` (defining the class registers it), plus its fields in the claims schema (`check_<kind>` in
`config/claims/claims.schema.yaml`, which `tests/test_claims.py` keeps in step with `CHECKS`) and a row of the kinds
table in `config/claims/README.md`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from .noise import (
    DEGENERATE,
    FAIL,
    INCONCLUSIVE,
    PASS,
    _decide,
    _decide_interval,
    _diff_se,
    _effect,
    _interval_effect,
    _interval_gap,
    _is_number,
    _Measured,
    _Metrics,
    _Missing,
    _name,
    _noise_text,
    _pair,
    _within,
    fmt,
)

# kind name -> the one instance of its class, in the order the classes are defined
CHECKS: dict[str, CheckKind] = {}


class CheckKind:
    """One kind of check. Subclasses set `name` and implement `describe` and `measure`; defining one registers it."""

    name: ClassVar[str] = ""
    shows_expected: ClassVar[bool] = False   # a verdict's "expected" column adds what passes beside the check
    bounded: ClassVar[bool] = False          # min and/or max: a paper_threshold is [lo, hi] when both are given

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name:
            if cls.name in CHECKS:
                raise TypeError(f"check kind {cls.name!r} is defined twice ({type(CHECKS[cls.name]).__name__}, "
                                f"{cls.__name__})")
            CHECKS[cls.name] = cls()

    def keys(self, check: dict) -> list[str]:
        """The metric keys a check reads (numbers given in place of a key are not keys)."""
        keys = []
        for name in ("metric", "left", "right"):
            if isinstance(check.get(name), str):
                keys.append(check[name])
        if isinstance(check.get("metrics"), list):
            keys.extend(k for k in check["metrics"] if isinstance(k, str))
        return keys

    def describe(self, check: dict) -> tuple[str, str]:
        """(what is checked, what passes) of a well-formed check, without any measurement."""
        raise NotImplementedError

    def measure(self, check: dict, m: _Metrics, z: float) -> _Measured:
        """Measure and decide the check on metrics `m` (noise factor `z`); raises _Missing when a value it needs is
        unusable."""
        raise NotImplementedError

    def degenerate(self, check: dict, m: _Metrics, z: float, references: dict) -> str:
        """Why the check compares a side no better than its trivial reference beyond the noise, else ""."""
        return ""

    def looser(self, check: dict, p, lo_p: float, hi_p: float) -> list[str]:
        """How the check's threshold is looser than the paper's own value `p` ([lo_p, hi_p]), in words."""
        return []


def _bounds(check) -> str:
    lo, hi = check.get("min"), check.get("max")
    if lo is not None and hi is not None:
        return f"in [{fmt(lo)}, {fmt(hi)}]"
    return f"≥ {fmt(lo)}" if lo is not None else f"≤ {fmt(hi)}"


def _tolerance(check) -> float:
    exp = float(check["expected"])
    return max(float(check.get("abs_tol", 0.0)), float(check.get("rel_tol", 0.0)) * abs(exp))


def _beats_reference(key: str, m: _Metrics, check: dict, z: float, references: dict) -> tuple[bool, str]:
    """Whether the metric `key` is better than its trivial reference beyond z standard errors (paired when both have
    per-repeat values of one length), and, when it is not, why in words. A key without a reference passes."""
    ref = references.get(key)
    if ref is None:
        return True, ""
    ref_key, better = ref
    side, base = m.operand(key), m.operand(ref_key)
    d = base.value - side.value if better == "lower" else side.value - base.value
    se, paired, n = _diff_se(side, base, check)
    if _decide(d, se, z) == PASS:
        return True, ""
    noise = f" (difference {fmt(side.value - base.value)}{_noise_text(se, paired, n)})" if se else ""
    return False, (f"{side.key} = {fmt(side.value)} is no better than {base.key} = {fmt(base.value)}{noise} "
                   f"({better} is better)")


class _Bounded(CheckKind):
    """A value against [min, max] (either may be absent)."""

    bounded = True

    def looser(self, check, p, lo_p, hi_p):
        found = []
        if _is_number(check.get("min")) and check["min"] < lo_p:
            found.append(f"min {fmt(check['min'])} is below the paper's {fmt(lo_p)}")
        if _is_number(check.get("max")) and check["max"] > hi_p:
            found.append(f"max {fmt(check['max'])} is above the paper's {fmt(hi_p)}")
        return found


def _size(op) -> int | None:
    return op.reps.size if op.reps is not None else None


class _TwoSided(CheckKind):
    """A comparison of `left` with `right` (a key or a number): degenerate when a side with a trivial reference that
    is not the other side, and that the check claims is the better one, is no better than it. The side a claimed
    ordering calls worse may be as bad as it likes (a method worse than F(x0) at small eps supports "worse at small
    eps"), unless the check says `both_sides: true` (a claim about what two methods that should both learn buy); a
    check with no ordering (ratio_range) requires it of both sides."""

    def claimed_better(self, side: str, check: dict, better: str) -> bool:
        return True

    def degenerate(self, check, m, z, references):
        left, right = check["left"], check["right"]
        whys = []
        for side, other in ((left, right), (right, left)):
            if not isinstance(side, str) or side not in references or references[side][0] == other:
                continue
            if not check.get("both_sides") and not self.claimed_better("left" if side == left else "right", check,
                                                                         references[side][1]):
                continue
            ok, why = _beats_reference(side, m, check, z, references)
            if not ok:
                whys.append(why)
        return ("degenerate: " + "; ".join(whys)) if whys else ""


class Approx(CheckKind):
    """`metric` within max(abs_tol, rel_tol |expected|) of `expected`, beyond the noise."""

    name = "approx"
    shows_expected = True

    def describe(self, check):
        return f"{check['metric']} ≈ {fmt(check['expected'])}", f"{fmt(check['expected'])} ± {fmt(_tolerance(check))}"

    def measure(self, check, m, z):
        key = check["metric"]
        op = m.operand(key)
        noise = _noise_text(op.se, False, op.reps.size if op.reps is not None else None)
        exp, tol = float(check["expected"]), _tolerance(check)
        lo, hi = exp - tol, exp + tol
        diff = op.value - exp
        rel = f", {diff / exp:+.1%}" if exp else ""
        short = f"{fmt(op.value)}{noise} (off by {fmt(diff)}{rel})"
        out = _decide_interval(op.value, op.se, z, lo, hi)
        reason = (f"{op.key} = {fmt(op.value)} ± {fmt(z)}·{fmt(op.se)} straddles the bound"
                  if out == INCONCLUSIVE else "")
        return _Measured(out, short, f"{op.key} = {fmt(op.value)}", op.se, False, reason,
                         _interval_gap(op.value, lo, hi), _size(op), _interval_effect(op.value, op.se, lo, hi))

    def looser(self, check, p, lo_p, hi_p):
        tol = _tolerance(check)
        return [f"the tolerance {fmt(tol)} is wider than the paper's {fmt(hi_p)}"] if tol > hi_p else []


class Equal(CheckKind):
    """`metric` == `expected` exactly (numbers compared as numbers)."""

    name = "equal"

    def describe(self, check):
        return f"{check['metric']} = {fmt(check['expected'])}", fmt(check["expected"])

    def measure(self, check, m, z):
        key, exp = check["metric"], check["expected"]
        v = m.raw(key)
        same = float(v) == float(exp) if _is_number(v) and _is_number(exp) else (v == exp and type(v) is type(exp))
        return _Measured(PASS if same else FAIL, fmt(v), f"{m.key(key)} = {fmt(v)}")


class _Compare(_TwoSided):
    """less: left < right - margin; greater: left > right + margin; beyond the noise of the difference."""

    op = ""

    def describe(self, check):
        op = self.op
        margin = float(check.get("margin", 0.0))
        m = f" {'−' if self.name == 'less' else '+'} {fmt(margin)}" if margin else ""
        return f"{_name(check['left'])} {op} {_name(check['right'])}{m}", f"left {op} right{m}"

    def measure(self, check, m, z):
        left, right, margin = check["left"], check["right"], float(check.get("margin", 0.0))
        a, b = m.operand(left), m.operand(right)
        # d > 0 is the claim's side: less: (right - margin) - left; greater: left - (right + margin)
        d = (b.value - margin) - a.value if self.name == "less" else a.value - (b.value + margin)
        se, paired, n = _diff_se(a, b, check)
        out = _decide(d, se, z)
        observed = ", ".join(f"{o.key} = {fmt(o.value)}" for o in (a, b) if o.key)
        fa, fb = (fmt(a.value), fmt(b.value)) if fmt(a.value) != fmt(b.value) else (f"{a.value:.10g}",
                                                                                  f"{b.value:.10g}")
        short = f"{fa} vs {fb}" + (f" (difference {fmt(a.value - b.value)}{_noise_text(se, paired, n)})" if se else "")
        reason = _within("the difference", a.value - b.value, se, z) if out == INCONCLUSIVE else ""
        return _Measured(out, short, observed, se, paired, reason, abs(d), n, _effect(d, se))

    def looser(self, check, p, lo_p, hi_p):
        kind = self.name
        margin = float(check.get("margin", 0.0))
        if _is_number(check.get("right")):
            bound = check["right"] - margin if kind == "less" else check["right"] + margin
            if (kind == "less" and bound > hi_p) or (kind == "greater" and bound < lo_p):
                return [f"the bound {fmt(bound)} is looser than the paper's {fmt(p if not isinstance(p, list) else (lo_p if kind == 'greater' else hi_p))}"]
        elif margin < lo_p:
            return [f"the margin {fmt(margin)} is smaller than the paper's {fmt(lo_p)}"]
        return []


    def claimed_better(self, side, check, better):
        """less (left < right) claims left the better side of a lower-is-better metric, right of a higher-is-better
        one; greater the reverse."""
        low_side = "left" if self.name == "less" else "right"
        return (side == low_side) == (better == "lower")


class Less(_Compare):
    name, op = "less", "<"


class Greater(_Compare):
    name, op = "greater", ">"


class Monotone(CheckKind):
    """Every consecutive step of `metrics` goes `direction`, each step judged beyond its noise (tolerance `tol`)."""

    name = "monotone"
    shows_expected = True

    def describe(self, check):
        strict = bool(check.get("strict", False))
        op = ("<" if strict else "≤") if check["direction"] == "increasing" else (">" if strict else "≥")
        tol = float(check.get("tol", 0.0))
        return (f" {op} ".join(check["metrics"]),
                f"{'strictly ' if strict else ''}{check['direction']}" + (f" (tolerance {fmt(tol)})" if tol else ""))

    def measure(self, check, m, z):
        keys = check["metrics"]
        strict, tol = bool(check.get("strict", False)), float(check.get("tol", 0.0))
        ops = [m.operand(k) for k in keys]
        sign = 1.0 if check["direction"] == "increasing" else -1.0
        outs, steps, ses, paired_any, undecided, effects = [], [], [], False, [], []
        for a, b in zip(ops, ops[1:], strict=False):
            d = sign * (b.value - a.value) + tol        # each step as a greater/less with margin -tol
            se, paired, n = _diff_se(b, a, check)
            outs.append(_decide(d, se, z, strict=strict))
            if outs[-1] == INCONCLUSIVE:
                undecided.append((abs(d) / se, abs(d), n))
            if se:
                effects.append(d / se)
            steps.append(f"{fmt(b.value - a.value)}" + (f" ± {fmt(se)}" if se else ""))
            ses.append(se)
            paired_any |= paired
        out = FAIL if FAIL in outs else INCONCLUSIVE if INCONCLUSIVE in outs else PASS
        noisy = any(ses)
        short = ", ".join(fmt(o.value) for o in ops) + (f" (steps {', '.join(steps)} SE)" if noisy else "")
        reason = ""
        if out == INCONCLUSIVE:
            bad = [f"{keys[i]} → {keys[i + 1]}" for i, o in enumerate(outs) if o == INCONCLUSIVE]
            reason = f"step(s) {'; '.join(bad)} within {fmt(z)} SE of the noise"
        big = max((s for s in ses if s), default=None)
        _, gap, n = min(undecided, default=(None, None, None))   # the step furthest inside the noise decides
        return _Measured(out, short, ", ".join(f"{o.key} = {fmt(o.value)}" for o in ops), big, paired_any, reason,
                         gap, n, min(effects, default=None))   # the weakest noisy step

    def degenerate(self, check, m, z, references):
        """Fewer than two of its values (those with a reference judged, the others counted as informative) beat
        their reference."""
        verdicts = [_beats_reference(k, m, check, z, references) for k in check["metrics"]]
        if not any(k in references for k in check["metrics"]) or sum(ok for ok, _ in verdicts) >= 2:
            return ""
        return "degenerate: fewer than two values beat their reference: " + "; ".join(w for ok, w in verdicts if w)

    def looser(self, check, p, lo_p, hi_p):
        if float(check.get("tol", 0.0)) > hi_p:
            return [f"the step tolerance {fmt(check['tol'])} is wider than the paper's {fmt(hi_p)}"]
        return []


class Range(_Bounded):
    """min <= `metric` <= max (value ± z SE inside), failing when entirely outside."""

    name = "range"

    def describe(self, check):
        return f"{check['metric']} {_bounds(check)}", _bounds(check)

    def measure(self, check, m, z):
        key = check["metric"]
        op = m.operand(key)
        noise = _noise_text(op.se, False, op.reps.size if op.reps is not None else None)
        lo, hi = check.get("min"), check.get("max")
        short = f"{fmt(op.value)}{noise}"
        out = _decide_interval(op.value, op.se, z, lo, hi)
        reason = (f"{op.key} = {fmt(op.value)} ± {fmt(z)}·{fmt(op.se)} straddles the bound"
                  if out == INCONCLUSIVE else "")
        return _Measured(out, short, f"{op.key} = {fmt(op.value)}", op.se, False, reason,
                         _interval_gap(op.value, lo, hi), _size(op), _interval_effect(op.value, op.se, lo, hi))


class _Bool(CheckKind):
    """`metric` is the boolean true (kind true) or false (kind false)."""

    def describe(self, check):
        return f"{check['metric']} is {self.name}", self.name

    def measure(self, check, m, z):
        key = check["metric"]
        v = m.raw(key)
        if not isinstance(v, bool):
            raise _Missing(f"metric {m.key(key)!r} is not a boolean ({v!r})")
        return _Measured(PASS if v == (self.name == "true") else FAIL, fmt(v), f"{m.key(key)} = {fmt(v)}")


class IsTrue(_Bool):
    name = "true"


class IsFalse(_Bool):
    name = "false"


class RatioRange(_TwoSided, _Bounded):
    """min <= left / right <= max, with the delta method's SE (paired when the repeats pair)."""

    name = "ratio_range"

    def describe(self, check):
        return f"{_name(check['left'])} / {_name(check['right'])} {_bounds(check)}", _bounds(check)

    def measure(self, check, m, z):
        left, right = check["left"], check["right"]
        a, b = m.operand(left), m.operand(right)
        if b.value == 0:
            raise _Missing(f"the ratio {_name(left)} / {_name(right)} is undefined: the denominator is 0")
        # numpy scalars: a finite value near the largest double overflows to inf here, never an OverflowError
        av, bv = np.float64(a.value), np.float64(b.value)
        paired = _pair(a, b, check)
        # numbers near a double's limits (a stranger's metrics) overflow to inf or nan here, without numpy's warnings
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            r = float(av / bv)
            grad = np.array([1.0 / bv, -av / bv ** 2])     # delta method for a / b
            if paired:
                cov = np.cov(np.vstack([a.reps, b.reps]), ddof=1) / a.reps.size
                se = float(math.sqrt(max(grad @ cov @ grad, 0.0)))
            elif a.se is not None or b.se is not None:
                se = float(math.hypot(grad[0] * (a.se or 0.0), grad[1] * (b.se or 0.0)))
            else:
                se = None
        out = _decide_interval(r, se, z, check.get("min"), check.get("max"))
        noise = _noise_text(se, paired, a.reps.size if paired else None)
        reason = f"the ratio {fmt(r)} ± {fmt(z)}·{fmt(se)} straddles the bound" if out == INCONCLUSIVE else ""
        return _Measured(out, f"{fmt(r)}{noise} (= {fmt(a.value)} / {fmt(b.value)})",
                         f"{_name(a.key or left)} / {_name(b.key or right)} = {fmt(r)}", se, paired, reason,
                         _interval_gap(r, check.get("min"), check.get("max")),
                         a.reps.size if paired else _size(a) or _size(b),
                         _interval_effect(r, se, check.get("min"), check.get("max")))


CHECK_KINDS = tuple(CHECKS)


def kind_of(check: dict) -> CheckKind:
    """The kind of a check, or an error naming the known kinds."""
    kind = CHECKS.get(check.get("kind"))
    if kind is None:
        raise ValueError(f"unknown check kind {check.get('kind')!r} (known: {', '.join(CHECKS)})")
    return kind


def check_keys(check: dict) -> list[str]:
    """The metric keys a check reads (numbers given in place of a key are not keys)."""
    return CHECKS.get(check.get("kind"), _ANY).keys(check)


_ANY = CheckKind()   # a check of an unknown kind still names the keys its usual fields hold


def describe_check(check: dict) -> tuple[str, str]:
    """(what is checked, what passes) of a well-formed check, without any measurement."""
    return kind_of(check).describe(check)


def looser_threshold(check: dict) -> str:
    """In words, how a check's threshold is looser than the paper's own value of it (`paper_threshold`), else ""."""
    p = check.get("paper_threshold")
    if p is None:
        return ""
    kind = CHECKS.get(check.get("kind"))
    lo_p, hi_p = (p[0], p[1]) if isinstance(p, list) else (p, p)
    return "; ".join(kind.looser(check, p, lo_p, hi_p)) if kind else ""


def _measure(check: dict, m: _Metrics, z: float, references: dict | None = None) -> _Measured:
    """Evaluate one check; raises _Missing when a value it needs is unusable. With `references` ({key: (reference
    key, better)}), a comparison whose side is no better than its trivial reference is degenerate."""
    kind = kind_of(check)
    r = kind.measure(check, m, z)
    why = kind.degenerate(check, m, z, references) if references else ""
    if why:
        return _Measured(DEGENERATE, r.measured, r.observed, r.se, r.paired, why, effect=r.effect)
    return r
