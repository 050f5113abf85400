"""ZKL-RADMM: R-ADMM and private R-ADMM, the Theorem IV.1 bound and the noise-matching bisection."""

from __future__ import annotations

import json

import numpy as np
import pytest

from repro_dpadmm import graphs
from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.privacy.bounds import zhang2018 as bounds
from repro_dpadmm.rng import repeat_generators

from test_zhang2018_madmm import RING4, _problem


def test_allerton_P_hand_computed_on_path_graph():
    # path 0-1-2, N = 3, rho = 3 (rho/N = 1), C = 5, B = [10, 20, 10], eta = 1, alpha = 2, 1.4 c1 = 0.35:
    # node 0: (10/10)(0.35/(1 + 2) + 2) = 2.116667; node 1: (10/20)(0.35/(1 + 4) + 2) = 1.035
    P = bounds.allerton_P(5.0, [10, 20, 10], [1, 2, 1], rho=3.0, eta=1.0, alpha=2.0, T=4)
    per = 0.35 / 3 + 2
    assert np.allclose(P, [0, per, per, 2 * per, 2 * per])


def test_recycled_gradient_equals_direct_gradient():
    X, y, data = _problem()
    f0 = np.random.default_rng(2).standard_normal((2, 4, 5))
    h = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=0.2, K=6, f0=f0, tol=1e-13, check_recycled=True)
    assert h.meta["recycled_grad_max_err"] < 1e-8


def test_even_step_vanishes_as_gamma_grows():
    X, y, data = _problem()
    f0 = np.random.default_rng(2).standard_normal((1, 4, 5))
    h = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=1e13, K=1, f0=f0, tol=1e-12)
    ref = dz.conventional_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, T=1, f0=f0, tol=1e-12)
    assert np.abs(h.meta["f_final"] - ref.meta["f_final"]).max() < 1e-9
    L = h.traces["L"][0]
    assert abs(L[2] - L[1]) < 1e-10


def test_radmm_converges_nonprivate():
    X, y, data = _problem()
    fc = dz.centralized_optimum(data, 5.0, 1.0)
    f0 = np.random.default_rng(2).standard_normal((1, 4, 5))
    h = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=5.0, K=150, f0=f0, fc=fc)
    assert h.traces["dist"][0, -1] < 1e-4 * h.traces["dist"][0, 0]


def test_private_radmm_deterministic_per_seed():
    X, y, data = _problem()
    f0 = np.zeros((2, 4, 5))
    kw = dict(C=5.0, rho=1.0, eta=1.0, gamma=0.2, K=3, f0=f0, alpha=2.0)
    a = dz.r_admm(data, RING4, rngs=repeat_generators(3, 2, "r"), **kw)
    b = dz.r_admm(data, RING4, rngs=repeat_generators(3, 2, "r"), **kw)
    assert np.array_equal(a.traces["L"], b.traces["L"])


def test_bisection_hits_target_or_reports():
    B, V, T = np.array([9000.0, 9100.0, 9050.0]), np.array([2.0, 1.0, 1.0]), 100
    target = bounds.allerton_P(1000.0, B, V, 1.0, 1.0, 1.0, T)[-1]
    m = bounds.match_alpha(lambda a: bounds.icml_P(1000.0, B, V, np.ones(T), np.full(T, a))[-1], target)
    assert m["reached"] and abs(m["P"] - target) <= 1e-6 * target
    eta = dz.geometric(1.0, 1.05, T)
    m2 = bounds.match_alpha(lambda a: bounds.icml_P(1000.0, B, V, eta, a * dz.geometric(1.0, 1.04, T))[-1], target)
    assert m2["reached"] and abs(m2["P"] - target) <= 1e-6 * target
    low = bounds.match_alpha(lambda a: bounds.icml_P(1000.0, B, V, np.ones(T), np.full(T, a))[-1], 0.5 * m["floor"])
    assert not low["reached"] and low["alpha"] is None and "already" in low["reason"]


def test_radmm_rejects_bad_gamma():
    X, y, data = _problem()
    with pytest.raises(ValueError, match="gamma"):
        dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=1.0, gamma=0.0, K=1, f0=np.zeros((1, 4, 5)))


@pytest.mark.mirror
def test_smoke_item_end_to_end(mirror, processed_root, tmp_path):
    from repro_dpadmm import config
    from repro_dpadmm.paths import project_root
    from repro_dpadmm.runner import run_item

    root = project_root()
    if processed_root != root:
        pytest.skip("the processed datasets are not built in this checkout")
    params = config.item_params("zhang2018_radmm", "fig3", root / "config/smoke.yaml", root=root)
    metrics = run_item("zhang2018_radmm", "fig3", params, tmp_path, root=root)
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk["status"] == "ok" and metrics["status"] == "ok"
    assert on_disk["P_max_abs_diff"] < 1e-9
    assert on_disk["L_final_mean.radmm"] > 0 and (tmp_path / "fig3.html").is_file()


def test_bisection_given_too_few_steps_raises():
    from repro_dpadmm.solvers import NotConvergedError

    with pytest.raises(NotConvergedError, match="bisection"):
        bounds.match_alpha(lambda a: a, 0.3, rtol=1e-9, max_iter=3)
