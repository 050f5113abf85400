"""The consensus kernels equal, bit for bit, the scipy products the solvers used before (same order of operations),
on sparse block-diagonal data with uneven and empty rows, for a data draw per repeat (B = R n) and one shared draw
(B = n), over all problems and over a subset in any order (compact arrays: row q belongs to problem ids[q])."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

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
    args = (X.indptr, data.local_cols, X.data, D * n, ids)

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


def test_pairwise_sum_is_numpys_sum():
    rng = np.random.default_rng(3)
    for d in (1, 5, 7, 8, 9, 17, 104, kc.PAIRWISE_BLOCK):
        for _ in range(50):
            a = rng.standard_normal(d) * np.exp(5 * rng.standard_normal(d))  # wide magnitudes: order matters
            assert kc.pairwise_sum(a) == kc.pairwise_sum_reference(a) == (a[None] * 1.0).sum(-1)[0]


@pytest.mark.parametrize("D,R", [(2, 2), (1, 3)])
def test_cg_step_equals_numpy_cg(D, R):
    """Iterations of the compiled CG step (fused product, updates, sums) equal numpy's, bit for bit, including the
    stopping flag; on all problems and on a subset."""
    data, rng = _data(D, m=23, d=11)
    n, m, d = data.n, data.m, data.d
    X = data.Xb
    for ids in (np.arange(R * n), np.array([4, 1])):
        k = ids.size
        c, g = rng.random((k, m)), rng.standard_normal((k, d))
        mine, ref = ([np.zeros_like(g), g.copy(), g.copy()] for _ in range(2))
        rr = (g * g).sum(-1)
        target = 1e-3 * rr
        rr_m, rr_r, new_m, new_r = rr.copy(), rr.copy(), np.empty(k), np.empty(k)
        flags = []
        for it in range(8):
            fm = kc.cg_step(X.indptr, data.local_cols, X.data, D * n, ids, c, float(m), 0.3, it == 0, *mine, rr_m, new_m,
                            target)
            fr = kc.cg_step_reference(X, D * n, ids, c, float(m), 0.3, it == 0, *ref, rr_r, new_r, target)
            assert fm == fr
            flags.append(fm)
            for a, b in zip(mine + [rr_m, new_m], ref + [rr_r, new_r]):
                np.testing.assert_array_equal(a, b)
        assert flags[-1] and not flags[0]  # the run covers both outcomes of the stopping test


@pytest.mark.parametrize("n", [1, 4])
def test_test_error_equals_scipy_scores(n):
    """StarData.test_error (compiled, a draw per repeat: scores compared as they are made) equals the error of
    scipy's scores it replaced, exactly; scores of exactly 0 count as -1 (the tie rule of docs/choices.md#numerical-conventions)."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((2, n, 10, 6))
    b = np.where(rng.random((2, n, 10)) < 0.5, -1.0, 1.0)
    Xt = rng.standard_normal((2, 25, 6))
    Xt[rng.random(Xt.shape) < 0.5] = 0.0
    Xt[:, :3] = 0.0  # score 0: predicted -1
    yt = np.where(rng.random((2, 25)) < 0.5, -1.0, 1.0)
    data = cs.star_data(A, b, Xt, yt)
    w = rng.standard_normal((2, n, 6))
    s = (data.Xt @ np.ascontiguousarray(w.transpose(0, 2, 1)).reshape(12, n)).reshape(2, 25, n)
    want = np.count_nonzero((s > 0) != (yt > 0)[..., None], axis=-2) / 25
    np.testing.assert_array_equal(data.test_error(w), want)
    np.testing.assert_array_equal(data.test_error(w[:, 0]), want[:, 0])
    counts, ref = np.empty((2, n), np.int64), np.empty((2, n), np.int64)
    W = np.ascontiguousarray(w.transpose(0, 2, 1)).reshape(12, n)
    kc.misclassified(data.Xt.indptr, data.Xt.indices, data.Xt.data, W, yt.reshape(-1), 25, counts)
    kc.misclassified_reference(data.Xt, W, yt.reshape(-1), 25, ref)
    np.testing.assert_array_equal(counts, ref)


@pytest.mark.parametrize("D,R", [(2, 2), (1, 3)])
@pytest.mark.parametrize("clip", [0.3, 1.0, np.inf])
def test_gradient_sums_equal_numpy_bit_for_bit(D, R, clip):
    """The fused transposed products of the logistic gradients (ADMM's -b sigma(-z); DPSGD's clipped per-example
    gradients, clip = inf: none) equal the numpy expressions they replaced, bit for bit, on all problems and a
    subset; rows with norm 0 (scale capped by 1e-300) included."""
    data, rng = _data(D)
    n, m, d = data.n, data.m, data.d
    X = data.Xb
    b, norms = data.b.reshape(-1, m), data.row_norms.reshape(-1, m)
    assert (norms == 0).any()
    for ids in (np.arange(R * n), np.array([4, 1, 2])):
        z = 3 * rng.standard_normal((ids.size, m))
        s = cs.sigmoid_neg(z)
        args = (X.indptr, data.local_cols, X.data, D * n, ids)
        got, want = np.full((ids.size, d), np.nan), np.full((ids.size, d), np.nan)
        kc.neg_b_tproduct(*args, b, s, got)
        kc.neg_b_tproduct_reference(X, D * n, ids, b, s, want)
        np.testing.assert_array_equal(got, want)
        kc.clipped_grad_sum(*args, b, z, norms, clip, got)
        kc.clipped_grad_sum_reference(X, D * n, ids, b, z, norms, clip, want)
        np.testing.assert_array_equal(got, want)
    if np.isinf(clip):  # no clipping is the unclipped sum exactly (the scale is 1.0)
        ids = np.arange(R * n)
        z = rng.standard_normal((ids.size, m))
        got, want = np.empty((ids.size, d)), np.empty((ids.size, d))
        kc.clipped_grad_sum(X.indptr, data.local_cols, X.data, D * n, ids, b, z, norms, clip, got)
        kc.tproduct_reference(X, D * n, ids, -b[ids % (D * n)] * expit(-z), want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("d,dtype", [(9, np.uint8), (256, np.uint8), (300, np.uint16)])
def test_local_columns(d, dtype):
    """The kernels' column of each stored entry within its block: the smallest unsigned type, indices - block d; the
    margins through a wider type still equal scipy's."""
    data, rng = _data(2, m=5, d=d)
    X, B = data.Xb, 2 * data.n
    cols = data.local_cols
    assert cols.dtype == dtype
    blk = np.repeat(np.arange(X.shape[0]) // data.m, np.diff(X.indptr))
    np.testing.assert_array_equal(cols.astype(np.int64), X.indices - blk * d)
    ids = np.arange(B)
    w = rng.standard_normal((B, d))
    got, want = np.empty((B, data.m)), np.empty((B, data.m))
    kc.margins(X.indptr, cols, X.data, B, ids, data.b.reshape(-1, data.m), w, got)
    kc.margins_reference(X, B, ids, data.b.reshape(-1, data.m), w, want)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="block diagonal"):
        kc.local_columns(X, B, data.m, d - 1)



@pytest.mark.parametrize("D,R", [(2, 2), (1, 3)])
@pytest.mark.parametrize("subset", [False, True])
@pytest.mark.parametrize("L", [1, 4, 6])
def test_lane_kernels_equal_the_single_lane_kernels_on_every_lane(D, R, subset, L):
    """margins, neg_b_tproduct and clipped_grad_sum over L lanes (one read of each row for all lanes; groups of four
    lanes and the rest one by one) give, lane by lane, the single-lane kernel's numbers bit for bit (the same sums in
    the same order)."""
    data, rng = _data(D)
    n, m, d = data.n, data.m, data.d
    P = R * n
    ids = np.array([4, 1, 2]) if subset else np.arange(P)
    X = data.Xb
    args = (X.indptr, data.local_cols, X.data, D * n, ids)
    b, norms = data.b.reshape(-1, m), data.row_norms.reshape(-1, m)
    w = rng.standard_normal((L, ids.size, d))
    s = rng.random((L, ids.size, m))
    z = 3 * rng.standard_normal((L, ids.size, m))
    z[0, 0, :3] = (800.0, -800.0, 0.0)   # exp overflow, the smallest sigmoid, a zero margin
    cases = [("margins", kc.margins_lanes, kc.margins, (b, w), (), m),
             ("neg_b_tproduct", kc.neg_b_tproduct_lanes, kc.neg_b_tproduct, (b, s), (), d)]
    cases += [(f"clipped_grad_sum clip={clip}", kc.clipped_grad_sum_lanes, kc.clipped_grad_sum, (b, z),
               (norms, clip), d) for clip in (0.3, np.inf)]
    for name, lanes, one, (bb, per_lane), tail, width in cases:
        got = np.full((L, ids.size, width), np.nan)
        lanes(*args, bb, per_lane, *tail, got)
        for lane in range(L):
            want = np.full((ids.size, width), np.nan)
            one(*args, bb, np.ascontiguousarray(per_lane[lane]), *tail, want)
            np.testing.assert_array_equal(got[lane], want, err_msg=f"{name}, lane {lane}")
