"""Render the reproduction report as one static HTML page: no JavaScript, figures embedded, links relative.

The page is the Jinja2 template `templates/report.html.j2` (with `macros.html.j2` and `paper.html.j2`) and the
style sheet `templates/report.css`, inlined so that index.html stays one self-contained file. Every value is
escaped by the templates (autoescape); this module only prepares the values and the small formatting filters.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from importlib.resources import files
from pathlib import Path

import jinja2

from ..claims import DEFAULT_NOISE_Z, VERDICTS, fmt
from ..provenance import canonical_hash

VERDICT_HELP = {
    "reproduced": "every check of the claim passes on the measured numbers, beyond the run-to-run noise",
    "partly": "some of the claim's checks pass and some fail (beyond the noise)",
    "inconclusive": "no check fails, but at least one is decided by less than the run-to-run noise "
                    f"(z = {fmt(DEFAULT_NOISE_Z)} standard errors unless the claims file sets another)",
    "degenerate": "no check fails, but a comparison has a side no better than its trivial reference (the "
                  "majority-class rate, the loss of the starting point or of the zero model): it decides nothing",
    "not reproduced": "the measured numbers contradict the claim beyond the noise (checks fail, none passes)",
    "not run": "the item or dataset the claim needs was not run (the reason is given)",
    "not checkable": "the paper gives nothing measurable (e.g. a theorem's rate), or a needed number is missing",
}
FAILING = ("not reproduced", "partly", "degenerate", "inconclusive", "fails", "setup failed")
ANALYTIC_HELP = {"holds": "an analytic claim (formulas of config values and paper bounds) whose arithmetic holds",
                 "fails": "an analytic claim whose arithmetic does not hold"}


# ------------------------------------------------------------------------------------------------ formatting

def slug(verdict: str) -> str:
    return verdict.replace(" ", "-")


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


def data_uri(path: Path) -> str:
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}.get(
        path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


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
    return ", ".join(f"{counts[k]} {k}" for k in (keys or counts) if counts[k])


def array_shapes(side: dict) -> str:
    return ", ".join(f"{k} {'×'.join(str(n) for n in v)}" for k, v in (side.get("arrays") or {}).items())


def first_reason(side: dict) -> str:
    reason = str(side.get("reason") or "").strip().splitlines()
    return reason[0] if reason else "unavailable"


def options_text(side: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in (side.get("options") or {}).items())


# ------------------------------------------------------------------------------------------------ view data

def failures(report) -> list:
    """(paper, verdict) of the claims that did not (fully) reproduce, unexplained first, then by severity."""
    bad = [(p, v) for p in report.papers for v in p.verdicts if v.verdict in FAILING]
    return sorted(bad, key=lambda pv: (not (pv[1].unexplained or pv[1].contradicted), FAILING.index(pv[1].verdict)))


def item_index(p) -> list[dict]:
    """A row per item of the paper's index; items with neither results nor claims are `compact` (no card)."""
    rows = []
    for it in p.items:
        counts = {v: 0 for v in VERDICTS}
        for v in it.verdicts:
            if v.claim_class == "measured":
                counts[v.verdict] += 1
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


# ------------------------------------------------------------------------------------------------ rendering

@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("repro_dpadmm.report", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(slug=slug, secs=secs, value_text=value_text, data_uri=data_uri, clip=clip, plural=plural,
                       count_text=count_text, array_shapes=array_shapes, first_reason=first_reason,
                       options_text=options_text, basename=lambda rel: Path(rel).name, item_choices=item_choices,
                       item_index=item_index)
    env.globals.update(VERDICTS=VERDICTS, VERDICT_HELP=VERDICT_HELP, ANALYTIC_HELP=ANALYTIC_HELP,
                       item_time=item_time, total_time=total_time,
                       canonical_hash=canonical_hash)
    return env


def css() -> str:
    return files("repro_dpadmm.report").joinpath("templates", "report.css").read_text(encoding="utf-8")


def render(report, links: dict) -> str:
    env = environment()
    paper_section = env.get_template("paper.html.j2").module.paper_section
    ic = [p.item_counts() for p in report.papers]
    return env.get_template("report.html.j2").render(
        report=report, css=css(),
        papers=[p for p in report.papers if not p.beyond], beyond=[p for p in report.papers if p.beyond],
        paper_section=lambda p: paper_section(p, links),
        any_differ=any(it.params_differ for p in report.papers for it in p.items),
        n_items=sum(len(p.items) for p in report.papers),
        produced=sum(1 for p in report.papers for it in p.items if it.state == "produced"),
        all_items={s: sum(c[s] for c in ic) for s in ("produced", "not run", "missing")},
        failures=failures(report), privacy=privacy_tables(report))
