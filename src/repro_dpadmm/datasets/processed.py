"""Build and load the processed datasets `resources/processed/<name>.npz` with a `<name>.json` sidecar.

The sidecar always exists after a build. For an available dataset it records shapes, the sha256 of every source
file and the options used; for one that could not be had it records `"available": false` and the reason. Downstream
code (notebooks, the report) reads the sidecar: `load()` raises `DatasetUnavailable` with that reason, so an item
can say "not run: dataset unavailable" instead of failing the workflow.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from .. import locks, safeload
from ..paths import processed_dir, raw_dir
from . import adult, bio, libsvm
from ..safeload import redact
from .fetch import FetchError, fetch, local_state, offline, resolve_mirror, sha256sum, sources
from .registry import RAW_FILES, dataset

DEFAULT_OPTIONS = {
    "adult_huang2019": {"row_normalisation": "per_row"},
    "adult_zhang2018": {"row_normalisation": "per_row"},
    "bio_train": {"split_seed": 0},
}
# An unavailable dataset whose sources include the network is tried again on the next run once this long has passed
# since the last attempt (a change of mirror or of the local files retries at once; see attempt()).
RETRY_NETWORK_AFTER_S = 3600


class DatasetUnavailable(RuntimeError):
    """The dataset could not be obtained; `reason` says why."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"dataset {name!r} unavailable: {reason}")
        self.name, self.reason = name, reason


def atomic_write(path: Path, write) -> None:
    """Call write(tmp) on a unique temporary file beside `path`, then move it into place: never a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide shared files from other users
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_json(path: Path, obj: dict) -> None:
    def w(tmp):
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=2, sort_keys=True)
            fh.write("\n")
    atomic_write(path, w)


def _preprocess(name: str, paths: dict[str, Path], options: dict) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and extra sidecar facts for one dataset from its verified raw files."""
    p = lambda suffix: next(v for k, v in paths.items() if k.endswith(suffix))  # noqa: E731
    if name in ("adult_huang2019", "adult_zhang2018"):
        out = adult.preprocess(p("adult.data"), p("adult.test"),
                               p("adult.names") if name == "adult_zhang2018" else None,
                               levels="names" if name == "adult_zhang2018" else "observed",
                               row_normalisation=options["row_normalisation"])
        extra = {"feature_names": out["feature_names"], "n_rows_read": out["n_rows_read"],
                 "n_rows_removed": out["n_removed"], "n_positive": int((out["y"] > 0).sum())}
        return {"X": out["X"], "y": out["y"]}, extra
    if name in ("a9a", "a8a", "ijcnn1", "gisette"):
        d = dataset(name).shapes["X_train"][1]
        train, test = sorted(paths, key=lambda k: (".t" in Path(k).name, k))
        X_train, y_train = libsvm.load(paths[train], d, max_bytes=RAW_FILES[train].content_cap)
        X_test, y_test = libsvm.load(paths[test], d, max_bytes=RAW_FILES[test].content_cap)
        return {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test}, {}
    if name == "bio_train":
        rel = next(k for k in paths if k.endswith("data_kddcup04.tar.gz"))
        X, y = bio.read_archive(paths[rel], max_bytes=RAW_FILES[rel].content_cap)
        return bio.split(X, y, np.random.default_rng(options["split_seed"])), {}
    raise KeyError(name)


def build(name: str, *, mirror: str | None = None, options: dict | None = None, root: Path | None = None,
          raw_cache: Path | None = None, attempt_state: dict | None = None) -> dict:
    """Fetch, verify and preprocess one dataset; write npz + json; return the sidecar.

    A source that cannot be fetched or verified gives an unavailable sidecar (not an exception), so the rest of the
    workflow proceeds. `attempt_state` (the workflow passes attempt()) is recorded in the sidecar: it is what decides
    whether the next run retries. An unavailable result removes the old npz, so no stale array outlives it; but a
    rebuild whose files cannot be fetched keeps an earlier build that is still whole (its npz matching its recorded
    checksum), whatever its options, saying so in the sidecar's `kept` (the sidecar keeps the options it was built
    with).
    Two builds of one dataset at once (two `repro-dpadmm data build`, or one beside Snakemake): the second waits for
    the first (`resources/processed/.<name>.lock`), then finds the raw files verified in the cache.
    """
    with locks.held(processed_dir(root) / f".{name}.lock", f"dataset {name}"):
        return _build(name, mirror=mirror, options=options, root=root, raw_cache=raw_cache,
                      attempt_state=attempt_state)


def _build(name: str, *, mirror: str | None, options: dict | None, root: Path | None, raw_cache: Path | None,
           attempt_state: dict | None) -> dict:
    spec = dataset(name)
    opts = {**DEFAULT_OPTIONS.get(name, {}), **(options or {})}
    out_dir = processed_dir(root)
    sidecar_path, npz_path = out_dir / f"{name}.json", out_dir / f"{name}.npz"
    raw_cache = raw_cache or raw_dir(root)
    mirror = resolve_mirror(mirror)
    base = {"name": name, "description": spec.description, "options": opts, "raw_files": list(spec.raw),
            "mirror": redact(mirror or ""), "attempt": attempt_state if attempt_state is not None
            else attempt(name, mirror, root=root, raw_cache=raw_cache)}

    def unavailable(reason: str) -> dict:
        if npz_path.exists():
            npz_path.unlink()
        side = {**base, "available": False, "reason": reason}
        _write_json(sidecar_path, side)
        return side

    def kept_or_unavailable(reason: str, what: str) -> dict:
        """A rebuild that failed (`what` happened) never costs a verified earlier build: kept, saying so."""
        earlier = _intact(sidecar_path, npz_path)
        if earlier is None:
            return unavailable(reason)
        other = ("" if earlier.get("options") == opts else
                 f", built with the options {json.dumps(earlier.get('options'), sort_keys=True)}, not the "
                 f"{json.dumps(opts, sort_keys=True)} asked for")
        side = {**earlier, "attempt": base["attempt"],
                "kept": f"a rebuild {what}, so this earlier build (its arrays match their recorded checksum{other}) "
                        f"was kept: {reason}"}
        built = sidecar_path.stat()
        _write_json(sidecar_path, side)
        # the data are the earlier build's, so the sidecar keeps its time: a failed `data build` by hand would
        # otherwise make every item on the dataset look out of date to Snakemake (which touches a rule's outputs
        # itself when the workflow rebuilds)
        os.utime(sidecar_path, ns=(built.st_atime_ns, built.st_mtime_ns))
        return side

    try:
        fetched = {rel: fetch(rel, mirror=mirror, cache=raw_cache) for rel in spec.raw}
    except FetchError as exc:
        return kept_or_unavailable(str(exc), "could not fetch its files")
    paths = {rel: f.path for rel, f in fetched.items()}

    arrays, extra = _preprocess(name, paths, opts)
    bad = [k for k, v in arrays.items() if np.issubdtype(v.dtype, np.number) and not np.isfinite(v).all()]
    if bad:   # a file that passed its parse-and-shape check (no published checksum) can still hold nan or inf
        # such copies leave the cache, so that the next build fetches them again (from a mended mirror) rather than
        # read the same poisoned copy; a file with a published checksum is the published file and stays
        suspects = sorted(rel for rel in paths if RAW_FILES[rel].known_hash is None)
        for rel in suspects:
            for cached in (paths[rel], paths[rel].with_name(paths[rel].name + ".provenance.json")):
                cached.unlink(missing_ok=True)
        removed = f" (its cached cop{'ies were' if len(suspects) > 1 else 'y was'} removed: the next build fetches " \
                  "again)" if suspects else ""
        return kept_or_unavailable(f"{', '.join(sorted(paths))}: non-finite values (nan or inf) in "
                                   f"{', '.join(bad)}; check the data mirror's copy{removed}", "read files that "
                                   "failed verification")
    for key, shape in spec.shapes.items():
        if arrays[key].shape != tuple(shape):
            # every file passed its checksum or its parse-and-shape check, so this is our bug, not the data's
            raise ValueError(f"{name}: {key} has shape {arrays[key].shape}, expected {tuple(shape)} although its "
                             "files passed verification; preprocessing bug")

    def write_npz(tmp):
        with open(tmp, "wb") as fh:  # a file object: np.savez would append .npz to the temporary name
            np.savez(fh, **arrays)

    atomic_write(npz_path, write_npz)
    side = {
        **base, "available": True,
        "arrays": {k: list(v.shape) for k, v in arrays.items()},
        "npz": {"sha256": sha256sum(npz_path), "size": npz_path.stat().st_size},
        "sources": {rel: {"sha256": f.sha256, "published_checksum": RAW_FILES[rel].known_hash,
                          "url": RAW_FILES[rel].url, "source": redact(f.source), "verified_by": f.verified_by}
                    for rel, f in fetched.items()},
        **extra,
    }
    _write_json(sidecar_path, side)
    return side


def _intact(sidecar_path: Path, npz_path: Path) -> dict | None:
    """The sidecar of an earlier build that is still whole: available and its npz matching the checksum it recorded,
    whatever options it was built with (its sidecar says which); None otherwise."""
    try:
        side = safeload.load_json(sidecar_path, expect=dict)
    except safeload.LoadError:
        return None
    npz = side.get("npz") if isinstance(side.get("npz"), dict) else {}
    if side.get("available") is not True or not npz_path.is_file():
        return None
    return side if npz.get("sha256") == sha256sum(npz_path) else None


def sidecar(name: str, root: Path | None = None) -> dict:
    path = processed_dir(root) / f"{name}.json"
    if (path.exists() or path.is_symlink()) and not path.is_file():   # never opened: a FIFO's read would block
        raise FileNotFoundError(f"{path} is not a regular file (a FIFO, a folder, a device or a broken link): "
                                f"rebuild it with `repro-dpadmm data build {name}`")
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: build it with `snakemake --cores all datasets` or "
                                f"`repro-dpadmm data build {name}`")
    try:
        meta = safeload.load_json(path, expect=dict)
    except safeload.LoadError as exc:
        raise FileNotFoundError(f"{exc}: rebuild it with `repro-dpadmm data build {name}`") from None
    return meta


_DIGESTS: dict[tuple, str] = {}


def _npz_digest(path: Path) -> str:
    """sha256 of a processed npz, once per process for one state of the file (an item checks each of its datasets
    several times, and a large npz takes a fifth of a second to hash): a write in place changes its ctime."""
    st = path.stat()
    key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256sum(path)
    return _DIGESTS[key]


def npz_problem(name: str, meta: dict, root: Path | None = None) -> str:
    """'' if the processed arrays of an available dataset are intact, else what is wrong with them."""
    path = processed_dir(root) / f"{name}.npz"
    fix = f"rebuild it: rerun snakemake (it rebuilds damaged datasets) or `repro-dpadmm data build {name}`"
    if not path.is_file():
        return f"{path} is missing although {name}.json says available; {fix}"
    record = meta.get("npz")
    if record:
        if path.stat().st_size != record.get("size"):
            return f"{path} has {path.stat().st_size} bytes, the build wrote {record.get('size')}; {fix}"
        if _npz_digest(path) != record.get("sha256"):
            return f"{path} does not match the sha256 recorded at its build (corrupted); {fix}"
        return ""
    try:  # a sidecar from before npz checksums were recorded: the zip's own CRCs
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
    except (zipfile.BadZipFile, OSError) as exc:
        return f"{path} is not a readable npz ({exc}); {fix}"
    return f"{path}: member {bad} is corrupted; {fix}" if bad else ""


def state(name: str, root: Path | None = None) -> tuple[str, str]:
    """(state, why) of a processed dataset: 'available' (why is ''), 'not built' (no sidecar), 'damaged' (a sidecar
    that cannot be read, or an npz that no longer matches it) or 'unavailable' (its build could not have the files)."""
    try:
        meta = sidecar(name, root)
    except FileNotFoundError as exc:
        side = processed_dir(root) / f"{name}.json"
        return ("damaged" if side.exists() or side.is_symlink() else "not built"), str(exc)
    if not meta.get("available"):
        return "unavailable", meta.get("reason", "") or "unavailable"
    problem = npz_problem(name, meta, root)
    return ("damaged", problem) if problem else ("available", "")


def is_available(name: str, root: Path | None = None) -> tuple[bool, str]:
    """(True, '') when the sidecar says available and the npz is intact; else (False, why): a sidecar that cannot
    be read makes its dataset unavailable (its items run the other datasets), never an error."""
    what, why = state(name, root)
    return what == "available", why


def load(name: str, root: Path | None = None) -> dict[str, np.ndarray]:
    """The arrays of a processed dataset; DatasetUnavailable if it could not be built or is damaged."""
    ok, reason = is_available(name, root)
    if not ok:
        raise DatasetUnavailable(name, reason or "unknown reason")
    with np.load(processed_dir(root) / f"{name}.npz") as npz:
        return {k: npz[k] for k in npz.files}


def attempt(name: str, mirror: str | None, *, root: Path | None = None, raw_cache: Path | None = None,
            now: float | None = None) -> dict:
    """What decides whether the workflow builds a dataset again (its Snakemake params; a change re-runs the rule).

    For a dataset that is built and intact: the state recorded at its build, so nothing changes and nothing re-runs
    (changing the mirror does not rebuild good data). For one that is unavailable, not built or damaged: the sources
    in force now (the mirror, offline mode, name/size/mtime of the files in the mirror folder and the raw cache), so a
    fixed mirror, a newly set `REPRO_DPADMM_DATA_MIRROR` or a file placed in resources/raw/ retries on the next run;
    when a network source is involved the failure is also retried once RETRY_NETWORK_AFTER_S has passed.
    """
    try:
        meta = sidecar(name, root)
    except FileNotFoundError:
        meta = {}
    prev = meta.get("attempt") if isinstance(meta.get("attempt"), dict) else {}
    damaged = bool(meta.get("available")) and bool(npz_problem(name, meta, root))
    if meta.get("available") and prev and not damaged:
        return prev
    spec = dataset(name)
    raw_cache = raw_cache or raw_dir(root)
    state = {"mirror": redact(mirror or ""), "offline": offline(),
             "local": {rel: local_state(rel, mirror, raw_cache) for rel in spec.raw}}
    if damaged:
        state["damaged"] = True
    if any(src.network for rel in spec.raw for src in sources(RAW_FILES[rel], mirror)):
        now = time.time() if now is None else now
        last = prev.get("network_retry")
        fresh = isinstance(last, (int, float)) and 0 <= now - last < RETRY_NETWORK_AFTER_S
        state["network_retry"] = last if fresh else int(now)
    return state
