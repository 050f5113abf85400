"""The reproduction report: every claim of the five papers, checked against the measured numbers.

`build_report(out_dir)` reads only `results/<paper>/<item>/metrics.json` (and each item's rendered notebook,
settings.json and figures, which it copies), `config/claims/*.yaml`, the dataset sidecars
`resources/processed/*.json`, `config/config.yaml`, each parameter's meaning from the config schema
(`config_doc.parameter_descriptions`) and provenance (git, package versions, papermill's record of each item's
parameters), and writes into `out_dir` (default `results/report/`):

* `claims.json`: one record per claim (id, paper, item, quote, expected, measured, verdict, reason, checks...);
* `summary.json`: per paper, items by state and claims by verdict, plus provenance;
* `index.html` and the pages it links (report/html.py): the headline and per paper a compact table of its claims,
  one page per paper with its figures and claim cards, privacy accounting, provenance, the claims files;
* `items/<paper>/<item>/`: copies of each item's rendered notebook, metrics.json, settings.json and figures (png,
  pdf and the csv of what each plots), so the folder can be moved.

Results from a bundle (`bundle.rejudge`) may come from anyone, so nothing of them is served as active content: each
item's rendered notebook is copied with a Content-Security-Policy that forbids scripts, plugins, forms and outside
requests, and the report links it through a page that shows it in a sandboxed iframe (`SANDBOX_PAGE`). Figures are
shown only when they are at most FIGURE_MAX_BYTES and (for a PNG) of sane dimensions; others are listed with the
reason. Of a bundle's figure files only PNGs are copied and linked; its PDFs, CSVs and any other are named only.
"""

from __future__ import annotations

from html import escape
import json
import math
import os
import re
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .. import claims as claims_mod
from .. import provenance as prov_mod
from .. import registry, safeload
from ..claims import (
    CLASS_VERDICTS,
    CLASSES,
    VERDICTS,
    Claim,
    ClaimsFile,
    Verdict,
    discount_implausible,
    evaluate_claim,
    flatten,
    folded_counts,
    summarise,
    with_cited,
)
from ..config_doc import parameter_descriptions
from ..paths import project_root
from .. import staging
from .main_claims import deciding_counts, summarise_main

__all__ = ["build_report", "collect", "Report", "ItemResult", "VERDICTS"]

ITEM_STATES = ("produced", "not run", "missing")
# A paper-scale figure is 50-300 kB; larger ones (and PNGs of absurd dimensions) are listed, not embedded, so that a
# results folder from elsewhere cannot make index.html arbitrarily large or a browser decode gigapixels.
FIGURE_MAX_BYTES = 8 * 2**20
# A paper-scale rendered notebook is 1-5 MiB; one from a bundle is escaped into its sandbox page in memory.
NOTEBOOK_MAX_BYTES = 64 * 2**20
# Escaping for the frame's srcdoc makes a page up to 6 times larger (`"` becomes `&quot;`): the sandbox pages of a
# re-judged bundle are capped once escaped, each and in all, so that a small bundle of pages of quotes cannot make
# the report write gigabytes; the pages beyond either cap are listed on their paper's page, not embedded.
SANDBOX_PAGE_MAX_BYTES = 128 * 2**20
SANDBOX_PAGES_MAX_BYTES = 512 * 2**20
FIGURE_MAX_SIDE = 20_000
FIGURE_MAX_PIXELS = 50_000_000
# What a page copied from a bundle may do: show its own inline styles and embedded images, nothing else.
BUNDLE_PAGE_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline' data:; font-src data:; "
                   "form-action 'none'; base-uri 'none'; frame-ancestors 'self'")
PRIVACY_FIELDS = ("paper_eps", "rdp_eps", "pld_eps", "delta")


@dataclass
class ItemResult:
    paper: str
    item: str
    expected: bool                      # listed in repro_dpadmm.registry
    state: str                          # produced | not run | missing | <other status the item wrote>
    reason: str = ""
    note: str = ""                      # the item's own short finding (metrics `note`), shown with it
    metrics: dict | None = None
    wall_time_s: float | None = None
    job_time_s: float | None = None     # summed wall time of the separate jobs the item aggregates (the frontier's)
    mtime: float | None = None
    params: dict | None = None          # the parameters the item ran with (or the config's, see params_source)
    params_source: str = ""             # "run" (papermill record), "config" (config/config.yaml) or ""
    params_problem: str = ""            # why the run's own record could not be read (too large, malformed), or ""
    params_differ: bool = False         # the run's parameters differ from config/config.yaml (e.g. a smoke run)
    param_docs: dict = field(default_factory=dict)  # each parameter's meaning, from the config schema's descriptions
    figures: list[Path] = field(default_factory=list)
    missing_figures: list[str] = field(default_factory=list)  # named in the claims file but not written
    refused_figures: list[str] = field(default_factory=list)  # not embedded: too large or malformed (with why)
    unlinked_files: list[str] = field(default_factory=list)   # a bundle's figure files other than PNGs: named only
    notebook: Path | None = None
    spec: dict = field(default_factory=dict)     # claims file `items.<item>`: title, caption, choices...
    metric_docs: dict = field(default_factory=dict)
    unavailable: dict = field(default_factory=dict)  # datasets it reads that are unavailable: {name: reason}
    verdicts: list[Verdict] = field(default_factory=list)
    run_name: str | None = None         # a what-if run's name (its settings.json)
    changes: list | None = None         # how its parameters differ from config/config.yaml ([{key, run, paper}])
    commit: str | None = None           # the commit it ran at (its settings.json)
    folder: Path | None = None          # results/<paper>/<item>/

    @property
    def title(self) -> str:
        return self.spec.get("title") or self.item

    @property
    def anchor(self) -> str:
        return f"{self.paper}-{self.item}"


@dataclass
class PaperResult:
    id: str
    short: str
    title: str
    citation: str
    beyond: bool
    items: list[ItemResult] = field(default_factory=list)
    data_verdicts: list[Verdict] = field(default_factory=list)   # dataset-fact claims of this paper
    claims_file: ClaimsFile | None = None
    links: tuple = ()            # (label, url) of the paper's DOI and preprint (registry)

    @property
    def verdicts(self) -> list[Verdict]:
        return self.data_verdicts + [v for it in self.items for v in it.verdicts]

    def counts(self) -> dict[str, int]:
        return verdict_counts(self.verdicts)

    def class_counts(self) -> dict[str, dict[str, int]]:
        return class_counts(self.verdicts)

    def marks(self) -> dict[str, int]:
        return verdict_marks(self.verdicts)

    def item_counts(self) -> dict[str, int]:
        """The items the registry lists, by state, and "unlisted": how many others a results folder holds (shown,
        never counted: a bundle's folders do not add to what was produced)."""
        out = {s: 0 for s in ITEM_STATES}
        for it in self.items:
            if it.expected:
                out[it.state if it.state in out else "not run"] += 1
        out["unlisted"] = sum(1 for it in self.items if not it.expected)
        return out


@dataclass
class Report:
    papers: list[PaperResult]
    provenance: dict
    problems: list[str]          # claims-file errors: always empty (a broken claims file raises ClaimsError)
    warnings: list[str]          # claims-file documentation gaps
    privacy: list[dict]
    times: dict
    claims_paths: list[Path] = field(default_factory=list)   # the claims files read
    ignored: list[str] = field(default_factory=list)   # results folders not shown: names unsafe as pages or links

    @property
    def verdicts(self) -> list[Verdict]:
        return [v for p in self.papers for v in p.verdicts]

    def counts(self) -> dict[str, int]:
        return verdict_counts(self.verdicts)

    def class_counts(self) -> dict[str, dict[str, int]]:
        return class_counts(self.verdicts)

    def marks(self) -> dict[str, int]:
        return verdict_marks(self.verdicts)


def verdict_counts(verdicts: list[Verdict]) -> dict[str, int]:
    """Measured claims by verdict: the only ones that can be "reproduced" (analytic claims and setup checks are
    counted by `class_counts`)."""
    return class_counts(verdicts)["measured"]


def class_counts(verdicts: list[Verdict]) -> dict[str, dict[str, int]]:
    """Claims by class (measured, analytic, setup) and verdict."""
    out = {cls: {v: 0 for v in CLASS_VERDICTS[cls]} for cls in CLASSES}
    for v in verdicts:
        cls = out.setdefault(v.claim_class, {})
        cls[v.verdict] = cls.get(v.verdict, 0) + 1   # a verdict the engine adds is counted under its own name
    return out


def verdict_marks(verdicts: list[Verdict]) -> dict[str, int]:
    """How many verdicts depend on a choice (differ under a variant), are unexplained failures (setup failures
    included: a failed setup check is a defect of ours), carry a finding the evidence contradicts or a stale one,
    or have a threshold looser than the paper's own; and the setup checks by verdict."""
    return {"depend_on_choice": sum(1 for v in verdicts if v.depends_on_choice and not v.setup),
            "depend_on_threshold": sum(1 for v in verdicts if v.depends_on_threshold and not v.setup),
            "unexplained": sum(1 for v in verdicts if v.unexplained),
            "stale": sum(1 for v in verdicts if v.stale),
            "typed_numbers": sum(1 for v in verdicts if v.typed_numbers),
            "rule_without_range": sum(1 for v in verdicts if v.claim.unranged),
            "looser_threshold": sum(1 for v in verdicts if v.looser),
            **{s: sum(1 for v in verdicts if v.verdict == s) for s in CLASS_VERDICTS["setup"][:2]}}


def _clipped(value) -> str:
    return safeload.clipped(str(value or ""))   # an item's reason or note: a list or number becomes text first


# The most keys (its own plus its per-repeat entries) an item's metrics.json may hold: the paper-scale run's largest
# item writes a few thousand, and a report over this many is judged in seconds; a bundle's metrics.json with millions
# of keys (inside the file-size cap) would take minutes and is refused instead, naming the file.
METRICS_MAX_KEYS = 200_000
# Likewise its size and the values it holds in all (the largest of the paper-scale run: about 1 MB and 30,000 values):
# eight files of 12 million numbers each, inside the general 64 MiB cap, took over two minutes and 5 GB.
METRICS_MAX_BYTES = 16 * 2**20
METRICS_MAX_VALUES = 2_000_000
# And all items' metrics together (a smoke run holds about 20,000 values, a paper-scale run a few hundred thousand):
# a bundle of a hundred items each just inside the caps above held 200 million values and ran out of memory. An item
# read once the report holds this many is not read, and says why; the report's memory stays bounded.
REPORT_MAX_VALUES = 4_000_000


def _read_metrics(path: Path, name: str) -> tuple[dict | None, str]:
    try:
        size = path.stat().st_size if path.is_file() else 0
        if size > METRICS_MAX_BYTES:
            return None, (f"unreadable metrics.json: {name} is {size / 2**20:.1f} MiB, more than the "
                          f"{METRICS_MAX_BYTES // 2**20} MiB an item's metrics may take")
        # every string in it is clipped (safeload.TEXT_MAX): a reason or status may be repeated on every page
        metrics = safeload.clip_strings(safeload.load_json(path, expect=dict, name=name))
    except safeload.LoadError as exc:
        return None, f"unreadable metrics.json: {exc}"
    reps = metrics.get("repeats")
    n = len(metrics) + (len(reps) if isinstance(reps, dict) else 0)
    if n > METRICS_MAX_KEYS:
        return None, (f"unreadable metrics.json: {name} holds {n:,} keys, more than the {METRICS_MAX_KEYS:,} an "
                      "item's metrics may hold")
    if safeload.count_values(metrics, METRICS_MAX_VALUES) > METRICS_MAX_VALUES:
        return None, (f"unreadable metrics.json: {name} holds more than the {METRICS_MAX_VALUES:,} values an item's "
                      "metrics may hold")
    return metrics, ""


def _figures(item_dir: Path, item: str, named: list[str]) -> list[Path]:
    if named:
        return [item_dir / n for n in named if (item_dir / n).is_file()]
    own = item_dir / f"{item}.png"
    if own.is_file():
        return [own]
    return sorted(item_dir.glob("*.png"))


def figure_problem(path: Path) -> str:
    """Why a figure file is not embedded in the page ('' if it is fine): too large, or a PNG that is malformed or
    of absurd dimensions (read from its header alone)."""
    size = path.stat().st_size
    if size > FIGURE_MAX_BYTES:
        return f"{path.name}: {size / 2**20:.1f} MiB, more than the {FIGURE_MAX_BYTES // 2**20} MiB a figure may have"
    if path.suffix.lower() == ".png":
        with open(path, "rb") as fh:
            head = fh.read(24)
        if len(head) < 24 or not head.startswith(b"\x89PNG\r\n\x1a\n") or head[12:16] != b"IHDR":
            return f"{path.name}: not a PNG image"
        width, height = struct.unpack(">II", head[16:24])
        if max(width, height) > FIGURE_MAX_SIDE or width * height > FIGURE_MAX_PIXELS:
            return f"{path.name}: {width} x {height} pixels, more than a figure may have"
    return ""


def _item_result(paper: str, item: str, results: Path, cf: ClaimsFile | None, config: dict,
                 sidecars: dict[str, dict]) -> ItemResult:
    item_dir = results / paper / item
    spec = (cf.items.get(item) if cf else None) or {}
    res = ItemResult(paper, item, expected=registry.listed(paper, item), state="missing", spec=spec,
                     metric_docs=(cf.metrics.get(item) if cf else None) or {}, folder=item_dir)
    cfg_params = ((config.get("papers") or {}).get(paper) or {}).get(item)
    # Parameters come from the executed notebook only beside a metrics.json: without it the notebook is stale or
    # partial (the runner writes metrics.json last).
    run_params, res.params_problem = prov_mod.executed_record(item_dir, item) \
        if (item_dir / "metrics.json").is_file() else (None, "")
    if run_params is not None:
        res.params, res.params_source = run_params, "run"
        if isinstance(cfg_params, dict):
            ran = {k: v for k, v in run_params.items() if k != "seed"}
            res.params_differ = ran != cfg_params
            res.changes = prov_mod.param_changes(ran, cfg_params)
        settings = prov_mod.read_settings_record(item_dir)[0] or {}
        res.run_name, res.commit = settings.get("run"), settings.get("commit")
    elif isinstance(cfg_params, dict):
        res.params, res.params_source = cfg_params, "config"
    datasets = (res.params or {}).get("datasets") or []
    for name in datasets if isinstance(datasets, list) else []:
        side = sidecars.get(name)
        if side is None:
            res.unavailable[name] = f"not built (no resources/processed/{name}.json)"
        elif not side.get("available", False):
            res.unavailable[name] = str(side.get("reason") or "unavailable")

    metrics_path = item_dir / "metrics.json"
    if not metrics_path.is_file():
        if not item_dir.is_dir():
            res.reason = f"no results/{paper}/{item}/ (the item has not been run)"
        elif os.path.lexists(metrics_path):   # a FIFO, device, folder or link: never opened (a FIFO would block)
            res.reason = f"results/{paper}/{item}/metrics.json is not a regular file"
        else:
            res.reason = f"no results/{paper}/{item}/metrics.json (the item failed or has not finished)"
        if cfg_params is None and res.expected:
            res.reason += "; it is not in config/config.yaml yet"
        return res
    metrics, problem = _read_metrics(metrics_path, f"results/{paper}/{item}/metrics.json")
    res.mtime = metrics_path.stat().st_mtime
    if metrics is None:
        res.state, res.reason = "missing", problem
        return res
    res.metrics = metrics
    # The run's own record of a dataset it could not read stays in force whatever the sidecars say now (a bundle's
    # sidecars are those of when it was packed, a checkout's those of today): its missing numbers are "not run".
    for name in datasets if isinstance(datasets, list) else []:
        said = metrics.get(f"status.{name}")
        if name not in res.unavailable and (metrics.get(f"available.{name}") is False
                                            or (isinstance(said, str) and said.startswith("not run"))):
            res.unavailable[name] = said if isinstance(said, str) else "unavailable when the item ran"
    status = str(metrics.get("status", "ok"))
    res.state = "produced" if status == "ok" else status
    # an item's own words are a line or two; a results folder from elsewhere may hold megabytes there
    res.reason = _clipped(metrics.get("reason"))
    res.note = _clipped(metrics.get("note"))
    res.wall_time_s = _seconds(metrics.get("wall_time_s"))
    res.job_time_s = _seconds(metrics.get("wall_time.jobs_sum_s"))
    if status == "ok":  # an item that did not run shows no figure, even one left over from an earlier run
        for fig in _figures(item_dir, item, spec.get("figure") or []):
            why = figure_problem(fig)
            (res.refused_figures if why else res.figures).append(why or fig)
        res.missing_figures = [n for n in spec.get("figure") or [] if not (item_dir / n).is_file()]
    nb = item_dir / f"{item}.html"
    res.notebook = nb if nb.is_file() else None
    return res


def _seconds(value) -> float | None:
    """A wall time from metrics.json: a number of seconds from 0 to about three years; anything else (which a file
    from elsewhere may hold: 1.7e308 overflowed the run's dates) is no time."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1e8:
        return float(value)
    return None


def _privacy_rows(papers: list[PaperResult], cfs: dict[str, ClaimsFile]) -> list[dict]:
    """One row per (paper, method, setting) from `privacy.<method>.<setting>.<field>` metric keys."""
    rows: dict[tuple, dict] = {}
    for p in papers:
        for it in p.items:
            if not it.metrics or it.state != "produced":
                continue
            per: dict[tuple, dict] = {}
            for key, value in it.metrics.items():
                parts = key.split(".")
                if parts[0] != "privacy" or len(parts) < 4 or "@" in key or parts[-1] == "se":
                    continue   # a variant's value or a standard error is not a setting of its own
                per.setdefault((parts[1], ".".join(parts[2:-1])), {})[parts[-1]] = value
            for (method, setting), values in per.items():
                key = (p.id, method, setting)
                row = rows.get(key)
                if row is None:
                    meta = (cfs.get(p.id).privacy.get(method, {}) if cfs.get(p.id) else {})
                    rows[key] = {"paper": p.id, "method": method, "setting": setting, "items": [it.item],
                                 "values": values, "meta": meta, "conflict": False}
                else:
                    row["items"].append(it.item)
                    shared = set(row["values"]) & set(values)
                    if any(row["values"][f] != values[f] for f in shared):
                        row["conflict"] = True
    return list(rows.values())


def collect(*, root: Path | None = None, results: Path | None = None, claims_dir: Path | None = None,
            processed: Path | None = None) -> Report:
    """Read everything the report shows. Missing or unreadable results become item states; a claims file with a YAML
    syntax error or a schema violation raises ClaimsError naming the file and line (a report must never silently
    drop claims)."""
    root = Path(root) if root else project_root()
    results = Path(results) if results else root / "results"
    claims_dir = Path(claims_dir) if claims_dir else root / "config" / "claims"
    processed = Path(processed) if processed else root / "resources" / "processed"

    cfiles = claims_mod.load_all_strict(claims_dir) if claims_dir.is_dir() else []
    problems = [p for cf in cfiles for p in cf.problems]
    warnings = [w for cf in cfiles for w in cf.warnings]
    by_paper = {cf.name: cf for cf in cfiles}
    config = prov_mod.load_config(root)
    provenance = prov_mod.collect(root, processed, [cf.path for cf in cfiles])
    sidecars = provenance["datasets"]

    paper_ids = list(registry.paper_ids())
    ignored: list[str] = []
    extra = set(config.get("papers") or {}) | {n for n in by_paper if n != "datasets"}
    if results.is_dir():
        extra |= {d.name for d in results.iterdir() if d.is_dir() and d.name != "report" and d.name[0] not in "._"
                  and any(d.glob("*/metrics.json"))}
    paper_ids += _at_most(sorted(_named(extra - set(paper_ids), "paper", ignored, paper_ids)), MAX_EXTRA_PAPERS,
                          "papers the registry does not list", ignored)

    papers, values_left = [], REPORT_MAX_VALUES
    for pid in paper_ids:
        rec = _paper_record(pid)
        cf = by_paper.get(pid)
        names = list(rec.item_ids)
        others = set((config.get("papers") or {}).get(pid) or {})
        if cf:
            others |= set(cf.items) | set(cf.metrics) | {c.item for c in cf.claims if c.item}
        if results.is_dir() and (results / pid).is_dir():
            others |= {d.name for d in (results / pid).iterdir() if d.is_dir() and d.name[0] not in "._"}
        names += _at_most(sorted(_named(others - set(names), f"item of {pid}", ignored, names)),
                          MAX_EXTRA_ITEMS, f"items of {pid} the registry does not list", ignored)
        pr = PaperResult(pid, rec.short, rec.title, rec.citation, rec.beyond, claims_file=cf, links=rec.links)
        for name in names:
            it = _item_result(pid, name, results, cf, config, sidecars)
            if it.metrics is not None:
                values_left -= safeload.count_values(it.metrics, values_left)
                if values_left < 0:   # dropped at once: at most one item's metrics beyond the budget are held
                    it.metrics, it.state, it.note = None, "missing", ""
                    it.reason = (f"unreadable metrics.json: results/{pid}/{name}/metrics.json is not read: with it "
                                 f"the report's items would hold more than the {REPORT_MAX_VALUES:,} metric values "
                                 "they may hold together")
                    values_left = 0
            if it.params:
                docs = parameter_descriptions(pid, name, root)
                it.param_docs = {k: docs[k] for k in it.params if docs.get(k)}
            pr.items.append(it)
        papers.append(pr)

    # Judged once every item is read: a claim may cite another item's metrics (`<paper>/<item>:<key>`).
    produced = {(p.id, it.item): it.metrics for p in papers for it in p.items if it.metrics is not None}
    for pr in papers:
        cf = by_paper.get(pr.id)
        for it in pr.items:
            item_claims = [c for c in (cf.claims if cf else []) if c.item == it.item]
            it.verdicts = [evaluate_claim(c, with_cited(it.metrics, c, produced), missing_reason=_missing_reason(it),
                                          unavailable=it.unavailable) for c in item_claims]

    # Claims checked on dataset sidecars (source: dataset:<name>), from any claims file.
    by_id = {p.id: p for p in papers}
    for cf in cfiles:
        for c in cf.claims:
            if c.source is None:
                continue
            v = _evaluate_dataset_claim(c, sidecars)
            target = by_id.get(c.paper)
            if target is None:
                rec = _paper_record(c.paper)
                target = by_id[c.paper] = PaperResult(c.paper, rec.short, rec.title, rec.citation, rec.beyond)
                papers.append(target)
            target.data_verdicts.append(v)

    discount_implausible([v for p in papers for v in p.verdicts])   # readings that break our own setup checks
    summarise([v for p in papers for v in p.verdicts])     # a claim over its cases: one summary, on every case
    item_rows = [{"wall_time_s": it.wall_time_s, "job_time_s": it.job_time_s, "mtime": it.mtime}
                 for p in papers for it in p.items if it.metrics is not None]
    times = prov_mod.run_times(item_rows)
    return Report(papers, provenance, problems, warnings, _privacy_rows(papers, by_paper), times,
                  [cf.path for cf in cfiles], ignored)


# A paper or item name becomes a page's file name and a link (`<paper>.html`, `items/<paper>/<item>/`): one found
# only in a results folder (which may come from a bundle) is used only when it is a plain name, and never one of the
# report's own pages.
MAX_NAME = 64
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,%d}" % (MAX_NAME - 1))
RESERVED_NAMES = frozenset({"index", "privacy", "provenance", "claims", "items", "summary", "report"})


# A results folder (a bundle's, say) may name any number of papers and items; every page lists every paper, so
# thousands of them make a report quadratic in time and size (6,000 took over two minutes). The registry lists 6
# papers of at most 8 items; beyond these caps the rest are listed as ignored.
MAX_EXTRA_PAPERS = 20
SHOWN_IGNORED = 20   # of the ignored folders, how many the terminal names
MAX_EXTRA_ITEMS = 50


def _at_most(names: list[str], cap: int, what: str, ignored: list[str]) -> list[str]:
    """The first `cap` of `names`; the rest counted in `ignored`."""
    if len(names) > cap:
        ignored.append(f"{len(names) - cap:,} more {what} (first not shown: {safeload.printable(names[cap])[:60]!r}): "
                       f"a report shows at most {cap}")
    return names[:cap]


def _named(names, what: str, ignored: list[str], taken=()) -> list[str]:
    """The names that are safe as a page name and a link; the others are listed in `ignored`, each with why. A name
    that differs only in case from one of `taken` (the names already shown) or from another of `names` is not safe
    either: on a file system that ignores case its page would overwrite the other's."""
    out, seen = [], {t.casefold() for t in taken}
    for name in sorted(names):
        why = _not_plain(name, seen)
        if not why:
            out.append(name)
            seen.add(name.casefold())
        else:
            ignored.append(f"{what} {safeload.printable(name)[:120]!r}: {why}, so it is not shown")
    return out


def _not_plain(name: str, seen: set[str]) -> str:
    """Why `name` may not be a page name and a link ('' if it may): SAFE_NAME, RESERVED_NAMES, `seen` (casefolded)."""
    if not SAFE_NAME.fullmatch(name):
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):   # plain, but too long
            return f"longer than {MAX_NAME} characters (it has {len(name):,}), the longest name a page may have"
        return (f"not a plain name (letters, digits, '_', '-', starting with a letter or digit; at most {MAX_NAME} "
                "characters)")
    if name.lower() in RESERVED_NAMES:
        return "one of the report's own page names"
    if name.casefold() in seen:
        return "the same as a name shown already, but for letter case"
    return ""


def _paper_record(paper_id: str) -> registry.Paper:
    """The registry's record of a paper; an id it does not list (results or claims of a paper not registered yet)
    gets a neutral record, so that the report shows what it found rather than failing."""
    return registry.PAPER_BY_ID.get(paper_id) or registry.Paper(paper_id, paper_id, paper_id, "", ())


def _missing_reason(it: ItemResult) -> str:
    return f"item {it.state}: {it.reason}" if it.reason else f"item {it.state}"


def _evaluate_dataset_claim(c: Claim, sidecars: dict[str, dict]) -> Verdict:
    name = c.dataset
    side = sidecars.get(name)
    if side is None:
        return evaluate_claim(c, None, missing_reason=f"dataset {name} not built (no resources/processed/{name}.json)")
    if not side.get("available", False):
        reason = str(side.get("reason") or "unavailable").strip().splitlines()
        return evaluate_claim(c, None, missing_reason=f"dataset {name} unavailable: {reason[0] if reason else ''}")
    return evaluate_claim(c, flatten(side))


SANDBOX_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="script-src 'none'; object-src 'none'">
<title>{title} (from a results bundle)</title>
<style>body{{margin:0;font-family:system-ui,sans-serif}}p{{margin:.5em 1em}}
iframe{{border:0;width:100%;height:calc(100vh - 3em)}}</style></head>
<body><p>{title}: the rendered notebook of a results bundle, shown in a sandbox (its scripts, forms, refreshes and
links out do not run).</p>
<iframe sandbox srcdoc="{page}" title="{title}"></iframe></body></html>
"""


# An attribute that links out: `href` (`xlink:href`) not to a place within the page, and an SVG animation's target
# attribute (`<animate attributeName="href" values=...>` sets a link's address); an attribute name begins after a
# space, a slash or the quote that ends the attribute before it (`<a/href=...>`, `<a title="x"href=...>`).
_LINK = re.compile(r"""(?i)([\s/"'])((?:(?:xlink:)?href\s*=\s*(?!["']?#))|attributeName\s*=)""")


def escaped_size(text: str) -> int:
    """The UTF-8 size of `html.escape(text, quote=True)`, computed without building it (`&` becomes 5 bytes, `<` and
    `>` 4, `"` and `'` 6)."""
    return (len(text.encode("utf-8")) + 4 * text.count("&") + 3 * (text.count("<") + text.count(">"))
            + 5 * (text.count('"') + text.count("'")))


def _copy_sandboxed(page: Path, dest: Path, title: str, used: int) -> tuple[str, int | str]:
    """Write `<item>.html`: a page showing an item's rendered notebook from a bundle only inside a sandboxed iframe,
    the notebook itself held in the frame's `srcdoc` (escaped) behind a policy that forbids scripts; return its name
    and the escaped size. The notebook is never a file of its own: opened directly, a page's meta refresh or links
    would act (a sandboxed frame without allow-scripts follows no refresh, and the wrapper's own policy is inherited
    by the frame). Nothing is written, and the name is '' with the reason instead of the size, when the escaped page
    would exceed SANDBOX_PAGE_MAX_BYTES, or the `used` bytes of the report's other sandbox pages plus this one
    SANDBOX_PAGES_MAX_BYTES."""
    policy = f'<!doctype html><meta http-equiv="Content-Security-Policy" content="{BUNDLE_PAGE_CSP}">\n'
    # a sandboxed frame still follows a click on a link (it navigates itself, and no policy governs navigation): every
    # link but one within the page becomes inert (`data-href`), shown, not followed
    text = policy + _LINK.sub(r"\1data-\2", page.read_bytes().decode("utf-8", "replace"))
    size = escaped_size(text)
    if size > SANDBOX_PAGE_MAX_BYTES:
        return "", (f"{page.name}: {size / 2**20:.0f} MiB once escaped for its sandbox page, more than the "
                    f"{SANDBOX_PAGE_MAX_BYTES // 2**20} MiB a bundled notebook page may take")
    if used + size > SANDBOX_PAGES_MAX_BYTES:
        return "", (f"{page.name}: {size / 2**20:.1f} MiB once escaped for its sandbox page, and the bundled notebook "
                    f"pages of this report may take {SANDBOX_PAGES_MAX_BYTES // 2**20} MiB in all "
                    f"({used / 2**20:.1f} MiB taken)")
    (dest / page.name).write_text(SANDBOX_PAGE.format(title=escape(title), page=escape(text, quote=True)),
                                  encoding="utf-8")
    return page.name, size


def _copy_item_files(report: Report, out_dir: Path, sandbox: bool = False) -> dict[tuple[str, str], dict[str, str]]:
    """Copy each item's rendered notebook, metrics.json, settings.json and figures (png with its pdf and csv) under
    out_dir/items/; return relative links. With `sandbox` (results from a bundle), each notebook page is shown only
    through a sandboxed iframe."""
    items_dir = out_dir / "items"
    if items_dir.is_dir():
        shutil.rmtree(items_dir)  # only the report's own copies live here; never stale copies
    items_dir.mkdir(parents=True)  # always present (a declared output), even when no item has run
    links, embedded = {}, 0    # embedded: the escaped bytes of the sandbox pages written so far
    for p in report.papers:
        for it in p.items:
            if it.metrics is None:
                continue
            dest = items_dir / it.paper / it.item
            dest.mkdir(parents=True, exist_ok=True)
            rel = f"items/{it.paper}/{it.item}"
            entry = {}
            if it.notebook is not None and sandbox and it.notebook.stat().st_size > NOTEBOOK_MAX_BYTES:
                it.refused_figures.append(f"{it.notebook.name}: {it.notebook.stat().st_size / 2**20:.0f} MiB, more "
                                          f"than the {NOTEBOOK_MAX_BYTES // 2**20} MiB a bundled notebook page may have")
            elif it.notebook is not None and sandbox:
                name, what = _copy_sandboxed(it.notebook, dest, f"{it.paper} / {it.item}", embedded)
                if name:        # what: the page's escaped size
                    entry["notebook"] = f"{rel}/{name}"
                    embedded += what
                else:           # what: why it is not embedded
                    it.refused_figures.append(what)
            elif it.notebook is not None:
                shutil.copy2(it.notebook, dest / it.notebook.name)
                entry["notebook"] = f"{rel}/{it.notebook.name}"
            (dest / "metrics.json").write_text(json.dumps(it.metrics, indent=2, sort_keys=True) + "\n")
            entry["metrics"] = f"{rel}/metrics.json"
            settings = it.folder / "settings.json" if it.folder else None
            if settings is not None and settings.is_file():
                shutil.copy2(settings, dest / settings.name)
                entry["settings"] = f"{rel}/settings.json"
            copied = []
            if sandbox:   # of a bundle's figures only checked PNGs are served: a PDF may carry a script, a CSV
                # spreadsheet formulas, an SVG both; they are listed by name, neither copied nor linked
                it.unlinked_files = [f.name for f in it.figures if f.suffix.lower() != ".png"]
                it.figures = [f for f in it.figures if f.suffix.lower() == ".png"]
            for fig in it.figures:
                for path in (fig, fig.with_suffix(".pdf"), fig.with_suffix(".csv")):
                    if not path.is_file() or path.name in copied:
                        continue
                    if sandbox and path != fig:
                        it.unlinked_files.append(path.name)
                        continue
                    shutil.copy2(path, dest / path.name)
                    copied.append(path.name)
            entry["files"] = copied
            links[(it.paper, it.item)] = entry
    return links


def summary(report: Report) -> dict:
    classes = report.class_counts()
    return {
        "claims": classes["measured"],          # measured claims by verdict (the only ones that can reproduce)
        "folded": folded_counts(report.verdicts),   # claims folded over their cases, by class: verdicts and causes
        "analytic": classes["analytic"],
        "setup": classes["setup"],
        "marks": report.marks(),
        "papers": {p.id: {"main_claims": summarise_main(p.verdicts), "deciding": deciding_counts(p.verdicts),
                          "items": p.item_counts(), "claims": p.counts(), "folded": folded_counts(p.verdicts),
                          "analytic": p.class_counts()["analytic"],
                          "setup": p.class_counts()["setup"], "marks": p.marks(),
                          "item_states": {it.item: {"state": it.state, "reason": it.reason,
                                                    "wall_time_s": it.wall_time_s,
                                                    "job_time_s": it.job_time_s,
                                                    "params_hash": prov_mod.canonical_hash(it.params)
                                                    if it.params is not None else None,
                                                    "params_from": it.params_source or None,
                                                    "params_problem": it.params_problem or None,
                                                    "params_differ_from_config": it.params_differ}
                                          for it in p.items}}
                   for p in report.papers},
        "times": report.times,
        "problems": report.problems,
        "warnings": report.warnings,
        "provenance": {k: v for k, v in report.provenance.items() if k != "datasets"},
    }


def headline(report: Report) -> str:
    """The honest headline in one line: measured claims by verdict, analytic claims, setup checks, and the marks."""
    classes, marks = report.class_counts(), report.marks()

    def part(counts):
        return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "none"

    folded = folded_counts(report.verdicts)

    def claims(cls):
        f = folded.get(cls) or {"claims": 0, "verdicts": {}, "causes": {}}
        return (f"{f['claims']} {'measured claims' if cls == 'measured' else cls} ({part(f['verdicts'])}; "
                f"causes: {part(f['causes'])})")

    return (f"{claims('measured')}; {claims('analytic')}; "
            f"{sum(classes['setup'].values())} setup checks ({part(classes['setup'])}); "
            f"as judged per case: {sum(classes['measured'].values())} measured ({part(classes['measured'])}); "
            f"findings: {marks['unexplained']} unexplained, {marks['stale']} stale, "
            f"{marks['typed_numbers']} with typed numbers; {marks['depend_on_choice']} verdicts depend on a choice, "
            f"{marks['depend_on_threshold']} on a threshold; {marks['rule_without_range']} with a rule threshold "
            f"without a range; {marks['looser_threshold']} with a threshold looser than the paper's")


# timings (wall_time_s, graph_seconds.<dataset>, admm_setup_time_s, time_ratio...): they move with the machine's load,
# so a what-if's "moved most" never lists them
_TIMING = re.compile(r"seconds|time")
WHATIF_TOP_METRICS = 10


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)   # the metrics a what-if report lists as having moved most from the paper run


PAPER_CLAIMS = "results/report/claims.json"


def paper_run_verdicts(root: Path) -> tuple[dict | None, str]:
    """({claim id: verdict} of the paper run's report, ''), or (None, why there is none to compare with: the file is
    missing, not a regular file or unreadable)."""
    path = root / PAPER_CLAIMS
    if not path.exists():
        return None, f"no {PAPER_CLAIMS}"
    if not path.is_file():
        return None, f"{PAPER_CLAIMS} is not a regular file"
    try:
        records = safeload.load_json(path, expect=list)
    except safeload.LoadError as exc:
        return None, f"{PAPER_CLAIMS} is unreadable: {exc}"
    previous = {r["id"]: r["verdict"] for r in records if isinstance(r, dict) and isinstance(r.get("id"), str)
                and isinstance(r.get("verdict"), str)}
    return (previous, "") if previous else (None, f"{PAPER_CLAIMS} holds no verdicts")


def whatif_diff(report: Report, root: Path, previous: dict | None) -> dict:
    """How a what-if run differs from the paper run of the same checkout: each item's changed parameters, every
    verdict that differs from the paper run's (`previous`: {claim id: verdict} of results/report/claims.json), and
    the numeric metrics that moved most (relative change against results/<paper>/<item>/metrics.json)."""
    changes, moved = [], []
    for p in report.papers:
        for it in p.items:
            changes.append({"item": f"{p.id}/{it.item}", "changes": it.changes or []})
            paper_metrics, _ = _read_metrics(root / "results" / p.id / it.item / "metrics.json",
                                             f"results/{p.id}/{it.item}/metrics.json")
            for key, new in (it.metrics or {}).items():
                old = (paper_metrics or {}).get(key)
                if key.endswith(".se") or _TIMING.search(key.split(".")[0]) or not _number(new) or not _number(old):
                    continue
                if math.isfinite(new) and math.isfinite(old) and new != old:
                    moved.append({"key": f"{p.id}/{it.item}:{key}", "paper": old, "whatif": new,
                                  "relative": (new - old) / max(abs(old), 1e-12)})
    moved.sort(key=lambda m: -abs(m["relative"]))
    differ = [{"id": v.claim.id, "paper": previous[v.claim.id], "whatif": v.verdict} for v in report.verdicts
              if previous and v.claim.id in previous and previous[v.claim.id] != v.verdict]
    return {"changes": changes, "verdicts": differ, "compared": previous is not None,
            "metrics": moved[:WHATIF_TOP_METRICS]}


def build_report(out_dir: str | Path = "results/report", *, root: Path | None = None,
                 results: Path | None = None, claims_dir: Path | None = None,
                 processed: Path | None = None, bundle: dict | None = None, previous: dict | None = None,
                 run_name: str | None = None, quiet: bool = False, source: str | None = None,
                 keep_out: tuple = (), before_swap=None) -> Report:
    """Build the report site (`index.html` and the pages it links), `claims.json` and `summary.json` in `out_dir`
    (relative paths are below the root).

    `bundle`: when the results come from a results bundle (repro_dpadmm.bundle.rejudge), where and with what the
    numbers were made (its provenance summary); the page and summary.json then say so. `previous`: {claim id:
    verdict} as judged before (a bundle's own claims.json); a changed verdict is marked "was: <old verdict>".
    `run_name`: the results are a what-if run's (results/whatif/<name>/): only the items it ran are shown, and its
    verdicts and metrics are compared with the paper run's (results/report/claims.json and results/<paper>/<item>/):
    summary.json's `whatif`. `quiet`: print nothing (the caller prints its own summary).
    `source`: what the report is of (a bundle's path), recorded in the folder's marker; `keep_out`: folders the
    report may not be written into or around (a bundle's own folder). `before_swap(report, folder)`: called with the
    staging folder once the report is built there and before it is swapped in, to add files of its own (a re-judge's
    rejudged.json), so that the folder swapped in is complete. staging.OutDirError if `out_dir` is not a
    folder a report may write into (staging.check_report_folder).
    """

    root = Path(root) if root else project_root()
    out_dir = Path(out_dir)
    if not out_dir.is_absolute():
        out_dir = root / out_dir
    # Written into a staging folder and swapped in whole (staging.swap_report): a stopped build leaves the old
    # report or the new one, and only what a report wrote is ever replaced.
    kind = "rejudged" if bundle is not None else "whatif" if run_name is not None else "report"
    protected = tuple(root / folder for folder in staging.PROJECT_FOLDERS)   # the checkout's own, as for a run
    if kind != "report":
        protected += (root / "results" / "report",)
    staging.check_report_folder(out_dir, kind=kind, source=source, root=root,
                                protected=protected + tuple(Path(f) for f in keep_out))
    final, out_dir = out_dir, staging.report_stage(out_dir)
    try:
        report = _build(out_dir, root, results, claims_dir, processed, bundle, previous, run_name)
        if before_swap is not None:
            before_swap(report, out_dir)
        staging.swap_report(out_dir, final, kind=kind, source=source)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    if quiet:
        return report
    print(f"report: {headline(report)} -> {final / 'index.html'}")
    for problem in report.problems:
        print(f"report: claims-file error: {problem}")
    for warning in report.warnings:
        print(f"report: claims-file warning: {warning}")
    for why in report.ignored[:SHOWN_IGNORED]:   # a bundle may hold thousands of folders: the first few, and a count
        print(f"report: results folder ignored: {why}")
    if len(report.ignored) > SHOWN_IGNORED:
        print(f"report: results folders ignored: ... and {len(report.ignored) - SHOWN_IGNORED:,} more")
    for it in (it for p in report.papers for it in p.items if it.reason.startswith("unreadable metrics.json")):
        print(f"report: {it.paper}/{it.item} shown as missing: {safeload.printable(it.reason)}")
    for it in (it for p in report.papers for it in p.items if it.params_problem):
        # the executed notebook's record unreadable, the run's settings.json read instead (executed_record)
        said = "the run's parameters are taken from its settings.json, as" if it.params_source == "run" else \
            "the run's parameters are unknown:"
        print(f"report: {it.paper}/{it.item}: {said} {safeload.printable(it.params_problem)}")
    return report


def _build(out_dir: Path, root: Path, results, claims_dir, processed, bundle, previous, run_name) -> Report:
    """build_report's work, into the (empty) staging folder `out_dir`."""
    from .html import render_site

    report = collect(root=root, results=results, claims_dir=claims_dir, processed=processed)
    not_compared = "" if previous is not None else "no paper run's verdicts given"
    if run_name is not None:  # a what-if run holds only the items it ran
        for p in report.papers:
            p.items = [it for it in p.items if it.metrics is not None]
            p.data_verdicts = []
        report.papers = [p for p in report.papers if p.items]
        report.privacy = [r for r in report.privacy if any(p.id == r["paper"] for p in report.papers)]
        if previous is None:
            previous, not_compared = paper_run_verdicts(root)
    if bundle is not None:
        report.provenance["bundle"] = bundle
    links = _copy_item_files(report, out_dir, sandbox=bundle is not None)
    records = [v.record() for v in report.verdicts]
    summ = summary(report)
    if run_name is not None:
        summ["whatif"] = {"name": run_name, **whatif_diff(report, root, previous),
                          **({"not_compared": not_compared} if previous is None else {})}
    (out_dir / "claims.json").write_text(json.dumps(records, indent=2, default=str) + "\n")
    (out_dir / "summary.json").write_text(json.dumps(summ, indent=2, default=str) + "\n")
    pages = render_site(report, summ, records, links, previous=previous, run_name=run_name)
    claims_pages = out_dir / "claims"
    if claims_pages.is_dir():
        shutil.rmtree(claims_pages)  # only the report's own pages live here
    for rel, text in pages.items():
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / rel).write_text(text, encoding="utf-8")
    return report
