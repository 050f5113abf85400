"""Concurrent work on one project (issue 33): one run of an item at a time, staging folders swept only once their
process is gone, raw files staged per process, one build of a dataset at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from repro_dpadmm import locks
from repro_dpadmm.runner import item_lock, run_item
from repro_dpadmm.staging import STAGING

HOLD_LOCK = """
import sys, time
from pathlib import Path
from repro_dpadmm import locks
from repro_dpadmm.runner import item_lock
from repro_dpadmm.staging import STAGING, stage_parent
out, own = Path(sys.argv[1]), sys.argv[3] == "own"   # an item's own folder of results/, or an --out-dir
stage_parent(out, own).mkdir(parents=True, exist_ok=True)
with item_lock("demo", "item", out, own=own):
    stage = locks.owned_dir(stage_parent(out, own), f".{out.name}{STAGING}")
    (stage / "live.png").write_text("a live run's figure")
    print(stage, flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "config").mkdir()
    (tmp_path / "resources/processed").mkdir(parents=True)
    (tmp_path / "resources/processed/gisette.json").write_text(
        json.dumps({"name": "gisette", "available": False, "reason": "not in the mirror"}))
    nb = new_notebook(cells=[new_code_cell("params = None\nout_dir = None", metadata={"tags": ["parameters"]})])
    (tmp_path / "notebooks/demo").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks/demo/item.ipynb")
    return tmp_path


def _holder(out: Path, seconds: float, own: bool = True) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out), str(seconds), "own" if own else "out"],
                            stdout=subprocess.PIPE, text=True)
    return proc, Path(proc.stdout.readline().strip())


NOT_RUN = {"x": 1, "seed": 0, "datasets": ["gisette"]}   # the runner's quick path: no kernel is started


def test_a_second_run_of_an_item_refuses_naming_the_first_and_leaves_its_staging_folder(project):
    out = project / "results/demo/item"
    out.parent.mkdir(parents=True)
    proc, stage = _holder(out, 30)
    try:
        with pytest.raises(locks.Busy) as exc:
            run_item("demo", "item", NOT_RUN, out, root=project, wait=False)
        assert f"process {proc.pid} on {locks.HOST}" in str(exc.value) and "item demo/item" in str(exc.value)
        assert (stage / "live.png").is_file() and not out.exists()
    finally:
        proc.kill()
        proc.wait()


def test_a_second_run_waits_for_the_first_then_runs(project, capsys):
    out = project / "results/demo/item"
    out.parent.mkdir(parents=True)
    proc, stage = _holder(out, 1.5)
    try:
        t0 = time.perf_counter()
        metrics = run_item("demo", "item", NOT_RUN, out, root=project)
        assert time.perf_counter() - t0 > 0.5 and metrics["status"] == "not run"
        assert f"waiting for the run by process {proc.pid}" in capsys.readouterr().err
    finally:
        proc.wait()
    assert stage.is_dir()   # left by the simulated run, whose process was still alive when the lock came free
    run_item("demo", "item", NOT_RUN, out, root=project)
    assert not stage.exists()   # its process is gone now: the next run swept it


def test_cli_no_wait_exits_3_naming_the_holder(project, capsys):
    from repro_dpadmm.cli import main

    out = project / "elsewhere/fig1"   # the real item's notebook, an output folder of the test's own
    out.parent.mkdir(parents=True)
    proc, _ = _holder(out, 30, own=False)
    try:
        assert main(["run", "huang2019_dpadmm", "fig1", "--no-wait", "--out-dir", str(out), "--configfile",
                     str(Path(__file__).parents[1] / "config/smoke.yaml")]) == 3
        assert f"is already being run by process {proc.pid}" in capsys.readouterr().err
    finally:
        proc.kill()
        proc.wait()


def test_sweep_removes_only_folders_whose_process_is_gone(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = tmp_path / f".x.staging-{dead.stdout.strip()}@{locks.HOST}.abc"
    mine = locks.owned_dir(tmp_path, ".x.staging-")
    other_host = tmp_path / ".x.staging-1@elsewhere.example.abc"
    young_unnamed, old_unnamed = tmp_path / ".x.staging-abc", tmp_path / ".x.staging-def"
    for p in (gone, other_host, young_unnamed, old_unnamed):
        p.mkdir()
    old = time.time() - 2 * locks.UNNAMED_STALE_S
    os.utime(old_unnamed, (old, old))
    assert sorted(locks.sweep(tmp_path, ".x.staging-")) == sorted([gone, old_unnamed])
    assert mine.is_dir() and other_host.is_dir() and young_unnamed.is_dir()


def test_a_sweep_of_a_shared_folder_removes_only_names_we_made(tmp_path):
    """In the system's temporary folder a name with our prefix but no recorded owner may be another program's (or
    another run's, from an older version): never removed, however old."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = tmp_path / f"rdk-{dead.stdout.strip()}@{locks.HOST}.abc"
    decoy, sockets = tmp_path / "rdk-probe-decoy", tmp_path / "rdk-92e19b6fccdf4518-1"
    for p in (gone, decoy):
        p.mkdir()
    sockets.write_text("")
    old = time.time() - 100 * locks.UNNAMED_STALE_S
    for p in (decoy, sockets):
        os.utime(p, (old, old))
    assert locks.sweep(tmp_path, "rdk-", unnamed_stale=False) == [gone]
    assert decoy.is_dir() and sockets.is_file()


FETCH = """
import sys, time
from pathlib import Path
from repro_dpadmm.datasets import fetch, verify
from repro_dpadmm.datasets.registry import RawFile
fetch.RAW_FILES["kddcup2004/demo.dat"] = RawFile("kddcup2004/demo.dat", None, None)   # no published checksum
def slow_check(relpath, path):
    time.sleep(0.5)   # both processes are staging at once
    assert Path(path).read_text() == "rows\\n"
    return "parsed: 1 row"
verify.check = slow_check
print(fetch.fetch("kddcup2004/demo.dat", mirror=sys.argv[1], cache=Path(sys.argv[2])).sha256)
"""


def test_two_fetches_of_an_unchecksummed_file_at_once_both_succeed(tmp_path):
    """Two `data build bio_train` at once used to share .incoming/<relpath>: one deleted the other's copy."""
    (tmp_path / "mirror/kddcup2004").mkdir(parents=True)
    (tmp_path / "mirror/kddcup2004/demo.dat").write_text("rows\n")
    env = {**os.environ, "REPRO_DPADMM_OFFLINE": "1"}
    cmd = [sys.executable, "-c", FETCH, str(tmp_path / "mirror"), str(tmp_path / "raw")]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert results[0][0] == results[1][0] and len(results[0][0].strip()) == 64
    assert (tmp_path / "raw/kddcup2004/demo.dat").read_text() == "rows\n"
    assert not list((tmp_path / "raw/.incoming").iterdir())   # each staging folder went with its fetch


def test_two_builds_of_one_dataset_take_turns(tmp_path):
    """The second build waits for the first (resources/processed/.<name>.lock), naming it."""
    lock = tmp_path / "resources/processed/.a9a.lock"
    code = ("import sys, time; from repro_dpadmm import locks\n"
            "with locks.held(sys.argv[1], 'dataset a9a'):\n    print('held', flush=True); time.sleep(1.5)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(locks.Busy, match=f"dataset a9a is already being run by process {proc.pid}"):
            with locks.held(lock, "dataset a9a", wait=False):
                pass
        t0 = time.perf_counter()
        with locks.held(lock, "dataset a9a", log=lambda m: None):
            assert time.perf_counter() - t0 > 0.3
    finally:
        proc.wait()


def test_item_lock_lives_beside_the_item_folder_and_is_hidden(tmp_path):
    out = tmp_path / "results/p/item"
    with item_lock("p", "item", out):
        assert (tmp_path / "results/p/.item.lock").is_file()
        assert json.loads((tmp_path / "results/p/.item.lock").read_text())["pid"] == os.getpid()
    assert STAGING.startswith(".")


def test_a_lock_never_records_nor_shows_a_mirror_password(tmp_path):
    """The lock records the holder's command line, which may hold `--mirror http://user:password@host/`: the
    record on disk and the line of a process waiting for it show `<credentials>` instead."""
    lock = tmp_path / "resources/processed/.a8a.lock"
    code = ("import sys, time; from repro_dpadmm import locks\n"
            "with locks.held(sys.argv[1], 'dataset a8a'):\n    print('held', flush=True); time.sleep(1.5)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(lock), "--mirror", "http://alice:s3cr3tpw@127.0.0.1:9/"],
                            stdout=subprocess.PIPE, text=True)
    lines = []
    try:
        assert proc.stdout.readline().strip() == "held"
        record = lock.read_text()
        with locks.held(lock, "dataset a8a", log=lines.append):
            pass
    finally:
        proc.wait()
    assert "s3cr3tpw" not in record and "alice" not in record
    assert "--mirror http://<credentials>@127.0.0.1:9/" in json.loads(record)["command"]
    assert len(lines) == 1 and "waiting for the run by" in lines[0]
    assert "s3cr3tpw" not in lines[0] and "http://<credentials>@127.0.0.1:9/" in lines[0]


def test_a_lock_holders_command_line_is_shown_escaped():
    """The record names another run's command line, whose arguments (a file name) may hold ESC, OSC or bidi."""
    import json

    from repro_dpadmm.locks import _holder_text

    raw = json.dumps({"pid": 1, "host": "h\x1b[2J", "started": "t", "command": "run --configfile a\x1b]0;x\x07\u202e.yaml"})
    shown = _holder_text(raw.encode())
    assert "\x1b" not in shown and "\u202e" not in shown and "\\x1b]0;x\\x07\\u202e" in shown


def test_a_report_swap_waits_for_another_swap_of_the_same_folder(tmp_path):
    """Two reports built at once into one folder: one swap's renames could move the other's entries into its trash
    (a raw errno, or an incomplete report). A swap holds the folder's lock, so the second waits."""
    import fcntl
    import os
    import threading

    from repro_dpadmm.staging import swap_report

    out = tmp_path / "report"
    out.mkdir()
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "index.html").write_text("new")
    fd = os.open(out, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)   # another swap under way
    done = threading.Event()
    worker = threading.Thread(target=lambda: (swap_report(stage, out, kind="report"), done.set()))
    worker.start()
    try:
        assert not done.wait(1.0), "the swap did not wait for the folder's lock"
    finally:
        os.close(fd)
    worker.join(30)
    assert done.is_set() and (out / "index.html").read_text() == "new"


@pytest.mark.parametrize("where", ["results/demo/.item.lock", "resources/processed/.a9a.lock"])
def test_a_fifo_at_a_locks_name_is_refused_naming_it_without_blocking(tmp_path, where):
    """A FIFO where an item's or a dataset's lock goes: never opened for reading (that blocks, or fails with a raw
    'Illegal seek'), refused with one line naming the path and what it is; the FIFO stays."""
    lock = tmp_path / where
    lock.parent.mkdir(parents=True)
    os.mkfifo(lock)
    with pytest.raises(locks.NotALock) as exc:
        with locks.held(lock, "the work", wait=False):
            pass
    assert str(lock) in str(exc.value) and "is a FIFO, not a file" in str(exc.value)
    assert "\n" not in str(exc.value) and lock.is_fifo()


def test_a_socket_at_a_locks_name_is_refused_naming_it(tmp_path):
    import socket

    lock = tmp_path / ".item.lock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(lock))
        with pytest.raises(locks.NotALock, match="is a socket, not a file"):
            with locks.held(lock, "the work", wait=False):
                pass
    finally:
        sock.close()


def test_a_run_with_a_fifo_at_its_items_lock_is_refused_and_the_fifo_stays(project):
    out = project / "results/demo/item"
    out.parent.mkdir(parents=True)
    os.mkfifo(out.parent / ".item.lock")
    with pytest.raises(locks.NotALock, match=r"\.item\.lock is a FIFO, not a file, and cannot serve as the lock of "
                                             r"item demo/item"):
        run_item("demo", "item", NOT_RUN, out, root=project, wait=False)
    assert (out.parent / ".item.lock").is_fifo() and not out.exists()
