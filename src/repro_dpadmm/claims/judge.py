"""Judging claims: one check on the metrics (through its kind), one claim's verdict and its variants' verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field

from .kinds import CHECKS, _measure, describe_check, looser_threshold
from .model import DECIDED_FAILING, FAILING, JUDGED, PAPER_CAUSES, Claim
from .noise import DEFAULT_NOISE_Z, DEGENERATE, FAIL, INCONCLUSIVE, MISSING, PASS, _Metrics, _Missing


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

    def as_dict(self) -> dict:
        return {"kind": self.kind, "check": self.check, "expected": self.expected, "measured": self.measured,
                "passed": self.passed, "outcome": self.outcome, "se": self.se, "z": self.z, "paired": self.paired,
                "reason": self.reason, "label": self.label, "from": self.source, "looser": self.looser}



def evaluate_check(check: dict, metrics: dict, *, z: float | None = None, variant: str | None = None,
                   references: dict[str, tuple[str, str]] | None = None) -> CheckResult:
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
        r = _measure(check, _Metrics(metrics, variant), zz, references)
    except _Missing as exc:
        return CheckResult(check["kind"], what, expected, "—", None, reason=exc.reason, outcome=MISSING, **extra)
    passed = True if r.outcome == PASS else False if r.outcome == FAIL else None
    return CheckResult(check["kind"], what, expected, r.measured, passed, reason=r.reason, observed=r.observed,
                       outcome=r.outcome, se=r.se, z=zz if r.se else None, paired=r.paired, **extra)


@dataclass
class VariantVerdict:
    name: str
    choice: str
    label: str
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)

    def record(self) -> dict:
        return {"name": self.name, "choice": self.choice, "label": self.label, "verdict": self.verdict,
                "reason": self.reason, "checks": [r.as_dict() for r in self.checks]}


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)
    variants: list[VariantVerdict] = field(default_factory=list)

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
                                  if v.verdict in JUDGED and v.verdict != self.verdict))

    @property
    def finding(self) -> dict | None:
        """The first finding whose `when` matches the headline verdict."""
        return next((f for f in self.claim.findings if self.verdict in f["when"]), None)

    @property
    def unexplained(self) -> bool:
        """A failing verdict (partly, inconclusive, degenerate, not reproduced, fails, setup failed) with no matching
        finding."""
        return self.verdict in FAILING and self.finding is None

    @property
    def contradicted(self) -> str:
        """Why the evidence contradicts the matching finding's cause, else "": a paper cause on a failing verdict that
        a variant turns into a passing one (the cause is a choice), or a choice cause on a claim that fails beyond
        the noise (partly, not reproduced) under the default and under every variant that was judged (the choice does
        not decide it). A variant that only turns one failing verdict into another (partly into inconclusive, say)
        leaves a paper cause standing: no choice we tried makes the claim hold; and a setting where the claim is
        inconclusive or degenerate leaves a choice cause standing (more runs, a longer run or another step may decide
        it). The two rules never both flag one finding's cause: between them, both causes stay open."""
        f = self.finding
        if f is None:
            return ""
        if f["cause"] in PAPER_CAUSES and self.depends_on_choice:
            changed = [f"{v.label}: {v.verdict}" for v in self.variants
                       if v.verdict in JUDGED and v.verdict not in FAILING and v.verdict != self.verdict]
            if changed:
                return (f"cause {f['cause']!r}, but the verdict changes under a variant ({'; '.join(changed)}): the "
                        "cause is a choice")
        judged = [v for v in self.variants if v.verdict in JUDGED]
        if f["cause"] == "choice" and judged and self.verdict in DECIDED_FAILING \
                and all(v.verdict in DECIDED_FAILING for v in judged):
            return (f"cause 'choice', but the claim fails beyond the noise under the default and under every variant "
                    f"({', '.join(v.label for v in judged)}): no choice we tried decides it")
        return ""

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
                "checks": [r.as_dict() for r in self.checks], "depends_on": c.depends_on, "note": c.note,
                "setup": self.setup, "variants": [v.record() for v in self.variants],
                "depends_on_choice": self.depends_on_choice, "finding": self.finding,
                "unexplained": self.unexplained, "contradicted": self.contradicted, "stale": self.stale,
                "class": self.claim_class, "looser": self.looser, "noise_z": c.noise_z,
                "source": c.source or f"results/{c.paper}/{c.item}/metrics.json", "file": c.file, "line": c.line}


def _judge(claim: Claim, metrics: dict, status: str, unavailable: dict, variant: str | None
           ) -> tuple[str, str, list[CheckResult]]:
    """(verdict, reason, check results) of a claim's checks on usable metrics, under `variant` if given."""
    results = [evaluate_check(c, metrics, z=claim.noise_z, variant=variant, references=claim.references)
               for c in claim.checks]
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


def _variant_has_metrics(claim: Claim, metrics: dict, variant: str) -> bool:
    return any(f"{k}@{variant}" in metrics for k in claim.metric_keys())


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

    def done(verdict, reason, checks=None, variants=None):
        return Verdict(claim, _class_verdict(klass, verdict), reason, checks or [], variants or [])

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
    return done(verdict, reason, results, variants)


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
