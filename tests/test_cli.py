"""The `repro-dpadmm` command."""

import json
from pathlib import Path

import pytest

from repro_dpadmm.cli import main


def test_info_lists_versions_mirror_and_cache(capsys, monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", "/some/mirror")
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "dp-accounting" in out and "/some/mirror" in out and "uci/adult/adult.data" in out


def test_data_list_names_every_dataset(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("adult_huang2019", "adult_zhang2018", "a9a", "a8a", "ijcnn1", "gisette", "bio_train"):
        assert name in out


def test_data_fetch_reports_failure_with_exit_code(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["data", "fetch", "gisette"]) == 1
    assert "could not obtain libsvm/binary/gisette_scale.bz2" in capsys.readouterr().err


def test_unknown_item_is_a_clear_error(capsys):
    """The registry decides which items exist: an unlisted item or paper is named, with what is allowed."""
    assert main(["run", "huang2019_dpadmm", "no_such_item"]) == 2
    assert ("huang2019_dpadmm/no_such_item: no such item (not in repro_dpadmm.registry; allowed: fig1, fig2, fig3, "
            "fig4, fig5, fig6, table2)") in capsys.readouterr().err
    assert main(["run", "huang2019", "fig1"]) == 2
    assert "no paper 'huang2019' in repro_dpadmm.registry" in capsys.readouterr().err


def test_unknown_part_is_a_clear_error_before_any_work(capsys, tmp_path):
    """`part` names the bad key and the item's parts, and writes nothing."""
    out = tmp_path / "p.pkl"
    assert main(["part", "zhang2018_madmm", "fig2", "alpha9", "--configfile", "config/smoke.yaml",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "zhang2018_madmm/fig2 has no part 'alpha9'; its parts: alpha3, alpha3.2, " in err and "alpha5_sweep" in err
    assert not out.exists()
    assert main(["part", "zhang2018_radmm", "fig1", "x", "--out", str(out)]) == 2
    assert "zhang2018_radmm/fig1 is not split into parts (it runs as one job): no part 'x'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["part", "zhang2018_madmm", "fig2", "alpha3", "--configfile", "config/smoke.yaml"],
                                     ["frontier-job", "xu_dpadmm", "eps1", "--configfile", "config/smoke.yaml"]])
def test_out_never_replaces_a_users_file_nor_runs_into_a_folder(command, capsys, tmp_path, monkeypatch):
    """`part --out` / `frontier-job --out` refuse, before any work, a folder, a name of another kind and an existing
    file the package did not write (the atomic write would have replaced it); the file is as it was."""
    from repro_dpadmm.experiments import parts

    monkeypatch.setattr(parts, "run_part", lambda *a, **k: pytest.fail("work started"))
    import repro_dpadmm.experiments.beyond_frontier as bf

    monkeypatch.setattr(bf, "run_job", lambda *a, **k: pytest.fail("work started"))
    suffix = ".pkl" if command[0] == "part" else ".json"
    notes = tmp_path / f"notes{suffix}"
    notes.write_text("my precious notes")
    # a user's JSON that names a method (a job file was anything with "method" in its first 4 KiB)
    config_like = tmp_path / f"mine{suffix}"
    config_like.write_text('{"method": "sgd", "level": "x", "notes": "my experiment log"}')
    for out, why in ((notes, "exists and is not a"), (tmp_path, "is a folder"), (config_like, "exists and is not a"),
                     (Path("config") / f"x{suffix}", "lies in the checkout's config/"),
                     (Path("src") / f"x{suffix}", "lies in the checkout's src/"),
                     (tmp_path / "notes.txt", f"name ends in {suffix}"),
                     (tmp_path / f"a\x1b]0;t\x07{suffix}", None)):
        if why is None:   # a fresh file of the right kind is fine; its name is printed escaped
            monkeypatch.setattr(parts, "run_part", lambda *a, **k: {"wall_time_s": 0.0})
            monkeypatch.setattr(parts, "write_part", lambda *a, **k: None)
            monkeypatch.setattr(bf, "run_job", lambda *a, **k: {"test_error": [0.1], "repeats": 1, "wall_time_s": 0.0})
            monkeypatch.setattr(bf, "write_job", lambda *a, **k: None)
            assert main([*command, "--out", str(out)]) == 0
            printed = capsys.readouterr().out
            assert "\x1b" not in printed and "\\x1b]0;t\\x07" in printed, printed
            continue
        assert main([*command, "--out", str(out)]) == 2, out
        assert why in capsys.readouterr().err
    assert notes.read_text() == "my precious notes" and "my experiment log" in config_like.read_text()
    assert not (Path("config") / f"x{suffix}").exists()


def test_output_into_a_closed_pipe_stops_quietly():
    import subprocess
    import sys

    proc = subprocess.run(f"{sys.executable} -c 'from repro_dpadmm.cli import main; import sys; "
                          f"sys.exit(main([\"items\"]))' | head -c 1", shell=True, capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_a_root_without_config_names_the_variable(monkeypatch, tmp_path, capsys):
    (tmp_path / "Snakefile").write_text("")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["items"]) == 2
    assert f"REPRO_DPADMM_ROOT={tmp_path} has no config/config.yaml" in capsys.readouterr().err


def test_unknown_dataset_is_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        main(["data"])
    assert main(["data", "build", "mnist"]) == 2
    assert "unknown dataset 'mnist'" in capsys.readouterr().err


def test_relative_out_dir_is_the_working_directorys(monkeypatch, tmp_path):
    from repro_dpadmm import runner

    seen = {}
    monkeypatch.setattr(runner, "run_item", lambda paper, item, params, out_dir, **kw: seen.update(out=out_dir) or
                        {"status": "ok", "wall_time_s": 0})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "huang2019_dpadmm", "fig1", "--out-dir", "here/fig1"]) == 0
    assert seen["out"] == tmp_path / "here/fig1"


def test_relative_report_out_dir_is_the_working_directorys_too(monkeypatch, tmp_path):
    import repro_dpadmm.report as report

    seen = {}
    monkeypatch.setattr(report, "build_report", lambda out_dir, **kw: seen.update(out=out_dir))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--out-dir", "here/report"]) == 0
    assert seen["out"] == tmp_path / "here/report"


def test_a_not_run_item_says_why_on_the_terminal(monkeypatch, tmp_path, capsys):
    from repro_dpadmm import runner

    monkeypatch.setattr(runner, "run_item", lambda *a, **kw: {"status": "not run", "wall_time_s": 0.0,
                                                              "reason": "dataset unavailable (adult: build it\x1b[2J)"})
    assert main(["run", "huang2019_dpadmm", "fig1", "--out-dir", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "not run" in out and "why: dataset unavailable (adult: build it\\x1b[2J)" in out


@pytest.mark.parametrize("var, value", [("REPRO_DPADMM_MAX_FILE_MB", "lots"), ("REPRO_DPADMM_BUNDLE_MAX_FILES", "0.5"),
                                        ("REPRO_DPADMM_MAX_FILE_MB", "1e-9"), ("REPRO_DPADMM_BUNDLE_MAX_FILE_MB", "1e-9")])
def test_a_bad_size_cap_is_one_error_naming_it_before_any_work(monkeypatch, tmp_path, capsys, var, value):
    monkeypatch.setenv(var, value)
    assert main(["report", "--out-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count(var) == 1 and err.startswith(f"repro-dpadmm: error: {var}") and not (tmp_path / "r").exists()


def test_data_list_says_damaged_when_the_npz_is_truncated(capsys, monkeypatch, tmp_path):
    import json

    import numpy as np

    processed = tmp_path / "resources/processed"
    processed.mkdir(parents=True)
    np.savez(processed / "a9a.npz", X_train=np.zeros((2, 2)))
    data = (processed / "a9a.npz").read_bytes()
    (processed / "a9a.json").write_text(json.dumps({"available": True, "npz": {"sha256": "0", "size": len(data)}}))
    (processed / "a9a.npz").write_bytes(data[:-20])
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["data", "list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("a9a "))
    assert "damaged" in line


def _fake_run(monkeypatch):
    """run_item recording what it was asked to do (no notebook runs)."""
    from repro_dpadmm import runner

    seen = {}

    def fake(paper, item, params, out_dir, **kw):
        seen.update(paper=paper, item=item, params=params, out=out_dir, **kw)
        return {"status": "ok", "wall_time_s": 0}

    monkeypatch.setattr(runner, "run_item", fake)
    return seen


def test_params_merge_into_the_items_settings(monkeypatch, capsys):
    """--params changes only the keys it names (nested mappings key by key); numbers stay numbers."""
    from repro_dpadmm import config

    seen = _fake_run(monkeypatch)
    paper = config.item_params("zhang2018_radmm", "fig3")
    assert main(["run", "zhang2018_radmm", "fig3", "--params", '{"q": 1.03, "graph": {"kind": "five_node"}}']) == 0
    assert seen["params"] == {**paper, "q": 1.03} and isinstance(seen["params"]["q"], float)
    assert seen["run_name"] is None and str(seen["out"]).endswith("results/zhang2018_radmm/fig3")
    huang = config.item_params("huang2019_dpadmm", "fig3")
    assert main(["run", "huang2019_dpadmm", "fig3", "--params", '{"admm": {"tol": 1e-6}}']) == 0
    assert seen["params"]["admm"] == {**huang["admm"], "tol": 1e-6}


def test_a_misspelt_key_gets_did_you_mean_in_one_line(monkeypatch, capsys):
    seen = _fake_run(monkeypatch)
    assert main(["run", "zhang2018_radmm", "fig3", "--params", '{"qq": 1.03}']) == 2
    err = capsys.readouterr().err
    assert "papers.zhang2018_radmm.fig3.qq: unknown key (did you mean 'q'?)" in err
    assert len(err.strip().splitlines()) == 2 and not seen  # the error line under its heading; nothing ran
    assert main(["run", "huang2019_dpadmm", "fig33"]) == 2
    assert "did you mean 'fig3'?" in capsys.readouterr().err


def test_what_if_run_goes_to_its_own_folder_and_builds_its_report(monkeypatch, tmp_path, capsys):
    from repro_dpadmm import cli

    seen = _fake_run(monkeypatch)
    built = {}
    import repro_dpadmm.report as report

    def fake_report(out, **kw):   # what build_report writes for a what-if run, with a hostile claim id
        built.update(out=out, **kw)
        Path(out).mkdir(parents=True)
        differ = [{"id": f"zhang2018_radmm.fig3.c{i}\x1b[2J", "paper": "reproduced", "whatif": "partly"}
                  for i in range(8)]
        metrics = [{"key": "zhang2018_radmm/fig3:loss", "paper": 0.5, "whatif": 0.6, "relative": 0.2}]
        (Path(out) / "summary.json").write_text(json.dumps({"whatif": {"compared": True, "verdicts": differ,
                                                                       "metrics": metrics}}))

    monkeypatch.setattr(report, "build_report", fake_report)
    monkeypatch.setattr(cli, "WHATIF", str(tmp_path / "results" / "whatif"))   # not the checkout's own results/
    assert main(["run", "zhang2018_radmm", "fig3", "--params", '{"q": 1.03}', "--run-name", "q103"]) == 0
    assert seen["run_name"] == "q103" and seen["params"]["q"] == 1.03
    assert Path(seen["out"]).parts[-5:] == ("results", "whatif", "q103", "zhang2018_radmm", "fig3")
    assert built["run_name"] == "q103" and Path(built["out"]).parts[-4:] == ("results", "whatif", "q103", "report")
    assert built["quiet"] is True
    out = capsys.readouterr().out.splitlines()
    assert len(out) <= 11                                  # the item's line and at most 10 of summary
    assert "8 verdicts differ from the paper run's:" in out and "  ... and 3 more (in the report)" in out
    assert not any("\x1b" in line for line in out) and any("\\x1b[2J" in line for line in out)
    assert (tmp_path / "results/whatif/q103/logs/zhang2018_radmm_fig3.log").is_file()
    seen.clear()
    assert main(["run", "zhang2018_radmm", "fig3", "--run-name", "../up"]) == 2
    assert main(["run", "zhang2018_radmm", "fig3", "--run-name", "x", "--out-dir", str(tmp_path)]) == 2
    assert not seen


def test_a_what_if_summary_says_why_there_is_no_paper_run_to_compare_with(tmp_path):
    from repro_dpadmm.cli import whatif_summary

    (tmp_path / "summary.json").write_text(json.dumps({"whatif": {
        "compared": False, "not_compared": "results/report/claims.json is unreadable: \x1b[2J bad JSON"}}))
    lines = whatif_summary(tmp_path, tmp_path, None)
    assert "no paper run to compare with (results/report/claims.json is unreadable: \\x1b[2J bad JSON)" in lines


def test_a_refused_what_if_run_leaves_the_running_runs_log_alone(tmp_path, capsys):
    """A second run of an item whose lock another run holds (refused, --no-wait) never empties the log the first
    run writes; a run that went ahead replaces the log when it ends."""
    import sys

    from repro_dpadmm.cli import cell_output_to
    from repro_dpadmm.locks import Busy

    log = tmp_path / "logs" / "item.log"
    log.parent.mkdir()
    log.write_text("the first run's output so far\n")
    with pytest.raises(Busy):
        with cell_output_to(log, "p/i"):
            raise Busy("held by another run")
    assert log.read_text() == "the first run's output so far\n"
    with cell_output_to(log, "p/i"):
        print("this run's output", file=sys.stderr)
    assert "this run's output" in log.read_text() and "first run" not in log.read_text()
    assert sorted(p.name for p in log.parent.iterdir()) == ["item.log"]


def test_a_mirror_address_with_terminal_escapes_is_printed_escaped(capsys, tmp_path):
    """A mirror (from the command line, the environment or a config) is a string from elsewhere: ESC and BEL in it
    would retitle the terminal in the "check the data mirror" line."""
    rc = main(["data", "fetch", "a8a", "--mirror", str(tmp_path / "m\x1b]0;PWN\x07")])
    err = capsys.readouterr().err
    assert rc == 1 and "\x1b" not in err and "\x07" not in err and "\\x1b]0;PWN\\x07" in err


def test_an_unknown_dataset_name_is_one_plain_line(capsys):
    assert main(["data", "build", "adult\x1b]0;x\x07"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\\\x1b" not in err and err.count("\n") == 1


def test_a_project_root_that_does_not_exist_is_an_error_not_a_new_tree(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path / "no-such-project"))
    assert main(["report"]) == 2
    assert "REPRO_DPADMM_ROOT=" in capsys.readouterr().err and not (tmp_path / "no-such-project").exists()


@pytest.mark.parametrize("argv", [
    ["run", "huang2019_dpadmm", "fig1", "--out-dir", ""],
    ["run", "huang2019_dpadmm", "fig1", "--out-dir", "  "],
    ["part", "huang2019_dpadmm", "fig6", "admm", "--out", ""],
    ["frontier-job", "floor", "nonprivate", "--out", ""],
    ["bundle", "--out", ""],
    ["report", "--out-dir", ""],
    ["report", "--results", ""],
    ["info", "--mirror", ""],
    ["data", "fetch", "a9a", "--mirror", ""],
    ["items", "--configfile", ""],
])
def test_an_empty_path_is_an_error_never_the_default(argv, monkeypatch, capsys):
    """`--out-dir "$OUT"` with OUT unset ran into the item's own folder and replaced its outputs: every option
    naming a path refuses an empty one before any work."""
    from repro_dpadmm import bundle, runner

    def no_work(*a, **kw):
        raise AssertionError("work started")

    monkeypatch.setattr(runner, "run_item", no_work)
    monkeypatch.setattr(bundle, "make_bundle", no_work)
    assert main(argv) == 2
    option = next(a for a in argv if a.startswith("--"))
    assert f"{option} is empty: give a path, or leave {option} out" in capsys.readouterr().err


def test_a_report_of_a_root_without_claims_is_an_error_not_an_empty_report(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["report"]) == 2
    assert "no config/claims/ in" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("mirror, why", [("file://mirrorhost/datasets", "'mirrorhost' is a host"),
                                         ("file://", "it names no folder"), ("FILE:///", "it names no folder")])
def test_a_file_address_naming_a_host_or_no_folder_is_refused(mirror, why, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    assert main(["data", "fetch", "a9a", "--mirror", mirror]) == 2
    err = capsys.readouterr().err
    assert f"--mirror {mirror}: a file:// address names a folder of this machine" in err and why in err, err
    assert not (tmp_path / "resources").exists()
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", mirror)
    assert main(["info"]) == 2
    assert "REPRO_DPADMM_DATA_MIRROR" in capsys.readouterr().err


@pytest.mark.parametrize("mirror, why", [("http://[::1", "Invalid IPv6 URL"), ("http:///datasets", "it names no host"),
                                         ("https://h:99999/x", "Port out of range"),
                                         ("http://h/a b", "whitespace or control characters")])
def test_a_malformed_mirror_url_is_refused_before_any_work_not_as_a_checksum_mismatch(mirror, why, monkeypatch,
                                                                                      tmp_path, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", mirror)
    assert main(["data", "fetch", "a9a"]) == 2
    err = capsys.readouterr().err
    assert f"REPRO_DPADMM_DATA_MIRROR {mirror}: not a valid {mirror.split(':')[0]} URL (" in err and why in err, err
    assert "checksum" not in err and not (tmp_path / "resources").exists()
    assert main(["info"]) == 2 and "not a valid" in capsys.readouterr().err
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR")
    assert main(["data", "fetch", "a9a", "--mirror", mirror]) == 2
    assert f"--mirror {mirror}: not a valid" in capsys.readouterr().err


def test_info_refuses_a_root_that_is_no_project(tmp_path, monkeypatch, capsys):
    """`info` called any folder a project (every raw file "missing"), where `items`, `run` and `report` refuse it."""
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["info"]) == 2
    err = capsys.readouterr().err
    assert f"REPRO_DPADMM_ROOT={tmp_path} has no config/config.yaml" in err and "project at" not in err


@pytest.mark.parametrize("mirror, said", [
    ("ftp://x/y", "a mirror is a folder, a file:// address or an http(s) URL, not ftp://"),
    ("file://host/x", "'host' is a host"),
    ("FIFO", "a FIFO, not a folder"),   # said to be "not in the mirror folder" file by file
    ("FILE", "a file, not a folder"),
])
def test_items_refuses_a_config_whose_mirror_the_workflow_refuses(tmp_path, capsys, monkeypatch, mirror, said):
    """`items --configfile` is how a config file is checked: it passed a data_mirror the workflow refuses."""
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    if mirror in ("FIFO", "FILE"):
        import os

        mirror = str(tmp_path / mirror.lower())
        os.mkfifo(mirror) if mirror.endswith("fifo") else open(mirror, "w").close()
    config = tmp_path / "m.yaml"
    config.write_text(f"data_mirror: {mirror}\n")
    assert main(["items", "--configfile", str(config)]) == 2
    assert f"data_mirror {mirror}: " in (err := capsys.readouterr().err) and said in err, err


def test_a_config_file_holding_a_template_marker_is_refused_unrun(tmp_path, capsys):
    """Snakemake's loader runs the `?` expressions of a YAML file holding `__use_yte__: true`; the package never
    does, and names the key, so that a file can be checked before it is given to snakemake."""
    flag = tmp_path / "ran"
    config = tmp_path / "y.yaml"
    config.write_text(f'__use_yte__: true\nx: ?__import__("pathlib").Path("{flag}").write_text("p")\n')
    assert main(["items", "--configfile", str(config)]) == 2
    assert f"config file {config} holds __use_yte__" in capsys.readouterr().err and not flag.exists()


def test_a_frontier_job_checks_its_work_as_run_and_part_do(monkeypatch, capsys, tmp_path):
    """`frontier-job` started `iterations: 100000` (a day) at once, and `repeats: 1000` ran out of memory."""
    import repro_dpadmm.experiments.beyond_frontier as bf
    from repro_dpadmm import config

    monkeypatch.setattr(bf, "run_job", lambda *a, **k: pytest.fail("work started"))
    params = config.item_params("beyond", "frontier", Path("config/smoke.yaml").resolve())
    params.pop("datasets")
    argv = ["frontier-job", "huang_dpadmm", bf.level_key(params["levels"][0]), "--out", str(tmp_path / "j.json")]
    assert main([*argv, "--params", json.dumps({**params, "iterations": 100000})]) == 2
    assert "the work of the paper's settings" in capsys.readouterr().err
    assert main(["frontier-job", "floor", "eps0.1"]) == 2
    assert "the floor job has the one level 'nonprivate', not 'eps0.1'" in capsys.readouterr().err


def test_a_config_file_that_cannot_be_read_is_named_even_with_params(capsys, tmp_path):
    assert main(["run", "huang2019_dpadmm", "fig3", "--configfile", str(tmp_path / "smok.yaml"),
                 "--params", '{"iterations": 2}']) == 2
    assert f"config file {tmp_path / 'smok.yaml'} does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("value, offline", [("on", True), ("ON", True), ("1", True), ("off", False), ("", False)])
def test_the_offline_switch_takes_on_and_off(monkeypatch, value, offline):
    from repro_dpadmm.datasets.fetch import offline as is_offline

    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", value)
    assert is_offline() is offline


def test_an_unknown_offline_value_or_home_of_no_user_is_named_before_any_work(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "perhaps")
    assert main(["data", "fetch", "a9a"]) == 2
    assert "REPRO_DPADMM_OFFLINE=perhaps: give 1" in capsys.readouterr().err
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    for argv in (["data", "fetch", "a9a", "--mirror", "~no-such-user-x/m"], ["bundle"]):
        monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", "~no-such-user-x/m")
        assert main(argv) == 2, argv
        assert "~no-such-user-x/m: no such user's home folder" in capsys.readouterr().err
    assert not (tmp_path / "resources").exists() and not (tmp_path / "bundles").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_output_device_is_one_line():
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", "import sys; from repro_dpadmm.cli import main; "
                               "sys.exit(main(['items']))"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.strip() == ("repro-dpadmm: error: cannot write the output: No space "
                                                            "left on device"), proc.stderr


def test_a_failed_notebook_or_solver_is_one_line(monkeypatch, capsys, tmp_path):
    from papermill.exceptions import PapermillExecutionError

    from repro_dpadmm import runner
    from repro_dpadmm.solvers import NotConvergedError

    def fails(*a, **k):
        raise PapermillExecutionError(6, 7, "eps = 1e-300", "OverflowError", "(34, 'Numerical result out of range')",
                                      [])   # cell index, execution count, source, name, value, traceback

    monkeypatch.setattr(runner, "run_item", fails)
    argv = ["run", "huang2019_dpadmm", "fig3", "--configfile", "config/smoke.yaml", "--out-dir", str(tmp_path / "o")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert ("huang2019_dpadmm/fig3: the notebook failed in cell 7: OverflowError: (34, 'Numerical result out of "
            "range'); the item's previous outputs are as they were") in err and "Traceback" not in err, err

    def killed(*a, **k):   # the kernel killed (by the system when memory ran out): nbclient's traceback was printed
        from nbclient.exceptions import DeadKernelError

        raise DeadKernelError("Kernel died")

    monkeypatch.setattr(runner, "run_item", killed)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith("\nrepro-dpadmm: huang2019_dpadmm/fig3: the notebook's kernel died (killed by a signal, "
                                "or by the system when memory ran out); the item's previous outputs are as they were")
    assert "Traceback" not in err, err

    def diverges(*a, **k):
        raise NotConvergedError("R-ADMM odd-step local problem at t = 3", 100, float("inf"), 1e-9)

    monkeypatch.setattr(runner, "run_item", diverges)
    assert main(argv) == 1
    assert capsys.readouterr().err.strip().endswith(
        "repro-dpadmm: error: NotConvergedError: R-ADMM odd-step local problem at t = 3: not converged after 100 "
        "iteration(s); residual inf > tolerance 1.000e-09")


def test_a_path_that_is_not_utf8_is_named_before_any_work(monkeypatch, capsys, tmp_path):
    from repro_dpadmm import runner

    monkeypatch.setattr(runner, "run_item", lambda *a, **k: pytest.fail("work started"))
    bad = str(tmp_path) + "/o\udcffd"
    assert main(["run", "huang2019_dpadmm", "fig3", "--configfile", "config/smoke.yaml", "--out-dir", bad]) == 2
    assert "a path whose name is not valid UTF-8" in capsys.readouterr().err


def test_running_out_of_memory_is_one_line(monkeypatch, capsys):
    from repro_dpadmm import runner

    def allocate(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(runner, "run_item", allocate)
    assert main(["run", "huang2019_dpadmm", "fig3", "--configfile", "config/smoke.yaml"]) == 1
    err = capsys.readouterr().err
    assert "repro-dpadmm: error: out of memory after" in err and "Traceback" not in err


def test_a_part_or_job_of_another_key_is_never_replaced_nor_read_as_this_one(tmp_path, monkeypatch, capsys):
    """`frontier-job huang_dpadmm eps3 --out .../eps0.1.json` replaced the eps0.1 job, which the item then read as
    eps0.1; a part of another key likewise."""
    import repro_dpadmm.experiments.beyond_frontier as bf
    from repro_dpadmm import config
    from repro_dpadmm.experiments import parts

    monkeypatch.setattr(bf, "run_job", lambda *a, **k: pytest.fail("work started"))
    params = config.item_params(bf.PAPER, bf.ITEM, Path("config/smoke.yaml").resolve())
    lv = [bf.level_key(v) for v in params["levels"]]
    job = tmp_path / "jobs" / "huang_dpadmm" / f"{lv[0]}.json"
    job.parent.mkdir(parents=True)
    bf.write_job({"method": "huang_dpadmm", "level": lv[0], "params_hash": "h", "test_error": [0.1]}, job)
    before = job.read_text()
    assert main(["frontier-job", "huang_dpadmm", lv[1], "--configfile", "config/smoke.yaml", "--out", str(job)]) == 2
    assert f"is not a huang_dpadmm/{lv[1]} job file" in capsys.readouterr().err and job.read_text() == before
    assert bf.is_job_file(job, "huang_dpadmm", lv[0]) and not bf.is_job_file(job, "huang_dpadmm", lv[1])
    # read back: a job file holding another level is stale
    bf.write_job({"method": "huang_dpadmm", "level": lv[1], "params_hash": "h"}, tmp_path / "jobs/huang_dpadmm/x.json")
    part = tmp_path / "alpha1.pkl"
    parts.write_part(part, parts.record("alpha3", {"a": 1}, value=1))
    assert parts.is_part_file(part, "alpha3") and not parts.is_part_file(part, "alpha1")
    rec, why = parts._load(part, parts.params_hash({"a": 1}), "alpha1")
    assert rec is None and "holds part 'alpha3', not 'alpha1'" in why
    # a part file signed with another key (another checkout's): refused as such, never unpickled
    foreign = tmp_path / "alpha3.pkl"
    blob = part.read_bytes()
    foreign.write_bytes(blob[:len(parts.SIGNED)] + bytes(32) + blob[len(parts.SIGNED) + 32:])
    assert parts.foreign_part_file(foreign) and not parts.foreign_part_file(part)
    assert not parts.foreign_part_file(job)
    assert main(["part", "zhang2018_madmm", "fig2", "alpha3", "--configfile", "config/smoke.yaml", "--out",
                 str(foreign)]) == 2
    assert "signed with another key than this project's resources/.parts-key" in capsys.readouterr().err


@pytest.mark.parametrize("mirror", ["ftp://example.org/m", "gopher://example.org/m"])
def test_a_mirror_of_another_scheme_is_refused_before_any_work(mirror, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["data", "fetch", "a9a", "--mirror", mirror]) == 2
    assert "a mirror is a folder, a file:// address or an http(s) URL" in capsys.readouterr().err
    assert not (tmp_path / "resources").exists()


def test_a_job_or_part_file_is_never_written_into_an_unpacked_bundle(tmp_path, monkeypatch, capsys):
    """`run`, `report` and `bundle` refuse a folder inside a results bundle; `part --out` and `frontier-job --out` wrote
    there, and the bundle then failed its manifest."""
    import repro_dpadmm.experiments.beyond_frontier as bf
    from repro_dpadmm import config

    monkeypatch.setattr(bf, "run_job", lambda *a, **k: pytest.fail("work started"))
    bundle = tmp_path / "b"
    (bundle / "results").mkdir(parents=True)
    (bundle / "MANIFEST.sha256").write_text("")
    params = config.item_params(bf.PAPER, bf.ITEM, Path("config/smoke.yaml").resolve())
    level = bf.level_key(params["levels"][0])
    for argv in (["frontier-job", "huang_dpadmm", level, "--configfile", "config/smoke.yaml"],
                 ["part", "zhang2018_madmm", "fig2", "alpha3", "--configfile", "config/smoke.yaml"]):
        out = bundle / "results" / ("j.json" if argv[0] == "frontier-job" else "alpha3.pkl")
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"--out {out} lies in the results bundle {bundle}" in err, err
        assert not out.exists()


@pytest.mark.parametrize("stop, rc", [(SystemExit(143), 143), (KeyboardInterrupt(), 130)])
def test_a_stopped_run_reports_no_cut_short_task_of_the_notebook_client(monkeypatch, caplog, stop, rc):
    """A stop cuts the notebook client's tasks short (a kernel the signal killed first: DeadKernelError); asyncio
    would report each as "Task exception was never retrieved" with a traceback when it is collected at exit, after
    the one-line stop message that says it all."""
    import asyncio
    import gc
    import logging

    from repro_dpadmm import cli

    monkeypatch.setattr(logging.getLogger("asyncio"), "disabled", False)   # restored after the test
    loop = asyncio.new_event_loop()

    async def kernel_died():
        raise RuntimeError("Kernel died")

    task = loop.create_task(kernel_died())
    loop.run_until_complete(asyncio.sleep(0.01))   # the task has failed; nobody retrieves its exception

    def command(args):
        raise stop

    monkeypatch.setattr(cli, "cmd_info", command)
    monkeypatch.setattr(cli, "_check_environment", lambda args: None)
    try:
        got = cli.main(["info"])
    except SystemExit as exc:
        got = exc.code
    assert got == rc
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        del task   # collected here: asyncio logs its unretrieved exception now, unless its log is off
        loop.close()
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
