"""l2-regularised logistic regression in XU's two-block ADMM form (beyond/frontier):

    min_{x, y} (1/n) sum_i log(1 + exp(-m_i l_i^T x)) + (lambda/2) ||y||^2   s.t.  x - y = 0,

i.e. XU's problem (2) with A = I, B = -I, c = 0 and g = (lambda/2)||.||^2 in place of the fused-lasso penalty of (11).
Its minimiser is that of HUANG's l2 objective, mean loss + (lambda/2)||w||^2 with lambda = HUANG's lambda/n, so the
XU algorithms (algorithms/linearized.py) solve the same problem as every other method of the frontier. The y-step
(3) becomes the prox of g: y_t = rho (x_{t-1} + u_{t-1}) / (lambda + rho).

Duck-types `FusedLasso` where `linearized.run` needs it (A, AtA, grad, lam, n, d) and adds `prox_g`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from . import logistic


@dataclass(frozen=True)
class L2Logistic:
    X: object          # (n, d) training rows of norm <= 1 (ndarray or CSR)
    y: np.ndarray      # (n,) labels in {-1, +1}
    lam: float         # weight of (1/2)||.||^2 next to the MEAN loss

    def __post_init__(self):
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

    @cached_property
    def A(self) -> sp.csr_matrix:
        return sp.identity(self.d, format="csr")

    @property
    def AtA(self) -> np.ndarray:
        return np.eye(self.d)

    @property
    def norm_AtA(self) -> float:
        return 1.0

    @property
    def L_f(self) -> float:
        """0.25 max_i ||l_i||^2, the Lipschitz bound of grad f that XU's step-size rule uses (SPEC §6.6)."""
        sq = self.X.multiply(self.X).sum(axis=1) if sp.issparse(self.X) else np.einsum("nd,nd->n", self.X, self.X)
        return 0.25 * float(np.max(sq))

    def default_eta(self, rho: float) -> float:
        """eta = 1 / (L_f + rho ||A^T A||_2) (SPEC §6.6 [D]), with ||A^T A|| = 1 here."""
        return 1.0 / (self.L_f + rho)

    @cached_property
    def Xm(self):
        return self.X.multiply(self.y[:, None]).tocsr() if sp.issparse(self.X) else self.X * self.y[:, None]

    def grad(self, x: np.ndarray) -> np.ndarray:
        """grad f(x) = -(1/n) sum_i m_i l_i sigma(-m_i l_i^T x), for x of shape (..., d)."""
        x = np.asarray(x)
        s = expit(-np.asarray(self.Xm @ x.reshape(-1, self.d).T))
        return (-(s.T @ self.Xm) / self.n).reshape(x.shape)

    def prox_g(self, v: np.ndarray, rho: float) -> np.ndarray:
        """argmin_y (lambda/2)||y||^2 + (rho/2)||v - y||^2 = rho v / (lambda + rho)."""
        return (rho / (self.lam + rho)) * v

    def objective(self, x: np.ndarray) -> np.ndarray:
        """Mean logistic loss + (lambda/2)||x||^2 on the training data, for x of shape (..., d)."""
        x = np.asarray(x)
        z = np.asarray(self.Xm @ x.reshape(-1, self.d).T)
        return (logistic.loss(z).mean(axis=0) + 0.5 * self.lam * (x.reshape(-1, self.d) ** 2).sum(1)).reshape(
            x.shape[:-1])
