"""Hostile results bundles (issue 33): every crafted archive of tests/_hostile.py ends in the package's own error
naming the file or member, or is re-judged with the hostile part shown as such, in bounded time, with nothing
written outside the folders the re-judge owns."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _hostile import ITEM, PROBES, SCRIPT
from _report_synth import make_project

from repro_dpadmm.bundle import UNPACK_PREFIX, BundleError, Limits, make_bundle, opened, rejudge, unpack, verify
from repro_dpadmm.cli import main
from repro_dpadmm.report import build_report

SECONDS = 20   # every probe, archive making included, ends well within this


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = make_project(tmp_path_factory.mktemp("hostile") / "project")
    build_report("results/report", root=root)
    return root


@pytest.fixture(scope="module")
def base(project, tmp_path_factory):
    """An intact bundle, unpacked by the package itself: every probe starts from a copy."""
    tmp = tmp_path_factory.mktemp("base")
    archive = make_bundle(tmp / "b.tar.gz", root=project)
    unpack(archive, tmp / "unpacked")
    return tmp / "unpacked" / "b"


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """A temporary folder of the test's own (where the re-judge unpacks), so that what is left there is ours."""
    folder = tmp_path / "systmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _outside(tmp: Path) -> set[str]:
    """What a probe could have written outside the re-judge's folders: the scratch folder's entries (the crafted
    bundle's siblings) and the temporary folder's."""
    return {p.name for p in tmp.iterdir()} | {f"tmp/{p.name}" for p in (tmp / "systmp").iterdir()}


@pytest.mark.parametrize("name, kind, build, expected", PROBES, ids=[p[0] for p in PROBES])
def test_probe_ends_in_the_packages_own_error_or_is_judged_safely(project, base, tmp_path, name, kind, build,
                                                                  expected):
    t0 = time.perf_counter()
    source = build(base, tmp_path)
    before = _outside(tmp_path)
    out = tmp_path / "rejudged"
    if expected is not None:
        with pytest.raises(BundleError) as exc:
            rejudge(source, out, root=project)
        assert expected in str(exc.value), str(exc.value)
        assert not out.exists()
    else:
        rejudge(source, out, root=project)
        assert (out / "index.html").is_file() and (out / "claims.json").is_file()
    assert time.perf_counter() - t0 < SECONDS
    assert _outside(tmp_path) - before <= {"rejudged"}, "a file appeared outside the re-judge's folders"
    assert not list((tmp_path / "systmp").iterdir()), "temporary folder left"
    assert not (tmp_path / "outside-absolute.txt").exists() and not (tmp_path.parent / "outside-dotdot.txt").exists()


def _rejudge(project, base, tmp_path, probe: str) -> tuple[Path, dict]:
    build = next(p[2] for p in PROBES if p[0] == probe)
    out = tmp_path / "rejudged"
    rejudge(build(base, tmp_path), out, root=project)
    summary = json.loads((out / "summary.json").read_text())
    return out, summary["papers"]["huang2019_dpadmm"]["item_states"]["fig1"]


@pytest.mark.parametrize("probe, fragment", [
    ("1e400 in wall_time_s", "metrics.json:1: wall_time_s: 1e400 is not a finite number"),
    ("NaN in wall_time_s", "metrics.json:1: wall_time_s: NaN is not a finite number"),
    ("integer 10^400 as a metric", "err_final.n100: the integer 100000000000... (401 digits) is outside"),
    ("metrics.json nested 100,000 deep", "metrics.json: nested deeper than 64 levels"),
    ("metrics.json with 300,001 keys", "metrics.json holds 300,001 keys, more than the 200,000"),
    ("metrics.json of 2.1 million numbers", "metrics.json holds more than the 2,000,000 values"),
    ("metrics.json of 17 MiB", "metrics.json is 17.0 MiB, more than the 16 MiB"),
])
def test_a_bad_metrics_file_makes_the_item_missing_naming_file_line_and_key(project, base, tmp_path, probe,
                                                                           fragment):
    _, state = _rejudge(project, base, tmp_path, probe)
    assert state["state"] == "missing" and "unreadable metrics.json" in state["reason"]
    assert fragment in state["reason"], state["reason"]


def test_a_deep_sidecar_makes_its_dataset_unavailable(project, base, tmp_path):
    out, _ = _rejudge(project, base, tmp_path, "sidecar nested 100,000 deep")
    records = {r["id"]: r for r in json.loads((out / "claims.json").read_text())}
    not_run = [r for r in records.values()
               if r["id"].startswith("huang2019_dpadmm.fig1.") and r["verdict"] == "not run"]
    assert not_run and all("adult_huang2019" in json.dumps(r) for r in not_run)
    # the dataset's size claims are setup checks (on the paper's page, not in the index's table of claims)
    assert "nested deeper than 64 levels" in (out / "huang2019_dpadmm.html").read_text()


def test_a_deep_notebook_gives_no_parameters_and_no_crash(project, base, tmp_path):
    _, state = _rejudge(project, base, tmp_path, "notebook nested 100,000 deep")
    assert state["state"] == "produced" and state["params_from"] != "run"


def test_figures_too_large_or_too_many_pixels_are_listed_not_embedded(project, base, tmp_path):
    for probe, why in (("40 MiB-class giant PNG (9 MiB)", "fig1.png: 9.0 MiB, more than the 8 MiB"),
                       ("PNG of 100,000 x 100,000 pixels", "fig1.png: 100000 x 100000 pixels")):
        out, _ = _rejudge(project, base, tmp_path / probe.split()[0], probe)
        page = (out / "huang2019_dpadmm.html").read_text()
        assert f"Figure not shown: {why}" in page
        assert not (out / "items/huang2019_dpadmm/fig1/fig1.png").exists()     # nor copied beside the report
        assert max(p.stat().st_size for p in out.rglob("*.html")) < 2 * 2**20


def test_a_script_in_an_item_page_is_never_served_active(project, base, tmp_path):
    from html import escape

    out, _ = _rejudge(project, base, tmp_path, "script in an item page")
    for page in out.rglob("*.html"):   # the report's own pages carry its own small script, never the bundle's
        assert SCRIPT not in page.read_text(), page
    page = (out / "huang2019_dpadmm.html").read_text()
    item = out / "items" / ITEM.removeprefix("results/")
    wrapper = (item / "fig1.html").read_text()
    # the bundle's page lives only inside the sandboxed frame (escaped in srcdoc), behind a policy that forbids
    # scripts; there is no file of it that a browser could open directly
    assert "<iframe sandbox srcdoc=" in wrapper and "<script" not in wrapper
    assert escape('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'', quote=True) in wrapper
    assert escape(SCRIPT, quote=True) in wrapper    # kept for reading, inert
    assert sorted(p.name for p in item.glob("*.html")) == ["fig1.html"]
    assert 'href="items/huang2019_dpadmm/fig1/fig1.html"' in page


def test_the_re_judge_of_the_workflow_keeps_item_pages_as_they_are(project, tmp_path):
    build_report(tmp_path / "report", root=project)
    page = (tmp_path / "report/items/huang2019_dpadmm/fig1/fig1.html").read_text()
    assert "sandbox" not in page and not (tmp_path / "report/items/huang2019_dpadmm/fig1/fig1.bundle.html").exists()


def test_limits_are_overridable_and_named_in_the_error(project, base, tmp_path, monkeypatch):
    archive = make_bundle(tmp_path / "b.tar.gz", root=project)
    with pytest.raises(BundleError, match="more than 10 members .set REPRO_DPADMM_BUNDLE_MAX_FILES"):
        with opened(archive, Limits(members=10)):
            pass
    with pytest.raises(BundleError, match="more than 1,000 bytes in all .set REPRO_DPADMM_BUNDLE_MAX_TOTAL_MB"):
        with opened(archive, Limits(total_bytes=1000)):
            pass
    monkeypatch.setenv("REPRO_DPADMM_BUNDLE_MAX_FILE_MB", "0.001")
    with pytest.raises(BundleError, match="more than 1,048 .set REPRO_DPADMM_BUNDLE_MAX_FILE_MB"):
        with opened(archive):
            pass
    monkeypatch.setenv("REPRO_DPADMM_BUNDLE_MAX_FILE_MB", "lots")
    with pytest.raises(BundleError, match="REPRO_DPADMM_BUNDLE_MAX_FILE_MB must be a positive number"):
        with opened(archive):
            pass
    monkeypatch.setenv("REPRO_DPADMM_BUNDLE_MAX_FILE_MB", "1e20")   # positive, but too large: said so
    with pytest.raises(BundleError, match="REPRO_DPADMM_BUNDLE_MAX_FILE_MB must be below 1e15, got '1e20'"):
        with opened(archive):
            pass


def test_cli_prints_the_error_without_a_traceback(project, base, tmp_path, monkeypatch, capsys):
    build = next(p[2] for p in PROBES if p[0] == "symlink chain (CVE-2025-4517 shape)")
    source = build(base, tmp_path)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    assert main(["report", "--results", str(source), "--out-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("repro-dpadmm: error: p.tar.gz: member") and "Traceback" not in err


_HOLD = """
import signal, sys, time
# the default Ctrl-C handler, whatever the shell that started the tests did (a job started in the background has
# SIGINT ignored, and a child inherits that)
signal.signal(signal.SIGINT, signal.default_int_handler)
from repro_dpadmm.bundle import opened
with opened(sys.argv[1]) as folder:
    print(folder.parent, flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_temporary_folder_goes_when_the_re_judge_is_stopped(project, tmp_path, sig):
    archive = make_bundle(tmp_path / "b.tar.gz", root=project)
    env = {**os.environ, "TMPDIR": str(tmp_path / "systmp")}
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(archive)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        tmp = Path(proc.stdout.readline().strip())
        assert tmp.name.startswith(UNPACK_PREFIX) and (tmp / "b" / "MANIFEST.sha256").is_file()
        proc.send_signal(sig)
        proc.wait(timeout=20)
    finally:
        proc.kill()
    assert not tmp.exists()


def test_a_folder_left_by_a_killed_re_judge_is_swept_once_its_process_is_gone(project, tmp_path):
    archive = make_bundle(tmp_path / "b.tar.gz", root=project)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    from repro_dpadmm.locks import HOST

    left = Path(tempfile.gettempdir()) / f"{UNPACK_PREFIX}{dead.stdout.strip()}@{HOST}.leftover"
    alive = Path(tempfile.gettempdir()) / f"{UNPACK_PREFIX}{os.getppid()}@{HOST}.inuse"
    left.mkdir()
    alive.mkdir()
    try:
        with opened(archive):
            pass
        assert not left.exists() and alive.exists()
    finally:
        for p in (left, alive):
            if p.exists():
                p.rmdir()


class _Touch:
    """A pickle whose loading creates a file: what a hostile part file would do."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return Path.touch, (Path(self.path),)


def test_a_part_file_from_elsewhere_is_recomputed_never_unpickled(tmp_path):
    """A bundle unpacked by hand into results/ (or any copy from another machine) brings unsigned part files: the
    item recomputes them and never loads them; a part file this project wrote is used."""
    import pickle

    from repro_dpadmm.experiments import parts

    params = {"graph": {"kind": "five_node"}, "iterations": 4, "repeats": 1, "alpha1": [3.0, 5.0], "theta": 0.5,
              "curves": {"blue": {"q1": 1.05, "q2": 1.04}}}
    keys = parts.part_keys("zhang2018_madmm", "fig2", params)
    marker = tmp_path / "unpickled"
    hostile = parts.part_path("zhang2018_madmm", "fig2", keys[0], tmp_path)
    hostile.parent.mkdir(parents=True)
    hostile.write_bytes(pickle.dumps({"format": 1, "value": _Touch(marker)}))
    forged = parts.part_path("zhang2018_madmm", "fig2", keys[1], tmp_path)
    forged.write_bytes(parts.SIGNED + bytes(32) + pickle.dumps(_Touch(marker)))   # a signature of another key
    said = []
    got = parts.gather("zhang2018_madmm", "fig2", params, lambda k: f"computed {k}", out_dir=tmp_path,
                       log=said.append)
    assert got == {k: f"computed {k}" for k in keys} and not marker.exists()
    assert all("was not written by this project" in s for s in said) and len(said) == 2
    parts.write_part(hostile, parts.record(keys[0], params, value="signed here"))
    parts.write_part(forged, parts.record(keys[1], params, value="signed here too"))
    assert parts.gather("zhang2018_madmm", "fig2", params, lambda k: pytest.fail("recomputed"), out_dir=tmp_path,
                        log=said.append) == {keys[0]: "signed here", keys[1]: "signed here too"}


# ----------------------------------------------------------------------------------------------- issue 50

def test_results_folder_names_never_become_page_names_or_links(project, base, tmp_path):
    from _hostile import page_names

    out = tmp_path / "rejudged"
    rejudge(page_names(base, tmp_path), out, root=project)
    index = (out / "index.html").read_text()
    assert "huang2019_dpadmm" in index and "<table" in index   # still the report's own index page
    for page in out.rglob("*"):
        assert "javascript:" not in page.name, page
        if page.is_file() and page.suffix == ".html":
            text = page.read_text()
            assert 'href="javascript:' not in text and "href='javascript:" not in text, page
            assert "javascript:alert" not in text, page
    assert not (out / "items" / "index").exists()


def test_a_bundled_page_is_never_a_file_that_can_be_opened_directly(project, base, tmp_path):
    from _hostile import REFRESH, refresh_in_html

    out = tmp_path / "rejudged"
    rejudge(refresh_in_html(base, tmp_path), out, root=project)
    for page in out.rglob("*.html"):
        assert REFRESH not in page.read_text(), f"{page} navigates away when opened"
    wrapper = (out / "items" / ITEM.removeprefix("results/") / "fig1.html").read_text()
    assert "<iframe sandbox srcdoc=" in wrapper and "&lt;meta http-equiv=&quot;refresh&quot;" in wrapper


def test_a_bundled_pages_links_out_are_inert_in_its_sandbox(project, base, tmp_path):
    """A click on a link in a sandboxed frame without flags still navigates the frame: every link but one within the
    page is kept as `data-href`, shown, not followed, however the attribute is separated from the one before it;
    an SVG animation that would set a link's address animates nothing."""
    from html import unescape

    from _hostile import link_in_html

    out = tmp_path / "rejudged"
    rejudge(link_in_html(base, tmp_path), out, root=project)
    framed = unescape((out / "items" / ITEM.removeprefix("results/") / "fig1.html").read_text())
    assert 'data-href="https://evil.example/x"' in framed and "data-HREF = '//evil.example/y'" in framed
    assert not re.search(r"""[\s/"']href\s*=\s*["']?(?:https?:)?//""", framed, re.I)
    assert '<a/data-href="https://evil.example/slash">' in framed and 'title="x"data-href=' in framed
    assert not re.search(r"""[\s/"']attributeName\s*=""", framed, re.I)
    assert '<a href="#own">' in framed   # a link within the page stays


def test_bundle_strings_are_printed_escaped(project, base, tmp_path, monkeypatch, capsys):
    from _hostile import UNSAFE_CHARS, terminal_strings, unlisted_terminal_name

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    assert main(["report", "--results", str(terminal_strings(base, tmp_path)),
                 "--out-dir", str(tmp_path / "o")]) == 0
    out = capsys.readouterr()
    printed = out.out + out.err
    assert not [c for c in UNSAFE_CHARS if c in printed], printed[-2000:]
    assert "\\x1b]0;owned\\x07" in printed and "\\u202e" in printed and "\\x9b" in printed
    # the bundle's text cannot start a line of its own that reads as ours
    assert sum(line.startswith("no verdict changed") for line in printed.splitlines()) <= 1
    assert main(["report", "--results", str(unlisted_terminal_name(base, tmp_path / "u")),
                 "--out-dir", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "not in MANIFEST.sha256: results/x\\x1b]0;owned" in err and not [c for c in UNSAFE_CHARS if c in err]


def test_a_report_never_writes_into_a_folder_it_did_not_create(project, base, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    claims = sorted(p.name for p in (project / "config" / "claims").iterdir())
    assert main(["report", "--out-dir", str(project / "config")]) == 2   # issue 50: it removed config/claims/
    assert "never writes into" in capsys.readouterr().err
    assert sorted(p.name for p in (project / "config" / "claims").iterdir()) == claims
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert main(["report", "--out-dir", str(mine)]) == 2 and (mine / "notes.txt").read_text() == "mine"
    (tmp_path / "afile").write_text("x")
    assert main(["report", "--out-dir", str(tmp_path / "afile")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err and (tmp_path / "afile").read_text() == "x"
    # a folder bundle is never written into, and a re-judge never replaces the project's own report
    folder = tmp_path / "folderbundle"
    import shutil

    shutil.copytree(base, folder)
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    for out in (folder / "results" / "report", folder / "out", project / "results" / "report"):
        assert main(["report", "--results", str(folder), "--out-dir", str(out)]) == 2, out
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before
    # a report's own folder is rewritten, a user's file beside it stays
    report = tmp_path / "report"
    assert main(["report", "--out-dir", str(report)]) == 0
    (report / "notes.txt").write_text("mine")
    assert main(["report", "--out-dir", str(report)]) == 0
    assert (report / "notes.txt").read_text() == "mine" and (report / "index.html").is_file()


def test_re_judge_folders_of_two_bundles_never_collide(project, base, tmp_path, monkeypatch):
    import shutil

    from repro_dpadmm.bundle import rejudge_folder

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    archive = make_bundle(tmp_path / "b.tar.gz", root=project)
    parent = project / "results" / "rejudged"
    made = []
    for name in ("run.v1.tar.gz", "run.v2.tar.gz", ".hidden.tar.gz", "x/run.v1.tar.gz"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(archive, tmp_path / name)
        assert main(["report", "--results", str(tmp_path / name)]) == 0
        made.append(rejudge_folder(tmp_path / name, parent))
    try:
        assert len(set(made)) == 4 and all((f / "index.html").is_file() for f in made), made
        assert made[0].name == "run.v1" and made[1].name == "run.v2" and made[2].name == "hidden"
        assert not (parent / "index.html").exists()
        again = rejudge_folder(tmp_path / "run.v1.tar.gz", parent)   # the same bundle again: its own folder
        assert again == made[0]
    finally:
        shutil.rmtree(parent)


def test_a_stopped_report_leaves_the_previous_one_complete(project, tmp_path, monkeypatch):
    import shutil

    out = tmp_path / "report"
    build_report(out, root=project)
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    copy, calls = shutil.copy2, []

    def stopped(*args, **kwargs):   # Ctrl-C while the second file is being copied
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return copy(*args, **kwargs)

    monkeypatch.setattr(shutil, "copy2", stopped)
    with pytest.raises(KeyboardInterrupt):
        build_report(out, root=project)
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")], "staging folder left"


def test_a_re_judge_stopped_right_after_its_swap_leaves_its_pages_with_their_rejudged_json(project, base, tmp_path,
                                                                                           monkeypatch):
    """rejudged.json was written after the new report was swapped in: SIGTERM between the two left the new pages,
    the earlier re-judge's rejudged.json gone and no new one. It is now part of what is swapped in."""
    import shutil

    import repro_dpadmm.staging as staging
    from _hostile import with_manifest

    out = tmp_path / "win"
    rejudge(base, out, root=project)   # a complete earlier re-judge, of the folder
    assert json.loads((out / "rejudged.json").read_text())["bundle"] == "b"
    folder = tmp_path / "other" / "b"
    shutil.copytree(base, folder)
    archive = with_manifest(folder, tmp_path / "other.tar.gz")
    swap = staging.swap_report

    def stopped_after(*args, **kwargs):   # SIGTERM just after the swap
        swap(*args, **kwargs)
        raise SystemExit(143)

    monkeypatch.setattr(staging, "swap_report", stopped_after)
    with pytest.raises(SystemExit):
        rejudge(archive, out, root=project)
    assert json.loads((out / "rejudged.json").read_text())["bundle"] == "other.tar.gz"
    assert "rejudged.json" in json.loads((out / ".repro-dpadmm-report.json").read_text())["entries"]


def test_a_bad_metrics_file_is_named_on_the_terminal_and_a_huge_finite_number_crashes_nothing(project, base, tmp_path,
                                                                                          capsys):
    from _hostile import METRICS_NAN, _metrics_probe

    rejudge(_metrics_probe(METRICS_NAN)(base, tmp_path / "nan"), tmp_path / "o1", root=project)
    assert "huang2019_dpadmm/fig1 shown as missing: unreadable metrics.json: results/huang2019_dpadmm/fig1/" \
        "metrics.json:1: wall_time_s: NaN" in capsys.readouterr().out
    huge = json.loads((base / ITEM / "metrics.json").read_text())
    huge = {k: (1.7e308 if isinstance(v, float) else v) for k, v in huge.items()}
    huge["wall_time_s"] = 1.7e308
    rejudge(_metrics_probe(json.dumps(huge))(base, tmp_path / "huge"), tmp_path / "o2", root=project)
    summary = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert summary["papers"]["huang2019_dpadmm"]["item_states"]["fig1"]["wall_time_s"] is None


def test_a_report_folder_written_before_markers_is_still_the_reports_own(project, tmp_path):
    """A report folder from before markers, as Snakemake leaves it before rerunning the report (its declared outputs
    index.html, claims.json, summary.json and items/ removed), is rebuilt; a folder of one's own web pages is not."""
    import shutil

    old = tmp_path / "results" / "report"      # where the project puts its report (only there is one recognised)
    build_report(old, root=project)
    (old / ".repro-dpadmm-report.json").unlink()
    for name in ("index.html", "claims.json", "summary.json"):
        (old / name).unlink()
    shutil.rmtree(old / "items")
    (old / "notes.txt").write_text("mine")
    build_report(old, root=project)
    assert (old / "index.html").is_file() and (old / "notes.txt").read_text() == "mine"
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("my site")
    (site / "about.html").write_text("me")
    with pytest.raises(ValueError, match="holds other files and no report"):
        build_report(site, root=project)
    assert sorted(p.name for p in site.iterdir()) == ["about.html", "index.html"]


def test_a_folder_bundle_counts_its_folders_against_the_member_cap(base, tmp_path):
    """A folder given as the bundle may not hold more entries than an archive may hold members: empty folders
    count too (a folder of 500,000 empty folders was walked, then looked at, for minutes)."""
    from _hostile import copy_base

    from repro_dpadmm.bundle import verify

    folder = copy_base(base, tmp_path)
    entries = sum(1 for _ in folder.rglob("*"))
    assert verify(folder, Limits(members=entries)) == []
    for i in range(5):
        (folder / "results" / "zzpaper" / f"i{i}").mkdir(parents=True)
    problems = verify(folder, Limits(members=entries + 5))
    assert problems == [f"more than {entries + 5:,} files and folders (set REPRO_DPADMM_BUNDLE_MAX_FILES to allow "
                        "more)"], problems


def test_sandbox_pages_are_capped_once_escaped_each_and_in_all(project, base, tmp_path, monkeypatch):
    """A page of quotes is six times larger once escaped into its frame's srcdoc: the pages of a re-judged bundle
    are capped after escaping, each and in all, and those beyond a cap are listed, not written (ten pages of 60 MiB
    of quotes made the re-judge write ~24 GiB)."""
    from html import escape

    from _hostile import copy_base, with_manifest

    import repro_dpadmm.report as report

    folder = copy_base(base, tmp_path)
    quotes = '"' * 1000
    (folder / ITEM / "fig1.html").write_text(quotes)
    assert report.escaped_size(quotes) == len(escape(quotes, quote=True)) == 6000
    assert report.escaped_size("&<>'é") == len(escape("&<>'é", quote=True).encode())
    source = with_manifest(folder, tmp_path / "p.tar.gz")
    monkeypatch.setattr(report, "SANDBOX_PAGE_MAX_BYTES", 5000)
    rejudge(source, tmp_path / "o1", root=project)
    page = (tmp_path / "o1" / "huang2019_dpadmm.html").read_text()
    assert "fig1.html: 0 MiB once escaped for its sandbox page, more than the 0 MiB" in page
    assert not (tmp_path / "o1/items/huang2019_dpadmm/fig1/fig1.html").exists()
    assert (tmp_path / "o1/items/huang2019_dpadmm/extra_item/extra_item.html").is_file()
    # in all: the pages that fit are embedded in report order, the rest listed
    monkeypatch.setattr(report, "SANDBOX_PAGE_MAX_BYTES", 10**6)
    monkeypatch.setattr(report, "SANDBOX_PAGES_MAX_BYTES", 2000)
    rejudge(source, tmp_path / "o2", root=project)
    written = sorted(p.name for p in (tmp_path / "o2/items").rglob("*.html"))
    page = (tmp_path / "o2" / "huang2019_dpadmm.html").read_text()
    assert "fig1.html" not in written and "the bundled notebook pages of this report may take 0 MiB in all" in page
    assert written == ["extra_item.html", "table1.html"], "the small pages still fit"


_SLOW_REPORT = """
import sys, time
from pathlib import Path
import repro_dpadmm.report.html as html
render = html.render_site
def slow(*a, **k):
    print("rendering", flush=True)
    time.sleep(60)
    return render(*a, **k)
html.render_site = slow
import repro_dpadmm.report as report
report.render_site = slow
from repro_dpadmm.cli import main
sys.exit(main(["report", "--out-dir", sys.argv[1]]))
"""


def test_a_report_stopped_by_sigterm_leaves_the_previous_report_and_no_staging_folder(project, tmp_path):
    out = tmp_path / "rep"
    build_report(out, root=project)
    before = sorted(p.name for p in out.iterdir())
    env = {**os.environ, "REPRO_DPADMM_ROOT": str(project)}
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_REPORT, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "rendering"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143 and "stopped (SIGTERM)" in err and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == before
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name]


@pytest.mark.parametrize("mode, kind", [("w:xz", "xz"), ("w:bz2", "bzip2")])
def test_an_archive_compressed_otherwise_than_gzip_is_named_so(base, tmp_path, mode, kind):
    import tarfile

    archive = tmp_path / f"b.tar.{kind}"
    with tarfile.open(archive, mode) as tar:
        tar.add(base, arcname="b")
    with pytest.raises(BundleError, match=f"is {kind}-compressed; a bundle is a .tar.gz .gzip. or a plain .tar"):
        with opened(archive):
            pass


def test_a_manifest_mismatch_lists_the_first_problems_and_counts_the_rest(base, tmp_path):
    import shutil

    folder = tmp_path / "many"
    shutil.copytree(base, folder)
    for i in range(500):
        (folder / "results" / f"extra{i:03d}.txt").write_text("x")
    with pytest.raises(BundleError) as exc:
        with opened(folder):
            pass
    lines = str(exc.value).splitlines()
    assert len(lines) == 1 + 20 + 1 and lines[-1] == "  ... and 480 more (not in MANIFEST.sha256: 480)"


def test_a_project_folder_given_as_the_bundle_is_refused_as_not_a_bundle(project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    assert main(["report", "--results", str(project)]) == 2
    err = capsys.readouterr().err
    assert "is not a results bundle: it has no MANIFEST.sha256 at its top" in err and "--out-dir" not in err


# ------------------------------------------------------------------------------------ values of the wrong shape

def test_an_inconclusive_check_with_a_huge_or_infinite_se_has_no_repeats_count():
    """The repeats that would decide a difference are not computable when the SE overflows: None, never a crash."""
    from repro_dpadmm.claims.judge import evaluate_check

    check = {"kind": "less", "left": "a", "right": "b"}
    for reps in ([1e155, -1e155], [1e308, -1e308, 1e308]):
        r = evaluate_check(check, {"a": 0.2, "b": 0.21, "repeats": {"a": reps}})
        assert r.outcome == "inconclusive" and r.repeats_needed is None, r
    r = evaluate_check(check, {"a": 0.2, "b": 0.21, "a.se": float("inf")})
    assert r.repeats_needed is None
    r = evaluate_check(check, {"a": 0.2, "b": 0.21, "repeats": {"a": [0.1, 0.3]}})
    assert r.outcome == "inconclusive" and r.repeats_needed > 2     # a computable count stays


@pytest.mark.parametrize("repeats", [[1, 2], 5, "ab", None, {"x.err": "ab"}])
def test_repeats_not_a_mapping_of_lists_count_as_no_per_repeat_values(repeats):
    from repro_dpadmm.claims import evaluate_claim, parse_claims, with_cited

    cf = parse_claims({"metrics": {"fig1": {"err.a": "a"}},
                       "evidence": {"fig1": [{"keys": "*", "kind": "measured"}]},
                       "claims": [{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                                   "checks": [{"kind": "less", "left": "err.a",
                                               "right": "huang2019_dpadmm/fig2:x.err"}]}]}, "huang2019_dpadmm.yaml")
    assert not cf.problems, cf.problems
    claim = cf.claims[0]
    produced = {("huang2019_dpadmm", "fig2"): {"x.err": 0.3, "repeats": repeats}}
    metrics = with_cited({"err.a": 0.1, "repeats": repeats}, claim, produced)
    assert metrics["huang2019_dpadmm/fig2:x.err"] == 0.3
    assert evaluate_claim(claim, metrics).verdict == "reproduced"


@pytest.mark.parametrize("probe, shown", [
    ("sidecar options a list", "unreadable (options is a list, not a mapping)"),
    ("sidecar sources a list", "unreadable (sources is a list, not a mapping)"),
    ("sidecar sources of strings", "x <span class='mono' title='unreadable'>unreadable</span>"),
])
def test_a_sidecar_field_of_the_wrong_type_is_shown_unreadable(project, base, tmp_path, probe, shown):
    out, _ = _rejudge(project, base, tmp_path, probe)
    page = (out / "provenance.html").read_text()
    row = page[page.index("adult_huang2019</td>"):]
    assert shown in row[:row.index("</tr>")], row[:2000]


@pytest.mark.parametrize("probe, fragment", [
    ("notebook of 8 MiB of empty lists", "huang2019_dpadmm/fig1/fig1.ipynb: holds 2,796,211 lists and objects, "
                                         "more than the 100,000"),
    ("notebook datasets a list of lists", "huang2019_dpadmm/fig1/fig1.ipynb: parameter datasets must be a list of "
                                          'dataset names, got [["adult_huang2019"]]'),
    ("notebook datasets a string", 'parameter datasets must be a list of dataset names, got "adult_huang2019"'),
    ("notebook parameters of 20,001 keys", "huang2019_dpadmm/fig1/fig1.ipynb: holds more than the 10,000 values"),
    # a record of the wrong shape was passed over without a word
    ("notebook parameters a list", "fig1.ipynb: the recorded parameters must be a mapping, got a list"),
])
def test_a_notebook_whose_parameters_cannot_be_read_leaves_them_unknown_naming_it(project, base, tmp_path, probe,
                                                                                   fragment, capsys):
    t0 = time.perf_counter()
    out, state = _rejudge(project, base, tmp_path, probe)
    assert time.perf_counter() - t0 < 10
    assert state["state"] == "produced" and state["params_from"] != "run"
    assert fragment in state["params_problem"], state["params_problem"]
    assert "The run's own record of its parameters is not read: " in (out / "huang2019_dpadmm.html").read_text()
    assert "huang2019_dpadmm/fig1: the run's parameters are unknown: huang2019_dpadmm/fig1/fig1.ipynb" \
        in capsys.readouterr().out


def test_parameters_read_from_settings_json_are_not_called_unknown(project, base, tmp_path, capsys):
    """The notebook's record unreadable, the run's settings.json gives the parameters: the terminal said they were
    unknown while the page showed them."""
    _, state = _rejudge(project, base, tmp_path, "notebook parameters a list, settings.json readable")
    assert state["params_from"] == "run" and "got a list" in state["params_problem"]
    said = capsys.readouterr().out
    assert "huang2019_dpadmm/fig1: the run's parameters are taken from its settings.json, as " \
           "huang2019_dpadmm/fig1/fig1.ipynb: the recorded parameters must be a mapping, got a list" in said, said
    assert "parameters are unknown" not in said


def test_a_notebook_over_its_cap_is_not_read_and_each_notebook_is_read_once(project, base, tmp_path, monkeypatch):
    """A notebook is read for its metadata only, under a cap of its own, once per re-judge (the report and the
    bundle's parameter check share the read)."""
    from _hostile import copy_base, with_manifest

    import repro_dpadmm.provenance as provenance
    from repro_dpadmm import safeload

    reads, read_text = [], safeload.read_text

    def counted(path, *args, **kwargs):
        reads.append(Path(path).name)
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(safeload, "read_text", counted)
    folder = copy_base(base, tmp_path)
    rejudge(with_manifest(folder, tmp_path / "p.tar.gz"), tmp_path / "o1", root=project)
    assert reads.count("fig1.ipynb") == 1 and reads.count("table1.ipynb") == 1, reads
    monkeypatch.setattr(provenance, "NOTEBOOK_MAX_BYTES", 100)
    rejudge(with_manifest(folder, tmp_path / "p2.tar.gz"), tmp_path / "o2", root=project)
    state = json.loads((tmp_path / "o2/summary.json").read_text())["papers"]["huang2019_dpadmm"]["item_states"]
    assert state["fig1"]["params_problem"].startswith("huang2019_dpadmm/fig1/fig1.ipynb: "), state["fig1"]
    assert "more than the 100 allowed" in state["fig1"]["params_problem"] and state["fig1"]["params_from"] != "run"


def test_a_bundles_pdf_and_csv_figure_files_are_named_never_served(project, base, tmp_path):
    """Of a bundle's figures only checked PNGs are copied and linked: a PDF may run a script in its viewer and a CSV
    formulas in a spreadsheet, so they are listed by name; the project's own report still links them."""
    out, _ = _rejudge(project, base, tmp_path, "PDF with a script and CSV with formulas")
    item = out / "items" / ITEM.removeprefix("results/")
    assert (item / "fig1.png").is_file() and not (item / "fig1.pdf").exists() and not (item / "fig1.csv").exists()
    page = (out / "huang2019_dpadmm.html").read_text()
    assert 'fig1.pdf"' not in page and 'fig1.csv"' not in page
    assert "not linked (a re-judge serves a bundle's PNG figures only): <span class=\"mono\">fig1.pdf, fig1.csv" \
        in page
    for path in (project / ITEM / "fig1.pdf", project / ITEM / "fig1.csv"):
        path.write_text("x")
    try:
        build_report(tmp_path / "own", root=project)
        own = (tmp_path / "own" / "huang2019_dpadmm.html").read_text()
        assert 'href="items/huang2019_dpadmm/fig1/fig1.pdf">PDF</a>' in own
        assert (tmp_path / "own/items/huang2019_dpadmm/fig1/fig1.csv").is_file()
    finally:
        for path in (project / ITEM / "fig1.pdf", project / ITEM / "fig1.csv"):
            path.unlink()


def test_folders_nested_deeper_than_the_cap_are_refused_not_a_recursion_error(project, base, tmp_path, monkeypatch,
                                                                              capsys):
    """A folder bundle (and a project's results/) 1,500 folders deep: os.walk and glob('**') recursed once per level
    and ended in RecursionError; the walk is iterative and the depth capped, named in the error (200 levels here:
    pytest's own cleanup, shutil.rmtree, recurses too)."""
    import shutil

    from _hostile import copy_base

    from repro_dpadmm.bundle import MAX_DEPTH, verify

    def nest(top: Path, depth: int) -> None:
        os.makedirs(top, exist_ok=True)
        here = os.open(top, os.O_RDONLY)
        try:
            for _ in range(depth):   # relative steps: the whole path would pass the system's length limit
                os.mkdir("a", dir_fd=here)
                nxt = os.open("a", os.O_RDONLY, dir_fd=here)
                os.close(here)
                here = nxt
        finally:
            os.close(here)

    folder = copy_base(base, tmp_path)
    nest(folder / "results" / "deep", 200)
    (problem,) = verify(folder)
    assert problem.startswith(f"folders nested deeper than {MAX_DEPTH} levels: results/deep/a/a/"), problem
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    assert main(["report", "--results", str(folder), "--out-dir", str(tmp_path / "rj")]) == 2
    assert "nested deeper than" in capsys.readouterr().err
    nest(project / "results" / "deep", MAX_DEPTH + 2)
    try:
        with pytest.raises(BundleError, match=f"nested deeper than {MAX_DEPTH} levels under results/"):
            make_bundle(tmp_path / "deep.tar.gz", root=project)
        assert not (tmp_path / "deep.tar.gz").exists() and not list(tmp_path.glob(".bundle-*"))
    finally:
        shutil.rmtree(project / "results" / "deep")


def test_links_under_results_are_left_out_of_a_bundle_and_said(project, tmp_path, capsys):
    link = project / ITEM / "notes.txt"
    link.symlink_to("/etc/passwd")
    try:
        archive = make_bundle(tmp_path / "l.tar.gz", root=project)
    finally:
        link.unlink()
    assert f"1 link left out (a bundle never follows a link): {ITEM}/notes.txt" in capsys.readouterr().err
    import tarfile

    with tarfile.open(archive) as tar:
        assert not [n for n in tar.getnames() if n.endswith("notes.txt")]


@pytest.mark.parametrize("name, text", [
    ("smoke.yaml", '__use_yte__: true\nx: ?__import__("os").getpid()\n'),
    ("smoke.yaml", '"\\x5f_use_yte__": true\nx: ?__import__("os").getpid()\n'),     # YAML's escape of "_"
    ("x/evil.YAML", '{"\\u005f\\u005fuse_yte__": true}\n'),                           # JSON's, any name
    ("smoke.yaml", '%YAML 1.3\n---\n"\\x5f_use_yte__": true\nx: ?__import__("os").getpid()\n'),  # libyaml refuses
    ("big.txt", "# " + "x" * (2 * 2**20) + "\n"),                                      # too large to be read
    ("u16.yaml", "\ufeff__use_yte__: true\n".encode("utf-16-le").decode("latin-1")),  # UTF-16: no ASCII bytes of it
])
def test_a_bundle_whose_config_holds_a_template_marker_is_refused(project, base, tmp_path, monkeypatch, name, text):
    """Snakemake runs the expressions of a --configfile holding `__use_yte__` as Python: a bundle's config files are
    the ones a user would give it to repeat the run, so a bundle that holds one is refused, the key found as a YAML or
    JSON parser reads it (escapes decoded), in a file of any name under config/."""
    from _hostile import copy_base, with_manifest

    folder = copy_base(base, tmp_path)
    (folder / "config" / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / "config" / name).write_bytes(text.encode("latin-1" if name == "u16.yaml" else "utf-8"))
    archive = with_manifest(folder, tmp_path / "p.tar.gz")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    with pytest.raises(BundleError, match=rf"template code: config/{re.escape(name)} (holds __use_yte__|has [\d,]+ bytes)"):
        rejudge(archive, tmp_path / "rj")
    assert not (tmp_path / "rj").exists()


def test_judged_verdicts_of_any_length_are_clipped_and_their_list_capped(project, base, tmp_path, capsys):
    """350 judged verdicts of 1,500 characters printed 554 KB on the terminal: a verdict is shown to 60 characters,
    and the changed ones to the first 20."""
    from _hostile import copy_base, with_manifest

    from repro_dpadmm.bundle import SHOWN_ITEMS, VERDICT_MAX

    folder = copy_base(base, tmp_path)
    claims = json.loads((folder / "results/report/claims.json").read_text())
    for c in claims:
        c["verdict"] = "x" * 1500
    judged = len(claims)
    claims += [{"id": f"gone{k}" + "y" * 1500, "verdict": "reproduced"} for k in range(3)]   # ids of removed claims
    (folder / "results/report/claims.json").write_text(json.dumps(claims))
    rj = rejudge(with_manifest(folder, tmp_path / "p.tar.gz"), tmp_path / "rj", root=project)
    said = rj.summary()
    assert judged > SHOWN_ITEMS and f"... and {judged - SHOWN_ITEMS:,} more" in said and "3 claims of the" in said
    assert "x" * (VERDICT_MAX + 1) not in said and "y" * 100 not in said and len(said) < 20_000, len(said)


@pytest.mark.parametrize("form", ["binary", "upper"])
def test_a_manifest_as_sha256sum_writes_it_in_binary_mode_or_upper_case_is_read(base, tmp_path, form):
    """`sha256sum -c` takes `<hash> *<path>` and upper-case hex: the re-judge called such lines malformed and every
    file unlisted."""
    from _hostile import copy_base

    folder = copy_base(base, tmp_path)
    manifest = folder / "MANIFEST.sha256"
    lines = manifest.read_text().splitlines()
    manifest.write_text("\n".join(h.upper() + "  " + r if form == "upper" else h + " *" + r
                                   for h, r in (ln.split("  ", 1) for ln in lines)) + "\n")
    assert verify(folder) == []
    manifest.write_text("nohash  x\n")
    assert "(a line is `<64 hex digits>  <path>`, as sha256sum writes it)" in verify(folder)[0]


def test_a_manifest_line_that_names_a_folder_says_so(base, tmp_path):
    """A line naming a folder of the bundle was reported as a missing file."""
    from _hostile import copy_base

    folder = copy_base(base, tmp_path)
    with open(folder / "MANIFEST.sha256", "a") as fh:
        fh.write("0" * 64 + "  results/huang2019_dpadmm\n")
    assert "MANIFEST.sha256 lists results/huang2019_dpadmm, a folder, not a file" in verify(folder)


def test_a_manifest_that_is_a_link_is_named_so(base, tmp_path):
    """An unpacked bundle whose MANIFEST.sha256 is a link was said to have none."""
    from _hostile import copy_base

    folder = copy_base(base, tmp_path)
    (folder / "MANIFEST.sha256").rename(tmp_path / "M")
    (folder / "MANIFEST.sha256").symlink_to(tmp_path / "M")
    assert verify(folder) == ["MANIFEST.sha256 is a link (a bundle holds only files and folders): not a results bundle"]


def test_config_files_are_parsed_only_with_escapes_and_within_a_budget(project, base, tmp_path, monkeypatch):
    """Each config file with a backslash was parsed twice by PyYAML's pure-Python parser (about 8 s a MiB): 30 files
    just under the 2 MiB cap held a re-judge for minutes. A file without an escape (in UTF-8) is not parsed: the key
    could only be there as written; those with one are parsed up to a budget in all, and one beyond it is refused."""
    import yaml

    import repro_dpadmm.bundle as bundle_mod
    from _hostile import copy_base, with_manifest

    parsed, parse = [], yaml.parse
    monkeypatch.setattr(yaml, "parse", lambda data, Loader: parsed.append(len(data)) or parse(data, Loader=Loader))
    folder = copy_base(base, tmp_path)
    (folder / "config" / "plain.yaml").write_text("a: [" + ", ".join(["[[1]]"] * 2000) + "]\n")
    for k in range(3):
        (folder / "config" / f"esc{k}.yaml").write_text('a: "\\t"\nb: [' + ", ".join(["[[1]]"] * 200) + "]\n")
    monkeypatch.setattr(bundle_mod, "CONFIG_PARSE_BUDGET", 2 * (folder / "config" / "esc0.yaml").stat().st_size + 1)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    with pytest.raises(BundleError, match=r"template code: config/esc2\.yaml is beyond the 0 MiB of config files with "
                                          r"escapes \(or not in UTF-8\) that are read to look for __use_yte__"):
        rejudge(with_manifest(folder, tmp_path / "p.tar.gz"), tmp_path / "rj")
    size = (folder / "config" / "esc0.yaml").stat().st_size
    assert all(n <= size for n in parsed) and (folder / "config" / "plain.yaml").stat().st_size > size, parsed


def test_no_report_is_written_into_an_unpacked_bundle_or_the_checkouts_folders(project, base, tmp_path, monkeypatch,
                                                                               capsys):
    """The project's own report into an unpacked bundle's results/report replaced the bundle's judged report (which
    then failed its manifest); a report into .git/ or resources/ of the checkout was written."""
    import shutil

    folder = tmp_path / "unpacked"
    shutil.copytree(base, folder)
    before = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    for out in (folder / "results" / "report", folder / "results" / "new", folder):
        assert main(["report", "--out-dir", str(out)]) == 2, out
        assert "lies in the results bundle" in capsys.readouterr().err or out == folder
    assert {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    archive = make_bundle(tmp_path / "o.tar.gz", root=project)
    for rel in (".git/rj", "resources/newrj", "logs/rj"):
        assert main(["report", "--out-dir", str(project / rel)]) == 2, rel
        assert "never writes into" in capsys.readouterr().err and not (project / rel).exists()
        assert main(["report", "--results", str(archive), "--out-dir", str(project / rel)]) == 2, rel
        assert not (project / rel).exists()


def test_a_bundle_named_only_by_its_suffix_is_re_judged_into_a_plain_folder(tmp_path):
    from repro_dpadmm.bundle import rejudge_folder

    for name in (".tar.gz", ".tgz", ".tar"):
        assert rejudge_folder(tmp_path / name, tmp_path / "rejudged") == tmp_path / "rejudged" / "bundle", name


def _gzip_member(data: bytes, *, flag: int = 0, field: bytes = b"") -> bytes:
    """One gzip member of `data`, its header carrying `field` (NUL-terminated) as FNAME (flag 8) or FCOMMENT (16)."""
    import struct
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return (b"\x1f\x8b\x08" + bytes([flag]) + b"\x00" * 4 + b"\x00\x03" + (field + b"\x00" if flag else b"") +
            c.compress(data) + c.flush() + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))


@pytest.mark.parametrize("flag, where", [(16, "first"), (8, "first"), (16, "second")])
def test_a_gzip_header_field_over_64_kib_is_refused_naming_the_bundle(project, base, tmp_path, flag, where):
    """Python's gzip reads a header's file name and comment one byte per call: a 2 GB comment kept a re-judge busy
    for minutes. A field of a few bytes (as `gzip` writes) is read as ever."""
    import tarfile

    plain = tmp_path / "b.tar"
    with tarfile.open(plain, "w") as tar:
        tar.add(base, arcname="b")
    data = plain.read_bytes()
    long = b"A" * (200 * 1024)
    half = len(data) // 2
    if where == "first":
        packed = _gzip_member(data, flag=flag, field=long)
    else:   # a later member of the same stream
        packed = _gzip_member(data[:half], flag=8, field=b"b.tar") + _gzip_member(data[half:], flag=flag, field=long)
    (tmp_path / "long.tar.gz").write_bytes(packed)
    with pytest.raises(BundleError, match=r"long\.tar\.gz: a gzip header field \(file name or comment\)"):
        rejudge(tmp_path / "long.tar.gz", tmp_path / "rj", root=project)
    assert not (tmp_path / "rj").exists()
    (tmp_path / "short.tar.gz").write_bytes(_gzip_member(data[:half], flag=16, field=b"C" * 1000) +
                                            _gzip_member(data[half:], flag=8, field=b"b.tar"))
    with opened(tmp_path / "short.tar.gz") as folder:
        assert (folder / "MANIFEST.sha256").is_file()


def test_a_report_never_replaces_a_report_of_another_kind(project, tmp_path, monkeypatch, capsys):
    """`report --out-dir results/whatif/<name>/report` replaced the what-if run's report (its diff against the paper
    run included) with the project's: only a re-judge was refused a folder of another kind."""
    from repro_dpadmm.staging import REPORT_MARK, OutDirError, check_report_folder

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    out = tmp_path / "whatif-report"
    build_report(out, root=project, quiet=True)
    mark = json.loads((out / REPORT_MARK).read_text())
    (out / REPORT_MARK).write_text(json.dumps({**mark, "kind": "whatif"}))   # as a what-if run writes it
    (out / "index.html").write_text("the what-if report")
    assert main(["report", "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds a what-if run's report, and this is a project report" in err, err
    assert (out / "index.html").read_text() == "the what-if report"
    (out / REPORT_MARK).write_text(json.dumps(mark))
    with pytest.raises(OutDirError, match="holds a project report, and this is a what-if run's report"):
        check_report_folder(out, kind="whatif")
    check_report_folder(out, kind="report")   # the same kind is rewritten as ever


def test_a_re_judge_inside_results_goes_only_under_results_rejudged(project, base, tmp_path, monkeypatch, capsys):
    """A re-judge into results/<name>/ was accepted, and the next `bundle` packed the stranger's report into ours."""
    import tarfile

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    for rel in ("results/stranger", "results/huang2019_dpadmm/stranger", "results/whatif/x/report"):
        assert main(["report", "--results", str(base), "--out-dir", str(project / rel)]) == 2, rel
        err = capsys.readouterr().err
        assert "lies in the project's results/" in err and "goes under results/rejudged/" in err, err
        assert not (project / rel).exists()
    assert main(["report", "--results", str(base), "--out-dir", str(project / "results" / "rejudged" / "mine")]) == 0
    capsys.readouterr()
    with tarfile.open(make_bundle(tmp_path / "mine.tar.gz", root=project)) as tar:
        assert not [n for n in tar.getnames() if "stranger" in n or "rejudged" in n]


def test_a_temporary_folder_inside_the_out_dir_is_refused_naming_tmpdir(project, base, tmp_path, monkeypatch,
                                                                        capsys):
    """TMPDIR set to the re-judge's --out-dir: the unpack folder made the out-dir non-empty, and the re-judge then
    said it "holds other files and no report"."""
    archive = make_bundle(tmp_path / "b.tar.gz", root=project)
    out = tmp_path / "out"
    for tmp in (out, out / "sub"):
        tmp.mkdir(parents=True, exist_ok=True)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        assert main(["report", "--results", str(archive), "--out-dir", str(out)]) == 2
        err = capsys.readouterr().err
        assert "(TMPDIR) lies in --out-dir" in err and "holds other files" not in err, err
        assert not [p for p in out.rglob("*") if p.name.startswith(UNPACK_PREFIX)], "unpacked into the out-dir"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "systmp"))
    (out / "sub").rmdir()
    assert main(["report", "--results", str(archive), "--out-dir", str(out)]) == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_metrics_file_that_is_a_fifo_is_said_to_be_no_regular_file(tmp_path):
    """A FIFO at results/<paper>/<item>/metrics.json was shown as "no .../metrics.json"; it is never opened."""
    root = make_project(tmp_path / "project")
    metrics = root / ITEM / "metrics.json"
    metrics.unlink()
    os.mkfifo(metrics)
    build_report(tmp_path / "out", root=root, quiet=True)   # opening the FIFO would block here
    state = json.loads((tmp_path / "out" / "summary.json").read_text())["papers"]["huang2019_dpadmm"]["item_states"]
    assert state["fig1"]["state"] == "missing"
    assert state["fig1"]["reason"].startswith(f"{ITEM}/metrics.json is not a regular file"), state["fig1"]


def _long_strings(value, text: str):
    """`value` with every string in it replaced by `text`."""
    if isinstance(value, dict):
        return {k: _long_strings(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_long_strings(v, text) for v in value]
    return text if isinstance(value, str) else value


def _longest_run(folder: Path, char: bytes) -> tuple[int, int]:
    """(the longest run of `char` in any file under `folder`, the files' total size)."""
    import re

    longest = total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            total += len(data)
            longest = max([longest, *(len(m) for m in re.findall(re.escape(char) + b"{100,}", data))])
    return longest, total


def test_bundle_free_text_is_clipped_wherever_the_report_takes_it(project, base, tmp_path):
    """A sidecar reason of 60 MB (copied into every dataset claim's verdict, then onto every page and into
    claims.json) or an item reason of 15 MB made a re-judge run out of memory: every string the report takes from a
    bundle is clipped to 2,000 characters, so the report's size is bounded whatever the strings' length."""
    import shutil

    from _hostile import with_manifest

    sizes = {}
    for n in (30_000, 300_000):
        folder = tmp_path / f"b{n}" / "b"
        shutil.copytree(base, folder)
        text = "Q" * n
        for side in (folder / "resources" / "processed").glob("*.json"):
            data = json.loads(side.read_text())
            side.write_text(json.dumps({**_long_strings(data, text), "available": False, "reason": text + "\nmore"}))
        for path in (folder / "results").glob("*/*/*.json"):
            if path.parent.name != "report" and path.name in ("metrics.json", "settings.json"):
                data = _long_strings(json.loads(path.read_text()), text)
                if path.name == "metrics.json":
                    data.update({"status": "not run", "reason": text, "note": text})
                path.write_text(json.dumps(data))
        prov = json.loads((folder / "provenance.json").read_text())
        prov["datasets"] = _long_strings(prov.get("datasets") or {"x": {"reason": ""}}, text)
        (folder / "provenance.json").write_text(json.dumps(prov))
        judged = json.loads((folder / "results" / "report" / "claims.json").read_text())
        (folder / "results" / "report" / "claims.json").write_text(json.dumps([{**r, "verdict": text}
                                                                               for r in judged]))
        out = tmp_path / f"rj{n}"
        rejudge(with_manifest(folder, tmp_path / f"b{n}.tar.gz"), out, root=project)
        longest, sizes[n] = _longest_run(out, b"Q")
        assert longest == 2000, (n, longest)
        assert f" ({n + 5:,} characters)" in (out / "claims.json").read_text()     # a sidecar's reason
        assert f" ({n:,} characters)" in (out / "huang2019_dpadmm.html").read_text()        # an item's reason
    assert sizes[300_000] < sizes[30_000] + 10_000, sizes   # the size no longer grows with the strings
    # the project's own report: the same cap
    root = make_project(tmp_path / "own")
    for side in (root / "resources" / "processed").glob("*.json"):
        side.write_text(json.dumps({**json.loads(side.read_text()), "available": False, "reason": "R" * 100_000}))
    build_report(tmp_path / "own-report", root=root, quiet=True)
    assert _longest_run(tmp_path / "own-report", b"R")[0] == 2000


def test_a_folder_bundle_is_read_from_a_private_copy_never_through_a_link(base, tmp_path):
    """A folder bundle was verified in place and then read: a file swapped for a link in between pulled a file from
    outside the bundle into the report. The re-judge reads a private copy, made without following links."""
    from _hostile import copy_base

    from repro_dpadmm.bundle import _snapshot, opened

    folder = copy_base(base, tmp_path)
    with opened(folder) as seen:
        assert seen.resolve() != folder.resolve() and not seen.resolve().is_relative_to(folder.resolve())
        assert (seen / ITEM / "metrics.json").read_bytes() == (folder / ITEM / "metrics.json").read_bytes()
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    (folder / ITEM / "metrics.json").unlink()
    (folder / ITEM / "metrics.json").symlink_to(secret)   # as if swapped after the check
    with pytest.raises(BundleError, match="metrics.json is no longer a regular file"):
        _snapshot(folder, tmp_path / "copy")


def test_paper_and_item_folders_differing_only_in_case_get_no_page(project, base, tmp_path, monkeypatch):
    """On a file system that ignores case, `Huang2019_DPADMM.html` would overwrite `huang2019_dpadmm.html`."""
    from _hostile import copy_base, with_manifest

    folder = copy_base(base, tmp_path)
    for rel in ("results/Huang2019_DPADMM/fig1", "results/huang2019_dpadmm/FIG1"):
        (folder / rel).mkdir(parents=True)
        (folder / rel / "metrics.json").write_text('{"status": "ok"}')
    archive = with_manifest(folder, tmp_path / "p.tar.gz")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    result = rejudge(archive, tmp_path / "rj")
    pages = {p.name for p in (tmp_path / "rj").iterdir()}
    assert "Huang2019_DPADMM.html" not in pages and "huang2019_dpadmm.html" in pages
    assert not (tmp_path / "rj" / "items" / "huang2019_dpadmm" / "FIG1").exists()
    assert result is not None


def test_a_temporary_folder_inside_results_is_refused(project, base, tmp_path, monkeypatch):
    """A re-judge killed while TMPDIR lay in results/ left the stranger's unpacked bundle where `bundle` packs."""
    import tempfile

    from repro_dpadmm.staging import OutDirError

    inside = project / "results" / "huang2019_dpadmm"
    monkeypatch.setattr(tempfile, "tempdir", str(inside))
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(project))
    with pytest.raises(OutDirError, match=r"\(TMPDIR\) lies in the project's results/"):
        rejudge(base, tmp_path / "rj")
    assert not list(inside.glob("repro-dpadmm-bundle-*"))


def test_a_manifest_listing_a_file_twice_and_a_bundle_made_inside_a_bundle_are_refused(project, base, tmp_path):
    import shutil

    from _hostile import copy_base

    from repro_dpadmm.bundle import MANIFEST, verify

    folder = copy_base(base, tmp_path)
    first = (folder / MANIFEST).read_text().splitlines()[0]
    with open(folder / MANIFEST, "a") as fh:
        fh.write(first + "\n")
    assert any("a second time" in p for p in verify(folder))
    inside = tmp_path / "unpacked"
    shutil.copytree(base, inside)
    with pytest.raises(BundleError, match="lies in the results bundle"):
        make_bundle(inside / "results" / "x.tar.gz", root=project)


@pytest.mark.parametrize("names, said", [
    (("b/results/x.txt", "b/results"), "member 'b/results' is a file, but the earlier member 'b/results/x.txt' lies "
                                       "under it"),
    (("b/results/deep/x.txt", "b/results"), "member 'b/results' is a file, but the earlier member "
                                            "'b/results/deep/x.txt' lies under it"),
    (("b/results", "b/results/x.txt"), "member 'b/results/x.txt' lies under 'b/results', which is a file"),
])
def test_a_file_member_where_other_members_lie_is_named_in_either_order(tmp_path, names, said):
    """A regular file at a path that other members lie under: refused naming both members, whichever comes first
    (not the system's bare 'File exists')."""
    import io
    import tarfile

    archive = tmp_path / "filefirst.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    (tmp_path / "out").mkdir()
    with pytest.raises(BundleError) as exc:
        unpack(archive, tmp_path / "out")
    assert str(exc.value) == f"filefirst.tar.gz: {said}"


def test_a_results_folder_name_that_is_not_shown_is_said_why():
    """A name over the 64-character cap was called 'not a plain name (letters, digits, ...)', which it is: the cap
    is named, as are the other reasons."""
    from repro_dpadmm.report import _named

    ignored = []
    names = ["a" * 250, "a" * 64, "b c", "Index", "Fig1", "x" * 70 + "!"]
    assert _named(names, "item of p", ignored, taken=["fig1"]) == ["a" * 64]
    said = {line.split("'")[1][:8]: line for line in ignored}
    assert said["a" * 8] == (f"item of p '{'a' * 120}': longer than 64 characters (it has 250), the longest name a "
                             "page may have, so it is not shown")
    assert "not a plain name (letters, digits, '_', '-', starting with a letter or digit; at most 64 characters)" \
        in said["b c"] and "at most 64 characters" in said["x" * 8]
    assert "one of the report's own page names" in said["Index"]
    assert "the same as a name shown already, but for letter case" in said["Fig1"]


def test_ignored_results_folders_are_named_on_the_terminal_at_most_twenty(project, tmp_path, capsys):
    """3,000 folders of names a report does not show printed 3,000 lines: the first 20, then how many more."""
    import shutil

    results = tmp_path / "results"
    shutil.copytree(project / "results", results)
    for k in range(60):
        (results / f"huang2019_dpadmm/x.{k:02d}").mkdir()
        (results / f"huang2019_dpadmm/x.{k:02d}/metrics.json").write_text('{"status": "ok"}')
    capsys.readouterr()
    build_report(tmp_path / "out", root=project, results=results)
    lines = [line for line in capsys.readouterr().out.splitlines() if "results folder" in line]
    assert len(lines) == 21 and "'x.19'" in lines[19], lines
    assert lines[-1] == "report: results folders ignored: ... and 40 more"
