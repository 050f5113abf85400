"""Render the reproduction report as a small static site: `index.html` (the headline and, per paper, one compact
table of its claims: paper value, ours, difference, verdict; sortable and filterable by verdict, failures first), one
page per paper (`<paper>.html`: its items, figures and claim cards), `privacy.html`, `provenance.html`, and each
claims file with numbered lines (`claims/<file>.html`) that every claim links to.

The pages are the Jinja2 templates in `templates/` with the style sheet `report.css` and the script `report.js`
(sorting and the verdict filter, no library) inlined, so that each page is one file; figures are files under
`items/<paper>/<item>/` beside their PDF and CSV, linked, not embedded. Nothing is loaded from another host. Every
value is escaped by the templates (autoescape); this module prepares the values.

The headline and the verdict classes are read from what the claims engine wrote (summary.json's counts and marks,
claims.json's records): a verdict or mark the engine adds shows up with its own CSS class (`v-<slug>`) and count
without a change here.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from functools import cache
from importlib.resources import files
from pathlib import Path

import jinja2

from ..claims import ALL_VERDICTS, DEFAULT_NOISE_Z, FAILING, fmt
from ..claims.cases import SOME_CASES
from .main_claims import STATUS, STATUS_CLASS, curve_svg, number_points, scatter_svg, status_counts
from ..provenance import canonical_hash
from ..safeload import visible
from ..staging import changes_text

VERDICT_HELP = {
    "reproduced": "every check of the claim passes on the measured numbers, beyond the run-to-run noise",
    "partly": "some of the claim's checks pass and some fail (beyond the noise)",
    "inconclusive": "no check fails, but at least one is decided by less than the run-to-run noise "
                    f"(z = {fmt(DEFAULT_NOISE_Z)} standard errors unless the claims file sets another)",
    "degenerate": "no check fails, but a comparison has a side no better than its trivial reference (the "
                  "majority-class rate, the loss of the starting point or of the zero model): it decides nothing",
    "not reproduced": "the measured numbers contradict the claim beyond the noise (checks fail, none passes)",
    SOME_CASES: "a claim declared over several cases (datasets, settings) that passes on some and not on others "
                "(each case is named)",
    "not run": "the item or dataset the claim needs was not run (the reason is given)",
    "not checkable": "the paper gives nothing measurable (e.g. a theorem's rate), or a needed number is missing",
    "holds": "an analytic claim (formulas of config values and paper bounds, true or false whatever the "
             "algorithms do) whose arithmetic holds; never counted as a reproduction",
    "fails": "an analytic claim whose arithmetic does not hold",
    "setup ok": "a check of our own construction passed (never counted as a claim)",
    "setup failed": "a check of our own construction failed: a defect of ours until a finding explains it",
}
# The words of the headline and the tables, defined once; the legend on top links each to its entry (`#term-<slug>`).
TERM_HELP = {
    **{s: h for s, h in (
        ("holds under every reading", "a main claim that passes on every case under every reading (the default, "
                                      "each declared variant, both ends of each rule threshold's range)"),
        ("holds under some readings", "a main claim that passes on every case under some reading and fails under "
                                      "another: the readings named beside it decide it"),
        ("holds on some cases", "a main claim that fails under every reading on some case and passes on another"),
        ("fails under every reading", "a main claim that passes on no case under any reading, failing beyond the "
                                      "noise"),
        ("undecided", "a main claim no reading decides: inside the run-to-run noise, or comparing a model no better "
                      "than its trivial reference"),
        ("holds (analytic)", "an analytic main claim (a theorem's arithmetic on config values and paper bounds, "
                             "nothing measured) whose checks pass on every case under every reading"),
        ("fails (analytic)", "an analytic main claim whose checks pass on no case under any reading"))},
    "analytic": "a claim whose checks read only formulas of config values and paper bounds: it holds or fails by "
                "arithmetic, never counts as a reproduction",
    "setup": "a check of our own construction or of what the build and the config fix: shown with its item, never "
             "counted as a claim",
    "depends on a choice": "the verdict differs under a declared variant (a setting the paper leaves open)",
    "depends on a threshold": "the verdict differs at an end of a rule threshold's plausible range",
    "stale": "a finding written for a verdict the claim no longer gets",
    "unexplained": "a failing verdict without a finding that explains it",
    "cause": "computed from the verdicts under every reading: robust (passes under all), choice (some pass, some "
             "do not), paper (fails beyond the noise under every reading; paper-inconsistency for an analytic "
             "claim), power (no reading passes, some are inside the noise), degenerate (the undecided readings "
             "compare a model no better than its trivial reference)",
}
MARK_TEXT = {"depend_on_choice": "depend on a choice the paper leaves open", "unexplained": "unexplained failures",
             "depend_on_threshold": "depend on where a rule threshold sits in its plausible range",
             "typed_numbers": "with numbers typed into a finding or note that the run holds",
             "rule_without_range": "with a rule threshold that has no plausible range", "stale": "stale findings",
             "looser_threshold": "thresholds looser than the paper's own number", "setup ok": "setup checks ok",
             "setup failed": "setup checks failed"}
# claims.json keys whose true (or non-empty) value marks a claim, with the words shown; any other boolean flag that
# summary.json counts as a mark is shown under its own name
RECORD_MARKS = {"unexplained": "unexplained", "stale": "stale finding", "typed_numbers": "typed numbers",
                "looser": "looser than the paper", "depends_on_choice": "depends on a choice",
                "depends_on_threshold": "depends on a threshold"}


# ------------------------------------------------------------------------------------------------ formatting

def slug(verdict: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(verdict).lower())


def secs(value) -> str:
    if value is None:
        return "—"
    v = float(value)
    if v < 120:
        return f"{v:.1f} s"
    if v < 7200:
        return f"{v / 60:.1f} min"
    return f"{v / 3600:.2f} h"


def item_time(it) -> str:
    """An item's wall time, with the time of the separate jobs it aggregates when it has any."""
    if it.job_time_s is None:
        return secs(it.wall_time_s)
    return f"{secs(it.wall_time_s)} + {secs(it.job_time_s)} in its jobs"


def total_time(times: dict) -> str:
    out = secs(times.get("sum_item_wall_time_s"))
    if times.get("sum_job_time_s") is not None:
        out += f" + {secs(times['sum_job_time_s'])} in separate jobs"
    return out


def value_text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return fmt(value) if not isinstance(value, str) else value


def clip(text, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def plural(n) -> str:
    """The plural 's' of a count (for a bool: 's' when true, for a verb after a singular subject)."""
    return ("s" if n else "") if isinstance(n, bool) else ("s" if n != 1 else "")


def count_text(counts: dict, keys=None, versions: bool = False) -> str:
    """"3 reproduced, 1 partly" (non-zero counts, in order; only `keys` if given); with versions=True the mapping is
    name -> version: "numpy 2.4.6, scipy 1.17.1"."""
    if versions:
        return ", ".join(f"{k} {v}" for k, v in counts.items())
    return ", ".join(f"{counts[k]} {k}" for k in (keys or counts) if counts.get(k))


def array_shapes(side: dict) -> str:
    arrays = side.get("arrays")
    if not isinstance(arrays, dict):   # a sidecar from a bundle may hold anything here
        return ""
    return ", ".join(f"{k} {'×'.join(str(n) for n in v) if isinstance(v, list) else value_text(v)}"
                     for k, v in arrays.items())


def first_reason(side: dict) -> str:
    reason = str(side.get("reason") or "").strip().splitlines()
    return reason[0] if reason else "unavailable"


def options_text(side: dict) -> str:
    options = side.get("options") or {}
    if not isinstance(options, dict):   # a sidecar from a bundle may hold anything here
        return f"unreadable (options is a {type(options).__name__}, not a mapping)"
    return ", ".join(f"{k}={v}" for k, v in options.items())


def source_hashes(side: dict) -> list[tuple[str, str]]:
    """[(source file, its sha256)] of a sidecar's `sources`; a field or entry of the wrong type (a sidecar from a
    bundle may hold anything) is shown as unreadable, never read further."""
    sources = side.get("sources") or {}
    if not isinstance(sources, dict):
        return [(f"unreadable (sources is a {type(sources).__name__}, not a mapping)", "")]
    out = []
    for rel, info in sources.items():
        sha = info.get("sha256") if isinstance(info, dict) else None
        out.append((Path(str(rel)).name, sha if isinstance(sha, str) else "unreadable"))
    return out


def mark_text(key: str) -> str:
    return MARK_TEXT.get(key, key.replace("_", " "))


# Failures in the order a reader wants them: decided failures (the claim contradicted beyond the noise), then a
# claim that holds on some cases only, then the undecided ones (inside the noise, or comparing a model that learns
# nothing); any failing verdict the engine adds later comes after these.
FAILURE_ORDER = ("not reproduced", "fails", "setup failed", "partly", SOME_CASES, "inconclusive", "degenerate")


def rank(verdict: str, unexplained: bool = False) -> int:
    """Sort order of a verdict, failures first: unexplained failures, then the other failures (decided ones first:
    FAILURE_ORDER), then every other verdict (in the engine's order; one it adds later, after those)."""
    failing = FAILURE_ORDER + tuple(v for v in FAILING if v not in FAILURE_ORDER)
    if verdict in failing:
        return failing.index(verdict) + (0 if unexplained else len(failing))
    known = [v for v in ALL_VERDICTS if v not in failing]
    return 2 * len(failing) + (known.index(verdict) if verdict in known else len(known))


# ------------------------------------------------------------------------------------------------ claim rows

def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _operand(metrics: dict, key) -> float | None:
    return _number(key) if not isinstance(key, str) else _number(metrics.get(key))


def _outside(v: float, lo, hi) -> str:
    lo, hi = _number(lo), _number(hi)
    if lo is not None and v < lo:
        return f"{fmt(v - lo)} below the range"
    if hi is not None and v > hi:
        return f"+{fmt(v - hi)} above the range"
    return "inside the range"


def check_difference(check: dict, result: dict, metrics: dict) -> str:
    """How far the measured number is from what the claim says, for one check: value - expected (and relative)
    for approx and equal, the distance outside the range for range and ratio_range, left - right in standard errors
    for less and greater; "" where a difference says nothing (monotone steps, booleans, an unknown kind)."""
    if result.get("outcome") == "not evaluated" or not isinstance(check, dict):
        return ""
    kind = check.get("kind")
    if kind in ("approx", "equal"):
        v, exp = _operand(metrics, check.get("metric")), _number(check.get("expected"))
        if v is None or exp is None:
            return ""
        d = v - exp
        return f"{'+' if d > 0 else ''}{fmt(d)}" + (f" ({d / exp:+.1%})" if exp else "")
    if kind == "range":
        v = _operand(metrics, check.get("metric"))
        return "" if v is None else _outside(v, check.get("min"), check.get("max"))
    if kind == "ratio_range":
        a, b = _operand(metrics, check.get("left")), _operand(metrics, check.get("right"))
        return "" if a is None or not b else f"ratio {fmt(a / b)}, {_outside(a / b, check.get('min'), check.get('max'))}"
    if kind in ("less", "greater"):
        a, b = _operand(metrics, check.get("left")), _operand(metrics, check.get("right"))
        if a is None or b is None:
            return ""
        d, se = a - b, _number(result.get("se"))
        return f"left − right = {fmt(d)}" + (f" ({d / se:+.1f} SE)" if se else "")
    return ""


# the checks a compact row shows first: the failing ones, then those inside the noise, then the rest
OUTCOME_ORDER = {"fail": 0, "inconclusive": 1, "not evaluated": 2, "pass": 3}
SHOWN_CHECKS = 2   # a row shows this many checks; the claim's card has them all
KV_MAX_ROWS = 10_000  # rows of an item's parameters or metrics a page lists (a paper-scale item has about 5,000)


def claim_row(record: dict, claim, metrics: dict | None, item_title: str, previous: dict | None,
              mark_keys) -> dict:
    """What the compact table shows of one claim (a claims.json record): its first checks (failing first), what
    they require, what we measured and the difference, the reason and the finding's cause (clipped; the card on the
    paper's page has everything)."""
    checks = record.get("checks") or []
    specs = getattr(claim, "checks", []) or []
    order = sorted(range(len(checks)), key=lambda i: OUTCOME_ORDER.get(checks[i].get("outcome"), 2))
    shown = order[:SHOWN_CHECKS]
    more = f" (+{len(checks) - len(shown)} more checks)" if len(checks) > len(shown) else ""
    paper_value = record.get("paper_value")
    verdict = str(record.get("verdict"))
    unexplained = bool(record.get("unexplained"))
    marks = [text for key, text in RECORD_MARKS.items() if record.get(key)]
    marks += [k.replace("_", " ") for k in mark_keys
              if k not in RECORD_MARKS and k not in MARK_TEXT and record.get(k) is True]
    diffs = [check_difference(specs[i], checks[i], metrics or {}) if i < len(specs) else "" for i in shown]
    finding = record.get("finding") or {}
    was = (previous or {}).get(record.get("id"))
    measured = [checks[i].get("measured", "") for i in shown if checks[i].get("outcome") != "not evaluated"]
    return {
        "id": record.get("id"), "paper": record.get("paper"), "item": item_title, "quote": record.get("quote") or "",
        "where": record.get("where") or "", "verdict": verdict, "slug": slug(verdict),
        "rank": rank(verdict, unexplained), "failing": verdict in FAILING, "marks": marks,
        "paper_value": clip(value_text(paper_value), 160) if paper_value is not None else "",
        # the relation in the claims file's words (a check's label) where it has them, else the check itself
        "claimed": "; ".join(clip(checks[i].get("label") or checks[i].get("check", ""), 100) for i in shown) + more
                   if paper_value is None else "",
        "ours": clip("; ".join(measured), 160) + more if measured else "—",
        "difference": "; ".join(d for d in diffs if d),
        "reason": clip(record.get("reason") or "", 260),
        "cause": clip(f"{record.get('cause')}" + (f" ({'; '.join(record.get('deciding') or [])})"
                                                 if record.get("deciding") else "")
                      + (f": {finding.get('text')}" if finding else ""), 260) if record.get("cause") else "",
        "was": was if was is not None and was != verdict else None,
        "claims_link": f"claims/{record.get('file')}.html#L{record.get('line')}" if record.get("file") else "",
        "claims_where": f"{record.get('file')}:{record.get('line')}" if record.get("file") else "",
        "group": record.get("group") or record.get("id"), "case": ", ".join((record.get("case") or {}).values()),
        "over_cases": record.get("over_cases"), "cases": [],
    }


def fold_rows(rows: list[dict]) -> list[dict]:
    """One row per declared claim: a claim over cases shows its weakest case's numbers under the claim's folded
    verdict and cause, with every case listed in `cases` (shown folded in the table)."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    out = []
    for members in groups.values():
        if len(members) == 1 or not members[0]["over_cases"]:
            out.extend(members)
            continue
        worst = min(members, key=lambda r: (r["rank"], r["order"]))
        over = worst["over_cases"]
        verdict = str(over.get("verdict"))
        folded = dict(worst, verdict=verdict, slug=slug(verdict), failing=verdict in FAILING,
                      rank=rank(verdict, any(m["rank"] < len(FAILURE_ORDER) for m in members)),
                      order=min(m["order"] for m in members), cases=sorted(members, key=lambda r: r["order"]),
                      summary=str(over.get("summary") or ""),
                      cause=clip(f"{over.get('cause')}: {worst['cause']}" if over.get("cause") else worst["cause"],
                                 260))
        folded["marks"] = list(dict.fromkeys(m for r in members for m in r["marks"]))
        out.append(folded)
    return sorted(out, key=lambda r: (r["rank"], r["order"]))


def paper_rows(p, records: dict, previous: dict | None, mark_keys) -> list[dict]:
    """The compact rows of a paper's claims (setup checks left out), failures first, then in paper order."""
    rows = []
    for v in p.data_verdicts:
        if not v.setup:
            rows.append(claim_row(records[v.claim.id], v.claim, None, "Dataset facts", previous, mark_keys))
    for it in p.items:
        for v in it.verdicts:
            if not v.setup:
                rows.append(claim_row(records[v.claim.id], v.claim, it.metrics, it.title, previous, mark_keys))
    for n, r in enumerate(rows):
        r["order"] = n
    return fold_rows(rows)


def item_index(p) -> list[dict]:
    """A row per item of the paper's index; items with neither results nor claims are `compact` (no card)."""
    rows = []
    for it in p.items:
        counts: dict[str, int] = {}
        for v in it.verdicts:
            if not v.setup:
                counts[v.verdict] = counts.get(v.verdict, 0) + 1
        counts = {k: counts[k] for k in sorted(counts, key=rank)}
        text = count_text(counts)
        rows.append({"item": it, "counts": counts, "any": bool(text),
                     "text": text or (it.reason if it.state != "produced" else "no claims attached"),
                     "compact": it.state == "missing" and not it.verdicts})
    return rows


def item_choices(it) -> list[str]:
    return list(dict.fromkeys(it.spec.get("choices", []) + [d for v in it.verdicts for d in v.claim.depends_on]))


def privacy_tables(report) -> list[tuple[str, list[dict]]]:
    """Per paper, its privacy rows sorted by (method, setting), with the paper / PLD ratio and the extra fields."""
    by_paper: dict[str, list] = {}
    for row in report.privacy:
        by_paper.setdefault(row["paper"], []).append(row)
    names = {p.id: p.short for p in report.papers}
    out = []
    for pid, rows in by_paper.items():
        body = []
        for r in sorted(rows, key=lambda r: (r["method"], r["setting"])):
            vals, meta = r["values"], r["meta"]
            paper_eps, pld = vals.get("paper_eps"), vals.get("pld_eps")
            ratio = (fmt(paper_eps / pld) if isinstance(paper_eps, (int, float)) and isinstance(pld, (int, float))
                     and not isinstance(paper_eps, bool) and pld else "—")
            extra = {k: v for k, v in vals.items() if k not in ("paper_eps", "rdp_eps", "pld_eps", "delta")}
            body.append({"method": meta.get("label") or r["method"], "setting": r["setting"],
                         "sub": " · ".join(str(meta[k]) for k in ("mechanism", "bound") if meta.get(k)),
                         "conflict": r["conflict"], "vals": vals, "ratio": ratio, "items": r["items"],
                         "extra": ", ".join(f"{k} = {value_text(v)}" for k, v in sorted(extra.items()))})
        out.append((names.get(pid, pid), body))
    return out


def ordered_counts(counts: dict) -> dict:
    """A verdict -> count mapping in report order (failures first), zero counts left out."""
    return {k: counts[k] for k in sorted(counts, key=rank) if counts[k]}


def figure_entry(fig: Path, it, link: dict) -> dict:
    """A figure's files in the report folder: png, and the pdf and csv saved beside it (only those copied there)."""
    base = f"items/{it.paper}/{it.item}/"
    copied = link.get("files", ())
    return {"name": fig.name, "png": base + fig.name,
            **{ext: base + fig.with_suffix(f".{ext}").name for ext in ("pdf", "csv")
               if fig.with_suffix(f".{ext}").name in copied},
            "notebook": link.get("notebook")}


# ------------------------------------------------------------------------------------------------ rendering

def _visible(value):
    """Every value a template writes, text and prepared markup alike, with control, bidi and invisible characters
    shown as escapes (`safeload.visible`): a bundle's strings reach the pages through many fields."""
    if hasattr(value, "__html__"):   # prepared markup (markupsafe.Markup): stays markup
        return type(value)(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("repro_dpadmm.report", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined, finalize=_visible)
    env.filters.update(slug=slug, secs=secs, value_text=value_text, clip=clip, plural=plural,
                       count_text=count_text, array_shapes=array_shapes, first_reason=first_reason,
                       options_text=options_text, source_hashes=source_hashes,
                       basename=lambda rel: Path(rel).name, item_choices=item_choices,
                       item_index=item_index, mark_text=mark_text, ordered_counts=ordered_counts,
                       changes_text=changes_text, nonzero=lambda c: {k: n for k, n in c.items() if n}, tally=lambda xs: dict(Counter(xs)))
    env.globals.update(VERDICT_HELP=VERDICT_HELP, item_time=item_time, total_time=total_time, curve_svg=curve_svg,
                       KV_MAX_ROWS=KV_MAX_ROWS, STATUS=STATUS, STATUS_CLASS=STATUS_CLASS, status_counts=status_counts,
                       number_points=number_points,
                       scatter_svg=scatter_svg, TERM_HELP=TERM_HELP,
                       canonical_hash=canonical_hash, figure_entry=figure_entry, rank=rank)
    return env


def _asset(name: str) -> str:
    return files("repro_dpadmm.report").joinpath("templates", name).read_text(encoding="utf-8")


def css() -> str:
    return _asset("report.css")


def paper_page(p) -> str:
    return f"{p.id}.html"


def render_site(report, summ: dict, records: list[dict], links: dict, *, previous: dict | None = None,
                run_name: str | None = None) -> dict[str, str]:
    """Every page of the site: {path relative to the report folder: html}."""
    env = environment()
    by_id = {r["id"]: r for r in records}
    mark_keys = list(summ.get("marks") or {})
    rows = {p.id: paper_rows(p, by_id, previous, mark_keys) for p in report.papers}
    verdicts_present = ordered_counts({v: sum(1 for rs in rows.values() for r in rs if r["verdict"] == v)
                                       for v in {r["verdict"] for rs in rows.values() for r in rs}})
    common = {"report": report, "summary": summ, "css": css(), "js": _asset("report.js"), "run_name": run_name,
              "papers": [p for p in report.papers if not p.beyond], "beyond": [p for p in report.papers if p.beyond],
              "paper_page": paper_page, "previous": previous}
    n_changed = sum(1 for rs in rows.values() for r in rs if r["was"])
    # each headline mark names the claims it counts (shown on hover)
    fields = {"depend_on_choice": "depends_on_choice", "depend_on_threshold": "depends_on_threshold",
              "unexplained": "unexplained", "stale": "stale", "typed_numbers": "typed_numbers",
              "looser_threshold": "looser"}
    mark_ids = {k: [r["id"] for r in records if r.get(f) and (k in ("unexplained", "stale") or not r.get("setup"))]
                for k, f in fields.items()}
    pages = {"index.html": env.get_template("index.html.j2").render(
        **common, page="index", rows=rows, verdicts_present=verdicts_present, n_changed=n_changed, mark_ids=mark_ids,
        any_differ=any(it.params_differ for p in report.papers for it in p.items),
        n_items=sum(1 for p in report.papers for it in p.items if it.expected),
        n_unlisted=sum(1 for p in report.papers for it in p.items if not it.expected),
        not_produced=[f"{p.id}/{it.item}: {it.state}" + (f" ({clip(it.reason, 120)})" if it.reason else "")
                      for p in report.papers for it in p.items if it.state != "produced" and it.expected],
        failed_setup=[v.claim.id for v in report.verdicts if v.verdict == "setup failed"],
        produced=sum(1 for p in report.papers for it in p.items if it.state == "produced" and it.expected))}
    paper_tpl = env.get_template("paper.html.j2")
    for p in report.papers:
        present = ordered_counts({v: sum(1 for r in rows[p.id] if r["verdict"] == v)
                                  for v in {r["verdict"] for r in rows[p.id]}})
        pages[paper_page(p)] = paper_tpl.render(**common, page=p.id, p=p, rows=rows[p.id], links=links,
                                                records=by_id, verdicts_present=present)
    pages["privacy.html"] = env.get_template("privacy.html.j2").render(**common, page="privacy",
                                                                       privacy=privacy_tables(report))
    pages["provenance.html"] = env.get_template("provenance.html.j2").render(**common, page="provenance")
    claims_tpl = env.get_template("claims_file.html.j2")
    for path in report.claims_paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        pages[f"claims/{path.name}.html"] = claims_tpl.render(**common, page="claims", up="../", name=path.name,
                                                               lines=lines)
    return pages
