"""Items whose work is split into independent parts, each its own Snakemake job (issue 20).

A heavy item (a sweep over settings, curves or datasets) keeps one notebook, but its settings run as separate jobs,
so that every core stays busy and a cluster runs them side by side. An experiment module splits item <item> by
defining two functions next to its `run_<item>`:

    parts_<item>(params) -> list[str]    the part keys, in the order the item combines them (used as file names)
    part_<item>(params, key)             one part's result: the numbers of that setting, exactly as the whole run
                                         computes them (every random stream is labelled by its setting, so a part
                                         run alone draws what the whole run draws)

and its `run_<item>(params)` takes every part's value from `gather`. Rule item_part (workflow/rules/items.smk) runs
`repro-dpadmm part <paper> <item> <key>` per key, which writes `results/<paper>/<item>/parts/<key>.pkl`; the item's
notebook job then only combines them. Run by hand (`repro-dpadmm run`, a notebook session), a part whose file is
missing or was written with other parameters is computed in the notebook's process and said so in its output, so an
item is correct with or without Snakemake.

The files are pickles, not JSON: a part's value holds numpy arrays, tuple-keyed dicts and dp-accounting events.
Loading a pickle can run code, so a part file is signed when it is written (HMAC-SHA256 with this project's key,
`resources/.parts-key`, made on first use and never bundled) and unpickled only when its signature checks: a part file
from anywhere else (a results bundle unpacked into results/, a copy from another machine) is recomputed, never
loaded. Results bundles leave part files out altogether (`bundle.PICKLE_SUFFIXES`).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import importlib.util
import os
import pickle
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from ..datasets.processed import atomic_write
from ..paths import resources_dir, results_dir
from ..provenance import canonical_hash
from .progress import progress

PARTS_DIR = "parts"
FORMAT = 1  # bumped when the file layout changes
SIGNED = b"repro-dpadmm signed part 1\n"   # a part file: SIGNED, the 32-byte HMAC of the pickle, the pickle


def is_part_file(path: Path, key: str | None = None) -> bool:
    """Whether the file at `path` is a part file this project signed (of `key`, when given): one `--out` may replace.
    A part of another key is not: its result would be lost and read as this key's."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(SIGNED)) != SIGNED:
                return False
    except OSError:
        return False
    rec = _signed_record(path)
    return rec is not None and (key is None or rec.get("key") == key)
KEY_FILE = ".parts-key"


def foreign_part_file(path: Path) -> str:
    """Why a file that is not one of this project's part files looks like one ('' if it does not): a part file
    signed with another key (another checkout's resources/.parts-key, or this one's made anew)."""
    try:
        with open(path, "rb") as fh:
            signed = fh.read(len(SIGNED)) == SIGNED
    except OSError:
        return ""
    if signed and _signed_record(path) is None:
        return f"a part file signed with another key than this project's resources/{KEY_FILE}, so never unpickled"
    return ""


def _key() -> bytes:
    """This project's signing key (resources/.parts-key), made atomically on first use (concurrent jobs agree)."""
    path = resources_dir() / KEY_FILE
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)   # fails if another process made it first: its key is then the one
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_bytes()
    if len(key) != 32:
        raise ValueError(f"{path} is not a part-signing key (32 bytes); delete it, and part files are recomputed")
    return key


def _signature(data: bytes) -> bytes:
    return hmac.new(_key(), data, hashlib.sha256).digest()


def experiment_module(paper: str, item: str):
    """The experiment module of an item: experiments/<paper>_<item>.py where the paper has a module per item (beyond),
    else experiments/<paper>.py; None for an item without one (a notebook of its own, e.g. in a test workflow)."""
    for name in (f"{paper}_{item}", paper):
        if importlib.util.find_spec(f"repro_dpadmm.experiments.{name}") is not None:
            return importlib.import_module(f"repro_dpadmm.experiments.{name}")
    return None


def is_split(paper: str, item: str) -> bool:
    """Whether the item's experiment module splits it into parts."""
    mod = experiment_module(paper, item)
    return mod is not None and callable(getattr(mod, f"parts_{item}", None)) and callable(getattr(mod, f"part_{item}", None))


def part_keys(paper: str, item: str, params: dict) -> list[str]:
    """The part keys of a split item under `params` (an empty list for an item that is not split)."""
    if not is_split(paper, item):
        return []
    keys = list(getattr(experiment_module(paper, item), f"parts_{item}")(params))
    bad = [k for k in keys if not k or "/" in k or k.startswith(".") or k != k.strip()]
    if bad or len(set(keys)) != len(keys):
        raise ValueError(f"{paper}/{item}: part keys must be unique file names, got {keys}")
    return keys


def check_key(paper: str, item: str, key: str, params: dict) -> None:
    """Raise, naming the item's parts, unless `key` is one of them (before any work is done)."""
    keys = part_keys(paper, item, params)
    if key not in keys:
        raise ValueError(f"{paper}/{item} has no part {key!r}; its parts: {', '.join(keys)}" if keys else
                         f"{paper}/{item} is not split into parts (it runs as one job): no part {key!r}")


def params_hash(params: dict) -> str:
    return canonical_hash(params)


def part_path(paper: str, item: str, key: str, out_dir: str | Path | None = None) -> Path:
    base = results_dir() / paper / item if out_dir is None else Path(out_dir)
    return base / PARTS_DIR / f"{key}.pkl"


def record(key: str, params: dict, **fields) -> dict:
    """What a part file holds: the key, the hash of the parameters it was computed with, and `fields` (its "value",
    or a "status" saying why it holds none)."""
    return {"format": FORMAT, "key": key, "params_hash": params_hash(params), **fields}


def write_part(path: Path, rec: dict) -> None:
    """Write a part file atomically: complete or absent."""
    data = pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL)

    def dump(tmp):
        with open(tmp, "wb") as fh:
            fh.write(SIGNED + _signature(data) + data)

    atomic_write(Path(path), dump)


def _part_function(paper: str, item: str) -> Callable[[dict, str], object]:
    return getattr(experiment_module(paper, item), f"part_{item}")


def run_part(paper: str, item: str, key: str, params: dict) -> dict:
    """Compute one part: the record a part file holds (its value and its wall time)."""
    check_key(paper, item, key, params)
    t0 = time.perf_counter()
    value = _part_function(paper, item)(params, key)
    return record(key, params, value=value, wall_time_s=time.perf_counter() - t0)


def _signed_record(path: Path) -> dict | None:
    """The record of a part file whose signature checks (unpickled only then), else None."""
    blob = path.read_bytes()
    head, mac, data = blob[:len(SIGNED)], blob[len(SIGNED):len(SIGNED) + 32], blob[len(SIGNED) + 32:]
    if head != SIGNED or not hmac.compare_digest(mac, _signature(data)):
        return None
    rec = pickle.loads(data)
    return rec if isinstance(rec, dict) else None


def _load(path: Path, want: str, key: str | None = None) -> tuple[dict | None, str]:
    if not path.is_file():
        return None, f"{path} is missing"
    rec = _signed_record(path)
    if rec is None:
        return None, f"{path} was not written by this project (unsigned or signed with another key: never unpickled)"
    if rec.get("format") != FORMAT or rec.get("params_hash") != want:
        return None, f"{path} was written with other parameters"
    if key is not None and rec.get("key") != key:
        return None, f"{path} holds part {rec.get('key')!r}, not {key!r}"
    if "value" not in rec:
        return None, f"{path} holds no result ({rec.get('status', 'incomplete')})"
    return rec, ""


def gather(paper: str, item: str, params: dict, compute: Callable[[str], object] | None = None, *,
           keys=None, out_dir: str | Path | None = None, log=print) -> dict[str, object]:
    """{key: value} of every part of the item, in part order: from its part file when that was written with these
    parameters, else computed here (`compute(key)`, default the module's part_<item>) with a line saying so.

    keys: the pieces the item is made of (default its part keys). An item that shares its code with a split one but
    is not split itself (e.g. a single setting) passes them, and each is computed here without a word."""
    split_keys = part_keys(paper, item, params)
    keys = split_keys if keys is None else list(keys)
    if split_keys and keys != split_keys:
        raise ValueError(f"{paper}/{item}: keys {keys} are not its part keys {split_keys}")
    want = params_hash(params)
    compute = compute or (lambda key: _part_function(paper, item)(params, key))
    out, todo = {}, []
    for key in keys:
        rec, why = _load(part_path(paper, item, key, out_dir), want, key) if split_keys else (None, "")
        if rec is None:
            if split_keys:
                log(f"{why}: computing part {key} here")
            todo.append(key)
        out[key] = None if rec is None else rec["value"]
    for key in progress(todo, f"{paper}/{item}", name=lambda k: f"part {k}"):  # a line per part computed here
        out[key] = compute(key)
    return out
