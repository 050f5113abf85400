"""Kernels of the mean logistic term of XU's problems (problems/logistic.MeanLogisticTerm: the smooth part f of the
fused lasso (11) and of its l2 form), f(x) = (1/n) sum_i ln(1 + exp(-m_i l_i^T x)).

The profile of XU's items: nearly all of their time is grad f for a batch of iterates, and most of that was
scipy's `expit` (about 23 ns per element, against 7 ns for the same formula compiled: scipy's ufunc loop is slow, not
the exponential). Three kernels, each with its numpy reference (`*_reference`: the code as it was):

* `sigmoid_neg_inplace(z)`: z <- 1 / (1 + exp(z)) = sigma(-z), the formula of scipy's `expit(-z)` with the same C
  library exponential, so bit-identical to it;
* `logistic_loss_inplace(z)`: z <- ln(1 + exp(-z)), numpy's `logaddexp(0, -z)` written out branch for branch
  (npy_logaddexp with the C library exp and log1p), so bit-identical to it;
* `csr_grad_sum(Xm, x)`: G = Xm^T sigma(-Xm x) for a CSR matrix Xm and iterates x (d, R) as columns, in one
  sweep over the rows (the margins of a row, their sigmoid, and the row's contribution to G), where scipy makes
  three passes and two (n, R) temporaries. The sums run in scipy's order (csr_matvecs over a row's
  stored entries; csc_matvecs of Xm^T adds the rows in order), so G is bit-identical to the reference.

No fastmath: it would reorder the sums and change the numbers.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import uint64
from scipy.special import expit

LOGE2 = math.log(2.0)  # numpy's NPY_LOGE2, the value of logaddexp(x, x) - x


@numba.njit(cache=True)
def _sigmoid_neg_flat(z):
    for i in range(z.size):
        z[i] = 1.0 / (1.0 + math.exp(z[i]))


def _flat(z: np.ndarray) -> np.ndarray:
    """A 1-d view of every element of z (C- or F-contiguous float64; the layout is kept, so that a reduction of the
    result sums in the same order as it did over numpy's output)."""
    if z.dtype != np.float64 or not (z.flags.c_contiguous or z.flags.f_contiguous) or not z.flags.writeable:
        raise ValueError("the in-place kernels need a writeable, C- or F-contiguous float64 array")
    return z.ravel(order="K")


def sigmoid_neg_inplace(z: np.ndarray) -> np.ndarray:
    """z <- sigma(-z) = 1 / (1 + e^z) in place; returns z."""
    _sigmoid_neg_flat(_flat(z))
    return z


def sigmoid_neg_reference(z: np.ndarray) -> np.ndarray:
    """scipy's expit(-z): what problems/logistic.sigmoid_neg computes."""
    return expit(-z)


# One copy of numpy's logaddexp(0, -z) per kernel module on purpose: numba's on-disk cache of a kernel does not
# notice a change to a compiled function it calls from another module; each copy is tested against numpy.
@numba.njit(cache=True)
def _logistic_loss_flat(z):
    for i in range(z.size):
        y = -z[i]                 # logaddexp(0, y), numpy's npy_logaddexp(x = 0, y) line for line
        if y == 0.0:
            z[i] = 0.0 + LOGE2
        else:
            tmp = 0.0 - y
            if tmp > 0:
                z[i] = 0.0 + math.log1p(math.exp(-tmp))
            elif tmp <= 0:
                z[i] = y + math.log1p(math.exp(tmp))
            else:                 # NaN
                z[i] = tmp


def logistic_loss_inplace(z: np.ndarray) -> np.ndarray:
    """z <- ln(1 + exp(-z)) in place; returns z."""
    _logistic_loss_flat(_flat(z))
    return z


def logistic_loss_reference(z: np.ndarray) -> np.ndarray:
    """numpy's logaddexp(0, -z): what problems/logistic.loss computes."""
    return np.logaddexp(0.0, -z)


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


FUSE_MIN_RUNS = 16  # below this many runs (but above 1) the fused sweep is no faster than scipy's two products


def csr_grad_sum(Xm, x: np.ndarray) -> np.ndarray:
    """G = Xm^T sigma(-Xm x): (d, R), for a scipy CSR matrix Xm (n, d) and iterates x (d, R) as columns.

    One fused sweep for R = 1 and R >= FUSE_MIN_RUNS; in between, scipy's products around the compiled sigmoid
    (no faster fused: the arithmetic of the short loops over runs dominates). Bit-identical to
    `csr_grad_sum_reference` on every path."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    R = x.shape[1]
    if 1 < R < FUSE_MIN_RUNS:
        s = sigmoid_neg_inplace(np.asarray(Xm @ x))
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
