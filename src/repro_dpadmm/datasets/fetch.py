"""Download raw dataset files: cached, verified, atomic, mirror-able (pooch's public `retrieve` does the transfer,
through this module's downloaders: a capped copy from a folder, urllib for a URL).

Order of sources for one file: the local cache (`resources/raw/<relpath>`, used only if verified), then the data
mirror (a local folder or a URL base laid out like the canonical servers), then the canonical URL (unless offline
mode is on: `REPRO_DPADMM_OFFLINE=1`). The mirror in force is the one given explicitly (the `--mirror` flag, the
workflow's resolved setting), else `REPRO_DPADMM_DATA_MIRROR`, else the config key `data_mirror`.

Verification: a file with a published checksum must match it (pooch downloads into a temporary file, checks the hash
and only then moves it to the final name). A file without one (gisette_scale.t.bz2, the KDD Cup 2004 archive) is
downloaded into `resources/raw/.incoming/`, parsed (`verify.check`: format and shape) and only then moved to its
final name; a copy that fails is deleted and the next source is tried. Every stored file gets a provenance record
`<file>.provenance.json` (sha256, where it came from, how it was verified); an unchecksummed cached file is reused
only while its bytes match the recorded sha256, otherwise it is parsed again. Nothing unverified ever carries a final
name.

Size caps (registry.py; README.md#size-caps): a mirror folder's file whose size differs from the registry's known
size is refused before a byte is copied, and every copy (mirror folder, mirror URL, canonical URL) stops with
`SizeCapError` past the file's `served_cap`, so a sparse or endless file never fills the disk.

Deadlines (README.md#size-caps): a transfer from a URL, all its attempts together, must end within `deadline(raw)`
seconds (the file's size, or its cap, at MIN_RATE; at least MIN_DEADLINE_S; REPRO_DPADMM_FETCH_DEADLINE_S sets
it), when its sockets are shut down, so a server that drips bytes or never answers cannot hold a fetch; a connect
waits at most CONNECT_TIMEOUT_S, a read at most `timeout`. A source that timed out is not tried again for the file.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import socket
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from .. import locks, safeload
from ..safeload import printable, redact
from ..paths import raw_dir
from . import verify
from .capped import copy_capped
from .registry import RAW_FILES, RawFile, SizeCapError

MIRROR_ENV = "REPRO_DPADMM_DATA_MIRROR"
OFFLINE_ENV = "REPRO_DPADMM_OFFLINE"
DEADLINE_ENV = "REPRO_DPADMM_FETCH_DEADLINE_S"
# A URL transfer's deadline (README.md#size-caps): its file's size at MIN_RATE bytes per second, at least
# MIN_DEADLINE_S; a per-read timeout alone lets a server that drips a byte every few seconds hold a fetch for ever.
MIN_RATE = 50_000
MIN_DEADLINE_S = 60.0
CONNECT_TIMEOUT_S = 10.0
CHUNK = 2**16
INCOMING = ".incoming"
STAGE_PREFIX = "fetch-"   # resources/raw/.incoming/fetch-<pid>@<host>.<random>/: one staging folder per process


def _pooch():
    """pooch, imported on first use (most processes import this module but never fetch: every job loads processed
    data through `datasets`), its download log quietened: pooch logs every download at INFO; our callers report
    what happened. Its import of tqdm.auto (for progress bars we never ask for) is kept from warning, in a notebook
    kernel without ipywidgets, that the notebook bar is unavailable: that TqdmWarning would stand in every item's
    output and log."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import pooch

    pooch.get_logger().setLevel("WARNING")
    return pooch


class FetchError(RuntimeError):
    """A raw file could not be had from any source (its message never holds an address's credentials)."""

    def __init__(self, *args):
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


@dataclass(frozen=True)
class Source:
    kind: str  # "mirror-folder", "mirror-url", "canonical"
    location: str

    @property
    def network(self) -> bool:
        return self.kind != "mirror-folder"


@dataclass(frozen=True)
class Fetched:
    """A verified raw file: where it is, its sha256 and where it came from."""

    path: Path
    sha256: str
    source: str
    verified_by: str


def resolve_mirror(flag: str | None = None, config_mirror: str | None = None) -> str | None:
    """The data mirror in force: an explicit setting (CLI flag) wins over the environment, which wins over config.
    ValueError for a file:// address that names no folder of this machine (a host, or no path)."""
    mirror = flag or os.environ.get(MIRROR_ENV) or config_mirror or None
    said = "--mirror" if flag else MIRROR_ENV if os.environ.get(MIRROR_ENV) else "data_mirror"
    if mirror and mirror.startswith("~"):
        try:
            Path(mirror).expanduser()
        except RuntimeError:   # ~user of no such user: pathlib cannot say where it is
            raise ValueError(f"{said} {printable(redact(mirror))}: no such user's home folder") from None
    scheme = mirror.split("://", 1)[0].lower() if mirror and "://" in mirror else None
    if scheme not in (None, "http", "https", "file"):   # urllib would try ftp:// and others file by file, then fail
        raise ValueError(f"{said} {printable(redact(mirror))}: a mirror is a folder, a file:// address or an http(s) "
                         f"URL, not {printable(scheme)}://")
    if scheme in ("http", "https"):   # a malformed address failed file by file, each as a "checksum mismatch"
        why = _url_problem(mirror)
        if why:
            raise ValueError(f"{said} {printable(redact(mirror))}: not a valid {scheme} URL ({why}); give "
                             f"{scheme}://host[:port]/path")
    if mirror and mirror.lower().startswith("file://"):
        parts = urlsplit(mirror)
        if parts.netloc not in ("", "localhost") or not unquote(parts.path).strip("/"):
            raise ValueError(f"{said} {printable(redact(mirror))}: a file:// address names a folder of this machine, "
                             "file:///path/to/mirror (or file://localhost/path); "
                             + (f"'{printable(parts.netloc)}' is a host" if parts.netloc not in ("", "localhost")
                                else "it names no folder"))
    if mirror and scheme in (None, "file"):   # a file or a FIFO given for the folder: every file "not in the mirror"
        local = Path(unquote(urlsplit(mirror).path) if scheme else mirror).expanduser()
        try:
            mode = local.stat().st_mode
        except OSError:   # not there (yet): each file is then said to be missing from it
            mode = None
        if mode is not None and not stat.S_ISDIR(mode):
            kind = "FIFO" if stat.S_ISFIFO(mode) else "file" if stat.S_ISREG(mode) else "special file"
            raise ValueError(f"{said} {printable(redact(mirror))}: a {kind}, not a folder (a mirror is a folder "
                             "holding the raw files in their sources' layout)")
    return mirror


def _url_problem(url: str) -> str:
    """Why an http(s) address cannot be fetched from at all ('' if it may): what urllib refuses (an unclosed '[' of
    an IPv6 host, a port that is no number of 0..65535), no host, or whitespace or control characters."""
    try:
        parts = urlsplit(url)
        parts.port   # raises for a port that is no number or is out of range
    except ValueError as exc:
        return printable(str(exc))
    if not parts.hostname:
        return "it names no host"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "it holds whitespace or control characters"
    return ""


def offline() -> bool:
    """REPRO_DPADMM_OFFLINE: 1, true, yes or on; 0, false, no, off or unset. Any other value is an error naming it
    (`ON` and `on` were silently online)."""
    text = os.environ.get(OFFLINE_ENV, "").strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"", "0", "false", "no", "off"}:
        return False
    raise ValueError(f"{OFFLINE_ENV}={printable(os.environ[OFFLINE_ENV])}: give 1 (or true, yes, on) to skip the "
                     "canonical URLs, 0 (or false, no, off) or nothing to use them")


def sources(raw: RawFile, mirror: str | None) -> list[Source]:
    out: list[Source] = []
    if mirror:
        if mirror.lower().startswith("file://"):   # a local folder written as a URL: served as the folder it names
            mirror = unquote(urlsplit(mirror).path)
        if "://" in mirror:
            out.append(Source("mirror-url", mirror.rstrip("/") + "/" + raw.relpath))
        else:
            out.append(Source("mirror-folder", str(Path(mirror).expanduser().resolve() / raw.relpath)))
    if not offline():
        out.append(Source("canonical", raw.url))
    return out


class NotARegularFile(OSError):
    """A mirror folder's entry of the file's name that is a folder, FIFO or device (or a link to one): never opened."""


def _copy_downloader(raw: RawFile):
    """pooch downloader for a mirror that is a local folder (pooch itself rejects file:// and bare paths): the
    file's size is compared with the registry's before copying, and the copy is capped at `raw.served_cap`."""
    def download(url: str, output_file, pooch_obj, check_only: bool = False):
        src = Path(url)
        if check_only:
            return src.is_file()
        if not src.is_file():
            if src.exists():   # a folder, FIFO or device of the file's name: never opened (a FIFO would block)
                kind = "a folder" if src.is_dir() else "a FIFO" if src.is_fifo() else "a device or other special file"
                raise NotARegularFile(f"in the mirror folder but {kind}, not a regular file: {src}")
            if os.path.lexists(src):   # a link to nothing (a missing target, or a loop of links)
                raise NotARegularFile(f"in the mirror folder but a link that leads to no file: {src}")
            raise FileNotFoundError(f"not in the mirror folder: {src}")
        wrong_size = _size_problem(raw, src.stat().st_size)
        if wrong_size:
            raise SizeCapError(f"{src.name}: {wrong_size}; not copied")
        with open(src, "rb") as fh:
            _write_capped(fh, output_file, raw.served_cap, str(src))
        return None
    return download


def _size_problem(raw: RawFile, size: int) -> str:
    """Why a copy of `raw` of `size` bytes is refused ('' if it is not): the registry's exact size, or its cap."""
    if raw.size is not None and size != raw.size:
        return f"{size:,} bytes, but {raw.relpath} has {raw.size:,}"
    if size > raw.served_cap:
        return f"{size:,} bytes, more than the {raw.served_cap:,} a copy of {raw.relpath} may have"
    return ""


def deadline_override() -> float | None:
    """REPRO_DPADMM_FETCH_DEADLINE_S when set (a positive number of seconds: every URL transfer's deadline), else
    None; a ValueError naming the variable otherwise."""
    seconds = safeload.env_number(DEADLINE_ENV)
    if seconds is None:
        return None
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{DEADLINE_ENV}: must be a positive number of seconds, got {os.environ[DEADLINE_ENV]!r}")
    return seconds


def deadline(raw: RawFile) -> float:
    """Seconds a transfer of `raw` from a URL may take in all (connecting, every retry, every byte): the time its
    size (or, unknown, its cap) takes at MIN_RATE, at least MIN_DEADLINE_S; REPRO_DPADMM_FETCH_DEADLINE_S instead
    when set."""
    override = deadline_override()
    return override if override is not None else max(MIN_DEADLINE_S, raw.served_cap / MIN_RATE)


def _seconds(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.3g}"


class FetchTimeout(TimeoutError):
    """A URL that did not serve a file within its deadline, or sent nothing for a whole read timeout: that source is
    not tried again for the file (a retry would wait as long again)."""


def _shutdown(sock) -> None:
    try:   # the plain socket's shutdown, also for a TLS one: its own would unwrap it under a reading thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _Watchdog:
    """Shuts the sockets of one transfer down once `seconds` have passed: a read blocked on a server that drips a
    byte now and then (each within the read timeout) or never answers then returns at once."""

    def __init__(self, seconds: float):
        self.expired, self._socks, self._lock = False, [], threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def add(self, sock) -> None:
        with self._lock:
            self._socks.append(sock)
            late = self.expired
        if late:
            _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            socks = list(self._socks)
        for sock in socks:
            _shutdown(sock)

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()


def _tls():
    """The system's certificate authorities, and certifi's where it is installed (those requests trusts)."""
    import ssl

    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(certifi.where())
    except (ImportError, OSError):
        pass
    return context


def _opener(dog: _Watchdog, read_timeout: float):
    """A urllib opener for http and https only (proxies from the environment, redirects followed) whose every
    connection is watched by `dog` and waits at most `read_timeout` for each read."""
    import urllib.request

    def watched(handler, **kwargs):
        class Handler(handler):
            def do_open(self, http_class, req, **conn_args):
                class Connection(http_class):
                    def connect(self):
                        super().connect()
                        self.sock.settimeout(read_timeout)
                        dog.add(self.sock)
                return super().do_open(Connection, req, **conn_args)
        return Handler(**kwargs)

    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(),
                    watched(urllib.request.HTTPHandler), watched(urllib.request.HTTPSHandler, context=_tls()),
                    urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPRedirectHandler(),
                    urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _request(url: str, method: str):
    """The urllib request for `url`; an address's user:password (urllib would take it for part of the host name) is
    sent as HTTP basic authentication, to that host only (not to one it redirects to)."""
    import base64
    import urllib.request

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return urllib.request.Request(url, method=method, headers={"User-Agent": "repro-dpadmm"})
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    request = urllib.request.Request(urlunsplit(parts._replace(netloc=host)), method=method,
                                     headers={"User-Agent": "repro-dpadmm"})
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    request.add_unredirected_header("Authorization", f"Basic {token}")
    return request


def _http_downloader(raw: RawFile, timeout: float, ends: float, seconds: float):
    """A pooch downloader for a URL (a mirror's or the canonical one), writing through a cap of `raw.served_cap`
    bytes (a URL may serve without end) and finished by `ends` (time.monotonic()), the deadline of `seconds` that
    all attempts at this source share: past it FetchTimeout naming the deadline (fetch names the file and the
    address). No connect waits more than CONNECT_TIMEOUT_S, no read more than `timeout`."""
    import http.client
    import urllib.request

    def download(url: str, output_file, pooch_obj, check_only: bool = False):
        if check_only or hasattr(output_file, "write"):
            return transfer(url, None if check_only else output_file)
        with open(output_file, "w+b") as fh:
            return transfer(url, fh)

    def late(writer) -> FetchTimeout:
        got = f"{writer.count:,} of {raw.size:,} bytes" if writer and raw.size else \
            f"{writer.count:,} bytes" if writer else "nothing"
        return FetchTimeout(f"not complete within its deadline of {_seconds(seconds)} s ({got} received; "
                            f"{DEADLINE_ENV} sets the deadline); not tried again")

    def transfer(url: str, out):
        left = ends - time.monotonic()
        writer = _CappedWriter(out, raw.served_cap, f"{url}: the download") if out is not None else None
        if left <= 0:
            raise late(writer)
        request = _request(url, "GET" if out is not None else "HEAD")
        with _Watchdog(left) as dog:
            try:
                with _opener(dog, timeout).open(request, timeout=min(CONNECT_TIMEOUT_S, timeout, left)) as resp:
                    if writer is None:
                        return resp.status == 200
                    while chunk := resp.read(CHUNK):
                        writer.write(chunk)
                        if time.monotonic() > ends:
                            break
            except (OSError, ValueError, http.client.HTTPException) as exc:
                if dog.expired or time.monotonic() > ends:   # the watchdog ended it: whatever the read raised
                    raise late(writer) from None
                if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
                    raise FetchTimeout(f"no answer for {_seconds(min(timeout, left))} s (its deadline is "
                                       f"{_seconds(seconds)} s; {DEADLINE_ENV} sets it); not tried again") from None
                raise
        if dog.expired or time.monotonic() > ends:   # a shut socket can look like the end of the file
            raise late(writer)
        return None
    return download


class _CappedWriter:
    """A binary file object that raises SizeCapError instead of writing past `cap` bytes."""

    def __init__(self, fh, cap: int, what: str):
        self._fh, self.cap, self.what, self.count = fh, cap, what, 0

    def write(self, data: bytes) -> int:
        if self.count + len(data) > self.cap:
            raise SizeCapError(f"{self.what} exceeds {self.cap:,} bytes, the cap for this file; stopped")
        self.count += len(data)
        return self._fh.write(data)

    def flush(self) -> None:
        self._fh.flush()


def _write_capped(src, output_file, cap: int, what: str) -> None:
    if hasattr(output_file, "write"):
        copy_capped(src, output_file, cap, what)
    else:
        with open(output_file, "wb") as out:
            copy_capped(src, out, cap, what)


def sha256sum(path: Path) -> str:
    return _pooch().file_hash(str(path), alg="sha256")


def _matches(path: Path, known_hash: str) -> bool:
    alg, want = known_hash.split(":")
    return _pooch().file_hash(str(path), alg=alg) == want


def _readable(path: Path) -> None:
    """Files are shared (README: resources/raw/ can serve as a mirror): the umask's mode, not a temp file's 0600."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + ".provenance.json")


def _record(target: Path) -> dict:
    try:
        return safeload.load_json(_record_path(target), expect=dict)
    except safeload.LoadError:
        return {}


def _write_record(target: Path, fetched: Fetched) -> None:
    rec = _record_path(target)
    tmp = rec.with_name(f".{rec.name}.{os.getpid()}.{secrets.token_hex(4)}.part")  # unique: concurrent fetches
    tmp.write_text(json.dumps({"sha256": fetched.sha256, "source": fetched.source,
                               "verified_by": fetched.verified_by}, indent=2, sort_keys=True) + "\n")
    _readable(tmp)
    os.replace(tmp, rec)


def _download(src: Source, dest: Path, raw: RawFile, retries: int, timeout: float, seconds: float) -> None:
    """pooch.retrieve into dest (a temporary file beside it, size-capped, hash-checked, then moved); network errors
    retried within the source's deadline of `seconds`."""
    pooch = _pooch()
    if src.kind == "mirror-folder":
        downloader, attempts = _copy_downloader(raw), 1
    else:
        downloader = _http_downloader(raw, timeout, time.monotonic() + seconds, seconds)
        attempts = retries + 1
    for attempt in range(attempts):
        try:
            pooch.retrieve(src.location, raw.known_hash, fname=dest.name, path=dest.parent, downloader=downloader)
            return
        except (ValueError, FetchTimeout):  # checksum mismatch or size cap (pooch deleted its temporary file), or
            raise                           # a source that timed out: a retry gives the same, or waits as long again
        except Exception:
            if attempt == attempts - 1:
                raise


def fetch(relpath: str, *, mirror: str | None = None, cache: Path | None = None, retries: int = 2,
          timeout: float = 30.0) -> Fetched:
    """Return a verified raw file, downloading it if needed (see the module docstring for the rules).

    Raises FetchError naming the file, every source tried, why each failed, and how to fix it.
    """
    try:
        raw = RAW_FILES[relpath]
    except KeyError:
        raise FetchError(f"unknown raw file {relpath!r}; known: {', '.join(sorted(RAW_FILES))}") from None
    cache = Path(cache) if cache is not None else raw_dir()
    target = cache / raw.relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    mirror = resolve_mirror(mirror)
    failures: list[str] = []

    if target.is_file():
        rec = _record(target)
        wrong_size = _size_problem(raw, target.stat().st_size)
        if wrong_size:
            failures.append(f"cached copy {target}: {wrong_size} (deleted)")
            target.unlink()
        elif raw.known_hash is not None:
            if _matches(target, raw.known_hash):
                return Fetched(target, sha256sum(target), rec.get("source", "cache"), raw.known_hash)
            failures.append(f"cached copy {target}: checksum mismatch (deleted)")
            target.unlink()
        else:
            digest = sha256sum(target)
            if rec.get("sha256") == digest:
                return Fetched(target, digest, rec.get("source", "cache"), rec.get("verified_by", ""))
            try:  # a copy from before verification existed, or changed since: parse it again
                how = verify.check(relpath, target)
                fetched = Fetched(target, digest, rec.get("source", "cache"), how)
                _write_record(target, fetched)
                return fetched
            except verify.VerificationError as exc:
                failures.append(f"cached copy {target}: failed verification, {exc} (deleted)")
                target.unlink()

    seconds = deadline(raw)   # before any source: a bad REPRO_DPADMM_FETCH_DEADLINE_S is an error, not a failure
    locks.sweep(cache / INCOMING, STAGE_PREFIX)  # staging folders of fetches that were killed
    with locks.signals_raise():
        stage = locks.owned_dir(cache / INCOMING, STAGE_PREFIX) if raw.known_hash is None else None
        try:
            fetched = _fetch_sources(relpath, raw, target, stage, mirror, failures, retries, timeout, seconds)
        finally:
            if stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
    if fetched is not None:
        return fetched
    _give_up(raw, target, mirror, failures)


def _fetch_sources(relpath: str, raw: RawFile, target: Path, stage: Path | None, mirror: str | None,
                   failures: list[str], retries: int, timeout: float, seconds: float) -> Fetched | None:
    """Try each source in turn; the verified file at `target`, or None with every failure in `failures`. A file
    without a published checksum is staged in `stage` (this process's own folder) until it parses."""
    for src in sources(raw, mirror):
        dest = target if stage is None else stage / Path(raw.relpath).name
        if dest != target and dest.exists():
            dest.unlink()  # the previous source's copy, which failed verification
        try:
            _download(src, dest, raw, retries, timeout, seconds)
        except FetchTimeout as exc:
            failures.append(f"{src.kind} {src.location}: timed out: {exc}")
            continue
        except SizeCapError as exc:
            failures.append(f"{src.kind} {src.location}: refused by size: {exc}")
            continue
        except ValueError as exc:
            failures.append(f"{src.kind} {src.location}: checksum mismatch ({str(exc).splitlines()[0]})")
            continue
        except Exception as exc:  # network errors, missing mirror file, HTTP errors
            # one line per source (urllib's redirect-loop message has several; a server's reason phrase is its own)
            said = " ".join(str(exc).split())
            failures.append(f"{src.kind} {src.location}: {type(exc).__name__}: "
                            f"{said if len(said) <= 300 else said[:299] + '…'}")
            continue
        if raw.known_hash is not None:
            how = raw.known_hash
        else:
            try:
                how = verify.check(relpath, dest)
            except verify.VerificationError as exc:
                dest.unlink()
                failures.append(f"{src.kind} {src.location}: no published checksum and it failed verification: "
                                f"{exc}")
                continue
            os.replace(dest, target)
        _readable(target)
        # the source as recorded (provenance record, sidecar): an address's user:password never written
        fetched = Fetched(target, sha256sum(target), f"{src.kind} {redact(src.location)}", how)
        _write_record(target, fetched)
        return fetched
    return None


def _give_up(raw: RawFile, target: Path, mirror: str | None, failures: list[str]):
    """Raise FetchError naming the file, every source tried, why each failed, and how to fix it."""
    if not any(not f.startswith("cached copy") for f in failures):
        failures.append("no source to try: offline mode is on and no data mirror is set" if offline()
                        else "no source to try")
    if mirror:
        fix = (f"check the data mirror in force ({mirror}): it must hold {raw.relpath} (a folder laid out like "
               f"uci/adult/adult.data, libsvm/binary/a9a, ...), or set another with `--mirror`, "
               f"`{MIRROR_ENV}` or the config key `data_mirror`")
    else:
        fix = (f"set a data mirror, e.g. `export {MIRROR_ENV}=/path/to/mirror` (a folder laid out like "
               "uci/adult/adult.data, libsvm/binary/a9a, ...) or a URL base, or the config key `data_mirror`")
    raise FetchError(f"could not obtain {raw.relpath}\n  tried:\n    - " + "\n    - ".join(failures)
                     + f"\n  fix: {fix}; or place a good copy at {target}")


def fetch_raw(relpath: str, **kwargs) -> Path:
    """The local path of a verified raw file (see `fetch`)."""
    return fetch(relpath, **kwargs).path


def cache_status(cache: Path | None = None) -> dict[str, str]:
    """For every registered raw file: 'verified', 'verified (parsed, sha256 recorded)', 'unverified', 'corrupt' or
    'missing'."""
    cache = Path(cache) if cache is not None else raw_dir()
    out = {}
    for relpath, raw in RAW_FILES.items():
        p = cache / relpath
        if not p.is_file():
            out[relpath] = "missing"
        elif raw.known_hash is None:
            recorded = _record(p).get("sha256")
            out[relpath] = "verified (parsed, sha256 recorded)" if recorded == sha256sum(p) else "unverified"
        else:
            out[relpath] = "verified" if _matches(p, raw.known_hash) else "corrupt"
    return out


def local_state(relpath: str, mirror: str | None, cache: Path) -> list:
    """What the local sources hold for a file, cheaply (name, size, mtime): a change means a retry may succeed."""
    out = []
    places = [cache / relpath]
    if mirror and "://" not in mirror:
        places.append(Path(mirror).expanduser().resolve() / relpath)
    for p in places:
        try:
            st = p.stat()
            out.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([str(p), None, None])
    return out
