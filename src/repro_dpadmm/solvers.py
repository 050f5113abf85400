"""The one rule every iterative solver in the package follows: stop on its tolerance or raise.

A solver that reaches its iteration cap without meeting its tolerance raises `NotConvergedError`, naming the
problem, the iteration and the residual; it never returns a half-solved iterate (docs/choices.md#solvers-converge).
"""

from __future__ import annotations

import numpy as np


class NotConvergedError(RuntimeError):
    """An iterative solver stopped without meeting its tolerance.

    Attributes: `problem` (what was being solved), `iteration` (steps taken), `residual` (the worst residual left,
    in the solver's own stopping measure) and `tol` (the tolerance it had to meet).
    """

    def __init__(self, problem: str, iteration: int, residual: float, tol: float, hint: str = ""):
        self.problem, self.iteration, self.residual, self.tol = problem, int(iteration), float(residual), float(tol)
        msg = (f"{problem}: not converged after {self.iteration} iteration(s); residual {self.residual:.3e} "
               f"> tolerance {self.tol:.3e}")
        super().__init__(msg + (f" ({hint})" if hint else ""))


def require_converged(problem: str, iteration: int, residual, tol: float, hint: str = "") -> None:
    """Raise `NotConvergedError` unless every residual (a number or an array, e.g. one per agent and repeat) is
    at most `tol`. NaN residuals count as not converged."""
    worst = float(np.max(np.asarray(residual, dtype=float), initial=0.0)) if np.size(residual) else 0.0
    if not np.all(np.asarray(residual, dtype=float) <= tol):
        if np.isnan(np.asarray(residual, dtype=float)).any():
            worst = float("nan")
        raise NotConvergedError(problem, iteration, worst, tol, hint)
