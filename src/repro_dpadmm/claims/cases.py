"""A claim over its cases: the verdicts of its instances (one per case of `over:`) summarised as one claim.

The instances are judged separately (`judge.evaluate_claim`); `fold_verdicts` groups them back under the declared claim and
says whether it holds on every case that ran, on some (naming them) or on none, with one cause class for the claim.
A claim without cases is its own group of one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .judge import Verdict
from .model import JUDGED, PASSING, VERDICTS

SOME_CASES = "on some cases"      # the folded verdict of a claim that passes on some cases and not on others
# the folded claim's cause: the first of these that any case has (a failure the paper's on one case is the paper's)
CAUSE_ORDER = ("paper", "paper-inconsistency", "choice", "power", "degenerate", "robust")


@dataclass
class Folded:
    id: str                          # the declared id (with `{axis}` for a claim over cases)
    verdicts: list[Verdict]          # one per case, in the declared order

    @property
    def claim_class(self) -> str:
        return self.verdicts[0].claim_class

    @property
    def cases(self) -> bool:
        return self.verdicts[0].claim.group is not None

    @property
    def verdict(self) -> str:
        """The instances' verdict where they agree; else the passing verdict when every case that ran passes,
        "on some cases" when some pass, and otherwise the most favourable failing verdict."""
        vs = [v.verdict for v in self.verdicts]
        if len(set(vs)) == 1:
            return vs[0]
        judged = [v for v in vs if v in JUDGED]
        if not judged:
            return next(v for v in VERDICTS if v in vs)
        passing = [v for v in judged if v in PASSING]
        if len(passing) == len(judged):
            return passing[0]
        if passing:
            return SOME_CASES
        order = VERDICTS + ("fails", "setup failed")
        return min(judged, key=lambda v: order.index(v) if v in order else len(order))

    @property
    def cause(self) -> str | None:
        causes = {v.cause for v in self.verdicts} - {None}
        return next((c for c in CAUSE_ORDER if c in causes), None)

    @property
    def summary(self) -> str:
        """In words: "reproduced on all 4 cases", "reproduced on a8a, a9a; partly on ijcnn1", ..."""
        if not self.cases:
            return self.verdict
        by: dict[str, list[str]] = {}
        for v in self.verdicts:
            by.setdefault(v.verdict, []).append(", ".join(v.claim.case.values()))
        if len(by) == 1:
            return f"{self.verdict} on all {len(self.verdicts)} cases"
        return "; ".join(f"{verdict} on {', '.join(cases)}" for verdict, cases in by.items())

    def record(self) -> dict:
        return {"id": self.id, "class": self.claim_class, "verdict": self.verdict, "cause": self.cause,
                "summary": self.summary, "cases": [{"case": v.claim.case, "id": v.claim.id, "verdict": v.verdict,
                                                    "cause": v.cause} for v in self.verdicts]}


def fold_verdicts(verdicts: list[Verdict]) -> list[Folded]:
    """The verdicts grouped by declared claim, in the order of their first instance."""
    groups: dict[tuple, list[Verdict]] = {}
    for v in verdicts:
        c = v.claim
        groups.setdefault((c.file, c.group) if c.group else (c.file, c.id), []).append(v)
    return [Folded(key[1], vs) for key, vs in groups.items()]


def summarise(verdicts: list[Verdict]) -> list[Folded]:
    """`fold_verdicts`, and each verdict of a claim over cases told its claim's summary (`Verdict.over_cases`:
    verdict, cause and the words), so that every case's card and record says how the claim fared on the others."""
    folded = fold_verdicts(verdicts)
    for f in folded:
        if f.cases:
            summary = {k: v for k, v in f.record().items() if k != "cases"}
            for v in f.verdicts:
                v.over_cases = summary
    return folded


def folded_counts(verdicts: list[Verdict]) -> dict:
    """Claims folded over their cases, by class: their verdicts and cause classes (setup checks have no cause)."""
    out: dict = {}
    for f in fold_verdicts(verdicts):
        cls = out.setdefault(f.claim_class, {"claims": 0, "verdicts": {}, "causes": {}})
        cls["claims"] += 1
        cls["verdicts"][f.verdict] = cls["verdicts"].get(f.verdict, 0) + 1
        if f.cause:
            cls["causes"][f.cause] = cls["causes"].get(f.cause, 0) + 1
    return out
