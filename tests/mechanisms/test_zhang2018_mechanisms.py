"""mechanisms.zhang2018: ZKL's penalty perturbation, DVP and private R-ADMM as mechanisms: the two-stage calibration
to a total (against the frontier's values before the mechanisms existed), the paper's P(T) of the calibrated noise,
the Spend of the worst node, and seeded runs."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm import graphs
from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.mechanisms import zhang2018 as mz
from repro_dpadmm.privacy import accounting, calibrate
from repro_dpadmm.privacy.bounds import zhang2018 as zb
from repro_dpadmm.privacy.spend import pure_epsilons, totals
from repro_dpadmm.rng import repeat_generators

DELTA, T = 1e-5, 100
A = graphs.make_graph({"kind": "five_node"})
B = np.full(5, 8000.0)          # 40,000 training rows over the five nodes, as the frontier splits them
PAPER = {"A": A, "B": B, "lam": 1e-6, "floor_share": 0.5}


@pytest.mark.parametrize("cls, level, alpha, C", [(mz.DualPerturbation, 0.3, 0.31163193628807545, 108.27794288168471),
                                                  (mz.PrivateRAdmm, 1.0, 0.07742129332850922, 940.0604986055087)])
def test_calibration_is_the_frontiers(cls, level, alpha, C):
    """C and alpha at T = 100, delta = 1e-5 on the five-node network (the values the frontier computed before the
    mechanisms), and the paper's P(T) of them."""
    cal = cls(**PAPER).calibrate(level, DELTA, T)
    # rel 1e-12: above the processor's last bits, far below the bisection's tolerance
    assert cal["alpha"] == pytest.approx(alpha, rel=1e-12) and cal["C"] == pytest.approx(C, rel=1e-12)
    assert cal["noise"] == cal["alpha"]
    assert (1 - 2e-3) * level <= cal["tight_eps"] <= level
    assert cal["floor_eps"] == pytest.approx(0.5 * level, rel=3e-3) and not cal["C_capped"]


@pytest.mark.parametrize("cls", [mz.DualPerturbation, mz.PrivateRAdmm])
@pytest.mark.parametrize("level", [0.1, 3.0])
def test_bisection_meets_each_level_within_one_percent(cls, level):
    """Re-computed independently of the solver: the worst node's per-iteration budgets composed optimally."""
    mech = cls(**PAPER)
    cal = mech.calibrate(level, DELTA, T)
    assert 0 <= (level - cal["tight_eps"]) / level <= 0.01
    per_step = mech.schedules(T)[0](cal["C"], cal["alpha"])
    node = per_step[:, np.argmax(per_step.sum(0))]
    again = accounting.pure_composed_epsilon(node, DELTA, discretization=node.mean() * 2e-4)
    assert level * 0.985 <= again <= level * 1.001, (level, again)


def test_bisection_meets_level_for_penalty_perturbation_schedule():
    """PP's per-iteration budgets differ (eta and alpha grow geometrically): one level suffices (slow accountant)."""
    cal = mz.PenaltyPerturbation(**PAPER).calibrate(1.0, DELTA, T)
    assert 0 <= (1.0 - cal["tight_eps"]) <= 0.01
    assert cal["floor_eps"] == pytest.approx(0.5 * 1.0, rel=0.01)  # floor_share of the level
    assert cal["paper_eps"] > cal["tight_eps"]  # P(T) sums: looser than the optimal composition


def test_paper_bound_of_the_calibrated_noise_is_the_papers_sum():
    mech = mz.DualPerturbation(**PAPER)
    cal = mech.calibrate(0.3, DELTA, T)
    per_iter = zb.icml_per_iteration(cal["C"], B, A.sum(1), np.full(T, 0.5), np.full(T, cal["alpha"]))
    assert cal["paper_eps"] == pytest.approx(per_iter.sum(0).max())
    assert calibrate.pure_total(per_iter, DELTA, "basic") == pytest.approx(cal["paper_eps"])


@pytest.mark.parametrize("cls", [mz.PenaltyPerturbation, mz.DualPerturbation, mz.PrivateRAdmm])
def test_spend_is_the_worst_nodes_budgets_and_names_p_of_t(cls):
    mech = cls(A=A, B=np.array([900.0, 1000.0, 1000.0, 1000.0, 1000.0]), lam=1e-6)
    C, alpha = 50.0, 0.2
    per_step = mech.schedules(10)[0](C, alpha)
    spend = mech.spend(10, DELTA, C=C, alpha=alpha)
    worst = per_step[:, np.argmax(per_step.sum(0))]
    assert np.all(worst[:, None] >= per_step - 1e-15)            # one node's budget is the largest at every step
    np.testing.assert_allclose(np.sort(pure_epsilons(spend.event)), np.sort(worst), rtol=1e-12)
    assert totals(spend, DELTA, pld=False)["paper_eps"] == pytest.approx(per_step.sum(0).max(), rel=1e-12)


def _nodes(R=2, n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for r in range(R):
        X = rng.standard_normal((n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = np.where(X @ np.ones(d) > 0, 1.0, -1.0)
        out.append(dz.node_data(X, y, graphs.split_data(n, 5, np.random.default_rng(r))))
    return out


@pytest.mark.parametrize("cls", [mz.DualPerturbation, mz.PrivateRAdmm])
def test_run_is_seeded_and_checks_the_papers_parameter_condition(cls):
    mech = cls(A=A, B=np.full(5, 60.0), lam=1e-3)
    cal = {"C": 5.0, "alpha": 2.0}
    run = lambda seed, **kw: mech.run(_nodes(), cal, 4, repeat_generators(seed, 2, "z"), **kw)  # noqa: E731
    a, b, c = run(0), run(0), run(1)
    assert a.shape == (2, 5, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    np.testing.assert_array_equal(run(0, noiseless=True), run(1, noiseless=True))
    with pytest.raises(ValueError, match="2 c_1 <"):
        cls(A=A, B=np.full(5, 60.0), lam=1e-3).run(_nodes(), {"C": 1e4, "alpha": 2.0}, 4,
                                                   repeat_generators(0, 2, "z"))
