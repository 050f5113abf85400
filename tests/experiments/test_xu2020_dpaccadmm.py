"""experiments.xu2020_dpaccadmm: the tuned step and gamma the config asks for, the same noise draws for both private
methods, a clear error when a run diverges, the (eta, T) sweep's variant metrics, the speed and floor measures, the
trivial references, Fig. 2's privacy totals from the runs' records, the feature scaling, the set-up memo, every
metric an item writes documented in its claims file, and the item functions (run/plot/metrics/table) on a synthetic
data root and through the runner."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from repro_dpadmm import config as config_mod
from repro_dpadmm.algorithms import linearized as lin
from repro_dpadmm.experiments import xu2020_dpaccadmm as xu
from repro_dpadmm.paths import project_root
from repro_dpadmm.problems import fused_lasso as fl


def tiny_setup(eta: float = 4.0) -> xu.Setup:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    X[:, 1] += X[:, 0]
    y = np.where(X @ rng.standard_normal(6) > 0, 1.0, -1.0)
    prob, graph = fl.build(X, y, 1e-3, min_edges=3)
    return xu.Setup(name="ijcnn1", problem=prob, graph=graph, X_test=fl.normalise_rows(X), y_test=y, eta=eta,
                    eta_source="config", tuning={}, features="none", max_row_norm_raw=1.0, max_abs_feature_raw=1.0)


PARAMS = {"datasets": ["ijcnn1"], "iterations": 8, "repeats": 3, "epsilon": 0.05, "epsilons": [0.01, 0.02, 0.1],
          "reference_iterations": 40, "reference_evaluations": 10, "reference_runs": ["acc_admm"], "seed": 3,
          "eta_grid": [1.0, 4.0], "tune_iterations": 8, "timing_runs": 1,
          "variants": {"iterations": [4, 8], "epsilons": [0.01, 0.1], "repeats": 2}}


CLAIMS = project_root(Path(__file__).parent) / "config/claims/xu2020_dpaccadmm.yaml"


def load_claims() -> dict:
    """The claims file as the engine reads it: claims over their cases and metric-doc patterns expanded."""
    from repro_dpadmm.claims.expand import expand
    from repro_dpadmm.safeload import load_yaml

    return expand(load_yaml(CLAIMS)).data


def base(key: str) -> str:
    return key.split("@", 1)[0]


def test_the_config_tunes_the_step_per_dataset_with_gamma_one():
    for item in ("table1", "fig1", "fig2"):
        params = config_mod.item_params(xu.PAPER, item)
        assert params["eta"] == "tuned" and params["gamma"] == 1.0
        assert xu.eta_grid(params) == [0.25, 1.0, 4.0, 16.0, 64.0, 256.0] and params["tune_iterations"] == 100
    s = tiny_setup()
    best, table = lin.tune_step(s.problem, [0.5, 4.0, 1.0], T=30)
    assert sorted(table) == [0.5, 1.0, 4.0]
    score = {e: 0.5 * (r["admm"] + r["acc_admm"]) for e, r in table.items()}
    assert best == min(score, key=score.get)
    # every noise-free objective is that of a run at that step
    run = lin.run(s.problem, T=30, eta=0.5)
    assert table[0.5]["admm"] == pytest.approx(float(s.problem.objective(run.x_T)[0]))
    with pytest.raises(ValueError, match="positive"):
        lin.tune_step(s.problem, [0.0, 1.0], T=3)
    with pytest.raises(ValueError, match="eta must be"):
        xu.configured_eta({"eta": "auto"}, "a9a")
    # what the runs use: eta and gamma end up in the run's settings
    r = xu.run_algorithm(s, "dp_admm", {**PARAMS, "gamma": 1.0}, sigma=0.1, repeats=1,
                         rngs=xu.noise_streams(PARAMS, "t", "ijcnn1", [0.1], 1))
    assert r.settings["eta"] == 4.0 and r.settings["gamma"] == 1.0
    with pytest.raises(ValueError, match="gamma"):
        xu.run_algorithm(s, "admm", {**PARAMS, "gamma": 0})


def test_both_private_methods_draw_the_same_noise():
    """At T = 1 Algorithm 3 is Algorithm 2 (x^_0 = x_0, u^_0 = u_0): with the same draw P_1 their iterates agree
    exactly. Sharing one list of Generators would give DP-AccADMM the draws after DP-ADMM's."""
    s = tiny_setup()
    r = xu.fig2_dataset(s, PARAMS, T=1, epsilons=[0.01, 0.1], repeats=3)
    np.testing.assert_array_equal(r["F_T"]["dp_admm"], r["F_T"]["dp_acc_admm"])
    f1 = xu.fig1_step(s, PARAMS, 4.0, 1)
    np.testing.assert_array_equal(f1["F"]["dp_admm"], f1["F"]["dp_acc_admm"])
    shared = xu.noise_streams(PARAMS, "fig2", "ijcnn1", [0.1], 1)
    first = xu.run_algorithm(s, "dp_admm", PARAMS, sigma=0.3, rngs=shared, T=1).x_T
    second = xu.run_algorithm(s, "dp_acc_admm", PARAMS, sigma=0.3, rngs=shared, T=1).x_T
    assert not np.allclose(first, second)
    # and at every T the draws of a (dataset, epsilon, repeat) are the same for every step and T (paired variants)
    a = xu.run_algorithm(s, "dp_admm", PARAMS, sigma=0.3, T=2, rngs=xu.noise_streams(PARAMS, "x", "d", [0.1], 1))
    b = xu.run_algorithm(s, "dp_admm", PARAMS, sigma=0.3, T=5, rngs=xu.noise_streams(PARAMS, "x", "d", [0.1], 1))
    np.testing.assert_array_equal(a.x[0], b.x[0, :3])


def test_diverging_run_raises_naming_dataset_and_eta():
    bad = dataclasses.replace(tiny_setup(), eta=1000.0)
    with pytest.raises(lin.DivergedError, match=r"ijcnn1: .*eta = 1000\b") as err:
        xu.fig2_dataset(bad, PARAMS, T=8, epsilons=[0.1], repeats=1)
    assert err.value.name == "ijcnn1" and err.value.eta == 1000.0
    with pytest.raises(lin.DivergedError, match=r"ijcnn1: .*eta = 1e\+308.*not finite"):
        xu.run_algorithm(dataclasses.replace(bad, eta=float("1e308")), "admm", PARAMS, T=5)


def test_a_swept_setting_that_diverges_is_recorded_and_the_default_raises():
    s = tiny_setup()
    params = {**PARAMS, "iterations": 8}
    r = xu.swept_setting(xu.fig2_step, s, params, 1000.0, 8)
    assert set(r) == {"eta", "T", "diverged"} and "eta = 1000" in r["diverged"]
    with pytest.raises(lin.DivergedError):   # the dataset's own step at the headline T must run
        xu.swept_setting(xu.fig2_step, dataclasses.replace(s, eta=1000.0), params, 1000.0, 8)
    ok = xu.swept_setting(xu.fig2_step, s, params, 1.0, 4)
    steps, diverged = xu.stable_steps({"eta1.T4": {"step": ok}, "eta1000.T8": {"step": r}, "rho": {"rho": {}}})
    assert list(steps) == [(1.0, 4)] and list(diverged) == ["eta1000_T8"]


def test_the_tuned_step_obeys_lemma5_and_keeps_the_unbounded_best():
    for item in ("table1", "fig1", "fig2"):
        assert xu.eta_bound_reading(config_mod.item_params(xu.PAPER, item)) == "averaged"
    table = {0.25: {"admm": 0.5, "acc_admm": 0.4}, 4.0: {"admm": 0.3, "acc_admm": 0.3},
             16.0: {"admm": 0.2, "acc_admm": 0.2}, 64.0: {"admm": np.inf, "acc_admm": 0.1}}
    # the best step at most the bound, and the best without it beside it
    assert xu.choose_step(table, 8.8) == (4.0, 16.0)
    assert xu.choose_step(table, 4.0) == (4.0, 16.0)          # the bound itself is allowed (Lemma 5: eta <= 1/L_f)
    assert xu.choose_step(table, 3.9) == (0.25, 16.0)
    assert xu.choose_step(table, float("inf")) == (16.0, 16.0)
    with pytest.raises(ValueError, match="at most Lemma 5"):
        xu.choose_step(table, 0.1)
    with pytest.raises(ValueError, match="diverged"):
        xu.choose_step({0.25: {"admm": np.inf, "acc_admm": 1.0}}, 1.0)
    assert xu.step_bound(0.25, 0.1, "averaged") == pytest.approx(10.0)
    assert xu.step_bound(0.25, 0.1, "worst_case") == pytest.approx(4.0)
    assert xu.step_bound(0.25, 0.1, "none") == float("inf")
    with pytest.raises(ValueError, match="eta_bound"):
        xu.eta_bound_reading({"eta_bound": "loose"})


def test_step_grid_position_averaged_smoothness_and_eq18_constant():
    assert xu.steps_from_edge(16.0, [0.25, 1.0, 4.0, 16.0, 64.0, 256.0]) == 2
    assert xu.steps_from_edge(256.0, [0.25, 1.0, 4.0, 16.0, 64.0, 256.0]) == 0
    assert xu.steps_from_edge(1.0, [1.0, 4.0]) == 0 and xu.steps_from_edge(3.0, [1.0, 4.0]) == 0
    p = tiny_setup().problem
    X = np.asarray(p.X.todense()) if hasattr(p.X, "todense") else np.asarray(p.X)
    L_avg = 0.25 * np.linalg.eigvalsh(X.T @ X / p.n)[-1]
    assert xu.averaged_smoothness(p) == pytest.approx(L_avg, rel=1e-8)
    assert L_avg <= p.L_f + 1e-12    # the averaged loss is never less smooth than the worst sample
    # eq. (18)'s c_1 from its definition, with the pseudo-inverse computed directly
    A = p.A.toarray()
    Ap = np.linalg.pinv(A)
    for rho, c1 in xu.eq18_c1(p, 4.0, {"gamma": 1.0}).items():
        G = np.eye(p.d) - 4.0 * rho * A.T @ A
        want = (np.linalg.norm(G, 2) / 8.0 + rho * np.linalg.norm(A.T @ A, 2) / 2
                + p.L_f * np.linalg.norm(Ap @ Ap.T, 2) / (2 * rho))
        assert c1 == pytest.approx(want, rel=1e-9)


def test_first_passage_and_levels():
    gap = np.array([[1.0, 0.5, 0.2, 0.3], [1.0, 0.9, 0.8, 0.7]])
    # crossing 0.45 between t = 1 (0.5) and t = 2 (0.2), linearly in log gap; the second row never does
    want = 1 + np.log(0.5 / 0.45) / np.log(0.5 / 0.2)
    np.testing.assert_allclose(xu.first_passage(gap, 0.45), [want, np.nan])
    np.testing.assert_allclose(xu.first_passage(gap, 0.2), [2.0, np.nan])
    assert float(xu.first_passage(gap[0], 1.0)) == 0.0 and np.isnan(xu.first_passage(gap[0], np.nan))
    assert xu.floor_of(gap) == pytest.approx(0.5)
    assert xu.level_between(1.0, 0.01) == pytest.approx(0.1)
    assert np.isnan(xu.level_between(1.0, 1.5)) and np.isnan(xu.level_between(1.0, 0.0))
    # one level per row (the whole-run speed: each run's own floor), against a single noise-free row too
    np.testing.assert_allclose(xu.first_passage(gap, np.array([0.45, 0.75])),
                               [want, 2 + np.log(0.8 / 0.75) / np.log(0.8 / 0.7)])
    np.testing.assert_allclose(xu.first_passage(gap[:1], np.array([0.45, 0.2])), [want, 2.0])


def test_sweep_settings_and_their_variant_metrics():
    s = tiny_setup()
    steps = {(e, T): xu.fig2_step(s, PARAMS, e, T) for e in (1.0, 4.0) for T in (4, 8)}
    assert steps[(4.0, 8)]["F_T"]["dp_admm"].shape == (3, 3)   # the default: every budget, `repeats` runs
    assert steps[(1.0, 8)]["F_T"]["dp_admm"].shape == (2, 2)   # a variant: its budgets and repeats
    info = s.info()
    m, reps = xu.fig2_dataset_metrics({"info": info, "steps": steps, "witness": 2.0}, PARAMS)
    for v in ("eta1_T4", "eta1_T8", "eta4_T4", "eta4_T8"):
        for a in xu.PRIVATE:
            for what in ("F_T", "acc_T", "excess_F", "acc_loss"):
                for e in ("eps0.01", "eps0.1"):
                    assert f"{what}.{a}.ijcnn1.{e}@{v}" in reps and len(reps[f"{what}.{a}.ijcnn1.{e}@{v}"]) in (2, 3)
    # the default's own variant holds the default's numbers on the variants' budgets
    np.testing.assert_array_equal(reps["F_T.dp_acc_admm.ijcnn1.eps0.1@eta4_T8"], reps["F_T.dp_acc_admm.ijcnn1.eps0.1"])
    assert "F_T.dp_admm.ijcnn1.eps0.02@eta4_T8" not in m
    assert m["eta.ijcnn1@eta1_T4"] == 1.0 and m["iterations.ijcnn1@eta1_T4"] == 4
    # Theorem 1's sigma follows T
    assert m["sigma.ijcnn1.eps0.1@eta1_T8"] == pytest.approx(np.sqrt(2) * m["sigma.ijcnn1.eps0.1@eta1_T4"])
    # the references: F(x_0) = log 2 at x_0 = 0; the excess of staying at x_0; the majority rate
    assert m["F_x0.ijcnn1"] == pytest.approx(np.log(2.0))
    assert m["excess_x0.dp_acc_admm.ijcnn1"] == pytest.approx(np.log(2.0) - m["F_T.acc_admm.ijcnn1"])
    assert m["majority_rate.ijcnn1"] == pytest.approx(max(np.mean(s.y_test > 0), np.mean(s.y_test < 0)))
    assert m["acc_gain_x0.dp_admm.ijcnn1"] == pytest.approx(m["acc_T.admm.ijcnn1"] - m["majority_rate.ijcnn1"])


def test_fig1_metrics_speed_floor_and_rate():
    s = tiny_setup()
    steps = {(e, T): xu.fig1_step(s, PARAMS, e, T) for e in (1.0, 4.0) for T in (4, 8)}
    assert set(steps[(4.0, 8)]["cpu_per_iter"]) == set(xu.ALGORITHMS)
    ref = xu.reference_minimum({"acc_admm": xu.fig1_reference(s, PARAMS, "acc_admm")})
    d = {"info": s.info(), "reference": ref, "steps": steps}
    m, reps = xu.fig1_dataset_metrics(d, PARAMS)
    assert m["gap_x0.ijcnn1"] == pytest.approx(np.log(2.0) - ref["F_star"])
    assert len(reps["excess_T.acc_pair.ijcnn1"]) == PARAMS["repeats"]
    assert len(reps["excess_T.acc_pair.ijcnn1@eta1_T4"]) == PARAMS["variants"]["repeats"]
    F = steps[(4.0, 8)]["F"]
    np.testing.assert_allclose(reps["second_half.dp_admm.ijcnn1"],
                               (F["dp_admm"][:, 8] - ref["F_star"]) / (F["dp_admm"][:, 4] - ref["F_star"]))
    # the speed ratio: the iterations the private method takes to its level over the noise-free one's
    g = {a: F[a] - ref["F_star"] for a in xu.ALGORITHMS}
    level = xu.level_between(m["gap_x0.ijcnn1"], xu.floor_of(g["dp_acc_admm"]))
    want = xu.first_passage(g["dp_acc_admm"], level) / xu.first_passage(g["acc_admm"][0], level)
    np.testing.assert_allclose(reps["speed_ratio.acc_pair.ijcnn1"], want)
    # up to x_2 the two private methods agree (same draws, first extrapolation weight 0): the level lies below it
    np.testing.assert_array_equal(F["dp_admm"][:, :3], F["dp_acc_admm"][:, :3])
    level = xu.level_between(g["dp_admm"].mean(0)[2], max(xu.floor_of(g["dp_admm"]), xu.floor_of(g["dp_acc_admm"])))
    np.testing.assert_allclose(reps["iters_to_level.dp_admm.ijcnn1"], xu.first_passage(g["dp_admm"], level))
    assert m["cpu_per_iter.dp_admm.ijcnn1"] > 0
    # the rates: AccADMM's gap over ADMM's at a tenth, a third and the end of the longest run at the same step
    F8 = steps[(4.0, 8)]["F"]
    for label, t in (("t_tenth", 0), ("t_third", 2), ("t_end", 8)):
        assert m[f"gap_ratio.acc_over_admm.ijcnn1.{label}@eta4_T4"] == pytest.approx(
            (F8["acc_admm"][0, t] - ref["F_star"]) / (F8["admm"][0, t] - ref["F_star"]))
    assert m["lowest_short_minus_F_star.ijcnn1"] >= -1e-12  # F* lies below every short run
    # the whole run: where each run ends against its lowest gap, and the descent to within 2x of that floor
    np.testing.assert_allclose(reps["end_over_min.dp_acc_admm.ijcnn1"],
                               g["dp_acc_admm"][:, -1] / g["dp_acc_admm"][:, 1:].min(axis=1))
    level = xu.FLOOR_FACTOR * g["dp_admm"][:, 1:].min(axis=1)
    np.testing.assert_allclose(reps["settle_ratio.admm_pair.ijcnn1"],
                               xu.first_passage(g["dp_admm"], level) / xu.first_passage(g["admm"], level))
    assert m["gap_fall.admm.ijcnn1@eta4_T4"] == pytest.approx(
        (F8["admm"][0, 0] - ref["F_star"]) / (F8["admm"][0, 8] - ref["F_star"]))


def test_replace_one_witness_is_twice_the_proofs_sensitivity():
    w = xu.replace_one_witness(tiny_setup().problem)
    assert 1.99 < w <= 2.0  # the proof of Theorem 1 takes 1 (Delta = c/n)


def test_privacy_totals_from_the_runs_records():
    s = tiny_setup()
    r2 = xu.fig2_dataset(s, PARAMS, T=8, epsilons=PARAMS["epsilons"], repeats=PARAMS["repeats"])
    p = xu.privacy_metrics(PARAMS, r2)
    assert p["eps_rdp_over_target_max"] <= 1 + 1e-9   # the paper's sensitivity: accounting never exceeds the target
    assert p["eps_rdp_replace_one_over_target_max"] > 1  # replace-one: RDP over all orders exceeds it at some budget
    assert all(p[f"eps_pld_replace_one_over_target.{xu.eps_key(e)}"] <= 1 for e in PARAMS["epsilons"])
    assert len(r2["spends"]) == 3 * PARAMS["repeats"]
    for i, e in enumerate(PARAMS["epsilons"]):
        record, k = r2["spends"][i * PARAMS["repeats"]], xu.eps_key(e)
        assert record.event.event.noise_multiplier == r2["sigma"][i] / (2.0 / s.problem.n)
        assert p[f"eps_rdp_replace_one.{k}"] == xu.xu2020.accounted_epsilon(r2["sigma"][i], 8, s.problem.n,
                                                                             sensitivity_factor=2.0)
    ratios = xu.theorem2_noise_ratios(PARAMS, [0.01, 0.02, 0.05, 0.1])
    assert ratios["theorem2_noise_ratio.eps0.01_eps0.02"] == pytest.approx(3.997, abs=1e-3)
    assert xu.theorem2_noise_ratios(PARAMS, [0.01, 0.1]) == {}


def test_feature_scaling():
    X_tr = np.array([[0.0, 10.0], [2.0, 30.0], [1.0, 20.0]])
    X_te = np.array([[4.0, 10.0]])
    a, b = xu.scale_features(X_tr, X_te, "minmax")
    np.testing.assert_allclose(a, [[-1, -1], [1, 1], [0, 0]])
    np.testing.assert_allclose(b, [[3, -1]])  # the test split with the training split's map
    assert xu.scale_features(X_tr, X_te, "none")[0] is X_tr
    with pytest.raises(ValueError, match="feature scaling"):
        xu.scale_features(X_tr, X_te, "zscore")
    params = {**PARAMS, "datasets": ["bio_train"], "variants": {"feature_scaling": {"bio_train": "minmax"}}}
    assert xu.scaling_variants(params) == {"bio_train": "minmax"}
    # its headline setting and its own reference run are jobs of their own
    assert xu.parts_fig1(params)[-4:] == ["bio_train.ref.acc_admm", "bio_train.minmax", "bio_train.minmax.ref.acc_admm",
                                          "bio_train.restart"]
    assert xu.parts_fig2(params)[-1] == "bio_train.minmax"


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
    npz = {"sha256": hashlib.sha256((proc / "ijcnn1.npz").read_bytes()).hexdigest(),
           "size": (proc / "ijcnn1.npz").stat().st_size}
    (proc / "ijcnn1.json").write_text(json.dumps({"name": "ijcnn1", "available": True, "npz": npz,
                                                  "arrays": {k: list(v.shape) for k, v in arrays.items()}}))
    (proc / "bio_train.json").write_text(json.dumps({"name": "bio_train", "available": False,
                                                     "reason": "could not obtain the archive"}))
    return tmp_path


def test_setup_memo_saves_the_graph_and_the_tuning(tmp_path, monkeypatch):
    root = _synthetic_root(tmp_path)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    params = {**PARAMS, "eta": "tuned", "graph": {"alphas": [0.3, 0.1], "tol": 1e-3}}
    first = xu.setup("ijcnn1", params)
    memo = list((root / "resources" / "cache" / xu.PAPER).glob("ijcnn1-*.json"))
    assert len(memo) == 1
    content = json.loads(memo[0].read_text())
    assert content["edges"] == first.graph.edges.tolist() and set(content["tuning"]) == {"1.0", "4.0"}
    again = xu.setup("ijcnn1", params)  # read from the memo: the same problem, graph and step
    assert again.eta == first.eta and again.tuning == first.tuning and again.graph.seconds == first.graph.seconds
    np.testing.assert_array_equal(again.problem.A.toarray(), first.problem.A.toarray())
    # other settings are another memo; a step given as a number needs no tuning
    xu.setup("ijcnn1", {**params, "eta_grid": [2.0]})
    assert len(list(memo[0].parent.glob("ijcnn1-*.json"))) == 2
    fixed = xu.setup("ijcnn1", {**params, "eta": 0.7})
    assert fixed.eta == 0.7 and fixed.eta_source == "config" and fixed.tuning == {}


def test_metrics_documented_and_claims_well_formed(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(_synthetic_root(tmp_path)))
    claims = load_claims()
    documented = claims["metrics"]
    params = {**PARAMS, "graph": {"alphas": [0.3, 0.1], "tol": 1e-3}, "rho_sweep": {"rhos": [10.0], "epsilons": [0.05]},
              "datasets": ["ijcnn1", "bio_train"]}
    for item in ("table1", "fig1", "fig2"):
        run = getattr(xu, f"run_{item}")(params)
        out = getattr(xu, f"metrics_{item}")(run)
        keys = {base(k) for k in out["metrics"]}
        assert keys <= set(documented[item]), sorted(keys - set(documented[item]))[:10]
        assert set(out.get("repeats", {})) <= set(out["metrics"])


def plain_params(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "variants"}


def test_items_on_a_synthetic_root(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(_synthetic_root(tmp_path)))
    params = {**PARAMS, "datasets": ["ijcnn1", "bio_train"], "graph": {"alphas": [0.3, 0.1], "tol": 1e-3},
              "eta": "tuned", "rho_sweep": {"rhos": [10.0], "epsilons": [0.05]}}
    t1 = xu.run_table1(params)
    m1 = xu.metrics_table1(t1)["metrics"]
    assert m1["n_train.ijcnn1"] == 300 and m1["available.bio_train"] is False
    assert m1["status.bio_train"] == xu.UNAVAILABLE and "n_train.bio_train" not in m1
    assert m1["eta.ijcnn1"] in (1.0, 4.0) and {"tune_F.admm.ijcnn1.eta1", "tune_F.acc_admm.ijcnn1.eta4"} <= set(m1)
    assert "| ijcnn1 | 300 | 49990 |" in xu.table_table1(t1, m1)
    # one part per step, holding every T of the sweep
    assert xu.parts_fig1(params)[:3] == ["ijcnn1.eta1", "ijcnn1.eta4", "ijcnn1.ref.acc_admm"]
    assert xu.step_settings(params, "ijcnn1") == ["ijcnn1.eta1.T4", "ijcnn1.eta1.T8", "ijcnn1.eta4.T4",
                                                  "ijcnn1.eta4.T8"]
    f1 = xu.run_fig1(params)
    out1 = xu.metrics_fig1(f1)
    assert set(xu.plot_fig1(f1)) == {"fig1", "fig1_sweep"}
    assert out1["metrics"]["status.bio_train"] == xu.UNAVAILABLE
    assert "gap_T.dp_admm.ijcnn1@eta1_T4" in out1["repeats"] and "F_star.ijcnn1" in out1["metrics"]
    # the restart reading: the headline setting with Goldstein et al.'s rule in both accelerated methods
    assert "ijcnn1.restart" in xu.parts_fig1(params) and "ijcnn1.restart" not in xu.parts_fig1(plain_params(params))
    assert f1["datasets"]["ijcnn1"]["restart"]["T"] == params["iterations"]
    assert "end_over_min.dp_acc_admm.ijcnn1@restart" in out1["repeats"]
    assert "bio_train**: not run" in xu.table_fig1(f1, out1["metrics"])
    assert "ijcnn1.rho" in xu.parts_fig2(params)
    f2 = xu.run_fig2(params)
    out2 = xu.metrics_fig2(f2)
    assert set(xu.plot_fig2(f2)) == {"fig2", "fig2_sweep"}
    assert out2["metrics"]["iterations.ijcnn1@eta1_T4"] == 4 and "eps_pld_replace_one.eps0.1" in out2["metrics"]
    assert len(out2["repeats"]["excess_F.dp_admm.ijcnn1.eps0.05.rho10"]) == PARAMS["repeats"]
    assert set(out2["repeats"]) <= set(out2["metrics"])
    assert "PLD, 2c/n (replace-one)" in xu.table_fig2(f2, out2["metrics"])
    # without a sweep only the tuned step runs; the other grid steps' parts hold nothing
    plain = {k: v for k, v in params.items() if k != "variants"}
    assert xu.parts_fig2(plain) == ["ijcnn1.eta1", "ijcnn1.eta4", "ijcnn1.rho", "bio_train.eta1", "bio_train.eta4",
                                    "bio_train.rho"]
    assert xu.step_settings(plain, "ijcnn1") == ["ijcnn1.eta1.T8", "ijcnn1.eta4.T8"]
    f2p = xu.run_fig2(plain)
    assert list(f2p["datasets"]["ijcnn1"]["steps"]) == [(out2["metrics"]["eta.ijcnn1"], 8)]
    assert not any("@" in k for k in xu.metrics_fig2(f2p)["metrics"])


def _without_timings(value):
    """A part's value without its CPU-time measurements (cpu_per_iter: the only numbers that differ run to run)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "cpu_per_iter"}
    return value


def _assert_same(a, b, where: str = "") -> None:
    """a == b: arrays exactly (NaN where NaN), dicts key by key, everything else by ==."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, sorted(a), sorted(b) if isinstance(b, dict) else b)
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("item", ["fig1", "fig2"])
def test_a_step_part_holds_each_setting_as_computed_alone(tmp_path, monkeypatch, item):
    """A step part '<dataset>.eta<e>' runs every T of its step in one job; each setting's numbers equal those of the
    setting run alone (its own '<dataset>.eta<e>.T<T>'), and the combined item sees the settings one by one."""
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(_synthetic_root(tmp_path)))
    params = {**PARAMS, "graph": {"alphas": [0.3, 0.1], "tol": 1e-3}, "eta": "tuned"}
    part, setting = getattr(xu, f"part_{item}"), getattr(xu, f"setting_{item}")
    keys = getattr(xu, f"parts_{item}")(params)
    assert [k for k in keys if k.startswith("ijcnn1.eta")] == ["ijcnn1.eta1", "ijcnn1.eta4"]
    for key in ("ijcnn1.eta1", "ijcnn1.eta4"):
        grouped = part(params, key)["settings"]
        alone = {k.removeprefix("ijcnn1."): setting(params, k) for k in xu.step_settings(params, "ijcnn1")
                 if k.startswith(key + ".T")}
        assert list(grouped) == list(alone) == [f"{key.removeprefix('ijcnn1.')}.T{T}" for T in (4, 8)]
        _assert_same(_without_timings(grouped), _without_timings(alone), key)
    with pytest.raises(ValueError, match="no part ijcnn1.eta2"):
        part(params, "ijcnn1.eta2")
    grouped_item, _ = xu._gathered(item, params)
    assert {"eta1.T4", "eta1.T8", "eta4.T4", "eta4.T8"} <= set(grouped_item["ijcnn1"])
    assert not any(xu.is_step_part(w) for w in grouped_item["ijcnn1"])


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
    assert metrics["edges.ijcnn1"] >= 22 and metrics["eta.ijcnn1"] in params["eta_grid"]
    if not metrics["available.bio_train"]:
        assert metrics["status.bio_train"] == "not run: dataset unavailable"
    else:
        assert metrics["majority_rate.bio_train"] > 0.99 and metrics["max_abs_feature_raw.bio_train"] > 1e4
    assert (tmp_path / "table1" / "table1.html").stat().st_size > 0


def test_table1_runs_the_available_datasets_and_marks_one_with_a_damaged_sidecar_not_run(tmp_path, monkeypatch):
    """README: items that use several datasets run the available ones and mark the others. A sidecar that is not
    valid JSON makes its dataset "not run", naming the file, instead of stopping the item."""
    root = _synthetic_root(tmp_path)
    (root / "resources/processed/bio_train.json").write_text("{")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    params = {**PARAMS, "datasets": ["ijcnn1", "bio_train"], "graph": {"alphas": [0.3, 0.1], "tol": 1e-3}}
    t1 = xu.run_table1(params)
    m1 = xu.metrics_table1(t1)["metrics"]
    assert m1["n_train.ijcnn1"] == 300 and m1["available.bio_train"] is False
    assert m1["status.bio_train"] == xu.UNAVAILABLE and "n_train.bio_train" not in m1
    assert "bio_train.json:1: not valid JSON" in t1["missing"]["bio_train"]
    table = xu.table_table1(t1, m1)
    assert f"- **bio_train**: {xu.UNAVAILABLE} (" in table and "bio_train.json:1: not valid JSON" in table
    assert "| ijcnn1 | 300 | 49990 |" in table
