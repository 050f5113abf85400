"""LIBSVM-format files via scikit-learn's `load_svmlight_file`, with an explicit feature count (docs/choices.md#libsvm-and-kdd-data).

a9a.t and a8a.t never use feature 123, so the feature count is always given, never inferred. Compressed `.bz2`
files are read directly, by extension, through a byte cap (`capped.open_content`: the registry's `content_cap` of
the file; registry.UNLISTED_MAX_BYTES for a file it does not list), so a small file decompressing to gigabytes fails
with `SizeCapError` naming the file and the cap instead of being parsed for ever.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .capped import open_content
from .registry import UNLISTED_MAX_BYTES, SizeCapError


class LibsvmFormatError(ValueError):
    pass


def load(path: Path, n_features: int, *, dense: bool = True,
         max_bytes: int = UNLISTED_MAX_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from a LIBSVM file of at most `max_bytes` bytes of content; labels must be +-1 (0/1 is mapped to
    -1/+1)."""
    path = Path(path)
    try:
        from sklearn.datasets import load_svmlight_file  # imported here: sklearn adds ~1.5 s to every import

        with open_content(path, max_bytes) as fh:
            X, y = load_svmlight_file(fh, n_features=n_features, dtype=np.float64)
    except SizeCapError:
        raise
    except ValueError as exc:
        raise LibsvmFormatError(
            f"{path}: not a valid LIBSVM file with {n_features} features ({exc}); expected lines like "
            "'+1 3:1 11:0.5' with 1-based increasing indices"
        ) from exc
    labels = set(np.unique(y).tolist())
    if labels <= {0.0, 1.0}:
        y = 2.0 * y - 1.0
    elif not labels <= {-1.0, 1.0}:
        raise LibsvmFormatError(f"{path}: expected binary labels +-1 (or 0/1), got {sorted(labels)[:5]}")
    return (X.toarray() if dense else X.tocsr()), y
