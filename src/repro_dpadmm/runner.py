"""Run one item: execute its parameterised notebook with papermill and render it to HTML.

If every dataset the item needs is unavailable, the notebook is not executed: the item gets a `metrics.json` with
status "not run" and the reason, and a short HTML page saying so. Items that need several datasets handle a
partial absence themselves (their panels say "not run: dataset unavailable").

Outputs are complete or absent (`repro_dpadmm.staging`): a run writes everything (executed notebook, figures, HTML,
`settings.json`, metrics.json) into a hidden staging folder beside the item's folder and commits it only when it
succeeded. A run that fails (or is stopped) leaves the previous run's complete outputs as they were.

A what-if run (`run_name`) is an ordinary run into its own folder (`results/whatif/<name>/<paper>/<item>/` from the
command line); its `settings.json` names it, and every run's `settings.json` lists how its parameters differ from
the paper settings of `config/config.yaml`, which the notebook, its figures and the report state.

The executed notebook and its HTML name paths relative to the project root (the checkout's own location is no part
of a result), and the HTML loads nothing from other hosts (`notebook_html/offline`).

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
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from . import locks, safeload
from .datasets import is_available
from .experiments.common import write_metrics
from .experiments.progress import COST_ENV
from .paths import SETTINGS, project_root
from .registry import notebook_path
from .staging import item_lock  # noqa: F401  (the lock a run holds; tests and the workflow's helpers use it here)
from .staging import (METRICS, check_collisions, check_item_folder, clear_incomplete, commit, new_stage, own_folder,
                      remove_outputs, settings_record, stage_parent, write_settings)

KERNEL = "python3"
HTML_TEMPLATES = Path(__file__).resolve().parent / "notebook_html"


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


KERNEL_STDERR = "kernel.err"   # the kernel process's stderr, in the kernel's folder (_kernel_manager)
KERNEL_PREFIX = "rdk-"   # short: a socket's path may not exceed about 100 characters (104 on macOS)


def _kernel_manager(folder: Path | None = None):
    """The notebook kernel's manager: on POSIX its channels are local (IPC) sockets, not TCP ports (a kernel on TCP
    warns in every item's log that its traffic is unencrypted); elsewhere jupyter_client's default. The sockets and
    the connection file (which holds the kernel's HMAC key) live in `folder`, a temporary folder of this run named by
    its process (locks.owned_dir): the run removes it, and the next run removes one whose process was killed, so
    two items run side by side never share sockets and nothing of a killed run stays in the temporary folder."""
    from jupyter_client.manager import AsyncKernelManager

    if os.name != "posix" or folder is None:
        return AsyncKernelManager

    class LocalKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.ip = os.path.join(folder, "k")
            self.connection_file = os.path.join(folder, "kernel.json")

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            # The kernel process's own stderr (not the cells' output, which papermill streams) goes to a file of
            # this run: a run stopped by Ctrl-C or SIGTERM shuts its kernel down mid-reply, and the kernel's ZMQError
            # tracebacks would bury the one line that says so. A run that fails otherwise shows its tail.
            with open(os.path.join(folder, KERNEL_STDERR), "ab") as err:
                await super()._async_launch_kernel(kernel_cmd, **{**kw, "stderr": err})

    return LocalKernelManager


@contextmanager
def _kernel_folder():
    """The folder of one kernel's sockets and connection file (see _kernel_manager), removed on every exit."""
    tmp = Path(tempfile.gettempdir())
    locks.sweep(tmp, KERNEL_PREFIX, unnamed_stale=False)   # those of runs that were killed (only names we made)
    folder = locks.owned_dir(tmp, KERNEL_PREFIX) if os.name == "posix" else None
    try:
        yield folder
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _render_html(executed: Path, html_path: Path) -> None:
    import nbformat
    from .mathml import OfflineHTMLExporter   # formulas as MathML (mathml.py says why)

    nb = nbformat.read(executed, as_version=4)
    exporter = OfflineHTMLExporter(template_name="offline", extra_template_basedirs=[str(HTML_TEMPLATES)])
    body, _ = exporter.from_notebook_node(nb)
    html_path.write_text(body)


def _not_run(paper: str, item: str, status: dict, stage: Path, root: Path) -> None:
    from .bundle import scrub_paths   # the page and metrics name paths relative to the project, the mirror as <mirror>

    status = {n: (ok, scrub_paths(r, root) if r else r) for n, (ok, r) in status.items()}
    reasons = "; ".join(f"{n}: {r.splitlines()[0] if r else 'unavailable'}" for n, (ok, r) in status.items())
    (stage / f"{item}.html").write_text(
        f"<!doctype html><meta charset='utf-8'><title>{paper} {item}: not run</title>"
        f"<h1>{paper} / {item}: not run</h1><p>Not run: dataset unavailable.</p>"
        f"<pre>{html.escape(json.dumps({n: r for n, (ok, r) in status.items()}, indent=2))}</pre>")
    write_metrics(stage, {"wall_time_s": 0.0}, status="not run", reason=f"dataset unavailable ({reasons})")


def _relative_paths(executed: Path, stage: Path, out_dir: Path, root: Path) -> None:
    """The executed notebook names the folder its outputs live in (parameters, papermill metadata, printed paths),
    not the staging folder they were written to, and every path below the project root relative to it."""
    def escaped(path) -> str:
        return json.dumps(str(path))[1:-1]

    final = os.path.relpath(out_dir, root)
    text = executed.read_text()
    for staged in (stage.resolve(), stage, Path(os.path.relpath(stage, root))):
        text = text.replace(escaped(staged), escaped(final))
    for prefix in dict.fromkeys((root.resolve(), root)):
        text = text.replace(escaped(f"{prefix}{os.sep}"), "")
    executed.write_text(text)


@contextmanager
def _expected_cost(paper: str, item: str, changes: list | None, root: Path):
    """Tell the notebook's progress lines the item's paper-scale cost (README's cost table) while it runs, when
    it runs at the paper settings (a smoke or what-if run costs something else)."""
    from .costs import expected_seconds

    seconds = expected_seconds(paper, item, root / "README.md") if changes == [] else None
    old = os.environ.get(COST_ENV)
    if seconds is not None:
        os.environ[COST_ENV] = f"{seconds:g}"
    else:
        os.environ.pop(COST_ENV, None)
    try:
        yield seconds
    finally:
        if old is None:
            os.environ.pop(COST_ENV, None)
        else:
            os.environ[COST_ENV] = old


def _show_kernel_stderr(folder: Path | None, lines: int = 20) -> None:
    """The last `lines` the kernel process wrote to its stderr (a crash, a kill by the memory limit), on stderr."""
    path = None if folder is None else folder / KERNEL_STDERR
    if path is None or not path.is_file() or not path.stat().st_size:
        return
    with open(path, "rb") as fh:
        fh.seek(max(0, fh.seek(0, os.SEEK_END) - 64 * 1024))
        tail = fh.read().decode("utf-8", "replace").splitlines()[-lines:]
    print("the notebook kernel's own stderr (last lines):", *(safeload.printable(t) for t in tail), sep="\n  ",
          file=sys.stderr)


def _shown(path: Path) -> str:
    """A path as papermill records and logs it: relative to the working directory when it lies below it."""
    return os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd().resolve()) else str(path)


def _execute(paper: str, item: str, notebook: Path, params: dict, stage: Path, out_dir: Path, root: Path) -> None:
    import papermill as pm

    t0 = time.perf_counter()
    # The notebook writes into the staging folder (named relative to the root, the kernel's working directory);
    # out_dir is where its outputs will live.
    with _kernel_folder() as kernel_folder:
        try:
            pm.execute_notebook(_shown(notebook), _shown(stage / f"{item}.ipynb"),
                                parameters={"params": params, "out_dir": os.path.relpath(stage, root)},
                                kernel_name=KERNEL, cwd=str(root), progress_bar=False, log_output=_stream_log(),
                                kernel_manager_class=_kernel_manager(kernel_folder))
        except Exception:   # not a stop (KeyboardInterrupt, SystemExit): what the kernel itself said may be why
            _show_kernel_stderr(kernel_folder)
            raise
        except BaseException:
            # a stop: the notebook client's tasks it cut short (a kernel the signal killed first: DeadKernelError)
            # are reported by asyncio as "Task exception was never retrieved", with tracebacks, when they are
            # collected at exit, after the caller's own stop message (the CLI's one line, or a caller of run_item's):
            # the stop's own consequence, so asyncio's log is off from here
            logging.getLogger("asyncio").disabled = True
            raise
    wall = time.perf_counter() - t0
    _relative_paths(stage / f"{item}.ipynb", stage, out_dir, root)
    _render_html(stage / f"{item}.ipynb", stage / f"{item}.html")
    metrics_path = stage / METRICS
    if not metrics_path.exists():
        raise RuntimeError(f"notebook {notebook} ran but wrote no metrics.json (item {paper}/{item}, {out_dir})")
    metrics = safeload.load_json(metrics_path, expect=dict)
    metrics["wall_time_s"] = round(wall, 3)
    metrics_path.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")


def run_outputs(item: str) -> list[str]:
    """The names every run of `item` writes (its figures are checked when the run is committed)."""
    return [METRICS, SETTINGS, f"{item}.html", f"{item}.ipynb"]


def run_item(paper: str, item: str, params: dict, out_dir: str | Path, *, root: Path | None = None,
             run_name: str | None = None, wait: bool = True) -> dict:
    """Run one item into `out_dir` (relative: below the project root); return its metrics. `run_name` names a
    what-if run (recorded in its settings.json). Another run of the same output folder is waited for (wait=False:
    locks.Busy naming it)."""
    root = root or project_root()
    out_dir = Path(out_dir)
    if not out_dir.is_absolute():
        out_dir = root / out_dir
    notebook = root / notebook_path(paper, item)
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook {notebook} for item {paper}/{item}")
    check_item_folder(out_dir, root, paper, item)
    own = own_folder(out_dir, root)
    # a folder the run would refuse is refused before its lock is made there (checked again under the lock)
    check_collisions(out_dir, item, run_outputs(item), own)
    stage_parent(out_dir, own).mkdir(parents=True, exist_ok=True)
    with item_lock(paper, item, out_dir, wait, own), locks.signals_raise():   # SIGTERM: the staging folder still goes
        return _run_locked(paper, item, params, out_dir, notebook, root, run_name, own)


def _run_locked(paper: str, item: str, params: dict, out_dir: Path, notebook: Path, root: Path,
                run_name: str | None, legacy_all: bool) -> dict:
    """run_item's work, done while holding the item's lock (`legacy_all`: `out_dir` is an item's own folder)."""
    # again under the lock: a run of another item into the same --out-dir may have committed while this one waited
    check_item_folder(out_dir, root, paper, item)
    clear_incomplete(out_dir, item, legacy_all)
    # the names every run writes, checked before any work (figures are checked again when the run is committed)
    check_collisions(out_dir, item, run_outputs(item), legacy_all)

    needed = params.get("datasets", [])
    status = {name: is_available(name, root) for name in needed}
    settings = settings_record(paper, item, params, run=run_name, root=root)
    stage = new_stage(out_dir, item, legacy_all)
    try:
        write_settings(stage, settings)
        if needed and not any(ok for ok, _ in status.values()):
            _not_run(paper, item, status, stage, root)
        else:
            with _expected_cost(paper, item, settings["changes"], root):
                _execute(paper, item, notebook, params, stage, out_dir, root)
        commit(stage, out_dir, item, legacy_all)
    except BaseException:
        # A failed (or stopped) rerun keeps the previous run's complete outputs: the staging folder goes, the item's
        # folder is as it was. Only a commit cut short (no metrics.json any more) leaves outputs to clear.
        if not (out_dir / METRICS).is_file():
            remove_outputs(out_dir, item, legacy_all)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return safeload.load_json(out_dir / METRICS, expect=dict)
