"""Binary logistic loss l(z) = ln(1 + e^{-z}) on margins z = b w^T a (SPEC §0.4), batched.

Shapes: data `A` (..., m, d) and labels `b` (..., m) broadcast against weights `w` (..., d) on the leading axes, so
one call evaluates every agent and every repeat at once (e.g. A: (n, m, d), w: (R, n, d) -> (R, n)).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit


def loss(z):
    """ln(1 + exp(-z)), stable for large |z|."""
    return np.logaddexp(0.0, -z)


def sigmoid_neg(z):
    """sigma(-z) = 1 / (1 + e^{z}) (scipy's expit: stable, and twice as fast as the tanh form); equals -l'(z)."""
    return expit(np.negative(z))


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
    """Fraction misclassified by sign(w^T a), a tie counting as -1 (SPEC §0.4): (...)."""
    pred = np.where(np.einsum("...md,...d->...m", A, w) > 0, 1.0, -1.0)
    return (pred != b).mean(axis=-1)
