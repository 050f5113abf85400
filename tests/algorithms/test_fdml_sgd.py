"""algorithms.fdml_sgd: the FDML-SGD baseline of Hu et al. (mini-batch SGD over vertically partitioned features) and
its learning-rate selection."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.algorithms import sharing
from repro_dpadmm.algorithms.fdml_sgd import fdml_sgd, select_lr
from repro_dpadmm.rng import repeat_generators


def test_fdml_sgd_decreases_objective_and_selects_lr():
    rng = np.random.default_rng(0)
    D = rng.normal(size=(400, 9)) / 3.0
    Y = np.where(D @ rng.normal(size=9) + 0.1 * rng.normal(size=400) > 0, 1.0, -1.0)
    rngs = repeat_generators(0, 2, "sgd")
    h = fdml_sgd(D, Y, (0, 4, 9), lam=0.5, lr=0.5, epochs=20, batch_size=16, rngs=rngs, D_test=D, Y_test=Y)
    x_opt = sharing.centralised_optimum(D, Y, 0.5)
    f_opt = sharing.regularised_objective(D, Y, x_opt, 0.5)
    assert h.traces["objective"][0, 0] > h.traces["objective"][0, -1]
    assert h.traces["objective"][:, -1].max() < f_opt * 1.02
    lr, scores = select_lr(D, Y, (0, 4, 9), lam=0.5, grid=[1e-4, 0.3, 1.0], batch_size=16,
                           make_rng=lambda: np.random.default_rng(1))
    assert lr == [1e-4, 0.3, 1.0][int(np.argmin(scores))] and scores[0] > scores[1]
    with pytest.raises(ValueError, match="cover"):
        fdml_sgd(D, Y, (0, 9, 10), lam=0.5, lr=0.1, epochs=1, batch_size=16, rngs=rngs)
