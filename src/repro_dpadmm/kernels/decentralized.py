"""Kernels of the ZKL local solver (algorithms/decentralized.py): sparse products over the block matrix of the node
data, fused with the elementwise work around them, skipping the problems that no longer change.

A layout of local problems is a CSR matrix X (indptr, indices, data) whose row i is a sample of the block rowblk[i]
(a node, or in the layout of the unconverged problems a single problem) and whose columns [b d, (b + 1) d) hold the
features of block b; a per-problem vector is v (R, ncols) (one row per repeat; R = 1 in the problem layout) and a
per-sample array is (rows, R). `act` (R, nblocks) marks the problems worked on: a kernel computes the repeats of a
block in chunks and skips a chunk without an active problem (what it leaves there is stated per kernel). Every
problem's entries depend on its own entries alone, so the active problems' numbers do not depend on the mask.
weighted_sums gives the run's traces the node means of the loss; flat_rows builds the layout of the unconverged problems.

Every kernel sums in the order of the scipy/numpy code it replaces, so it equals its reference bit for bit:
X @ v (scipy's csr_matvec(s)) sums a row's entries in their stored order starting from 0; X^T @ u (a CSR transpose
from tocsr(), or a CSC view) sums every column over the rows in increasing order starting from 0; sigma(-z) and the
loss L(z) come from the caller, computed with numpy's vectorised exp and log1p (kernels/logistic_math.py: numba has
no vectorised exp to call inside a sweep), except the line search's rare direct differences (|s y x^T p| > 1),
which evaluate numpy's logaddexp(0, -z) with the C library's exp and log1p. The references `*_ref` are the
numpy/scipy expressions the solver used before the kernels existed;
tests/kernels/test_decentralized_kernels.py runs both on the same inputs.
"""

from __future__ import annotations

import math
from functools import wraps

import numba
import numba.core.config
import numpy as np
import scipy.sparse as sp

LOG2 = math.log(2.0)


def _slp(kernel):
    """Compile `kernel` with LLVM's SLP vectoriser, which packs a chunk's register accumulators into one vector
    register (numba leaves the pass off by default; turned on only while our own kernels compile, so no other
    compiled code changes). It packs identical elementwise operations and never reorders a sum, so the numbers stay
    bit-identical (tests/kernels); the Hessian-vector product of the five-node layout took 2.8 ms instead of 3.9."""
    @wraps(kernel.py_func)
    def call(*args):
        old = numba.core.config.SLP_VECTORIZE
        numba.core.config.SLP_VECTORIZE = 1
        try:
            return kernel(*args)
        finally:
            numba.core.config.SLP_VECTORIZE = old
    return call


# _dotW / _axpyW: a row's dot products with W consecutive repeats of vt (into acc) and its update of W consecutive
# repeats of ot (by acc), the W accumulators held in registers. Written out per width on purpose: a loop over a
# run-time number of repeats keeps them in memory and was twice as slow.
@numba.njit(inline="always")
def _dot10(j0, j1, data, indices, vt, Ru, k, acc):
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = 0.0
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        a0 += a * vt[e + np.uint64(0)]
        a1 += a * vt[e + np.uint64(1)]
        a2 += a * vt[e + np.uint64(2)]
        a3 += a * vt[e + np.uint64(3)]
        a4 += a * vt[e + np.uint64(4)]
        a5 += a * vt[e + np.uint64(5)]
        a6 += a * vt[e + np.uint64(6)]
        a7 += a * vt[e + np.uint64(7)]
        a8 += a * vt[e + np.uint64(8)]
        a9 += a * vt[e + np.uint64(9)]
    acc[k + np.uint64(0)] = a0
    acc[k + np.uint64(1)] = a1
    acc[k + np.uint64(2)] = a2
    acc[k + np.uint64(3)] = a3
    acc[k + np.uint64(4)] = a4
    acc[k + np.uint64(5)] = a5
    acc[k + np.uint64(6)] = a6
    acc[k + np.uint64(7)] = a7
    acc[k + np.uint64(8)] = a8
    acc[k + np.uint64(9)] = a9


@numba.njit(inline="always")
def _axpy10(j0, j1, data, indices, ot, Ru, k, acc):
    u0 = acc[k + np.uint64(0)]
    u1 = acc[k + np.uint64(1)]
    u2 = acc[k + np.uint64(2)]
    u3 = acc[k + np.uint64(3)]
    u4 = acc[k + np.uint64(4)]
    u5 = acc[k + np.uint64(5)]
    u6 = acc[k + np.uint64(6)]
    u7 = acc[k + np.uint64(7)]
    u8 = acc[k + np.uint64(8)]
    u9 = acc[k + np.uint64(9)]
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        ot[e + np.uint64(0)] += a * u0
        ot[e + np.uint64(1)] += a * u1
        ot[e + np.uint64(2)] += a * u2
        ot[e + np.uint64(3)] += a * u3
        ot[e + np.uint64(4)] += a * u4
        ot[e + np.uint64(5)] += a * u5
        ot[e + np.uint64(6)] += a * u6
        ot[e + np.uint64(7)] += a * u7
        ot[e + np.uint64(8)] += a * u8
        ot[e + np.uint64(9)] += a * u9


@numba.njit(inline="always")
def _dot8(j0, j1, data, indices, vt, Ru, k, acc):
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        a0 += a * vt[e + np.uint64(0)]
        a1 += a * vt[e + np.uint64(1)]
        a2 += a * vt[e + np.uint64(2)]
        a3 += a * vt[e + np.uint64(3)]
        a4 += a * vt[e + np.uint64(4)]
        a5 += a * vt[e + np.uint64(5)]
        a6 += a * vt[e + np.uint64(6)]
        a7 += a * vt[e + np.uint64(7)]
    acc[k + np.uint64(0)] = a0
    acc[k + np.uint64(1)] = a1
    acc[k + np.uint64(2)] = a2
    acc[k + np.uint64(3)] = a3
    acc[k + np.uint64(4)] = a4
    acc[k + np.uint64(5)] = a5
    acc[k + np.uint64(6)] = a6
    acc[k + np.uint64(7)] = a7


@numba.njit(inline="always")
def _axpy8(j0, j1, data, indices, ot, Ru, k, acc):
    u0 = acc[k + np.uint64(0)]
    u1 = acc[k + np.uint64(1)]
    u2 = acc[k + np.uint64(2)]
    u3 = acc[k + np.uint64(3)]
    u4 = acc[k + np.uint64(4)]
    u5 = acc[k + np.uint64(5)]
    u6 = acc[k + np.uint64(6)]
    u7 = acc[k + np.uint64(7)]
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        ot[e + np.uint64(0)] += a * u0
        ot[e + np.uint64(1)] += a * u1
        ot[e + np.uint64(2)] += a * u2
        ot[e + np.uint64(3)] += a * u3
        ot[e + np.uint64(4)] += a * u4
        ot[e + np.uint64(5)] += a * u5
        ot[e + np.uint64(6)] += a * u6
        ot[e + np.uint64(7)] += a * u7


@numba.njit(inline="always")
def _dot4(j0, j1, data, indices, vt, Ru, k, acc):
    a0 = a1 = a2 = a3 = 0.0
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        a0 += a * vt[e + np.uint64(0)]
        a1 += a * vt[e + np.uint64(1)]
        a2 += a * vt[e + np.uint64(2)]
        a3 += a * vt[e + np.uint64(3)]
    acc[k + np.uint64(0)] = a0
    acc[k + np.uint64(1)] = a1
    acc[k + np.uint64(2)] = a2
    acc[k + np.uint64(3)] = a3


@numba.njit(inline="always")
def _axpy4(j0, j1, data, indices, ot, Ru, k, acc):
    u0 = acc[k + np.uint64(0)]
    u1 = acc[k + np.uint64(1)]
    u2 = acc[k + np.uint64(2)]
    u3 = acc[k + np.uint64(3)]
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        ot[e + np.uint64(0)] += a * u0
        ot[e + np.uint64(1)] += a * u1
        ot[e + np.uint64(2)] += a * u2
        ot[e + np.uint64(3)] += a * u3


@numba.njit(inline="always")
def _dot2(j0, j1, data, indices, vt, Ru, k, acc):
    a0 = a1 = 0.0
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        a0 += a * vt[e + np.uint64(0)]
        a1 += a * vt[e + np.uint64(1)]
    acc[k + np.uint64(0)] = a0
    acc[k + np.uint64(1)] = a1


@numba.njit(inline="always")
def _axpy2(j0, j1, data, indices, ot, Ru, k, acc):
    u0 = acc[k + np.uint64(0)]
    u1 = acc[k + np.uint64(1)]
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        ot[e + np.uint64(0)] += a * u0
        ot[e + np.uint64(1)] += a * u1


@numba.njit(inline="always")
def _dot1(j0, j1, data, indices, vt, Ru, k, acc):
    a0 = 0.0
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        a0 += a * vt[e + np.uint64(0)]
    acc[k + np.uint64(0)] = a0


@numba.njit(inline="always")
def _axpy1(j0, j1, data, indices, ot, Ru, k, acc):
    u0 = acc[k + np.uint64(0)]
    for jj in range(j0, j1):
        a = data[jj]
        e = np.uint64(indices[jj]) * Ru + k
        ot[e + np.uint64(0)] += a * u0


# Lanes: the repeats are processed in chunks of 10, 8, 4, 2 and 1 consecutive repeats, a sweep over the rows per chunk,
# each row's accumulators of the chunk held in registers (a loop over a run-time number of repeats keeps them in memory
# and was twice as slow); unsigned indices spare numba's negative-index checks. The chunk width is a constant in every
# sweep (_row_sweeps makes a sweep per width). The 10-wide chunk is there for the items' 10 repeats: one sweep reads
# every row's entries and does its per-entry index work once for all ten, where chunks of 8 and 2 took two sweeps (the
# Hessian-vector product of the five-node layout took 1.8 ms instead of 3.1; a row loop calling both chunks per row was
# slower still, 4.4 ms). A chunk is worked on for the rows of a block when any of its problems is active; it is computed
# whole, which for the other problems of the chunk repeats what they computed before: every (column, repeat) sum runs
# over the same rows in the same order whatever the chunk width.
@numba.njit(cache=True)
def _chunks(act):
    """Start and width of the lane chunks covering repeats 0..R-1, and on[b, h]: chunk h holds an active problem of
    block b."""
    R, nb = act.shape
    start, width = [], []
    k = 0
    for W in (10, 8, 4, 2, 1):
        while R - k >= W:
            start.append(k)
            width.append(W)
            k += W
    on = np.zeros((nb, len(start)), np.bool_)
    for b in range(nb):
        for h in range(len(start)):
            for q in range(start[h], start[h] + width[h]):
                on[b, h] |= act[q, b]
    return np.array(start, np.uint64), np.array(width, np.int64), on


def _row_sweeps(W, dot, axpy):
    """The sweeps over the rows of one lane chunk of width W, for prod, hvp and grad, calling the W-wide lane
    helpers directly (a helper taking W and branching over every width multiplied the inlined code, and the compile
    time, by the number of widths)."""
    Wu = np.uint64(W)

    @numba.njit(inline="always")
    def prod_rows(indptr, indices, data, rowblk, on, h, k, vt, Ru, scale, out, acc):
        for i in range(indptr.size - 1):
            if on[rowblk[i], h]:
                dot(indptr[i], indptr[i + 1], data, indices, vt, Ru, k, acc)
                for q in range(k, k + Wu):
                    out[i, q] = scale[i] * acc[q]
            else:
                for q in range(k, k + Wu):
                    out[i, q] = 0.0

    @numba.njit(inline="always")
    def hvp_rows(indptr, indices, data, rowblk, on, h, k, vt, Ru, w, C, sg, ot, acc):
        for i in range(indptr.size - 1):
            b = rowblk[i]
            if on[b, h]:
                j0, j1 = indptr[i], indptr[i + 1]
                dot(j0, j1, data, indices, vt, Ru, k, acc)
                wi = w[i]
                for q in range(k, k + Wu):
                    s = sg[i, q]
                    acc[q] = (((C[b, q] * wi) * s) * (1.0 - s)) * acc[q]
                axpy(j0, j1, data, indices, ot, Ru, k, acc)

    @numba.njit(inline="always")
    def grad_rows(indptr, indices, data, rowblk, on, h, k, Ru, yw, sg, ot, acc):
        for i in range(indptr.size - 1):
            if on[rowblk[i], h]:
                nyw = -yw[i]
                for q in range(k, k + Wu):
                    acc[q] = nyw * sg[i, q]
                axpy(indptr[i], indptr[i + 1], data, indices, ot, Ru, k, acc)

    return prod_rows, hvp_rows, grad_rows


_prod_rows10, _hvp_rows10, _grad_rows10 = _row_sweeps(10, _dot10, _axpy10)
_prod_rows8, _hvp_rows8, _grad_rows8 = _row_sweeps(8, _dot8, _axpy8)
_prod_rows4, _hvp_rows4, _grad_rows4 = _row_sweeps(4, _dot4, _axpy4)
_prod_rows2, _hvp_rows2, _grad_rows2 = _row_sweeps(2, _dot2, _axpy2)
_prod_rows1, _hvp_rows1, _grad_rows1 = _row_sweeps(1, _dot1, _axpy1)


@_slp
@numba.njit(cache=True)
def prod(indptr, indices, data, rowblk, act, v, scale, out, vt):
    """out[i, k] = scale[i] * (x_i^T v_k) for the chunks holding an active problem; 0 elsewhere. out (rows, R);
    vt (ncols R,): work space."""
    R, ncols = v.shape
    Ru = np.uint64(R)
    for q in range(R):
        for c in range(ncols):
            vt[c * R + q] = v[q, c]
    start, width, on = _chunks(act)
    acc = np.empty(R)
    for h in range(start.size):
        k = start[h]
        if width[h] == 10:
            _prod_rows10(indptr, indices, data, rowblk, on, h, k, vt, Ru, scale, out, acc)
        elif width[h] == 8:
            _prod_rows8(indptr, indices, data, rowblk, on, h, k, vt, Ru, scale, out, acc)
        elif width[h] == 4:
            _prod_rows4(indptr, indices, data, rowblk, on, h, k, vt, Ru, scale, out, acc)
        elif width[h] == 2:
            _prod_rows2(indptr, indices, data, rowblk, on, h, k, vt, Ru, scale, out, acc)
        else:
            _prod_rows1(indptr, indices, data, rowblk, on, h, k, vt, Ru, scale, out, acc)


@_slp
@numba.njit(cache=True)
def hvp(indptr, indices, data, rowblk, act, w, C, sg, kap, d, v, out, vt, ot):
    """Hessian-vector product of the local objectives: out[k] = X^T (c_k * (X v_k)) + kap * v_k with the per-sample
    weight c = C w sigma(-z) (1 - sigma(-z)), for the chunks holding an active problem; kap * v_k elsewhere.
    C, kap (blocks, R): every problem's own (a lane of its own scale and penalty). out (R, ncols); vt, ot (ncols R,):
    work space."""
    R, ncols = v.shape
    Ru = np.uint64(R)
    for q in range(R):
        for c in range(ncols):
            vt[c * R + q] = v[q, c]
    ot[:] = 0.0
    start, width, on = _chunks(act)
    acc = np.empty(R)
    for h in range(start.size):
        k = start[h]
        if width[h] == 10:
            _hvp_rows10(indptr, indices, data, rowblk, on, h, k, vt, Ru, w, C, sg, ot, acc)
        elif width[h] == 8:
            _hvp_rows8(indptr, indices, data, rowblk, on, h, k, vt, Ru, w, C, sg, ot, acc)
        elif width[h] == 4:
            _hvp_rows4(indptr, indices, data, rowblk, on, h, k, vt, Ru, w, C, sg, ot, acc)
        elif width[h] == 2:
            _hvp_rows2(indptr, indices, data, rowblk, on, h, k, vt, Ru, w, C, sg, ot, acc)
        else:
            _hvp_rows1(indptr, indices, data, rowblk, on, h, k, vt, Ru, w, C, sg, ot, acc)
    for q in range(R):
        for c in range(ncols):
            out[q, c] = ot[c * R + q] + kap[c // d, q] * v[q, c]


@_slp
@numba.njit(cache=True)
def grad(indptr, indices, data, rowblk, act, yw, sg, C, kap, d, f, bvec, g, ot):
    """The gradient of the local objectives C X^T (-yw sg) + kap f + b into g (C, kap (blocks, R): every problem's
    own), for the chunks holding an active problem, from sg = sigma(-z) (the caller computes it with numpy's vectorised exp: numba has none to call inside
    the sweep); elsewhere g is left as it is (those problems have not moved). ot (ncols R,): work space."""
    R, ncols = f.shape
    Ru = np.uint64(R)
    ot[:] = 0.0
    start, width, on = _chunks(act)
    acc = np.empty(R)
    for h in range(start.size):
        k = start[h]
        if width[h] == 10:
            _grad_rows10(indptr, indices, data, rowblk, on, h, k, Ru, yw, sg, ot, acc)
        elif width[h] == 8:
            _grad_rows8(indptr, indices, data, rowblk, on, h, k, Ru, yw, sg, ot, acc)
        elif width[h] == 4:
            _grad_rows4(indptr, indices, data, rowblk, on, h, k, Ru, yw, sg, ot, acc)
        elif width[h] == 2:
            _grad_rows2(indptr, indices, data, rowblk, on, h, k, Ru, yw, sg, ot, acc)
        else:
            _grad_rows1(indptr, indices, data, rowblk, on, h, k, Ru, yw, sg, ot, acc)
    for c in range(ncols):
        b = c // d
        for h in range(start.size):
            if on[b, h]:
                for q in range(int(start[h]), int(start[h]) + width[h]):
                    g[q, c] = (ot[c * R + q] * C[b, q] + kap[b, q] * f[q, c]) + bvec[q, c]


# One copy of numpy's logaddexp(0, -z) per kernel module on purpose: numba's on-disk cache of a kernel does not
# notice a change to a compiled function it calls from another module; each copy is tested against numpy.
@numba.njit(cache=True)
def _loss(z):
    """numpy's logaddexp(0, -z) (npy_logaddexp with x = 0, y = -z)."""
    y = -z
    if y == 0.0:
        return LOG2
    tmp = 0.0 - y
    if tmp > 0:
        return 0.0 + math.log1p(math.exp(-tmp))
    if tmp <= 0:
        return y + math.log1p(math.exp(tmp))
    return tmp  # nan


@_slp
@numba.njit(cache=True)
def step_change(rowblk, s, zp, u, dl):
    """The margins' change u = s zp of a trial step (s[k, b] per problem, spread to its samples) and dl = u clipped
    to [-1, 1] (np.clip), the argument of expm1 in the line search."""
    for i in range(zp.shape[0]):
        b = rowblk[i]
        for k in range(zp.shape[1]):
            x = s[k, b] * zp[i, k]
            u[i, k] = x
            dl[i, k] = -1.0 if x < -1.0 else (1.0 if x > 1.0 else x)


@_slp
@numba.njit(cache=True)
def loss_change_sums(rowblk, w, z, u, dl, out):
    """out[b, k] = sum_{i in b} w_i dl[i, k] (rows in order), where dl[i, k] is replaced by L(z - u) - L(z) for the
    samples with |u| > 1 (the line search's direct difference far from the minimiser)."""
    out[:] = 0.0
    for i in range(z.shape[0]):
        b = rowblk[i]
        for k in range(z.shape[1]):
            x = dl[i, k]
            if abs(u[i, k]) > 1.0:
                x = _loss(z[i, k] - u[i, k]) - _loss(z[i, k])
            out[b, k] += w[i] * x


@numba.njit(cache=True)
def weighted_sums(rowblk, w, v, out):
    """out[b, k] = sum_{i in b} w_i v[i, k] (rows in order): with v = L(z), the node means of the logistic loss
    (P @ L(z))."""
    out[:] = 0.0
    for i in range(v.shape[0]):
        b = rowblk[i]
        for k in range(v.shape[1]):
            out[b, k] += w[i] * v[i, k]


@numba.njit(cache=True)
def block_absmax(rowblk, x, out):
    """out[b, k] = max_{i in b} |x[i, k]|: the largest margin change y x^T p of every problem (its full step's
    certificate in the solver's line search)."""
    out[:] = 0.0
    for i in range(x.shape[0]):
        b = rowblk[i]
        for k in range(x.shape[1]):
            a = abs(x[i, k])
            if a > out[b, k]:
                out[b, k] = a


@_slp
@numba.njit(cache=True)
def take_step(rowblk, s, zp, z):
    """z -= s zp in place (s[k, b] per problem, spread to its samples)."""
    for i in range(z.shape[0]):
        b = rowblk[i]
        for k in range(z.shape[1]):
            z[i, k] = z[i, k] - s[k, b] * zp[i, k]


@numba.njit(cache=True)
def flat_rows(indptr, indices, data, start, lens, d):
    """The layout of problems p = 0..P-1 (the solver's _Flat), problem p holding the rows start[p] ..
    start[p] + lens[p] - 1 of a block matrix (indptr, indices, data) with d columns per block: every row's entries in
    their order, moved to the columns [p d, (p + 1) d) of its problem. Returns rows (the rows taken, problem by problem),
    blk (the problem of every row) and the CSR arrays (ip, cols, vals) of the new matrix, index arrays of the input's
    dtypes."""
    nrows = 0
    for p in range(start.size):
        nrows += lens[p]
    rows, blk = np.empty(nrows, np.int64), np.empty(nrows, np.int64)
    ip = np.empty(nrows + 1, indptr.dtype)
    t = 0
    nnz = 0
    for p in range(start.size):
        for s in range(start[p], start[p] + lens[p]):
            rows[t], blk[t] = s, p
            nnz += indptr[s + 1] - indptr[s]
            t += 1
    cols, vals = np.empty(nnz, indices.dtype), np.empty(nnz)
    ip[0] = 0
    e = 0
    for t in range(nrows):
        s, off = rows[t], blk[t] * d
        for jj in range(indptr[s], indptr[s + 1]):
            cols[e] = off + indices[jj] % d
            vals[e] = data[jj]
            e += 1
        ip[t + 1] = e
    return rows, blk, ip, cols, vals


# --------------------------------------------------------------------------------------------------- references
# The solver's expressions before the kernels, over every problem (layout as above; C and kap (blocks, R) per problem).
def prod_ref(X, v, scale):
    """y x^T p: lay.y * lay.prod(p)."""
    return scale[:, None] * (X @ v.T)


def hvp_ref(X, rowblk, w, C, sg, kap, d, v):
    """lay.prod_T(c * lay.prod(v)) + kap * v with c = C w sigma(-z) (1 - sigma(-z)) (C of each sample's problem)."""
    c = C[rowblk] * w[:, None] * sg
    c *= 1.0 - sg
    return (X.T.tocsr() @ (c * (X @ v.T))).T + np.repeat(kap, d, axis=0).T * v


def grad_ref(X, yw, sg, C, kap, d, f, bvec):
    """lay.prod_T(-lay.yw * sg) * C + kap * f + b, with sg = sigma(-z)."""
    return (X.T.tocsr() @ (-yw[:, None] * sg)).T * np.repeat(C, d, axis=0).T + np.repeat(kap, d, axis=0).T * f + bvec


def spread_ref(rowblk, s):
    """Per-problem scalars s (R, blocks) to every sample: (rows, R) (lay.spread)."""
    return s[:, rowblk].T


def step_change_ref(rowblk, s, zp):
    u = spread_ref(rowblk, s) * zp
    return u, np.clip(u, -1.0, 1.0)


def loss_change_sums_ref(P, z, u, dl):
    """P @ dl (P[b, i] = w_i: lay.means) after the direct difference where |u| > 1."""
    dl = dl.copy()
    far = np.abs(u) > 1.0
    dl[far] = np.logaddexp(0.0, -(z[far] - u[far])) - np.logaddexp(0.0, -z[far])
    return P @ dl


def weighted_sums_ref(P, v):
    """P @ v (P[b, i] = w_i; with v = L(z), the run's traces before the kernels)."""
    return P @ v


def block_absmax_ref(rowblk, x):
    """max |x| over the samples of every block (0 for a block without samples), by numpy's maximum.at."""
    out = np.zeros((rowblk.max() + 1, x.shape[1]))
    np.maximum.at(out, rowblk, np.abs(x))
    return out


def take_step_ref(rowblk, s, zp, z):
    return z - spread_ref(rowblk, s) * zp


def _ranges(starts, lens):
    """The concatenated integer ranges [starts[k], starts[k] + lens[k])."""
    return np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(lens.sum())


def flat_rows_ref(X, start, lens, d):
    """(rows, blk, CSR matrix) of flat_rows, by numpy fancy indexing and scipy (_Flat before the kernel)."""
    import scipy.sparse as sp

    rows = _ranges(start, lens)
    blk = np.repeat(np.arange(start.size), lens)
    ip = X.indptr
    rl = ip[rows + 1] - ip[rows]
    ent = _ranges(ip[rows], rl)
    cols = np.repeat(blk, rl) * d + X.indices[ent] % d
    return rows, blk, sp.csr_matrix((X.data[ent], cols, np.concatenate([[0], np.cumsum(rl)])),
                                    shape=(rows.size, start.size * d))
