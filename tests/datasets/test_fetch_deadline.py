"""A URL mirror that drips bytes or never answers cannot hang `data fetch` / `data build` (README.md#size-caps):
every transfer from a URL has an overall deadline (its file's size at 50 kB/s, at least a minute;
REPRO_DPADMM_FETCH_DEADLINE_S sets it), a source that timed out is not tried again, and the error names the file,
the address and the deadline. Local servers in threads play the hostile mirror; the deadline is set to a second or
two, so each test takes seconds."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from repro_dpadmm.datasets import fetch as fetch_mod
from repro_dpadmm.datasets.fetch import FetchError, deadline, fetch
from repro_dpadmm.datasets.registry import RAW_FILES, RawFile

A9A = "libsvm/binary/a9a"
LIFETIME_S = 8.0   # a hostile server gives up after this long, so that a fetch without a deadline fails, not hangs


class Hostile(http.server.BaseHTTPRequestHandler):
    """drip: headers of a 2.3 MB file, then a byte every 0.2 s; silent: reads the request, never answers;
    drip-headers: the status line, then header bytes one at a time."""

    def do_GET(self):
        self.server.requests.append(self.path)
        stop, mode = self.server.stop, self.server.mode
        if mode == "silent":
            stop.wait(LIFETIME_S)
            return
        if mode == "loop":   # a redirect to itself, for ever
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "drip":
            self.send_response(200)
            self.send_header("Content-Length", str(RAW_FILES[A9A].size))
            self.end_headers()
            drip = b"a" * 1000
        else:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            drip = b"X-Slow: " + b"b" * 900
        for byte in drip:
            if stop.wait(0.2) or time.monotonic() - self.server.started > LIFETIME_S:
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile(monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    monkeypatch.setenv("REPRO_DPADMM_FETCH_DEADLINE_S", "1.5")
    servers = []

    def start(mode: str):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
        server.mode, server.requests, server.stop, server.started = mode, [], threading.Event(), time.monotonic()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server, f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.stop.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["drip", "silent", "drip-headers"])
def test_a_url_that_drips_or_never_answers_fails_within_its_deadline_and_is_not_retried(hostile, tmp_path, mode):
    server, url = hostile(mode)
    t0 = time.monotonic()
    with pytest.raises(FetchError) as exc:
        fetch(A9A, mirror=url, cache=tmp_path / "cache", retries=2)
    elapsed = time.monotonic() - t0
    message = str(exc.value)
    assert elapsed < 5, f"{elapsed:.1f} s: {message}"
    assert server.requests == ["/" + A9A]   # timed out once: not tried again
    assert f"could not obtain {A9A}" in message and f"mirror-url {url}{A9A}: timed out" in message
    assert "deadline of 1.5 s" in message or "its deadline is 1.5 s" in message, message
    assert "REPRO_DPADMM_FETCH_DEADLINE_S" in message
    assert not (tmp_path / "cache" / A9A).exists()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]   # no temporary file left either


def test_data_fetch_through_a_dripping_mirror_ends_with_one_failed_line_per_file(hostile, tmp_path, monkeypatch,
                                                                                capsys):
    from repro_dpadmm.cli import main

    server, url = hostile("drip")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    (tmp_path / "config").mkdir()
    t0 = time.monotonic()
    assert main(["data", "fetch", "a9a", "--mirror", "http://alice:s3cr3t@" + url.removeprefix("http://")]) == 1
    assert time.monotonic() - t0 < 8
    err = capsys.readouterr().err
    assert err.count("FAILED") == 2 and "not complete within its deadline of 1.5 s" in err
    assert "s3cr3t" not in err and "http://<credentials>@127.0.0.1" in err
    assert len(server.requests) == 2   # a9a and a9a.t, once each


def test_the_deadline_follows_the_size_and_the_variable(monkeypatch):
    monkeypatch.delenv("REPRO_DPADMM_FETCH_DEADLINE_S", raising=False)
    assert deadline(RAW_FILES["uci/adult/adult.names"]) == fetch_mod.MIN_DEADLINE_S == 60
    assert deadline(RAW_FILES["uci/adult/adult.data"]) == pytest.approx(3974305 / 50_000)
    assert deadline(RawFile("x/unsized", None, None, max_content=10**9)) == pytest.approx(10**9 / 50_000)
    monkeypatch.setenv("REPRO_DPADMM_FETCH_DEADLINE_S", "7200")
    assert deadline(RAW_FILES["uci/adult/adult.data"]) == 7200


@pytest.mark.parametrize("value", ["0", "-3", "abc", "nan", "inf"])
def test_a_bad_deadline_variable_is_one_error_before_any_work(monkeypatch, tmp_path, capsys, value):
    from repro_dpadmm.cli import main

    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    monkeypatch.setenv("REPRO_DPADMM_FETCH_DEADLINE_S", value)
    monkeypatch.setattr(fetch_mod, "fetch", lambda *a, **k: pytest.fail("fetched despite a bad deadline"))
    for command in (["data", "fetch", "a9a"], ["data", "build", "a9a"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("repro-dpadmm: error: REPRO_DPADMM_FETCH_DEADLINE_S: must be a positive number")


def test_an_address_with_user_and_password_is_sent_basic_authentication(monkeypatch, tmp_path):
    """A mirror given as http://user:password@host/ (README) authenticates to that host; nothing of it is written."""
    import base64
    import hashlib

    rel, data = "libsvm/binary/demo", b"+1 1:0.5\n"
    monkeypatch.setitem(RAW_FILES, rel, RawFile(rel, len(data), "sha256:" + hashlib.sha256(data).hexdigest()))
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    want = "Basic " + base64.b64encode(b"alice:s3 cr3t").decode()
    seen = []

    class Guarded(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            ok = self.headers.get("Authorization") == want
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", str(len(data) if ok else 0))
            self.end_headers()
            if ok:
                self.wfile.write(data)

        def log_message(self, *args):
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Guarded) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            got = fetch(rel, mirror=f"http://alice:s3%20cr3t@127.0.0.1:{server.server_address[1]}/",
                        cache=tmp_path / "cache")
        finally:
            server.shutdown()
    assert seen == [want] and got.path.read_bytes() == data
    assert "s3" not in got.source and "<credentials>@127.0.0.1" in got.source
    assert "cr3t" not in (tmp_path / "cache" / (rel + ".provenance.json")).read_text()


def test_a_redirect_loop_is_one_line_per_source(hostile, tmp_path):
    """urllib's message for a redirect loop has several lines (and the server's reason phrase): under "tried:" each
    source is one line."""
    server, url = hostile("loop")
    with pytest.raises(FetchError) as exc:
        fetch(A9A, mirror=url, cache=tmp_path / "cache", retries=0)
    lines = str(exc.value).splitlines()
    tried = lines.index("  tried:")
    assert lines[tried + 1].startswith("    - mirror-url http://127.0.0.1:") and "HTTPError" in lines[tried + 1]
    assert lines[tried + 2].startswith("  fix: "), lines
