"""Judging claims: one check on the metrics (through its kind), one claim's verdict and its variants' verdicts."""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field

from .kinds import CHECKS, _measure, describe_check, looser_threshold
from .model import DECIDED_FAILING, FAILING, JUDGED, PASSING, Claim
from .noise import (
    DEFAULT_NOISE_Z,
    DEGENERATE,
    FAIL,
    INCONCLUSIVE,
    MISSING,
    PASS,
    REPEATS_KEY,
    _Metrics,
    _Missing,
    fmt,
    swap,
)

# `{<metric key>}` or `{<metric key>:<format spec>}` in a finding's text; `{{` and `}}` are literal braces.
PLACEHOLDER = re.compile(r"(?<!\{)\{((?:[A-Za-z0-9_]+/[A-Za-z0-9_]+:)?[A-Za-z0-9_][A-Za-z0-9_.@\-]*)"
                         r"(?::([^{}]*))?\}(?!\})")
# a literal decimal in prose ("0.79", "-1.5"), not part of a word, key or placeholder
LITERAL_DECIMAL = re.compile(r"(?<![\w.{@])-?\d+\.\d+(?![\w.}])")
# a decimal that names a part of a paper ("Theorem 4.1", "§6.2", "Fig. 1.3"): never a measured number
SECTION_REF = re.compile(r"(?:Theorem|Lemma|Corollary|Proposition|Assumption|Algorithm|Remark|Definition|Section|"
                         r"Table|Fig\.|Figure|eq\.|Eq\.|§)\s*\(?\d+\.\d+\)?")


@dataclass
class CheckResult:
    kind: str
    check: str            # what is checked, short (keys and operator)
    expected: str         # what would pass, short
    measured: str         # the measured numbers, short ("—" when not evaluated)
    passed: bool | None   # True: pass; False: fail; None: inconclusive or not evaluated (see outcome)
    reason: str = ""
    label: str = ""
    observed: str = ""    # the measured numbers with their keys, for claims.json
    outcome: str = ""     # pass | fail | inconclusive | degenerate | not evaluated
    se: float | None = None       # standard error the decision used (None: exact)
    z: float | None = None        # the noise factor it used (None: exact)
    paired: bool = False          # the SE is that of paired per-repeat differences

    def __post_init__(self):
        if not self.outcome:
            self.outcome = MISSING if self.passed is None else PASS if self.passed else FAIL

    source: str = ""      # the check's `from:` (where its threshold comes from)
    looser: str = ""      # how its threshold is looser than the paper's own value, else ""
    repeats_needed: int | None = None   # an inconclusive check: repeats at which its difference would be decided
    effect: float | None = None   # signed distance from its boundary in standard errors (> 0: the claim's side)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "check": self.check, "expected": self.expected, "measured": self.measured,
                "passed": self.passed, "outcome": self.outcome, "se": self.se, "z": self.z, "paired": self.paired,
                "reason": self.reason, "label": self.label, "from": self.source, "looser": self.looser,
                "repeats_needed": self.repeats_needed, "effect": self.effect}



def evaluate_check(check: dict, metrics: dict, *, z: float | None = None, variant: str | None = None,
                   references: dict[str, tuple[str, str]] | None = None,
                   replace: dict[str, str] | None = None) -> CheckResult:
    """Evaluate one well-formed check on flat metrics (with their optional `repeats` and `.se` keys).

    `z`: noise factor (the check's own `z:` wins; default DEFAULT_NOISE_Z); `variant`: read `<key>@<variant>` where
    it exists (references too); `references`: {key: (trivial reference key, "lower" | "higher")}, which makes a
    comparison with a side no better than its reference "degenerate". A missing, null or non-numeric value (a
    reference included) gives outcome "not evaluated" (passed None) with the reason."""
    what, expected = describe_check(check)
    label = str(check.get("label") or "")
    zz = float(check.get("z", z if z is not None else DEFAULT_NOISE_Z))
    extra = {"label": label, "source": str(check.get("from") or ""), "looser": looser_threshold(check)}
    try:
        r = _measure(check, _Metrics(metrics, variant, replace), zz, references)
    except _Missing as exc:
        return CheckResult(check["kind"], what, expected, "—", None, reason=exc.reason, outcome=MISSING, **extra)
    passed = True if r.outcome == PASS else False if r.outcome == FAIL else None
    return CheckResult(check["kind"], what, expected, r.measured, passed, reason=r.reason, observed=r.observed,
                       outcome=r.outcome, se=r.se, z=zz if r.se else None, paired=r.paired,
                       repeats_needed=_repeats_needed(r, zz), effect=r.effect, **extra)


def _repeats_needed(r, z: float) -> int | None:
    """Repeats at which an inconclusive difference of the same size would be decided at z standard errors (the SE
    falls as 1 / sqrt(n)); None where the noise model does not give it (no per-repeat values, a zero difference)."""
    if r.outcome != INCONCLUSIVE or not r.se or not r.n or not r.gap:
        return None
    try:    # a bundle's huge or infinite SE overflows: not computable, never a crash
        need = r.n * (z * r.se / r.gap) ** 2
    except (OverflowError, ZeroDivisionError):
        return None
    if not math.isfinite(need):
        return None
    return max(r.n + 1, math.ceil(need))


@dataclass
class VariantVerdict:
    """The verdict under one reading other than the default: a declared variant (`kind` "variant") or one end of a
    rule threshold's plausible range (`kind` "threshold", `choice` "threshold <check>.<field>")."""
    name: str
    choice: str
    label: str
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)
    kind: str = "variant"
    implausible: str = ""     # why the reading is no plausible reading (a setup check of its item fails under it)

    def record(self) -> dict:
        return {"name": self.name, "choice": self.choice, "label": self.label, "verdict": self.verdict,
                "reason": self.reason, "kind": self.kind, "implausible": self.implausible,
                "checks": [r.as_dict() for r in self.checks]}


Reading = VariantVerdict


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)
    variants: list[VariantVerdict] = field(default_factory=list)
    thresholds: list[VariantVerdict] = field(default_factory=list)   # both ends of every rule's range
    metrics: dict | None = field(default=None, repr=False)            # what it was judged on (fills placeholders)
    over_cases: dict | None = None    # a claim over cases: its summary over every case (claims.cases.summarise)

    @property
    def expected(self) -> str:
        if self.claim.not_checkable:
            return "nothing measurable"
        parts = []
        for c in self.checks:
            extra = f" ({c.expected})" if c.kind in CHECKS and CHECKS[c.kind].shows_expected else ""
            parts.append(c.check + extra)
        return "; ".join(parts)

    @property
    def measured(self) -> str:
        return "; ".join(c.observed for c in self.checks if c.outcome != MISSING) or "—"

    @property
    def setup(self) -> bool:
        """A setup check (given keys only, or `setup: true`): our own construction, never counted as a claim."""
        return self.claim.claim_class == "setup"

    @property
    def claim_class(self) -> str:
        return self.claim.claim_class

    @property
    def looser(self) -> list[str]:
        return self.claim.looser_thresholds()

    @property
    def depends_on_choice(self) -> list[str]:
        """The choices under whose variants the verdict differs from the headline (variants that could not be
        judged, "not run" / "not checkable", show nothing about the choice and are left out)."""
        if self.verdict not in JUDGED:
            return []
        return list(dict.fromkeys(v.choice for v in self.variants
                                  if v.verdict in JUDGED and v.verdict != self.verdict and not v.implausible))

    @property
    def depends_on_threshold(self) -> list[str]:
        """The rule thresholds whose plausible range changes the verdict: an end of the range judges otherwise than
        the headline."""
        if self.verdict not in JUDGED:
            return []
        return list(dict.fromkeys(t.choice for t in self.thresholds
                                  if t.verdict in JUDGED and t.verdict != self.verdict))

    @property
    def readings(self) -> list[VariantVerdict]:
        """Every plausible reading other than the default that was judged: the variants, then the thresholds' range
        ends (a variant under which a setup check of the item fails is no plausible reading: `implausible`)."""
        return [r for r in self.variants + self.thresholds if r.verdict in JUDGED and not r.implausible]

    @property
    def cause(self) -> str | None:
        """The cause class of the verdict, from the verdicts under every reading (the default, each variant, both
        ends of each rule's range); None for a claim not judged and for setup checks.

        robust: the same passing verdict under every reading. choice: some reading passes and some does not (the
        readings decide it; `deciding` names them). paper (paper-inconsistency for an analytic claim): it fails
        beyond the noise under every reading that decides anything (a degenerate reading none of whose checks
        passes, whose model learns nothing, decides nothing either way). power: no reading passes, and some are inside the noise (more repeats
        decide it; `repeats_needed`). degenerate: no reading passes or fails beyond the noise, and every undecided
        one compares a model no better than its trivial reference (our runs decide nothing)."""
        if self.verdict not in JUDGED or self.claim_class == "setup":
            return None
        verdicts = [self.verdict] + [r.verdict for r in self.readings]
        passing = [v in PASSING for v in verdicts]
        if all(passing):
            return "robust"
        if any(passing):
            return "choice"
        # a degenerate reading none of whose checks passes decides nothing (its model learns nothing); one whose other
        # checks pass is undecided, like an inconclusive one
        blank = [v == "degenerate" and not any(c.outcome == PASS for c in checks)
                 for v, checks in [(self.verdict, self.checks)] + [(r.verdict, r.checks) for r in self.readings]]
        informative = [v for v, b in zip(verdicts, blank, strict=True) if not b]
        if informative and all(v in DECIDED_FAILING for v in informative):
            return "paper-inconsistency" if self.claim_class == "analytic" else "paper"
        return "power" if "inconclusive" in verdicts else "degenerate"

    @property
    def deciding(self) -> list[str]:
        """For cause `choice`: the readings whose verdict differs from the headline, as "<label>: <verdict>"; for
        cause `power`: the readings left inside the noise (where more repeats would decide it)."""
        if self.cause == "power":
            return [f"{r.label}: {r.verdict}" for r in self.readings if r.verdict == "inconclusive"] + (
                ["the default: inconclusive"] if self.verdict == "inconclusive" else [])
        if self.cause != "choice":
            return []
        return [f"{r.label}: {r.verdict}" for r in self.readings if (r.verdict in PASSING) != (
            self.verdict in PASSING)]

    @property
    def repeats_needed(self) -> int | None:
        """For cause `power`: the repeats at which the cheapest undecided reading would be decided (the most that
        any of its inconclusive checks needs), where the noise model gives it."""
        if self.cause != "power":
            return None
        undecided = [self.checks] if self.verdict == "inconclusive" else []
        undecided += [r.checks for r in self.readings if r.verdict == "inconclusive"]
        needs = [max(n) for checks in undecided if (n := [c.repeats_needed for c in checks if c.repeats_needed])]
        return min(needs, default=None)

    @property
    def finding(self) -> dict | None:
        """The first finding whose `when` matches the headline verdict, its placeholders filled from the metrics."""
        f = next((f for f in self.claim.findings if self.verdict in f["when"]), None)
        if f is None:
            return None
        return {**f, "text": fill_placeholders(f["text"], self.metrics or {}), "cause": self.cause}

    @property
    def unexplained(self) -> bool:
        """A failing verdict (partly, inconclusive, degenerate, not reproduced, fails, setup failed) with no matching
        finding."""
        return self.verdict in FAILING and self.finding is None

    @property
    def note(self) -> str:
        """The claim's note, its placeholders filled from the metrics."""
        return fill_placeholders(self.claim.note, self.metrics or {}) if self.claim.note else ""

    @property
    def typed_numbers(self) -> list[str]:
        """Literal decimals in the claim's findings or note that a metric of the claim holds (to the digits typed):
        numbers typed from a run, which go stale; a placeholder fills them from the run instead. Only literals of
        two or more significant digits count, and none that the claim's own declared text holds (the quote, the
        paper value, the thresholds, the settings it depends on): those are the paper's numbers or the config's."""
        if not self.metrics:
            return []
        values = _claim_values(self.claim, self.metrics)
        declared = set(LITERAL_DECIMAL.findall(_declared_text(self.claim)))
        out = []
        for text in [f["text"] for f in self.claim.findings] + [self.claim.note]:
            for lit in LITERAL_DECIMAL.findall(SECTION_REF.sub("", PLACEHOLDER.sub("", text or ""))):
                if lit in declared or len(lit.lstrip("-0.").replace(".", "")) < 2:
                    continue
                digits = len(lit.split(".")[1])
                hit = next((k for k, v in values if round(v, digits) == float(lit)), None)
                if hit:
                    out.append(f"{lit} (= {hit})")
        return list(dict.fromkeys(out))

    @property
    def stale(self) -> list[dict]:
        """Findings whose `when` no longer matches the headline verdict (only once the numbers were judged: a claim
        that was not run says nothing about its findings)."""
        if self.verdict not in JUDGED:
            return []
        return [f for f in self.claim.findings if self.verdict not in f["when"]]

    def record(self) -> dict:
        c = self.claim
        return {"id": c.id, "paper": c.paper, "item": c.item if c.item else c.source, "quote": c.quote,
                "where": c.where, "paper_value": c.paper_value, "expected": self.expected,
                "measured": self.measured, "verdict": self.verdict, "reason": self.reason,
                "checks": [r.as_dict() for r in self.checks], "depends_on": c.depends_on, "note": self.note,
                "setup": self.setup, "variants": [v.record() for v in self.variants],
                "thresholds": [t.record() for t in self.thresholds],
                "depends_on_choice": self.depends_on_choice, "depends_on_threshold": self.depends_on_threshold,
                "cause": self.cause, "deciding": self.deciding, "repeats_needed": self.repeats_needed,
                "finding": self.finding, "unexplained": self.unexplained, "stale": self.stale,
                "typed_numbers": self.typed_numbers, "group": c.group, "case": c.case,
                "over_cases": self.over_cases,
                "class": self.claim_class, "looser": self.looser, "noise_z": c.noise_z,
                "source": c.source or f"results/{c.paper}/{c.item}/metrics.json", "file": c.file, "line": c.line}


def _rests_on(claim: Claim, setup: Claim) -> bool:
    """Whether `claim` rests on the setup check `setup`: the same claims file and item, the same value on every case
    axis both are declared over (a check on ijcnn1 says nothing of a8a's claims; a claim not declared over the axis
    rests on the case whose value its keys name), and, where the setup check names `gates:`, a key the claim reads
    matching one of its patterns."""
    if claim.claim_class == "setup" or (claim.file, claim.item) != (setup.file, setup.item):
        return False
    segments = {part for key in claim.metric_keys() for part in re.split(r"[.@]", key)}
    for axis, value in setup.case.items():
        # a claim over the same axis: the same case; a claim not over it: one that reads that case's keys
        if claim.case.get(axis, value) != value if axis in claim.case else value not in segments:
            return False
    return not setup.gates or any(fnmatch.fnmatchcase(key, pattern)
                                  for key in claim.metric_keys() for pattern in setup.gates)


def discount_implausible(verdicts: list[Verdict]) -> None:
    """Mark the readings under which a setup check that a claim rests on fails (our own construction breaks there: a
    baseline that no longer beats the constant classifier, a calibration that misses its target) as no plausible
    reading; they stay on show but decide no cause.

    A variant is discounted by every failing setup check of its item and case. The default reading is discounted only
    by a setup check that names the claims resting on it (`gates:`): the claim is then "not checkable", naming the
    check, and its threshold readings (the default's range ends) are discounted with it; its variants keep their own
    verdicts."""
    setups = [v for v in verdicts if v.claim_class == "setup" and v.claim.item is not None]
    for v in verdicts:
        on = [s for s in setups if _rests_on(v.claim, s.claim)]
        if not on:
            continue
        for r in v.variants + [t for t in v.thresholds if "+" in t.name]:   # variants, alone or with thresholds
            why = [f"the setup check {s.claim.id} fails under it" for s in on for x in s.variants
                   if x.verdict == "setup failed" and x.name in r.name.split("+")]
            r.implausible = "; ".join(dict.fromkeys(why))
        gating = [s for s in on if s.claim.gates and s.verdict == "setup failed"]
        if gating and v.verdict in JUDGED:
            why = "; ".join(f"the setup check {s.claim.id} fails" for s in gating)
            v.reason = (f"not judged at the default reading, which rests on {why} (judged there: {v.verdict}); "
                        f"its variants are judged")
            v.verdict = "not checkable"
            for t in v.thresholds:
                if "+" not in t.name:   # the default's own range ends (a variant's stay as judged)
                    t.implausible = why


def _declared_text(claim: Claim) -> str:
    """Everything the claim declares besides its findings and note: where its numbers are the paper's or ours."""
    parts = [claim.quote, claim.where, str(claim.paper_value), " ".join(claim.depends_on),
             " ".join(str(v) for c in claim.checks for k, v in c.items() if k not in ("metric", "metrics", "left")),
             " ".join(str(s.get("label", "")) for s in claim.variant_specs.values())]
    return " ".join(parts)


def _claim_values(claim: Claim, metrics: dict) -> list[tuple[str, float]]:
    """(key, value) of every number the claim's checks read, under the default and every variant."""
    out = []
    for key in dict.fromkeys(claim.metric_keys()):
        for k in [key] + [f"{key}@{v}" for v in claim.variants]:
            v = metrics.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out.append((k, float(v)))
    return out


def placeholder_keys(text: str) -> list[str]:
    """The metric keys a finding's text cites as placeholders."""
    return [m.group(1) for m in PLACEHOLDER.finditer(text or "")]


def fill_placeholders(text: str, metrics: dict) -> str:
    """A finding's text with each `{key}` / `{key:spec}` replaced by the metric's value (`<key>.se` is the standard
    error of the key's repeats where it has no `.se` of its own); a missing value reads "[no <key>]"."""
    def value(m):
        key, spec = m.group(1), m.group(2)
        v = metrics.get(key)
        if v is None and key.endswith(".se"):
            try:
                v = _Metrics(metrics).operand(key[:-3]).se
            except _Missing:
                v = None
        if v is None or isinstance(v, (dict, list)):
            return f"[no {key}]"
        if spec and isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                return format(v, spec)
            except ValueError:
                return fmt(v)
        return fmt(v)

    return PLACEHOLDER.sub(value, text or "").replace("{{", "{").replace("}}", "}")


def _judge(claim: Claim, metrics: dict, status: str, unavailable: dict, variant: str | None,
           overrides: dict[int, dict] | None = None, replace: dict | None = None) -> tuple[str, str, list[CheckResult]]:
    """(verdict, reason, check results) of a claim's checks on usable metrics, under `variant` if given, with
    `overrides` ({check index: {field: value}}) replacing thresholds (a rule's range end) and `replace` swapping
    parts of the keys (default: the variant's own `replace:`)."""
    overrides = overrides or {}
    if replace is None and variant:
        replace = (claim.variant_specs.get(variant) or {}).get("replace")
    results = [evaluate_check({**c, **overrides.get(i, {})}, metrics, z=claim.noise_z, variant=variant,
                              references=claim.references, replace=replace)
               for i, c in enumerate(claim.checks)]
    undecided = [r for r in results if r.outcome == MISSING]
    if undecided:
        reason = "; ".join(dict.fromkeys(r.reason for r in undecided))
        if unavailable and any(r.reason.endswith("is missing") for r in undecided):
            return "not run", f"{reason}, and the item lacks dataset(s) " + ", ".join(sorted(unavailable)), results
        if status != "ok" and metrics.get("reason"):
            reason += f" (item status {status!r}: {metrics['reason']})"
        return "not checkable", reason, results
    failed = [r for r in results if r.outcome == FAIL]
    unsure = [r for r in results if r.outcome == INCONCLUSIVE]
    degenerate = [r for r in results if r.outcome == DEGENERATE]
    passed = [r for r in results if r.outcome == PASS]
    n = len(results)

    def listing(rs):
        return "; ".join(f"{r.check} (measured {r.measured})" for r in rs)

    def besides():
        return (f"; inside the noise: {listing(unsure)}" if unsure else "") + (
            f"; degenerate: {'; '.join(f'{r.check} ({r.reason})' for r in degenerate)}" if degenerate else "")

    if not failed and not unsure and not degenerate:
        if n == 1:
            return "reproduced", f"{results[0].check}: measured {results[0].measured}", results
        return "reproduced", f"all {n} checks pass", results
    if not failed and degenerate:
        return ("degenerate", f"{len(degenerate)} of {n} check(s) compare a side no better than its trivial "
                "reference: " + "; ".join(f"{r.check} ({r.reason.removeprefix('degenerate: ')})"
                                          for r in degenerate)
                + (f"; inside the noise: {listing(unsure)}" if unsure else ""), results)
    if not failed:
        return ("inconclusive", f"{len(unsure)} of {n} check(s) inside the noise: "
                + "; ".join(f"{r.check} ({r.reason})" for r in unsure), results)
    if passed:
        return "partly", f"{len(passed)} of {n} checks pass; fails: {listing(failed)}" + besides(), results
    head = "fails: " if n == 1 else f"{len(failed)} of {n} checks fail, none passes: "
    return "not reproduced", head + listing(failed) + besides(), results


def _class_verdict(claim_class: str, verdict: str) -> str:
    """A measured verdict as the claim's class names it: analytic holds / fails, setup ok / failed."""
    if claim_class == "measured" or verdict in ("not run", "not checkable"):
        return verdict
    ok = verdict == "reproduced"
    if claim_class == "analytic":
        return "holds" if ok else "fails"
    return "setup ok" if ok else "setup failed"


def _variant_has_metrics(claim: Claim, metrics: dict, variant: str, replace: dict | None = None) -> bool:
    replace = replace or (claim.variant_specs.get(variant) or {}).get("replace") or {}
    return any(f"{k}@{variant}" in metrics or f"{swap(k, replace)}@{variant}" in metrics
               or (swap(k, replace) != k and swap(k, replace) in metrics) for k in claim.metric_keys())


def evaluate_claim(claim: Claim, metrics: dict | None, *, missing_reason: str = "",
                   unavailable: dict[str, str] | None = None) -> Verdict:
    """The verdict of one claim on the metrics of its item (or the flattened dataset sidecar), with the verdict
    under each of its variants.

    metrics None: the item or dataset produced no numbers; `missing_reason` says why (verdict "not run").
    A metrics dict whose `status` is "not run" gives "not run" with its `reason`.
    `unavailable`: {dataset: reason} for the unavailable datasets the item reads. A claim listing such a dataset in
    its `datasets:` is "not run"; a missing metric in an item that lacks a dataset is "not run" too, saying so.
    """
    unavailable = unavailable or {}

    klass = claim.claim_class

    def done(verdict, reason, checks=None, variants=None, thresholds=None):
        return Verdict(claim, _class_verdict(klass, verdict), reason, checks or [], variants or [],
                       thresholds or [], metrics)

    if claim.invalid:
        return done("not checkable", f"malformed claim: {claim.invalid}")
    if claim.not_checkable:
        return done("not checkable", claim.not_checkable)
    if metrics is None:
        return done("not run", missing_reason or "no results")
    status = metrics.get("status", "ok")
    if status == "not run":
        return done("not run", str(metrics.get("reason") or "the item was not run"))
    blocked = [d for d in claim.datasets if d in unavailable]
    if blocked:
        return done("not run",
                    "dataset unavailable: " + "; ".join(f"{d} ({_first_line(unavailable[d])})" for d in blocked))
    verdict, reason, results = _judge(claim, metrics, status, unavailable, None)
    variants = []
    for name in claim.variants:
        spec = claim.variant_specs.get(name, {})
        choice, label = spec.get("choice", name), spec.get("label", name)
        if not _variant_has_metrics(claim, metrics, name):
            keys = ", ".join(f"{k}@{name}" for k in dict.fromkeys(claim.metric_keys()))
            variants.append(VariantVerdict(name, choice, label, "not run",
                                           f"variant metrics missing (none of {keys})"))
            continue
        v, r, res = _judge(claim, metrics, status, unavailable, name)
        variants.append(VariantVerdict(name, choice, label, _class_verdict(klass, v), r, res))
    # a reading written in the keys (replace:) combines with each variant of another choice: both open at once
    specs = {n: claim.variant_specs.get(n, {}) for n in claim.variants}
    for r_name, r_spec in specs.items():
        for v_name, v_spec in specs.items():
            if not r_spec.get("replace") or v_spec.get("replace") or v_spec.get("choice") == r_spec.get("choice"):
                continue
            if not _variant_has_metrics(claim, metrics, v_name, r_spec["replace"]):
                continue
            v, r, res = _judge(claim, metrics, status, unavailable, v_name, replace=r_spec["replace"])
            variants.append(VariantVerdict(f"{v_name}+{r_name}", f"{v_spec.get('choice', v_name)} + "
                                           f"{r_spec.get('choice', r_name)}",
                                           f"{v_spec.get('label', v_name)}; {r_spec.get('label', r_name)}",
                                           _class_verdict(klass, v), r, res))
    thresholds = []
    for (rule, fld), members in _rules(claim).items():
        for end, pick in (("low", 0), ("high", 1)):
            overrides = {i: {fld: rng[pick]} for i, rng in members}
            v, r, res = _judge(claim, metrics, status, unavailable, None, overrides)
            first = claim.checks[members[0][0]]
            what = (first.get("label") or f"checks[{members[0][0]}]") if len(members) == 1 else \
                f"{len(members)} checks ({rule})"
            values = ", ".join(dict.fromkeys(fmt(rng[pick]) for _, rng in members))
            spans = ", ".join(dict.fromkeys(f"[{fmt(rng[0])}, {fmt(rng[1])}]" for _, rng in members))
            thresholds.append(VariantVerdict(f"{fld}@{end}:{members[0][0]}", f"threshold {fld} of {what}",
                                             f"{what}: {fld} = {values} ({end} end of {spans})",
                                             _class_verdict(klass, v), r, res, kind="threshold"))
    if len(_rules(claim)) > 1:      # every rule at once at its lenient end, and at its strict end
        for side in ("lenient", "strict"):
            v, r, res = _judge(claim, metrics, status, unavailable, None, _ends(claim, side))
            thresholds.append(VariantVerdict(f"all@{side}", "thresholds together",
                                             f"every rule threshold at the {side} end of its range",
                                             _class_verdict(klass, v), r, res, kind="threshold"))
    # a declared variant with every rule at either end of its range: a setting and a threshold open at once (a
    # failure is the paper's only if no such reading passes; a pass robust only if none fails)
    if _rules(claim):
        for var in [x for x in variants if x.verdict in JUDGED]:
            for side in ("lenient", "strict"):
                v, r, res = _judge(claim, metrics, status, unavailable, var.name.split("+")[0],
                                   _ends(claim, side), replace=_replace_of(specs, var.name))
                thresholds.append(VariantVerdict(f"{var.name}+all@{side}", f"{var.choice} + thresholds",
                                                 f"{var.label}; every rule threshold at the {side} end",
                                                 _class_verdict(klass, v), r, res, kind="threshold"))
    return done(verdict, reason, results, variants, thresholds)


def _ends(claim: Claim, side: str) -> dict[int, dict]:
    """Overrides putting every ranged threshold of the claim at its lenient or strict end."""
    overrides: dict[int, dict] = {}
    for i, check in enumerate(claim.checks):
        for fld, (lo, hi) in (check.get("range") or {}).items():
            overrides.setdefault(i, {})[fld] = hi if _lenient_is_high(check, fld) == (side == "lenient") else lo
    return overrides


def _replace_of(specs: dict, name: str) -> dict | None:
    """The key replacement of a combined variant 'a+b' whose second part is a reading written in the keys."""
    parts = name.split("+")
    return specs.get(parts[1], {}).get("replace") if len(parts) > 1 else None


def _lenient_is_high(check: dict, fld: str) -> bool:
    """Whether the high end of a threshold's range is the lenient one: a larger max, tolerance or (for less) right
    admits more; a larger min, margin or (for greater) right admits less."""
    if fld in ("max", "tol", "rel_tol", "abs_tol"):
        return True
    if fld == "right":
        return check.get("kind") == "less"
    return False


def _rules(claim: Claim) -> dict[tuple[str, str], list[tuple[int, list]]]:
    """The claim's ranged thresholds by rule: checks that give a range to the same field under the same `from:`
    apply one rule, so its ends are judged together (each check at its own end)."""
    out: dict[tuple[str, str], list[tuple[int, list]]] = {}
    for i, check in enumerate(claim.checks):
        for fld, rng in (check.get("range") or {}).items():
            out.setdefault((str(check.get("from") or f"checks[{i}]"), fld), []).append((i, rng))
    return out


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else "unavailable"


def flatten(obj, prefix: str = "") -> dict:
    """Nested mappings and lists as flat dotted keys: {"arrays": {"X": [45222, 104]}} -> {"arrays.X.0": 45222, ...}."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = obj
    return out


def cited(key: str) -> tuple[str, str, str] | None:
    """(paper, item, key) of a key of another item's metrics, written `<paper>/<item>:<key>`; None for the item's
    own keys."""
    where, sep, inner = key.partition(":")
    paper, slash, item = where.partition("/")
    return (paper, item, inner) if sep and slash and paper and item and inner else None


def cited_keys(claim: Claim) -> list[str]:
    """The keys of other items a claim reads or cites in a finding or note."""
    texts = [f["text"] for f in claim.findings] + [claim.note]
    return [k for k in dict.fromkeys(claim.metric_keys() + [k for t in texts for k in placeholder_keys(t)])
            if cited(k)]


def with_cited(metrics: dict | None, claim: Claim, produced: dict[tuple[str, str], dict]) -> dict | None:
    """The item's metrics plus the other items' metrics the claim cites as `<paper>/<item>:<key>` (with their
    repeats and standard errors), read from `produced` ({(paper, item): metrics}); a cited item that did not run
    leaves its keys missing, and the claim says which."""
    keys = cited_keys(claim)
    if metrics is None or not keys:
        return metrics
    out = dict(metrics)
    # `repeats` as a bundle may hold it: anything other than a mapping is no per-repeat values at all
    repeats = dict(out[REPEATS_KEY]) if isinstance(out.get(REPEATS_KEY), dict) else {}
    for key in keys:
        paper, item, inner = cited(key)
        other = produced.get((paper, item))
        if not other:
            continue
        for suffix in ("", ".se"):
            if inner + suffix in other:
                out[key + suffix] = other[inner + suffix]
        theirs = other.get(REPEATS_KEY)
        reps = theirs.get(inner) if isinstance(theirs, dict) else None
        if reps is not None:
            repeats[key] = reps
    if repeats:
        out[REPEATS_KEY] = repeats
    return out
