"""Run one item: execute its parameterised notebook with papermill and render it to HTML.

If every dataset the item needs is unavailable, the notebook is not executed: the item gets a `metrics.json` with
status "not run" and the reason, and a short HTML page saying so. Items that need several datasets handle a
partial absence themselves (their panels say "not run: dataset unavailable").

Outputs are complete or absent. A run writes everything (executed notebook, figures, HTML, metrics.json) into a
hidden staging folder beside the item's folder and, only when it succeeded, commits it: the old metrics.json goes
first, then the old files, then the new files move in and the new metrics.json last. So a folder holding a
metrics.json holds exactly the files of the run that wrote it (never an old figure beside new metrics, never an old
notebook's parameters), and a run killed at any point leaves the previous complete outputs, the new complete outputs,
or a folder without metrics.json, which the report and Snakemake treat as "not run yet" and the next run clears. A run
that fails removes the old outputs (a failed rerun never shows the previous run's numbers). Sub-folders of the item's
folder belong to other rules (beyond/frontier's `jobs/`): they are linked into the staging folder and never replaced.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from .datasets import is_available
from .experiments.common import write_metrics
from .paths import project_root

KERNEL = "python3"
METRICS = "metrics.json"
STAGING = ".staging-"


def _render_html(executed: Path, html_path: Path) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(executed, as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    html_path.write_text(body)


def _own_files(folder: Path) -> list[Path]:
    """The item's own outputs in `folder`: its files (sub-folders belong to other rules)."""
    return [p for p in folder.iterdir() if p.is_symlink() or not p.is_dir()] if folder.is_dir() else []


def clear_incomplete(out_dir: Path) -> None:
    """Remove what killed runs left: staging folders, and the files of an item folder without metrics.json."""
    for stale in out_dir.parent.glob(f".{out_dir.name}{STAGING}*"):
        shutil.rmtree(stale, ignore_errors=True)
    if not (out_dir / METRICS).is_file():
        for p in _own_files(out_dir):
            p.unlink()


def remove_outputs(out_dir: Path) -> None:
    """Remove an item's outputs, metrics.json first (from then on the folder reads as "not run yet")."""
    if (out_dir / METRICS).exists():
        (out_dir / METRICS).unlink()
    for p in _own_files(out_dir):
        p.unlink()


def commit(stage: Path, out_dir: Path) -> None:
    """Replace the item's outputs by the staged ones; metrics.json leaves first and arrives last."""
    out_dir.mkdir(parents=True, exist_ok=True)
    remove_outputs(out_dir)
    staged = sorted(p for p in stage.iterdir() if not p.is_symlink() and p.name != METRICS)
    for p in staged:
        dest = out_dir / p.name
        if p.is_dir() and dest.is_dir():
            shutil.rmtree(dest)
        os.replace(p, dest)
    os.replace(stage / METRICS, out_dir / METRICS)


def _stage(out_dir: Path) -> Path:
    stage = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}{STAGING}"))
    os.chmod(stage, 0o755)
    for sub in out_dir.iterdir() if out_dir.is_dir() else []:
        if sub.is_dir() and not sub.is_symlink():
            (stage / sub.name).symlink_to(sub.resolve(), target_is_directory=True)
    return stage


def _not_run(paper: str, item: str, status: dict, stage: Path) -> None:
    reasons = "; ".join(f"{n}: {r.splitlines()[0] if r else 'unavailable'}" for n, (ok, r) in status.items())
    (stage / f"{item}.html").write_text(
        f"<!doctype html><meta charset='utf-8'><title>{paper} {item}: not run</title>"
        f"<h1>{paper} / {item}: not run</h1><p>Not run: dataset unavailable.</p>"
        f"<pre>{html.escape(json.dumps({n: r for n, (ok, r) in status.items()}, indent=2))}</pre>")
    write_metrics(stage, {"wall_time_s": 0.0}, status="not run", reason=f"dataset unavailable ({reasons})")


def _show_final_folder(executed: Path, stage: Path, out_dir: Path) -> None:
    """The executed notebook names the folder its outputs live in (parameters, papermill metadata, printed paths),
    not the staging folder they were written to."""
    text = executed.read_text()
    executed.write_text(text.replace(json.dumps(str(stage))[1:-1], json.dumps(str(out_dir))[1:-1]))


def _execute(paper: str, item: str, notebook: Path, params: dict, stage: Path, out_dir: Path, root: Path) -> None:
    import papermill as pm

    t0 = time.perf_counter()
    # The notebook writes into the staging folder; out_dir is where its outputs will live (for messages only).
    pm.execute_notebook(str(notebook), str(stage / f"{item}.ipynb"),
                        parameters={"params": params, "out_dir": str(stage)},
                        kernel_name=KERNEL, cwd=str(root), progress_bar=False)
    wall = time.perf_counter() - t0
    _show_final_folder(stage / f"{item}.ipynb", stage, out_dir)
    _render_html(stage / f"{item}.ipynb", stage / f"{item}.html")
    metrics_path = stage / METRICS
    if not metrics_path.exists():
        raise RuntimeError(f"notebook {notebook} ran but wrote no metrics.json (item {paper}/{item}, {out_dir})")
    metrics = json.loads(metrics_path.read_text())
    metrics["wall_time_s"] = round(wall, 3)
    metrics_path.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")


def run_item(paper: str, item: str, params: dict, out_dir: str | Path, *, root: Path | None = None) -> dict:
    """Run one item into `out_dir` (relative: below the project root); return its metrics."""
    root = root or project_root()
    out_dir = Path(out_dir)
    if not out_dir.is_absolute():
        out_dir = root / out_dir
    notebook = root / "notebooks" / paper / f"{item}.ipynb"
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook {notebook} for item {paper}/{item}")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    clear_incomplete(out_dir)

    needed = params.get("datasets", [])
    status = {name: is_available(name, root) for name in needed}
    stage = _stage(out_dir)
    try:
        if needed and not any(ok for ok, _ in status.values()):
            _not_run(paper, item, status, stage)
        else:
            _execute(paper, item, notebook, params, stage, out_dir, root)
        commit(stage, out_dir)
    except Exception:
        remove_outputs(out_dir)  # a failed rerun shows nothing rather than the previous run's outputs
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return json.loads((out_dir / METRICS).read_text())
