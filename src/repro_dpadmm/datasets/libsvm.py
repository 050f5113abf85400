"""LIBSVM-format files via scikit-learn's `load_svmlight_file`, with an explicit feature count (docs/choices.md#libsvm-and-kdd-data).

a9a.t and a8a.t never use feature 123, so the feature count is always given, never inferred. Compressed `.bz2`
files are read directly (scikit-learn opens them by extension).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class LibsvmFormatError(ValueError):
    pass


def load(path: Path, n_features: int, *, dense: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from a LIBSVM file; labels must be +-1 (0/1 is mapped to -1/+1)."""
    path = Path(path)
    try:
        from sklearn.datasets import load_svmlight_file  # imported here: sklearn adds ~1.5 s to every import

        X, y = load_svmlight_file(str(path), n_features=n_features, dtype=np.float64)
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
