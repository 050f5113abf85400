"""beyond/frontier: the methods (mechanisms) on the common problem, the jobs, the aggregation and the cluster path.

The accountants, the bisection and each mechanism's calibration are tested in tests/privacy and tests/mechanisms."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT, fresh_copy, snakemake

from repro_dpadmm import config
from repro_dpadmm.experiments import beyond_frontier as bf
from repro_dpadmm.mechanisms import layouts

PARAMS = config.item_params("beyond", "frontier")


# ------------------------------------------------------------------------------------------------- data layout
@pytest.mark.mirror
def test_huang_star_data_uses_the_shared_splits(processed_root):
    p = tiny_params()
    X, y, splits = bf.data(p, processed_root)
    rngs = bf._rngs(p, "huang_dpadmm", "eps1", "huang")
    data = layouts.star_from_splits(X, y, splits, p["huang"]["agents"], rngs["agents"])
    assert data.D == len(splits) and data.n == p["huang"]["agents"] and data.n * data.m == p["n_train"]
    for r, (tr, te) in enumerate(splits):
        np.testing.assert_array_equal(data.y_test[r], y[te])
        assert sorted(data.b[r].ravel().tolist()) == sorted(y[tr].tolist())
    Xs, _ = data.training_rows()
    assert Xs.shape == (len(splits) * p["n_train"], X.shape[1])


def test_train_csr_is_the_csr_of_each_repeats_training_rows():
    """Row slices of one CSR of X hold the same arrays as a CSR made from each repeat's dense training rows (so
    the runs and the training objective see the same numbers, bit for bit), explicit zeros dropped either way."""
    import scipy.sparse as sp

    g = np.random.default_rng(3)
    X = g.standard_normal((60, 7)) * (g.random((60, 7)) < 0.3)
    X[5] = 0.0
    splits = [(g.permutation(60)[:40], None) for _ in range(3)]
    for A, (tr, _) in zip(bf.train_csr(X, splits), splits):
        B = sp.csr_matrix(X[tr])
        for a, b in ((A.indptr, B.indptr), (A.indices, B.indices), (A.data, B.data)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert A.shape == B.shape and A.has_sorted_indices


# ------------------------------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("change, message", [
    ({"levels": [0.1, -1.0]}, "levels must be positive"),
    ({"methods": ["huang_dpadmm", "nope"]}, "unknown methods"),
    ({"iterations": 7}, "even integer"),
    ({"n_train": 40001}, "divide n_train"),
    ({"delta": 1.5}, "delta must lie"),
])
def test_bad_parameters_fail_before_any_work(change, message):
    with pytest.raises(ValueError, match=message):
        bf.check_params({**PARAMS, **change})


def test_level_names_and_job_grid():
    assert [bf.level_key(v) for v in (0.1, 0.3, 1.0, 3.0)] == ["eps0.1", "eps0.3", "eps1", "eps3"]
    jobs = bf.jobs_of(PARAMS)
    grid = len(PARAMS["methods"]) * len(PARAMS["levels"])
    quiet = jobs[grid:-1]
    assert jobs[-1] == bf.FLOOR and all(lv.endswith(bf.NOISELESS) for _, lv in quiet)
    # per level where the noise-free run depends on it (DP-ADMM's step sizes, DVP's Delta, ZKL's C), else once
    assert ("huang_dpadmm", "eps0.1-noiseless") in quiet and ("huang_pvp", "noiseless") in quiet
    assert ("huang_pvp", "eps0.1-noiseless") not in quiet and not any(m.endswith("_paper") for m, _ in quiet)
    for m, lv in quiet:
        bf.check_job(m, lv, PARAMS)
    with pytest.raises(ValueError, match="unknown level"):
        bf.check_job("huang_pvp", "eps0.1-noiseless", PARAMS)


# ------------------------------------------------------------------------------------------------- learning rates
def test_one_rule_tunes_every_learning_rate():
    """Methods with a learning rate (DP-ADMM's eta, DPSGD's lr, XU's eta) are tuned; exact local solvers are not;
    the rule keeps the lowest mean training objective and never a diverged run; the configured DPSGD is the sum
    convention, where HUANG's lr 0.1 is near-optimal."""
    tuned = {m for m, meth in bf.METHODS.items()   # the package's methods (a test may have added its own)
             if meth.tunable and type(meth.prototype).__module__.startswith("repro_dpadmm.")}
    assert tuned == {"huang_dpadmm", "huang_dpsgd", "xu_dpadmm", "xu_dpaccadmm", "xu_dpadmm_paper",
                     "xu_dpaccadmm_paper"}
    sweep = {"0.3": {"train_objective": [0.5, 0.52]}, "1": {"train_objective": [0.41, 0.43]},
             "3": {"train_objective": [0.40, float("nan")]}, "10": {"train_objective": [float("inf"), 1.0]}}
    assert bf.tune_step(sweep) == "1"
    assert bf.step_grid(PARAMS) == [0.1, 0.3, 1.0, 3.0, 10.0] and bf.step_grid({}) == [1.0]
    assert bf.configured("huang_dpsgd", bf.context(PARAMS)).convention == "sum"
    with pytest.raises(ValueError, match="step_grid"):
        bf.check_params({**PARAMS, "step_grid": [1.0, -3.0]})


def test_the_optimiser_floor_is_read_at_the_step_each_level_chose():
    """A tuned method's noiseless job runs every multiple; the summary compares each level's run with the
    noiseless run at the multiple that level chose."""
    params = copy.deepcopy(PARAMS)
    jobs = _fake_jobs(params)
    for lv, scale in (("eps0.1", 0.3), ("eps3", 3.0)):
        jobs[("huang_dpsgd", lv)].update(step_scale=scale, step_sweep={})
    jobs[("huang_dpsgd", "noiseless")].update(step_scale=1.0, step_sweep={
        f"{g:g}": {"test_error": [0.16 + g / 100] * 3, "train_objective": [0.3] * 3} for g in bf.step_grid(params)})
    rows = {(r["method"], r["level"]): r for r in bf.summarise(jobs, params)["rows"]}
    assert rows[("huang_dpsgd", "eps0.1")]["noiseless_mean"] == pytest.approx(0.163)
    assert rows[("huang_dpsgd", "eps3")]["noiseless_mean"] == pytest.approx(0.19)
    m, _ = bf.metrics(bf.summarise(jobs, params), params)
    assert m["step_scale.huang_dpsgd.eps3"] == 3.0 and "step_scale.huang_pvp.eps3" not in m
    assert "HUANG DPSGD (learning rate (§VI-C)) ×0.3 at ε = 0.1" in bf.conclusions(m, bf.summarise(jobs, params), params)


# ------------------------------------------------------------------------------------------------- metrics
def _fake_jobs(params, err=None, global_err=None):
    """Job records as run_job writes them; err(method, level) -> the test errors of a job (default: random around
    0.2, below the majority class's 0.245); global_err(method, level) -> a star job's errors under the reading
    global_model (default: its own)."""
    rng = np.random.default_rng(0)
    jobs = {}
    ctx_T = int(params["iterations"])
    for method in params["methods"]:
        m = bf.METHODS[method]
        for v in params["levels"]:
            cal = {"noise_name": m.noise_name, "noise": 1.0, "accounting": "x", "tight_eps": 0.999 * v,
                   "spend_eps": 0.999 * v,
                   "paper_eps": 1.5 * v, "rdp_eps": 1.1 * v if m.kind == "gaussian" else None, "steps": ctx_T,
                   "calibrated": m.calibrated, "rel_gap": 0.001, "z": 2.0}
            if m.layout.block == "zhang":
                cal["C"] = 10.0
            if m.layout.block == "xu":
                cal["sigma"] = 2.0 * 2 / params["n_train"]
            if m.kind == "xu_paper":
                cal.update(tight_eps=1.6 * v, spend_eps=1.6 * v, paper_eps=float(v), rel_gap=-0.6,
                           u0_factor_max=1.000001)
            lv = bf.level_key(v)
            e = list(0.2 + 0.01 * rng.random(3)) if err is None else err(method, lv)
            jobs[(method, lv)] = {"calibration": cal, "test_error": e, "train_objective": [0.4] * 3,
                                  "wall_time_s": 1.0}
            if m.layout is layouts.STAR:  # the aggregated model's scores, where there are several agents' models
                ge = global_err(method, lv) if global_err is not None else None
                jobs[(method, lv)]["readings"] = {} if method == "huang_dpsgd" else {
                    "global_model": {"test_error": e if ge is None else ge, "train_objective": [0.4] * 3}}
            if m.tunable:
                jobs[(method, lv)].update(step_scale=1.0, step_sweep={})
    for method, lv in bf.jobs_of(params):
        if lv.endswith(bf.NOISELESS):
            jobs[(method, lv)] = {"calibration": None, "noiseless": True, "test_error": [0.16, 0.161, 0.159],
                                  "train_objective": [0.33] * 3, "wall_time_s": 1.0, "readings": {}}
            if bf.METHODS[method].tunable:
                jobs[(method, lv)]["step_sweep"] = {f"{g:g}": {"test_error": [0.16, 0.161, 0.159],
                                                              "train_objective": [0.33] * 3}
                                                    for g in bf.step_grid(params)}
    jobs[bf.FLOOR] = {"test_error": [0.15, 0.151, 0.149], "train_objective": [0.32] * 3, "wall_time_s": 1.0,
                      "trivial_error": [0.25, 0.24, 0.245]}
    return jobs


def test_a_method_no_better_than_constant_cannot_win():
    """The lowest mean error loses its place if it does not beat the majority class by more than the noise; with no
    method better than constant the level has no winner; XU (centralised) is never ranked."""
    params = copy.deepcopy(PARAMS)
    trivial = [0.25, 0.24, 0.245]

    def err(method, lv):
        if lv == "eps0.1":  # everyone at (or above) the constant classifier
            return [t + 0.002 * (i - 1) for i, t in enumerate(trivial)] if method == "huang_dpsgd" else [0.3] * 3
        if method == "huang_dpsgd":  # lowest mean, but within the noise of the constant classifier
            return [0.20, 0.29, 0.21]
        if method == "huang_dpadmm":
            return [0.22, 0.221, 0.219]
        if method.startswith("xu"):
            return [0.1, 0.1, 0.1]  # best of all, but a trusted-curator reference
        return [0.23, 0.231, 0.229]

    summary = bf.summarise(_fake_jobs(params, err), params)
    m, rep = bf.metrics(summary, params)
    assert m["winner.eps1"] == "huang_dpadmm" and m["beats_constant.huang_dpsgd.eps1"] is False
    assert m["winner.eps0.1"] == "none" and m["winner_found.eps0.1"] is False
    assert not any(w.startswith("xu") for k, w in m.items() if k.startswith("winner."))
    assert m["xu_reference.err.eps1"] == pytest.approx(0.1)
    text = bf.conclusions(m, summary, params)
    assert "ε = 0.1: **none better than constant**" in text and "**HUANG DP-ADMM**" in text
    assert "no better than the constant" in text.lower() and "HUANG DPSGD" in text
    np.testing.assert_allclose(rep["err.huang_dpadmm.eps1"], [0.22, 0.221, 0.219])


def test_a_winner_is_stated_only_where_every_scoring_agrees():
    """At eps1 DPSGD wins by the agents' own models but DP-ADMM by the aggregated w^T: no winner is stated there; at
    eps3 DPSGD wins, separated, under both: it is."""
    params = copy.deepcopy(PARAMS)

    def err(method, lv, reading=False):
        if method == "huang_dpsgd":
            return [0.190, 0.191, 0.189]
        if method == "huang_dpadmm":
            if lv == "eps1":
                return [0.180, 0.181, 0.179] if reading else [0.212, 0.213, 0.211]
            return [0.200, 0.201, 0.199]
        return [0.23, 0.231, 0.229]

    summary = bf.summarise(_fake_jobs(params, err, lambda m, lv: err(m, lv, True)), params)
    m, rep = bf.metrics(summary, params)
    assert m["winner.eps1"] == "huang_dpsgd" and m["winner.eps1@global_model"] == "huang_dpadmm"
    assert m["winner_separated.eps1"] and m["winner_separated.eps1@global_model"] and not m["winner_robust.eps1"]
    assert m["winner.eps3"] == m["winner.eps3@global_model"] == "huang_dpsgd" and m["winner_robust.eps3"]
    np.testing.assert_allclose(rep["err.huang_dpadmm.eps1@global_model"], [0.180, 0.181, 0.179])
    assert "err.huang_dpsgd.eps1@global_model" not in m  # DPSGD has one model: nothing to read another way
    text = bf.conclusions(m, summary, params)
    assert "ε = 1: **no winner under every scoring**" in text and "ε = 3: **HUANG DPSGD**" in text


def test_a_star_job_without_the_readings_is_stale(tmp_path, monkeypatch):
    """A HUANG star job written before the scored-model readings is rerun; another layout's job is kept."""
    params = copy.deepcopy(PARAMS)
    params.update(methods=["huang_dpadmm", "zhang_pp"], levels=[1.0])
    want = bf.canonical_hash(bf.job_params(params))
    for method, level in bf.jobs_of(params):
        bf.write_job({"method": method, "level": level, "params_hash": want, "test_error": [0.2]},
                     bf.job_path(tmp_path, method, level))
    ran = []
    monkeypatch.setattr(bf, "run_job", lambda method, level, p, root=None: ran.append((method, level)) or
                        {"params_hash": want, "readings": {}})
    bf.load_jobs(params, tmp_path, log=lambda s: None)
    assert sorted(ran) == [("huang_dpadmm", "eps1"), ("huang_dpadmm", bf.noiseless_level("huang_dpadmm", "eps1"))]


def test_limited_by_noise_or_optimiser_and_accounting_read_from_the_numbers():
    params = copy.deepcopy(PARAMS)
    summary = bf.summarise(_fake_jobs(params, lambda m, lv: [0.161, 0.160, 0.159] if m == "huang_pvp"
                                      else [0.2, 0.201, 0.199]), params)
    rows = {(r["method"], r["level"]): r for r in summary["rows"]}
    assert rows[("huang_pvp", "eps1")]["limited_by"] == "optimiser"   # at its noiseless run (0.16)
    assert rows[("huang_dpadmm", "eps1")]["limited_by"] == "noise"    # 0.2 against 0.16 without noise
    m, _ = bf.metrics(summary, params)
    text = bf.conclusions(m, summary, params)
    assert "loose by that factor, and sound" in text  # paper / tight = 1.5 / 0.999 in the fake jobs
    assert bf._ratio_phrase(0.6, 0.7).startswith("states only 0.60-0.70x") and "understates" in bf._ratio_phrase(0.6, 0.7)
    assert "loose at some levels" in bf._ratio_phrase(0.9, 1.2)
    # sqrt(n): same z for DPSGD and XU, agent sensitivity n times XU's, divided by sqrt(n) by the averaging
    n = params["huang"]["agents"]
    assert m["averaging.aggregate_over_xu.eps1"] == pytest.approx(np.sqrt(n))
    assert f"√{n} = {np.sqrt(n):.3g}" in text and f"is {np.sqrt(n):.1f}x XU's" in text and f"not {n}x" in text


@pytest.mark.parametrize("configfile", [None, "config/smoke.yaml"])
def test_metric_keys_are_documented_and_cover_the_claims(configfile):
    params = config.item_params("beyond", "frontier", *([ROOT / configfile] if configfile else []))
    summary = bf.summarise(_fake_jobs(params), params)
    m, rep = bf.metrics(summary, params)
    assert set(rep) <= set(m) and "repeats" not in m  # "repeats" is write_metrics' reserved key
    from repro_dpadmm.claims.expand import expand
    from repro_dpadmm.safeload import load_yaml

    claims = expand(load_yaml(ROOT / "config/claims/beyond.yaml")).data
    documented = set(claims["metrics"]["frontier"])
    own = {k for k in m if "@" not in k}  # a reading's `<key>@<variant>` is its base key's (config/claims/README.md)
    assert not own - documented, sorted(own - documented)[:10]
    assert {k.split("@")[0] for k in m if "@" in k} <= documented
    from repro_dpadmm.claims import check_keys

    for claim in claims["claims"]:
        if claim["item"] == "frontier":
            for check in claim["checks"]:
                assert set(check_keys(check)) <= set(m), (claim["id"], check)
    text = bf.conclusions(m, summary, params)
    assert f"{m['floor.test_error_mean']:.4f}" in text
    agents = params["huang"]["agents"]  # the centralised-vs-agent ratio is read from the config (paper 100, smoke 10)
    assert f"{params['n_train'] // agents}-record mean gradient {agents}x more" in text
    note = bf.report_note(text)
    assert "**" not in note and f"{m['winner_err.lowest']:.4f}" in note
    assert "|" in bf.table_markdown(summary, params)


def test_item_functions_read_the_job_files(tmp_path):
    """run_frontier loads the grid's job files (none is rerun: all are current), metrics_frontier gives what
    write_metrics takes (the note is the winners' text), plot and table come from the same result."""
    params = copy.deepcopy(PARAMS)
    want = bf.canonical_hash(bf.job_params(params))
    for key, job in _fake_jobs(params).items():
        bf.write_job({**job, "method": key[0], "level": key[1], "params_hash": want}, bf.job_path(tmp_path, *key))
    result = bf.run_frontier(params, tmp_path)
    m = bf.metrics_frontier(result)
    assert set(m) == {"metrics", "repeats", "note"} and m["note"] == bf.report_note(
        bf.conclusions(m["metrics"], result["summary"], params))
    assert m["metrics"]["repeat_count"] == params["repeats"] and set(m["repeats"]) <= set(m["metrics"])
    assert bf.table_frontier(result, m["metrics"]).endswith(bf.conclusions(m["metrics"], result["summary"], params))
    figs = bf.plot_frontier(result)
    assert list(figs) == ["frontier"] and len(figs["frontier"].axes) == 3


# ------------------------------------------------------------------------------------------------- jobs
TINY = {"levels": [1.0], "repeats": 2, "rows": 1500, "n_train": 1200, "iterations": 4, "huang": {**PARAMS["huang"],
                                                                                                  "agents": 6}}


def tiny_params(**over):
    p = copy.deepcopy({**PARAMS, **TINY})
    p.update(over)
    return p


@pytest.mark.mirror
@pytest.mark.parametrize("method", ["huang_dpadmm", "huang_dvp", "zhang_dvp", "xu_dpaccadmm_paper"])
def test_jobs_are_deterministic_per_seed(processed_root, method):
    p = tiny_params(seed=0)
    a = bf.run_job(method, "eps1", p, processed_root)
    b = bf.run_job(method, "eps1", p, processed_root)
    assert a["test_error"] == b["test_error"] and a["train_objective"] == b["train_objective"]
    c = bf.run_job(method, "eps1", tiny_params(seed=1), processed_root)
    assert c["train_objective"] != a["train_objective"]
    assert a["params_hash"] != c["params_hash"]


@pytest.mark.mirror
def test_load_jobs_reruns_a_stale_job_and_refuses_when_asked(processed_root, tmp_path):
    p = tiny_params(methods=["xu_dpadmm"])
    path = bf.job_path(tmp_path, "xu_dpadmm", "eps1")
    bf.write_job({"params_hash": "stale", "test_error": [0.0]}, path)
    with pytest.raises(FileNotFoundError, match="other parameters"):
        bf.load_jobs(p, tmp_path, run_missing=False, root=processed_root)
    jobs = bf.load_jobs(p, tmp_path, root=processed_root, log=lambda s: None)
    assert json.loads(path.read_text())["params_hash"] == jobs[("xu_dpadmm", "eps1")]["params_hash"] != "stale"
    assert bf.job_path(tmp_path, *bf.FLOOR).is_file()


@pytest.mark.mirror
def test_load_jobs_runs_a_missing_zkl_level_with_its_noise_free_run(processed_root, tmp_path, monkeypatch):
    """The notebook's load_jobs runs a ZKL method's levels whose noiseless jobs are missing too as lanes of one job,
    and a lone missing noiseless job on its own; the files are the jobs' either way."""
    p = tiny_params(methods=["zhang_radmm"], levels=[1.0, 3.0])
    calls = []
    lanes, one = bf.run_job_lanes, bf.run_job
    monkeypatch.setattr(bf, "run_job_lanes", lambda *a, **k: calls.append(("lanes", a[1])) or lanes(*a, **k))
    monkeypatch.setattr(bf, "run_job", lambda *a, **k: calls.append(("one", a[1])) or one(*a, **k))
    jobs = bf.load_jobs(p, tmp_path, root=processed_root, log=lambda s: None)
    assert calls == [("lanes", ["eps1", "eps3"]), ("one", "nonprivate")]
    assert all(bf.job_path(tmp_path, "zhang_radmm", lv).is_file()
               for lv in ("eps1", "eps3", "eps1-noiseless", "eps3-noiseless"))
    quiet = json.loads(bf.job_path(tmp_path, "zhang_radmm", "eps1-noiseless").read_text())
    assert quiet["level"] == "eps1-noiseless" and quiet == json.loads(json.dumps(jobs[("zhang_radmm",
                                                                                       "eps1-noiseless")]))
    bf.job_path(tmp_path, "zhang_radmm", "eps1-noiseless").unlink()
    calls.clear()
    again = bf.load_jobs(p, tmp_path, root=processed_root, log=lambda s: None)
    assert calls == [("one", "eps1-noiseless")]
    assert again[("zhang_radmm", "eps1-noiseless")]["test_error"] == quiet["test_error"]


def test_cli_job_without_the_dataset_is_recorded_not_run(tmp_path, monkeypatch, capsys):
    from repro_dpadmm import cli

    # a project as after a clone: notebooks and config, no resources/processed
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(fresh_copy(tmp_path / "project")))
    out = tmp_path / "job.json"
    assert cli.main(["frontier-job", "xu_dpadmm", "eps1", "--params", json.dumps(PARAMS), "--out", str(out)]) == 0
    job = json.loads(out.read_text())
    assert job["status"] == "not run" and "dataset unavailable" in job["reason"]
    zkl = [tmp_path / f"zkl{k}.json" for k in range(4)]   # a lanes job records every one of its files as not run
    assert cli.main(["frontier-job", "zhang_pp", "eps1", "eps3", "--params", json.dumps(PARAMS), "--out",
                     str(zkl[0]), str(zkl[1]), "--floor-out", str(zkl[2]), str(zkl[3])]) == 0
    assert [(j["level"], j["status"]) for j in (json.loads(f.read_text()) for f in zkl)] == [
        ("eps1", "not run"), ("eps3", "not run"), ("eps1-noiseless", "not run"), ("eps3-noiseless", "not run")]
    assert cli.main(["frontier-job", "nope", "eps1", "--params", json.dumps(PARAMS), "--out", str(out)]) == 2
    assert "unknown method" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- workflow
@pytest.mark.workflow
def test_snakemake_job_files_are_the_grid(tmp_path):
    proj = fresh_copy(tmp_path / "project")
    proc = snakemake(["-n", "--cores", "1", "beyond_frontier"], proj)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    for method, level in bf.jobs_of(PARAMS):
        assert f"results/beyond/frontier/jobs/{method}/{level}.json" in out, (method, level)


def _cluster_profile(dst: Path) -> Path:
    """The SLURM profile with the slurm executor swapped for cluster-generic submitting with `bash` (same resources
    and options but the SLURM plugin's own), so the cluster code path runs on this machine."""
    prof = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())
    assert prof.pop("executor") == "slurm"
    prof = {k: v for k, v in prof.items() if not k.startswith("slurm-")}  # the SLURM plugin's own settings
    prof.update({"executor": "cluster-generic", "cluster-generic-submit-cmd": "bash", "jobs": 2})
    dst.mkdir(parents=True)
    (dst / "config.yaml").write_text(yaml.safe_dump(prof))
    return dst


@pytest.mark.workflow
@pytest.mark.mirror
def test_cluster_code_path_runs_a_slice(processed_root, tmp_path):
    """Two methods at one level on smoke-sized data, submitted job by job through the generic cluster executor."""
    proj = fresh_copy(tmp_path / "project")
    (proj / "resources/processed").mkdir(parents=True)
    for ext in ("json", "npz"):
        shutil.copy2(processed_root / f"resources/processed/adult_huang2019.{ext}", proj / "resources/processed")
    smoke = yaml.safe_load((ROOT / "config/smoke.yaml").read_text())
    over = {"papers": {"beyond": {"frontier": {**smoke["papers"]["beyond"]["frontier"], "levels": [3.0],
                                               "methods": ["zhang_radmm", "xu_dpadmm"]}}}}
    (proj / "slice.yaml").write_text(yaml.safe_dump(over))
    targets = [f"results/beyond/frontier/jobs/{m}/eps3.json" for m in ("zhang_radmm", "xu_dpadmm")]
    proc = snakemake([*targets, "--workflow-profile", str(_cluster_profile(tmp_path / "profile")),
                      "--configfile", "slice.yaml"], proj, {"REPRO_DPADMM_OFFLINE": "1"}, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    # the outer Snakemake hands each job to the (remote) executor, whose job script runs Snakemake for that job alone;
    # ZKL R-ADMM's level runs with its noise-free run (rule frontier_job_lanes_1, both files), XU's with its noiseless
    # run in one process (rule frontier_jobs_1, both files)
    assert "Provided remote nodes: 2" in out, out[-3000:]
    assert out.count("localrule frontier_jobs_1:") == 1 and out.count("localrule frontier_job_lanes_1:") == 1, \
        out[-3000:]
    assert json.loads((proj / "results/beyond/frontier/jobs/xu_dpadmm/noiseless.json").read_text())["noiseless"]
    floor = json.loads((proj / "results/beyond/frontier/jobs/zhang_radmm/eps3-noiseless.json").read_text())
    assert floor["noiseless"] and floor["calibration"] == json.loads((proj / targets[0]).read_text())["calibration"]
    for t in targets:
        job = json.loads((proj / t).read_text())
        assert job["calibration"]["target"] == 3.0 and 0 <= job["calibration"]["rel_gap"] <= 0.01
        assert len(job["test_error"]) == smoke["papers"]["beyond"]["frontier"]["repeats"]
        log = "eps3.log" if job["method"] == "zhang_radmm" else "eps3+noiseless.log"
        assert (proj / "logs/beyond/frontier" / job["method"] / log).read_text().strip()


@pytest.mark.mirror
@pytest.mark.parametrize("method", ["huang_dpsgd", "huang_pvp", "xu_dpadmm"])
def test_optimiser_floor_is_the_method_with_zero_noise(processed_root, method):
    """The noiseless job is the method's own run with its noise switched off: the same as the noisy runner with a
    vanishing noise multiplier (same splits, agents and T), and different from the noisy run itself."""
    p = tiny_params(seed=0)
    floor = bf.run_job(method, bf.noiseless_level(method, "eps1"), p, processed_root)
    assert floor["noiseless"] and floor["calibration"] is None  # no level enters its noise-free run
    ctx = bf.context(p)
    X, y, splits = bf.data(p, processed_root)
    fam = bf.METHODS[method].layout.block
    rngs = bf._rngs(p, method, "eps1", fam)
    cal = {"z": 1e-12, "sigma": 1e-12}
    models = bf.configured(method, ctx).run(bf.layout(method, X, y, splits, ctx, rngs["agents"]), cal, ctx.T,
                                            rngs["noise"])
    at_paper = floor["step_sweep"]["1"] if bf.METHODS[method].tunable else floor  # the paper's learning rate
    np.testing.assert_allclose(at_paper["test_error"], bf._evaluate(models, X, y, splits, ctx.lam)["test_error"])
    np.testing.assert_allclose(at_paper["train_objective"],
                               bf._evaluate(models, X, y, splits, ctx.lam)["train_objective"], rtol=1e-9)
    noisy = bf.run_job(method, "eps1", p, processed_root)
    assert noisy["train_objective"] != floor["train_objective"]
    if bf.METHODS[method].tunable:  # every multiple of the learning rate, on the same draws; the best one kept
        assert set(noisy["step_sweep"]) == {f"{g:g}" for g in bf.step_grid(p)}
        assert noisy["step_scale"] == float(bf.tune_step(noisy["step_sweep"]))
        assert noisy["test_error"] == noisy["step_sweep"][f"{noisy['step_scale']:g}"]["test_error"]


@pytest.mark.mirror
def test_dpadmm_floor_keeps_the_levels_step_sizes(processed_root):
    """DP-ADMM's noiseless run at a level is Algorithm 3 with that level's z in its step sizes and no noise."""
    from repro_dpadmm.algorithms import consensus

    p = tiny_params(seed=0)
    floor = bf.run_job("huang_dpadmm", "eps1-noiseless", p, processed_root)
    cal = floor["calibration"]
    X, y, splits = bf.data(p, processed_root)
    rngs = bf._rngs(p, "huang_dpadmm", "eps1-noiseless", "huang")
    data = layouts.star_from_splits(X, y, splits, p["huang"]["agents"], rngs["agents"])
    w = consensus.dpadmm(data, reg="l2", T=p["iterations"], noise_multiplier=cal["z"], add_noise=False,
                         rho=p["huang"]["rho"], lam_n=p["lam"], record=False).meta["w_tilde"]
    ctx = bf.context(p)
    np.testing.assert_allclose(floor["step_sweep"]["1"]["test_error"],  # at the paper's step sizes
                               bf._evaluate(w, X, y, splits, ctx.lam)["test_error"])


def test_the_tunable_methods_run_their_step_multiples_as_lanes():
    """Every tunable method of the frontier has a lane form of its run; the exact local solvers have no learning rate
    and run once; a method whose class changes `run` alone (the toy's two steps per iteration) does not inherit its
    parent's lanes, which would run the parent's algorithm."""
    from _toy_method import TwoStepDpSgd

    tunable = {m for m, meth in bf.METHODS.items() if meth.tunable and m != TwoStepDpSgd.id}
    assert tunable == {"huang_dpadmm", "huang_dpsgd", "xu_dpadmm", "xu_dpaccadmm", "xu_dpadmm_paper",
                       "xu_dpaccadmm_paper"}
    assert all(type(bf.METHODS[m].prototype).has_lanes() for m in tunable)
    assert not any(type(meth.prototype).has_lanes() for m, meth in bf.METHODS.items() if m not in tunable)
    assert TwoStepDpSgd.id in bf.METHODS  # on the frontier, with the sequential runs
    assert TwoStepDpSgd.step_name is not None and not TwoStepDpSgd.has_lanes()


@pytest.mark.mirror
@pytest.mark.parametrize("method, level", [("huang_dpadmm", "eps1"), ("huang_dpsgd", "noiseless"),
                                           ("xu_dpaccadmm_paper", "eps1")])   # the lanes of each layout's runs:
# tests/mechanisms/test_conformance.py compares every method's lanes with its runs, noisy and noiseless
def test_step_lanes_give_the_job_of_the_runs_one_after_another(processed_root, method, level, monkeypatch):
    """A tunable job's step multiples run as lanes of one batched run write the job the multiples run one after
    another write: every multiple's test errors and training objectives, the chosen step and its readings, bit for
    bit (the same data, calibration and noise draws; only the timings differ)."""
    p = tiny_params(seed=0, step_grid=[0.1, 0.3, 1.0, 3.0, 10.0])
    cls = type(bf.METHODS[method].prototype)
    lanes = bf.run_job(method, level, p, processed_root)
    monkeypatch.setattr(cls, "has_lanes", classmethod(lambda c: False))
    one_by_one = bf.run_job(method, level, p, processed_root)
    timing = {"wall_time_s", "cpu_time_s", "calibration_time_s"}
    assert set(lanes) == set(one_by_one)
    assert {k: v for k, v in lanes.items() if k not in timing} == {k: v for k, v in one_by_one.items()
                                                                   if k not in timing}
    assert set(lanes["step_sweep"]) == {"0.1", "0.3", "1", "3", "10"}
    assert lanes["step_sweep"]["0.1"]["train_objective"] != lanes["step_sweep"]["10"]["train_objective"]


def test_which_jobs_run_paired_with_their_noise_free_run():
    """ZKL's methods (no learning rate, a noise-free run that depends on the level through C) run each level's job
    and its optimiser floor as one; every other method, a noiseless job itself and the floor job do not."""
    paired = {m for m in bf.METHODS if bf.pairs_with_floor(m, "eps1")}
    assert paired == {"zhang_pp", "zhang_dvp", "zhang_radmm"}
    assert not bf.pairs_with_floor("zhang_pp", "eps1-noiseless") and not bf.pairs_with_floor(*bf.FLOOR)
    with pytest.raises(ValueError, match="one by one"):
        bf.run_job_lanes("huang_pvp", ["eps1"], tiny_params())
    with pytest.raises(ValueError, match="distinct levels"):
        bf.run_job_lanes("zhang_pp", ["eps1", "eps1"], tiny_params())


@pytest.mark.mirror
@pytest.mark.parametrize("method", ["huang_dpadmm", "huang_dpsgd", "xu_dpaccadmm", "floor"])
def test_jobs_of_one_process_are_the_jobs_alone(processed_root, method):
    """Several jobs of a method in one process (`run_jobs`, the rules frontier_jobs_<k>: levels and noiseless runs,
    the data loaded once) give the records each job gives alone, bit for bit but for the timings."""
    p = tiny_params(seed=0, levels=[0.3, 1.0], methods=[] if method == "floor" else [method])
    levels = [lv for m, lv in bf.jobs_of(p) if m == method]
    assert len(levels) == (1 if method == "floor" else 4 if method == "huang_dpadmm" else 3), levels
    together = bf.run_jobs(method, levels, p, processed_root)
    timing = {"wall_time_s", "cpu_time_s", "calibration_time_s"}
    for level, rec in zip(levels, together):
        one = bf.run_job(method, level, p, processed_root)
        assert rec["level"] == level and set(rec) == set(one)
        assert {k: v for k, v in rec.items() if k not in timing} == {k: v for k, v in one.items() if k not in timing}
        assert rec["cpu_time_s"] > 0
    with pytest.raises(ValueError, match="distinct levels"):
        bf.run_jobs(method, [levels[0], levels[0]], p, processed_root)


@pytest.mark.parametrize("k, sizes", [(1, [1] * 5), (2, [2, 2, 1]), (3, [3, 2]), (4, [3, 2]), (5, [5]), (9, [5])])
def test_a_methods_jobs_are_dealt_into_groups_of_at_most_jobs_per_run(k, sizes):
    """Every job but ZKL's paired ones is in exactly one group (the floor alone); a method's groups keep
    `jobs_of`'s order, hold at most `jobs_per_run` jobs and differ in size by one at most."""
    p = {**PARAMS, "levels": [0.1, 0.3, 1.0, 3.0], "jobs_per_run": k}
    groups = bf.job_groups(p)
    grouped = [(m, lv) for m, levels in groups for lv in levels]
    paired = [(m, lv) for m, lv in bf.jobs_of(p) if bf.pairs_with_floor(m, lv.removesuffix("-noiseless"))]
    assert sorted(grouped + paired) == sorted(bf.jobs_of(p)) and len(set(grouped)) == len(grouped)
    assert [g for g in groups if g[0] == "xu_dpadmm"] == [("xu_dpadmm", lv) for lv in _chunks(
        ["eps0.1", "eps0.3", "eps1", "eps3", "noiseless"], sizes)]
    assert groups[-1] == ("floor", ["nonprivate"])
    assert not any(m.startswith("zhang_") for m, _ in groups)


def _chunks(items, sizes):
    out, start = [], 0
    for n in sizes:
        out.append(items[start:start + n])
        start += n
    return out


@pytest.mark.mirror
@pytest.mark.parametrize("method", ["zhang_pp", "zhang_dvp", "zhang_radmm"])
def test_a_lanes_job_writes_the_jobs_it_replaces(processed_root, method):
    """Every level's job and its noise-free twin run as lanes of one run (each level its own C, rho and alpha) give
    the records the jobs give alone, bit for bit but for the timings; the shared time is split between them."""
    p = tiny_params(seed=0, levels=[0.3, 1.0, 3.0])
    levels = ["eps0.3", "eps1", "eps3"]
    runs = bf.run_job_lanes(method, levels, p, processed_root)
    timing = {"wall_time_s", "cpu_time_s", "calibration_time_s"}
    for level, (noisy, quiet) in zip(levels, runs):
        alone = (bf.run_job(method, level, p, processed_root),
                 bf.run_job(method, f"{level}-noiseless", p, processed_root))
        for lane, one in zip((noisy, quiet), alone):
            assert set(lane) == set(one) and set(lane) <= bf.JOB_KEYS
            assert {k: v for k, v in lane.items() if k not in timing} == {k: v for k, v in one.items()
                                                                          if k not in timing}
        assert (noisy["level"], quiet["level"]) == (level, f"{level}-noiseless") and quiet["noiseless"]
        assert noisy["train_objective"] != quiet["train_objective"] and quiet["calibration_time_s"] == 0.0
    # the levels' own C (capped at min B_i at the higher levels here): lanes of different scales and noise
    assert len({noisy["calibration"]["C"] for noisy, _ in runs}) > 1
    assert len({noisy["calibration"]["alpha"] for noisy, _ in runs}) == len(levels)


@pytest.mark.mirror
def test_cli_writes_a_level_and_its_noise_free_run_with_floor_out(processed_root, tmp_path, monkeypatch, capsys):
    """`frontier-job METHOD LEVEL... --out FILE... --floor-out FILE...` (rule frontier_job_lanes) writes every level's
    job and its noiseless job, the records `run_job_lanes` makes; a method that does not pair, a noiseless level,
    the same file twice or a count of files that is not one per level are refused before any work."""
    from repro_dpadmm import cli

    proj = fresh_copy(tmp_path / "project")
    (proj / "resources/processed").mkdir(parents=True)
    for ext in ("json", "npz"):
        shutil.copy2(processed_root / f"resources/processed/adult_huang2019.{ext}", proj / "resources/processed")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(proj))
    p = json.dumps(tiny_params(seed=0, methods=["zhang_dvp"]))
    out, floor = tmp_path / "eps1.json", tmp_path / "eps1-noiseless.json"
    for args, why in ((["huang_pvp", "eps1"], "does not run paired"), (["zhang_dvp", "eps1-noiseless"],
                                                                       "does not run paired")):
        assert cli.main(["frontier-job", *args, "--params", p, "--out", str(out), "--floor-out", str(floor)]) == 2
        assert why in capsys.readouterr().err and not out.exists() and not floor.exists()
    assert cli.main(["frontier-job", "zhang_dvp", "eps1", "--params", p, "--out", str(out),
                     "--floor-out", str(out)]) == 2
    assert "a path is given twice" in capsys.readouterr().err
    two = json.dumps(tiny_params(seed=0, methods=["zhang_dvp"], levels=[1.0, 3.0]))
    for args, why in ((["eps1", "eps3", "--out", str(out), "--floor-out", str(floor), str(floor) + "2"],
                       "--out: one file per level"),
                      (["eps1", "eps1", "--floor-out", str(out), str(floor)], "a level is given twice")):
        assert cli.main(["frontier-job", "zhang_dvp", *args, "--params", two]) == 2
        assert why in capsys.readouterr().err and not out.exists() and not floor.exists()
    assert cli.main(["frontier-job", "zhang_dvp", "eps1", "--params", p, "--out", str(out),
                     "--floor-out", str(floor)]) == 0
    jobs = [json.loads(f.read_text()) for f in (out, floor)]
    assert [(j["level"], j["noiseless"]) for j in jobs] == [("eps1", False), ("eps1-noiseless", True)]
    assert all(bf.is_job_file(f, "zhang_dvp", lv) for f, lv in ((out, "eps1"), (floor, "eps1-noiseless")))
    assert jobs[1]["test_error"] == bf.run_job("zhang_dvp", "eps1-noiseless", tiny_params(seed=0, methods=[
        "zhang_dvp"]), processed_root)["test_error"]
