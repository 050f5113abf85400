"""experiments.zhang2018_radmm: the ZKL-RADMM items run / plot / metrics / table on a small stand-in for Adult, the
comparator settings of Fig. 2 matched to R-ADMM's privacy and written as variants, Fig. 3 at several noise levels
with its privacy identical at every t, Fig. 1's rates, compensation and computation measures; one item end to end on
the real data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from repro_dpadmm.experiments import zhang2018_radmm as er

from _zkl_synth import adult_like

COMMON = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 6, "repeats": 2,
          "newton_tol": 1e-10, "seed": 0}


@pytest.fixture
def small_adult(monkeypatch):
    monkeypatch.setattr(er, "_adult", lambda: adult_like())


def test_odd_rate_and_compensation_measures():
    T = 10
    dist = 5.0 * np.exp(-0.3 * np.arange(T + 1))
    assert er.odd_rate(dist, T) == pytest.approx(0.3)
    # rises at k = 1 and 2; the odd step after k = 1 goes below L(1), the one after k = 2 does not get below L(3)
    L = np.array([1.0, 0.8, 0.9, 0.7, 0.75, 0.72, 0.6])
    assert er.compensated(L) == (2, 0.5)
    n, frac = er.compensated(np.array([1.0, 0.8, 0.7, 0.6, 0.5]))  # no rise: nothing to compensate
    assert n == 0 and np.isnan(frac)


def test_fig1_runs_plots_and_reports(small_adult):
    params = {**COMMON, "networks": {"N5": {"kind": "erdos_renyi", "nodes": 5, "p": 0.5, "seed": 1},
                                     "N6": {"kind": "erdos_renyi", "nodes": 6, "p": 0.6, "seed": 1}},
              "eta": 0.5, "gammas": [0.2, 5.0], "repeats": 1, "iterations": 10}
    res = er.run_fig1(params)
    assert list(er.plot_fig1(res)) == ["fig1", "fig1_ours"]
    m = er.metrics_fig1(res)["metrics"]
    assert m["t_half"] == 5 and m["N6.g5.dist_ratio_half"] > 0 and "N5.admm.gap_half" in m
    assert m["N5.radmm.rate_ratio"] == m["N5.g0.2.rate_ratio"] and m["N5.radmm.rate_ratio@g5"] == m["N5.g5.rate_ratio"]
    assert m["N5.radmm.even_over_admm.se"] > 0 and m["N5.radmm.even_over_admm@g5.se"] > 0
    # one local solve per odd iteration: the run's Newton steps are those of K solves, against ADMM's 2K
    assert m["N5.g0.2.newton_ratio"] == m["N5.g0.2.newton_steps_total"] / m["N5.admm.newton_steps_total"]
    assert m["N5.L_init"] > m["N5.L_star"]
    # gamma -> larger: the even (linearised) steps move less, so the loss rises less at even steps
    assert m["N5.g5.even_increase_mean"] <= m["N5.g0.2.even_increase_mean"]


def test_fig2_matches_every_comparator_to_radmm_and_reports_the_recorded_totals(small_adult):
    params = {**COMMON, "eta": 1.0, "gamma": 0.2, "alphas": [1.0, 3.0], "dvp": {"eta": 1.0, "eta_sweep": [2.0]},
              "pp": {"pp_icml_blue": {"theta": 1.0, "eta1": 1.0, "q1": 1.05, "q2": 1.04}},
              "pp_grid": {"theta": 1.0, "eta1": 1.0, "q1": [1.01, 1.05], "q2": [1.0, 1.04]},
              "pp_default": "pp_icml_blue"}
    cmp = er.comparators(params)
    # q2 <= q1 only, and the grid point that is the default setting is not run twice
    assert set(cmp) == {"dvp", "dvp_eta2", "pp_icml_blue", "pp_1.01_1.00", "pp_1.05_1.00"}
    assert er.parts_fig2(params) == ["alpha1", "alpha1_sweep", "alpha3", "alpha3_sweep"]
    res = er.run_fig2(params)
    m = er.metrics_fig2(res)
    mt = m["metrics"]
    for a in ("a1", "a3"):
        target = mt[f"{a}.P_target"]
        assert mt[f"{a}.P_final.radmm"] == target  # the record's total is the bound R-ADMM was matched at
        for method in ("dvp", "dvp@dvp_eta2", "pp", "pp@pp_1.01_1.00", "pp@pp_1.05_1.00"):
            assert mt[f"{a}.P_final.{method}"] == pytest.approx(target, rel=1e-8)
    assert m["repeats"]["a1.improvement.dvp"].shape == (2,) and m["repeats"]["L_init"].shape == (2,)
    assert mt["L_star"] < mt["L_init"] and mt["L_zero"] == pytest.approx(np.log(2), rel=1e-12)
    assert list(er.plot_fig2(res)) == ["fig2", "fig2_ours"]
    table = er.table_fig2(res, mt)
    assert "`a1.alpha_dvp`" in table and "`a3.floor_pp@pp_1.01_1.00`" in table and "L_final" not in table
    with pytest.raises(ValueError, match="pp_default"):
        er.comparators({**params, "pp_default": "nothing"})


def test_fig2_sweep_split_into_smaller_parts_gives_the_same_numbers(small_adult, monkeypatch):
    params = {**COMMON, "eta": 1.0, "gamma": 0.2, "alphas": [1.0], "dvp": {"eta": 1.0, "eta_sweep": [2.0]},
              "pp": {"pp_icml_blue": {"theta": 1.0, "eta1": 1.0, "q1": 1.05, "q2": 1.04}},
              "pp_grid": {"theta": 1.0, "eta1": 1.0, "q1": [1.01, 1.05], "q2": [1.0, 1.04]},
              "pp_default": "pp_icml_blue"}
    whole = er.metrics_fig2(er.run_fig2(params))["metrics"]
    monkeypatch.setattr(er, "SWEEP_RUNS_PER_PART", 2)        # 3 swept comparators: parts of 2 and 1
    assert er.parts_fig2(params) == ["alpha1", "alpha1_sweep", "alpha1_sweep.2"]
    split = er.metrics_fig2(er.run_fig2(params))["metrics"]
    assert split == whole


def test_fig3_keeps_the_recorded_privacy_identical_at_every_t_and_every_alpha(small_adult):
    params = {**COMMON, "eta": 1.0, "gamma": 0.2, "q": 1.01, "theta": 1.0, "alpha": 1.0, "alpha_sweep": [3.0, 1.0]}
    assert er.parts_fig3(params) == ["alpha1", "alpha3"]
    res = er.run_fig3(params)
    for r in res["alphas"].values():
        c = r["curves"]
        assert np.allclose(c["radmm"]["P"], c["radmm_madmm"]["P"], rtol=1e-12)
        assert not np.array_equal(c["radmm"]["L"], c["radmm_madmm"]["L"])
    m = er.metrics_fig3(res)
    mt = m["metrics"]
    assert mt["P_max_abs_diff"] < 1e-12 and mt["P_max_abs_diff@alpha3"] < 1e-12 and mt["alpha_var_max"] > 1.0
    assert mt["P_final"] == res["alphas"][1.0]["curves"]["radmm"]["P_total"] and mt["P_final@alpha3"] > mt["P_final"]
    assert mt["L_late_lo.radmm"] <= mt["L_final_mean.radmm"] <= mt["L_late_hi.radmm"]
    assert (mt["paper_axis_lo"], mt["paper_axis_hi"]) == (0.38, 0.44) and m["repeats"]["L_init"].shape == (2,)
    assert list(er.plot_fig3(res)) == ["fig3", "fig3_ours"] and "`alpha_var_min`" in er.table_fig3(res, mt)


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
