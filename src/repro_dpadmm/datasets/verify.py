"""Verify a raw file that has no published checksum by parsing it: format and shape (docs/choices.md#libsvm-and-kdd-data).

gisette_scale.t.bz2 and the KDD Cup 2004 archive have no published checksum. A copy of such a file is trusted only
after it parses as the format its name says (bz2-compressed LIBSVM, gzip tar holding bio_train.dat) with the number
of rows and features the dataset must have; `fetch` runs this check on a staged copy before the file gets its final
name, and records the sha256 it saw so that later uses compare bytes instead of parsing again. The parse reads at
most the registry's `content_cap` of the file (registry.py: size caps), so a decompression bomb fails, not hangs.
"""

from __future__ import annotations

from pathlib import Path

from . import bio, libsvm
from .registry import DATASETS, RAW_FILES, SizeCapError


class VerificationError(ValueError):
    """A raw file failed its format or shape check."""


def expected_shape(relpath: str) -> tuple[str, tuple[int, int]]:
    """(kind, (rows, features)) a raw file must parse to; kind is 'libsvm' or 'bio'."""
    for spec in DATASETS.values():
        if relpath not in spec.raw:
            continue
        if spec.name == "bio_train":
            rows = spec.shapes["X_train"][0] + spec.shapes["X_test"][0]
            return "bio", (rows, spec.shapes["X_train"][1])
        name = Path(relpath).name.removesuffix(".bz2")
        part = "X_test" if name.endswith(".t") else "X_train"
        return "libsvm", tuple(spec.shapes[part])
    raise KeyError(f"no dataset uses {relpath!r}")


def check(relpath: str, path: Path) -> str:
    """Parse `path` as the raw file `relpath`; return a one-line description or raise VerificationError."""
    kind, (rows, features) = expected_shape(relpath)
    cap = RAW_FILES[relpath].content_cap
    try:
        if kind == "bio":
            X, _ = bio.read_archive(path, max_bytes=cap)
        else:
            X, _ = libsvm.load(path, features, dense=False, max_bytes=cap)
    except SizeCapError as exc:
        raise VerificationError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - any parser failure (EOFError, OSError, tarfile/zlib errors) is a bad file
        raise VerificationError(f"does not parse as {'a gzip tar with bio_train.dat' if kind == 'bio' else 'LIBSVM'}"
                                f" ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
    if X.shape != (rows, features):
        raise VerificationError(f"parsed shape {X.shape}, expected {(rows, features)}")
    return f"parsed as {kind}, shape {X.shape}"
