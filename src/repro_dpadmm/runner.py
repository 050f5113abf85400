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
that fails removes the old outputs (a failed rerun never shows the previous run's numbers). A hidden manifest
(`.outputs.json`) lists what the run wrote, and only that is ever removed: sub-folders of other rules
(beyond/frontier's `jobs/`, linked into the staging folder so the notebook sees them) and a user's own files in an
`--out-dir` stay.

One run of an item at a time: a run holds the item's lock (`.<item>.lock` beside its folder, see `locks.held`) from
before it clears anything until its outputs are committed, so a second run of the same item (Snakemake and a run by
hand) waits for the first, saying which process it waits for (or, with wait=False, refuses naming it). Staging folders
are named by their process and removed only once that process is gone.
"""

from __future__ import annotations

import html
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from . import locks, safeload
from .datasets import is_available
from .experiments.common import write_metrics
from .paths import project_root
from .registry import notebook_path

KERNEL = "python3"
METRICS = "metrics.json"
MANIFEST = ".outputs.json"  # the names a run wrote into the item's folder (so a rerun removes exactly those)
STAGING = ".staging-"


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever sys.stderr is when a record is emitted, not the stream it was set up with: the
    handler outlives the first item run, and a later run whose stderr is redirected (a notebook session, a test's
    capture) still gets its log."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ assigns it; the current sys.stderr is always used instead
        pass


def _stream_log() -> bool:
    """Show each cell's start and output on stderr as the notebook runs (papermill's log_output, as
    `papermill --log-output`), so that an item's log under Snakemake fills while it runs, not when it ends."""
    log = logging.getLogger("papermill")
    if not log.handlers:
        handler = _CurrentStderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    return True


def _render_html(executed: Path, html_path: Path) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(executed, as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    html_path.write_text(body)


def _owned(out_dir: Path, item: str, legacy_all: bool) -> list[Path]:
    """The entries of `out_dir` that runs of this item wrote, hence may remove: those its manifest lists; without a
    manifest, every file of a results/ folder written before manifests existed (`legacy_all`), else only the files
    the runner itself names. Anything else in the folder (another rule's sub-folder, a user's files) is left alone."""
    if not out_dir.is_dir():
        return []
    try:
        names = safeload.load_json(out_dir / MANIFEST)
    except safeload.LoadError:
        names = None
    if not isinstance(names, list):
        names = ([p.name for p in out_dir.iterdir() if not p.name.startswith(".") and
                  (p.is_symlink() or not p.is_dir())] if legacy_all else [METRICS, f"{item}.html", f"{item}.ipynb"])
    entries = [out_dir / str(n) for n in names if n != MANIFEST and "/" not in str(n)]
    return [p for p in entries if p.exists() or p.is_symlink()]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _write_manifest(out_dir: Path, names: list[str]) -> None:
    tmp = out_dir / (MANIFEST + ".part")
    tmp.write_text(json.dumps(sorted(set(names))) + "\n")
    os.replace(tmp, out_dir / MANIFEST)


def remove_outputs(out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Remove an item's outputs, metrics.json first (from then on the folder reads as "not run yet")."""
    if (out_dir / METRICS).exists():
        (out_dir / METRICS).unlink()
    for p in _owned(out_dir, item, legacy_all):
        _remove(p)
    if (out_dir / MANIFEST).exists():
        (out_dir / MANIFEST).unlink()


def clear_incomplete(out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Remove what killed runs left: staging folders, and the outputs of an item folder without metrics.json."""
    locks.sweep(out_dir.parent, f".{out_dir.name}{STAGING}")   # only those whose process is gone
    if not (out_dir / METRICS).is_file():
        remove_outputs(out_dir, item, legacy_all)


def commit(stage: Path, out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Replace the item's outputs by the staged ones; metrics.json leaves first and arrives last. The manifest
    always covers every output that may be present, so an interrupted commit is cleared by the next run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    new = sorted(p.name for p in stage.iterdir() if not p.is_symlink() and p.name != METRICS)
    old = [p.name for p in _owned(out_dir, item, legacy_all)]
    _write_manifest(out_dir, [*old, *new, METRICS])
    if (out_dir / METRICS).exists():
        (out_dir / METRICS).unlink()
    for name in old:
        if name != METRICS:
            _remove(out_dir / name)
    for name in new:
        if (out_dir / name).is_dir() and not (out_dir / name).is_symlink():
            shutil.rmtree(out_dir / name)
        os.replace(stage / name, out_dir / name)
    _write_manifest(out_dir, [*new, METRICS])
    os.replace(stage / METRICS, out_dir / METRICS)


def _stage(out_dir: Path, owned: list[Path]) -> Path:
    stage = locks.owned_dir(out_dir.parent, f".{out_dir.name}{STAGING}")
    os.chmod(stage, 0o755)
    for sub in out_dir.iterdir() if out_dir.is_dir() else []:
        if sub.is_dir() and not sub.is_symlink() and sub not in owned and not sub.name.startswith("."):
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
                        kernel_name=KERNEL, cwd=str(root), progress_bar=False, log_output=_stream_log())
    wall = time.perf_counter() - t0
    _show_final_folder(stage / f"{item}.ipynb", stage, out_dir)
    _render_html(stage / f"{item}.ipynb", stage / f"{item}.html")
    metrics_path = stage / METRICS
    if not metrics_path.exists():
        raise RuntimeError(f"notebook {notebook} ran but wrote no metrics.json (item {paper}/{item}, {out_dir})")
    metrics = safeload.load_json(metrics_path, expect=dict)
    metrics["wall_time_s"] = round(wall, 3)
    metrics_path.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")


def item_lock(paper: str, item: str, out_dir: Path, wait: bool = True):
    """The lock one run of an item holds: `.<folder>.lock` beside its output folder (locks.held)."""
    return locks.held(out_dir.parent / f".{out_dir.name}.lock", f"item {paper}/{item} ({out_dir})", wait=wait)


def run_item(paper: str, item: str, params: dict, out_dir: str | Path, *, root: Path | None = None,
             wait: bool = True) -> dict:
    """Run one item into `out_dir` (relative: below the project root); return its metrics. Another run of the same
    output folder is waited for (wait=False: locks.Busy naming it)."""
    root = root or project_root()
    out_dir = Path(out_dir)
    if not out_dir.is_absolute():
        out_dir = root / out_dir
    notebook = root / notebook_path(paper, item)
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook {notebook} for item {paper}/{item}")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with item_lock(paper, item, out_dir, wait), locks.signals_raise():   # SIGTERM: the staging folder still goes
        return _run_locked(paper, item, params, out_dir, notebook, root)


def _run_locked(paper: str, item: str, params: dict, out_dir: Path, notebook: Path, root: Path) -> dict:
    """run_item's work, done while holding the item's lock."""
    # a folder below results/ is the item's own; elsewhere (--out-dir) only what the runner wrote is removed
    legacy_all = out_dir.resolve().is_relative_to((root / "results").resolve())
    clear_incomplete(out_dir, item, legacy_all)

    needed = params.get("datasets", [])
    status = {name: is_available(name, root) for name in needed}
    stage = _stage(out_dir, _owned(out_dir, item, legacy_all))
    try:
        if needed and not any(ok for ok, _ in status.values()):
            _not_run(paper, item, status, stage)
        else:
            _execute(paper, item, notebook, params, stage, out_dir, root)
        commit(stage, out_dir, item, legacy_all)
    except Exception:
        remove_outputs(out_dir, item, legacy_all)  # a failed rerun shows nothing rather than the previous run's outputs
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return safeload.load_json(out_dir / METRICS, expect=dict)
