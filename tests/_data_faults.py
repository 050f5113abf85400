"""Faults injected into the dataset build, shared by the dataset tests."""

from __future__ import annotations

import numpy as np


def nan_in_x_train(monkeypatch) -> None:
    """Make the build's preprocessing return X_train with one NaN: a file that passed its parse-and-shape check yet
    holds a non-finite value (a hostile mirror's copy)."""
    from repro_dpadmm.datasets import processed

    parse = processed._preprocess

    def with_nan(*a, **k):
        arrays, extra = parse(*a, **k)
        arrays["X_train"] = arrays["X_train"].copy()
        arrays["X_train"][0, 0] = np.nan
        return arrays, extra

    monkeypatch.setattr(processed, "_preprocess", with_nan)
