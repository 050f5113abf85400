"""The reproduction report: every claim of the five papers, checked against the measured numbers.

`build_report(out_dir)` reads only `results/<paper>/<item>/metrics.json` (and each item's rendered notebook and
figures, which it copies or embeds), `config/claims/*.yaml`, the dataset sidecars `resources/processed/*.json`,
`config/config.yaml`, each parameter's meaning from the config schema (`config_doc.parameter_descriptions`) and
provenance (git, package versions, papermill's record of each item's parameters), and writes into `out_dir` (default
`results/report/`):

* `claims.json`: one record per claim (id, paper, item, quote, expected, measured, verdict, reason, checks...);
* `summary.json`: per paper, items by state and claims by verdict, plus provenance;
* `index.html`: the human-readable report (no JavaScript, figures embedded, links relative);
* `items/<paper>/<item>/`: copies of each item's rendered notebook and metrics.json, so the folder can be moved.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import claims as claims_mod
from .. import provenance as prov_mod
from .. import registry
from ..claims import CLASS_VERDICTS, CLASSES, VERDICTS, Claim, ClaimsFile, Verdict, evaluate_claim, flatten
from ..config_doc import parameter_descriptions
from ..paths import project_root

__all__ = ["build_report", "collect", "Report", "ItemResult", "VERDICTS"]

ITEM_STATES = ("produced", "not run", "missing")
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
    params_differ: bool = False         # the run's parameters differ from config/config.yaml (e.g. a smoke run)
    param_docs: dict = field(default_factory=dict)  # each parameter's meaning, from the config schema's descriptions
    figures: list[Path] = field(default_factory=list)
    missing_figures: list[str] = field(default_factory=list)  # named in the claims file but not written
    notebook: Path | None = None
    spec: dict = field(default_factory=dict)     # claims file `items.<item>`: title, caption, choices...
    metric_docs: dict = field(default_factory=dict)
    unavailable: dict = field(default_factory=dict)  # datasets it reads that are unavailable: {name: reason}
    verdicts: list[Verdict] = field(default_factory=list)

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
        out = {s: 0 for s in ITEM_STATES}
        for it in self.items:
            key = it.state if it.state in out else "not run"
            out[key] += 1
        return out


@dataclass
class Report:
    papers: list[PaperResult]
    provenance: dict
    problems: list[str]          # claims-file errors: always empty (a broken claims file raises ClaimsError)
    warnings: list[str]          # claims-file documentation gaps
    privacy: list[dict]
    times: dict

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
        out[v.claim_class][v.verdict] += 1
    return out


def verdict_marks(verdicts: list[Verdict]) -> dict[str, int]:
    """How many verdicts depend on a choice (differ under a variant), are unexplained failures (setup failures
    included: a failed setup check is a defect of ours), carry a finding the evidence contradicts or a stale one,
    or have a threshold looser than the paper's own; and the setup checks by verdict."""
    return {"depend_on_choice": sum(1 for v in verdicts if v.depends_on_choice and not v.setup),
            "unexplained": sum(1 for v in verdicts if v.unexplained),
            "contradicted": sum(1 for v in verdicts if v.contradicted),
            "stale": sum(1 for v in verdicts if v.stale),
            "looser_threshold": sum(1 for v in verdicts if v.looser),
            **{s: sum(1 for v in verdicts if v.verdict == s) for s in CLASS_VERDICTS["setup"][:2]}}


def _read_metrics(path: Path) -> tuple[dict | None, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"unreadable metrics.json: {exc}"
    if not isinstance(data, dict):
        return None, "metrics.json is not a JSON object"
    return data, ""


def _figures(item_dir: Path, item: str, named: list[str]) -> list[Path]:
    if named:
        return [item_dir / n for n in named if (item_dir / n).is_file()]
    own = item_dir / f"{item}.png"
    if own.is_file():
        return [own]
    return sorted(item_dir.glob("*.png"))


def _item_result(paper: str, item: str, results: Path, cf: ClaimsFile | None, config: dict,
                 sidecars: dict[str, dict]) -> ItemResult:
    item_dir = results / paper / item
    spec = (cf.items.get(item) if cf else None) or {}
    res = ItemResult(paper, item, expected=registry.listed(paper, item), state="missing", spec=spec,
                     metric_docs=(cf.metrics.get(item) if cf else None) or {})
    cfg_params = ((config.get("papers") or {}).get(paper) or {}).get(item)
    # Parameters come from the executed notebook only beside a metrics.json: without it the notebook is stale or
    # partial (the runner writes metrics.json last).
    run_params = prov_mod.executed_params(item_dir, item) if (item_dir / "metrics.json").is_file() else None
    if run_params is not None:
        res.params, res.params_source = run_params, "run"
        if isinstance(cfg_params, dict):
            res.params_differ = {k: v for k, v in run_params.items() if k != "seed"} != cfg_params
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
        else:
            res.reason = f"no results/{paper}/{item}/metrics.json (the item failed or has not finished)"
        if cfg_params is None and res.expected:
            res.reason += "; it is not in config/config.yaml yet"
        return res
    metrics, problem = _read_metrics(metrics_path)
    res.mtime = metrics_path.stat().st_mtime
    if metrics is None:
        res.state, res.reason = "missing", problem
        return res
    res.metrics = metrics
    status = str(metrics.get("status", "ok"))
    res.state = "produced" if status == "ok" else status
    res.reason = str(metrics.get("reason") or "")
    res.note = str(metrics.get("note") or "")
    wall = metrics.get("wall_time_s")
    res.wall_time_s = float(wall) if isinstance(wall, (int, float)) and not isinstance(wall, bool) else None
    jobs = metrics.get("wall_time.jobs_sum_s")
    res.job_time_s = float(jobs) if isinstance(jobs, (int, float)) and not isinstance(jobs, bool) else None
    if status == "ok":  # an item that did not run shows no figure, even one left over from an earlier run
        res.figures = _figures(item_dir, item, spec.get("figure") or [])
        res.missing_figures = [n for n in spec.get("figure") or [] if not (item_dir / n).is_file()]
    nb = item_dir / f"{item}.html"
    res.notebook = nb if nb.is_file() else None
    return res


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
    extra = set(config.get("papers") or {}) | {n for n in by_paper if n != "datasets"}
    if results.is_dir():
        extra |= {d.name for d in results.iterdir() if d.is_dir() and d.name != "report" and d.name[0] not in "._"
                  and any(d.glob("*/metrics.json"))}
    paper_ids += sorted(extra - set(paper_ids))

    papers = []
    for pid in paper_ids:
        rec = _paper_record(pid)
        cf = by_paper.get(pid)
        names = list(rec.item_ids)
        others = set((config.get("papers") or {}).get(pid) or {})
        if cf:
            others |= set(cf.items) | set(cf.metrics) | {c.item for c in cf.claims if c.item}
        if results.is_dir() and (results / pid).is_dir():
            others |= {d.name for d in (results / pid).iterdir() if d.is_dir() and d.name[0] not in "._"}
        names += sorted(others - set(names))
        pr = PaperResult(pid, rec.short, rec.title, rec.citation, rec.beyond, claims_file=cf)
        for name in names:
            it = _item_result(pid, name, results, cf, config, sidecars)
            if it.params:
                docs = parameter_descriptions(pid, name, root)
                it.param_docs = {k: docs[k] for k in it.params if docs.get(k)}
            item_claims = [c for c in (cf.claims if cf else []) if c.item == name]
            it.verdicts = [evaluate_claim(c, it.metrics, missing_reason=_missing_reason(it),
                                          unavailable=it.unavailable) for c in item_claims]
            pr.items.append(it)
        papers.append(pr)

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

    item_rows = [{"wall_time_s": it.wall_time_s, "job_time_s": it.job_time_s, "mtime": it.mtime}
                 for p in papers for it in p.items if it.metrics is not None]
    times = prov_mod.run_times(item_rows)
    return Report(papers, provenance, problems, warnings, _privacy_rows(papers, by_paper), times)


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


def _copy_item_files(report: Report, out_dir: Path) -> dict[tuple[str, str], dict[str, str]]:
    """Copy each item's rendered notebook and metrics.json under out_dir/items/; return relative links."""
    items_dir = out_dir / "items"
    if items_dir.is_dir():
        shutil.rmtree(items_dir)  # only the report's own copies live here; never stale copies
    items_dir.mkdir(parents=True)  # always present (a declared output), even when no item has run
    links = {}
    for p in report.papers:
        for it in p.items:
            if it.metrics is None:
                continue
            dest = items_dir / it.paper / it.item
            dest.mkdir(parents=True, exist_ok=True)
            entry = {}
            if it.notebook is not None:
                shutil.copy2(it.notebook, dest / it.notebook.name)
                entry["notebook"] = f"items/{it.paper}/{it.item}/{it.notebook.name}"
            (dest / "metrics.json").write_text(json.dumps(it.metrics, indent=2, sort_keys=True) + "\n")
            entry["metrics"] = f"items/{it.paper}/{it.item}/metrics.json"
            links[(it.paper, it.item)] = entry
    return links


def summary(report: Report) -> dict:
    classes = report.class_counts()
    return {
        "claims": classes["measured"],          # measured claims by verdict (the only ones that can reproduce)
        "analytic": classes["analytic"],
        "setup": classes["setup"],
        "marks": report.marks(),
        "papers": {p.id: {"items": p.item_counts(), "claims": p.counts(), "analytic": p.class_counts()["analytic"],
                          "setup": p.class_counts()["setup"], "marks": p.marks(),
                          "item_states": {it.item: {"state": it.state, "reason": it.reason,
                                                    "wall_time_s": it.wall_time_s,
                                                    "job_time_s": it.job_time_s,
                                                    "params_hash": prov_mod.canonical_hash(it.params)
                                                    if it.params is not None else None,
                                                    "params_from": it.params_source or None,
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

    return (f"{sum(classes['measured'].values())} measured claims ({part(classes['measured'])}); "
            f"{sum(classes['analytic'].values())} analytic ({part(classes['analytic'])}); "
            f"{sum(classes['setup'].values())} setup checks ({part(classes['setup'])}); "
            f"findings: {marks['unexplained']} unexplained, {marks['contradicted']} contradicted, "
            f"{marks['stale']} stale; {marks['depend_on_choice']} verdicts depend on a choice; "
            f"{marks['looser_threshold']} with a threshold looser than the paper's")


def build_report(out_dir: str | Path = "results/report", *, root: Path | None = None,
                 results: Path | None = None, claims_dir: Path | None = None,
                 processed: Path | None = None, bundle: dict | None = None) -> Report:
    """Build `index.html`, `claims.json` and `summary.json` in `out_dir` (relative paths are below the root).

    `bundle`: when the results come from a results bundle (repro_dpadmm.bundle.rejudge), where and with what the
    numbers were made (its provenance summary); the page and summary.json then say so.
    """
    from .html import render

    root = Path(root) if root else project_root()
    out_dir = Path(out_dir)
    if not out_dir.is_absolute():
        out_dir = root / out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    report = collect(root=root, results=results, claims_dir=claims_dir, processed=processed)
    if bundle is not None:
        report.provenance["bundle"] = bundle
    links = _copy_item_files(report, out_dir)
    records = [v.record() for v in report.verdicts]
    (out_dir / "claims.json").write_text(json.dumps(records, indent=2, default=str) + "\n")
    (out_dir / "summary.json").write_text(json.dumps(summary(report), indent=2, default=str) + "\n")
    (out_dir / "index.html").write_text(render(report, links), encoding="utf-8")
    print(f"report: {headline(report)} -> {out_dir / 'index.html'}")
    for problem in report.problems:
        print(f"report: claims-file error: {problem}")
    for warning in report.warnings:
        print(f"report: claims-file warning: {warning}")
    return report
