"""XU experiments: every metric an item writes is documented in its claims file, and the claim checks work."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.experiments import xu2020_dpaccadmm as xu
from repro_dpadmm.problems import fused_lasso as fl


@pytest.fixture(scope="module")
def tiny_setup():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    X[:, 1] += X[:, 0]
    y = np.where(X @ rng.standard_normal(6) > 0, 1.0, -1.0)
    prob, graph = fl.build(X, y, 1e-3, min_edges=3)
    return xu.Setup(name="ijcnn1", problem=prob, graph=graph, X_test=fl.normalise_rows(X), y_test=y,
                    eta=prob.default_eta(1.0), eta_rule="test", max_row_norm_raw=1.0)


PARAMS = {"iterations": 8, "repeats": 2, "epsilon": 0.05, "epsilons": [0.01, 0.02, 0.1], "reference_iterations": 40,
          "reference_evaluations": 10, "seed": 3}


def test_metrics_documented_and_claims_well_formed(tiny_setup):
    claims = xu.load_claims()
    documented = claims["metrics"]
    m1 = xu.fig1_metrics("ijcnn1", xu.fig1_dataset(tiny_setup, PARAMS), 3)
    m2 = xu.fig2_metrics("ijcnn1", xu.fig2_dataset(tiny_setup, PARAMS))
    assert set(m1) <= set(documented["fig1"]), set(m1) - set(documented["fig1"])
    assert set(m2) <= set(documented["fig2"]), set(m2) - set(documented["fig2"])
    kinds = {"approx", "less", "greater", "monotone", "range", "true", "ratio_range"}
    ids = [c["id"] for c in claims["claims"]]
    assert len(ids) == len(set(ids))
    for c in claims["claims"]:
        assert c["id"].startswith(f"xu2020_dpaccadmm.{c['item']}.")
        assert c["checks"] or c.get("not_checkable")
        for ch in c["checks"]:
            assert ch["kind"] in kinds
            for key in [ch.get("metric"), ch.get("left"), ch.get("right"), *ch.get("metrics", [])]:
                if isinstance(key, str):
                    assert key in documented[c["item"]], (c["id"], key)


def test_fig1_gaps_nonnegative_and_fig2_shapes(tiny_setup):
    r = xu.fig1_dataset(tiny_setup, PARAMS)
    assert r["lowest_short_minus_F_star"] >= -1e-12  # F* lies below every short run
    assert r["gap_mean"]["dp_acc_admm"].shape == (PARAMS["iterations"] + 1,)
    assert np.all(np.diff(r["cpu_time"]["admm"]) >= 0)
    r2 = xu.fig2_dataset(tiny_setup, PARAMS)
    assert r2["F_T"]["dp_admm"].shape == (3,) and r2["F_T"]["admm"].shape == (1,)
    # accounting with the paper's sensitivity never exceeds the target; sigma falls with epsilon
    assert np.all(r2["eps_rdp"] <= r2["epsilons"] + 1e-9)
    assert np.all(np.diff(r2["sigma"]) < 0)
    # the same seed gives the same numbers
    again = xu.fig2_dataset(tiny_setup, PARAMS)
    np.testing.assert_array_equal(again["F_T"]["dp_acc_admm"], r2["F_T"]["dp_acc_admm"])


def test_claim_evaluation():
    m = {"a": 1.0, "b": 2.0, "c": 3.0, "status.bio_train": "not run: dataset unavailable"}
    assert xu._check({"kind": "less", "left": "a", "right": "b"}, m)[0] is True
    assert xu._check({"kind": "greater", "left": "a", "right": "b"}, m)[0] is False
    assert xu._check({"kind": "monotone", "metrics": ["a", "b", "c"], "direction": "increasing"}, m)[0] is True
    assert xu._check({"kind": "ratio_range", "left": "a", "right": "b", "max": 0.4}, m)[0] is False
    assert xu._check({"kind": "approx", "metric": "c", "expected": 3.1, "abs_tol": 0.2}, m)[0] is True
    assert xu._check({"kind": "range", "metric": "zz", "max": 1}, m)[0] is None
    rows = {r["id"]: r["outcome"] for r in xu.evaluate_claims("fig2", m)}
    assert rows["xu2020_dpaccadmm.fig2.dpacc_better_eps0.07_bio_train"].startswith("not run")
    assert rows["xu2020_dpaccadmm.fig2.theorem2_utility_bound"] == "not checkable"


def test_long_run_params_metrics_and_noise_stream(tiny_setup):
    assert xu.fig2_long_params(PARAMS) is None  # no long run unless asked
    long = xu.fig2_long_params({**PARAMS, "long_run": {"iterations": 12, "repeats": 3, "epsilons": [0.01, 0.08]}})
    assert (long["iterations"], long["repeats"], long["epsilons"]) == (12, 3, [0.01, 0.08])
    assert long["seed"] == PARAMS["seed"] and "long_run" in long  # everything else as fig2
    r = xu.fig2_dataset(tiny_setup, long, stream="fig2_long")
    m = xu.fig2_long_metrics("ijcnn1", r)
    assert m and all(k.startswith("long.") for k in m)
    assert m["long.F_T.dp_admm.ijcnn1.eps0.08"] == r["F_T"]["dp_admm"][1]
    assert "long.sigma.ijcnn1.eps0.01" not in m  # privacy keys are reported by the main run only
    documented = xu.load_claims()["metrics"]["fig2"]
    assert set(m) <= set(documented), set(m) - set(documented)
    # its own noise: the same settings under the main stream give other draws
    main = xu.fig2_dataset(tiny_setup, long)
    assert not np.array_equal(main["F_T"]["dp_admm"], r["F_T"]["dp_admm"])
    # every long claim reads long.* keys only and names its T = 100 counterpart
    ids = {c["id"] for c in xu.load_claims()["claims"]}
    for c in xu.load_claims()["claims"]:
        if ".fig2.long." in c["id"]:
            assert c["id"].replace(".long.", ".", 1) in ids
            for ch in c["checks"]:
                for key in [ch.get("metric"), ch.get("left"), ch.get("right"), *ch.get("metrics", [])]:
                    assert not isinstance(key, str) or key.startswith("long."), (c["id"], key)
