"""Provenance of a results folder: git commit, package versions, dataset checksums, config hashes, wall times.

Everything here is read from files the run left behind (metrics.json, the executed notebooks' papermill metadata,
the dataset sidecars) or from the environment the report is built in; nothing is recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import safeload
from .paths import SETTINGS


# The one list of packages whose versions matter (the report's provenance, `repro-dpadmm info`).
PACKAGES = ("repro-dpadmm", "numpy", "scipy", "scikit-learn", "matplotlib", "pooch", "dp-accounting",
            "snakemake", "papermill", "nbconvert", "numba")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_state(root: Path) -> dict[str, str | bool | None]:
    """{"commit": sha or None, "dirty": bool or None, "describe": str} of the checkout at `root`."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20, check=True
                               ).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "describe": "not a git checkout"}
    try:
        # results/ and resources/ are ignored, so only source changes count as dirty
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        dirty = None
    describe = commit[:12] + (" (with uncommitted changes)" if dirty else "")
    return {"commit": commit, "dirty": dirty, "describe": describe}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_hash(obj) -> str:
    """sha256 of the canonical JSON of `obj` (sorted keys), first 16 hex digits."""
    return sha256_bytes(json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode())[:16]


def file_hash(path: Path) -> str | None:
    return sha256_bytes(path.read_bytes())[:16] if path.is_file() else None


def load_config(root: Path) -> dict:
    path = root / "config" / "config.yaml"
    if not path.is_file():
        return {}
    try:
        return safeload.load_yaml(path, expect=dict) or {}
    except safeload.LoadError:
        return {}


# A notebook is read only for its metadata (papermill's record of the parameters) and settings.json only for a few
# fields, so each has a cap of its own far below the general one, and a bound on its lists and objects counted before
# parsing (a real notebook holds a few hundred; tens of MiB of nested empty lists took a minute and gigabytes to
# parse). REPRO_DPADMM_MAX_FILE_MB, when set, is the size cap of both, as of every file.
NOTEBOOK_MAX_BYTES = 32 * 2**20
SETTINGS_MAX_BYTES = 2**20
PARAMS_MAX_CONTAINERS = 100_000
# And the values what is kept of it may hold (every key and list entry, nested): a real item's parameters hold a few
# hundred; a notebook's parameters of a million keys (one object, inside both caps above) took 20 s and 0.8 GB each.
PARAMS_MAX_VALUES = 10_000
_READ: dict[tuple, tuple] = {}   # each file is read once per process (the report and the bundle's check share it)


def _read_record(path: Path, name: str, limit: int, pick=lambda data: data) -> tuple:
    """(pick(the JSON object in `path`), '') or (None, why it is not read: too large, too many containers,
    malformed); (None, '') when there is no such file. Only what `pick` keeps is remembered."""
    try:
        st = path.stat()
    except OSError:
        return None, ""
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, limit, pick)
    if key not in _READ:
        if len(_READ) > 4096:
            _READ.clear()
        data, problem = _parse_record(path, name, limit)
        kept = pick(data) if data is not None else None
        if safeload.count_values(kept, PARAMS_MAX_VALUES) > PARAMS_MAX_VALUES:
            kept, problem = None, f"{name}: holds more than the {PARAMS_MAX_VALUES:,} values its parameters may hold"
        # strings clipped (safeload.TEXT_MAX): the report repeats a run's settings and parameters on its pages
        _READ[key] = (safeload.clip_strings(kept) if kept is not None else None), problem
    return _READ[key]


def _parse_record(path: Path, name: str, limit: int) -> tuple[dict | None, str]:
    try:
        if not path.is_file():
            return None, f"{name}: not a regular file"
        text = safeload.read_text(path, limit=safeload.max_bytes() if os.environ.get(safeload.MAX_BYTES_ENV)
                                  else limit)
        containers = text.count("[") + text.count("{")
        if containers > PARAMS_MAX_CONTAINERS:
            return None, (f"{name}: holds {containers:,} lists and objects, more than the {PARAMS_MAX_CONTAINERS:,} "
                          "it may hold")
        return safeload.loads_json(text, name, expect=dict), ""
    except safeload.LoadError as exc:   # named as the bundle names it, not by where it was unpacked
        return None, f"{name}{f':{exc.line}' if exc.line else ''}: {exc.problem}"


def _checked_params(params, name: str) -> tuple[dict | None, str]:
    """The recorded parameters if they are a mapping whose `datasets` (when given) is a list of names."""
    if params is None:   # no record (a notebook run by hand)
        return None, ""
    if not isinstance(params, dict):
        return None, f"{name}: the recorded parameters must be a mapping, got a {type(params).__name__}"
    datasets = params.get("datasets")
    if datasets is not None and not (isinstance(datasets, list) and all(isinstance(d, str) for d in datasets)):
        shown = json.dumps(datasets)
        return None, (f"{name}: parameter datasets must be a list of dataset names, got "
                      f"{shown if len(shown) <= 80 else shown[:77] + '...'}")
    return params, ""


def _papermill_params(notebook: dict):
    meta = notebook.get("metadata")
    papermill = meta.get("papermill") if isinstance(meta, dict) else None
    recorded = papermill.get("parameters") if isinstance(papermill, dict) else None
    return recorded.get("params") if isinstance(recorded, dict) else None


def executed_record(item_dir: Path, item: str) -> tuple[dict | None, str]:
    """(the parameters the item's notebook actually ran with, why they are unknown or '' ): papermill's record in the
    executed notebook, else the run's `settings.json` (a notebook run by hand leaves no executed copy in the item's
    folder). A file too large or malformed, or parameters of the wrong shape, leave them unknown, named in the why."""
    where = f"{item_dir.parent.name}/{item_dir.name}"
    recorded, problem = _read_record(item_dir / f"{item}.ipynb", f"{where}/{item}.ipynb", NOTEBOOK_MAX_BYTES,
                                     _papermill_params)
    params, why = _checked_params(recorded, f"{where}/{item}.ipynb")
    problems = [p for p in (problem, why) if p]
    if params is None:
        settings, problem = read_settings_record(item_dir)
        params, why = _checked_params(settings.get("params") if settings else None, f"{where}/{SETTINGS}")
        problems += [p for p in (problem, why) if p]
    return params, "; ".join(problems)


def read_settings_record(item_dir: Path) -> tuple[dict | None, str]:
    """An item folder's settings.json (read once, under its own cap), or (None, why it cannot be read)."""
    return _read_record(item_dir / SETTINGS, f"{item_dir.parent.name}/{item_dir.name}/{SETTINGS}",
                        SETTINGS_MAX_BYTES)


def executed_params(item_dir: Path, item: str) -> dict | None:
    """The parameters the item's notebook actually ran with (executed_record without the why)."""
    return executed_record(item_dir, item)[0]


def param_changes(ran: dict, reference: dict, prefix: str = "") -> list[dict]:
    """[{"key": dotted key, "run": value, "paper": value}] wherever two parameter mappings differ, nested mappings
    compared key by key (a key one of them lacks has the value None there); sorted by key."""
    out = []
    for key in sorted(set(ran) | set(reference), key=str):
        a, b = ran.get(key), reference.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += param_changes(a, b, f"{prefix}{key}.")
        elif a != b or (key in ran) != (key in reference):
            out.append({"key": f"{prefix}{key}", "run": a, "paper": b})
    return out


def dataset_sidecars(processed: Path) -> dict[str, dict]:
    """{name: sidecar} for every `resources/processed/*.json` (unreadable ones are recorded as such)."""
    out = {}
    for path in sorted(processed.glob("*.json")) if processed.is_dir() else []:
        try:
            # strings clipped: a sidecar's reason goes into the verdict of every claim on its dataset
            out[path.stem] = safeload.clip_strings(safeload.load_json(path, expect=dict,
                                                                      name=f"{processed.name}/{path.name}"))
        except safeload.LoadError as exc:
            out[path.stem] = {"name": path.stem, "available": False, "reason": f"unreadable sidecar: {exc}"}
    return out


def run_times(items: list[dict]) -> dict:
    """Sum of item wall times (plus, apart, the summed time of the separate jobs an item aggregates, e.g. the
    frontier's per-(method, level) jobs), and the elapsed span from the first item's start to the last item's end.

    Item start = metrics.json modification time minus its wall time; a rough span, labelled as such.
    """
    walls = [i["wall_time_s"] for i in items if isinstance(i.get("wall_time_s"), (int, float))]
    jobs = [i["job_time_s"] for i in items if isinstance(i.get("job_time_s"), (int, float))]
    spans = [(i["mtime"] - (i.get("wall_time_s") or 0.0), i["mtime"]) for i in items if i.get("mtime")]
    out = {"items_timed": len(walls), "sum_item_wall_time_s": round(sum(walls), 3) if walls else None,
           "sum_job_time_s": round(sum(jobs), 3) if jobs else None,
           "elapsed_s": None, "first_start": None, "last_end": None}
    if spans:
        start, end = min(s for s, _ in spans), max(e for _, e in spans)
        out.update(elapsed_s=round(end - start, 1),
                   first_start=datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
                   last_end=datetime.fromtimestamp(end, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
    return out


def collect(root: Path, processed: Path, claims_files: list[Path]) -> dict:
    """Provenance facts that do not depend on the items (those are added by the report)."""
    config_dir = root / "config"
    return {
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git": git_state(root),
        "platform": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        "versions": package_versions(),
        "config_files": {p.name: file_hash(p) for p in sorted(config_dir.glob("*.yaml"))} if config_dir.is_dir()
        else {},
        "claims_files": {p.name: file_hash(p) for p in claims_files},
        "datasets": dataset_sidecars(processed),
    }
