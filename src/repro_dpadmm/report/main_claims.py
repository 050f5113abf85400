"""A paper's main claims at a glance: the reproducibility summary on top of the report, and one specification curve
per main claim.

A claim is a main claim when its claims file marks it `main: "<the abstract's or contribution list's sentence>"`.
Each is summarised over its cases (a claim declared `over:` several cases) and over its readings (the default, each
declared variant, both ends of each rule threshold's range: `Verdict.readings`), from the verdicts the engine
computed, never typed:

* holds under every reading: every case passes under every reading (the engine's cause "robust");
* holds under some readings: every case passes under some reading and fails under another (which decide it is said);
* holds on some cases: some case fails under every reading while another passes;
* fails under every reading: no case passes under any reading, and a failure is decided beyond the noise;
* undecided: no reading passes or fails beyond the noise (more repeats, or models that learn, would decide it);
* holds (analytic) / fails (analytic): an analytic main claim (a theorem's arithmetic on config values and paper
  bounds, nothing measured) whose checks pass on every case under every reading / under none; it is never said to
  hold "under every reading" as if it had been measured (a mixed one is summarised by its readings as above);
* not run / not checkable: nothing was judged.

The specification curve (Simonsohn, Simmons and Nelson, "Specification curve analysis", Nat. Hum. Behav. 2020;
Steegen et al.'s multiverse) plots the claim's effect under every (case, reading), sorted: the weakest check's signed
distance from its boundary in standard errors (> 0 on the claim's side, decided beyond z standard errors), so that a
reader sees whether a verdict is robust or hangs on one choice. An exact check (no noise) sits at +-CAP. The default
reading is ringed; the paper's own reading, where the claim declares one (`paper_reading:`), is a ringed square.
"""

from __future__ import annotations

import math
from html import escape

from ..claims import DEFAULT_NOISE_Z, fmt
from ..claims.cases import fold_verdicts
from ..claims.model import JUDGED, PASSING

CAP = 10.0    # the curve's axis ends, in standard errors (larger effects, and exact checks, sit at the end)

STATUS = ("holds under every reading", "holds under some readings", "holds on some cases",
          "fails under every reading", "undecided", "holds (analytic)", "fails (analytic)", "not run", "not checkable")
STATUS_CLASS = {"holds under every reading": "s-robust", "holds under some readings": "s-choice",
                "holds on some cases": "s-choice", "fails under every reading": "s-fails",
                "holds (analytic)": "s-robust", "fails (analytic)": "s-fails",
                "undecided": "s-undecided", "not run": "s-notrun", "not checkable": "s-notrun"}


def reading_effect(verdict: str, checks) -> float | None:
    """The effect of a claim under one reading: its weakest check's signed distance from the boundary in standard
    errors; for checks without noise, +-inf by the verdict (None when not judged)."""
    effects = [c.effect for c in checks if getattr(c, "effect", None) is not None]
    if effects:
        return min(effects)
    if verdict in PASSING:
        return float("inf")
    if verdict in JUDGED and verdict not in ("inconclusive", "degenerate"):
        return float("-inf")
    return None


def _point(case: str, reading: str, kind: str, verdict: str, checks, paper: bool = False) -> dict:
    """One (case, reading): its verdict and effect in standard errors; `exact` when its checks have no noise (then
    `effect` is None: JSON has no infinity); `paper` when it is the paper's own reading (the claim's
    `paper_reading`)."""
    e = reading_effect(verdict, checks)
    exact = e is not None and math.isinf(e)
    return {"case": case, "reading": reading, "kind": kind, "verdict": verdict,
            "effect": None if exact else e, "exact": exact, "paper": paper}


def _points(verdicts) -> list[dict]:
    """Every (case, reading) of a claim; the default reading first in each case."""
    out = []
    for v in verdicts:
        case = ", ".join(v.claim.case.values())
        paper = getattr(v.claim, "paper_reading", "")
        if v.verdict in JUDGED:
            out.append(_point(case, "default", "default", v.verdict, v.checks, paper == "default"))
        out += [_point(case, r.label or r.name, r.kind, r.verdict, r.checks,
                       r.kind == "variant" and r.name == paper) for r in v.readings]
    return out


def status(verdicts) -> str:
    """The claim's standing over its cases and readings (see the module's doc)."""
    judged = [v for v in verdicts if v.verdict in JUDGED]
    if not judged:
        vs = {v.verdict for v in verdicts}
        return "not run" if "not run" in vs else "not checkable"
    per_case = [[v.verdict] + [r.verdict for r in v.readings] for v in judged]
    passes = [[x in PASSING for x in case] for case in per_case]
    if getattr(judged[0], "claim_class", "measured") == "analytic":   # arithmetic, not a measurement
        if all(all(p) for p in passes):
            return "holds (analytic)"
        if not any(any(p) for p in passes):
            return "fails (analytic)"
    if all(all(p) for p in passes):
        return "holds under every reading"
    if all(any(p) for p in passes):
        return "holds under some readings"
    if any(any(p) for p in passes):
        return "holds on some cases"
    if any(v.cause in ("paper", "paper-inconsistency") for v in judged):
        return "fails under every reading"
    return "undecided"


def _number(v) -> str:
    """What the check that matters measured in the default reading of this case: the first failing check, else the
    one nearest its boundary."""
    shown = [c for c in v.checks if c.outcome != "not evaluated"]
    if not shown:
        return "—"
    failing = [c for c in shown if c.outcome == "fail"]
    weakest = min(shown, key=lambda c: c.effect if c.effect is not None else (0.0 if c.outcome != "pass" else 1e9))
    return (failing or [weakest])[0].measured


def deciding_counts(verdicts, top: int = 5) -> dict[str, int]:
    """The readings (variants and rule-threshold ends, by label) that change most verdicts (claims judged per case),
    most first."""
    counts: dict[str, int] = {}
    for v in verdicts:
        if v.setup or v.verdict not in JUDGED:
            continue
        for label in dict.fromkeys(r.label or r.name for r in v.readings if r.verdict != v.verdict):
            counts[label] = counts.get(label, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:top])


def summarise_main(verdicts) -> list[dict]:
    """One record per main claim among `verdicts` (in the paper's order), for summary.json and the report."""
    out = []
    for f in fold_verdicts(verdicts):
        claim = f.verdicts[0].claim
        if not claim.main:
            continue
        st = status(f.verdicts)
        points = _points(f.verdicts)
        deciding = list(dict.fromkeys(d for v in f.verdicts for d in (v.deciding if v.cause == "choice" else [])))
        judged = [v for v in f.verdicts if v.verdict in JUDGED]
        shown = next((v for v in judged if v.verdict not in PASSING), judged[0] if judged else f.verdicts[0])
        out.append({
            "id": f.id, "first_id": claim.id, "main": claim.main, "quote": claim.quote, "where": claim.where,
            "status": st, "verdict": f.verdict, "cause": f.cause, "summary": f.summary,
            "cases": len(f.verdicts), "cases_passing": sum(1 for v in judged if v.verdict in PASSING),
            "cases_judged": len(judged),
            "readings": len(points), "readings_passing": sum(1 for p in points if p["verdict"] in PASSING),
            "paper_value": claim.paper_value, "ours": _number(shown), "ours_case": ", ".join(shown.claim.case.values()),
            "deciding": deciding, "z": claim.noise_z, "points": points,
        })
    return out


def status_counts(records: list[dict]) -> dict[str, int]:
    counts = {s: 0 for s in STATUS}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {s: n for s, n in counts.items() if n}


# ------------------------------------------------------------------------------------------------ the curve

_COLOUR = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#bf8700", "degenerate": "#6e7781"}


def _outcome(verdict: str) -> str:
    if verdict in PASSING:
        return "pass"
    if verdict in ("inconclusive", "degenerate"):
        return verdict
    return "fail"


def curve_svg(points: list[dict], z: float = DEFAULT_NOISE_Z, width: int = 320, height: int = 110) -> str:
    """An inline SVG of the specification curve: each (case, reading) a dot at its effect (sorted), the default
    reading filled and ringed, the paper's own reading (where declared) a filled, ringed square, the others hollow;
    the band of +-z standard errors shaded. Every label is escaped."""
    def effect(p: dict) -> float | None:
        if p.get("exact"):
            return float("inf") if p["verdict"] in PASSING else float("-inf")
        return p["effect"]

    pts = [dict(p, effect=effect(p)) for p in points if effect(p) is not None]
    if not pts:
        return ""
    pts = sorted(pts, key=lambda p: p["effect"])
    pad_l, pad_r, pad_t, pad_b = 26, 6, 6, 18
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def y(e: float) -> float:
        e = max(-CAP, min(CAP, e))
        return pad_t + h * (CAP - e) / (2 * CAP)

    step = w / max(len(pts), 1)
    parts = [f'<svg class="speccurve" viewBox="0 0 {width} {height}" width="100%" role="img" '
             f'aria-label="specification curve: the effect under {len(pts)} readings and cases, sorted">',
             f'<rect x="{pad_l}" y="{y(z):.1f}" width="{w}" height="{y(-z) - y(z):.1f}" fill="#eaeef2"/>',
             f'<line x1="{pad_l}" x2="{pad_l + w}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#8c959f" '
             f'stroke-width="0.6"/>']
    for e, text in ((CAP, f"+{fmt(CAP)}"), (z, f"+{fmt(z)}"), (-z, f"−{fmt(z)}"), (-CAP, f"−{fmt(CAP)}")):
        parts.append(f'<text x="{pad_l - 3}" y="{y(e) + 3:.1f}" text-anchor="end" font-size="8" '
                     f'fill="#57606a">{text}</text>')
    parts.append(f'<text x="{pad_l + w / 2:.1f}" y="{height - 2}" text-anchor="middle" font-size="8" '
                 f'fill="#57606a">readings × cases, sorted by effect (SE)</text>')
    r = max(1.6, min(3.5, step / 2.5))
    for i, p in enumerate(pts):
        colour = _COLOUR[_outcome(p["verdict"])]
        cx, cy = pad_l + step * (i + 0.5), y(p["effect"])
        effect = "exact" if abs(p["effect"]) == float("inf") else f"{p['effect']:+.1f} SE"
        title = escape(f"{p['case'] + ' · ' if p['case'] else ''}{p['reading']}: {p['verdict']} ({effect})")
        if p.get("paper"):   # the paper's own reading: a ringed square
            side = 2 * (r + 0.8)
            parts.append(f'<rect x="{cx - side / 2:.1f}" y="{cy - side / 2:.1f}" width="{side:.1f}" '
                         f'height="{side:.1f}" fill="{colour}" stroke="#1f2328" stroke-width="1" '
                         f'class="paper-reading"><title>{title} · the paper\'s reading</title></rect>')
        elif p["kind"] == "default":
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r + 0.8:.1f}" fill="{colour}" stroke="#1f2328" '
                         f'stroke-width="1"><title>{title}</title></circle>')
        else:
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="none" stroke="{colour}" '
                         f'stroke-width="1.2"><title>{title}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------------------------ paper vs ours

def number_points(verdicts) -> list[dict]:
    """Every number a paper states that a claim compares with ours (an approx or equal check's `expected`), with
    what we measured, for the claims that were judged (setup checks of our own construction left out)."""
    out = []
    for v in verdicts:
        if v.setup or v.verdict not in JUDGED or not v.metrics:
            continue
        for spec, result in zip(v.claim.checks, v.checks, strict=False):
            expected, ours = spec.get("expected"), v.metrics.get(spec.get("metric"))
            if spec.get("kind") not in ("approx", "equal") or not _finite(expected) or not _finite(ours):
                continue
            out.append({"id": v.claim.id, "key": spec["metric"], "paper": float(expected), "ours": float(ours),
                        "outcome": result.outcome})
    return out


LOG_AXIS_END = 300   # the scatter's axes end at 1e-300 and 1e300


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def scatter_svg(points: list[dict], width: int = 320, height: int = 240) -> str:
    """Paper value (x) against ours (y) on log-log axes with the diagonal, one dot per stated number coloured by its
    check's outcome; numbers that are not positive cannot sit on a log axis and are counted below it."""
    pos = [p for p in points if p["paper"] > 0 and p["ours"] > 0]
    if not pos:
        return ""
    # Exponents bounded to +-300 (a subnormal or huge number sits at the axis' end; 10 ** -324 would be 0), and at
    # most about eight labelled decades.
    def lg(v: float) -> float:
        return min(max(math.log10(v), -LOG_AXIS_END), LOG_AXIS_END)

    logs = [lg(v) for p in pos for v in (p["paper"], p["ours"])]
    lo, hi = math.floor(min(logs)), math.ceil(max(logs))
    hi = hi if hi > lo else lo + 1
    pad = 30
    w, h = width - pad - 8, height - pad - 8

    def xy(la: float, lb: float) -> tuple[float, float]:
        return (pad + w * (la - lo) / (hi - lo), 8 + h * (hi - lb) / (hi - lo))

    (x0, y0), (x1, y1) = xy(lo, lo), xy(hi, hi)
    parts = [f'<svg class="paperours" viewBox="0 0 {width} {height}" width="100%" role="img" '
             f'aria-label="the paper\'s numbers against ours, {len(pos)} numbers">',
             f'<rect x="{pad}" y="8" width="{w}" height="{h}" fill="none" stroke="#d8dee4"/>',
             f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#8c959f" stroke-dasharray="3 3"/>']
    for e in range(lo, hi + 1, max(1, math.ceil((hi - lo) / 8))):
        x, y = xy(e, e)
        parts.append(f'<text x="{x:.1f}" y="{height - 14}" text-anchor="middle" font-size="8" fill="#57606a">'
                     f'1e{e}</text><text x="{pad - 3}" y="{y + 3:.1f}" text-anchor="end" font-size="8" '
                     f'fill="#57606a">1e{e}</text>')
    parts.append(f'<text x="{pad + w / 2:.1f}" y="{height - 2}" text-anchor="middle" font-size="9" fill="#57606a">'
                 f'the paper\'s number</text><text x="9" y="{8 + h / 2:.1f}" font-size="9" fill="#57606a" '
                 f'transform="rotate(-90 9 {8 + h / 2:.1f})" text-anchor="middle">ours</text>')
    for p in pos:
        x, y = xy(lg(p["paper"]), lg(p["ours"]))
        colour = _COLOUR.get(p["outcome"], _COLOUR["degenerate"])   # "not evaluated": grey
        title = escape(f"{p['id']}: {p['key']} = {fmt(p['ours'])} (paper: {fmt(p['paper'])}; {p['outcome']})")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}" fill-opacity="0.8">'
                     f'<title>{title}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
