"""An item's outputs are complete or absent: a run writes into a hidden staging folder beside the item's folder and,
only when it succeeded, commits it: the old metrics.json goes first, then the old files, then the new files move in
and the new metrics.json last. So a folder holding a metrics.json holds exactly the files of the run that wrote it
(never an old figure beside new metrics, never an old notebook's parameters), and a run killed at any point leaves the
previous complete outputs, the new complete outputs, or a folder without metrics.json, which the report and Snakemake
treat as "not run yet" and the next run clears. A hidden manifest (`.outputs.json`) lists what the run wrote, and only
that is ever removed: sub-folders of other rules (beyond/frontier's `jobs/`, linked into the staging folder so the
notebook sees them) and a user's own files in an `--out-dir` stay.

The runner (`repro_dpadmm.runner`) stages every item it runs; a notebook run by hand (Jupyter, `jupyter nbconvert
--execute`) stages through the same functions (`experiments.common.setup_item` / `write_metrics`).

Each run also leaves `settings.json`: the parameters it ran with, the name of a what-if run, and how the parameters
differ from the paper settings of `config/config.yaml` (what the notebook, its figures and the report state).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from . import locks, safeload
from .paths import SETTINGS

METRICS = "metrics.json"
MANIFEST = ".outputs.json"  # the names a run wrote into the item's folder (so a rerun removes exactly those)
STAGING = ".staging-"
PAPER_SETTINGS = "config/config.yaml"


def owned(out_dir: Path, item: str, legacy_all: bool) -> list[Path]:
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
    for p in owned(out_dir, item, legacy_all):
        _remove(p)
    if (out_dir / MANIFEST).exists():
        (out_dir / MANIFEST).unlink()


def clear_incomplete(out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Remove what killed runs left: staging folders whose process is gone (`locks.sweep`; a live run's stays), and
    the outputs of an item folder without metrics.json."""
    locks.sweep(out_dir.parent, f".{out_dir.name}{STAGING}")
    if not (out_dir / METRICS).is_file():
        remove_outputs(out_dir, item, legacy_all)


def commit(stage: Path, out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Replace the item's outputs by the staged ones; metrics.json leaves first and arrives last. The manifest
    always covers every output that may be present, so an interrupted commit is cleared by the next run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    new = sorted(p.name for p in stage.iterdir() if not p.is_symlink() and p.name != METRICS)
    old = [p.name for p in owned(out_dir, item, legacy_all)]
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


def new_stage(out_dir: Path, item: str, legacy_all: bool = True) -> Path:
    """A new staging folder beside `out_dir`, with links to the sub-folders other rules keep in it."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    mine = owned(out_dir, item, legacy_all)
    folder = locks.owned_dir(out_dir.parent, f".{out_dir.name}{STAGING}")   # named by its process
    os.chmod(folder, 0o755)
    for sub in out_dir.iterdir() if out_dir.is_dir() else []:
        if sub.is_dir() and not sub.is_symlink() and sub not in mine and not sub.name.startswith("."):
            (folder / sub.name).symlink_to(sub.resolve(), target_is_directory=True)
    return folder


def own_folder(out_dir: Path, root: Path) -> bool:
    """Whether `out_dir` is below the project's results/ (the item's own folder: every file in it is the item's);
    elsewhere (`--out-dir`) only what a run wrote is ever removed."""
    return out_dir.resolve().is_relative_to((root / "results").resolve())


# ------------------------------------------------------------------------------------------------ settings.json

def settings_record(paper: str, item: str, params: dict, *, run: str | None = None, by_hand: bool = False,
                    root: Path | None = None) -> dict:
    """What `settings.json` says about a run: its parameters, the name of a what-if run, and how the parameters
    differ from the paper settings (the item's entry of config/config.yaml and the base seed; `changes` is None
    when that config has no such item), and the commit of the checkout it ran from."""
    from .config import ConfigError, item_params
    from .paths import project_root
    from .provenance import git_state, param_changes

    root = root or project_root()
    try:
        paper_params = item_params(paper, item, root=root)
    except (ConfigError, OSError):
        paper_params = None
    git = git_state(root)
    return {"paper": paper, "item": item, "run": run, "by_hand": by_hand, "params": params,
            "commit": git["describe"] if git.get("commit") else None, "paper_settings": PAPER_SETTINGS,
            "changes": None if paper_params is None else param_changes(params, paper_params)}


def write_settings(folder: Path, record: dict) -> Path:
    path = Path(folder) / SETTINGS
    path.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    return path


def read_settings(folder: Path) -> dict | None:
    """The `settings.json` of an item folder (None when there is none or it cannot be read)."""
    try:
        data = safeload.load_json(Path(folder) / SETTINGS)
    except safeload.LoadError:
        return None
    return data if isinstance(data, dict) else None


def changes_text(changes: list[dict] | None, limit: int | None = None) -> str:
    """"q = 1.03 (paper: 1.01); repeats = 2 (paper: 10)", at most `limit` of them ("... and 3 more")."""
    if not changes:
        return ""
    shown = changes if limit is None else changes[:limit]
    text = "; ".join(f"{c['key']} = {_short(c.get('run'))} (paper: {_short(c.get('paper'))})" for c in shown)
    return text + (f"; and {len(changes) - len(shown)} more" if len(shown) < len(changes) else "")


def _short(value, n: int = 40) -> str:
    if value is None:
        return "unset"
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= n else text[: n - 1] + "…"
