"""Fetching: offline from a local mirror, corrupted files rejected atomically, clear errors."""

import shutil

import pytest

from repro_dpadmm.datasets.fetch import FetchError, cache_status, fetch_raw, sha256sum
from repro_dpadmm.datasets.registry import RAW_FILES

REL = "uci/adult/adult.names"


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)


def test_fetch_from_local_mirror_offline(mirror, offline, tmp_path):
    path = fetch_raw(REL, mirror=str(mirror), cache=tmp_path)
    assert path == tmp_path / REL
    assert "sha256:" + sha256sum(path) == RAW_FILES[REL].known_hash
    # second call is served from the verified cache even without any source
    assert fetch_raw(REL, mirror=None, cache=tmp_path) == path
    assert cache_status(tmp_path)[REL] == "verified"


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupted_mirror_file_is_rejected_and_nothing_is_left(mirror, offline, tmp_path, damage):
    bad_mirror = tmp_path / "mirror"
    (bad_mirror / "uci/adult").mkdir(parents=True)
    data = (mirror / REL).read_bytes()
    data = data[: len(data) // 2] if damage == "truncate" else data[:-10] + b"X" * 10
    (bad_mirror / REL).write_bytes(data)
    cache = tmp_path / "cache"
    with pytest.raises(FetchError) as exc:
        fetch_raw(REL, mirror=str(bad_mirror), cache=cache)
    msg = str(exc.value)
    # a copy of the wrong size is refused by its size before it is copied; one of the right size by its checksum
    why = "checksum mismatch" if damage == "flip" else f"{len(data):,} bytes, but {REL} has {RAW_FILES[REL].size:,}"
    assert REL in msg and why in msg and "REPRO_DPADMM_DATA_MIRROR" in msg
    assert not (cache / REL).exists()
    assert not [p for p in (cache / "uci/adult").iterdir()], "a temporary file was left behind"


def test_corrupt_cache_file_is_replaced_from_the_mirror(mirror, offline, tmp_path):
    (tmp_path / "uci/adult").mkdir(parents=True)
    (tmp_path / REL).write_bytes(b"garbage")
    assert cache_status(tmp_path)[REL] == "corrupt"
    path = fetch_raw(REL, mirror=str(mirror), cache=tmp_path)
    assert "sha256:" + sha256sum(path) == RAW_FILES[REL].known_hash


def test_no_network_and_no_mirror_gives_a_clear_error(offline, tmp_path):
    with pytest.raises(FetchError) as exc:
        fetch_raw(REL, mirror=None, cache=tmp_path)
    msg = str(exc.value)
    assert REL in msg and "offline" in msg and "REPRO_DPADMM_DATA_MIRROR" in msg
    assert not (tmp_path / REL).exists()


def test_mirror_without_the_file_names_the_path_tried(offline, tmp_path):
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    with pytest.raises(FetchError) as exc:
        fetch_raw("libsvm/binary/gisette_scale.bz2", mirror=str(empty), cache=tmp_path / "c")
    assert str(empty / "libsvm/binary/gisette_scale.bz2") in str(exc.value)


def test_mirror_from_environment(mirror, monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", str(mirror))
    assert fetch_raw(REL, cache=tmp_path).is_file()


def test_unknown_file_is_an_error(tmp_path):
    with pytest.raises(FetchError, match="unknown raw file"):
        fetch_raw("uci/nope", cache=tmp_path)


def test_http_mirror_base(mirror, offline, tmp_path):
    """A URL-base mirror goes through pooch's HTTP downloader (served here from a loopback server)."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a, **k: None
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/"
            assert fetch_raw(REL, mirror=url, cache=tmp_path).is_file()
        finally:
            server.shutdown()
    shutil.rmtree(tmp_path / "uci")


def test_a_file_url_mirror_is_served_as_the_folder_it_names(mirror, offline, tmp_path):
    """file:///folder is the folder, not a web address whose "download" fails with a checksum mismatch."""
    path = fetch_raw(REL, mirror=mirror.resolve().as_uri(), cache=tmp_path)
    assert "sha256:" + sha256sum(path) == RAW_FILES[REL].known_hash


@pytest.mark.parametrize("kind, said", [("folder", "a folder"), ("fifo", "a FIFO"),
                                        ("link to /dev/zero", "a device or other special file"),
                                        ("link to itself", "a link that leads to no file")])
def test_a_mirror_entry_that_is_not_a_regular_file_is_named_so_and_never_opened(offline, tmp_path, kind, said):
    """Named as what it is, never as a file that is not found (it is there); /dev/zero would never end."""
    import os

    bad = tmp_path / "mirror"
    (bad / "uci/adult").mkdir(parents=True)
    if kind == "folder":
        (bad / REL).mkdir()
    elif kind == "fifo":
        os.mkfifo(bad / REL)   # opening it would block: the fetch must not
    elif kind == "link to itself":
        (bad / REL).symlink_to(bad / REL)
    else:
        (bad / REL).symlink_to("/dev/zero")
    with pytest.raises(FetchError) as exc:
        fetch_raw(REL, mirror=str(bad), cache=tmp_path / "c")
    assert f"NotARegularFile: in the mirror folder but {said}" in str(exc.value) and str(bad / REL) in str(exc.value)
    assert "FileNotFoundError" not in str(exc.value)


def test_a_malformed_mirror_url_of_the_config_is_refused_naming_its_key(monkeypatch):
    """The Snakefile checks the config's data_mirror with resolve_mirror before any job: `http://[::1` failed each
    file as a 'checksum mismatch (Invalid IPv6 URL)'."""
    from repro_dpadmm.datasets.fetch import resolve_mirror

    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    with pytest.raises(ValueError, match=r"^data_mirror http://\[::1: not a valid http URL \(Invalid IPv6 URL\)"):
        resolve_mirror(None, "http://[::1")
    assert resolve_mirror(None, "http://[::1]:8080/datasets") == "http://[::1]:8080/datasets"
