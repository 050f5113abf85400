"""experiments.hu2020_sharing: the item functions on a synthetic gisette (the dense-data code path), the sklearn
baselines, bad input and the fig3 item through the runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from repro_dpadmm.experiments import hu2020_sharing as ex


def test_sklearn_baseline_uses_inverse_lambda():
    sk = {"C": "inverse_lam", "solver": "liblinear", "fit_intercept": True, "max_iter": 5000}
    clf = ex.sklearn_model(sk, 1e-3)
    assert clf.C == pytest.approx(1000.0) and clf.solver == "liblinear" and clf.fit_intercept
    assert ex.sklearn_model({**sk, "C": 1.0, "solver": "lbfgs"}, 1e-3).C == 1.0
    with pytest.raises(ValueError, match="inverse_lam"):
        ex.sklearn_C({"C": -1.0}, 1e-3)


def _synthetic_gisette_root(tmp_path, N=300, Nt=100, d=50, seed=0):
    """A project root whose processed gisette was read from small dense LIBSVM files (the gisette loader path)."""
    from sklearn.datasets import dump_svmlight_file

    from repro_dpadmm.datasets import libsvm

    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    arrays = {}
    for split, n in (("train", N), ("test", Nt)):
        X = np.clip(rng.normal(size=(n, d)) * 0.5, -1, 1)            # dense in [-1, 1] like gisette_scale
        y = np.where(X @ w > 0, 1, -1)
        path = tmp_path / f"gisette_{split}.svm"
        dump_svmlight_file(X, y, str(path), zero_based=False)
        Xr, yr = libsvm.load(path, d)
        arrays[f"X_{split}"], arrays[f"y_{split}"] = Xr, yr
    proc = tmp_path / "resources" / "processed"
    proc.mkdir(parents=True)
    np.savez(proc / "gisette.npz", **arrays)
    (proc / "gisette.json").write_text(json.dumps({"name": "gisette", "available": True}))
    return tmp_path


def gisette_like_params():
    return {"seed": 0, "datasets": ["gisette"], "boundaries": [0, 20, 40, 50], "bias": True, "rho": 1.0, "lam": 1e-3,
            "lam_scale": "sum", "noise_on": "shared", "z_penalty": "paper", "iterations": 15, "noise_iterations": 10,
            "noise_sigmas": [0.1, 1.0], "repeats": 2, "settle_tols": [0.005], "privacy_delta": 0.01,
            "settle_horizon": 5, "b1_updates": 12, "rho_variants": [0.5],
            "figure": {"a_epochs": 10, "b_epochs": 8, "a_ylim": [0.0, 1.0]}, "as_run_repeats": 3,
            "variants": ["eq7_literal", "z_penalty_code", "sklearn_defaults", "authors_calibration", "authors_as_run"],
            "sgd": {"epochs": 3, "read_at": 2, "batch_size": 50, "init_std": 0.01, "lr_grid": [1e-3, 1e-2],
                    "lr_select_epochs": 1},
            "sklearn": {"C": "inverse_lam", "solver": "liblinear", "fit_intercept": True, "max_iter": 5000},
            "sklearn_defaults": {"C": 1.0, "solver": "lbfgs", "fit_intercept": True, "max_iter": 5000},
            "panels": {"gisette": {"boundaries": [0, 20, 40, 50], "sigmas": [0.0, 0.3, 10.0], "read_at": 8,
                                   "also_read_at": [4], "epsilons": [1.0, 30.0], "iterations": 6,
                                   "published": [0.3, 0.4, 0.9], "published_read_at": 9,
                                   "published_noise_free": 0.3}},
            "delta": 0.01, "delta_prime": 1e-5, "c1": 2.0, "accounting_delta": 1e-5,
            "corollary_examples": {"epsilons": [0.1], "T": [5, 10]}}


@pytest.fixture
def synthetic_gisette(tmp_path, monkeypatch):
    root = _synthetic_gisette_root(tmp_path)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    return root


def test_convergence_item_on_synthetic_gisette(synthetic_gisette):
    p = gisette_like_params()
    pub = [0.69, 0.5, 0.4, 0.36, 0.35] + [0.34] * 12                     # 17 points: read up to the run's 16
    p.update(published_noise_free=pub, published_sgd=[0.6, 0.36, 0.345, 0.3449, 0.1])   # read up to read_at = 2
    res = ex.run_fig2(p)
    out = ex.metrics_fig2(res)
    m, reps = out["metrics"], out["repeats"]
    assert (m["n_train"], m["n_test"], m["n_features"], m["n_parties"]) == (300, 100, 50, 3)
    assert (m["d_party1"], m["d_party2"], m["d_party3"]) == (20, 20, 10)
    assert res["problem"]["D"].shape[1] == 51 and np.all(res["problem"]["D"][:, 20] == 1)   # bias in party 1
    assert m["admm_final_objective"] < res["admm"].traces["objective"][0, 0]
    assert "noisy_final_test_logloss.sigma1" in m and "noisy_final_test_logloss.sigma1@eq7_literal" in m
    assert reps["noisy_final_test_logloss.sigma1"].shape == (2,) and "admm_final_test_logloss@z_penalty_code" in m
    assert m["admm_objective_epochs_to_settle.tol0.005@z_penalty_code"] == ex.epochs_to_reach(
        res["z_code"].traces["objective"][0], 0.005)
    assert m["noisy_final_test_logloss.sigma1"] == pytest.approx(reps["noisy_final_test_logloss.sigma1"].mean())
    assert m["sgd_read_at"] == 2 and m["sgd_epochs"] == 3
    # the noisy runs' convergence is measured against the noise-free run's final value, not their own
    runs = res["noisy"][None].traces["test_logloss_clean"][2:4]                        # sigma = 1, both repeats
    each = [ex.epochs_to_reach_value(tr, m["admm_final_test_logloss"], 0.005) for tr in runs]
    assert list(reps["noisy_epochs_to_reach_clean.sigma1.tol0.005"]) == each
    assert m["noisy_epochs_to_reach_clean.sigma1.tol0.005"] == pytest.approx(np.mean(each))
    assert "noisy_epochs_to_reach_clean.sigma1.tol0.005@eq7_literal" in m
    assert set(ex.plot_fig2(res)) == {"fig2", "fig2_more"} and set(ex.plot_fig1(res)) == {"fig1", "fig1_more"}
    # the trivial references and the privacy each plotted sigma buys (Theorem 1 with the observed C_1)
    assert m["ref.zero_model_test_logloss"] == pytest.approx(np.log(2)) == m["ref.objective_x0"]
    assert m["ref.prior_test_logloss"] < np.log(2) and 0.5 <= m["ref.majority_rate_test"] <= 1
    C1 = ex.bounds.sensitivity_bound(1e-3, 2.0, m["b1"], 3, 1.0, [21, 20, 10])[0]
    assert m["lemma1_C.party1"] == pytest.approx(C1)
    assert m["theorem1_epsilon.sigma0.1"] == pytest.approx(np.sqrt(2 * np.log(125)) * C1 / 0.1)
    assert m["theorem1_epsilon.sigma0.1"] == pytest.approx(10 * m["theorem1_epsilon.sigma1"])
    assert f"| FDML-SGD learning rate (chosen on the grid) | {res['lr']:g} |" in ex.table_fig2(res, m)
    # convergence in fewer than settle_horizon updates: the largest distance from the final value from update 4 on,
    # per variant (rho 0.5 is another run, not a relabelled default) and per noisy run against its setting's final
    tr = res["admm"].traces["test_logloss_clean"][0]
    assert m["admm_settle_gap"] == pytest.approx(np.abs(tr[4:] - tr[-1]).max())
    z = res["clean_variants"]["rho0.5"].traces["test_logloss_clean"][0]
    assert m["admm_settle_gap@rho0.5"] == pytest.approx(np.abs(z[4:] - z[-1]).max()) != m["admm_settle_gap"]
    gaps = [np.abs(r[4:] - m["admm_final_test_logloss"]).max() for r in runs]
    assert list(reps["noisy_settle_gap.sigma1"]) == pytest.approx(gaps)
    rz = res["noisy"]["rho0.5"].traces["test_logloss_clean"][2:4]
    assert list(reps["noisy_settle_gap.sigma1@rho0.5"]) == pytest.approx(
        [np.abs(r[4:] - m["admm_final_test_logloss@rho0.5"]).max() for r in rz])
    assert "admm_settle_gap@authors_as_run" in m and "noisy_settle_gap.sigma1@authors_as_run" not in m
    # the authors' published runs on the same criteria, cut where ours are read
    assert m["published_settle_gap"] == pytest.approx(0.01) and m["published_final_test_logloss"] == 0.34
    assert m["published_epochs_to_settle.tol0.005"] == 5 and m["published_sgd_epochs_to_settle.tol0.005"] == 2
    # b_1 is read over the first b1_updates = 12 noise-free updates, not over all 15 of this item's run
    norms = res["admm"].traces
    assert m["b1"] == pytest.approx(max(norms[k][0, :13].max() for k in ("norm_x", "norm_y", "norm_z")))


def test_one_b1_whatever_the_item_runs(synthetic_gisette):
    """Fig. 1/2, Fig. 3 and the eps sweep read b_1 over the same b1_updates noise-free updates, so one noise level
    gets one per-iteration epsilon whatever the length of the item's own runs."""
    p = gisette_like_params()
    prob = ex._panel_problem("gisette", p)
    short = ex.noise_free_b1(prob, {**p, "b1_updates": 6})
    b1 = ex.noise_free_b1(prob, p)                                       # runs 12 updates itself
    long_run = ex.run_admm(prob, p, [0.0, 0.3], repeats=2, iterations=20, seed=0, label="x")
    assert ex.noise_free_b1(prob, p, long_run, np.array([True, True, False, False])) == pytest.approx(b1)
    assert b1 >= short
    res = ex.noise_panel("gisette", p)                                   # its runs are 15 updates long
    assert res["privacy"]["b1"] == pytest.approx(b1)
    cal = ex._eps_calibration(prob, p, "gisette")                       # its reference run is 6 updates long
    assert cal["b1"] == pytest.approx(b1)


def test_settle_gap_reads_from_the_horizon_and_refuses_one_past_the_run():
    tr = np.array([0.69, 0.5, 0.40, 0.35, 0.342, 0.34])
    assert ex.settle_gap(tr, tr[-1], 3) == pytest.approx(0.01)
    assert ex.settle_gap(tr, 0.30, 4) == pytest.approx(0.042)
    with pytest.raises(ValueError, match="beyond"):
        ex.settle_gap(tr, 0.34, 6)
    with pytest.raises(ValueError, match="settle_horizon"):
        ex.run_fig2({**gisette_like_params(), "settle_horizon": 12})      # noise_iterations = 10


def test_theorem1_calibration_against_exact_accounting():
    """One Gaussian release with Theorem 1's sigma (C = the sensitivity): its exact epsilon at the same delta is at
    most the claimed one inside the theorem's range, and a third of that noise is not enough (the check can fail)."""
    t = ex.theorem1_step_table([0.1, 1.0], 0.01)
    assert 0 < t["theorem1_step.eps0.1.pld_eps"] < 0.1 and 0.3 < t["theorem1_step.eps1.pld_eps"] < 1.0
    z = np.sqrt(2 * np.log(1.25 / 0.01)) / 1.0
    assert ex.bounds.tight_totals(ex.bounds.spend(z / 3, 1.0, 1), 0.01)["pld_eps"] > 1.0   # a third of the noise


def test_noise_item_on_synthetic_gisette_with_a_missing_dataset(synthetic_gisette):
    p = {**gisette_like_params(), "datasets": ["a9a", "gisette"]}       # no processed a9a under this root
    res = ex.run_fig3(p)
    nm, nreps = ex.metrics_fig3(res)["metrics"], ex.metrics_fig3(res)["repeats"]
    assert res["panels"]["a9a"] is None and nm["a9a.status"] == ex.UNAVAILABLE and "a9a" in res["reasons"]
    assert nm["gisette.test_logloss.sigma10"] > nm["gisette.test_logloss.sigma0"]
    assert "gisette.test_logloss_t4.sigma10" in nm and "gisette.test_logloss.sigma10@eq7_literal" in nreps
    assert nm["gisette.sklearn_C"] == pytest.approx(1000.0) and nm["gisette.sklearn_C@sklearn_defaults"] == 1.0
    assert set(ex.plot_fig3(res)) == {"fig3", "fig3_variants"}
    gain = nm["gisette.sklearn_all"] - nreps["gisette.test_logloss.sigma0"]            # per repeat
    assert nreps["gisette.admm_gain_over_sklearn_all"] == pytest.approx(gain)
    assert nm["gisette.admm_gain_over_sklearn_all"] == pytest.approx(gain.mean())
    # the authors' z-step and the runs as the authors ran them (3 repeats) beside their published values
    assert {"gisette.test_logloss.sigma10@z_penalty_code", "gisette.test_logloss.sigma10@authors_as_run",
            "gisette.test_logloss_t9.sigma10@authors_as_run"} <= set(nm)
    assert "gisette.test_logloss_t9.sigma10" not in nm                  # read at t = 9 for the comparison only
    assert nreps["gisette.test_logloss.sigma10@authors_as_run"].shape == (3,)
    run = res["panels"]["gisette"]["runs"]["authors_as_run"]["clean"][9][2]
    assert nm["gisette.published_gap.sigma10"] == pytest.approx(run.mean() - 0.9)
    floor = ex.PUBLISHED_FLOOR
    assert nm["gisette.published_z.sigma10"] == pytest.approx((0.9 - run.mean())
                                                             / np.sqrt(run.var(ddof=1) * 4 / 3 + floor ** 2))
    clean = res["panels"]["gisette"]["runs"]["authors_as_run"]["clean"][9][0]      # the noise-free runs agree ...
    assert nm["gisette.published_z.sigma0"] == pytest.approx((0.3 - clean.mean()) / floor, rel=1e-6)  # ... to rounding
    assert 0 <= nm["gisette.as_run.x_unchanged"] <= nm["gisette.as_run.x_abnormal"] + 1e-12 <= 1 + 1e-12
    assert nm["gisette.theorem1_epsilon.sigma0.3"] > nm["gisette.theorem1_epsilon.sigma10"] > 0


def test_eps_sweep_totals_come_from_the_runs_records(synthetic_gisette):
    p = gisette_like_params()
    p["panels"]["gisette"]["published"] = [0.3, 0.2]                  # one per epsilon
    res = ex.run_eps_sweep(p)
    em = ex.metrics_eps_sweep(res)["metrics"]
    assert em["gisette.eps1.sigma_party1"] > em["gisette.eps30.sigma_party1"] > 0
    assert em["gisette.eps1.sigma_party1@authors_calibration"] > em["gisette.eps30.sigma_party1@authors_calibration"]
    assert em["gisette.eps30.cor1_delta"] == pytest.approx(6 * 0.01 + 1e-5)
    h = res["panels"]["gisette"]["runs"][None]["history"]
    assert len(h.spends) == 2 * 2 * 3                               # epsilons x repeats x parties
    for e in (1.0, 30.0):                                          # the record is the calibration Theorem 1 asks for
        q = f"gisette.eps{e:g}."
        assert em[q + "noise_multiplier"] == pytest.approx(np.sqrt(2 * np.log(1.25 / 0.01)) / e, rel=1e-14)
        assert em[q + "cor1_epsilon"] == pytest.approx(ex.bounds.corollary1_epsilon(e, 6, 1e-5), rel=1e-12)
        assert em[q + "pld_epsilon"] < em[q + "rdp_epsilon"] < em[q + "cor1_epsilon"]
    assert em["cor1_example.eps0.1.T10"] == pytest.approx(ex.bounds.corollary1_epsilon(0.1, 10, 1e-5))
    assert em["pld_example.eps0.1.T5"] < em["pld_example.eps0.1.T10"]
    assert set(ex.plot_eps_sweep(res)) == {"eps_sweep"}
    assert em["gisette.eps1.sigma_party1@authors_as_run"] > em["gisette.eps30.sigma_party1@authors_as_run"] > 0
    assert em["gisette.published_gap.noise_free"] == pytest.approx(em["gisette.noise_free_test_logloss@authors_as_run"]
                                                                   - 0.3)
    assert em["gisette.published_z.noise_free"] == pytest.approx(-em["gisette.published_gap.noise_free"]
                                                                 / ex.PUBLISHED_FLOOR)
    assert {"gisette.published_z.eps1", "gisette.published_z.eps30", "gisette.as_run.z_maxiter"} <= set(em)
    assert "**gisette**" in ex.table_eps_sweep(res, em)


def test_epochs_to_reach_a_value_does_not_count_levelling_off_elsewhere_or_passing_through():
    trace = np.array([0.69, 0.5, 0.40, 0.35, 0.34, 0.34])
    assert ex.epochs_to_reach(trace, 0.005) == 4                      # its own final value: settled at 4
    assert ex.epochs_to_reach_value(trace, 0.33, 0.005) == 6          # never within 0.005 of 0.33: len(trace)
    assert ex.epochs_to_reach_value(trace, 0.33, 0.011) == 4
    assert ex.epochs_to_reach_value(trace, 0.69, 0.0) == 6
    assert ex.epochs_to_reach_value(np.array([0.69, 0.5, 0.34, 0.36, 0.341]), 0.34, 0.005) == 4   # passing through
    assert ex.epochs_to_reach_value(np.array([0.34, 0.34]), 0.34, 0.005) == 0


def test_make_problem_rejects_mismatched_test_width():
    X = np.ones((4, 5))
    with pytest.raises(ValueError, match="pad"):
        ex.make_problem(X, np.ones(4), np.ones((4, 4)), np.ones(4), [0, 2, 5])


@pytest.mark.mirror
def test_smoke_item_through_runner(processed_root, tmp_path):
    from repro_dpadmm import config as config_mod
    from repro_dpadmm.runner import run_item

    from conftest import ROOT

    if processed_root != ROOT:
        pytest.skip("build the processed datasets in the repository first (snakemake datasets)")
    params = config_mod.item_params("hu2020_sharing", "fig3", ROOT / "config" / "smoke.yaml", root=ROOT)
    metrics = run_item("hu2020_sharing", "fig3", params, tmp_path / "fig3", root=ROOT)
    saved = json.loads((tmp_path / "fig3" / "metrics.json").read_text())
    assert saved["status"] == "ok" and saved == metrics
    assert saved["a9a.status"] == "ok"
    assert saved["a9a.sklearn_all"] < saved["a9a.sklearn_party1"]
    assert 0.2 < saved["a9a.test_logloss.sigma0"] < 0.5
    if saved["gisette.status"] != "ok":
        assert saved["gisette.status"] == "not run: dataset unavailable"


def test_fig3_and_eps_sweep_parts_compute_what_the_whole_item_computes(synthetic_gisette, capsys):
    """Each run batch is its own part ('<dataset>.<variant or default>'); a part run alone draws the streams the
    whole item draws, so the item assembled from part files equals the item computed in one process."""
    from repro_dpadmm.experiments import parts

    p3 = gisette_like_params()
    pe = gisette_like_params()
    pe["panels"]["gisette"]["published"] = [0.3, 0.2]                 # one per epsilon
    assert ex.parts_fig3(p3) == ["gisette.default", "gisette.eq7_literal", "gisette.z_penalty_code",
                                 "gisette.authors_as_run"]
    assert ex.parts_eps_sweep(pe) == ["gisette.default", "gisette.authors_calibration", "gisette.authors_as_run",
                                      "gisette.eq7_literal", "gisette.as_run_noise_free"]
    with pytest.raises(ValueError, match="no part 'gisette.nope'"):
        ex.part_fig3(p3, "gisette.nope")
    items = {"fig3": (p3, ex.run_fig3, ex.metrics_fig3, ex.parts_fig3),
             "eps_sweep": (pe, ex.run_eps_sweep, ex.metrics_eps_sweep, ex.parts_eps_sweep)}
    whole = {item: metrics(run(p)) for item, (p, run, metrics, _) in items.items()}
    for item, (p, _, _, keys) in items.items():
        for key in keys(p):
            parts.write_part(parts.part_path(ex.PAPER, item, key), parts.run_part(ex.PAPER, item, key, p))
    capsys.readouterr()
    from_parts = {item: metrics(run(p)) for item, (p, run, metrics, _) in items.items()}
    assert "computing part" not in capsys.readouterr().out          # every part came from its file
    for item in items:
        a, b = whole[item]["metrics"], from_parts[item]["metrics"]
        assert a.keys() == b.keys()
        timed = [k for k in a if "time" in k]
        assert {k: a[k] for k in a if k not in timed} == {k: b[k] for k in b if k not in timed}
        for k, v in whole[item]["repeats"].items():
            np.testing.assert_array_equal(v, from_parts[item]["repeats"][k])
