"""The compiled Newton z-update of HU's ADMM sharing (kernels/hu_sharing.py) equals the numpy loop bit for bit: same
values, same memory layout, same number of steps (the same NotConvergedError when it runs out)."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.algorithms import sharing
from repro_dpadmm.solvers import NotConvergedError


def _inputs(seed, R=3, N=500, order="C", scale=3.0):
    rng = np.random.default_rng(seed)
    s = np.asarray(rng.normal(scale=scale, size=(R, N)), order=order)
    y = np.asarray(rng.normal(scale=1.0, size=(R, N)), order=order)
    Y = np.where(rng.random(N) > 0.5, 1.0, -1.0)
    z0 = np.asarray(s + rng.normal(scale=0.5, size=(R, N)), order=order)
    return s, y, Y, z0


@pytest.mark.parametrize("rho", [0.3, 1.0, 4.0, 20.0])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("warm", [False, True])
def test_compiled_newton_equals_the_numpy_loop(rho, order, warm):
    s, y, Y, z0 = _inputs(int(rho * 10), order=order)
    kw = {"z0": z0} if warm else {}
    ref = sharing.z_update(s, y, Y, rho, compiled=False, **kw)
    got = sharing.z_update(s, y, Y, rho, compiled=True, **kw)
    assert np.array_equal(got, ref)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (ref.flags.c_contiguous, ref.flags.f_contiguous)
    assert np.array_equal(np.linalg.norm(got, axis=-1), np.linalg.norm(ref, axis=-1))
    s1 = s[0].copy()                                           # one run as a 1-d array
    assert np.array_equal(sharing.z_update(s1, y[0], Y, rho), sharing.z_update(s1, y[0], Y, rho, compiled=False))


@pytest.mark.parametrize("tol", [1e-12, 1e-3])
def test_compiled_newton_stops_at_the_same_step(tol):
    """Same tolerance test: capping the steps one below what the numpy loop needs fails in both, at the same change."""
    s, y, Y, _ = _inputs(3, scale=30.0)
    for steps in range(1, 60):
        try:
            ref = sharing.z_update(s, y, Y, 1.0, compiled=False, max_steps=steps, tol=tol)
        except NotConvergedError as exc:
            with pytest.raises(NotConvergedError) as got:
                sharing.z_update(s, y, Y, 1.0, max_steps=steps, tol=tol)
            assert str(got.value) == str(exc)
            continue
        assert np.array_equal(sharing.z_update(s, y, Y, 1.0, max_steps=steps, tol=tol), ref)
        assert steps > 1
        break
    else:
        pytest.fail("the numpy loop never converged")


def test_a_nan_is_not_converged_in_both():
    s, y, Y, _ = _inputs(4)
    s[1, 7] = np.nan
    for compiled in (False, True):
        with pytest.raises(NotConvergedError, match="nan"):
            sharing.z_update(s, y, Y, 1.0, compiled=compiled, max_steps=5)


@pytest.mark.parametrize("scale", [0.1, 3.0, 30.0])
@pytest.mark.parametrize("pen", [0.5, 2.0])
def test_brent_kernel_is_scipys_minimize_scalar(scale, pen):
    """The compiled Brent search returns what scipy.optimize.minimize_scalar (default method, the authors' options
    xtol = 1e-2, maxiter = 10) returns for the authors' per-sample objective, with the same iteration count."""
    import math

    from scipy.optimize import minimize_scalar

    from repro_dpadmm.kernels.hu_sharing import brent_z

    s, y, Y, _ = _inputs(7, R=2, N=150, scale=scale)
    z, nits = brent_z(s, y * scale / 3, Y, pen)
    for r in range(2):
        for i in range(150):
            def h(u, r=r, i=i):
                return math.log(1 + math.exp(-u * Y[i])) - y[r, i] * scale / 3 * u + pen * (s[r, i] - u) ** 2
            ref = minimize_scalar(h, options={"xtol": 1e-2, "maxiter": 10})
            assert z[r, i] == pytest.approx(ref.x, rel=1e-12, abs=1e-300)
            assert nits[r, i] == ref.nit
    assert z.shape == s.shape and nits.max() <= 10
