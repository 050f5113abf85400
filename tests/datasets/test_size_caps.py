"""Size caps on raw dataset files (README.md#size-caps): a hostile mirror's file is refused by its size before it is
copied, copies stop at the file's cap, and decompressing / parsing stops at the content cap with an error naming the
file and the cap, never a hang.

Every crafted file here is a few kilobytes: the caps are made small through the registry (monkeypatch) or the
functions' own parameters, so nothing large is ever written.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import http.server
import io
import tarfile
import threading

import numpy as np
import pytest

from repro_dpadmm.datasets import bio, libsvm, registry, verify
from repro_dpadmm.datasets.capped import copy_capped, open_content
from repro_dpadmm.datasets.fetch import FetchError, fetch
from repro_dpadmm.datasets.registry import RAW_FILES, Dataset, RawFile, SizeCapError

A9A = "libsvm/binary/a9a"
TEST = "libsvm/binary/gisette_scale.t.bz2"
ARCHIVE = "kddcup2004/data_kddcup04.tar.gz"


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)


def put(root, rel, data: bytes):
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    return root / rel


def kdd_text(rows: int) -> bytes:
    rng = np.random.default_rng(0)
    return ("\n".join(" ".join(["1", str(i), str(i % 2)] + [f"{v:.2f}" for v in rng.normal(size=74)])
                      for i in range(rows)) + "\n").encode()


def tar_gz(members: list[tuple[str, bytes]], fmt=tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------ the registry
def test_every_registered_file_has_caps_at_least_its_real_size():
    """Caps are declared once, for every file: a known size is the copy cap, the content cap is CAP_FACTOR x the
    real content where known, else a declared maximum (gisette from its shape, the KDD archive)."""
    for rel, raw in RAW_FILES.items():
        assert raw.served_cap > 0 and raw.content_cap > 0, rel
        if raw.size is not None:
            assert raw.served_cap == raw.size, rel
        real = raw.content if raw.content is not None else raw.size
        if real is not None:
            assert raw.content_cap == registry.CAP_FACTOR * real, rel
    assert RAW_FILES[TEST].content_cap == 1000 * (5000 * 20 + 8)
    assert RAW_FILES["libsvm/binary/gisette_scale.bz2"].content_cap == 6000 * (5000 * 20 + 8)
    assert RAW_FILES[ARCHIVE].content_cap == registry.KDD_MAX_BYTES
    assert RAW_FILES["libsvm/binary/ijcnn1.t.bz2"].content == 14213968


# ------------------------------------------------------------------------------------------ copying (probe 7)
def test_mirror_file_of_the_wrong_size_is_refused_before_it_is_copied(offline, tmp_path, monkeypatch):
    """A mirror's a9a far larger (or smaller) than the registry's 2,329,875 bytes is refused from its size: the
    error names the file, its size and the expected size, and not a byte reaches the cache."""
    mirror = tmp_path / "mirror"
    put(mirror, A9A, b"+1 1:1\n" * 3)
    copied = []
    monkeypatch.setattr("repro_dpadmm.datasets.fetch.copy_capped", lambda *a, **k: copied.append(a))
    with pytest.raises(FetchError) as exc:
        fetch(A9A, mirror=str(mirror), cache=tmp_path / "cache")
    assert f"a9a: 21 bytes, but {A9A} has 2,329,875; not copied" in str(exc.value)
    assert not copied
    assert not (tmp_path / "cache" / A9A).exists()


def test_mirror_file_without_a_known_size_is_refused_past_its_cap(offline, tmp_path, monkeypatch):
    monkeypatch.setitem(registry.RAW_FILES, TEST, RawFile(TEST, None, None, max_content=1000))
    mirror = tmp_path / "mirror"
    put(mirror, TEST, b"x" * 1001)
    with pytest.raises(FetchError) as exc:
        fetch(TEST, mirror=str(mirror), cache=tmp_path / "cache")
    assert f"1,001 bytes, more than the 1,000 a copy of {TEST} may have" in str(exc.value)
    assert not (tmp_path / "cache" / TEST).exists()


def test_a_copy_stops_at_its_cap_even_if_the_source_grows():
    """The size check happens before the copy; the copy itself is capped too (a file can grow, a URL stream has no
    size): at most `cap` bytes are written, then SizeCapError names the source."""
    out = io.BytesIO()
    with pytest.raises(SizeCapError, match="source: more than 5,000 bytes"):
        copy_capped(io.BytesIO(b"x" * 20000), out, 5000, "source")
    assert len(out.getvalue()) <= 5000
    out = io.BytesIO()
    assert copy_capped(io.BytesIO(b"x" * 5000), out, 5000, "source") == 5000


def test_http_download_is_capped(offline, tmp_path, monkeypatch):
    """A URL mirror serving more than the file's cap is stopped (the download is not kept)."""
    monkeypatch.setitem(registry.RAW_FILES, TEST, RawFile(TEST, None, None, max_content=1000))
    served = tmp_path / "served"
    put(served, TEST, b"x" * 50000)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a, **k: None
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with pytest.raises(FetchError) as exc:
                fetch(TEST, mirror=f"http://127.0.0.1:{server.server_address[1]}/", cache=tmp_path / "cache",
                      retries=0)
        finally:
            server.shutdown()
    assert "exceeds 1,000 bytes, the cap for this file" in str(exc.value)
    assert not (tmp_path / "cache" / TEST).exists()


def test_cached_copy_of_the_wrong_size_is_deleted_without_hashing(offline, tmp_path):
    cache = tmp_path / "cache"
    put(cache, A9A, b"0123456789")
    with pytest.raises(FetchError) as exc:
        fetch(A9A, mirror=None, cache=cache)
    assert f"10 bytes, but {A9A} has 2,329,875 (deleted)" in str(exc.value)
    assert not (cache / A9A).exists()


# ----------------------------------------------------------------------------- decompression bomb (probe 5)
def bz2_bomb(line_bytes: int = 1000, lines: int = 20, streams: int = 5) -> bytes:
    """Concatenated bz2 streams of LIBSVM-looking lines: a few hundred bytes decompressing to line_bytes x lines x
    streams (the hostile gisette_scale.t.bz2 did the same at 46 KB -> 30 GB)."""
    line = b"+1 1:1 #" + b"a" * (line_bytes - 9) + b"\n"
    return bz2.compress(line * lines) * streams


def test_libsvm_content_is_read_through_its_cap(tmp_path):
    bomb = tmp_path / "gisette_scale.t.bz2"
    bomb.write_bytes(bz2_bomb())
    assert bomb.stat().st_size < 1000
    with pytest.raises(SizeCapError, match=r"gisette_scale.t.bz2 \(decompressed\): more than 10,000 bytes"):
        libsvm.load(bomb, 5, max_bytes=10_000)


def test_a_line_without_end_is_cut_at_the_cap(tmp_path):
    """One line of endless content (no newline) is never read whole into memory."""
    bomb = tmp_path / "x.bz2"
    bomb.write_bytes(bz2.compress(b"+1 1:" + b"1" * 100_000))
    with open_content(bomb, 1000) as fh:
        with pytest.raises(SizeCapError, match="more than 1,000 bytes"):
            fh.readline()
        assert fh.count == 1001


def test_hostile_unchecksummed_libsvm_file_fails_verification_naming_the_cap(offline, tmp_path, monkeypatch):
    """The fetch path of probe 5: gisette's test file has no checksum, so it is parsed; the parse stops at the
    registry's content cap and the copy is rejected (not kept) with the cap in the reason."""
    monkeypatch.setitem(registry.RAW_FILES, TEST, RawFile(TEST, None, None, max_content=10_000))
    monkeypatch.setitem(registry.DATASETS, "gisette", Dataset("gisette", ("libsvm/binary/gisette_scale.bz2", TEST),
                                                              "tiny", ("t",), {"X_train": (4, 5), "X_test": (3, 5)}))
    mirror = tmp_path / "mirror"
    put(mirror, TEST, bz2_bomb())
    with pytest.raises(FetchError) as exc:
        fetch(TEST, mirror=str(mirror), cache=tmp_path / "cache")
    msg = str(exc.value)
    assert "failed verification: gisette_scale.t.bz2 (decompressed): more than 10,000 bytes" in msg
    assert not (tmp_path / "cache" / TEST).exists()
    with pytest.raises(verify.VerificationError, match="more than 10,000 bytes"):
        verify.check(TEST, mirror / TEST)


def test_gzip_content_is_capped_too(tmp_path):
    f = tmp_path / "a.gz"
    f.write_bytes(gzip.compress(b"x" * 5000) * 3)   # concatenated gzip members
    with open_content(f, 10_000) as fh, pytest.raises(SizeCapError, match=r"a.gz \(decompressed\)"):
        fh.read()


# --------------------------------------------------------------------------------- tar archive (probe 6)
def test_archive_member_that_would_pass_the_cap_is_refused_from_its_header(tmp_path):
    """Junk members before bio_train.dat: the first one whose size would take the stream past the cap is refused
    before it is skipped (probe 6: 5 x 7 GiB of junk were streamed through)."""
    archive = tmp_path / "data_kddcup04.tar.gz"
    archive.write_bytes(tar_gz([("junk0", b"\0" * 30_000), ("junk1", b"\0" * 30_000),
                                ("bio_train.dat", kdd_text(3))]))
    with pytest.raises(SizeCapError, match=r"data_kddcup04.tar.gz: member 'junk1' of 30,000 bytes would take the "
                                           r"decompressed tar stream past 50,000 bytes"):
        bio.read_archive(archive, max_bytes=50_000)
    X, _ = bio.read_archive(archive, max_bytes=200_000)   # the same archive under a cap it fits
    assert X.shape == (3, 74)


def test_archive_members_are_bounded_in_number(tmp_path):
    archive = tmp_path / "data_kddcup04.tar.gz"
    archive.write_bytes(tar_gz([(f"j{i}", b"") for i in range(10)] + [("bio_train.dat", kdd_text(2))]))
    with pytest.raises(SizeCapError, match="no bio_train.dat among its first 4 members"):
        bio.read_archive(archive, max_members=4)
    assert bio.read_archive(archive, max_members=11)[0].shape == (2, 74)


def test_archive_headers_are_capped_by_the_stream_cap(tmp_path):
    """Bytes tarfile reads on its own (a pax header's records) count against the stream cap as well."""
    archive = tmp_path / "data_kddcup04.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("junk")
        info.pax_headers = {"comment": "c" * 50_000}
        tar.addfile(info, io.BytesIO(b""))
    archive.write_bytes(buf.getvalue())
    with pytest.raises(SizeCapError, match=r"data_kddcup04.tar.gz \(decompressed tar stream\): more than 20,000"):
        bio.read_archive(archive, max_bytes=20_000)


def test_hostile_archive_from_a_mirror_is_rejected_naming_the_cap(offline, tmp_path, monkeypatch):
    monkeypatch.setitem(registry.RAW_FILES, ARCHIVE, RawFile(ARCHIVE, None, None, max_content=30_000))
    mirror = tmp_path / "mirror"
    put(mirror, ARCHIVE, tar_gz([("junk0", b"\0" * 60_000), ("bio_train.dat", kdd_text(3))]))
    assert (mirror / ARCHIVE).stat().st_size < 30_000
    with pytest.raises(FetchError) as exc:
        fetch(ARCHIVE, mirror=str(mirror), cache=tmp_path / "cache")
    assert "member 'junk0' of 60,000 bytes would take the decompressed tar stream past 30,000 bytes" in str(exc.value)
    assert not (tmp_path / "cache" / ARCHIVE).exists()
