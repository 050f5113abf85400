"""Binary logistic loss l(z) = ln(1 + e^{-z}) on margins z = b w^T a (docs/choices.md#numerical-conventions), batched.

Shapes: data `A` (..., m, d) and labels `b` (..., m) broadcast against weights `w` (..., d) on the leading axes, so
one call evaluates every agent and every repeat at once (e.g. A: (n, m, d), w: (R, n, d) -> (R, n)).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..kernels.logistic_math import loss_inplace, sigmoid_neg_inplace, sigmoid_neg_unchecked


def loss(z):
    """ln(1 + exp(-z)), stable for large |z|: a new array (numpy's vectorised exp and log1p, kernels/logistic_math)."""
    return loss_inplace(np.array(z, dtype=float))


def sigmoid_neg(z):
    """sigma(-z) = 1 / (1 + e^{z}), equals -l'(z): a new array (numpy's vectorised exp, kernels/logistic_math)."""
    return sigmoid_neg_inplace(np.array(z, dtype=float))


def margins(A, b, w):
    """b_j w^T a_j for every sample: (..., m)."""
    return b * np.einsum("...md,...d->...m", A, w)


def mean_loss(A, b, w):
    """(1/m) sum_j ln(1 + exp(-b_j w^T a_j)): (...)."""
    return loss(margins(A, b, w)).mean(axis=-1)


def mean_grad(A, b, w):
    """Gradient of mean_loss in w: -(1/m) sum_j b_j a_j sigma(-b_j w^T a_j): (..., d)."""
    s = sigmoid_neg(margins(A, b, w)) * b
    return -np.einsum("...m,...md->...d", s, A) / A.shape[-2]


def mean_hessian(A, b, w):
    """Hessian of mean_loss in w: (1/m) sum_j s_j (1 - s_j) a_j a_j^T: (..., d, d)."""
    s = sigmoid_neg(margins(A, b, w))
    return np.einsum("...m,...md,...me->...de", s * (1.0 - s), A, A) / A.shape[-2]


def error_rate(A, b, w):
    """Fraction misclassified by sign(w^T a), a tie counting as -1 (docs/choices.md#numerical-conventions): (...)."""
    pred = np.where(np.einsum("...md,...d->...m", A, w) > 0, 1.0, -1.0)
    return (pred != b).mean(axis=-1)


# Dense rows larger than a last-level cache (BLOCKED_ABOVE_BYTES) are swept in blocks of ROW_BLOCK_BYTES: a block
# stays in the cache between the product that gives its margins and the one that sums its gradient (or its loss), so
# the rows are read from memory once per gradient, not twice, and the (rows, R) margins never leave the cache. A
# Python loop over blocks (about 140 on bio_train's 72,876 rows), not over samples: it takes a third off XU's runs
# on bio_train. The blocks' sums are added in another order than one product's: round-off, amplified in runs at
# steps beyond Lemma 5's bound (benchmarks/tolerances.yaml). Smaller rows (ijcnn1's 8.8 MB) stay one block: the
# cache holds them between the two products anyway (blocking gains about a tenth there), and their numbers stay
# those of one product bit for bit.
ROW_BLOCK_BYTES = 1 << 19
BLOCKED_ABOVE_BYTES = 32 << 20


class MeanLogisticTerm:
    """f(x) = (1/n) sum_i ln(1 + exp(-m_i l_i^T x)) on training rows l_i (norm <= 1) and labels m_i in {-1, +1}: the
    smooth part of XU's problems (problems/fused_lasso.py, and its l2 form problems/l2_logistic.py).

    A base for frozen dataclasses with the fields X (n, d) (ndarray or CSR), y (n,) and lam; iterates x (..., d) with
    any leading (repeat) axes.
    """

    def _check_data(self) -> None:
        n = self.X.shape[0]
        if np.shape(self.y) != (n,):
            raise ValueError(f"y must have shape ({n},), got {np.shape(self.y)}")
        if not self.lam >= 0:
            raise ValueError(f"lambda must be >= 0, got {self.lam}")

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def L_f(self) -> float:
        """Lipschitz constant of grad f: 0.25 max_i ||l_i||^2 (docs/choices.md#xu-step-size)."""
        sq = self.X.multiply(self.X).sum(axis=1) if sp.issparse(self.X) else np.einsum("nd,nd->n", self.X, self.X)
        return 0.25 * float(np.max(sq))

    @property
    def gradient_bound(self) -> float:
        """c = max_i ||l_i||: every per-sample gradient m_i l_i sigma(-m_i l_i^T x) has norm below it (XU's c)."""
        return float(np.sqrt(4.0 * self.L_f))

    @cached_property
    def Xm(self):
        """Rows m_i l_i (labels folded in), so that margins are Xm x and grad f = -(1/n) Xm^T sigma(-Xm x)."""
        return self.X.multiply(self.y[:, None]).tocsr() if sp.issparse(self.X) else self.X * self.y[:, None]

    def grad(self, x: np.ndarray) -> np.ndarray:
        """grad f(x) = -(1/n) sum_i m_i l_i sigma(-m_i l_i^T x), for x of shape (..., d).

        Sparse rows: one compiled sweep (kernels/logistic_term.py, scipy's products and expit); dense rows: BLAS for
        both products and sigma(-margins) in place with numpy's vectorised exp (kernels/logistic_math.py)."""
        from ..kernels import logistic_term  # here, not above: the other users of this module need no numba

        x = np.asarray(x)
        cols = x.reshape(-1, self.d).T                                  # (d, R)
        if sp.issparse(self.Xm):
            G = logistic_term.csr_grad_sum(self.Xm, cols)
            return (-G.T / self.n).reshape(x.shape)
        G = np.zeros((cols.shape[1], self.d))
        with np.errstate(over="ignore"):  # e^z overflows to inf for z > 709: sigma(-z) = 0, its limit
            for rows in self.row_blocks:  # cache blocking (ROW_BLOCK_BYTES): a block is read once for both products
                Xb = self.Xm[rows]
                G += sigmoid_neg_unchecked(Xb @ cols).T @ Xb      # sigma(-margins) of the block's rows, (b, R)
        return (-G / self.n).reshape(x.shape)

    def grad_lanes(self, x: np.ndarray) -> np.ndarray:
        """`grad` of L lanes x (L, d) (the iterates of L settings of one run): (L, d). Sparse rows: one compiled
        sweep for all lanes (kernels/logistic_term.csr_grad_sum_lanes), lane l equal to `grad(x[l])` bit for bit;
        dense rows: `grad` itself."""
        if not sp.issparse(self.Xm):
            return self.grad(x)
        from ..kernels import logistic_term

        return -logistic_term.csr_grad_sum_lanes(self.Xm, x) / self.n

    def loss(self, x: np.ndarray, chunk: int = 64) -> np.ndarray:
        """f(x), for x of shape (..., d); chunks of `chunk` iterates bound the margin matrix (dense rows: and blocks
        of rows, as in `grad`)."""
        x = np.asarray(x)
        xs = x.reshape(-1, self.d)
        out = np.empty(len(xs))
        for k in range(0, len(xs), chunk):
            if sp.issparse(self.Xm):
                out[k:k + chunk] = loss_inplace(np.asarray(self.Xm @ xs[k:k + chunk].T)).mean(axis=0)
                continue
            total = np.zeros(len(xs[k:k + chunk]))
            for rows in self.row_blocks:
                total += loss_inplace(self.Xm[rows] @ xs[k:k + chunk].T).sum(axis=0)
            out[k:k + chunk] = total / self.n
        return out.reshape(x.shape[:-1])

    @cached_property
    def row_blocks(self) -> list[slice]:
        """The dense rows as slices of at most ROW_BLOCK_BYTES, in order; one slice when they are no larger than
        BLOCKED_ABOVE_BYTES (made once per problem: `grad` and `loss` run thousands of times)."""
        if self.Xm.nbytes <= BLOCKED_ABOVE_BYTES:
            return [slice(None)]
        b = max(64, ROW_BLOCK_BYTES // (8 * self.d))
        return [slice(a, a + b) for a in range(0, self.n, b)]
