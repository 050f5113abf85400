"""experiments.huang2019_dpadmm on tiny settings of the real Adult data: each item's run / plot / metrics / table
functions (the notebook skeleton's calls) run, write the keys its claims read and feed claims_table; DP-ADMM runs
are shared between items; the privacy metrics are the totals of what the runs recorded."""

from __future__ import annotations

import numpy as np
import pytest

import json
from pathlib import Path

from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.experiments import huang2019_dpadmm as ex
from repro_dpadmm.experiments.common import claims_table, write_metrics
from repro_dpadmm.privacy.bounds import huang2019 as hb

pytestmark = pytest.mark.mirror

TINY = {"datasets": ["adult_huang2019"], "iterations": 3, "repeats": 2, "rho": 0.1, "lam_n": 1e-6, "n_train": 2000,
        "n_test": 300, "err_every": 2}
SWEEP = {**TINY, "reg": "l2", "agents": 20, "epsilons": [0.05, 0.2], "deltas": [1e-3, 1e-5], "fixed_delta": 1e-5,
         "fixed_epsilon": 0.2}
COMPARE = {**SWEEP, "admm": {"tol": 1e-8}, "dpsgd": {"lr": 0.1, "clip": 1.0, "conventions": ["sum", "average"],
                                                     "lr_grid": [0.001, 0.1, 0.3]}}


@pytest.fixture(scope="module")
def adult(processed_root):
    from repro_dpadmm.datasets import load

    d = load("adult_huang2019", processed_root)
    return d["X"], d["y"]


def test_n_sweep_l2_metrics_and_checks(adult):
    X, y = adult
    p = {**TINY, "reg": "l2", "agents": [10, 20], "epsilon": 0.1, "delta": 1e-4}
    res = ex.n_sweep(X, y, p, 0)
    m, rep = ex.n_sweep_metrics(res)
    assert rep["el_final.n10"].shape == (2,) and m["el_final.n10"] == pytest.approx(rep["el_final.n10"].mean())
    assert m["err_final.n10@global_model"] == m["errw_final.n10"]
    assert m["n_train"] == 2000 and m["n_test"] == 300 and m["m.n10"] == 200 and m["m.n20"] == 100
    assert m["max_row_norm"] <= 1 + 1e-9
    assert m["sigma_k1.n20"] > m["sigma_k1.n10"]  # smaller m_i, more noise (eq. (14))
    assert m["sigma_k1.n10"] > m["sigma_kT.n10"] and m["sigma_nonincreasing.n10"] is True  # eta falls with k
    np.testing.assert_allclose(rep["el_x0"], np.log(2.0))
    assert rep["majority.err"].shape == (2,) and np.all((rep["majority.err"] > 0.1) & (rep["majority.err"] < 0.5))
    assert m["eta_plugin_rel_diff.n10"] < 1e-12
    z = np.sqrt(2 * np.log(1.25e4)) / 0.1  # eps-bar of t = 3 steps: t/(2z^2) + sqrt(2 t ln(1/delta))/z
    assert m["privacy.dpadmm.eps0.1_delta1e-4.paper_eps"] == pytest.approx(3 / (2 * z * z) + np.sqrt(6 * np.log(1e4)) / z)


def test_comparison_from_its_part_files_equals_the_whole_run(adult, tmp_path):
    """Figs. 3 / 6 as parts (one job each under Snakemake): written, read back and combined, the same numbers."""
    from repro_dpadmm.experiments import parts

    X, y = adult
    params = {**COMPARE, "seed": 0}
    keys = ex.parts_fig6(params)
    assert keys == ["admm", "eps0.05-delta1e-05", "eps0.2-delta1e-05", "eps0.2-delta0.001", "dvp-eps0.05",
                    "dvp-eps0.2", "dpsgd-lr-eps0.05-delta1e-05", "dpsgd-lr-eps0.2-delta1e-05",
                    "dpsgd-lr-eps0.2-delta0.001"]
    for key in keys:
        parts.write_part(parts.part_path(ex.PAPER, "fig6", key, tmp_path),
                         parts.record(key, params, value=ex.comparison_part(X, y, params, 0, key)))

    def never(key):
        raise AssertionError(f"part {key} recomputed")

    from_files = ex.combine_comparison(params, parts.gather(ex.PAPER, "fig6", params, never, out_dir=tmp_path))
    (m1, r1), (m2, r2) = ex.comparison_metrics(from_files), ex.comparison_metrics(ex.comparison(X, y, params, 0))
    assert m1 == m2 and r1.keys() == r2.keys()
    for k in r1:
        np.testing.assert_array_equal(r1[k], r2[k])


def test_sweep_and_comparison_share_dpadmm_runs(adult):
    """DP-ADMM at one setting gives identical numbers in the sweep item and the comparison item (same streams)."""
    X, y = adult
    s = ex.privacy_sweep(X, y, SWEEP, 0)
    c = ex.comparison(X, y, COMPARE, 0)
    (ms, rs), (mc, rc) = ex.privacy_sweep_metrics(s), ex.comparison_metrics(c)
    np.testing.assert_allclose(rs["aov_x0"], SWEEP["agents"] * np.log(2.0))  # the zero start's AOV, n ln 2
    for e, d in ex.unique_settings(SWEEP):
        k = ex.skey(e, d)
        assert ms[f"el_final.{k}"] == mc[f"el_final.dpadmm.{k}"]
        np.testing.assert_array_equal(rs[f"aov_k1.{k}"], s["runs"][(e, d)]["curves"]["aov"]["all"][:, 1])
        np.testing.assert_array_equal(rs[f"aov_final.{k}"], s["runs"][(e, d)]["curves"]["aov"]["final"])
        for key in (f"err_final.pvp.{k}", f"err_final.dvp.{k}", f"err_final.dpsgd.{k}",
                    f"err_final.dpsgd.{k}@dpsgd_avg", f"err_final.dpadmm.{k}@global_model", f"el_k10.dpsgd.{k}",
                    f"majority_share.dpsgd.{k}", f"majority_share.dpsgd.{k}@dpsgd_avg"):
            assert key in mc and rc[key].shape == (2,)
    assert 0.0 <= mc["majority_share.dpsgd.eps0.2_delta1e-5"] <= 1.0
    assert mc["privacy.dvp.eps0.2.paper_eps"] == pytest.approx(0.6)
    # every private method's totals come from its own run's record, and equal DP-ADMM's at the same (eps, delta)
    for e, d in ex.unique_settings(SWEEP):
        k = ex.skey(e, d)
        assert mc[f"privacy.pvp.{k}.pld_eps"] == mc[f"privacy.dpsgd.{k}.pld_eps"] == mc[f"privacy.dpadmm.{k}.pld_eps"]
        assert mc[f"privacy.dpadmm.{k}.paper_eps"] == ms[f"privacy.dpadmm.{k}.paper_eps"] == hb.eps_bar(e, d, 3)
    # the majority-class error of each repeat is that of the constant classifier on its test rows
    assert np.all((rc["majority.err"] > 0.1) & (rc["majority.err"] < 0.5))
    assert "share predicted majority" in ex.majority_markdown(mc, c)


def test_lr_sweep_reads_in_both_conventions_and_contains_the_configured_run(adult):
    """DPSGD's learning-rate sweep: its run at the configured lr is the comparison's DPSGD (same draws); its best lr is
    written in the default (sum) convention's units and, as the variant dpsgd_avg, in the average convention's (n
    times larger); the trivial references and ADMM's distance to the optimum are written per repeat."""
    X, y = adult
    c = ex.comparison(X, y, COMPARE, 0)
    m, rep = ex.comparison_metrics(c)
    n = COMPARE["agents"]
    for e, d in ex.settings(COMPARE)["eps"]:
        k = ex.skey(e, d)
        np.testing.assert_array_equal(rep[f"lr_sweep.el.lr0.1.{k}"], rep[f"el_final.dpsgd.{k}"])
        best = m[f"lr_sweep.best_lr.{k}"]
        assert best in COMPARE["dpsgd"]["lr_grid"] and m[f"lr_sweep.best_lr.{k}@dpsgd_avg"] == pytest.approx(n * best)
        assert m[f"lr_sweep.best_over_paper_log10.{k}"] == pytest.approx(np.log10(best / 0.1))
        assert m[f"lr_sweep.el.lr{best:g}.{k}"] == min(m[f"lr_sweep.el.lr{lr:g}.{k}"] for lr in COMPARE["dpsgd"]["lr_grid"])
        np.testing.assert_allclose(rep[f"lr_sweep.paper_el_excess.{k}"],
                                   rep[f"lr_sweep.el.lr0.1.{k}"] - rep[f"lr_sweep.el.lr{best:g}.{k}"])
        # the average convention's lr 0.1 is the sum convention's 0.1 / n: not on this grid, so no excess is written
        assert f"lr_sweep.paper_el_excess.{k}@dpsgd_avg" not in m
        # PVP's excess error over the better of DP-ADMM and the constant classifier, per repeat
        np.testing.assert_allclose(rep[f"excess_err.pvp.{k}"], rep[f"err_final.pvp.{k}"]
                                   - np.minimum(rep[f"err_final.dpadmm.{k}"], rep["majority.err"]))
    np.testing.assert_allclose(rep["el_x0"], np.log(2.0))
    assert rep["admm.dist_to_opt"].shape == (2,) and m["central.w_norm"] > 0
    np.testing.assert_allclose(rep["admm.el_gap_to_opt"], rep["el_final.admm"] - rep["central.el"])
    assert "lr (sum convention)" in ex.lr_sweep_markdown(m, c)


def test_settings_share_their_noise_draws(adult):
    """Common random numbers: DP-ADMM at two deltas draws the same standard normals, so with the step sizes of one
    setting the two runs coincide once sigma is rescaled; here: the first noisy iterate differs only by the sigma
    ratio (w^1 is noise-free and the same for both)."""
    X, y = adult
    p = {**SWEEP, "iterations": 1}
    data = ex._data(X, y, p, 0, 20)
    h = {d: ex._dpadmm_run(data, "l2", 0.2, d, p, 0, 20) for d in (1e-3, 1e-5)}
    w = cs.dpadmm(data, reg="l2", T=1, epsilon=0.2, delta=1e-3, add_noise=False, record=False).meta["w_tilde"]
    xi = {d: h[d].meta["w_tilde"] - cs.dpadmm(data, reg="l2", T=1, epsilon=0.2, delta=d, add_noise=False,
                                               record=False).meta["w_tilde"] for d in h}
    ratio = float(np.ravel(h[1e-5].meta["sigma"])[0] / np.ravel(h[1e-3].meta["sigma"])[0])
    np.testing.assert_allclose(xi[1e-5], ratio * xi[1e-3], rtol=1e-9, atol=1e-12)
    assert w.shape == xi[1e-3].shape


def test_timing_table(adult):
    X, y = adult
    p = {**TINY, "agents": 10, "epsilons": [0.1], "delta": 1e-4, "timing_rounds": 2, "admm": {"tol": 1e-8}}
    res = ex.timing(X, y, p, 0)
    m = ex.timing_metrics(res)
    assert m["time.dpadmm.eps0.1"] > 0 and m["ratio.admm_over_dpadmm.eps0.1"] > 0
    assert m["ratio.pvp_over_admm.eps0.1.lo"] <= m["ratio.pvp_over_admm.eps0.1"] <= m["ratio.pvp_over_admm.eps0.1.hi"]
    assert m["ratio.pvp_over_admm.eps0.1.se"] >= 0 and res["raw"]["admm"].shape == (2,)
    assert m["machine.numpy"] == np.__version__
    assert "paper 67.242 s" in ex.table2_markdown(res)


def test_setting_keys():
    assert ex.skey(0.1, 1e-4) == "eps0.1_delta1e-4" and ex.skey(0.01, 1e-3) == "eps0.01_delta1e-3"
    assert ex.settings(SWEEP)["delta"] == [(0.2, 1e-3), (0.2, 1e-5)]


ITEMS = {"fig1": {**TINY, "reg": "l1", "agents": [10, 20], "epsilon": 0.1, "delta": 1e-4},
         "fig2": {**SWEEP, "reg": "l1"}, "fig3": {**COMPARE, "reg": "l1"},
         "fig4": {**TINY, "reg": "l2", "agents": [10, 20], "epsilon": 0.1, "delta": 1e-4},
         "fig5": SWEEP, "fig6": COMPARE,
         "table2": {**TINY, "agents": 10, "epsilons": [0.1], "delta": 1e-4, "timing_rounds": 2, "admm": {"tol": 1e-8}}}
FIGURES = {"fig1": ["fig1", "fig1_detail"], "fig2": ["fig2", "fig2_detail"],
           "fig3": ["fig3", "fig3_detail", "fig3_detail_delta", "fig3_summary", "fig3_lr"],
           "fig4": ["fig4", "fig4_detail"], "fig5": ["fig5", "fig5_detail"],
           "fig6": ["fig6", "fig6_detail", "fig6_detail_delta", "fig6_summary", "fig6_lr"], "table2": ["table2"]}


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_item_skeleton_functions(item, processed_root, tmp_path):
    """What the notebook does: run, plot (the figure file names the report looks for), metrics (written and judged
    by claims_table), table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = getattr(ex, f"run_{item}")({**ITEMS[item], "seed": 0}, processed_root)
    figs = getattr(ex, f"plot_{item}")(res)
    assert list(figs) == FIGURES[item]
    plt.close("all")
    m = getattr(ex, f"metrics_{item}")(res)
    assert set(m) <= {"metrics", "repeats"} and m["metrics"]
    written = json.loads(write_metrics(tmp_path, **m).read_text())
    assert written["status"] == "ok" and ("repeats" in written) == (item != "table2")
    table = getattr(ex, f"table_{item}")(res, m["metrics"])
    assert table.startswith("Adult (HUANG preprocessing): 45222 rows x 104 features")
    assert "claims reproduced" in claims_table(ex.PAPER, item, **m)


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks" / ex.PAPER


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_notebook_is_the_skeleton(item):
    """The item's notebook calls its own run / plot / metrics / table functions and holds no loop, print or plot."""
    nb = json.loads((NOTEBOOKS / f"{item}.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for call in (f"ex.run_{item}(params)", f"ex.plot_{item}(result)", f"ex.metrics_{item}(result)",
                 f"ex.table_{item}(result", f'ITEM = "{ex.PAPER}", "{item}"', "claims_table(PAPER, ITEM, **m)"):
        assert call in code
    for banned in ("for ", "print(", "plt.", "np."):
        assert banned not in code
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")


def test_dpsgd_tuned_reading_and_the_aggregated_models_el(adult):
    """The reading dpsgd_tuned is DPSGD at the grid's lowest-EL learning rate of each setting of both sweeps (one
    model for both conventions); the sweep's run at the configured lr is the comparison's DPSGD; the aggregated
    model's EL is written for DP-ADMM and PVP as the reading global_model, and the constant-step ablation as runs
    of its own with its eta_i^t variant."""
    X, y = adult
    c = ex.comparison(X, y, COMPARE, 0)
    m, rep = ex.comparison_metrics(c)
    grid = COMPARE["dpsgd"]["lr_grid"]
    for e, d in ex.unique_settings(COMPARE):
        k = ex.skey(e, d)
        means = {g: np.mean(c["lr_sweep"][(g, e, d)]["el"]) for g in grid}
        best = min(means, key=means.get)
        assert m[f"lr_sweep.tuned_lr.{k}"] == best and m[f"lr_sweep.tuned_at_edge.{k}"] == (best in (grid[0], grid[-1]))
        np.testing.assert_array_equal(rep[f"el_final.dpsgd.{k}@dpsgd_tuned"], c["lr_sweep"][(best, e, d)]["el"])
        np.testing.assert_array_equal(c["lr_sweep"][(0.1, e, d)]["el"], rep[f"el_final.dpsgd.{k}"])
        np.testing.assert_array_equal(c["lr_sweep"][(0.1, e, d)]["el_k10"], rep[f"el_k10.dpsgd.{k}"])
        for name in ("dpadmm", "pvp"):
            assert rep[f"el_final.{name}.{k}@global_model"].shape == (2,)
            assert not np.array_equal(rep[f"el_final.{name}.{k}@global_model"], rep[f"el_final.{name}.{k}"])
        assert f"el_final.dpadmm_const.{k}@const_eta_last" in m and f"err_final.dpadmm_const.{k}" in m
    assert "dpsgd.el_spread_eps@dpsgd_tuned" in m


def test_the_constant_step_ablation_runs_on_dpadmms_draws(adult):
    """At t = 1 the schedule frozen at eta_i^1 is the schedule itself: the ablation's run is DP-ADMM's, draw for draw;
    at t = 3 the two differ."""
    X, y = adult
    key = "eps0.2-delta1e-05"
    one = ex.comparison_part(X, y, {**COMPARE, "iterations": 1}, 0, key)["curves"]
    np.testing.assert_array_equal(one["dpadmm"]["el"]["all"], one["dpadmm_const"]["el"]["all"])
    three = ex.comparison_part(X, y, {**COMPARE, "iterations": 3}, 0, key)["curves"]
    assert not np.array_equal(three["dpadmm"]["el"]["all"], three["dpadmm_const"]["el"]["all"])


def test_aov_tail_share_and_c0_at_4t(adult):
    X, y = adult
    p = {**SWEEP, "iterations": 6}
    m, rep = ex.privacy_sweep_metrics(ex.privacy_sweep(X, y, p, 0))
    for e, d in ex.unique_settings(p):
        k = ex.skey(e, d)
        np.testing.assert_allclose(rep[f"aov_tail_share.{k}"], (rep[f"aov_half.{k}"] - rep[f"aov_final.{k}"])
                                   / (rep[f"aov_k1.{k}"] - rep[f"aov_final.{k}"]))
        assert m[f"c0_4t.{k}"] == pytest.approx(hb.eps_bar(e, d, 24) / (np.sqrt(24) * e))
