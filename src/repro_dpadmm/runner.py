"""Run one item: execute its parameterised notebook with papermill and render it to HTML.

If every dataset the item needs is unavailable, the notebook is not executed: the item gets a `metrics.json` with
status "not run" and the reason, and a short HTML page saying so. Items that need several datasets handle a
partial absence themselves (their panels say "not run: dataset unavailable").
"""

from __future__ import annotations

import html
import json
import logging
import sys
import time
from pathlib import Path

from .datasets import is_available
from .experiments.common import write_metrics
from .paths import project_root

KERNEL = "python3"


def _stream_log() -> bool:
    """Show each cell's start and output on stderr as the notebook runs (papermill's log_output, as
    `papermill --log-output`), so that an item's log under Snakemake fills while it runs, not when it ends."""
    log = logging.getLogger("papermill")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
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


def run_item(paper: str, item: str, params: dict, out_dir: str | Path, *, root: Path | None = None) -> dict:
    import papermill as pm

    root = root or project_root()
    out_dir = Path(out_dir)
    if not out_dir.is_absolute():
        out_dir = root / out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    notebook = root / "notebooks" / paper / f"{item}.ipynb"
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook {notebook} for item {paper}/{item}")

    needed = params.get("datasets", [])
    status = {name: is_available(name, root) for name in needed}
    if needed and not any(ok for ok, _ in status.values()):
        reasons = "; ".join(f"{n}: {r.splitlines()[0] if r else 'unavailable'}" for n, (ok, r) in status.items())
        write_metrics(out_dir, {"wall_time_s": 0.0}, status="not run",
                      reason=f"dataset unavailable ({reasons})")
        (out_dir / f"{item}.html").write_text(
            f"<!doctype html><meta charset='utf-8'><title>{paper} {item}: not run</title>"
            f"<h1>{paper} / {item}: not run</h1><p>Not run: dataset unavailable.</p>"
            f"<pre>{html.escape(json.dumps({n: r for n, (ok, r) in status.items()}, indent=2))}</pre>")
        return json.loads((out_dir / "metrics.json").read_text())

    executed = out_dir / f"{item}.ipynb"
    metrics_path = out_dir / "metrics.json"
    if metrics_path.exists():
        metrics_path.unlink()  # never report stale numbers
    t0 = time.perf_counter()
    pm.execute_notebook(str(notebook), str(executed), parameters={"params": params, "out_dir": str(out_dir)},
                        kernel_name=KERNEL, cwd=str(root), progress_bar=False, log_output=_stream_log())
    wall = time.perf_counter() - t0
    _render_html(executed, out_dir / f"{item}.html")
    if not metrics_path.exists():
        raise RuntimeError(f"notebook {notebook} ran but wrote no metrics.json in {out_dir}")
    metrics = json.loads(metrics_path.read_text())
    metrics["wall_time_s"] = round(wall, 3)
    metrics_path.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics
