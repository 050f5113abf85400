"""experiments.xu2020_dpaccadmm: the step size and gamma the config asks for, a clear error when a run diverges, the
T-sweep and step-size variant metrics, the rate estimator, Fig. 2's privacy totals from the runs' records, every
metric an item writes documented in its claims file, and the item functions (run/plot/metrics/table) on a synthetic
data root and through the runner."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from repro_dpadmm import config as config_mod
from repro_dpadmm.algorithms import linearized as lin
from repro_dpadmm.experiments import xu2020_dpaccadmm as xu
from repro_dpadmm.paths import project_root
from repro_dpadmm.problems import fused_lasso as fl


@pytest.fixture(scope="module")
def tiny_setup():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    X[:, 1] += X[:, 0]
    y = np.where(X @ rng.standard_normal(6) > 0, 1.0, -1.0)
    prob, graph = fl.build(X, y, 1e-3, min_edges=3)
    eta, rule = fl.resolve_step_size({}, "ijcnn1", prob)
    return xu.Setup(name="ijcnn1", problem=prob, graph=graph, X_test=fl.normalise_rows(X), y_test=y,
                    eta=eta, eta_rule=rule, max_row_norm_raw=1.0)


PARAMS = {"iterations": 8, "repeats": 3, "epsilon": 0.05, "epsilons": [0.01, 0.02, 0.1], "reference_iterations": 40,
          "reference_evaluations": 10, "seed": 3, "rate_window": [2, 8], "early_iteration": 3,
          "variants": {"iterations": [4, 8, 16], "eta_rules": ["conservative"], "epsilons": [0.01, 0.1]}}


def load_claims() -> dict:
    return yaml.safe_load((project_root() / "config/claims/xu2020_dpaccadmm.yaml").read_text())


def base(key: str) -> str:
    return key.split("@", 1)[0]


def test_step_size_rule_and_gamma_are_what_the_config_says(tiny_setup):
    prob = tiny_setup.problem
    for item in ("table1", "fig1", "fig2"):
        params = config_mod.item_params(xu.PAPER, item)
        assert params["eta_rule"] == "paper" and params["gamma"] == 1.0 and params["eta"] == "auto"
        eta, rule = fl.resolve_step_size(params, "a9a", prob)
        assert rule == "paper" and eta == pytest.approx(1.0 / prob.L_f)
    assert xu.with_rule(tiny_setup, {}, "conservative").eta == pytest.approx(1.0 / (prob.L_f + prob.norm_AtA))
    # what the runs use: eta and gamma end up in the run's settings
    run = xu.run_algorithm(tiny_setup, "dp_admm", {**PARAMS, "gamma": 1.0}, sigma=0.1, repeats=1,
                           rngs=xu.noise_streams(PARAMS, "t", "ijcnn1", [0.1], 1))
    assert run.settings["eta"] == tiny_setup.eta == pytest.approx(1.0 / prob.L_f) and run.settings["gamma"] == 1.0
    with pytest.raises(ValueError, match="gamma"):
        xu.run_algorithm(tiny_setup, "admm", {**PARAMS, "gamma": 0})


def test_diverging_run_raises_naming_dataset_and_eta(tiny_setup):
    bad = dataclasses.replace(tiny_setup, eta=1000.0)
    with pytest.raises(lin.DivergedError, match=r"ijcnn1: .*eta = 1000\b") as err:
        xu.fig2_dataset(bad, PARAMS)
    assert err.value.name == "ijcnn1" and err.value.eta == 1000.0
    # a non-finite iterate stops the run at once, with the same information
    nan_setup = dataclasses.replace(tiny_setup, eta=float("1e308"))
    with pytest.raises(lin.DivergedError, match=r"ijcnn1: .*eta = 1e\+308.*not finite"):
        xu.run_algorithm(nan_setup, "admm", PARAMS, T=5)
    # at the default step every noise-free run goes down
    r = xu.fig2_dataset(tiny_setup, PARAMS)
    for a in ("admm", "acc_admm"):
        assert r["F_trace"][a][-1] < r["F_trace"][a][0]


def test_t_sweep_and_step_variant_metrics_exist_for_every_t(tiny_setup):
    assert xu.fig2_variants(PARAMS) == {"T4": {"T": 4, "eta_rule": None}, "T16": {"T": 16, "eta_rule": None},
                                         "conservative": {"T": 8, "eta_rule": "conservative"}}
    results = xu.fig2_runs(tiny_setup, PARAMS)
    m, reps = xu.fig2_dataset_metrics(tiny_setup, PARAMS, results)
    assert set(results) == {"", "T4", "T16", "conservative"}
    assert [results[v]["T"] for v in ("T4", "", "T16")] == [4, 8, 16]
    headline = {k for k in m if "@" not in k}
    for v in ("T4", "T16", "conservative"):
        keys = {base(k) for k in m if k.endswith(f"@{v}")}
        for e in ("eps0.01", "eps0.1"):
            for a in xu.PRIVATE:
                for what in ("F_T", "acc_T", "excess_F"):
                    key = f"{what}.{a}.ijcnn1.{e}"
                    assert key in keys and key in headline and f"{key}@{v}" in reps
                    assert len(reps[f"{key}@{v}"]) == PARAMS["repeats"]
        for what in ("F_T", "acc_T", "F_drop", "max_rise"):
            assert f"{what}.admm.ijcnn1" in keys
        assert m[f"iterations.ijcnn1@{v}"] == results[v]["T"]
    # Theorem 1's sigma follows each T; the step variant keeps the headline T and changes eta only
    assert m["sigma.ijcnn1.eps0.1@T16"] == pytest.approx(2 * m["sigma.ijcnn1.eps0.1@T4"])
    assert m["eta.ijcnn1@conservative"] < m["eta.ijcnn1"]
    # the same noise draws for both private algorithms and for every variant: the T16 run starts like the T4 run's
    # first iterations would with the same sigma (same generator per epsilon and repeat)
    np.testing.assert_array_equal(reps["F_T.dp_admm.ijcnn1.eps0.01"], results[""]["F_T"]["dp_admm"][0])
    again = xu.fig2_dataset_metrics(tiny_setup, PARAMS, xu.fig2_runs(tiny_setup, PARAMS))[1]
    np.testing.assert_array_equal(again["F_T.dp_acc_admm.ijcnn1.eps0.1@T16"], reps["F_T.dp_acc_admm.ijcnn1.eps0.1@T16"])


@pytest.mark.parametrize("p", [1.0, 2.0])
def test_slope_estimator_recovers_the_exponent(p):
    t = np.arange(0, 301, dtype=float)
    gap = np.empty_like(t)
    gap[1:] = 3.7 / t[1:] ** p
    gap[0] = np.inf  # t = 0 is outside every window
    assert abs(xu.loglog_slope(gap, 10, 300) + p) <= 0.05
    # a constant offset (a floor) makes the slope flatter, never steeper
    assert xu.loglog_slope(gap + 1e-3, 10, 300) > -p
    batch = np.stack([gap, 2 * gap])
    np.testing.assert_allclose(xu.loglog_slope(batch, 10, 300), [-p, -p], atol=0.05)
    with pytest.raises(ValueError, match="t_lo"):
        xu.loglog_slope(gap, 0, 300)


def test_replace_one_witness_is_twice_the_proofs_sensitivity(tiny_setup):
    w = xu.replace_one_witness(tiny_setup.problem)
    assert 1.99 < w <= 2.0  # the proof of Theorem 1 takes 1 (Delta = c/n)


def test_metrics_documented_and_claims_well_formed(tiny_setup):
    claims = load_claims()
    documented = claims["metrics"]
    r1 = xu.fig1_dataset(tiny_setup, PARAMS)
    m1, rep1 = xu.fig1_metrics("ijcnn1", r1, PARAMS)
    m1c, _ = xu.fig1_metrics("ijcnn1", r1, PARAMS, "conservative")
    m2, rep2 = xu.fig2_dataset_metrics(tiny_setup, PARAMS, xu.fig2_runs(tiny_setup, PARAMS))
    for item, m, rep in (("fig1", {**m1, **m1c}, rep1), ("fig2", m2, rep2)):
        keys = {base(k) for k in m}
        assert keys <= set(documented[item]), keys - set(documented[item])
        assert set(rep) <= set(m)  # every per-repeat key is also a flat key (its mean)
        for k, v in rep.items():
            assert m[k] == pytest.approx(float(np.mean(v)))
    variants = claims["variants"]
    kinds = {"approx", "equal", "less", "greater", "monotone", "range", "true", "false", "ratio_range"}
    ids = [c["id"] for c in claims["claims"]]
    assert len(ids) == len(set(ids))
    for c in claims["claims"]:
        assert c["id"].startswith(f"xu2020_dpaccadmm.{c['item']}.")
        assert c["checks"] or c.get("not_checkable")
        for v in c.get("variants", []):
            assert v in variants and variants[v].get("item", c["item"]) == c["item"]
        for ch in c["checks"]:
            assert ch["kind"] in kinds
            for key in [ch.get("metric"), ch.get("left"), ch.get("right"), *ch.get("metrics", [])]:
                if isinstance(key, str):
                    assert key in documented[c["item"]], (c["id"], key)
    # variant names follow the config's sweep
    v = config_mod.item_params(xu.PAPER, "fig2")["variants"]
    assert {f"T{t}" for t in v["iterations"] if t != 100} | set(v["eta_rules"]) == \
        {k for k in variants if re.fullmatch(r"T\d+|conservative", k)}


def test_fig1_gaps_rates_and_fig2_shapes(tiny_setup):
    r = xu.fig1_dataset(tiny_setup, PARAMS)
    assert r["lowest_short_minus_F_star"] >= -1e-12  # F* lies below every short run
    assert r["gap"]["dp_acc_admm"].shape == (PARAMS["repeats"], PARAMS["iterations"] + 1)
    assert np.all(np.diff(r["cpu_time"]["admm"]) >= 0)
    m, rep = xu.fig1_metrics("ijcnn1", r, PARAMS)
    assert len(rep["excess_T.acc_pair.ijcnn1"]) == PARAMS["repeats"]
    assert m["slope.acc_admm.ijcnn1"] == pytest.approx(float(xu.loglog_slope(r["gap"]["acc_admm"], 2, 8)[0]))
    r2 = xu.fig2_dataset(tiny_setup, PARAMS)
    assert r2["F_T"]["dp_admm"].shape == (3, PARAMS["repeats"]) and r2["F_T"]["admm"].shape == (1, 1)
    assert np.all(np.diff(r2["sigma"]) < 0)
    p = xu.privacy_metrics("ijcnn1", tiny_setup.problem, PARAMS, r2)
    # the paper's sensitivity: accounting never exceeds the target
    assert p["eps_rdp_over_target_max.ijcnn1"] <= 1 + 1e-9
    # replace-one: RDP over all orders exceeds the target at some budget, tight PLD does not
    assert p["eps_rdp_replace_one_over_target_max.ijcnn1"] > 1
    assert all(p[f"eps_pld_replace_one_over_target.ijcnn1.{xu.eps_key(e)}"] <= 1 for e in PARAMS["epsilons"])
    # every total is the accountant's on the noise the runs used, as recorded (one record per budget and repeat)
    assert len(r2["spends"]) == 3 * PARAMS["repeats"]
    for i, e in enumerate(PARAMS["epsilons"]):
        record, k = r2["spends"][i * PARAMS["repeats"]], xu.eps_key(e)
        assert record.event.event.noise_multiplier == r2["sigma"][i] / (2.0 / tiny_setup.problem.n)
        assert p[f"eps_rdp_replace_one.ijcnn1.{k}"] == xu.xu2020.accounted_epsilon(
            r2["sigma"][i], PARAMS["iterations"], tiny_setup.problem.n, sensitivity_factor=2.0)
        assert p[f"eps_rdp.ijcnn1.{k}"] == xu.xu2020.accounted_epsilon(
            r2["sigma"][i], PARAMS["iterations"], tiny_setup.problem.n, sensitivity_factor=1.0)


def _synthetic_root(tmp_path: Path) -> Path:
    """A project root with a small processed 'ijcnn1' (22 features) and an unavailable 'bio_train'."""
    rng = np.random.default_rng(5)
    arrays = {}
    for split, n in (("train", 300), ("test", 100)):
        X = rng.standard_normal((n, 22))
        X[:, 1] += X[:, 0]
        X[:, 3] += X[:, 2]
        arrays[f"X_{split}"], arrays[f"y_{split}"] = X, np.where(X[:, 0] - X[:, 2] > 0, 1.0, -1.0)
    proc = tmp_path / "resources" / "processed"
    proc.mkdir(parents=True)
    np.savez(proc / "ijcnn1.npz", **arrays)
    (proc / "ijcnn1.json").write_text(json.dumps({"name": "ijcnn1", "available": True,
                                                  "arrays": {k: list(v.shape) for k, v in arrays.items()}}))
    (proc / "bio_train.json").write_text(json.dumps({"name": "bio_train", "available": False,
                                                     "reason": "could not obtain the archive"}))
    return tmp_path


def test_items_on_a_synthetic_root(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(_synthetic_root(tmp_path)))
    params = {**PARAMS, "datasets": ["ijcnn1", "bio_train"], "graph": {"alphas": [0.3, 0.1], "tol": 1e-3},
              "variants": {"iterations": [4], "eta_rules": ["conservative"], "epsilons": [0.01]}}
    t1 = xu.run_table1(params)
    m1 = xu.metrics_table1(t1)["metrics"]
    assert m1["n_train.ijcnn1"] == 300 and m1["available.bio_train"] is False
    assert m1["status.bio_train"] == xu.UNAVAILABLE and "n_train.bio_train" not in m1
    assert "| ijcnn1 | 300 | 49990 |" in xu.table_table1(t1, m1)
    f1 = xu.run_fig1({**params, "variants": {"eta_rules": ["conservative"]}})
    out1 = xu.metrics_fig1(f1)
    assert set(xu.plot_fig1(f1)) == {"fig1", "fig1_conservative"}
    assert out1["metrics"]["status.bio_train"] == xu.UNAVAILABLE
    assert "gap_T.dp_admm.ijcnn1@conservative" in out1["repeats"] and "F_star.ijcnn1" in out1["metrics"]
    assert "bio_train**: not run" in xu.table_fig1(f1, out1["metrics"])
    f2 = xu.run_fig2(params)
    out2 = xu.metrics_fig2(f2)
    assert set(xu.plot_fig2(f2)) == {"fig2", "fig2_variants"} and f2["variants"] == ["T4", "conservative"]
    assert out2["metrics"]["iterations.ijcnn1@T4"] == 4 and "eps_pld_replace_one.ijcnn1.eps0.1" in out2["metrics"]
    assert set(out2["repeats"]) <= set(out2["metrics"])
    assert "PLD, 2c/n (replace-one)" in xu.table_fig2(f2, out2["metrics"])


@pytest.mark.mirror
def test_smoke_table1_through_runner(processed_root, tmp_path):
    from repro_dpadmm import config
    from repro_dpadmm.runner import run_item

    ROOT = project_root(Path(__file__).parent)
    for entry in ("Snakefile", "config", "notebooks", "workflow"):  # a freshly built data root: borrow the project
        if not (processed_root / entry).exists():
            (processed_root / entry).symlink_to(ROOT / entry)
    params = config.item_params("xu2020_dpaccadmm", "table1", processed_root / "config/smoke.yaml",
                                root=processed_root)
    params["datasets"] = ["ijcnn1", "bio_train"]  # the small one, and one that may be unavailable
    metrics = run_item("xu2020_dpaccadmm", "table1", params, tmp_path / "table1", root=processed_root)
    assert metrics["status"] == "ok"
    on_disk = json.loads((tmp_path / "table1" / "metrics.json").read_text())
    assert on_disk == metrics
    assert metrics["n_train.ijcnn1"] == 49990 and metrics["n_test.ijcnn1"] == 91701 and metrics["d.ijcnn1"] == 22
    assert metrics["edges.ijcnn1"] >= 22 and metrics["eta.ijcnn1"] > 0
    if not metrics["available.bio_train"]:
        assert metrics["status.bio_train"] == "not run: dataset unavailable"
    assert (tmp_path / "table1" / "table1.html").stat().st_size > 0
