"""experiments.zhang2018_radmm: the ZKL-RADMM items run / plot / metrics / table on a small stand-in for Adult, the
privacy matching of Fig. 2 and Fig. 3 read from the runs' records; one item end to end on the real data."""

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


def test_fig1_runs_plots_and_reports(small_adult):
    params = {**COMMON, "networks": {"N5": {"kind": "five_node"}, "N6": {"kind": "erdos_renyi", "nodes": 6, "p": 0.6,
                                                                         "seed": 1}},
              "eta": 0.5, "gammas": [0.2, 5.0], "repeats": 1}
    res = er.run_fig1(params)
    assert list(er.plot_fig1(res)) == ["fig1"]
    m = er.metrics_fig1(res)["metrics"]
    assert m["t_half"] == 3 and m["N6.g5.dist_ratio_half"] > 0 and "N5.admm.gap_half" in m
    # gamma -> larger: the even (linearised) steps move less, so the loss rises less at even steps
    assert m["N5.g5.even_increase_mean"] <= m["N5.g0.2.even_increase_mean"]


def test_fig2_matches_every_comparator_to_radmm_and_reports_the_recorded_totals(small_adult):
    params = {**COMMON, "eta": 1.0, "gamma": 0.2, "alphas": [1.0, 3.0], "dvp": {"eta": 1.0},
              "pp": {"pp_icml_blue": {"theta": 1.0, "eta1": 1.0, "q1": 1.05, "q2": 1.04},
                     "pp_allerton": {"theta": 1.0, "eta1": 1.01, "q1": 1.01, "q2": 1.0}},
              "pp_default": "pp_icml_blue"}
    res = er.run_fig2(params)
    m = er.metrics_fig2(res)
    for a in ("a1", "a3"):
        target = m["metrics"][f"{a}.P_target"]
        assert m["metrics"][f"{a}.P_final.radmm"] == target  # the record's total is the bound R-ADMM was matched at
        for method in ("dvp", "pp", "pp@pp_allerton"):
            assert m["metrics"][f"{a}.P_final.{method}"] == pytest.approx(target, rel=1e-8)
    assert m["repeats"]["a1.improvement.dvp"].shape == (2,)
    assert list(er.plot_fig2(res)) == ["fig2"]
    table = er.table_fig2(res, m["metrics"])
    assert "`a1.alpha_dvp`" in table and "`a3.floor_pp@pp_allerton`" in table and "L_final" not in table


def test_fig3_keeps_the_recorded_privacy_identical_at_every_t(small_adult):
    params = {**COMMON, "eta": 1.0, "gamma": 0.2, "q": 1.01, "theta": 1.0, "alpha": 1.0}
    res = er.run_fig3(params)
    c = res["curves"]
    assert np.allclose(c["radmm"]["P"], c["radmm_madmm"]["P"], rtol=1e-12)
    assert not np.array_equal(c["radmm"]["L"], c["radmm_madmm"]["L"])
    m = er.metrics_fig3(res)
    assert m["metrics"]["P_max_abs_diff"] < 1e-12 and m["metrics"]["alpha_var_max"] > 1.0
    assert m["metrics"]["P_final"] == c["radmm"]["P_total"] == c["radmm"]["P"][-1]
    assert list(er.plot_fig3(res)) == ["fig3"] and "`alpha_var_min`" in er.table_fig3(res, m["metrics"])


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
