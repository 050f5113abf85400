"""The compiled gradient sweep of XU's logistic term (problems/logistic.MeanLogisticTerm: the smooth part f of the
fused lasso (11) and of its l2 form), f(x) = (1/n) sum_i ln(1 + exp(-m_i l_i^T x)).

The profile of XU's items: nearly all of their time is grad f for a batch of iterates. For sparse rows,
`csr_grad_sum(Xm, x)`: G = Xm^T sigma(-Xm x) for a CSR matrix Xm and iterates x (d, R) as columns, in one sweep over
the rows (the margins of a row, their sigmoid, and the row's contribution to G), where scipy makes three passes and
two (n, R) temporaries. The sums run in scipy's order (csr_matvecs over a row's stored entries; csc_matvecs of
Xm^T adds the rows in order), and the sigmoid is scipy's expit formula with the C library's exp, so G is
bit-identical to `csr_grad_sum_reference`. (Dense rows and the loss use numpy's vectorised exp and log1p,
kernels/logistic_math.py: numba has no vectorised exp to call inside a sweep.)

No fastmath: it would reorder the sums and change the numbers.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import uint64
from scipy.special import expit

@numba.njit(cache=True)
def _sigmoid_neg_flat(z):
    for i in range(z.size):
        z[i] = 1.0 / (1.0 + math.exp(z[i]))


def _sigmoid_neg_c(z: np.ndarray) -> np.ndarray:
    """z <- sigma(-z) in place with the C library's exp, as the fused sweeps compute it: every width of the batch
    then gives a run the same gradient (kernels/logistic_math has the faster vectorised form for everything else)."""
    _sigmoid_neg_flat(z.ravel(order="K"))
    return z


@numba.njit(cache=True)
def _csr_grad_sum_one(indptr, indices, data, x, out):
    # Indices go through uint64: numba then skips its negative-index wraparound test (twice as fast here).
    for i in range(len(indptr) - 1):
        lo, hi = uint64(indptr[i]), uint64(indptr[i + 1])
        m = 0.0
        for jj in range(lo, hi):                  # margin of row i: scipy's csr_matvec order
            m += data[jj] * x[uint64(indices[jj])]
        s = 1.0 / (1.0 + math.exp(m))             # sigma(-margin), as expit(-margin)
        for jj in range(lo, hi):                  # G += s_i row_i: csc_matvec of Xm^T adds the rows in order
            out[uint64(indices[jj])] += data[jj] * s


@numba.njit(cache=True)
def _csr_grad_sum_many(indptr, indices, data, x, out):
    R = x.shape[1]
    m = np.empty(R)
    for i in range(len(indptr) - 1):
        lo, hi = uint64(indptr[i]), uint64(indptr[i + 1])
        for r in range(R):
            m[r] = 0.0
        for jj in range(lo, hi):                  # margins of row i: scipy's csr_matvecs order
            j, a = uint64(indices[jj]), data[jj]
            for r in range(R):
                m[r] += a * x[j, r]
        for r in range(R):                        # sigma(-margin), as expit(-margin)
            m[r] = 1.0 / (1.0 + math.exp(m[r]))
        for jj in range(lo, hi):                  # G += row_i^T s_i: csc_matvecs of Xm^T adds the rows in order
            j, a = uint64(indices[jj]), data[jj]
            for r in range(R):
                out[j, r] += a * m[r]


@numba.njit(cache=True)
def _csr_grad_sum_lanes(indptr, indices, data, x, out):
    # x, out (L, d): lane l's sums are _csr_grad_sum_one's on x[l], term for term; each row is read once for all
    # lanes (from cache after the first), four lanes at a time with one accumulator each (independent chains of
    # additions), the lanes beyond a multiple of four one by one
    L = x.shape[0]
    L4 = L - L % 4
    for i in range(len(indptr) - 1):
        lo, hi = uint64(indptr[i]), uint64(indptr[i + 1])
        for g in range(0, L4, 4):
            x0, x1, x2, x3 = x[g], x[g + 1], x[g + 2], x[g + 3]
            m0 = 0.0
            m1 = 0.0
            m2 = 0.0
            m3 = 0.0
            for jj in range(lo, hi):
                a, c = data[jj], uint64(indices[jj])
                m0 += a * x0[c]
                m1 += a * x1[c]
                m2 += a * x2[c]
                m3 += a * x3[c]
            s0 = 1.0 / (1.0 + math.exp(m0))
            s1 = 1.0 / (1.0 + math.exp(m1))
            s2 = 1.0 / (1.0 + math.exp(m2))
            s3 = 1.0 / (1.0 + math.exp(m3))
            o0, o1, o2, o3 = out[g], out[g + 1], out[g + 2], out[g + 3]
            for jj in range(lo, hi):
                a, c = data[jj], uint64(indices[jj])
                o0[c] += a * s0
                o1[c] += a * s1
                o2[c] += a * s2
                o3[c] += a * s3
        for lane in range(L4, L):
            xl, ol = x[lane], out[lane]
            m = 0.0
            for jj in range(lo, hi):
                m += data[jj] * xl[uint64(indices[jj])]
            s = 1.0 / (1.0 + math.exp(m))
            for jj in range(lo, hi):
                ol[uint64(indices[jj])] += data[jj] * s


def csr_grad_sum_lanes(Xm, x: np.ndarray) -> np.ndarray:
    """G = Xm^T sigma(-Xm x) for L lanes x (L, d) (rows: the iterates of L settings of one run): (L, d), one sweep
    over the rows for all lanes. Lane l equals `csr_grad_sum(Xm, x[l][:, None])[:, 0]` bit for bit."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    _csr_grad_sum_lanes(Xm.indptr, Xm.indices, Xm.data, x, out)
    return out


FUSE_MIN_RUNS = 16  # below this many runs (but above 1) the fused sweep is no faster than scipy's two products


def csr_grad_sum(Xm, x: np.ndarray) -> np.ndarray:
    """G = Xm^T sigma(-Xm x): (d, R), for a scipy CSR matrix Xm (n, d) and iterates x (d, R) as columns.

    One fused sweep for R = 1 and R >= FUSE_MIN_RUNS; in between, scipy's products around the compiled sigmoid
    (no faster fused: the arithmetic of the short loops over runs dominates). Bit-identical to
    `csr_grad_sum_reference` on every path."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    R = x.shape[1]
    if 1 < R < FUSE_MIN_RUNS:
        s = _sigmoid_neg_c(np.ascontiguousarray(Xm @ x))
        return (s.T @ Xm).T
    out = np.zeros_like(x)
    if R == 1:
        _csr_grad_sum_one(Xm.indptr, Xm.indices, Xm.data, x[:, 0], out[:, 0])
    else:
        _csr_grad_sum_many(Xm.indptr, Xm.indices, Xm.data, x, out)
    return out


def csr_grad_sum_reference(Xm, x: np.ndarray) -> np.ndarray:
    """The same with scipy: Xm^T expit(-(Xm x)), as MeanLogisticTerm.grad computed it (before its -1/n)."""
    s = expit(-np.asarray(Xm @ x))
    return (s.T @ Xm).T
