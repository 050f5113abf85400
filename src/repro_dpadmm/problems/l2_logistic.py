"""l2-regularised logistic regression in XU's two-block ADMM form (beyond/frontier):

    min_{x, y} (1/n) sum_i log(1 + exp(-m_i l_i^T x)) + (lambda/2) ||y||^2   s.t.  x - y = 0,

i.e. XU's problem (2) with A = I, B = -I, c = 0 and g = (lambda/2)||.||^2 in place of the fused-lasso penalty of (11).
Its minimiser is that of HUANG's l2 objective, mean loss + (lambda/2)||w||^2 with lambda = HUANG's lambda/n, so the
XU algorithms (algorithms/linearized.py) solve the same problem as every other method of the frontier. The y-step
(3) becomes the prox of g: y_t = rho (x_{t-1} + u_{t-1}) / (lambda + rho).

Duck-types `FusedLasso` where `linearized.run` needs it (A, AtA, grad, lam, n, d, prox_g); the logistic
term (n, d, L_f, grad, loss) is the one both share, logistic.MeanLogisticTerm.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .fused_lasso import step_size
from .logistic import MeanLogisticTerm


@dataclass(frozen=True)
class L2Logistic(MeanLogisticTerm):
    X: object          # (n, d) training rows of norm <= 1 (ndarray or CSR)
    y: np.ndarray      # (n,) labels in {-1, +1}
    lam: float         # weight of (1/2)||.||^2 next to the MEAN loss

    def __post_init__(self):
        self._check_data()

    @cached_property
    def A(self) -> sp.csr_matrix:
        return sp.identity(self.d, format="csr")

    @property
    def AtA(self) -> np.ndarray:
        return np.eye(self.d)

    @property
    def norm_AtA(self) -> float:
        return 1.0

    def step_size(self, rule: str, rho: float) -> float:
        """eta by `rule`: "paper" = 1/L_f (docs/choices.md#xu-step-size), "conservative" = 1/(L_f + rho) (||A^T A|| = 1 here)."""
        return step_size(self.L_f, self.norm_AtA, rule, rho)

    def default_eta(self, rho: float) -> float:
        """The default step, eta = 1/L_f (docs/choices.md#xu-step-size); `rho` is unused by this rule."""
        return self.step_size("paper", rho)

    def prox_g(self, v: np.ndarray, rho: float) -> np.ndarray:
        """argmin_y (lambda/2)||y||^2 + (rho/2)||v - y||^2 = rho v / (lambda + rho)."""
        return (rho / (self.lam + rho)) * v

    def objective(self, x: np.ndarray) -> np.ndarray:
        """Mean logistic loss + (lambda/2)||x||^2 on the training data, for x of shape (..., d)."""
        x = np.asarray(x)
        return self.loss(x) + 0.5 * self.lam * (x ** 2).sum(-1)
