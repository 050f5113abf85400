"""Bad-input matrix: every bad value is rejected before any work starts, with a message naming the key and what is
allowed there; none is accepted silently.

The item-level cases go through two doors each: a config file merged over config/config.yaml (what `snakemake
--configfile` and `repro-dpadmm run --configfile` read) and `repro-dpadmm run --params` (what the workflow passes to
an item). Top-level, CLI-only and Snakemake (`--config`, `--configfile`) cases follow.
"""

from __future__ import annotations

import functools
import json
import math

import pytest
import yaml

from repro_dpadmm import config
from repro_dpadmm.cli import main

from conftest import ROOT, snakemake

NAN, INF = math.nan, math.inf
HU, HUANG, MADMM, RADMM, XU, BEYOND = ("hu2020_sharing", "huang2019_dpadmm", "zhang2018_madmm", "zhang2018_radmm",
                                       "xu2020_dpaccadmm", "beyond")

# (paper, item, patch of the item's parameters, offending key below papers.<paper>.<item>, fragment of "allowed")
ITEM_CASES = [
    (HUANG, "fig1", {"agents": [10, 0]}, "agents.1", ">= 1"),
    (HUANG, "fig1", {"epsilon": 0}, "epsilon", "> 0"),
    (HUANG, "fig1", {"epsilon": 1.5}, "epsilon", "<= 1"),
    (HUANG, "fig1", {"delta": 0.5}, "delta", "<= 0.01"),
    (HUANG, "fig1", {"reg": "l3"}, "reg", "one of"),
    (HUANG, "fig1", {"iterations": 0}, "iterations", ">= 1"),
    (HUANG, "fig1", {"n_train": 1}, "n_train", ">= 2"),
    (HUANG, "fig1", {"lam_n": 0}, "lam_n", "> 0"),
    (HUANG, "fig1", {"lam_n": 1e300}, "lam_n", "<= 1"),
    (HUANG, "fig1", {"repeats": "ten"}, "repeats", "integer"),
    (HUANG, "fig1", {"epsilon": INF}, "epsilon", "finite number"),
    (HUANG, "fig1", {"datasets": ["a9a"]}, "datasets.0", '"adult_huang2019"'),
    (HUANG, "fig1", {"agentz": 3}, "agentz", "allowed keys here: agents"),
    (HUANG, "fig2", {"agents": 2.5}, "agents", "integer"),
    (HUANG, "fig2", {"epsilons": []}, "epsilons", "1 to"),
    (HUANG, "fig2", {"epsilons": [0.1, NAN]}, "epsilons.1", "finite number"),
    (HUANG, "fig2", {"deltas": [INF]}, "deltas.0", "finite number"),
    (HUANG, "fig2", {"fixed_epsilon": -0.1}, "fixed_epsilon", "> 0"),
    (HUANG, "fig3", {"dpsgd": {"conventions": ["avg"]}}, "dpsgd.conventions.0", "one of"),
    (HUANG, "fig3", {"dpsgd": {"lr": 0}}, "dpsgd.lr", "> 0"),
    (HUANG, "fig3", {"admm": {"tol": NAN}}, "admm.tol", "finite number"),
    (HUANG, "table2", {"timing_rounds": 1}, "timing_rounds", ">= 2"),
    (HU, "fig1", {"repeats": 11}, "repeats", "<= 10"),
    (HU, "fig1", {"lam_scale": "median"}, "lam_scale", "one of"),
    (HU, "fig1", {"noise_on": "both"}, "noise_on", "one of"),
    (HU, "fig1", {"boundaries": [5]}, "boundaries", "2 to"),
    (HU, "fig1", {"sgd": {"lr_grid": [0]}}, "sgd.lr_grid.0", "> 0"),
    (HU, "fig1", {"train_rows": 5}, "train_rows", ">= 10"),
    (HU, "fig1", {"bias": "yes"}, "bias", "boolean"),
    (HU, "fig3", {"panels": {"mnist": {"boundaries": [0, 1], "sigmas": [1], "read_at": 1}}}, "panels.mnist",
     "matching ^(a9a|gisette)$"),
    (HU, "eps_sweep", {"delta": 1}, "delta", "< 1"),
    (MADMM, "fig2", {"graph": {"kind": "erdos_renyi", "nodes": 5, "p": 1.5}}, "graph.p", "<= 1"),
    (MADMM, "fig2", {"split": "random"}, "split", "one of"),
    (MADMM, "fig2", {"iterations": 1}, "iterations", ">= 2"),
    (MADMM, "fig2", {"repeats": 101}, "repeats", "<= 100"),
    (MADMM, "fig2", {"newton_tol": 0.1}, "newton_tol", "<= 0.001"),
    (MADMM, "fig2", {"theta": NAN}, "theta", "finite number"),
    (MADMM, "fig1", {"theta_random": [1.0]}, "theta_random", "2 to 2 items"),
    (MADMM, "fig1", {"q1_list": [2.0]}, "q1_list", "2 to"),
    (RADMM, "fig1", {"gammas": [-1]}, "gammas.0", "> 0"),
    (RADMM, "fig2", {"pp": {"pp_icml_blue": {"theta": 1.0, "q1": 0.5, "q2": 1.04}}}, "pp.pp_icml_blue.q1", ">= 1"),
    (RADMM, "fig3", {"alpha": INF}, "alpha", "finite number"),
    (RADMM, "fig3", {"thetaa": 1.0}, "thetaa", "allowed keys here:"),
    (XU, "fig1", {"mu": 1}, "mu", "< 1"),
    (XU, "fig1", {"eta": -1}, "eta", '"tuned"'),
    (XU, "fig1", {"eta_grid": [0.5, 0]}, "eta_grid.1", "> 0"),
    (XU, "fig2", {"feature_scaling": {"bio_train": "zscore"}}, "feature_scaling.bio_train", "one of"),
    (XU, "fig2", {"rho_sweep": {"rhos": [-1]}}, "rho_sweep.rhos.0", "> 0"),
    (XU, "fig1", {"u0": "one"}, "u0", "one of"),
    (XU, "fig1", {"restart": "always"}, "restart", "one of"),
    (XU, "fig1", {"datasets": ["gisette"]}, "datasets.0", '"a9a"'),
    (XU, "fig1", {"datasets": []}, "datasets", "1 to"),
    (XU, "fig1", {"blas_threads": 0}, "blas_threads", ">= 1"),
    (XU, "fig1", {"epsilon": NAN}, "epsilon", "finite number"),
    (XU, "fig2", {"repeats": 0}, "repeats", ">= 1"),
    (XU, "table1", {"graph": {"alphas": [0]}}, "graph.alphas.0", "> 0"),
    (BEYOND, "frontier", {"levels": [0.1, NAN]}, "levels.1", "finite number"),
    (BEYOND, "frontier", {"levels": [0.1, 0.1]}, "levels", "no repeats"),
    (BEYOND, "frontier", {"iterations": 3}, "iterations", "multiple of 2"),
    (BEYOND, "frontier", {"methods": ["huang_typo"]}, "methods.0", '"huang_dpadmm"'),
    (BEYOND, "frontier", {"rtol": 0.5}, "rtol", "<= 0.01"),
    (BEYOND, "audit", {"confidence": 0.4}, "confidence", ">= 0.5"),
    (BEYOND, "audit", {"trials": 10}, "trials", ">= 100"),
    (BEYOND, "audit", {"mechanisms": {"m": {"kind": "x", "epsilon": 1}}}, "mechanisms.m.kind", "one of"),
]
ITEM_IDS = [f"{p}.{i}.{k}" for p, i, _, k, _ in ITEM_CASES]

# Item names that do not exist: a typo must not run another item or fail later as "missing input".
TYPO_ITEMS = [(HUANG, "fig55"), (HU, "fig_1"), (XU, "tabel1"), (BEYOND, "frontiers")]

# (patch of the whole config, offending key, fragment of "allowed")
TOP_CASES = [
    ({"seed": -1}, "seed", ">= 0"),
    ({"seed": 1.5}, "seed", "integer"),
    ({"seed": NAN}, "seed", "integer"),
    ({"data_mirror": 3}, "data_mirror", "string or null"),
    ({"datasets": {"adult_huang2019": {"row_normalisation": "l1"}}}, "datasets.adult_huang2019.row_normalisation",
     "one of"),
    ({"datasets": {"bio_train": {"split_seed": -1}}}, "datasets.bio_train.split_seed", ">= 0"),
    ({"datasets": {"mnist": {}}}, "datasets.mnist", "allowed keys here: a8a"),
    ({"papers": {"nobody2020": {}}}, "papers.nobody2020", "allowed keys here: beyond"),
]


@functools.cache
def _base() -> dict:
    return config.load()


def _base_item(paper, item):
    return _base()["papers"][paper][item]


def _assert_names_key_and_range(message: str, key: str, allowed: str):
    line = next((ln for ln in message.splitlines() if key + ":" in ln or key + " " in ln or
                 ln.strip().startswith(key)), None)
    assert line is not None, f"no line names {key!r}:\n{message}"
    assert allowed in line and "allowed" in line, f"{key!r} named without its allowed range {allowed!r}:\n{line}"


@pytest.fixture
def no_work(monkeypatch, tmp_path):
    """Any item run, dataset build or job is a failure; work happens nowhere."""
    from repro_dpadmm import runner
    from repro_dpadmm.datasets import processed
    from repro_dpadmm.experiments import beyond_frontier

    def forbidden(*a, **k):
        pytest.fail("work started despite a bad input")

    monkeypatch.setattr(runner, "run_item", forbidden)
    monkeypatch.setattr(processed, "build", forbidden)
    monkeypatch.setattr(beyond_frontier, "run_job", forbidden)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("paper, item, patch, key, allowed", ITEM_CASES, ids=ITEM_IDS)
def test_config_file(tmp_path, paper, item, patch, key, allowed):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"papers": {paper: {item: patch}}}))
    with pytest.raises(config.ConfigError) as exc:
        config.load(path)
    _assert_names_key_and_range(str(exc.value), f"papers.{paper}.{item}.{key}", allowed)


@pytest.mark.parametrize("paper, item, patch, key, allowed", ITEM_CASES, ids=ITEM_IDS)
def test_run_params(no_work, capsys, paper, item, patch, key, allowed):
    params = {**config.deep_merge(_base_item(paper, item), patch), "seed": 0}
    assert main(["run", paper, item, "--params", json.dumps(params)]) == 2
    _assert_names_key_and_range(capsys.readouterr().err, f"papers.{paper}.{item}.{key}", allowed)
    assert not list(no_work.iterdir())


@pytest.mark.parametrize("paper, item", TYPO_ITEMS)
def test_typo_item_name(tmp_path, no_work, capsys, paper, item):
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump({"papers": {paper: {item: {"repeats": 1}}}}))
    with pytest.raises(config.ConfigError) as exc:
        config.load(path)
    _assert_names_key_and_range(str(exc.value), f"papers.{paper}.{item}", "fig" if paper != BEYOND else "frontier")
    assert main(["run", paper, "fig1" if paper != BEYOND else "audit", "--configfile", str(path)]) == 2
    assert f"papers.{paper}.{item}: no such item" in capsys.readouterr().err


@pytest.mark.parametrize("patch, key, allowed", TOP_CASES, ids=[c[1] for c in TOP_CASES])
def test_top_level(patch, key, allowed):
    with pytest.raises(config.ConfigError) as exc:
        config.validate(config.deep_merge(_base(), patch))
    _assert_names_key_and_range(str(exc.value), key, allowed)


CLI_CASES = [
    (["run", HUANG, "fig1", "--params", "{not json"], "--params is not valid JSON"),
    (["run", HUANG, "fig1", "--params", "[1, 2]"], "--params must be a JSON object"),
    (["run", HUANG, "fig1", "--params", json.dumps({"seed": -3})], "seed: -3 is less than the minimum of 0"),
    (["run", HUANG, "no_such_item"], "huang2019_dpadmm/no_such_item: no such item"),
    (["run", HUANG, "fig1", "--configfile", "missing.yaml"], "missing.yaml does not exist (relative paths are read from"),
    (["data", "build", "mnist"], "unknown dataset 'mnist'"),
    (["data", "build", "adult_huang2019", "--options", '{"row_normalisation": "l1"}'],
     "datasets.adult_huang2019.row_normalisation: 'l1' is not one of"),
    (["data", "build", "a9a", "--options", '{"scale": 2}'], "datasets.a9a.scale: unknown key"),
    (["data", "build", "a9a", "--options", "nope"], "--options is not valid JSON"),
    (["frontier-job", "huang_dpadmm", "eps0.1", "--params", json.dumps({"levels": [NAN]})],
     "papers.beyond.frontier.levels.0: nan is not of type 'number'"),
]


@pytest.mark.parametrize("argv, message", CLI_CASES, ids=[" ".join(a[:2]) + f" #{i}" for i, (a, _) in
                                                          enumerate(CLI_CASES)])
def test_cli(no_work, capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_relative_configfile_is_read_from_the_working_directory(no_work, capsys):
    (no_work / "mine.yaml").write_text(yaml.safe_dump({"papers": {HUANG: {"fig1": {"repeats": 0}}}}))
    assert main(["run", HUANG, "fig1", "--configfile", "mine.yaml"]) == 2
    assert "papers.huang2019_dpadmm.fig1.repeats: 0 is less than the minimum of 1" in capsys.readouterr().err


def test_the_good_configs_still_pass():
    config.load()
    config.load(ROOT / "config/smoke.yaml")
    for paper, items in config.load()["papers"].items():
        for item, params in items.items():
            config.check_item_params(paper, item, {**params, "seed": 0})


SNAKEMAKE_CASES = [
    (["--config", "seed=-5"], "seed"),
    ({"papers": {HUANG: {"fig1": {"epsilon": NAN}}}}, "papers.huang2019_dpadmm.fig1.epsilon: nan is not of type"),
    ({"papers": {HUANG: {"fig55": {"repeats": 1}}}}, "papers.huang2019_dpadmm.fig55: no such item"),
    ({"papers": {BEYOND: {"frontier": {"levels": [0.1, INF]}}}}, "papers.beyond.frontier.levels.1"),
    ({"papers": {HUANG: {"fig2": {"agents": 2.5}}}}, "papers.huang2019_dpadmm.fig2.agents: 2.5 is not of type 'integer'"),
    # issue 50: a billion laughs of a few hundred characters inside --config (Snakemake's reading leaves the aliases
    # as shared references; walking them took 110 s and ended in a MemoryError)
    (["--config", "papers={a: &a [x,x,x,x,x,x,x,x,x], " + ", ".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(8)) + "}"],
     "a YAML alias (a value given as *name) is not allowed"),
]


@pytest.mark.workflow
@pytest.mark.parametrize("case, message", SNAKEMAKE_CASES,
                         ids=["config seed", "nan", "typo item", "inf level", "agents 2.5", "config alias"])
def test_snakemake_rejects_before_any_job(tmp_path, case, message):
    if isinstance(case, dict):
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(case))
        case = ["--configfile", str(path)]
    run = snakemake(["-n", *case], cwd=ROOT, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode != 0 and message in out, out[-2000:]
    assert "Job stats" not in out and "rule " not in out.split(message)[0][-200:]


# ------------------------------------------------------------------------------------------------ issue 50

def test_a_yaml_alias_inside_config_is_refused_before_it_is_expanded():
    """Snakemake reads `--config` values with YAML's base loader, which leaves aliases as shared references: a
    400-character billion laughs then expanded without end in the coercion of strings."""
    bomb = "{a: &a [x,x,x,x,x,x,x,x,x], " + ", ".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
        f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]" for i in range(9)) + "}"
    value = yaml.load(bomb, Loader=yaml.loader.BaseLoader)   # as snakemake.cli.parse_config reads it
    with pytest.raises(config.ConfigError, match="papers.huang2019_dpadmm.*a YAML alias"):
        config.coerce_strings({"seed": 0, "papers": {HUANG: value}})


def test_duplicate_keys_are_errors_on_every_path(tmp_path, no_work, capsys):
    assert main(["run", HUANG, "fig1", "--params", '{"repeats": 1, "repeats": 2}']) == 2
    assert "--params:1: key 'repeats' appears twice" in capsys.readouterr().err
    path = tmp_path / "dup.yaml"
    path.write_text(f"papers:\n  {HUANG}:\n    fig1:\n      repeats: 1\n      repeats: 2\n")
    assert main(["run", HUANG, "fig1", "--configfile", str(path)]) == 2
    assert "dup.yaml:5: key 'repeats' appears twice in one mapping (first on line 4)" in capsys.readouterr().err


def test_a_run_of_far_more_work_than_the_paper_asks_for_yes(no_work, capsys, monkeypatch):
    monkeypatch.delenv("REPRO_DPADMM_WORK_LIMIT", raising=False)
    params = json.dumps({"iterations": 100000})
    assert main(["run", RADMM, "fig3", "--params", params]) == 2
    err = capsys.readouterr().err
    assert "about 1e+03x the work of the paper's settings" in err and "--yes" in err
    ran = []
    from repro_dpadmm import runner

    monkeypatch.setattr(runner, "run_item", lambda *a, **k: ran.append(a) or {"status": "ok", "wall_time_s": 0})
    assert main(["run", RADMM, "fig3", "--params", params, "--yes", "--out-dir", "out"]) == 0 and ran


def test_ctrl_c_in_a_run_prints_one_line(no_work, capsys, monkeypatch):
    from repro_dpadmm import runner

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_item", interrupted)
    assert main(["run", HUANG, "fig1", "--out-dir", "out"]) == 130
    err = capsys.readouterr().err
    assert "stopped (Ctrl-C)" in err and "Traceback" not in err


def test_parameters_that_cannot_run_are_refused_before_any_work(no_work, capsys):
    """`nodes: 5000` is schema-valid, but 45,222 rows over 5,000 nodes leave a node 9 rows, fewer than C = 100: the
    run failed at run time (C > B_i) in a long traceback, after deleting the item's outputs."""
    for item, message in (("fig3", "graph.nodes = 5000: 45,222 rows split evenly give a node 9 rows, fewer than C"),
                          ("fig4", "graph.nodes = 5000 nodes of at least min_size = 100 rows need 500,000 rows")):
        params = {**_base_item(MADMM, item), "graph": {"kind": "erdos_renyi", "nodes": 5000, "p": 0.05, "seed": 1}}
        assert main(["run", MADMM, item, "--params", json.dumps(params)]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("item, params, key", [
    ("fig1", {"epsilon": 1e-320}, "epsilon = 1e-320"),
    ("fig2", {"epsilons": [0.1, 1e-200]}, "epsilons[1] = 1e-200"),
])
def test_an_epsilon_too_small_to_calibrate_is_refused_before_any_work_naming_it(no_work, capsys, item, params, key):
    """`epsilon: 1e-320` passed the schema, then failed in the notebook with 'the noise multiplier z must be >= 0,
    got inf' (inf is >= 0): the epsilon is named as too small to calibrate, before any work."""
    assert main(["run", HUANG, item, "--params", json.dumps(params)]) == 2
    err = capsys.readouterr().err
    assert f"papers.{HUANG}.{item}.{key} is too small to calibrate: the smallest epsilon a calibration takes is " \
           "1e-150" in err and "Traceback" not in err, err


def test_a_calibration_whose_noise_multiplier_is_not_finite_names_the_epsilon_and_delta():
    """A notebook run by hand has no parameters check: the calibration itself says the epsilon is too small."""
    from repro_dpadmm.privacy.bounds.huang2019 import eta_schedule, noise_multiplier

    with pytest.raises(ValueError, match=r"epsilon = 1e-320 \(delta = 1e-05\) is too small to calibrate"):
        noise_multiplier(1e-320, 1e-5)
    with pytest.raises(ValueError, match=r"epsilon = 1e-155 \(delta = 1e-05\) is too small to calibrate"):
        eta_schedule("l1", 3, 100, 1e-155, 1e-5)   # z is finite, its square is not
    assert noise_multiplier(1e-150, 1e-307) ** 2 < float("inf")
    with pytest.raises(ValueError, match=r"epsilon = 0.1, delta = 5e-324 is too small to calibrate"):
        noise_multiplier(0.1, 5e-324)


@pytest.mark.parametrize("where, message", [("afile/sub", "afile, which is a file, not a folder"),
                                            ("a" * 300, "File name too long: ")])
def test_an_out_dir_that_cannot_be_a_folder_is_one_line_before_any_work(no_work, capsys, monkeypatch, where,
                                                                        message):
    from repro_dpadmm import runner

    monkeypatch.undo()      # the real run_item, but no item's work: its checks of the folder come first
    monkeypatch.chdir(no_work)
    monkeypatch.setattr(runner, "_run_locked", lambda *a, **k: pytest.fail("work started despite a bad folder"))
    (no_work / "afile").write_text("mine")
    assert main(["run", HUANG, "fig1", "--out-dir", str(no_work / where)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and (no_work / "afile").read_text() == "mine"


def test_a_configfile_that_is_a_folder_or_a_fifo_is_named_as_such(no_work, capsys):
    import os

    (no_work / "folder.yaml").mkdir()
    os.mkfifo(no_work / "pipe.yaml")
    assert main(["items", "--configfile", "folder.yaml"]) == 2
    assert "folder.yaml is a folder, not a file" in capsys.readouterr().err
    assert main(["items", "--configfile", "pipe.yaml"]) == 2
    assert "pipe.yaml is not a regular file" in capsys.readouterr().err
