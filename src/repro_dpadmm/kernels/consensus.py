"""Compiled kernels of the consensus (star network) solvers: products of the block-diagonal training data of
``algorithms.consensus.StarData`` with the iterates of some of its (repeat, agent) problems.

The data is one CSR matrix (indptr, indices, data) of shape (B m, B d): block k (k = 0..B-1) is rows k m .. k m + m - 1
and columns k d .. k d + d - 1. A problem p (a flat (repeat, agent) index) reads block ``p % B`` (B = R n when every
repeat has its own data draw, B = n when the repeats share one). Iterates are rows of 2-D arrays: w (P, d), per-sample
values (P, m). A kernel works on the problems listed in ``ids`` only, with compact arrays: row q of its inputs and
output belongs to problem ids[q] (pass ``ids = arange(P)`` for all of them).

Order of the floating-point operations (why the results equal scipy's bit for bit): scipy's CSR product sums each
row's terms in storage order starting from 0.0, and its CSC product (the transposed product on the same arrays)
adds each row's contributions to the output entries row by row in storage order, starting from 0.0. The kernels
make exactly those sums; `hvp` fuses the product, the weight and the transposed product in one sweep over each row
(the row's terms are read once, from cache for the second use), which changes no sum. The numpy references below
(``*_reference``) are the scipy expressions the solvers used before; tests/kernels/test_consensus.py compares them.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp


# Every index is unsigned inside the loops: numba wraps negative signed indices around (a branch per access), which
# made the loops twice as slow as scipy's; an unsigned index cannot be negative, so the check disappears.
@numba.njit(cache=True)
def margins(indptr, indices, data, n_blocks, ids, b, w, z):
    """z[q, j] = b[p % B, j] (a_j^T w[q]) for the rows j of the block of problem p = ids[q]."""
    m, d, nb, one = np.uint64(z.shape[1]), np.uint64(w.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        off, r0 = blk * d, blk * m
        wq, zq, bq = w[q], z[q], b[blk]
        for j in range(m):
            s = 0.0
            for k in range(np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])):
                s += data[k] * wq[np.uint64(indices[k]) - off]
            zq[j] = bq[j] * s


@numba.njit(cache=True)
def tproduct(indptr, indices, data, n_blocks, ids, u, out):
    """out[q] = sum_j u[q, j] a_j over the rows j of the block of problem ids[q] (scipy's CSC order)."""
    m, d, nb, one = np.uint64(u.shape[1]), np.uint64(out.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        off, r0 = blk * d, blk * m
        uq, oq = u[q], out[q]
        oq[:] = 0.0
        for j in range(m):
            uj = uq[j]
            for k in range(np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])):
                oq[np.uint64(indices[k]) - off] += data[k] * uj


@numba.njit(cache=True)
def hvp(indptr, indices, data, n_blocks, ids, c, v, out):
    """out[q] = sum_j c[q, j] a_j (a_j^T v[q]) over the rows j of the block of problem ids[q]: the data part of a
    Hessian-vector product, reading each row once."""
    m, d, nb, one = np.uint64(c.shape[1]), np.uint64(out.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        off, r0 = blk * d, blk * m
        vq, cq, oq = v[q], c[q], out[q]
        oq[:] = 0.0
        for j in range(m):
            lo, hi = np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])
            s = 0.0
            for k in range(lo, hi):
                s += data[k] * vq[np.uint64(indices[k]) - off]
            u = cq[j] * s
            for k in range(lo, hi):
                oq[np.uint64(indices[k]) - off] += data[k] * u


# --------------------------------------------------------------------------------------------------- references
def _block_rows(X: sp.csr_matrix, n_blocks: int, m: int, d: int, p: int):
    """Problem p's rows of the block-diagonal X as a CSR (m, d) with local columns."""
    blk = p % n_blocks
    rows = X[blk * m:(blk + 1) * m]
    return sp.csr_matrix((rows.data, rows.indices - blk * d, rows.indptr), shape=(m, d))


def margins_reference(X: sp.csr_matrix, n_blocks: int, ids, b, w, z) -> None:
    """numpy/scipy form of ``margins`` (one scipy product per problem)."""
    m, d = z.shape[1], w.shape[1]
    for q, p in enumerate(ids):
        z[q] = b[p % n_blocks] * (_block_rows(X, n_blocks, m, d, p) @ w[q])


def tproduct_reference(X: sp.csr_matrix, n_blocks: int, ids, u, out) -> None:
    """numpy/scipy form of ``tproduct`` (scipy's CSC product on the transposed view)."""
    m, d = u.shape[1], out.shape[1]
    for q, p in enumerate(ids):
        out[q] = _block_rows(X, n_blocks, m, d, p).T @ u[q]


def hvp_reference(X: sp.csr_matrix, n_blocks: int, ids, c, v, out) -> None:
    """numpy/scipy form of ``hvp``: the product, the weight and the transposed product one after the other."""
    m, d = c.shape[1], out.shape[1]
    for q, p in enumerate(ids):
        A = _block_rows(X, n_blocks, m, d, p)
        out[q] = A.T @ (c[q] * (A @ v[q]))
