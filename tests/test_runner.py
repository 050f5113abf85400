"""The item runner: papermill injects parameters, HTML is rendered, unavailable datasets skip the notebook."""

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from repro_dpadmm.runner import run_item


@pytest.fixture
def project(tmp_path):
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "config").mkdir()
    (tmp_path / "resources/processed").mkdir(parents=True)
    nb = new_notebook(cells=[
        new_markdown_cell("# Demo item"),
        new_code_cell("params = None\nout_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell("from repro_dpadmm.experiments.common import write_metrics\n"
                      "write_metrics(out_dir, {'doubled': 2 * params['x'], 'seed': params['seed']})"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "notebooks/demo").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks/demo/item.ipynb")
    return tmp_path


def test_notebook_runs_with_injected_parameters(project):
    metrics = run_item("demo", "item", {"x": 21, "seed": 3}, "results/demo/item", root=project)
    out = project / "results/demo/item"
    assert metrics["status"] == "ok" and metrics["doubled"] == 42 and metrics["seed"] == 3
    assert metrics["wall_time_s"] > 0
    assert json.loads((out / "metrics.json").read_text()) == metrics
    html = (out / "item.html").read_text()
    assert "Demo item" in html and "injected-parameters" in (out / "item.ipynb").read_text()
    # the executed notebook names the item's folder relative to the project root, never the staging folder or the
    # checkout's own location; the HTML loads nothing from another host
    text = (out / "item.ipynb").read_text()
    assert 'out_dir = \\"results/demo/item\\"' in text or '"results/demo/item"' in text
    assert "staging" not in text and str(project) not in text and str(project) not in html
    assert "<script src" not in html and "cdn" not in html.lower()


def test_all_datasets_unavailable_skips_the_notebook(project):
    (project / "resources/processed/gisette.json").write_text(
        json.dumps({"name": "gisette", "available": False, "reason": "could not obtain gisette_scale.bz2"}))
    metrics = run_item("demo", "item", {"x": 1, "seed": 0, "datasets": ["gisette"]}, "results/demo/item",
                       root=project)
    assert metrics["status"] == "not run" and "dataset unavailable" in metrics["reason"]
    assert "gisette_scale.bz2" in metrics["reason"]
    assert "not run" in (project / "results/demo/item/item.html").read_text()
    assert not (project / "results/demo/item/item.ipynb").exists()


def test_a_failing_notebook_leaves_no_metrics(project):
    """A first run that fails writes nothing (a failed rerun keeps the previous run's outputs: see below)."""
    with pytest.raises(Exception):
        run_item("demo", "item", {"seed": 0}, "results/demo/item", root=project)  # params['x'] missing
    assert not (project / "results/demo/item/metrics.json").exists()
    assert not list((project / "results/demo").glob(".item.staging-*"))


def test_the_not_run_page_names_no_path_of_this_machine(project, monkeypatch, tmp_path):
    mirror = tmp_path.parent / "some-mirror"
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", str(mirror))
    reason = (f"could not obtain gisette_scale.bz2\n  tried: {mirror}/libsvm/binary/gisette_scale.bz2\n"
              f"  cached: {project.resolve()}/resources/raw/libsvm/binary/gisette_scale.bz2")
    (project / "resources/processed/gisette.json").write_text(
        json.dumps({"name": "gisette", "available": False, "reason": reason}))
    run_item("demo", "item", {"x": 1, "seed": 0, "datasets": ["gisette"]}, "results/demo/item", root=project)
    for name in ("item.html", "metrics.json"):
        text = (project / "results/demo/item" / name).read_text()
        assert str(project.resolve()) not in text and str(mirror) not in text, text
    page = (project / "results/demo/item/item.html").read_text()
    assert "&lt;mirror&gt;/libsvm/binary/gisette_scale.bz2" in page and "resources/raw/libsvm/binary" in page


def test_write_metrics_keeps_a_note_apart_from_the_reason(tmp_path):
    import json

    from repro_dpadmm.experiments.common import write_metrics

    m = json.loads(write_metrics(tmp_path, {"x": 1.0}, note="a finding").read_text())
    assert m == {"status": "ok", "reason": "", "note": "a finding", "x": 1.0}
    assert "note" not in json.loads(write_metrics(tmp_path, {"x": 1.0}).read_text())


def test_claims_table_judges_an_items_claims_as_the_report_does():
    from repro_dpadmm.experiments.common import claims_table

    held = claims_table("huang2019_dpadmm", "fig1", {"central.w_norm": 23.5})
    missed = claims_table("huang2019_dpadmm", "fig1", {"central.w_norm": 104.7})
    assert "(`c_w_l1`) | **reproduced**" in held and "(`c_w_l1`) | **not reproduced**" in missed
    assert "**not checkable**" in held  # claims whose metrics are absent are said to be so, not dropped
    assert "`theorem3_bound`" in missed and "`theorem3_rate`" not in missed  # fig1's claims only, not fig2's


# ------------------------------------------------------------------------------------- outputs complete or absent
class Killed(BaseException):
    """Stands for SIGKILL: no `except Exception` handler runs (only `finally`, which touches no item output)."""


def _fake_papermill(monkeypatch, version, figures):
    """papermill/nbconvert stand-ins: the 'notebook' writes figures and metrics tagged with `version`."""
    import papermill

    from repro_dpadmm import runner

    def execute(src, dst, parameters, **kw):
        out = Path(kw["cwd"]) / parameters["out_dir"]  # the notebook's out_dir is relative to its working directory
        seen = (out / "jobs/a.json").read_text() if (out / "jobs/a.json").exists() else None
        for fig in figures:
            (out / fig).write_text(f"{version}:{fig}")
        Path(dst).write_text(f"{version}:notebook")
        (out / "metrics.json").write_text(json.dumps({"status": "ok", "version": version, "jobs_seen": seen}))

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    monkeypatch.setattr(runner, "_render_html", lambda nb, html: html.write_text(f"{version}:html"))


def _state(out: Path, expected: dict[str, set[str]]) -> str:
    """'absent', or the version whose complete outputs the folder holds; AssertionError on any mix."""
    files = {p.name for p in out.iterdir() if p.is_file() and not p.name.startswith(".")} if out.is_dir() else set()
    if "metrics.json" not in files:
        return "absent"
    version = json.loads((out / "metrics.json").read_text())["version"]
    assert "settings.json" in files  # the runner's record of the run's parameters, part of every complete output
    files.discard("settings.json")
    assert files == expected[version] | {"metrics.json"}, f"{version} metrics beside {sorted(files)}"
    for name in files - {"metrics.json"}:
        assert (out / name).read_text().startswith(f"{version}:"), f"{name} is not from {version}"
    return version


OLD_FIGS, NEW_FIGS = ["item.png", "old_only.png"], ["item.png", "new_only.png"]
EXPECTED = {"v1": {"item.ipynb", "item.html", *OLD_FIGS}, "v2": {"item.ipynb", "item.html", *NEW_FIGS}}


def test_kill_at_every_step_leaves_old_or_new_complete_outputs(project, monkeypatch):
    """The kill test: interrupt the run at each file operation in turn; the folder is always the old complete
    outputs, the new complete outputs or without metrics.json ('not run yet'), and the next run completes it."""
    import os
    import pathlib

    out = project / "results/demo/item"
    (out / "jobs").mkdir(parents=True)
    (out / "jobs/a.json").write_text("job")  # another rule's output inside the item's folder
    real_replace, real_unlink = os.replace, pathlib.Path.unlink
    seen_states, kill_at = set(), 0
    while True:
        _fake_papermill(monkeypatch, "v1", OLD_FIGS)
        monkeypatch.setattr(os, "replace", real_replace)
        monkeypatch.setattr(pathlib.Path, "unlink", real_unlink)
        run_item("demo", "item", {"seed": 0}, out, root=project)
        assert _state(out, EXPECTED) == "v1"
        _fake_papermill(monkeypatch, "v2", NEW_FIGS)
        ops = {"n": 0}

        def counted(real):
            def op(*a, **k):
                ops["n"] += 1
                if ops["n"] == kill_at + 1:
                    raise Killed()
                return real(*a, **k)
            return op

        monkeypatch.setattr(os, "replace", counted(real_replace))
        monkeypatch.setattr(pathlib.Path, "unlink", counted(real_unlink))
        try:
            run_item("demo", "item", {"seed": 0}, out, root=project)
            finished = True
        except Killed:
            finished = False
        monkeypatch.setattr(os, "replace", real_replace)
        monkeypatch.setattr(pathlib.Path, "unlink", real_unlink)
        seen_states.add(_state(out, EXPECTED))
        assert (out / "jobs/a.json").read_text() == "job"
        _fake_papermill(monkeypatch, "v2", NEW_FIGS)
        metrics = run_item("demo", "item", {"seed": 0}, out, root=project)  # the next run repairs
        assert _state(out, EXPECTED) == "v2" and metrics["jobs_seen"] == "job"
        assert not list(out.parent.glob(".item.staging-*"))
        if finished:
            break
        kill_at += 1
    assert kill_at >= 6 and seen_states == {"v1", "absent", "v2"}, (kill_at, seen_states)


def test_sigkill_during_the_notebook_keeps_the_previous_outputs(project, monkeypatch):
    """A real SIGKILL of `run_item` (and its kernel) while the notebook runs; the next run also removes what the
    killed kernel left in the temporary folder (its sockets and connection file, which holds its key)."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    systmp = project / "systmp"
    systmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))

    nb = nbformat.read(project / "notebooks/demo/item.ipynb", as_version=4)
    nb.cells[2].source = ("import time\nfrom pathlib import Path\n"
                          "from repro_dpadmm.experiments.common import write_metrics\n"
                          "Path(out_dir, 'item.png').write_text(str(params['x']))\n"
                          "time.sleep(params['sleep'])\n"
                          "write_metrics(out_dir, {'x': params['x']})")
    nbformat.write(nb, project / "notebooks/demo/item.ipynb")
    out = project / "results/demo/item"
    run_item("demo", "item", {"x": 1, "sleep": 0, "seed": 0}, out, root=project)
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    code = ("import sys; from pathlib import Path; from repro_dpadmm.runner import run_item; "
            f"run_item('demo', 'item', {{'x': 2, 'sleep': 60, 'seed': 0}}, {str(out)!r}, root=Path({str(project)!r}))")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, env={**os.environ,
                            "TMPDIR": str(systmp)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not list(out.parent.glob(".item.staging-*/item.png")):  # the new run is mid-notebook
            assert time.time() < deadline and proc.poll() is None, "the run did not start"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old  # the previous complete outputs, untouched
    metrics = run_item("demo", "item", {"x": 3, "sleep": 0, "seed": 0}, out, root=project)
    assert metrics["x"] == 3 and (out / "item.png").read_text() == "3"
    assert not list(out.parent.glob(".item.staging-*"))
    assert not list(systmp.iterdir()), "the killed kernel's files are left in the temporary folder"


def test_not_run_rerun_leaves_no_old_figure_or_notebook(project, monkeypatch):
    """The report can never show the previous run's figure under an item whose metrics say "not run"."""
    out = project / "results/demo/item"
    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    run_item("demo", "item", {"seed": 0}, out, root=project)
    assert (out / "old_only.png").exists()
    (project / "resources/processed/gisette.json").write_text(json.dumps({"available": False, "reason": "gone"}))
    metrics = run_item("demo", "item", {"seed": 0, "datasets": ["gisette"]}, out, root=project)
    assert metrics["status"] == "not run"
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} == {"metrics.json", "item.html", "settings.json"}


def test_a_failed_rerun_keeps_the_previous_complete_outputs(project, monkeypatch):
    """Issue 50: a rerun that fails (a bad parameter, an exception in the notebook) left the item with nothing."""
    import papermill

    out = project / "results/demo/item"
    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    run_item("demo", "item", {"seed": 0}, out, root=project)
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    with pytest.raises(RuntimeError):
        run_item("demo", "item", {"seed": 0}, out, root=project)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    assert not list(out.parent.glob(".item.staging-*"))


def test_a_run_never_writes_into_a_report_or_the_checkouts_config(project, monkeypatch):
    from repro_dpadmm.report import build_report
    from repro_dpadmm.staging import OutDirError

    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    report = project / "results/report"
    build_report(report, root=project)
    before = sorted(p.relative_to(report).as_posix() for p in report.rglob("*"))
    for name, why in (("report", "the project's reports go"), ("rejudged", "the project's reports go"),
                      ("whatif", "what-if runs go")):   # named as what goes there, not as a paper's folder
        with pytest.raises(OutDirError, match=f"results/{name} is where {why}"):
            run_item("demo", "item", {"seed": 0}, project / "results" / name, root=project)
    for out in (report, project / "config", project / "config/claims", project):
        with pytest.raises(OutDirError):
            run_item("demo", "item", {"seed": 0}, out, root=project)
    # nor into a folder inside an item's folder (its parts, the frontier's jobs), its own item's or another's
    for out in ("results/demo/item/parts", "results/beyond/frontier/jobs", "results/demo/other/x/y"):
        with pytest.raises(OutDirError, match="lies inside results/.*, the folder of .*'s outputs"):
            run_item("demo", "item", {"seed": 0}, project / out, root=project)
    # nor into the datasets it reads, the logs or the repository's own folders
    for out in ("resources/processed", "resources", "logs/x", ".git", "docs"):
        existed = (project / out).exists()
        with pytest.raises(OutDirError, match=f"lies in the checkout's {out.split('/')[0]}/"):
            run_item("demo", "item", {"seed": 0}, project / out, root=project)
        assert (project / out).exists() == existed
    assert sorted(p.relative_to(report).as_posix() for p in report.rglob("*")) == before


def test_only_the_items_own_files_are_ever_removed_from_an_out_dir(project, monkeypatch, tmp_path):
    """--out-dir may be a folder holding other files: runs, reruns and failures remove only what a run wrote."""
    import papermill

    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "data").mkdir()
    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    run_item("demo", "item", {"seed": 0}, out, root=project)
    _fake_papermill(monkeypatch, "v2", NEW_FIGS)
    run_item("demo", "item", {"seed": 0}, out, root=project)
    assert not (out / "old_only.png").exists() and (out / "new_only.png").read_text() == "v2:new_only.png"
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    with pytest.raises(RuntimeError):   # a failed rerun: the previous run's outputs stay, and the user's files
        run_item("demo", "item", {"seed": 0}, out, root=project)
    assert (out / "new_only.png").read_text() == "v2:new_only.png" and (out / "metrics.json").is_file()
    assert (out / "notes.txt").read_text() == "mine" and (out / "data").is_dir()


@pytest.mark.parametrize("name", ["item.html", "item.png", "metrics.json"])
def test_a_run_never_replaces_a_users_file_of_an_outputs_name_in_an_out_dir(project, monkeypatch, tmp_path, name):
    """A user's file in an --out-dir that has the name of one of the run's outputs (known before the run, or a figure
    known only when it is committed) stops the run with an error naming it; the file is as it was."""
    from repro_dpadmm.staging import OutDirError

    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_text("mine")
    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    with pytest.raises(OutDirError, match=name.replace(".", r"\.")):
        run_item("demo", "item", {"seed": 0}, out, root=project)
    assert (out / name).read_text() == "mine"
    # a name known before the run is refused before the run makes its lock there; a figure's only at its commit,
    # under the run's lock (which lies inside)
    known_before = name in ("item.html", "metrics.json")
    assert sorted(p.name for p in out.iterdir()) == ([] if known_before else [f".{out.name}.lock"]) + [name]


def test_a_run_into_an_out_dir_writes_nothing_beside_it(project, monkeypatch, tmp_path):
    """The lock and the staging folders of a run into an --out-dir live inside it: its parent, which the user did
    not name, gets nothing (an item's own folder of results/ keeps them beside it, where Snakemake leaves them)."""
    parent = tmp_path / "parent"
    parent.mkdir()
    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    run_item("demo", "item", {"seed": 0}, parent / "mine", root=project)
    assert sorted(p.name for p in parent.iterdir()) == ["mine"]
    assert (parent / "mine" / "metrics.json").is_file()


@pytest.mark.parametrize("where", ["results", "results/demo"])
def test_a_run_never_writes_into_the_results_folder_or_a_papers_folder(project, monkeypatch, where):
    from repro_dpadmm.staging import OutDirError

    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    (project / where).mkdir(parents=True)
    with pytest.raises(OutDirError, match="results folder or a paper's folder"):
        run_item("demo", "item", {"seed": 0}, project / where, root=project)
    assert list((project / where).iterdir()) == []


@pytest.mark.parametrize("other", ["results/demo/other", "elsewhere"])
def test_a_run_never_writes_into_another_items_folder(project, monkeypatch, tmp_path, other):
    """--out-dir naming another item's folder (its own of results/, or any folder whose settings.json a run of
    another item left) is refused before any work, its files as they were."""
    from repro_dpadmm.staging import OutDirError

    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    folder = project / other if other.startswith("results") else tmp_path / other
    folder.mkdir(parents=True)
    (folder / "other.html").write_text("the other item's page")
    (folder / "settings.json").write_text(json.dumps({"paper": "demo", "item": "other"}))
    with pytest.raises(OutDirError, match="holds the outputs of demo/other"):
        run_item("demo", "item", {"seed": 0}, folder, root=project)
    assert sorted(p.name for p in folder.iterdir()) == ["other.html", "settings.json"]


def test_a_users_file_at_the_locks_name_is_never_written_over(project, monkeypatch, tmp_path):
    from repro_dpadmm.locks import NotALock

    out = tmp_path / "mine" / "item"
    out.mkdir(parents=True)
    (out / ".item.lock").write_text("my notes")    # the lock of a run into an --out-dir lies inside it
    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    with pytest.raises(NotALock, match="not a lock"):
        run_item("demo", "item", {"seed": 0}, out, root=project)
    assert (out / ".item.lock").read_text() == "my notes" and sorted(p.name for p in out.iterdir()) == [".item.lock"]


def test_a_notebook_run_by_hand_writes_through_the_staging_and_replaces_the_earlier_run(project):
    """`jupyter nbconvert --execute` (no papermill, no runner): the item's folder ends up with exactly that run's
    files, complete, and none of the earlier run's (its notebook, HTML and figures are gone)."""
    import os
    import subprocess
    import sys

    nb = nbformat.read(project / "notebooks/demo/item.ipynb", as_version=4)
    nb.cells[2].source = (
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "from repro_dpadmm.experiments.common import save_figures, setup_item, write_metrics\n"
        "params, out_dir = setup_item('demo', 'item', params or {'x': 5, 'seed': 0}, out_dir)\n"
        "fig, ax = plt.subplots()\nax.plot([0, 1], [params['x'], 1], label='x')\n"
        "save_figures({'item': fig}, out_dir)\n"
        "metrics_file = write_metrics(out_dir, {'doubled': 2 * params['x']})")
    nbformat.write(nb, project / "notebooks/demo/item.ipynb")
    out = project / "results/demo/item"
    run_item("demo", "item", {"x": 1, "seed": 0}, out, root=project)
    (out / "old_only.png").write_text("a figure of the earlier run")   # as if the earlier run had drawn it
    (out / ".outputs.json").write_text(json.dumps(sorted(p.name for p in out.iterdir()
                                                         if not p.name.startswith("."))))
    assert {"item.ipynb", "item.html", "item.png", "old_only.png"} <= {p.name for p in out.iterdir()}
    env = {**os.environ, "REPRO_DPADMM_ROOT": str(project)}
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           "--output-dir", str(project / "by_hand"), str(project / "notebooks/demo/item.ipynb")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} == {
        "item.png", "item.pdf", "item.csv", "settings.json", "metrics.json"}
    assert json.loads((out / "metrics.json").read_text())["doubled"] == 10
    settings = json.loads((out / "settings.json").read_text())
    assert settings["by_hand"] is True and settings["params"] == {"x": 5, "seed": 0}
    assert not list(out.parent.glob(".item.staging-*"))
    # the report reads the parameters of a run by hand from its settings.json (there is no executed notebook)
    from repro_dpadmm.provenance import executed_params

    assert executed_params(out, "item") == {"x": 5, "seed": 0}


def test_items_run_side_by_side_each_talk_to_their_own_kernel(project):
    """Two runs at once (Snakemake's --cores 2): each kernel's sockets have their own names, so neither connects
    to the other's kernel (jupyter_client's default IPC name is one per folder)."""
    import subprocess
    import sys

    nb = nbformat.read(project / "notebooks/demo/item.ipynb", as_version=4)
    nb.cells[2].source = ("import time\ntime.sleep(2)\nfrom repro_dpadmm.experiments.common import write_metrics\n"
                          "write_metrics(out_dir, {'x': params['x']})")
    nbformat.write(nb, project / "notebooks/demo/item.ipynb")
    code = ("import sys; from pathlib import Path; from repro_dpadmm.runner import run_item; k = int(sys.argv[1]); "
            f"m = run_item('demo', 'item', {{'x': k, 'seed': 0}}, f'out/run{{k}}', root=Path({str(project)!r})); "
            "assert m['x'] == k, m")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for k in (1, 2, 3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], "\n".join(o[-1500:] for o in outs)
    assert not list(project.glob("kernel-ipc*"))  # no socket file left in the project


def test_a_manifest_never_names_the_folder_or_its_parent(tmp_path):
    """The outputs manifest may come from anywhere (a bundle unpacked by hand): "..", ".", "" or a path never make
    the folder itself, its parent or anything outside it one of the item's outputs (they would be removed)."""
    from repro_dpadmm.staging import MANIFEST, owned

    out = tmp_path / "results" / "paper" / "item"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text("{}")
    (tmp_path / "results" / "paper" / "sibling").mkdir()
    (out / MANIFEST).write_text(json.dumps(["..", ".", "", "../sibling", "metrics.json", "a\\\\b", "x\u0000y"]))
    assert owned(out, "item", legacy_all=False) == [out / "metrics.json"]


def test_a_user_folder_with_a_report_s_file_names_is_no_report(tmp_path):
    """Only a folder where the project puts reports (results/report, results/rejudged/<name>, results/whatif/<name>/
    report) may be taken for a report written before markers: elsewhere index.html or items/ are a user's own."""
    from repro_dpadmm.staging import OutDirError, check_report_folder

    site = tmp_path / "photos"
    (site / "items").mkdir(parents=True)
    (site / "items" / "cat.jpg").write_text("a cat")
    (site / "index.html").write_text("<p>my site</p>")
    (site / "summary.json").write_text("{}")
    with pytest.raises(OutDirError, match="holds other files and no report"):
        check_report_folder(site, kind="rejudged")
    legacy = tmp_path / "results" / "report"
    legacy.mkdir(parents=True)
    (legacy / "summary.json").write_text('{"papers": {}}')
    check_report_folder(legacy, kind="report")            # a report of before markers, where the project puts it
    mine = tmp_path / "results" / "rejudged" / "mine"     # where reports go, but the files are a user's own
    mine.mkdir(parents=True)
    (mine / "claims.json").write_text("USER")
    (mine / "index.html").write_text("USER")
    with pytest.raises(OutDirError, match="holds other files and no report"):
        check_report_folder(mine, kind="rejudged")


def test_a_stopped_run_shows_no_kernel_traceback_and_a_failed_one_shows_the_kernels_stderr(project, capsys):
    """SIGTERM mid-notebook: the kernel, shut down mid-reply, wrote ZMQError tracebacks on the run's stderr; they go
    to the kernel's own file now. A run whose kernel dies shows that file's tail (the kernel's last words)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    nb = nbformat.read(project / "notebooks/demo/item.ipynb", as_version=4)
    nb.cells[2].source = ("import os, sys, time\nfrom pathlib import Path\n"
                          "Path(out_dir, 'item.png').write_text('x')\n"
                          "if params['die']:\n    os.write(sys.__stderr__.fileno(), b'kernel last words\\n')\n"
                          "    os._exit(3)\n"
                          "time.sleep(60)")
    nbformat.write(nb, project / "notebooks/demo/item.ipynb")
    out = project / "results/demo/item"
    code = ("import sys; from pathlib import Path; from repro_dpadmm.runner import run_item\n"
            "try:\n"
            f"    run_item('demo', 'item', {{'die': False, 'seed': 0}}, {str(out)!r}, root=Path({str(project)!r}))\n"
            "except SystemExit:\n    print('stopped', file=sys.stderr)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 120
    while not list(out.parent.glob(".item.staging-*/item.png")):  # mid-notebook
        assert time.time() < deadline and proc.poll() is None, "the run did not start"
        time.sleep(0.2)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert err.strip().splitlines()[-1] == "stopped" and "Traceback" not in err and "ZMQError" not in err, err
    with pytest.raises(Exception):
        run_item("demo", "item", {"die": True, "seed": 0}, out, root=project)
    assert "the notebook kernel's own stderr (last lines):\n  kernel last words" in capsys.readouterr().err


def test_a_run_that_waited_for_its_out_dir_checks_again_whose_outputs_it_holds(project, monkeypatch, tmp_path):
    """Two items run into one --out-dir at once: the second waits for the folder's lock, and by then the folder
    holds the first's outputs; it is refused then, as it would have been had it started later."""
    import threading
    import time

    from repro_dpadmm.runner import item_lock
    from repro_dpadmm.staging import OutDirError, write_settings

    _fake_papermill(monkeypatch, "v1", OLD_FIGS)
    out = tmp_path / "shared"
    out.mkdir()
    held = threading.Event()

    def other_item():   # holds the folder's lock, commits its outputs, then lets go
        with item_lock("demo", "other", out, own=False):
            held.set()
            time.sleep(1.0)
            write_settings(out, {"paper": "demo", "item": "other", "params": {}})
            (out / "metrics.json").write_text('{"status": "ok"}')

    t = threading.Thread(target=other_item)
    t.start()
    held.wait(10)
    try:
        with pytest.raises(OutDirError, match="holds the outputs of demo/other"):
            run_item("demo", "item", {"seed": 0}, out, root=project)
    finally:
        t.join()
    assert (out / "metrics.json").read_text() == '{"status": "ok"}' and not (out / "item.html").exists()


def test_a_notebook_run_by_hand_clears_and_commits_under_the_items_lock(project, monkeypatch):
    """setup_item (by hand: no out_dir) and its write_metrics wait for a run of the item that holds its lock, so a
    run's commit and a by-hand commit never interleave."""
    import threading
    import time

    from repro_dpadmm.experiments.common import setup_item, write_metrics
    from repro_dpadmm.staging import item_lock

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    final = project / "results/demo/item"
    final.parent.mkdir(parents=True, exist_ok=True)
    released = {}

    def a_run(seconds):
        with item_lock("demo", "item", final):
            held.set()
            time.sleep(seconds)
            released["at"] = time.monotonic()

    for step in ("setup", "commit"):
        held = threading.Event()
        if step == "commit":
            params, out = setup_item("demo", "item", {"x": 1, "seed": 0})
        t = threading.Thread(target=a_run, args=(0.8,))
        t.start()
        held.wait(10)
        if step == "setup":
            setup_item("demo", "item", {"x": 1, "seed": 0})
        else:
            write_metrics(out, {"x": 1})
        done = time.monotonic()
        t.join()
        assert done >= released["at"], f"{step} did not wait for the run holding the item's lock"
    assert (final / "metrics.json").is_file()


def test_a_run_never_writes_into_a_folder_anyone_may_write_into_or_into_a_bundle(tmp_path):
    """`run --out-dir /tmp` wrote its outputs, lock and manifest among other users' files; a folder inside an
    unpacked results bundle would break its manifest."""
    from repro_dpadmm.paths import project_root
    from repro_dpadmm.staging import OutDirError, check_item_folder

    ROOT = project_root()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(OutDirError, match="is a folder anyone may write into"):
        check_item_folder(shared, ROOT, "huang2019_dpadmm", "fig1")
    check_item_folder(shared / "mine", ROOT, "huang2019_dpadmm", "fig1")   # one made inside it is fine
    bundle = tmp_path / "b"
    (bundle / "results").mkdir(parents=True)
    (bundle / "MANIFEST.sha256").write_text("")
    for out in (bundle / "results" / "x", bundle):
        with pytest.raises(OutDirError, match="lies in the results bundle"):
            check_item_folder(out, ROOT, "huang2019_dpadmm", "fig1")
