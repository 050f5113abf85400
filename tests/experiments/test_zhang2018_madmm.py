"""experiments.zhang2018_madmm: the ZKL-ICML items run / plot / metrics / table on a small stand-in for Adult; the
twins at equal overall perturbation and at equal eps; node-varying schedules; the swept settings and the extra
network written as variants; the references; P(t) and P(T) taken from the runs' records; Fig. 1's dual invariant."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.experiments import zhang2018_madmm as em
from repro_dpadmm.experiments.plotting import range_se
from repro_dpadmm.privacy.bounds import zhang2018 as bounds

from _zkl_synth import adult_like

PRIVATE = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "repeats": 3,
           "theta": 0.5, "curves": {"blue": {"q1": 1.05, "q2": 1.04}, "black": {"q1": 1.0, "q2": 1.04}},
           "newton_tol": 1e-10, "seed": 0}


@pytest.fixture
def small_adult(monkeypatch):
    monkeypatch.setattr(em, "_adult", lambda: adult_like())


def test_twins_keep_the_draws_and_either_the_overall_perturbation_or_the_noise():
    """ICML §6.1-6.2: the overall perturbation is 2 eta_i V_i eps_i, eps_i = unit / alpha_i (same draws): the equal-
    perturbation twin keeps eta / alpha, the fixed-epsilon twin keeps alpha; both have eta = theta."""
    specs = em.curve_specs({**PRIVATE, "twins": ["blue", "black"]}, 3.0, 6, 5, 0, "t")
    b, tw, fe = specs["blue"], specs["blue_twin"], specs["blue_twin_fixed_eps"]
    assert tw["stream"] == fe["stream"] == "blue" and np.all(tw["eta"] == 0.5) and np.all(fe["eta"] == 0.5)
    assert np.allclose(tw["eta"] / tw["alpha"], b["eta"] / b["alpha"], rtol=1e-14)
    assert np.array_equal(fe["alpha"], b["alpha"]) and (tw["key"], tw["variant"]) == ("blue_twin", None)
    assert (fe["key"], fe["variant"]) == ("blue_twin", "fixed_epsilon")
    X, y = adult_like()
    c = em.private_comparison(X, y, {**PRIVATE, "twins": ["black"]}, 0, 3.0, "t")["curves"]
    # a curve whose eta is already theta is its own equal-perturbation twin: the same runs, bit for bit
    assert np.array_equal(c["black_twin"]["L"], c["black"]["L"])
    with pytest.raises(ValueError, match="not a curve"):
        em.curve_specs({**PRIVATE, "twins": ["green"]}, 3.0, 6, 5, 0, "t")


def test_node_varying_and_swept_settings():
    params = {**PRIVATE, "curves": {**PRIVATE["curves"], "magenta": {"q1": 1.0, "q2": 1.0}},
              "node_varying": {"spread": [0.01, 0.02], "curves": ["blue", "black"]},
              "sweep": {"pp": [[1.05, 1.04], [1.1, 1.0]], "dvp_q2": [1.02]}}
    specs = em.curve_specs(params, 3.0, 6, 5, 0, "t")
    q1_i = specs["blue_nodes"]["eta"][1] / 0.5  # eta_i(2) = theta q1_i
    assert np.allclose(np.sort(q1_i), np.linspace(1.04, 1.06, 5)) and np.all(specs["black_nodes"]["eta"] == 0.5)
    q2_i = specs["black_nodes"]["alpha"][1] / 3.0
    assert np.allclose(np.sort(q2_i), np.linspace(1.02, 1.06, 5)) and not np.allclose(q2_i, np.sort(q2_i))
    # the swept point equal to blue is blue; the others are variants of the keys they can stand in for
    assert set(k for k, s in specs.items() if s["group"] == "sweep") == {"pp_1.10_1.00", "black_1.02"}
    with pytest.raises(ValueError, match="below 1"):
        em.curve_specs({**params, "node_varying": {"spread": [0.0, 0.01], "curves": ["magenta"]}}, 3.0, 6, 5, 0, "t")
    # a swept spread scales the same node pattern and is a variant of the same keys, run with the swept settings
    params["node_varying"]["spread_sweep"] = [[0.005, 0.04]]
    specs = em.curve_specs(params, 3.0, 6, 5, 0, "t")
    s = specs["blue_nodes_0.005_0.04"]
    assert (s["group"], s["key"], s["variant"]) == ("sweep", "blue_nodes", "nodes_0.005_0.04")
    assert np.allclose(s["eta"][1] / 0.5 - 1.05, (specs["blue_nodes"]["eta"][1] / 0.5 - 1.05) / 2)
    assert np.allclose(s["alpha"][1] / 3.0 - 1.04, (specs["blue_nodes"]["alpha"][1] / 3.0 - 1.04) * 2)
    assert "alpha3_sweep" in em._alpha_keys({**params, "alpha1": [3.0], "sweep": None}, "t")


def test_range_se_is_the_papers_range_with_a_bootstrap_standard_error():
    L = np.array([[1.0, 0.5, 0.4], [1.0, 0.7, 0.6], [1.0, 0.6, 0.45]])
    r = range_se(L, np.random.default_rng(0), 1)
    assert r["final"] == pytest.approx(0.2) and r["late"] == pytest.approx(0.2)
    assert 0 < r["final_se"] < 0.2 and r["late_se"] > 0
    assert range_se(np.ones((4, 3)), np.random.default_rng(0), 1)["late_se"] == 0.0


def test_privacy_comes_from_the_runs_records_and_equals_the_theorem_on_the_schedules():
    X, y = adult_like()
    res = em.private_comparison(X, y, PRIVATE, 0, 3.0, "t")
    B, V, T = res["B"], res["V"], 4
    for name, c in res["curves"].items():
        ref = bounds.icml_P(20.0, B, V, em.dz.geometric(0.5, c["q1"], T), em.dz.geometric(3.0, c["q2"], T))
        assert np.array_equal(c["P"], ref) and c["P_total"] == ref[-1]
    assert res["L_init"].shape == (3,) and res["L_star"] < res["L_nonprivate"][1.05] < res["L_init"].min()
    with pytest.raises(ValueError, match="raise theta"):  # Algorithm 1's parameter condition
        em.private_comparison(X, y, {**PRIVATE, "C": 80.0, "theta": 0.01, "rho": 0.01}, 0, 3.0, "t")


def test_private_items_run_plot_and_report(small_adult):
    params = {**PRIVATE, "alpha1": [3.0, 5.0], "twins": ["blue"], "sweep": {"pp": [[1.1, 1.0]], "dvp_q2": [1.02]},
              "node_varying": {"spread": [0.01, 0.01], "spread_sweep": [[0.02, 0.02]], "curves": ["blue"]},
              "extra_networks": {"n6": {"kind": "erdos_renyi", "nodes": 6, "p": 0.6, "seed": 1}}}
    # paper runs: blue, black, blue's two twins, blue_nodes (5: two parts of at most 3); swept: pp_1.10_1.00,
    # black_1.02, blue_nodes_0.02_0.02 (one part)
    assert em.parts_fig2(params) == ["alpha3", "alpha3.2", "alpha3_sweep", "alpha3_n6", "alpha5", "alpha5.2",
                                     "alpha5_sweep", "alpha5_n6"]
    res = em.run_fig2(params)
    figs = em.plot_fig2(res)
    assert list(figs) == ["fig2", "fig2_ours"] and len(figs["fig2"].axes) == 4
    notes = {t.get_text() for ax in figs["fig2_ours"].axes for t in ax.texts}   # the swept points' names
    assert {"PP (q1=1.10, q2=1.00)", "DVP (q2=1.02)"} <= notes
    assert not any(n.startswith(("pp_", "dvp_", "nodes_")) for n in notes), notes
    m = em.metrics_fig2(res)
    mt, rep = m["metrics"], m["repeats"]
    assert mt["a5.P_final.blue"] == res["alphas"][5.0]["curves"]["blue"]["P"][-1]
    assert mt["a3.L_final_mean.black"] == pytest.approx(rep["a3.L_final_mean.black"].mean())
    # a swept PP setting stands in for both PP roles; a swept DVP q2 for black
    assert mt["a3.L_final_mean.blue@pp_1.10_1.00"] == mt["a3.L_final_mean.red@pp_1.10_1.00"]
    assert mt["a3.L_final_mean.black@dvp_1.02"] == mt["a3.L_final_mean.magenta@dvp_1.02"]
    # a paper curve stands in for the other role of its method under its own setting's name
    assert mt["a3.L_final_mean.red@pp_1.05_1.04"] == mt["a3.L_final_mean.blue"]
    assert mt["a3.P_final.magenta@dvp_1.04"] == mt["a3.P_final.black"] and "a3.L_final_mean.blue@pp_1.00_1.04" not in mt
    assert mt["a3.L_range_late.blue_twin@fixed_epsilon.se"] >= 0 and "a3.P_final.blue_twin" in mt
    # a swept spread of the node-varying schedules: a variant of the '<c>_nodes' keys, a wider spread a larger P(T)
    assert mt["a3.P_final.blue_nodes@nodes_0.02_0.02"] > mt["a3.P_final.blue_nodes"] > mt["a3.P_final.blue"]
    # the extra network: the four curves with their own references
    assert {"a3.L_final_mean.blue@n6", "L_star@n6", "L_init@n6", "N@n6"} <= set(mt) and mt["N@n6"] == 6
    assert rep["L_init@n6"].shape == (3,) and mt["L_zero"] == pytest.approx(np.log(2))
    gap = rep["a3.gap_closed.blue"]
    assert np.allclose(gap, (rep["L_init"] - rep["a3.L_final_mean.blue"]) / (rep["L_init"] - mt["L_star"]))
    table = em.table_fig2(res, mt)
    assert "| `N` | 5 |" in table and "`a3.P_final.blue`" in table and "newton" not in table and "@" not in table
    uneven = em.run_fig4({**PRIVATE, "split": "uneven", "min_size": 60, "alpha1": [3.0]})
    m4 = em.metrics_fig4(uneven)["metrics"]
    assert set(uneven["P_even"]) == {"blue", "black"} and m4["P_final_even.blue"] < m4["a3.P_final.blue"]
    assert list(em.plot_fig4(uneven)) == ["fig4", "fig4_ours"]
    # an extra setting: the curves on the item's own graph with another C (in parts of at most 3 runs); with the
    # even split's sizes unchanged, P(T) is proportional to C
    even = {**PRIVATE, "alpha1": [3.0], "curves": {**PRIVATE["curves"], "red": {"q1": 1.05, "q2": 1.03},
                                                   "magenta": {"q1": 1.0, "q2": 1.0}},
            "extra_settings": {"C40": {"C": 40.0}}}
    assert em.parts_fig3(even) == ["alpha3", "alpha3.2", "alpha3_C40", "alpha3_C40.2"]
    m3 = em.metrics_fig3(em.run_fig3(even))["metrics"]
    assert m3["a3.P_final.blue@C40"] == pytest.approx(2 * m3["a3.P_final.blue"], rel=1e-12)
    assert {"L_star@C40", "a3.L_final_mean.magenta@C40", "a3.core.L_dvp.1.00@C40", "a3.core.n_dvp@C40"} <= set(m3)
    assert m3["a3.core.n_dvp"] == 2 and m3["a3.P_T_over_T_P1.magenta"] == pytest.approx(1.0, rel=1e-12)


def test_fig1_runs_plots_and_reports(small_adult):
    params = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "seed": 0,
              "eta1": [0.55, 0.65, 0.6, 0.55, 0.6], "q": [1.01, 1.03, 1.1, 1.2, 1.02], "theta_fixed": 0.5,
              "theta_random": [0.3, 0.55], "theta_node_offset": 0.05, "eta_b": 0.5, "theta_b": 0.5,
              "q1_list": [1.0, 1.1], "freeze_iterations": 8, "eta_cap": 0.7, "newton_tol": 1e-10}
    res = em.run_fig1(params)
    assert list(em.plot_fig1(res)) == ["fig1", "fig1_ours"]
    m = em.metrics_fig1(res)["metrics"]
    assert m["T_long"] == 8 and m["a.dist_ratio.fixed"] < 1 and "b.plateau.q1_1.10" in m
    # the same dual step at every node keeps sum_i lambda_i = 0; node-specific steps do not
    for group in ("a", "const_eta", "capped"):
        assert m[f"{group}.dual_sum_rel.fixed"] < 1e-12 and m[f"{group}.dual_sum_rel.time_varying"] < 1e-12
        assert m[f"{group}.dual_sum_rel.per_node"] > 1e-4
    assert res["capped"]["fixed"]["dist"][0] == res["a"]["fixed"]["dist"][0]
    assert m["L_init"] > m["L_star"] and m["inv_eta_sum_min"] > 0
    assert "a.plateau.fixed" in em.table_fig1(res, m)
    # one part per group of runs; combined, they are the whole run's numbers
    assert em.parts_fig1(params) == ["a", "const_eta", "capped", "b"]
    whole = em.metrics_fig1(em.fig1(*adult_like(), params, 0))["metrics"]
    assert m == whole


def _curve(q1, q2, P, L):
    return {"q1": q1, "q2": q2, "P_total": P, "L": np.asarray(L, float)[:, None] * np.ones((1, 3))}


def test_pareto_points_pick_the_most_accurate_more_private_pp_point_per_dvp_schedule():
    """ICML §5.2's core claim over every schedule: per DVP schedule, the PP schedule that is more private and, among
    those, the most accurate; where none is more private, the most private one (the claim then fails on privacy).
    Twins and node-varying runs are no schedules of their own."""
    curves = {"magenta": _curve(1.0, 1.0, 100.0, [0.50, 0.52, 0.51]),
              "black_1.02": _curve(1.0, 1.02, 10.0, [0.30, 0.31, 0.30]),
              "blue": _curve(1.05, 1.04, 50.0, [0.40, 0.41, 0.40]),
              "red": _curve(1.05, 1.03, 40.0, [0.45, 0.46, 0.44]),
              "pp_1.10_1.05": _curve(1.1, 1.05, 20.0, [0.60, 0.61, 0.62]),
              "blue_twin": _curve(1.0, 1.04, 1.0, [0.10, 0.10, 0.10]),
              "blue_nodes": _curve(1.05, 1.04, 1.0, [0.10, 0.10, 0.10])}
    pts = em.pareto_points(curves)
    assert set(pts) == {"1.00", "1.02"}
    assert (pts["1.00"]["pp"], pts["1.00"]["n_more_private"], pts["1.00"]["dominated"]) == ("blue", 3, True)
    # no PP schedule is as private as DVP q2 = 1.02: the most private PP point stands in, and dominates nothing
    assert (pts["1.02"]["pp"], pts["1.02"]["n_more_private"], pts["1.02"]["dominated"]) == ("pp_1.10_1.05", 0, False)
    assert pts["1.02"]["P_pp"] > pts["1.02"]["P_dvp"]
    # within the noise, a more private and slightly more accurate PP point dominates nothing
    curves["magenta"] = _curve(1.0, 1.0, 100.0, [0.40, 0.45, 0.36])
    assert not em.pareto_points(curves)["1.00"]["dominated"]


def _five_node_run(eta, theta=0.5, T=30):
    from repro_dpadmm.algorithms import decentralized as dz
    X, y = adult_like()
    data, A = dz.network(X, y, {"kind": "five_node"}, 0, "t")
    C, rho, N, d = 20.0, 1.0, data.n_nodes, data.dim
    fc = dz.centralized_optimum(data, C, rho)
    f0 = dz.initial_points(0, 1, N, d, 1.0, "t")
    h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=np.full(T, theta), f0=f0, fc=fc, keep_iterates=True,
                  tol=1e-12)
    grad_star = C * dz.local_grad(data, np.broadcast_to(fc, (1, N, d)))[0] + rho / N * fc
    return em.thm31_inner_products(h.meta["f_path"][:, 0], h.meta["lam_path"][:, 0], np.asarray(eta, float), theta,
                                   A, grad_star, fc), h


def test_thm31_inequality_19_holds_along_a_run_with_a_common_penalty():
    """(19) follows from convexity when W(t) = eta(t) I; the path has T + 1 points and the statistic is normalised."""
    from repro_dpadmm.algorithms import decentralized as dz
    T = 30
    ratios, h = _five_node_run(dz.geometric(0.5, 1.05, T), T=T)
    assert h.meta["f_path"].shape == (T + 1, 1, 5, 6) and ratios.shape == (T,)
    assert np.all(ratios <= 1e-8) and np.all(ratios >= -1) and ratios.min() < -1e-3


def test_thm32_lower_bound_falls_as_the_penalty_grows_on_the_tilde_reading():
    A = np.array([[0, 1, 1, 0, 1], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [0, 0, 1, 0, 1], [1, 0, 0, 1, 0]], float)
    eta = 0.5 * 1.1 ** np.arange(40)
    lb = em.thm32_delta_lower_bound(A, eta, 0.5, 0.2, 5.2)
    assert lb.shape == (40,) and np.all(lb > 0) and np.all(np.diff(lb[10:]) < 0)
    # constant penalty: a constant bound; eta = theta makes (W - theta I)(D - A) = 0, whose 'bar' reading is 0
    flat = em.thm32_delta_lower_bound(A, np.full(5, 0.5), 0.5, 0.2, 5.2, sigma_min="bar")
    assert np.allclose(flat, flat[0])
    term2 = 2 * 0.2 / ((4 * 5.2 ** 2 + 2 * (0.5 * np.linalg.svd(np.diag(A.sum(1)) + A, compute_uv=False).max()) ** 2)
                       / (0.5 * np.sort(np.linalg.eigvalsh(np.diag(A.sum(1)) - A))[1]) + 0.5 * np.linalg.svd(
                           np.diag(A.sum(1)) + A, compute_uv=False).max())
    assert np.isclose(flat[0], min(term2, 0.5 * np.sort(np.linalg.eigvalsh(np.diag(A.sum(1)) - A))[1] / (
        4 * 0.5 * np.linalg.svd(np.diag(A.sum(1)) + A, compute_uv=False).max())))


def test_kkt_attack_recovers_a_sample_from_the_iterates_when_eta_is_known():
    """ICML §6.2's threat model: with theta, eta_i(t) and every other sample of the node, (12) at every t gives the
    unknown sample's term; on non-negative features (as Adult's) the attack recovers x_1 and y_1. A wrong eta (a
    fast-growing penalty guessed as theta) leaves b_t's share in it."""
    from repro_dpadmm.algorithms import decentralized as dz
    X, y = adult_like(n=400, d=6)
    data, A = dz.network(np.abs(X), y, {"kind": "five_node"}, 0, "t")
    T, C, rho = 40, 20.0, 1.0
    eta = dz.geometric(np.array([0.55, 0.65, 0.6, 0.55, 0.6]), np.array([1.01, 1.03, 1.1, 1.2, 1.02]), T)
    fc = dz.centralized_optimum(data, C, rho)
    f0 = dz.initial_points(0, 1, 5, 6, 1.0, "t")
    h = dz.m_admm(data, A, C=C, rho=rho, eta=eta, theta=np.full(T, 0.5), f0=f0, fc=fc, keep_iterates=True, tol=1e-12)
    path = h.meta["f_path"][:, 0]
    for node in range(5):
        known = em.kkt_attack(data, A, path, C, rho, 0.5, eta[:, node], node=node)
        assert known["cos"] > 1 - 1e-9 and known["rel_err"] < 1e-6 and known["label_ok"]
    guessed = em.kkt_attack(data, A, path, C, rho, 0.5, eta[:, 3], node=3, eta="theta")  # q = 1.2
    assert guessed["rel_err"] > 1e-3
    with pytest.raises(ValueError, match="eta must be"):
        em.kkt_attack(data, A, path, C, rho, 0.5, eta[:, 0], eta="secret")


def test_kkt_attack_gives_the_same_numbers_whatever_the_blas_threads():
    """The attack's BLAS products run on one thread inside it, so its numbers do not depend on the thread count of
    the process that calls it (a notebook run by hand and the DAG's one-thread jobs agree): at this size a
    two-thread product sums in another order and moved the estimated attacker's x_1-hat in its last bits."""
    from threadpoolctl import threadpool_limits

    from repro_dpadmm import graphs
    from repro_dpadmm.algorithms import decentralized as dz
    rng = np.random.default_rng(0)
    N, d, per, T = 3, 105, 4000, 100
    X = (rng.random((N * per, d)) < 0.12) * rng.random((N * per, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    data = dz.node_data(X, np.where(rng.random(N * per) < 0.5, 1.0, -1.0), np.split(np.arange(N * per), N))
    A = graphs.from_edges(3, [(0, 1), (1, 2), (2, 0)])
    path = rng.standard_normal((T + 1, N, d)) * 0.1
    runs = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads):
            runs.append(em.kkt_attack(data, A, path, 1000.0, 1.0, 0.5, np.full(T, 0.6), eta="estimated"))
    assert np.array_equal(runs[0]["x_hat"], runs[1]["x_hat"]) and runs[0]["cos"] == runs[1]["cos"]


def test_swept_points_carry_the_papers_names_not_their_variant_keys():
    """fig<k>_ours labels each swept setting as the paper names it (PP / DVP and the growth factors q1, q2)."""
    from repro_dpadmm.experiments.zhang2018_madmm import dvp_variant, pp_variant, setting_label

    assert setting_label(pp_variant(1.1, 1.0)) == "PP (q1=1.10, q2=1.00)"
    assert setting_label(pp_variant(1.05, 1.005)) == "PP (q1=1.05, q2=1.005)"
    assert setting_label(dvp_variant(1.02)) == "DVP (q2=1.02)"
    assert setting_label("nodes_0.01_0.02") == "node-varying (q1_i = q1 +- 0.01, q2_i = q2 +- 0.02)"
    with pytest.raises(ValueError, match="fixed_epsilon"):
        setting_label("fixed_epsilon")
