"""Compiled kernels of the consensus (star network) solvers: products of the block-diagonal training data of
``algorithms.consensus.StarData`` with the iterates of some of its (repeat, agent) problems.

The data is one CSR matrix (indptr, indices, data) of shape (B m, B d): block k (k = 0..B-1) is rows k m .. k m + m - 1
and columns k d .. k d + d - 1. The kernels take its row pointers and values with `cols`, each stored entry's column
within its block (indices - k d; ``local_columns``): for d <= 256 one byte per entry instead of four, a quarter less
memory per sweep and no offset per access (7-15% faster sweeps on Adult), the same arithmetic. A problem p (a flat
(repeat, agent) index) reads block ``p % B`` (B = R n when every repeat has its own data draw, B = n when the repeats
share one). Iterates are rows of 2-D arrays: w (P, d), per-sample values (P, m). A kernel works on the problems
listed in ``ids`` only, with compact arrays: row q of its inputs and output belongs to problem ids[q] (pass
``ids = arange(P)`` for all of them).

Order of the floating-point operations (why the results equal scipy's bit for bit): scipy's CSR product sums each
row's terms in storage order starting from 0.0, and its CSC product (the transposed product on the same arrays)
adds each row's contributions to the output entries row by row in storage order, starting from 0.0. The kernels
make exactly those sums; `hvp` fuses the product, the weight and the transposed product in one sweep over each row
(the row's terms are read once, from cache for the second use), which changes no sum. The numpy references below
(``*_reference``) are the scipy expressions the solvers used before; tests/kernels/test_consensus_kernels.py compares
them.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp
from scipy.special import expit


def local_columns(X: sp.csr_matrix, n_blocks: int, m: int, d: int) -> np.ndarray:
    """The column of every stored entry of the block-diagonal X (n_blocks m, n_blocks d) within its block, in the
    smallest unsigned type that holds d - 1 (uint8 for d <= 256). Raises if an entry lies outside its block."""
    blk = np.repeat(np.arange(n_blocks * m) // m, np.diff(X.indptr))
    cols = X.indices - blk * d
    if cols.size and (cols.min() < 0 or cols.max() >= d):
        raise ValueError("the matrix is not block diagonal with blocks of (m, d)")
    dtype = np.uint8 if d <= 2 ** 8 else np.uint16 if d <= 2 ** 16 else np.uint32
    return cols.astype(dtype)


# Every index is unsigned inside the loops: numba wraps negative signed indices around (a branch per access), which
# made the loops twice as slow as scipy's; an unsigned index cannot be negative, so the check disappears.
@numba.njit(cache=True)
def margins(indptr, cols, data, n_blocks, ids, b, w, z):
    """z[q, j] = b[p % B, j] (a_j^T w[q]) for the rows j of the block of problem p = ids[q]."""
    m, d, nb, one = np.uint64(z.shape[1]), np.uint64(w.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        wq, zq, bq = w[q], z[q], b[blk]
        for j in range(m):
            s = 0.0
            for k in range(np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])):
                s += data[k] * wq[cols[k]]
            zq[j] = bq[j] * s


@numba.njit(cache=True)
def tproduct(indptr, cols, data, n_blocks, ids, u, out):
    """out[q] = sum_j u[q, j] a_j over the rows j of the block of problem ids[q] (scipy's CSC order)."""
    m, d, nb, one = np.uint64(u.shape[1]), np.uint64(out.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        uq, oq = u[q], out[q]
        oq[:] = 0.0
        for j in range(m):
            uj = uq[j]
            for k in range(np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])):
                oq[cols[k]] += data[k] * uj


@numba.njit(cache=True)
def neg_b_tproduct(indptr, cols, data, n_blocks, ids, b, s, out):
    """out[q] = sum_j u_j a_j with u_j = (-b[p % B, j]) s[q, j] (p = ids[q]): ``tproduct`` of ``-b * s`` without
    forming the weights (the same products, so bit for bit the same sums)."""
    m, d, nb, one = np.uint64(s.shape[1]), np.uint64(out.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        sq, bq, oq = s[q], b[blk], out[q]
        oq[:] = 0.0
        for j in range(m):
            uj = -bq[j] * sq[j]
            for k in range(np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])):
                oq[cols[k]] += data[k] * uj


@numba.njit(cache=True)
def clipped_grad_sum(indptr, cols, data, n_blocks, ids, b, z, row_norms, clip, out):
    """out[q] = sum_j u_j a_j with u_j = -b_j s_j min(1, clip / max(s_j ||a_j||, 1e-300)), s_j = 1 / (1 + e^z[q, j])
    (scipy's expit(-z) with the C library's exp), over the rows of the block of problem p = ids[q]: the sum of the
    clipped per-example logistic gradients of DPSGD at margins z, as ``algorithms.sgd`` wrote it in numpy
    (``clipped_grad_sum_reference``), in one sweep. clip = inf switches the clipping off (the scale is then exactly
    1.0)."""
    m, d, nb, one = np.uint64(z.shape[1]), np.uint64(out.shape[1]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        zq, bq, nq, oq = z[q], b[blk], row_norms[blk], out[q]
        oq[:] = 0.0
        for j in range(m):
            s = 1.0 / (1.0 + math.exp(zq[j]))
            t = s * nq[j]
            t = t if t >= 1e-300 else 1e-300   # np.maximum(t, 1e-300) (t is never NaN: s in [0, 1])
            c = clip / t
            c = c if c < 1.0 else 1.0          # np.minimum(1.0, c)
            uj = -bq[j] * (s * c)
            for k in range(np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])):
                oq[cols[k]] += data[k] * uj


# ---- lanes: L settings of one run (e.g. step scales) on the same data, iterates (L, P, d), per-sample values (L, P, m).
# Each block row is read once for all L lanes (from cache for the second and later lanes), four lanes at a time with
# one accumulator each (four independent chains of additions instead of one: 1.4-1.6x the single-lane kernels'
# throughput at five lanes on Adult), the lanes beyond a multiple of four one at a time. Every lane's sums are the
# single-lane kernel's, term for term in the same order, so lane l of a lanes kernel equals the single-lane kernel on
# lane l's arrays bit for bit (tests/kernels/test_consensus_kernels.py).
@numba.njit(cache=True)
def margins_lanes(indptr, cols, data, n_blocks, ids, b, w, z):
    """z[l, q, j] = b[p % B, j] (a_j^T w[l, q]) for every lane l and the rows j of the block of problem p = ids[q]:
    ``margins`` of each lane, reading each row once."""
    L = w.shape[0]
    L4 = L - L % 4
    m, nb, one = np.uint64(z.shape[2]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        bq = b[blk]
        for j in range(m):
            lo, hi = np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])
            for g in range(0, L4, 4):
                w0, w1, w2, w3 = w[g, q], w[g + 1, q], w[g + 2, q], w[g + 3, q]
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                for k in range(lo, hi):
                    a, c = data[k], cols[k]
                    s0 += a * w0[c]
                    s1 += a * w1[c]
                    s2 += a * w2[c]
                    s3 += a * w3[c]
                z[g, q, j] = bq[j] * s0
                z[g + 1, q, j] = bq[j] * s1
                z[g + 2, q, j] = bq[j] * s2
                z[g + 3, q, j] = bq[j] * s3
            for lane in range(L4, L):
                wq = w[lane, q]
                s = 0.0
                for k in range(lo, hi):
                    s += data[k] * wq[cols[k]]
                z[lane, q, j] = bq[j] * s


@numba.njit(cache=True)
def neg_b_tproduct_lanes(indptr, cols, data, n_blocks, ids, b, s, out):
    """out[l, q] = sum_j (-b[p % B, j]) s[l, q, j] a_j (p = ids[q]): ``neg_b_tproduct`` of each lane, reading each
    row once."""
    L = s.shape[0]
    L4 = L - L % 4
    m, nb, one = np.uint64(s.shape[2]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        bq = b[blk]
        for lane in range(L):
            out[lane, q, :] = 0.0
        for j in range(m):
            lo, hi = np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])
            for g in range(0, L4, 4):
                o0, o1, o2, o3 = out[g, q], out[g + 1, q], out[g + 2, q], out[g + 3, q]
                u0 = -bq[j] * s[g, q, j]
                u1 = -bq[j] * s[g + 1, q, j]
                u2 = -bq[j] * s[g + 2, q, j]
                u3 = -bq[j] * s[g + 3, q, j]
                for k in range(lo, hi):
                    a, c = data[k], cols[k]
                    o0[c] += a * u0
                    o1[c] += a * u1
                    o2[c] += a * u2
                    o3[c] += a * u3
            for lane in range(L4, L):
                uj = -bq[j] * s[lane, q, j]
                oq = out[lane, q]
                for k in range(lo, hi):
                    oq[cols[k]] += data[k] * uj


@numba.njit(inline="always")
def _clipped_weight(z, bj, nj, clip):
    """-b_j s_j min(1, clip / max(s_j ||a_j||, 1e-300)), s_j = 1 / (1 + e^z): ``clipped_grad_sum``'s row weight."""
    s = 1.0 / (1.0 + math.exp(z))
    t = s * nj
    t = t if t >= 1e-300 else 1e-300
    c = clip / t
    c = c if c < 1.0 else 1.0
    return -bj * (s * c)


@numba.njit(cache=True)
def clipped_grad_sum_lanes(indptr, cols, data, n_blocks, ids, b, z, row_norms, clip, out):
    """out[l, q] = ``clipped_grad_sum`` of lane l's margins z[l, q] (the same arithmetic per lane), reading each row
    once, four lanes at a time."""
    L = z.shape[0]
    L4 = L - L % 4
    m, nb, one = np.uint64(z.shape[2]), np.uint64(n_blocks), np.uint64(1)
    for q in range(ids.size):
        blk = np.uint64(ids[q]) % nb
        r0 = blk * m
        bq, nq = b[blk], row_norms[blk]
        for lane in range(L):
            out[lane, q, :] = 0.0
        for j in range(m):
            lo, hi = np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])
            for g in range(0, L4, 4):
                o0, o1, o2, o3 = out[g, q], out[g + 1, q], out[g + 2, q], out[g + 3, q]
                u0 = _clipped_weight(z[g, q, j], bq[j], nq[j], clip)
                u1 = _clipped_weight(z[g + 1, q, j], bq[j], nq[j], clip)
                u2 = _clipped_weight(z[g + 2, q, j], bq[j], nq[j], clip)
                u3 = _clipped_weight(z[g + 3, q, j], bq[j], nq[j], clip)
                for k in range(lo, hi):
                    a, c = data[k], cols[k]
                    o0[c] += a * u0
                    o1[c] += a * u1
                    o2[c] += a * u2
                    o3[c] += a * u3
            for lane in range(L4, L):
                uj = _clipped_weight(z[lane, q, j], bq[j], nq[j], clip)
                oq = out[lane, q]
                for k in range(lo, hi):
                    oq[cols[k]] += data[k] * uj


@numba.njit(inline="always")
def _block_hvp(indptr, cols, data, blk, m, d, cq, vq, oq):
    """oq = sum_j cq[j] a_j (a_j^T vq) over the m rows j of block blk, reading each row once."""
    r0, one = blk * m, np.uint64(1)
    oq[:] = 0.0
    for j in range(m):
        lo, hi = np.uint64(indptr[r0 + j]), np.uint64(indptr[r0 + j + one])
        s = 0.0
        for k in range(lo, hi):
            s += data[k] * vq[cols[k]]
        u = cq[j] * s
        for k in range(lo, hi):
            oq[cols[k]] += data[k] * u


@numba.njit(cache=True)
def hvp(indptr, cols, data, n_blocks, ids, c, v, out):
    """out[q] = sum_j c[q, j] a_j (a_j^T v[q]) over the rows j of the block of problem ids[q]: the data part of a
    Hessian-vector product, reading each row once."""
    m, d, nb = np.uint64(c.shape[1]), np.uint64(out.shape[1]), np.uint64(n_blocks)
    for q in range(ids.size):
        _block_hvp(indptr, cols, data, np.uint64(ids[q]) % nb, m, d, c[q], v[q], out[q])


# numpy sums a contiguous range of at most this many terms with eight interleaved accumulators (larger ranges are
# split in two, recursively); the kernels below take d <= PAIRWISE_BLOCK (numba's on-disk cache cannot hold the
# recursive form), callers fall back to the numpy reference above it
PAIRWISE_BLOCK = 128


@numba.njit(cache=True)
def pairwise_sum(a):
    """numpy's sum (``np.add.reduce``) of a contiguous 1-D float64 array of at most PAIRWISE_BLOCK terms, in
    numpy's order: eight interleaved accumulators, combined pairwise, then the remainder; from 0.0 like numpy."""
    n = a.size
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return 0.0 + res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - (n % 8):
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[i]
        i += 1
    return 0.0 + res


@numba.njit(cache=True)
def cg_step(indptr, cols, data, n_blocks, ids, c, m_div, kappa, first, p, r, q, rr, rr_new, target):
    """One iteration of conjugate gradients on H = (1/m) A^T diag(c) A + kappa I for every problem ids[q] at once
    (compact rows), as ``algorithms.consensus`` wrote it in numpy: unless `first`, q <- r + (rr_new / rr) q and
    rr <- rr_new (the direction update of the previous iteration); then Hq = hvp(q) / m + kappa q,
    a = rr / q^T H q (0 unless q^T H q > 0), p += a q, r -= a Hq, rr_new = r^T r. Sums of d terms in numpy's order
    (``pairwise_sum``; d <= PAIRWISE_BLOCK). Returns True when every problem has rr_new <= target."""
    d = p.shape[1]
    m, du, nb = np.uint64(c.shape[1]), np.uint64(d), np.uint64(n_blocks)
    Hq = np.empty(d)
    prod = np.empty(d)
    done = True
    for i in range(ids.size):
        qi, ri, pi, ci = q[i], r[i], p[i], c[i]
        if not first:
            beta = rr_new[i] / rr[i] if rr[i] > 0 else 0.0
            for k in range(d):
                qi[k] = ri[k] + beta * qi[k]
            rr[i] = rr_new[i]
        _block_hvp(indptr, cols, data, np.uint64(ids[i]) % nb, m, du, ci, qi, Hq)  # Hq = data part of H q
        for k in range(d):
            Hq[k] = Hq[k] / m_div + kappa * qi[k]
            prod[k] = qi[k] * Hq[k]
        qHq = pairwise_sum(prod)
        a = rr[i] / qHq if qHq > 0 else 0.0
        for k in range(d):
            pi[k] += a * qi[k]
            ri[k] -= a * Hq[k]
            prod[k] = ri[k] * ri[k]
        rr_new[i] = pairwise_sum(prod)
        if not rr_new[i] <= target[i]:
            done = False
    return done


@numba.njit(cache=True)
def misclassified(indptr, indices, data, W, y, n_rows, counts):
    """counts[r, a] = the number of rows i of block r (rows r n_rows .. r n_rows + n_rows - 1 of the CSR X) with
    (x_i^T W[:, a] > 0) != (y[i] > 0): the test errors of n models at once without storing the scores. Each score
    is summed as scipy's product of X with the dense W sums it (an axpy per non-zero, from 0.0, in storage order),
    with the loop over the n models innermost (independent sums, vectorisable)."""
    n, one = W.shape[1], np.uint64(1)
    o = np.empty(n)
    counts[:] = 0
    if n == 1:  # one model per block (e.g. the global w^k): the same sums without the loop over models
        for i in range(np.uint64(y.size)):
            s = 0.0
            for k in range(np.uint64(indptr[i]), np.uint64(indptr[i + one])):
                s += data[k] * W[np.uint64(indices[k]), 0]
            if (s > 0) != (y[i] > 0):
                counts[i // np.uint64(n_rows), 0] += 1
        return
    for i in range(np.uint64(y.size)):
        o[:] = 0.0
        for k in range(np.uint64(indptr[i]), np.uint64(indptr[i + one])):
            v = data[k]
            wk = W[np.uint64(indices[k])]
            for a in range(n):
                o[a] += v * wk[a]
        r = i // np.uint64(n_rows)
        pos = y[i] > 0
        for a in range(n):
            if (o[a] > 0) != pos:
                counts[r, a] += 1


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


def neg_b_tproduct_reference(X: sp.csr_matrix, n_blocks: int, ids, b, s, out) -> None:
    """numpy/scipy form of ``neg_b_tproduct``."""
    tproduct_reference(X, n_blocks, ids, -b[np.asarray(ids) % n_blocks] * s, out)


def clipped_grad_sum_reference(X: sp.csr_matrix, n_blocks: int, ids, b, z, row_norms, clip, out) -> None:
    """numpy/scipy form of ``clipped_grad_sum`` (algorithms.sgd.local_gradients as it was, before its 1/m)."""
    blk = np.asarray(ids) % n_blocks
    s = expit(-z)
    s = s * np.minimum(1.0, clip / np.maximum(s * row_norms[blk], 1e-300))
    tproduct_reference(X, n_blocks, ids, -b[blk] * s, out)


def hvp_reference(X: sp.csr_matrix, n_blocks: int, ids, c, v, out) -> None:
    """numpy/scipy form of ``hvp``: the product, the weight and the transposed product one after the other."""
    m, d = c.shape[1], out.shape[1]
    for q, p in enumerate(ids):
        A = _block_rows(X, n_blocks, m, d, p)
        out[q] = A.T @ (c[q] * (A @ v[q]))


def pairwise_sum_reference(a) -> float:
    """numpy form of ``pairwise_sum``."""
    return float(np.add.reduce(a))


def cg_step_reference(X: sp.csr_matrix, n_blocks: int, ids, c, m_div, kappa, first, p, r, q, rr, rr_new,
                      target) -> bool:
    """numpy form of ``cg_step`` (the CG loop body as it was written in numpy; updates the arrays in place)."""
    if not first:
        q[:] = r + np.divide(rr_new, rr, out=np.zeros_like(rr), where=rr > 0)[:, None] * q
        rr[:] = rr_new
    Hq = np.empty_like(q)
    hvp_reference(X, n_blocks, ids, c, q, Hq)
    Hq = Hq / m_div + kappa * q
    qHq = (q * Hq).sum(-1)
    a = np.divide(rr, qHq, out=np.zeros_like(rr), where=qHq > 0)[:, None]
    p += a * q
    r -= a * Hq
    rr_new[:] = (r * r).sum(-1)
    return bool(np.all(rr_new <= target))


def misclassified_reference(X: sp.csr_matrix, W, y, n_rows, counts) -> None:
    """scipy/numpy form of ``misclassified``."""
    s = (X @ W).reshape(-1, n_rows, W.shape[1])
    counts[:] = np.count_nonzero((s > 0) != (y.reshape(-1, n_rows) > 0)[..., None], axis=-2)
