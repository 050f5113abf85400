"""Kernel of HU's z-update (algorithms/sharing.z_update, eq. (8)): plain Newton on every sample and run at once.

The numpy loop (`z_update(..., compiled=False)`, the reference) makes about ten passes over the (R, N) arrays per
Newton step (the sigmoid, the step, the new point, the relative change and its maximum); this kernel makes one per
step, with the same arithmetic in the same order on each element (scipy's expit is 1 / (1 + exp(-x)) with the C
library exp, as here), and the same global stopping test: every element takes a step until the largest relative
step of the step just taken is at most tol. So it is bit-identical to the numpy loop.
Only the plain path (rho > 1/4); the safeguarded path for small rho stays in numpy.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _newton(zeta, c, Y, rho, max_steps, tol):
    R, N = zeta.shape
    change = 0.0
    for step_no in range(1, max_steps + 1):
        change = 0.0                                         # np.max(..., initial=0.0)
        for r in range(R):
            for i in range(N):
                z = zeta[r, i]
                p = 1.0 / (1.0 + math.exp(Y[i] * z))          # sigma(-Y zeta) = expit(-(Y zeta))
                step = (rho * z + c[r, i] - Y[i] * p) / (p * (1.0 - p) + rho)
                new = z - step
                v = abs(new - z) / (1.0 + abs(z))
                if v > change or v != v:                     # once NaN, change stays NaN (as np.max)
                    change = v
                zeta[r, i] = new
        if change <= tol:
            return step_no, change
    return max_steps + 1, change


def newton_z(zeta: np.ndarray, c: np.ndarray, Y: np.ndarray, rho: float, max_steps: int,
             tol: float) -> tuple[bool, float]:
    """Plain Newton steps on g'(zeta) = -Y sigma(-Y zeta) + rho zeta + c, in place on zeta (..., N) (c broadcasting
    to it, Y (N,)): (converged, last relative change). Each step updates every element; stops after the first step
    whose largest relative change |new - zeta| / (1 + |zeta|) is <= tol, or after max_steps steps (not converged).
    zeta keeps its memory layout (later reductions over it then sum in the same order as before)."""
    N = zeta.shape[-1]
    Z = zeta.reshape(-1, N)
    if not np.shares_memory(Z, zeta) or zeta.dtype != np.float64:
        raise ValueError("newton_z updates zeta in place: it must be a contiguous float64 array")
    C = np.ascontiguousarray(np.broadcast_to(c, zeta.shape), dtype=np.float64).reshape(-1, N)
    Yb = np.ascontiguousarray(np.broadcast_to(Y, (N,)), dtype=np.float64)
    steps, change = _newton(Z, C, Yb, float(rho), int(max_steps), float(tol))
    return steps <= max_steps, float(change)
