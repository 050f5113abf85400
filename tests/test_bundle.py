"""Results bundles: pack a finished run, verify its manifest, re-judge it with the current claims files."""

from __future__ import annotations

import json
import re
import tarfile
import time
import zlib
from pathlib import Path

import pytest
import yaml
from _report_synth import make_project

from repro_dpadmm.bundle import MANIFEST, BundleError, make_bundle, opened, rejudge, verify
from repro_dpadmm.cli import main
from repro_dpadmm.report import build_report


@pytest.fixture()
def run(tmp_path):
    """A synthetic finished run: items' outputs, dataset sidecars and the report built from them."""
    root = make_project(tmp_path / "project")
    (root / "resources/processed/a9a.npz").write_bytes(b"not really arrays")
    (root / "logs/benchmarks/huang2019_dpadmm").mkdir(parents=True)
    (root / "logs/benchmarks/huang2019_dpadmm/fig1.tsv").write_text("s\th:m:s\tmax_rss\n12.5\t0:00:12\t210.3\n")
    build_report("results/report", root=root)
    return root


def unpack(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    (top,) = dest.iterdir()
    return top


def test_bundle_holds_the_run_and_a_manifest_of_every_file(run, tmp_path):
    archive = make_bundle(tmp_path / "b.tar.gz", root=run)
    folder = unpack(archive, tmp_path / "x")
    assert folder.name == "b" and verify(folder) == []
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    for rel in ("results/huang2019_dpadmm/fig1/metrics.json", "results/huang2019_dpadmm/fig1/fig1.ipynb",
                "results/huang2019_dpadmm/fig1/fig1.png", "results/huang2019_dpadmm/fig1/fig1.html",
                "results/report/index.html", "results/report/claims.json", "results/report/summary.json",
                "resources/processed/adult_huang2019.json", "logs/benchmarks/huang2019_dpadmm/fig1.tsv",
                "config/config.yaml", "config/claims/huang2019_dpadmm.yaml", "provenance.json", MANIFEST):
        assert rel in files, rel
    assert not [f for f in files if f.startswith("results/report/items/") or f.endswith(".npz")]
    listed = {line.split("  ", 1)[1] for line in (folder / MANIFEST).read_text().splitlines()}
    assert listed == files - {MANIFEST}
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["packages"]["numpy"] and prov["packages"]["repro-dpadmm"]
    a9a = prov["datasets"]["a9a"]
    assert a9a["available"] and len(a9a["processed_sha256"]) == 64
    assert prov["datasets"]["adult_huang2019"]["sources_sha256"] == {
        "uci/adult/adult.data": "5b00264637dbfec36bdeaab5676b0b30"}
    assert prov["datasets"]["bio_train"]["available"] is False


def test_what_if_runs_are_left_out_unless_asked(run, tmp_path):
    whatif = run / "results/whatif/q103/huang2019_dpadmm/fig1"
    whatif.mkdir(parents=True)
    (whatif / "metrics.json").write_text('{"status": "ok"}')
    plain = unpack(make_bundle(tmp_path / "plain.tar.gz", root=run), tmp_path / "p")
    assert not (plain / "results/whatif").exists() and verify(plain) == []
    asked = unpack(make_bundle(tmp_path / "asked.tar.gz", root=run, with_whatif=True), tmp_path / "a")
    assert (asked / "results/whatif/q103/huang2019_dpadmm/fig1/metrics.json").is_file()


def test_rejudged_bundle_gives_the_same_claims_json(run, tmp_path):
    archive = make_bundle(tmp_path / "b.tar.gz", root=run)
    result = rejudge(archive, tmp_path / "again", root=run)
    before = json.loads((run / "results/report/claims.json").read_text())
    after = json.loads((tmp_path / "again/claims.json").read_text())
    assert after == before and len(after) > 5
    assert result.changes == [] and result.claims_differ == [] and result.rules == "v3"
    assert (tmp_path / "again/rejudged.json").is_file()
    # the page and summary.json say where the numbers come from; the run's own report does not
    page = (tmp_path / "again/index.html").read_text()
    assert 'id="bundle">Re-judged from the results bundle <code>b.tar.gz</code>' in page
    assert "id=\"bundle\"" not in (run / "results/report/index.html").read_text()
    origin = json.loads((tmp_path / "again/summary.json").read_text())["provenance"]["bundle"]
    assert origin["name"] == "b.tar.gz" and origin["packages"]["numpy"]
    # parameters: table1 ran with repeats = 1, which the current config does not set
    assert any(d == "repeats: only in the run (1)" for d in result.params_differ["xu2020_dpaccadmm/table1"])


def test_a_changed_tolerance_changes_the_verdict_without_recomputing(run, tmp_path):
    archive = make_bundle(tmp_path / "b.tar.gz", root=run)
    for p in (run / "results").glob("*/*/metrics.json"):
        p.unlink()  # nothing of the original run is read: only the bundle
    claims_path = run / "config/claims/huang2019_dpadmm.yaml"
    claims = yaml.safe_load(claims_path.read_text())
    claim = next(c for c in claims["claims"] if c["id"].endswith("error_near_centralised"))
    claim["checks"][0]["abs_tol"] = 0.001  # |0.155 - 0.15| = 0.005 no longer within tolerance
    gone = claims["claims"].pop()  # a claim withdrawn since the bundle was judged
    claims_path.write_text(yaml.safe_dump(claims, sort_keys=False))
    t0 = time.perf_counter()
    result = rejudge(archive, tmp_path / "again", root=run)
    assert time.perf_counter() - t0 < 60
    change = [c for c in result.changes if c["id"] == claim["id"]]
    assert change and change[0]["before"] == "reproduced" and change[0]["after"] != "reproduced", result.changes
    after = {r["id"]: r for r in json.loads((tmp_path / "again/claims.json").read_text())}
    assert after[claim["id"]]["verdict"] == change[0]["after"]
    assert f"{claim['id']}: reproduced -> {change[0]['after']}" in result.summary()
    assert f"1 claims of the bundle's judgement that no longer exist: {gone['id']}" in result.summary()
    # the re-judge says plainly that it used this checkout's claims files (and rules), naming those that differ
    assert result.claims_differ == ["huang2019_dpadmm.yaml"]
    assert "judged with this checkout's claims files and rules, not the bundle's" in result.summary()
    # the re-judged pages mark the changed verdict with the bundle's own
    index = (tmp_path / "again/index.html").read_text()
    row = index[index.index(f'href="huang2019_dpadmm.html#{claim["id"]}"') - 600:]
    assert '<span class="was">was: reproduced</span>' in row[:800]
    card = (tmp_path / "again/huang2019_dpadmm.html").read_text()
    card = card[card.index(f'id="{claim["id"]}"'):]
    assert '<span class="was">was: reproduced</span>' in card[:700]
    assert "1 verdict changed since the bundle was judged" in index


def test_a_rejudged_bundle_keeps_its_not_run_verdicts_when_a_dataset_became_available(run, tmp_path):
    """Unchanged claims files give the bundle's own verdicts, "not run" ones included, even where the dataset an
    item lacked when it ran is available in the bundle's sidecars now (packed after a rebuild)."""
    import json as _json

    table1 = run / "results/xu2020_dpaccadmm/table1/metrics.json"
    metrics = _json.loads(table1.read_text())
    metrics["status.bio_train"] = "not run: dataset unavailable"
    metrics["n_train.bio_train.note"] = "absent"
    table1.write_text(_json.dumps(metrics))
    claims_path = run / "config/claims/xu2020_dpaccadmm.yaml"
    claims = yaml.safe_load(claims_path.read_text())
    claims["claims"].append({"id": "xu2020_dpaccadmm.table1.bio_rows", "item": "table1", "quote": "bio rows",
                             "checks": [{"kind": "equal", "metric": "n_train.bio_train", "expected": 72876}]})
    claims_path.write_text(yaml.safe_dump(claims, sort_keys=False))
    build_report("results/report", root=run)
    before = {r["id"]: r["verdict"] for r in _json.loads((run / "results/report/claims.json").read_text())}
    assert before["xu2020_dpaccadmm.table1.bio_rows"] == before["xu2020_dpaccadmm.table1.bio_size"] == "not run"
    side = run / "resources/processed/bio_train.json"
    side.write_text(_json.dumps({"name": "bio_train", "available": True, "arrays": {"X_train": [72876, 74]}}))
    result = rejudge(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "again", root=run)
    after = {r["id"]: r["verdict"] for r in _json.loads((tmp_path / "again/claims.json").read_text())}
    assert result.changes == [] and after == before
    assert "was:" not in (tmp_path / "again/index.html").read_text()


def test_manifest_detects_a_modified_a_missing_and_an_added_file(run, tmp_path):
    folder = unpack(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "x")
    metrics = folder / "results/huang2019_dpadmm/fig1/metrics.json"
    metrics.write_text(metrics.read_text().replace("0.155", "0.150"))
    (folder / "results/report/summary.json").unlink()
    (folder / "results/huang2019_dpadmm/fig1/extra.txt").write_text("x")
    problems = verify(folder)
    assert "modified: results/huang2019_dpadmm/fig1/metrics.json (sha256 differs from MANIFEST.sha256)" in problems
    assert "missing: results/report/summary.json" in problems
    assert f"not in {MANIFEST}: results/huang2019_dpadmm/fig1/extra.txt" in problems
    with pytest.raises(BundleError, match="modified: results/huang2019_dpadmm/fig1/metrics.json"):
        rejudge(folder, tmp_path / "again", root=run)
    assert not (tmp_path / "again").exists()


def test_a_tampered_archive_is_refused(run, tmp_path):
    folder = unpack(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "x")
    (folder / "results/report/claims.json").write_text("[]\n")
    with tarfile.open(tmp_path / "t.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    with pytest.raises(BundleError, match="modified: results/report/claims.json"):
        with opened(tmp_path / "t.tar.gz"):
            pass


def test_an_unfinished_run_cannot_be_bundled(run, tmp_path):
    metrics = run / "results/huang2019_dpadmm/fig1/metrics.json"
    later = (run / "results/report/claims.json").stat().st_mtime + 10
    import os

    os.utime(metrics, (later, later))
    with pytest.raises(BundleError, match="the report is older than results/huang2019_dpadmm/fig1/metrics.json"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    (run / "results/report/claims.json").unlink()
    with pytest.raises(BundleError, match="finish the run first"):
        make_bundle(tmp_path / "b.tar.gz", root=run)


def test_a_stopped_runs_staging_folder_does_not_make_the_report_stale(run, tmp_path):
    """A run killed mid-write leaves its hidden staging folder (swept by the next run); bundle refused the finished
    run, calling the report older than the staging folder's metrics.json, which the report never reads."""
    import os
    import tarfile

    staging = run / "results/huang2019_dpadmm/.fig1.staging-1@host.abcdefgh"
    staging.mkdir()
    (staging / "metrics.json").write_text("{}")
    later = (run / "results/report/claims.json").stat().st_mtime + 10
    os.utime(staging / "metrics.json", (later, later))
    try:
        archive = make_bundle(tmp_path / "b.tar.gz", root=run)
    finally:
        (staging / "metrics.json").unlink()
        staging.rmdir()
    with tarfile.open(archive) as tar:
        assert not [n for n in tar.getnames() if ".staging-" in n]


def test_cli_bundle_and_report_from_results(run, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(run))
    assert main(["bundle", "--out", str(tmp_path / "b.tar.gz")]) == 0
    assert "repro-dpadmm report --results" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--results", "b.tar.gz"]) == 0
    out = capsys.readouterr().out
    assert "manifest ok" in out and "no verdict changed" in out and "xu2020_dpaccadmm/table1" in out
    # into the project's results/ (ignored by git), never into the working directory or the tracked tree
    assert (run / "results/rejudged/b/claims.json").is_file() and not list(tmp_path.glob("*rejudged*"))
    assert main(["report", "--results", str(tmp_path / "nothing.tar.gz")]) == 2
    assert "no bundle at" in capsys.readouterr().err


@pytest.mark.workflow
def test_bundle_of_the_smoke_run_rejudges_to_the_same_claims(smoke_project, tmp_path):
    proj, proc = smoke_project
    assert proc.returncode == 0, proc.stderr[-3000:]
    archive = make_bundle(tmp_path / "smoke.tar.gz", root=proj)
    result = rejudge(archive, tmp_path / "again", root=proj)
    before = json.loads((proj / "results/report/claims.json").read_text())
    after = json.loads((tmp_path / "again/claims.json").read_text())
    assert after == before and result.changes == []
    # the smoke run's parameters are not the paper-scale config's: every item that ran says so
    assert result.params_differ


def test_a_budgeted_stream_read_to_its_end_passes_within_the_budget_and_refuses_past_it():
    import io

    from repro_dpadmm.bundle import _Budget
    assert _Budget(io.BytesIO(b"abc"), 100, "b.tar.gz", "cap").read() == b"abc"
    with pytest.raises(BundleError, match="more than 2 bytes"):
        _Budget(io.BytesIO(b"abc"), 2, "b.tar.gz", "cap").read()


def test_a_bundle_judged_before_claims_v3_still_rejudges_and_says_by_which_rules(run, tmp_path):
    """A bundle whose claims.json came from the rules before v3 (typed causes, no readings) is re-judged by the
    current rules, and the summary says which rules each judgement used."""
    import hashlib

    folder = unpack(make_bundle(tmp_path / "old.tar.gz", root=run), tmp_path / "x")
    claims = folder / "results/report/claims.json"
    old = [{k: v for k, v in r.items() if k not in ("thresholds", "cause", "deciding")}
           for r in json.loads(claims.read_text())]
    claims.write_text(json.dumps(old))
    digest = hashlib.sha256(claims.read_bytes()).hexdigest()
    manifest = folder / MANIFEST
    manifest.write_text("".join(f"{digest}  {rel}\n" if rel == "results/report/claims.json" else f"{line}\n"
                                for line in manifest.read_text().splitlines() for rel in [line.split("  ", 1)[1]]))
    result = rejudge(folder, tmp_path / "again", root=run)
    assert result.rules == "before v3" and result.changes == []
    assert "judged by the claims rules before v3" in result.summary()
    assert json.loads((tmp_path / "again/rejudged.json").read_text())["bundle_judged_by_rules"] == "before v3"


def test_a_bundle_with_no_judgement_is_said_to_hold_none(run, tmp_path):
    """No results/report/ in the bundle: no verdict "changed since the bundle was judged", and its claims are not
    "new claims, not in the bundle's judgement": the summary says the bundle holds no judgement."""
    import shutil

    from repro_dpadmm.bundle import write_manifest

    folder = unpack(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "x")
    shutil.rmtree(folder / "results/report")
    (folder / MANIFEST).unlink()
    write_manifest(folder)
    result = rejudge(folder, tmp_path / "again", root=run)
    summary = result.summary()
    assert result.rules == "no judgement" and result.changes
    assert (f"the bundle holds no judgement (its results/report/claims.json is missing or lists no claim): its "
            f"{len(result.changes):,} verdicts are judged here for the first time") in summary
    assert "since the bundle was judged" not in summary and "not in the bundle's judgement" not in summary


def test_a_bundle_names_no_path_of_this_machine(tmp_path, monkeypatch):
    """Sidecars, metrics, logs and provenance are copied with the project root made relative and the mirror named
    <mirror> (issue 50: bundles carried the checkout's, the mirror's and the raw files' absolute paths)."""
    import tarfile

    from _report_synth import make_project
    from repro_dpadmm.report import build_report

    root = make_project(tmp_path / "project")
    mirror = tmp_path / "mirror-somewhere"
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", str(mirror))
    side = root / "resources/processed/bio_train.json"
    data = json.loads(side.read_text())
    data["reason"] = f"tried {mirror}/kddcup2004/x.tar.gz and {root.resolve()}/resources/raw/kddcup2004/x.tar.gz"
    side.write_text(json.dumps(data))
    (root / "logs").mkdir(exist_ok=True)
    (root / "logs/x.log").write_text(f"cd {root.resolve()} && run\n")
    # a Latin-1 byte (not UTF-8) and a file of no known text suffix were copied as they were, paths and all
    (root / "logs/latin.log").write_bytes(b"caf\xe9 " + f"{mirror}/a/b {root.resolve()}/logs".encode() + b"\n"
                                          b"cp /data/\xe9quipe/jane/r.csv /mnt/D\xfcsseldorf/jane/run.log\n")
    (root / "logs/job").write_text(f"PATH=/usr/bin:{mirror}/bin\n")
    build_report("results/report", root=root)
    archive = make_bundle(tmp_path / "b.tar.gz", root=root)
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            if m.isfile():
                text = tar.extractfile(m).read().decode("utf-8", "replace")
                assert str(root.resolve()) not in text and str(mirror) not in text, m.name
                assert "mirror-somewhere" not in text and "/usr/bin" not in text, m.name
        latin = next(m for m in tar.getmembers() if m.name.endswith("logs/latin.log"))
        # the other bytes as they were; such a byte in a path is a letter of it (the path went on only after it)
        assert tar.extractfile(latin).read() == b"caf\xe9 <mirror>/a/b logs\ncp <path> <path>\n"
    with opened(archive) as folder:
        assert "<mirror>/kddcup2004" in (folder / "resources/processed/bio_train.json").read_text()


def _png(text: bytes) -> bytes:
    import struct

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)) + chunk(b"tEXt", text)
            + chunk(b"IDAT", zlib.compress(b"\0\0")) + chunk(b"IEND", b""))


@pytest.mark.parametrize("kind, payload, said", [
    ("image/png", _png(b"Source\0/home/alice/private/data.csv"), "embeds image/png data (base64) holding a path"),
    ("data:text/plain", b"dir /home/alice/private, GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
     "embeds text/plain data (base64) holding a path or a secret"),
    ("data:image/jpeg", b"\xff\xd8\xff\xfe" + b"x" * 80, "embeds image/jpeg data (base64), whose text a bundle cannot"),
])
def test_data_embedded_as_base64_is_checked_as_a_file_of_its_type(run, tmp_path, kind, payload, said):
    """A notebook's image outputs and a page's data: addresses are base64, which the scrubber sets aside: a PNG's
    text chunk and a download link's text went into bundles with the packer's paths and tokens."""
    import base64

    nb = run / "results/huang2019_dpadmm/fig1/fig1.ipynb"
    before = nb.read_text()
    data = base64.b64encode(payload).decode()
    out = {kind: data} if not kind.startswith("data:") else {"text/html": [f'<a href="{kind};base64,{data}">x</a>']}
    notebook = json.loads(before)
    notebook["cells"].append({"cell_type": "code", "execution_count": 1, "id": "x", "metadata": {}, "source": [""],
                              "outputs": [{"output_type": "display_data", "metadata": {}, "data": out}]})
    nb.write_text(json.dumps(notebook, indent=1))
    try:
        with pytest.raises(BundleError, match=rf"results/huang2019_dpadmm/fig1/fig1\.ipynb {re.escape(said)}"):
            make_bundle(tmp_path / "b.tar.gz", root=run)
        assert not (tmp_path / "b.tar.gz").exists()
    finally:
        nb.write_text(before)


def test_a_bundle_never_follows_a_link(run, tmp_path):
    """A link under results/ or logs/ may point anywhere on the packing machine: it is left out, not followed."""
    secret = tmp_path / "secret.txt"
    secret.write_text("not for sharing")
    (run / "results/huang2019_dpadmm/fig1/leak.txt").symlink_to(secret)
    (run / "logs/leak.log").symlink_to(secret)
    folder = unpack(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "x")
    assert not (folder / "results/huang2019_dpadmm/fig1/leak.txt").exists() and not (folder / "logs/leak.log").exists()
    assert "not for sharing" not in "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_a_bundle_never_replaces_what_is_already_there(run, tmp_path):
    mine = tmp_path / "mine.tar.gz"
    mine.write_text("USER")
    with pytest.raises(BundleError, match="already exists"):
        make_bundle(mine, root=run)
    assert mine.read_text() == "USER"
    (tmp_path / "folder.tar.gz").mkdir()
    with pytest.raises(BundleError, match="already exists"):
        make_bundle(tmp_path / "folder.tar.gz", root=run)


def test_a_bundle_made_at_the_same_time_under_the_same_name_is_never_replaced(run, tmp_path, monkeypatch):
    """Two bundles into one name at once: the one that finishes second fails, the first stays as it was."""
    import repro_dpadmm.bundle as bundle

    out = tmp_path / "same.tar.gz"
    checks = bundle.beyond_limits

    def first_finishes_meanwhile(*a, **k):
        out.write_text("the other bundle")
        return checks(*a, **k)

    monkeypatch.setattr(bundle, "beyond_limits", first_finishes_meanwhile)
    with pytest.raises(BundleError, match="appeared while this bundle was made"):
        make_bundle(out, root=run)
    assert out.read_text() == "the other bundle"


def test_a_bundle_names_no_path_of_another_checkout_nor_a_process_or_host(run, tmp_path):
    """A run copied from another checkout keeps that checkout's absolute paths in its logs and sidecars, and logs
    name staging folders and lock holders by `<pid>@<host>`: every absolute path left is made relative to the
    project where it is a project path, `<path>` otherwise, and pids and hosts become placeholders."""
    from repro_dpadmm import locks

    side = run / "resources/processed/adult_huang2019.json"
    data = json.loads(side.read_text())
    data["raw"] = "/elsewhere/checkout/resources/raw/uci/adult/adult.data"
    side.write_text(json.dumps(data))
    (run / "logs/huang2019_dpadmm").mkdir(parents=True, exist_ok=True)
    (run / "logs/huang2019_dpadmm/fig1.log").write_text(
        "Working directory: /elsewhere/checkout\n"
        f"Input Notebook: /elsewhere/checkout/results/huang2019_dpadmm/.fig1.staging-27680@{locks.HOST}.9692hw0p/"
        "fig1.ipynb\n"
        "Output: /scratch/user/venv/lib/python3.11/site-packages/papermill/execute.py\n"
        "fig1: waiting for the run by process 4242 on otherhost.example.org (started 2026-01-01 10:00:00: "
        "repro-dpadmm run x) (lock /elsewhere/checkout/results/huang2019_dpadmm/.fig1.lock)\n"
        "units it/s, 3/4 done, https://example.org/a/b, </div>\n")
    build_report("results/report", root=run)
    folder = unpack(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "x")
    log = (folder / "logs/huang2019_dpadmm/fig1.log").read_text()
    assert log == (
        "Working directory: <path>\n"
        "Input Notebook: results/huang2019_dpadmm/.fig1.staging-<pid>@<host>.9692hw0p/fig1.ipynb\n"
        "Output: <path>\n"
        "fig1: waiting for the run by process <pid> on <host> (started 2026-01-01 10:00:00: repro-dpadmm run x) "
        "(lock results/huang2019_dpadmm/.fig1.lock)\n"
        "units it/s, 3/4 done, https://example.org/a/b, </div>\n"), log
    assert json.loads((folder / "resources/processed/adult_huang2019.json").read_text())["raw"] == \
        "resources/raw/uci/adult/adult.data"
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "/elsewhere" not in text and "/scratch" not in text and f"@{locks.HOST}" not in text, path
    assert verify(folder) == []


def test_a_rejudged_report_records_the_bundles_file_name_not_its_path(run, tmp_path):
    archive = make_bundle(tmp_path / "sub" / "b.tar.gz", root=run)
    rejudge(archive, tmp_path / "rj", root=run)
    record = json.loads((tmp_path / "rj/rejudged.json").read_text())
    assert record["bundle"] == "b.tar.gz"
    assert str(tmp_path) not in (tmp_path / "rj/rejudged.json").read_text()
    marker = (tmp_path / "rj/.repro-dpadmm-report.json").read_text()   # names the bundle by file name and hash
    assert str(tmp_path) not in marker and "b.tar.gz#" in marker


_SLOW_BUNDLE = """
import sys, time
from pathlib import Path
import repro_dpadmm.bundle as bundle
copy = bundle._copy_scrubbed
def slow(*args):
    copy(*args)
    print("copying", flush=True)
    time.sleep(60)
bundle._copy_scrubbed = slow
bundle.make_bundle(Path(sys.argv[2]), root=Path(sys.argv[1]))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_stopped_bundle_leaves_no_staging_copy(run, tmp_path, sig):
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "g" / "x.tar.gz"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_BUNDLE, str(run), str(out)], stdout=subprocess.PIPE,
                            text=True, env=os.environ)
    try:
        assert proc.stdout.readline().strip() == "copying"
        assert [p.name for p in out.parent.iterdir() if p.name.startswith(".bundle-")]
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(timeout=20) == 128 + getattr(signal, sig)
    finally:
        proc.kill()
    assert list(out.parent.iterdir()) == []


def test_a_staging_copy_left_by_a_killed_bundle_is_swept_once_its_process_is_gone(run, tmp_path):
    import os
    import subprocess
    import sys

    from repro_dpadmm.locks import HOST

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = tmp_path / f".bundle-{dead.stdout.strip()}@{HOST}.leftover"
    alive = tmp_path / f".bundle-{os.getppid()}@{HOST}.inuse"
    users = tmp_path / ".bundle-notes"      # a name that records no owner: never ours
    for p in (left, alive, users):
        (p / "b").mkdir(parents=True)
    make_bundle(tmp_path / "b.tar.gz", root=run)
    assert not left.exists() and alive.exists() and users.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle-")) == \
        sorted([alive.name, users.name])


@pytest.mark.parametrize("name", [".tar.gz", ".tgz", ".hidden.tar.gz", "..tar.gz"])
def test_a_bundle_name_without_a_plain_stem_is_refused(run, tmp_path, name):
    """The name before .tar.gz names the bundle's top folder: an empty one packed the files at the top (a bundle
    its own re-judge refuses), a hidden one makes a hidden folder."""
    with pytest.raises(BundleError, match=f"bundle name {name!r} must have a name before .tar.gz"):
        make_bundle(tmp_path / name, root=run)
    assert list(tmp_path.iterdir()) == [tmp_path / "project"]


def test_a_bundle_its_own_re_judge_would_refuse_is_not_made(run, tmp_path, monkeypatch):
    """`bundle` checks the limits the re-judge applies (Limits), naming the file, before it says to re-judge it."""
    big = run / "results/huang2019_dpadmm/fig1/big.csv"
    big.write_text("0\n" * 150_000)
    monkeypatch.setenv("REPRO_DPADMM_BUNDLE_MAX_FILE_MB", str(200_000 / 2**20))
    with pytest.raises(BundleError, match=r"would be refused by its own re-judge:\n  too large: "
                                          r"results/huang2019_dpadmm/fig1/big.csv has 300,000 bytes, more than "
                                          r"200,000 \(set REPRO_DPADMM_BUNDLE_MAX_FILE_MB to allow more[^\n]*$"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    big.unlink()
    monkeypatch.delenv("REPRO_DPADMM_BUNDLE_MAX_FILE_MB")
    monkeypatch.setenv("REPRO_DPADMM_BUNDLE_MAX_FILES", "10")
    with pytest.raises(BundleError, match=r"would be refused by its own re-judge:\n  more than 10 files and folders"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    monkeypatch.delenv("REPRO_DPADMM_BUNDLE_MAX_FILES")
    monkeypatch.setattr("repro_dpadmm.bundle.Limits.RATIO_FREE", 0)
    monkeypatch.setenv("REPRO_DPADMM_BUNDLE_MAX_RATIO", "1.01")
    with pytest.raises(BundleError, match=r"bytes unpacked from [\d,]+ packed: more than 1.01 times its size"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]   # no archive, no staging folder
    monkeypatch.delenv("REPRO_DPADMM_BUNDLE_MAX_RATIO")
    assert make_bundle(tmp_path / "b.tar.gz", root=run).is_file()


def test_the_summary_shows_a_few_differing_parameters_per_item_and_clips_keys(run, tmp_path):
    """A bundle's notebook may record any number of parameters (300,000 printed 14.8 MB on one line): the summary
    shows the first few per item, and how many more, with keys clipped; rejudged.json keeps them all."""
    nb = run / "results/huang2019_dpadmm/fig1/fig1.ipynb"
    data = json.loads(nb.read_text())
    params = data.setdefault("metadata", {}).setdefault("papermill", {}).setdefault("parameters", {})
    params.setdefault("params", {}).update({f"k{i:04d}": i for i in range(1000)})
    params["params"]["x" * 5000] = 1
    nb.write_text(json.dumps(data))
    build_report("results/report", root=run)
    result = rejudge(make_bundle(tmp_path / "b.tar.gz", root=run), tmp_path / "rj", root=run)
    line = next(l for l in result.summary().splitlines() if l.startswith("  huang2019_dpadmm/fig1: "))
    assert line.endswith(f"; ... and {len(result.params_differ['huang2019_dpadmm/fig1']) - 5:,} more")
    assert line.count(": only in the run (") == 5 and len(line) < 1000
    assert len(result.summary()) < 5000
    recorded = json.loads((tmp_path / "rj/rejudged.json").read_text())["params_differ_from_current_config"]
    assert len(recorded["huang2019_dpadmm/fig1"]) >= 1001
    assert f"{'x' * 5000}: only in the run (1)" in recorded["huang2019_dpadmm/fig1"]   # whole, as the run has it


def test_the_summary_names_at_most_twenty_items(run, tmp_path):
    from repro_dpadmm.bundle import Rejudged

    result = Rejudged("b.tar.gz", tmp_path, {}, 3, {f"p/i{k:02d}": ["a: 1 in the run, 2 now"] for k in range(25)})
    lines = result.summary().splitlines()
    assert "  p/i19: a: 1 in the run, 2 now" in lines and "  p/i20: a: 1 in the run, 2 now" not in lines
    assert "  ... and 5 more items (rejudged.json lists them all)" in lines


def test_nested_parameter_differences_are_shown_by_the_path_of_each_differing_leaf(tmp_path):
    """Values cut at 60 characters made two nested mappings that differ deep inside look identical: each differing
    leaf is named by its path; key order is no difference; a key only one side has is said so. The terminal cuts
    long values, rejudged.json keeps them whole."""
    from repro_dpadmm.bundle import Difference, Rejudged, leaf_differences

    long = "a" * 100
    ran = {"panels": {"a9a": {"boundaries": [0, 66, 123], "epsilons": [3.0, 10.0, 20.0], "note": long + "1"}},
           "dpsgd": {"clip": 1.0, "lr": 0.1}, "seed": 0, "flag": True}
    now = {"dpsgd": {"lr": 0.1, "clip": 1.0}, "seed": 0, "flag": 1, "extra": {"k": 2},
           "panels": {"a9a": {"boundaries": [0, 66, 123], "epsilons": [3.0, 12.0], "note": long + "2"}}}
    diffs = [Difference.of(*leaf) for leaf in leaf_differences(ran, now)]
    assert diffs == ["extra: only in the current config ({\"k\": 2})", "flag: true in the run, 1 now",
                     "panels.a9a.epsilons[1]: 10.0 in the run, 12.0 now",
                     "panels.a9a.epsilons[2]: only in the run (20.0)",
                     f"panels.a9a.note: {long}1 in the run, {long}2 now"]
    result = Rejudged("b.tar.gz", tmp_path, {}, 3, {"p/i": diffs})
    line = next(l for l in result.summary().splitlines() if l.startswith("  p/i: "))
    assert "panels.a9a.epsilons[1]: 10.0 in the run, 12.0 now" in line and long not in line and len(line) < 600
    assert result.record()["params_differ_from_current_config"]["p/i"][-1] == f"panels.a9a.note: {long}1 in the " \
                                                                               f"run, {long}2 now"
    assert json.loads(json.dumps(result.record()))["params_differ_from_current_config"]["p/i"] == diffs


@pytest.mark.parametrize("name", ["a\nb.tar.gz", "a\x1bb.tar.gz", "a\u202eb.tar.gz"])
def test_a_bundle_name_with_control_characters_is_refused(run, tmp_path, name):
    with pytest.raises(BundleError, match="control or invisible characters"):
        make_bundle(tmp_path / "out" / name, root=run)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("folder", ["results", "logs", "config"])
def test_a_bundle_inside_a_folder_a_bundle_packs_is_refused(run, folder):
    with pytest.raises(BundleError, match=f"lies in the project's {folder}/"):
        make_bundle(run / folder / "inner.tar.gz", root=run)
    assert not (run / folder / "inner.tar.gz").exists()


@pytest.mark.parametrize("name, said", [
    ("evil\nname.csv", r"evil\\nname\.csv"),   # a name the re-judge refuses
    # a backslash in a file name (or a name over the member cap) made a bundle its own re-judge refused whole
    ("back\\slash.csv", r"file names a member may not have: .*back\\slash\.csv \(a backslash"),
    # a token in a file's name went into the member's name and the manifest, which are not scrubbed like its text
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789.txt", r"would carry a secret in file names .*fig1/<secret>\.txt$"),
    ("api_key=hunter2.log", r"would carry a secret in file names .*fig1/api_key=<secret>$"),
])
def test_a_result_file_whose_name_a_bundle_may_not_hold_is_named_before_bundling(run, tmp_path, name, said):
    odd = run / "results" / "huang2019_dpadmm" / "fig1" / name
    odd.write_text("x")
    try:
        with pytest.raises(BundleError, match=said):
            make_bundle(tmp_path / "b.tar.gz", root=run)
        assert not (tmp_path / "b.tar.gz").exists()
    finally:
        odd.unlink()


def test_a_result_file_whose_name_is_not_utf8_is_named_so_before_bundling(run, tmp_path):
    """A name with undecodable bytes was refused as holding 'control or invisible characters', which it does not."""
    import os

    odd = run / "results" / "huang2019_dpadmm" / "fig1" / os.fsdecode(b"caf\xe9.csv")
    odd.write_text("x")
    try:
        with pytest.raises(BundleError) as exc:
            make_bundle(tmp_path / "b.tar.gz", root=run)
        assert "file names that are not valid UTF-8: results/huang2019_dpadmm/fig1/caf\\xe9.csv" in str(exc.value)
        assert "control" not in str(exc.value) and not (tmp_path / "b.tar.gz").exists()
    finally:
        odd.unlink()


def test_an_out_that_cannot_be_written_is_named_by_its_own_path(run, tmp_path):
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(BundleError, match="lies below .*afile, which is a file, not a folder"):
        make_bundle(tmp_path / "afile" / "b.tar.gz", root=run)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os

        if os.access(ro, os.W_OK):   # as root every folder is writable: /proc's is not
            ro = Path("/proc")
        with pytest.raises(BundleError, match=r"cannot write .*b\.tar\.gz: ") as exc:
            make_bundle(ro / "b.tar.gz", root=run)
        assert ".bundle-" not in str(exc.value)
    finally:
        (tmp_path / "ro").chmod(0o700)


@pytest.mark.parametrize("written, expected", [
    ("space: /mnt/Jane Doe/private-project/notes/secret.txt\n", "space: <path>\n"),
    ('"/home/alice/my notes/secret file.txt"', '"<path>"'),
    ("'/home/alice/secret file.txt'", "'<path>'"),
    ('["/home/alice/x y/z.txt\\n", 1]', '["<path>\\n", 1]'),
    ("fileurl: file:///home/alice/secret/data.csv\n", "fileurl: file://<path>\n"),
    ("<a href=\"file:///home/Jane%20Doe/x.pdf\">", "<a href=\"file://<path>\">"),
    ("FILE://localhost/home/alice/secret.txt", "file://<path>"),
    ('{"p": "\\/home\\/alice\\/secret\\/data.csv"}', '{"p": "<path>"}'),
    ('{"p": "\\/elsewhere\\/checkout\\/results\\/huang2019_dpadmm\\/fig1"}',
     '{"p": "results\\/huang2019_dpadmm\\/fig1"}'),
    ("next=%2Fhome%2Falice%2Fsecret%20stuff%2Fa.txt&x=1", "next=<path>&x=1"),
    ("q=%2fhome%2falice", "q=<path>"),
    ("PATH=/usr/bin:/home/alice/secret/bin\n", "PATH=<path>:<path>\n"),
    ("flag -I/home/alice/include/x, path:/home/alice/secret, file:/home/alice/f/g",
     "flag -I<path>, path:<path>, file:<path>"),
    ('{"p": "\\u002fhome\\u002falice\\u002f.ssh\\u002fid_rsa"}', '{"p": "<path>"}'),
    ('"\\u002Felsewhere\\u002Fcheckout\\u002Fresults\\u002Fhuang2019_dpadmm"',
     '"results\\u002Fhuang2019_dpadmm"'),
    ("<p>&#x2F;home&#x2F;alice&#x2F;secret &#47;home&#47;alice &#X002f;home&#x2f;alice &sol;home&sol;alice</p>",
     "<p><path> <path> <path> <path></p>"),
    ("from /elsewhere/checkout/results/huang2019_dpadmm/fig1 to b", "from results/huang2019_dpadmm/fig1 to b"),
    ("two //home/alice/secret, three ///home/alice/secret", "two <path>, three <path>"),
    ('{"p": "\\/\\/home\\/alice\\/secret"}, &#47;&#47;home&#47;alice', '{"p": "<path>"}, <path>'),
    ("mixed %2Fhome/alice/secret and /home%2Falice%2Fsecret", "mixed <path> and <path>"),
    ("up /elsewhere/checkout/results/../../../home/alice/secret", "up <path>"),
    ("<pre>/home/alice/venv/lib/x.py</pre>", "<pre><path></pre>"),                         # after an HTML tag
    ("\x1b[0;32m/home/alice/x.py\x1b[0m", "\x1b[0;32m<path>\x1b[0m"),                     # after a colour code
    ('"\\u001b[0;32m/home/alice/x.py"', '"\\u001b[0;32m<path>"'),                          # ... JSON-escaped
    ('{"r": "could not read\\n/home/alice/raw\\t/home/alice/x"}', '{"r": "could not read\\n<path>\\t<path>"}'),
    ("/1scratch/alice/d.csv /\u00c4rger/alice/d.csv /.snapshots/alice/d.csv", "<path> <path> <path>"),
    ('{"f": "/home/Jos\\u00e9 Doe/alice/a.csv"}', '{"f": "<path>"}'),                 # as json.dumps writes it
    ('"open(\\"/home/alice/my secret/x y.txt\\")"', '"open(\\"<path>\\")"'),           # escaped quotes
    ("open(&quot;/home/alice/my secret/x y.txt&quot;)", "open(&quot;<path>&quot;)"),
    ("+/home/alice/secret/x\n-/home/alice/old/y\n", "+<path>\n-<path>\n"),          # a diff's lines
    ("a </home/alice/x/y, b @/home/alice/z/w, c .../home/alice/q/r", "a <<path>, b @<path>, c ...<path>"),
    ("curl -d @/home/alice/p.json [</home/alice/f5] [-I/home/alice/inc] x +/home/alice/a/b, -/home/alice/c/d",
     "curl -d @<path> [<<path>] [-I<path>] x +<path>, -<path>"),
    # punctuation in a folder's name, and after a path (the prose's own)
    ("cwd=/srv/lab,alice/thesis-draft/x /home/alice/[old]/thesis/x.py /srv/alice#1/proj/x",
     "cwd=<path> <path> <path>"),
    ("(/home/alice/x (copy)/y), see /home/alice/p.json, and [/home/alice/q] /home/alice/r!",
     "(<path>), see <path>, and [<path>] <path>!"),
    # a colour code inside a path (grep's highlighting): the path goes whole; a code after it stays
    ("/home/\x1b[01;31m\x1b[Kalice\x1b[m\x1b[K/data/x.csv and /srv/\x1b[1mlab-alice\x1b[0m/proj/run.log\x1b[0m x",
     "<path> and <path>\x1b[0m x"),
    ("\x1b[35m/home/\x1b[0m\x1b[95malice/x.py", "\x1b[35m<path>"),
    # escapes layered (a notebook's output of JSON text is JSON again), a path whose first slash alone is escaped
    ('"{\\"d\\": \\"\\\\/home\\\\/alice\\\\/x61\\"}"', '"{\\"d\\": \\"<path>\\"}"'),
    ("B \\\\u002fhome\\\\u002falice\\\\u002fx63, C &amp;#x2F;home&amp;#x2F;alice&amp;#x2F;x64",
     "B <path>, C <path>"),
    ("F \\\\/home/alice/x35 \\/srv/alice/x", "F <path> <path>"),
    ("in /@alice/x/y and /srv/@alice/z", "in <path> and <path>"),        # a first part that starts with `@`
    ("read ~alice/private/x.csv, then cd ~alice", "read <path>, then cd <path>"),   # a user's home by name
])
def test_scrubbing_leaves_no_piece_of_an_absolute_path_in_any_form(run, written, expected):
    """A path with spaces, a file:// address, JSON's escaped slashes (\\/, \\u002f), HTML's character references and
    percent-encoding: no part of the path is left (a project path becomes relative, any other `<path>`), the text around it is kept."""
    from repro_dpadmm.bundle import scrub_paths

    scrubbed = scrub_paths(written, run)
    assert scrubbed == expected, scrubbed
    for piece in ("alice", "Jane", "Doe", "private", "secret", "elsewhere", "checkout", "home", "scratch", "rger",
                  "snapshots"):
        assert piece not in scrubbed, piece


def test_a_path_that_leaves_the_project_by_dot_dot_is_not_made_relative(run):
    """`<root>/../../home/alice/x` is not a project path: cutting the root off would leave `../../home/alice/x`."""
    from repro_dpadmm.bundle import scrub_paths

    assert scrub_paths(f"at {run}/../../home/alice/secret, {run}/./results//x", run) == "at <path>, results/x"


def test_scrubbing_keeps_an_images_base64_and_a_json_escaped_letter(run):
    """A base64 image holds `/` after any letter (`...Q3m/x9Yz/...` once read as a colour code's end and a path),
    and a claims file's `\u03B5` is a letter, not a path: both stay byte for byte."""
    from repro_dpadmm.bundle import scrub_paths

    b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" + "Q3m/x9Yz/Ab+/9j/" * 20 + "AAAAAElFTkSuQmCC"
    for text in (f'<img src="data:image/png;base64,{b64}">', f'{{"image/png": "{b64}"}}',
                 'mechanism: "Gamma-norm (pure \\u03B5)"', f"\x1b[0;32mQ3m/x9Yz/Ab+/9j/\x1b[0m"):
        assert scrub_paths(text, run) == text, text


def test_scrubbing_keeps_what_is_not_a_path(run, monkeypatch):
    """Nor a path that merely starts like the mirror's (`/data` in `claims/datasets.yaml`, `/database`)."""
    from repro_dpadmm.bundle import scrub_paths

    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", "/data")
    text = ('units it/s, 3/4 done, https://example.org/a/b, </div>, "a/b c", \'x\', 50%20off, ratio 1/2 of 3/4\n'
            '{"url": "https:\\/\\/example.org\\/a"}, results/huang2019_dpadmm/fig1 and logs/x.log\n'
            'a\\u002fb, 1&#47;2, "\\u002f", &#x2F;&#x2F;\n'
            'config/claims/datasets.yaml, data/x, /database, ~/x/y, ~5 s, a~b/c\n')
    assert scrub_paths(text, run) == text


def test_the_claims_files_that_differ_are_capped_in_the_summary():
    """A bundle may carry thousands of claims files of long names: the terminal shows the first ones and a count."""
    from repro_dpadmm.bundle import SHOWN_ITEMS, Rejudged

    names = [f"{i:04d}{'x' * 200}.yaml" for i in range(5000)]
    text = Rejudged("b.tar.gz", Path("o"), {}, 3, claims_differ=names).summary()
    line = next(x for x in text.splitlines() if "differ from the bundle's copy (5000)" in x)
    assert len(line) < 3000 and line.count(".yaml") < SHOWN_ITEMS + 1 and "... and 4,980 more" in line, line
    assert "0000xxx" in line and "4999x" not in line


@pytest.mark.parametrize("written, expected", [
    ("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n", "GITHUB_TOKEN=<secret>\n"),
    ('{"AWS_SECRET_ACCESS_KEY": "abc/def+g", "n": 1}', '{"AWS_SECRET_ACCESS_KEY": "<secret>", "n": 1}'),
    ("db password: hunter2, api_key=xyz", "db password: <secret>, api_key=<secret>"),
    ("pushed with ghp_abcdefghijklmnopqrstuvwxyz0123456789 and AKIAABCDEFGHIJKLMNOP", "pushed with <secret> and <secret>"),
    # names that only hold the word are no secret: the run's own keys stay
    ("authors_as_run: 3, token_budget: 100, max_tokens 5", "authors_as_run: 3, token_budget: 100, max_tokens 5"),
    ('{"note": "{\\"token\\": \\"SECRET1\\"}"}', '{"note": "{\\"token\\": \\"<secret>\\"}"}'),  # JSON in JSON
    ('export MY_TOKEN="abc def" next', 'export MY_TOKEN="<secret>" next'),             # a quoted value, whole
    ("https://alice:p@ss@example.com/x", "https://<credentials>@example.com/x"),       # a password holding @
    # a YAML value on the lines below its key (plain, continued, nested), in a list item too; a sibling key stays
    ("m:\n  password:\n    hunter2plain\n  url: u\n", "m:\n  password:\n    <secret>\n  url: u\n"),
    ("password: abc\n  def\nnext: 1\n", "password: <secret>\n  <secret>\nnext: 1\n"),
    ("db:\n  credentials:\n    user: bob\n    pw: x\nkeep: 2\n", "db:\n  credentials:\n    <secret>\nkeep: 2\n"),
    ("- token:\n    t0k3n\n  name: n\n", "- token:\n    <secret>\n  name: n\n"),
    ("SECRET_KEY = 'dj4ngo' signing_key: s1gn", "SECRET_KEY = '<secret>' signing_key: <secret>"),
    ('"https://e.com/x?sig=S\\nnext line"', '"https://e.com/x?<query>\\nnext line"'),   # the query ends at \n
    ("PGPASSWORD=Hunter2\nexport DB_PASS=Hunter2\nrun --password Hunter2 --token=abc\n",      # glued, short, options
     "PGPASSWORD=<secret>\nexport DB_PASS=<secret>\nrun --password <secret> --token=<secret>\n"),
    ("password: |\n  Block1\napi_key: >-\n  Folded1\ntoken: !!str Tagged1\npassword=abc,defTail\nkept: 1\n",  # YAML
     "password: <secret>\napi_key: <secret>\ntoken: <secret>\npassword=<secret>\nkept: 1\n"),
    ('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc\ncurl -H "Authorization: Basic YWxpY2U6cHc="\n',
     'Authorization: Bearer <secret>\ncurl -H "Authorization: Basic <secret>"\n'),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n", "<secret>\n"),
    ("hf_abcdefghijklmnopqrstuvwxyz0123456789 and npm_abcdefghijklmnopqrstuvwxyz0123456789", "<secret> and <secret>"),
    ("passed: 2, bypass: 1, compass=3, basic ideas, Bearer in mind", "passed: 2, bypass: 1, compass=3, basic ideas, "
                                                                    "Bearer in mind"),
    # a YAML anchor before the value; a quoted value over two lines, or never closed
    ("password: &pw hunter32\ntoken: !!str &t Tagged2\nkept: 1\n", "password: <secret>\ntoken: <secret>\nkept: 1\n"),
    ('x: {password: "hunter31\ncontinued"}\nkept: 1\n', 'x: {password: "<secret>"}\nkept: 1\n'),
    ('password: "hunter33\nkept: 1\n', "password: <secret>\nkept: 1\n"),
])
def test_a_bundle_holds_no_secret_set_by_name_nor_a_known_token(run, written, expected):
    from repro_dpadmm.bundle import scrub_paths

    assert scrub_paths(written, run) == expected


def test_a_bundle_holds_no_address_credentials(run):
    from repro_dpadmm.bundle import scrub_paths

    text = "data_mirror: https://alice:s3cret@mirror.example.org/datasets\n"
    assert scrub_paths(text, run) == "data_mirror: https://<credentials>@mirror.example.org/datasets\n"
    # the address with its `://` escaped (JSON, HTML) or percent-encoded inside another address
    for written, expected in (("https:\\/\\/alice:s3cret@h.org", "https:\\/\\/<credentials>@h.org"),
                              ("https:\\u002f\\u002falice:s3cret@h.org", "https:\\u002f\\u002f<credentials>@h.org"),
                              ("https&#58;//alice:s3cret@h.org/", "https&#58;//<credentials>@h.org/"),
                              ("next=https%3A%2F%2Falice%3As3cret%40h.org%2Fx", "next=https%3A%2F%2F<credentials>%40h.org%2Fx"),
                              ("plain https:\\/\\/h.org\\/a", "plain https:\\/\\/h.org\\/a")):
        assert scrub_paths(written, run) == expected, written


def test_a_report_folder_that_is_a_link_is_refused_not_left_out(run, tmp_path):
    import shutil

    report = run / "results/report"
    shutil.move(report, tmp_path / "elsewhere")
    report.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BundleError, match="results/report is a link"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    assert not (tmp_path / "b.tar.gz").exists()


@pytest.mark.parametrize("written, expected", [
    ("tried http://127.0.0.1:18765/m?X-Amz-Signature=SIG999/libsvm/a8a: 403\n",
     "tried http://127.0.0.1:18765/m?<query> 403\n"),   # a query runs to the next space
    ("https://u:pw@h.example/x?token=abc#f", "https://<credentials>@h.example/x?<query>#f"),
    ("log /opt//secretproj/u and /tmp//x/y\n", "log <path> and <path>\n"),
])
def test_a_bundle_holds_no_query_secret_nor_a_path_with_doubled_slashes(run, written, expected):
    from repro_dpadmm.bundle import scrub_paths

    assert scrub_paths(written, run) == expected


def test_a_figure_whose_text_holds_a_path_is_refused_by_name(run, tmp_path):
    """A figure is copied byte for byte (an edit would break it): one whose text holds a path is refused, naming it,
    and no bundle is made (issue "Hostile input": a PNG's tEXt chunk and a PDF's bytes were packed as they were)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf", metadata={"Title": "/home/alice/secret/run"})
    plt.close(fig)
    pdf = run / "results/huang2019_dpadmm/fig1/fig1.pdf"
    pdf.write_bytes(buf.getvalue())
    with pytest.raises(BundleError, match=r"results/huang2019_dpadmm/fig1/fig1\.pdf holds a path"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    assert not (tmp_path / "b.tar.gz").exists()
    pdf.write_bytes(b"%PDF-1.4 not a figure\n1 0 obj << /Filter /DCTDecode >>\nstream\nxx\nendstream\n")
    with pytest.raises(BundleError, match=r"fig1\.pdf cannot be bundled: a stream is encoded with DCTDecode"):
        make_bundle(tmp_path / "b.tar.gz", root=run)
    pdf.unlink()


def test_binary_files_of_other_kinds_are_left_out_and_said(run, tmp_path, capsys):
    """An array or archive under results/ (or a log with a NUL byte) may hold a path a bundle cannot see: left out,
    and said, as links are."""
    fig1 = run / "results/huang2019_dpadmm/fig1"
    (fig1 / "cache.npz").write_bytes(b"PK\x03\x04/home/alice/secret/a")
    (run / "logs/odd.log").write_bytes(b"\0/home/alice/secret/a\n")
    archive = make_bundle(tmp_path / "b.tar.gz", root=run)
    err = capsys.readouterr().err
    assert "2 binary files left out" in err and "cache.npz" in err and "logs/odd.log" in err, err
    folder = unpack(archive, tmp_path / "x")
    assert not (folder / "results/huang2019_dpadmm/fig1/cache.npz").exists() and not (folder / "logs/odd.log").exists()
    assert verify(folder) == []


def test_a_fifo_in_the_results_is_left_out_and_said(run, tmp_path, capsys):
    import os

    fifo = run / "results/huang2019_dpadmm/fig1/pipe"
    os.mkfifo(fifo)
    try:
        make_bundle(tmp_path / "b.tar.gz", root=run)
    finally:
        fifo.unlink()
    err = capsys.readouterr().err
    assert "1 special file left out (FIFOs, devices and sockets are never read): " \
           "results/huang2019_dpadmm/fig1/pipe" in err, err


def test_text_files_beyond_the_scrub_budget_are_left_out_and_said(run, tmp_path, capsys, monkeypatch):
    """Every text file is searched for paths: a 500 MB log took minutes. One over the per-file budget, and files
    beyond the total (logs before results), are left out and said."""
    import repro_dpadmm.bundle as bundle_mod

    monkeypatch.setattr(bundle_mod, "SCRUB_MAX_FILE", 2 * 2**20)
    (run / "logs/huge.log").write_text("/srv/x/y,1\n" * 200_000)   # 2.2 MB
    archive = make_bundle(tmp_path / "b.tar.gz", root=run)
    err = capsys.readouterr().err
    assert "bundle: 1 text file left out" in err and "one over 2 MiB" in err and "logs/huge.log" in err, err
    assert not (unpack(archive, tmp_path / "x") / "logs/huge.log").exists()


