"""kernels.decentralized: every kernel of the ZKL local solver equals, bit for bit, the numpy/scipy expression it
replaced (same summation order), in both layouts of the solver (a block per node with R repeats as columns, and a
block per problem with one column), for repeat counts that use every lane-chunk width (10, 8, 4, 2, 1) alone and
together, and with a mask of active problems."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from repro_dpadmm.kernels import decentralized as kd


def _layout(R, sizes=(7, 1, 30, 12), d=6, seed=0):
    """A CSR block matrix like NodeData.Xb: block b's rows hold their entries in columns [b d, (b + 1) d)."""
    rng = np.random.default_rng(seed)
    blk = np.repeat(np.arange(len(sizes)), sizes)
    n, nb = blk.size, len(sizes)
    dense = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.4)
    dense[0] = 0.0  # an empty row
    local = sp.csr_matrix(dense)
    cols = local.indices + np.repeat(blk * d, np.diff(local.indptr))
    X = sp.csr_matrix((local.data, cols, local.indptr), shape=(n, nb * d))
    w = 1.0 / np.asarray(sizes, float)[blk]
    y = rng.choice([-1.0, 1.0], n)
    act = rng.random((R, nb)) < 0.6
    act[:, 0] = True
    act[:, 1] = False  # a block with every problem converged
    state = dict(v=rng.standard_normal((R, nb * d)), z=rng.standard_normal((n, R)) * 3, kap=rng.uniform(0.5, 2, (nb, R)),
                 C=rng.uniform(1, 9, (nb, R)),
                 b=rng.standard_normal((R, nb * d)), s=rng.uniform(0, 1.5, (R, nb)), zp=rng.standard_normal((n, R)))
    state["z"][1, 0] = 40.0  # far in the tails of the sigmoid and the loss
    state["z"][2, 0] = -40.0
    return X, blk, w, y, act, d, state


def _chunk_on(act, blk):
    """(rows, R): the lane chunk (10, 8, 4, 2, 1 wide) of every (sample, repeat) holds an active problem of its block."""
    R = act.shape[0]
    start, width, on = kd._chunks(act)
    lane = np.zeros((act.shape[1], R), bool)
    for h in range(start.size):
        lane[:, int(start[h]):int(start[h]) + width[h]] = on[:, h:h + 1]
    return lane[blk], lane.T  # per sample (rows, R) and per problem (R, blocks)


def _work(st):
    """Work space as the solver passes it: reused, so filled with garbage here."""
    return np.full(st["v"].size, np.nan)


REPEATS = [1, 3, 7, 8, 10, 15, 29]  # chunks 10 | 8 | 4 + 2 + 1 | 10 + 4 + 1 | 10 + 10 + 8 + 1


@pytest.mark.parametrize("R", REPEATS)
def test_chunks_cover_every_repeat_once_and_mark_the_active_ones(R):
    X, blk, w, y, act, d, st = _layout(R)
    start, width, on = kd._chunks(act)
    assert width.sum() == R and np.array_equal(start, np.cumsum(width) - width)
    assert set(width.tolist()) <= {10, 8, 4, 2, 1} and list(width) == sorted(width, reverse=True)
    assert not on[1].any() and on[0].all()


@pytest.mark.parametrize("R", REPEATS)
def test_prod_equals_the_scipy_product(R):
    X, blk, w, y, act, d, st = _layout(R)
    out = np.full((X.shape[0], R), np.nan)
    kd.prod(X.indptr, X.indices, X.data, blk, act, st["v"], y, out, _work(st))
    ref = kd.prod_ref(X, st["v"], y)
    on, _ = _chunk_on(act, blk)
    assert np.array_equal(out[on], ref[on]) and np.all(out[~on] == 0.0)
    kd.prod(X.indptr, X.indices, X.data, blk, np.ones_like(act), st["v"], y, out, _work(st))
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("R", REPEATS)
def test_hvp_equals_the_two_scipy_products_around_the_hessian_weight(R):
    X, blk, w, y, act, d, st = _layout(R)
    sg = 1.0 / (1.0 + np.exp(st["z"]))
    out = np.full(st["v"].shape, np.nan)
    kd.hvp(X.indptr, X.indices, X.data, blk, act, w, st["C"], sg, st["kap"], d, st["v"], out, _work(st), _work(st))
    ref = kd.hvp_ref(X, blk, w, st["C"], sg, st["kap"], d, st["v"])
    _, on = _chunk_on(act, blk)
    on = np.repeat(on, d, axis=1)
    assert np.array_equal(out[on], ref[on])
    assert np.array_equal(out[~on], (np.repeat(st["kap"], d, axis=0).T * st["v"])[~on])
    kd.hvp(X.indptr, X.indices, X.data, blk, np.ones_like(act), w, st["C"], sg, st["kap"], d, st["v"], out, _work(st), _work(st))
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("R", REPEATS)
def test_grad_equals_the_transposed_product(R):
    X, blk, w, y, act, d, st = _layout(R)
    sg = 1.0 / (1.0 + np.exp(st["z"]))
    g = np.full(st["v"].shape, -1.0)
    kd.grad(X.indptr, X.indices, X.data, blk, act, y * w, sg, st["C"], st["kap"], d, st["v"], st["b"], g, _work(st))
    g_ref = kd.grad_ref(X, y * w, sg, st["C"], st["kap"], d, st["v"], st["b"])
    on_s, on_p = _chunk_on(act, blk)
    on_p = np.repeat(on_p, d, axis=1)
    assert np.array_equal(g[on_p], g_ref[on_p]) and np.all(g[~on_p] == -1.0)   # the rest left as they were
    kd.grad(X.indptr, X.indices, X.data, blk, np.ones_like(act), y * w, sg, st["C"], st["kap"], d, st["v"],
            st["b"], g, _work(st))
    assert np.array_equal(g, g_ref)


@pytest.mark.parametrize("R", REPEATS)
def test_line_search_kernels_equal_numpy(R):
    X, blk, w, y, act, d, st = _layout(R)
    n = X.shape[0]
    u, dl = np.empty((n, R)), np.empty((n, R))
    kd.step_change(blk, st["s"], st["zp"], u, dl)
    u_ref, dl_ref = kd.step_change_ref(blk, st["s"], st["zp"])
    assert np.array_equal(u, u_ref) and np.array_equal(dl, dl_ref)
    assert (np.abs(u) > 1).any() and (np.abs(u) < 1).any()  # both branches of the loss change are exercised
    sg = 1.0 / (1.0 + np.exp(st["z"]))
    dl = np.log1p(sg * np.expm1(dl))
    P = sp.csr_matrix((w, (blk, np.arange(n))), shape=(blk.max() + 1, n))
    out = np.empty((blk.max() + 1, R))
    kd.loss_change_sums(blk, w, st["z"], u, dl, out)
    assert np.array_equal(out, kd.loss_change_sums_ref(P, st["z"], u, dl))
    z = st["z"].copy()
    kd.take_step(blk, st["s"], st["zp"], z)
    assert np.array_equal(z, kd.take_step_ref(blk, st["s"], st["zp"], st["z"]))


@pytest.mark.parametrize("R", [1, 10])
def test_block_absmax_equals_numpy(R):
    X, blk, w, y, act, d, st = _layout(R)
    out = np.full((blk.max() + 1, R), np.nan)
    kd.block_absmax(blk, st["zp"], out)
    assert np.array_equal(out, kd.block_absmax_ref(blk, st["zp"])) and np.all(out > 0)


def test_loss_is_numpys_logaddexp_bit_for_bit():
    z = np.concatenate([np.random.default_rng(1).standard_normal(20000) * 30, [0.0, -0.0, 800.0, -800.0, 1e-300]])
    assert all(kd._loss(x) == np.logaddexp(0.0, -x) for x in z)


@pytest.mark.parametrize("R", [1, 10])
def test_weighted_sums_equal_the_node_means(R):
    X, blk, w, y, act, d, st = _layout(R)
    n = X.shape[0]
    P = sp.csr_matrix((w, (blk, np.arange(n))), shape=(blk.max() + 1, n))
    z = st["z"] * 10  # both tails of the loss, and exact zeros
    z[3] = 0.0
    v = np.logaddexp(0.0, -z)
    out = np.full((blk.max() + 1, R), np.nan)
    kd.weighted_sums(blk, w, v, out)
    assert np.array_equal(out, kd.weighted_sums_ref(P, v))


def test_flat_rows_equal_the_fancy_indexed_copy():
    X, blk, w, y, act, d, st = _layout(1, sizes=(7, 1, 30, 12, 5))
    B = np.bincount(blk)
    start = np.cumsum(B) - B
    pick = np.array([2, 0, 2, 4, 1])  # problems at nodes 2, 0, 2 again (another repeat), 4 and the one-sample node
    rows, k, ip, cols, vals = kd.flat_rows(X.indptr, X.indices, X.data, start[pick], B[pick], d)
    rows_ref, k_ref, Xf = kd.flat_rows_ref(X, start[pick], B[pick], d)
    assert np.array_equal(rows, rows_ref) and np.array_equal(k, k_ref)
    assert np.array_equal(ip, Xf.indptr) and np.array_equal(cols, Xf.indices) and np.array_equal(vals, Xf.data)
    assert ip.dtype == X.indptr.dtype and cols.dtype == X.indices.dtype  # the kernels' signatures stay the same
