"""The consensus kernels equal, bit for bit, the scipy products the solvers used before (same order of operations),
on sparse block-diagonal data with uneven and empty rows, for a data draw per repeat (B = R n) and one shared draw
(B = n), over all problems and over a subset in any order (compact arrays: row q belongs to problem ids[q])."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.kernels import consensus as kc


def _data(D, n=3, m=17, d=9, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((D, n, m, d))
    A[rng.random(A.shape) < 0.6] = 0.0  # uneven rows, some empty
    A[0, 0, 0] = 0.0
    b = np.where(rng.random((D, n, m)) < 0.5, -1.0, 1.0)
    return cs.star_data(A, b), rng


@pytest.mark.parametrize("D,R", [(2, 2), (1, 3)])
@pytest.mark.parametrize("subset", [False, True])
def test_kernels_equal_scipy_products_bit_for_bit(D, R, subset):
    data, rng = _data(D)
    n, m, d = data.n, data.m, data.d
    P = R * n
    ids = np.array([4, 1, 2]) if subset else np.arange(P)
    X = data.Xb
    w = rng.standard_normal((R, n, d))
    u = rng.standard_normal((R, n, m))
    c = rng.random((R, n, m))
    b = data.b.reshape(-1, m)
    args = (X.indptr, X.indices, X.data, D * n, ids)

    # the products of the whole block-diagonal matrix as scipy makes them (StarData.product is scipy's)
    def scipy_t(v):
        return data._uncols(data.XbT @ data._cols(v), R, d).reshape(P, d)

    full = {"z": (data.b * data.product(w)).reshape(P, m), "t": scipy_t(u), "h": scipy_t(c * data.product(w))}
    w2, u2, c2 = (x.reshape(P, -1)[ids] for x in (w, u, c))
    for name, kern, ref, inp, width in (("z", kc.margins, kc.margins_reference, (b, w2), m),
                                        ("t", kc.tproduct, kc.tproduct_reference, (u2,), d),
                                        ("h", kc.hvp, kc.hvp_reference, (c2, w2), d)):
        got = np.full((ids.size, width), np.nan)
        kern(*args, *inp, got)
        want = np.full((ids.size, width), np.nan)
        ref(X, D * n, ids, *inp, want)
        np.testing.assert_array_equal(got, want, err_msg=name)
        np.testing.assert_array_equal(got, full[name][ids], err_msg=name)
