"""Data-fault matrix: every damaged, missing or wrong source ends in a clear sidecar or error, and nothing invalid
ever carries a final name (resources/raw/<relpath>, resources/processed/<name>.npz).

Tiny synthetic stand-ins replace the gisette and bio_train registry entries (a few rows, 5 or 74 features): the
gisette training file has a published checksum (the checksummed path), its test file and the bio archive have none
(the parse-and-shape path).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import os
import stat
import tarfile

import numpy as np
import pytest

from repro_dpadmm.datasets import DatasetUnavailable, attempt, build, is_available, load, registry
from repro_dpadmm.datasets.fetch import FetchError, cache_status, fetch
from repro_dpadmm.datasets.registry import Dataset, RawFile

TRAIN, TEST, ARCHIVE = ("libsvm/binary/gisette_scale.bz2", "libsvm/binary/gisette_scale.t.bz2",
                        "kddcup2004/data_kddcup04.tar.gz")


def libsvm_bz2(rows: int, features: int = 5, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(rows):
        feats = " ".join(f"{j}:{rng.uniform(-1, 1):.3f}" for j in range(1, features + 1))
        lines.append(f"{'+1' if i % 2 else '-1'} {feats}")
    return bz2.compress(("\n".join(lines) + "\n").encode())


def bio_tar(rows: int, member: str = "bio_train.dat") -> bytes:
    rng = np.random.default_rng(1)
    text = "\n".join(" ".join(["1", str(i), str(i % 2)] + [f"{v:.2f}" for v in rng.normal(size=74)])
                     for i in range(rows)) + "\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = text.encode()
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


GOOD = {TRAIN: libsvm_bz2(4), TEST: libsvm_bz2(3, seed=1), ARCHIVE: bio_tar(5)}


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """Tiny registry entries, offline, a good mirror and an empty project root; returns a namespace of paths."""
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    sha = "sha256:" + hashlib.sha256(GOOD[TRAIN]).hexdigest()
    monkeypatch.setitem(registry.RAW_FILES, TRAIN, RawFile(TRAIN, None, sha))
    monkeypatch.setitem(registry.RAW_FILES, TEST, RawFile(TEST, None, None))
    monkeypatch.setitem(registry.RAW_FILES, ARCHIVE, RawFile(ARCHIVE, None, None))
    monkeypatch.setitem(registry.DATASETS, "gisette", Dataset("gisette", (TRAIN, TEST), "tiny", ("t",),
                                                              {"X_train": (4, 5), "X_test": (3, 5)}))
    monkeypatch.setitem(registry.DATASETS, "bio_train", Dataset("bio_train", (ARCHIVE,), "tiny", ("t",),
                                                                {"X_train": (3, 74), "X_test": (2, 74)}))

    class T:
        root = tmp_path / "project"
        mirror = tmp_path / "mirror"
        raw = root / "resources/raw"
        processed = root / "resources/processed"

        @staticmethod
        def put(rel, data):
            (T.mirror / rel).parent.mkdir(parents=True, exist_ok=True)
            (T.mirror / rel).write_bytes(data)

    for rel, data in GOOD.items():
        T.put(rel, data)
    return T


def assert_nothing_invalid(t, name):
    """Every file under a final raw name verifies; no staged leftovers; no npz unless the sidecar says available."""
    for rel in registry.DATASETS[name].raw:
        p = t.raw / rel
        if p.exists():
            assert cache_status(t.raw)[rel].startswith("verified"), f"{rel} under its final name is unverified"
    incoming = t.raw / ".incoming"
    assert not incoming.exists() or not [p for p in incoming.rglob("*") if p.is_file()], "staged file left"
    side = json.loads((t.processed / f"{name}.json").read_text())
    assert (t.processed / f"{name}.npz").exists() == bool(side["available"])


def damage(data: bytes, how: str) -> bytes:
    return {"truncated": data[: len(data) // 2], "flipped": data[:-12] + bytes([data[-12] ^ 0xFF]) + data[-11:],
            "empty": b"", "garbage": b"this is not the file you are looking for\n" * 20,
            "not_bz2": bz2.decompress(data) if data[:3] == b"BZh" else data}[how]


# ---------------------------------------------------------------------------------------------------- faults
FAULTS = [
    # (fault id, dataset, file, bytes in the mirror (None: absent), reason fragment)
    ("checksummed truncated", "gisette", TRAIN, damage(GOOD[TRAIN], "truncated"), "checksum mismatch"),
    ("checksummed flipped byte", "gisette", TRAIN, damage(GOOD[TRAIN], "flipped"), "checksum mismatch"),
    ("checksummed empty", "gisette", TRAIN, b"", "checksum mismatch"),
    ("checksummed missing", "gisette", TRAIN, None, "not in the mirror folder"),
    ("unchecksummed truncated bz2", "gisette", TEST, damage(GOOD[TEST], "truncated"), "failed verification"),
    ("unchecksummed flipped byte", "gisette", TEST, damage(GOOD[TEST], "flipped"), "failed verification"),
    ("unchecksummed empty", "gisette", TEST, b"", "failed verification"),
    ("unchecksummed wrong format (not bz2)", "gisette", TEST, damage(GOOD[TEST], "not_bz2"), "failed verification"),
    ("unchecksummed garbage", "gisette", TEST, damage(GOOD[TEST], "garbage"), "failed verification"),
    ("unchecksummed wrong shape (rows)", "gisette", TEST, libsvm_bz2(2), "parsed shape"),
    ("unchecksummed wrong shape (features)", "gisette", TEST, libsvm_bz2(3, features=9), "failed verification"),
    ("unchecksummed missing", "gisette", TEST, None, "not in the mirror folder"),
    ("garbage archive", "bio_train", ARCHIVE, damage(GOOD[ARCHIVE], "garbage"), "failed verification"),
    ("truncated archive", "bio_train", ARCHIVE, damage(GOOD[ARCHIVE], "truncated"), "failed verification"),
    ("gzip that is not a tar", "bio_train", ARCHIVE, gzip.compress(b"hello\n" * 50), "failed verification"),
    ("archive without bio_train.dat", "bio_train", ARCHIVE, bio_tar(5, member="other.dat"), "no bio_train.dat"),
    ("short valid archive (wrong shape)", "bio_train", ARCHIVE, bio_tar(4), "parsed shape"),
    ("empty archive", "bio_train", ARCHIVE, b"", "failed verification"),
]


@pytest.mark.parametrize("fault, name, rel, data, fragment", FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_gives_an_unavailable_sidecar_and_no_invalid_file(tiny, fault, name, rel, data, fragment):
    if data is None:
        (tiny.mirror / rel).unlink()
    else:
        tiny.put(rel, data)
    side = build(name, mirror=str(tiny.mirror), root=tiny.root)
    assert side["available"] is False
    assert rel in side["reason"] and fragment in side["reason"], side["reason"]
    assert "check the data mirror in force" in side["reason"]  # the hint knows a mirror is set
    assert_nothing_invalid(tiny, name)
    ok, why = is_available(name, tiny.root)
    assert not ok and rel in why
    with pytest.raises(DatasetUnavailable, match=name):
        load(name, tiny.root)
    # the mirror is fixed afterwards: the next build fetches again (nothing bad was kept) and succeeds
    tiny.put(rel, GOOD[rel])
    fixed = build(name, mirror=str(tiny.mirror), root=tiny.root)
    assert fixed["available"] is True, fixed.get("reason")
    assert_nothing_invalid(tiny, name)
    assert load(name, tiny.root)["X_train"].shape == registry.DATASETS[name].shapes["X_train"]


def test_a_good_build_records_provenance_and_shared_modes(tiny):
    side = build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    assert side["available"]
    src = side["sources"][TEST]
    assert src["sha256"] == hashlib.sha256(GOOD[TEST]).hexdigest()
    assert src["source"].startswith("mirror-folder") and src["verified_by"].startswith("parsed as libsvm")
    assert side["sources"][TRAIN]["verified_by"].startswith("sha256:")
    assert json.loads((tiny.raw / (TEST + ".provenance.json")).read_text())["sha256"] == src["sha256"]
    umask = os.umask(0)
    os.umask(umask)
    for p in (tiny.raw / TEST, tiny.raw / TRAIN, tiny.processed / "gisette.npz", tiny.processed / "gisette.json"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask, p


def test_no_mirror_offline_hint_says_set_a_mirror(tiny):
    side = build("gisette", mirror=None, root=tiny.root)
    assert not side["available"] and "offline mode is on and no data mirror is set" in side["reason"]
    assert "set a data mirror" in side["reason"]
    assert_nothing_invalid(tiny, "gisette")


def test_mirror_folder_that_does_not_exist(tiny):
    side = build("gisette", mirror=str(tiny.mirror / "nope"), root=tiny.root)
    assert not side["available"] and str(tiny.mirror / "nope") in side["reason"]
    assert_nothing_invalid(tiny, "gisette")


@pytest.mark.parametrize("cached", [b"garbage", libsvm_bz2(2)], ids=["garbage", "wrong shape"])
def test_unverified_cached_file_is_parsed_deleted_and_fetched_again(tiny, cached):
    """A file from before verification existed (no provenance record) is not trusted on first use."""
    (tiny.raw / TEST).parent.mkdir(parents=True)
    (tiny.raw / TEST).write_bytes(cached)
    side = build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    assert side["available"] and side["sources"][TEST]["sha256"] == hashlib.sha256(GOOD[TEST]).hexdigest()
    assert_nothing_invalid(tiny, "gisette")


def test_verified_file_changed_afterwards_is_checked_again(tiny):
    fetch(TEST, mirror=str(tiny.mirror), cache=tiny.raw)
    (tiny.raw / TEST).write_bytes(libsvm_bz2(2))  # replaced behind our back: sha256 no longer matches the record
    assert cache_status(tiny.raw)[TEST] == "unverified"
    (tiny.mirror / TEST).unlink()
    with pytest.raises(FetchError, match="failed verification"):
        fetch(TEST, mirror=str(tiny.mirror), cache=tiny.raw)
    assert not (tiny.raw / TEST).exists()


@pytest.mark.parametrize("how", ["truncated", "deleted", "flipped byte", "sidecar garbage"])
def test_damaged_processed_file_is_not_available_and_is_rebuilt(tiny, how):
    build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    before = attempt("gisette", str(tiny.mirror), root=tiny.root)
    npz = tiny.processed / "gisette.npz"
    data = npz.read_bytes()
    if how == "truncated":
        npz.write_bytes(data[: len(data) // 2])
    elif how == "deleted":
        npz.unlink()
    elif how == "flipped byte":
        npz.write_bytes(data[:200] + bytes([data[200] ^ 0xFF]) + data[201:])
    else:
        (tiny.processed / "gisette.json").write_text("{not json")
    ok, why = is_available("gisette", tiny.root)
    assert not ok and "gisette" in why and ("rebuild" in why or "build it" in why), why
    with pytest.raises(DatasetUnavailable):
        load("gisette", tiny.root)
    assert attempt("gisette", str(tiny.mirror), root=tiny.root) != before  # the workflow re-runs the rule
    assert build("gisette", mirror=str(tiny.mirror), root=tiny.root)["available"]
    assert is_available("gisette", tiny.root) == (True, "")


def test_an_npz_is_hashed_once_per_state_in_a_process(tiny, monkeypatch):
    """An item checks each of its datasets several times (11 hashes of large files in one XU job): once per state
    of the file, and a write in place (same size) is seen."""
    from repro_dpadmm.datasets import processed

    build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    calls, digest = [], processed.sha256sum
    monkeypatch.setattr(processed, "sha256sum", lambda path: calls.append(path) or digest(path))
    assert all(is_available("gisette", tiny.root)[0] for _ in range(3)) and len(calls) == 1
    npz = tiny.processed / "gisette.npz"
    data = npz.read_bytes()
    npz.write_bytes(data[:200] + bytes([data[200] ^ 0xFF]) + data[201:])
    assert not is_available("gisette", tiny.root)[0] and len(calls) == 2


def test_a_rebuild_that_cannot_fetch_keeps_a_whole_earlier_build_and_removes_a_damaged_one(tiny):
    """A mirror that cannot serve the files (a bad --mirror by hand) never costs a verified build: the npz that
    matches its recorded checksum stays, the sidecar says why; a damaged npz goes, so no stale array outlives it."""
    first = build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    assert first["available"]
    built = (tiny.processed / "gisette.json").stat().st_mtime_ns
    (tiny.raw / TEST).unlink()
    (tiny.mirror / TEST).unlink()
    kept = build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    assert kept["available"] and "was kept" in kept["kept"] and kept["npz"] == first["npz"]
    # the sidecar keeps its time (the data are the earlier build's): no item on it looks out of date
    assert (tiny.processed / "gisette.json").stat().st_mtime_ns == built
    assert (tiny.processed / "gisette.npz").is_file()
    (tiny.processed / "gisette.npz").write_bytes(b"damaged")
    assert not build("gisette", mirror=str(tiny.mirror), root=tiny.root)["available"]
    assert not (tiny.processed / "gisette.npz").exists()


def test_a_rebuild_with_other_options_that_cannot_fetch_keeps_the_earlier_build_saying_so(tiny, capsys, monkeypatch):
    """A what-if rebuild (`data build --options ...`) whose files cannot be had keeps the verified earlier build
    whatever options it was built with: its npz stays, the sidecar keeps the options it was built with and says the
    others were asked for; the command says it was not rebuilt."""
    first = build("bio_train", mirror=str(tiny.mirror), root=tiny.root, options={"split_seed": 0})
    assert first["available"] and first["options"] == {"split_seed": 0}
    (tiny.raw / ARCHIVE).unlink()
    (tiny.mirror / ARCHIVE).unlink()
    kept = build("bio_train", mirror=str(tiny.mirror), root=tiny.root, options={"split_seed": 7})
    assert kept["available"] and kept["npz"] == first["npz"] and kept["options"] == {"split_seed": 0}
    assert 'built with the options {"split_seed": 0}, not the {"split_seed": 7} asked for' in kept["kept"]
    assert is_available("bio_train", tiny.root) == (True, "")
    from repro_dpadmm.cli import main

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tiny.root))
    assert main(["data", "build", "bio_train", "--mirror", str(tiny.mirror), "--options", '{"split_seed": 3}']) == 0
    err = capsys.readouterr().err
    assert err.startswith("bio_train: not rebuilt;") and '{"split_seed": 3} asked for' in err
    assert (tiny.processed / "bio_train.npz").is_file()


def test_attempt_state_retries_a_failure_only_when_something_changed(tiny):
    """The rule's params: stable while nothing changes, different once the mirror is fixed or another is set."""
    (tiny.mirror / TEST).unlink()
    state = attempt("gisette", str(tiny.mirror), root=tiny.root)
    build("gisette", mirror=str(tiny.mirror), root=tiny.root, attempt_state=state)
    again = attempt("gisette", str(tiny.mirror), root=tiny.root)
    assert again != state  # the build put the (good) training file in the cache: one more retry, then stable
    build("gisette", mirror=str(tiny.mirror), root=tiny.root, attempt_state=again)
    assert attempt("gisette", str(tiny.mirror), root=tiny.root) == again  # nothing changed: no re-run
    assert attempt("gisette", str(tiny.root), root=tiny.root) != again  # another mirror in force: re-run
    tiny.put(TEST, GOOD[TEST])  # the mirror is fixed
    fixed = attempt("gisette", str(tiny.mirror), root=tiny.root)
    assert fixed != again
    build("gisette", mirror=str(tiny.mirror), root=tiny.root, attempt_state=fixed)
    tiny.put(TEST, GOOD[TEST])  # an intact dataset does not re-run when its mirror changes afterwards
    assert attempt("gisette", str(tiny.mirror), root=tiny.root) == fixed
    assert attempt("gisette", None, root=tiny.root) == fixed


def test_network_failure_is_retried_after_an_hour(tiny, monkeypatch):
    monkeypatch.delenv("REPRO_DPADMM_OFFLINE")
    from repro_dpadmm.datasets import processed

    (tiny.mirror / TEST).unlink()
    state = attempt("gisette", str(tiny.mirror), root=tiny.root, now=1000.0)
    monkeypatch.setattr(processed, "fetch", lambda rel, **kw: (_ for _ in ()).throw(FetchError("no network")))
    build("gisette", mirror=str(tiny.mirror), root=tiny.root, attempt_state=state)
    assert attempt("gisette", str(tiny.mirror), root=tiny.root, now=1000.0 + 60) == state
    later = attempt("gisette", str(tiny.mirror), root=tiny.root, now=1000.0 + processed.RETRY_NETWORK_AFTER_S + 1)
    assert later != state


def test_mirror_flag_wins_over_the_environment(tiny, monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", str(tiny.root / "no-such-mirror"))
    assert fetch(TRAIN, mirror=str(tiny.mirror), cache=tiny.raw).source.startswith("mirror-folder " +
                                                                                   str(tiny.mirror))
    from repro_dpadmm.cli import main

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tiny.root))
    assert main(["data", "fetch", "bio_train", "--mirror", str(tiny.mirror)]) == 0


@pytest.mark.parametrize("state", ['{"a": NaN}', '{"local": {"x": [Infinity]}}', '{"a": 1e400}'])
def test_data_build_refuses_a_non_finite_attempt_state_before_any_work(tiny, monkeypatch, capsys, state):
    """--attempt is recorded in the sidecar as given, and no schema checks it: NaN or Infinity there would make the
    new sidecar unreadable, so it is refused as --options is, before anything is fetched or written."""
    from repro_dpadmm.cli import main
    from repro_dpadmm.datasets import processed

    tiny.root.mkdir()
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tiny.root))
    monkeypatch.setattr(processed, "fetch", lambda *a, **k: pytest.fail("fetched despite a bad --attempt"))
    assert main(["data", "build", "bio_train", "--mirror", str(tiny.mirror), "--attempt", state]) == 2
    err = capsys.readouterr().err
    assert err.startswith("repro-dpadmm: error: --attempt") and "not a finite number" in err
    assert not tiny.processed.exists()


def test_a_sidecar_that_is_a_fifo_or_a_link_to_a_device_is_damaged_not_missing(tiny):
    """`data list` said "not built" for a sidecar that is there but no regular file (and never opens it)."""
    import os

    from repro_dpadmm.datasets.processed import state

    build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    side = tiny.processed / "gisette.json"
    side.unlink()
    os.mkfifo(side)
    what, why = state("gisette", tiny.root)
    assert what == "damaged" and "is not a regular file" in why, (what, why)
    side.unlink()
    side.symlink_to("/dev/zero")
    assert state("gisette", tiny.root)[0] == "damaged"


def test_data_list_says_damaged_for_an_unreadable_sidecar(tiny, capsys, monkeypatch):
    """A sidecar that is not valid JSON is "damaged" (rebuild it), as a damaged npz is, not "unavailable" (which says
    its build could not have the files); a missing one is "not built"."""
    from repro_dpadmm.cli import main

    build("gisette", mirror=str(tiny.mirror), root=tiny.root)
    build("bio_train", mirror=str(tiny.mirror), root=tiny.root)
    (tiny.processed / "gisette.json").write_text("{")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tiny.root))
    assert main(["data", "list"]) == 0
    states = {ln.split()[0]: ln.split()[1:3] for ln in capsys.readouterr().out.splitlines()}
    assert states["gisette"][0] == "damaged" and states["bio_train"][0] == "available"
    assert states["a9a"] == ["not", "built"]
    ok, why = is_available("gisette", tiny.root)
    assert not ok and "gisette.json:1: not valid JSON" in why and "repro-dpadmm data build gisette" in why


def test_a_rebuild_whose_files_fail_verification_keeps_the_earlier_build(tiny, monkeypatch):
    """A mirror's archive of the right shape but holding NaN passed the parse-and-shape check, failed the later
    non-finite check, and cost the verified earlier build; it is kept, saying why."""
    from _data_faults import nan_in_x_train

    first = build("bio_train", mirror=str(tiny.mirror), root=tiny.root)
    assert first["available"]
    nan_in_x_train(monkeypatch)
    kept = build("bio_train", mirror=str(tiny.mirror), root=tiny.root)
    assert kept["available"] and kept["npz"] == first["npz"] and (tiny.processed / "bio_train.npz").is_file()
    assert "read files that failed verification" in kept["kept"] and "non-finite values" in kept["kept"]
    # the poisoned copy (no published checksum) leaves the cache, so a mended mirror is read by the next build
    from repro_dpadmm.paths import raw_dir

    assert not (raw_dir(tiny.root) / ARCHIVE).exists() and "cached copy was removed" in kept["kept"]
