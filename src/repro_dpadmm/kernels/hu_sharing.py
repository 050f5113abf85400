"""Kernels of HU's z-update (algorithms/sharing, eq. (8)): plain Newton on every sample and run at once (`newton_z`),
and the entrywise Brent search of the authors' prototype (`brent_z`).

The numpy loop (`z_update(..., compiled=False)`, the reference) makes about ten passes over the (R, N) arrays per
Newton step (the sigmoid, the step, the new point, the relative change and its maximum); this kernel makes one per
step, with the same arithmetic in the same order on each element (scipy's expit is 1 / (1 + exp(-x)) with the C
library exp, as here), and the same global stopping test: every element takes a step until the largest relative
step of the step just taken is at most tol. So it is bit-identical to the numpy loop.
Only the plain path (rho > 1/4); the safeguarded path for small rho stays in numpy.

`brent_z` is what the authors' prototype ran for (8), one sample at a time: scipy's `minimize_scalar` with its default
method (Brent's, after scipy's downhill `bracket` search from (0, 1)) and the options xtol = 1e-2, maxiter = 10, on
h_i(zeta) = ln(1 + exp(-Y_i zeta)) - y_i zeta + pen (s_i - zeta)^2 written as their code writes it. In python a loop of
minimize_scalar calls costs about 0.1 ms per sample (about 3 s per iteration on a9a); here the same algorithm,
statement by statement (scipy.optimize._optimize.bracket and Brent.optimize), runs compiled over the samples. It is
compared with minimize_scalar itself in tests/kernels/test_hu_sharing.py (rel 1e-12: the C library and LLVM may round
exp and log differently in the last bit).
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


@numba.njit(cache=True)
def _h_code(z, Yi, yi, si, pen):
    """The authors' per-sample objective, in their order of operations: (loss - linear) + augmentation."""
    return math.log(1.0 + math.exp(-(z * Yi))) - yi * z + pen * ((si - z) * (si - z))


@numba.njit(cache=True)
def _brent_one(Yi, yi, si, pen, xtol, maxiter):
    """scipy's bracket(func) from (0, 1) (golden ratio 1.618034, grow limit 110), then Brent.optimize with tol = xtol
    and `maxiter` iterations: (x, iterations). A bracket search that does not end in 1000 steps gives NaN (scipy
    raises there)."""
    gold, tiny, grow = 1.618034, 1e-21, 110.0
    xa, xb = 0.0, 1.0
    fa, fb = _h_code(xa, Yi, yi, si, pen), _h_code(xb, Yi, yi, si, pen)
    if fa < fb:
        xa, xb = xb, xa
        fa, fb = fb, fa
    xc = xb + gold * (xb - xa)
    fc = _h_code(xc, Yi, yi, si, pen)
    it = 0
    while fc < fb:
        tmp1 = (xb - xa) * (fb - fc)
        tmp2 = (xb - xc) * (fb - fa)
        val = tmp2 - tmp1
        denom = 2.0 * tiny if abs(val) < tiny else 2.0 * val
        w = xb - ((xb - xc) * tmp2 - (xb - xa) * tmp1) / denom
        wlim = xb + grow * (xc - xb)
        if it > 1000:
            return np.nan, 0
        it += 1
        if (w - xc) * (xb - w) > 0.0:
            fw = _h_code(w, Yi, yi, si, pen)
            if fw < fc:
                xa, xb, fa, fb = xb, w, fb, fw
                break
            elif fw > fb:
                xc, fc = w, fw
                break
            w = xc + gold * (xc - xb)
            fw = _h_code(w, Yi, yi, si, pen)
        elif (w - wlim) * (wlim - xc) >= 0.0:
            w = wlim
            fw = _h_code(w, Yi, yi, si, pen)
        elif (w - wlim) * (xc - w) > 0.0:
            fw = _h_code(w, Yi, yi, si, pen)
            if fw < fc:
                xb, xc = xc, w
                w = xc + gold * (xc - xb)
                fb, fc = fc, fw
                fw = _h_code(w, Yi, yi, si, pen)
        else:
            w = xc + gold * (xc - xb)
            fw = _h_code(w, Yi, yi, si, pen)
        xa, xb, xc = xb, xc, w
        fa, fb, fc = fb, fc, fw
    mintol, cg = 1.0e-11, 0.3819660
    x = w = v = xb
    fw = fv = fx = fb
    a, b = (xa, xc) if xa < xc else (xc, xa)
    deltax, rat = 0.0, 0.0
    it = 0
    while it < maxiter:
        tol1 = xtol * abs(x) + mintol
        tol2 = 2.0 * tol1
        xmid = 0.5 * (a + b)
        if abs(x - xmid) < (tol2 - 0.5 * (b - a)):
            break
        if abs(deltax) <= tol1:                              # golden section step
            deltax = a - x if x >= xmid else b - x
            rat = cg * deltax
        else:                                                # parabolic step
            tmp1 = (x - w) * (fx - fv)
            tmp2 = (x - v) * (fx - fw)
            p = (x - v) * tmp2 - (x - w) * tmp1
            tmp2 = 2.0 * (tmp2 - tmp1)
            if tmp2 > 0.0:
                p = -p
            tmp2 = abs(tmp2)
            dx_temp = deltax
            deltax = rat
            if (p > tmp2 * (a - x)) and (p < tmp2 * (b - x)) and (abs(p) < abs(0.5 * tmp2 * dx_temp)):
                rat = p * 1.0 / tmp2
                u = x + rat
                if (u - a) < tol2 or (b - u) < tol2:
                    rat = tol1 if xmid - x >= 0 else -tol1
            else:
                deltax = a - x if x >= xmid else b - x
                rat = cg * deltax
        if abs(rat) < tol1:
            u = x + tol1 if rat >= 0 else x - tol1
        else:
            u = x + rat
        fu = _h_code(u, Yi, yi, si, pen)
        if fu > fx:
            if u < x:
                a = u
            else:
                b = u
            if (fu <= fw) or (w == x):
                v, w, fv, fw = w, u, fw, fu
            elif (fu <= fv) or (v == x) or (v == w):
                v, fv = u, fu
        else:
            if u >= x:
                a = x
            else:
                b = x
            v, w, x = w, x, u
            fv, fw, fx = fw, fx, fu
        it += 1
    return x, it


@numba.njit(cache=True)
def _brent_all(s, y, Y, pen, xtol, maxiter, out, nits):
    R, N = s.shape
    for r in range(R):
        for i in range(N):
            out[r, i], nits[r, i] = _brent_one(Y[i], y[r, i], s[r, i], pen, xtol, maxiter)


def brent_z(s: np.ndarray, y: np.ndarray, Y: np.ndarray, pen: float, xtol: float = 1e-2,
            maxiter: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """argmin_zeta ln(1 + e^{-Y_i zeta}) - y_i zeta + pen (s_i - zeta)^2 for every sample and run, as scipy's
    minimize_scalar(options={"xtol": xtol, "maxiter": maxiter}) finds it: (z, Brent iterations used), both shaped
    like s (..., N). An iteration count equal to `maxiter` means Brent stopped at its cap, not on its tolerance."""
    s = np.asarray(s, dtype=np.float64)
    N = s.shape[-1]
    S = np.ascontiguousarray(s.reshape(-1, N))
    V = np.ascontiguousarray(np.broadcast_to(y, s.shape), dtype=np.float64).reshape(-1, N)
    out, nits = np.empty_like(S), np.empty(S.shape, dtype=np.int64)
    _brent_all(S, V, np.ascontiguousarray(np.broadcast_to(Y, (N,)), dtype=np.float64), float(pen), float(xtol),
               int(maxiter), out, nits)
    return out.reshape(s.shape), nits.reshape(s.shape)
