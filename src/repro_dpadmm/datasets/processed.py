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
from pathlib import Path

import numpy as np

from ..paths import processed_dir, raw_dir
from . import adult, bio, libsvm
from .fetch import FetchError, fetch_raw, sha256sum
from .registry import RAW_FILES, dataset

DEFAULT_OPTIONS = {
    "adult_huang2019": {"row_normalisation": "per_row"},
    "adult_zhang2018": {"row_normalisation": "per_row"},
    "bio_train": {"split_seed": 0},
}


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
        X_train, y_train = libsvm.load(paths[train], d)
        X_test, y_test = libsvm.load(paths[test], d)
        return {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test}, {}
    if name == "bio_train":
        X, y = bio.read_archive(p("data_kddcup04.tar.gz"))
        return bio.split(X, y, np.random.default_rng(options["split_seed"])), {}
    raise KeyError(name)


def build(name: str, *, mirror: str | None = None, options: dict | None = None, root: Path | None = None,
          raw_cache: Path | None = None) -> dict:
    """Fetch, verify and preprocess one dataset; write npz + json; return the sidecar.

    A source that cannot be fetched gives an unavailable sidecar (not an exception), so the rest of the
    workflow proceeds. Files without a published checksum are verified by their parsed shapes.
    """
    spec = dataset(name)
    opts = {**DEFAULT_OPTIONS.get(name, {}), **(options or {})}
    out_dir = processed_dir(root)
    sidecar_path, npz_path = out_dir / f"{name}.json", out_dir / f"{name}.npz"
    raw_cache = raw_cache or raw_dir(root)
    base = {"name": name, "description": spec.description, "options": opts, "raw_files": list(spec.raw)}
    try:
        paths = {rel: fetch_raw(rel, mirror=mirror, cache=raw_cache) for rel in spec.raw}
    except FetchError as exc:
        if npz_path.exists():
            npz_path.unlink()
        sidecar = {**base, "available": False, "reason": str(exc)}
        _write_json(sidecar_path, sidecar)
        return sidecar

    arrays, extra = _preprocess(name, paths, opts)
    for key, shape in spec.shapes.items():
        if arrays[key].shape != tuple(shape):
            msg = f"{key} has shape {arrays[key].shape}, expected {tuple(shape)}"
            unverified = [r for r in spec.raw if RAW_FILES[r].known_hash is None]
            if unverified:  # no published checksum: the shape is the verification, so this is a bad download
                sidecar = {**base, "available": False, "reason": f"downloaded file failed verification: {msg}"}
                _write_json(sidecar_path, sidecar)
                return sidecar
            raise ValueError(f"{name}: {msg} although its files passed the checksum; preprocessing bug")

    atomic_write(npz_path, lambda tmp: np.savez(open(tmp, "wb"), **arrays))
    sidecar = {
        **base, "available": True,
        "arrays": {k: list(v.shape) for k, v in arrays.items()},
        "sources": {rel: {"sha256": sha256sum(path), "published_checksum": RAW_FILES[rel].known_hash,
                          "url": RAW_FILES[rel].url} for rel, path in paths.items()},
        **extra,
    }
    _write_json(sidecar_path, sidecar)
    return sidecar


def sidecar(name: str, root: Path | None = None) -> dict:
    path = processed_dir(root) / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: build it with `snakemake --cores all datasets` or "
                                f"`repro-dpadmm data fetch {name}`")
    return json.loads(path.read_text())


def is_available(name: str, root: Path | None = None) -> tuple[bool, str]:
    try:
        meta = sidecar(name, root)
    except FileNotFoundError as exc:
        return False, str(exc)
    return bool(meta.get("available")), meta.get("reason", "")


def load(name: str, root: Path | None = None) -> dict[str, np.ndarray]:
    """The arrays of a processed dataset; DatasetUnavailable if it could not be built."""
    meta = sidecar(name, root)
    if not meta.get("available"):
        raise DatasetUnavailable(name, meta.get("reason", "unknown reason"))
    with np.load(processed_dir(root) / f"{name}.npz") as npz:
        return {k: npz[k] for k in npz.files}
