"""What a claims file holds: its claims, evidence rules and verdict vocabulary (the data the loader builds and the
judge reads)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .kinds import check_keys, looser_threshold
from .noise import DEFAULT_NOISE_Z

# The verdicts a claim can get, by class, in the order the report lists them.
VERDICTS = ("reproduced", "partly", "inconclusive", "degenerate", "not reproduced", "not run", "not checkable")
ANALYTIC_VERDICTS = ("holds", "fails", "not run", "not checkable")
SETUP_VERDICTS = ("setup ok", "setup failed")
CLASS_VERDICTS = {"measured": VERDICTS, "analytic": ANALYTIC_VERDICTS,
                  "setup": SETUP_VERDICTS + ("not run", "not checkable")}
ALL_VERDICTS = VERDICTS + ("holds", "fails") + SETUP_VERDICTS
# A claim with one of these verdicts and no matching `finding:` is flagged "unexplained".
FAILING = ("partly", "inconclusive", "degenerate", "not reproduced", "fails", "setup failed")
# failing beyond the noise: a claim inconclusive or degenerate under a setting is undecided there, not failed
DECIDED_FAILING = ("partly", "not reproduced", "fails", "setup failed")
# Verdicts that judged the numbers (a finding can only be stale against one of these).
JUDGED = ("reproduced", "partly", "inconclusive", "degenerate", "not reproduced", "holds", "fails", "setup ok",
          "setup failed")
# The cause of a verdict, computed from the verdicts under every reading (claims.readings), never typed by hand.
CAUSES = ("robust", "choice", "paper", "paper-inconsistency", "power", "degenerate")
PAPER_CAUSES = ("paper", "paper-inconsistency")
PASSING = ("reproduced", "holds", "setup ok")
# Evidence kinds of a metric key, and the class of claim a claim's most informative kind makes it.
KINDS = ("measured", "derived", "given")
CLASS_OF_KIND = {"measured": "measured", "derived": "analytic", "given": "setup"}
CLASSES = ("measured", "analytic", "setup")
# Check fields that hold numeric thresholds (each needs `from:`; see the schema).
THRESHOLD_FIELDS = ("margin", "tol", "min", "max", "rel_tol", "abs_tol")
# The fields a check's `range:` may give a plausible interval for (a number as `right` is a threshold too).
RANGE_FIELDS = THRESHOLD_FIELDS + ("right",)


class ClaimsError(ValueError):
    """A claims file is malformed; the message lists every problem and where it is."""


@dataclass
class Claim:
    id: str
    paper: str
    item: str | None            # None for dataset claims
    source: str | None          # "dataset:<name>" or None (the item's metrics)
    quote: str
    where: str = ""
    paper_value: Any = None
    checks: list[dict] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    note: str = ""
    main: str = ""              # the abstract's or contribution list's sentence of a main claim, else ""
    paper_reading: str = ""     # the reading that is the paper's own ("default" or a variant it lists), else ""
    not_checkable: str = ""
    datasets: list[str] = field(default_factory=list)
    setup: bool = False         # checks our own construction: shown with the item, never counted as reproduced
    gates: list[str] = field(default_factory=list)  # a setup check's: key patterns of the claims that rest on it
    variants: list[str] = field(default_factory=list)            # names declared under the file's `variants:`
    variant_specs: dict[str, dict] = field(default_factory=dict)  # name -> {choice, label, item?, note?}
    findings: list[dict] = field(default_factory=list)           # [{when: [verdicts], text, evidence}]
    noise_z: float = DEFAULT_NOISE_Z                              # the file's `settings.noise_z`
    kinds: dict[str, str] = field(default_factory=dict)          # metric key -> measured | derived | given
    references: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (reference key, lower|higher)
    unranged: list[str] = field(default_factory=list)    # rule thresholds with no plausible range ("checks[0].max")
    case: dict[str, str] = field(default_factory=dict)   # {axis: value} of a claim declared over cases, else {}
    group: str | None = None    # the declared id (with its {axis} placeholders) of a claim over cases, else None
    file: str = ""
    line: int | None = None     # where the claim starts in its file
    invalid: str = ""           # why the claim cannot be evaluated (malformed), empty when valid

    @property
    def dataset(self) -> str | None:
        return self.source.split(":", 1)[1] if self.source else None

    def metric_keys(self) -> list[str]:
        return [k for c in self.checks for k in check_keys(c)]

    @property
    def claim_class(self) -> str:
        """measured, analytic or setup: from the most informative kind its checks read (`setup: true` forces setup;
        a claim with nothing to check, or whose kinds are unknown, is measured)."""
        if self.setup:
            return "setup"
        kinds = {self.kinds.get(k) for k in self.metric_keys()} - {None}
        for kind in KINDS:
            if kind in kinds:
                return CLASS_OF_KIND[kind]
        return "measured"

    def looser_thresholds(self) -> list[str]:
        """Checks whose threshold is looser than the paper's own value (`paper_threshold:`), in words."""
        return [text for c in self.checks if (text := looser_threshold(c))]


@dataclass
class ClaimsFile:
    path: Path
    name: str                                   # file stem: a paper id, or e.g. "datasets"
    metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    items: dict[str, dict] = field(default_factory=dict)
    privacy: dict[str, dict] = field(default_factory=dict)
    variants: dict[str, dict] = field(default_factory=dict)     # name -> {choice, label, item?, note?}
    evidence: dict[str, list[EvidenceRule]] = field(default_factory=dict)   # item | "*" | dataset:<name> -> rules
    noise_z: float = DEFAULT_NOISE_Z
    problems: list[str] = field(default_factory=list)   # errors: the affected claims cannot be evaluated
    warnings: list[str] = field(default_factory=list)   # documentation gaps (e.g. an undocumented metric key)

    def rule_for(self, item: str, key: str) -> tuple[EvidenceRule, dict[str, str]] | None:
        """The evidence rule of `key` in `item` (its own rules first, then "*"), with the `{name}` parts it matched.
        `<key>@<variant>` and `<key>.se` take their base key's rule."""
        base = key.split("@", 1)[0]
        for candidate in (base, base[:-3]) if base.endswith(".se") else (base,):
            for scope in (item, "*"):
                for rule in self.evidence.get(scope, ()):
                    found = rule.match(candidate)
                    if found is not None:
                        return rule, found
        return None

    def kind_of(self, item: str, key: str) -> str | None:
        hit = self.rule_for(item, key)
        return hit[0].kind if hit else None

    def reference_of(self, item: str, key: str) -> tuple[str, str] | None:
        """(reference key, better) of a measured key with a trivial reference, else None."""
        hit = self.rule_for(item, key)
        if not hit or not hit[0].reference:
            return None
        rule, parts = hit
        return rule.reference.format_map(parts), rule.better


@dataclass(frozen=True)
class EvidenceRule:
    """One `evidence:` entry: a key pattern (`*` any characters, `{name}` one dot-free segment), its kind, and for a
    measured error, accuracy or loss its trivial reference (`{name}` filled in as matched)."""
    keys: str
    kind: str
    reference: str = ""
    better: str = ""
    line: int | None = None

    @functools.cached_property
    def regex(self) -> re.Pattern:
        out, names = [], []
        for part in re.split(r"(\*|\{[A-Za-z_][A-Za-z0-9_]*\})", self.keys):
            if part == "*":
                out.append(".*")
            elif part.startswith("{") and part.endswith("}") and len(part) > 2:
                name = part[1:-1]
                out.append(f"(?P={name})" if name in names else f"(?P<{name}>[^.@]+)")
                names.append(name)
            else:
                out.append(re.escape(part))
        return re.compile("".join(out))

    def match(self, key: str) -> dict[str, str] | None:
        m = self.regex.fullmatch(key)
        return None if m is None else m.groupdict()
