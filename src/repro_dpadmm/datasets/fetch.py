"""Download raw dataset files: cached, verified, atomic, mirror-able (pooch's public `retrieve` does the transfer).

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
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import locks, safeload
from ..safeload import redact
from ..paths import raw_dir
from . import verify
from .capped import copy_capped
from .registry import RAW_FILES, RawFile, SizeCapError

MIRROR_ENV = "REPRO_DPADMM_DATA_MIRROR"
OFFLINE_ENV = "REPRO_DPADMM_OFFLINE"
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
    """The data mirror in force: an explicit setting (CLI flag) wins over the environment, which wins over config."""
    return flag or os.environ.get(MIRROR_ENV) or config_mirror or None


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in {"1", "true", "yes"}


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


def _copy_downloader(raw: RawFile):
    """pooch downloader for a mirror that is a local folder (pooch itself rejects file:// and bare paths): the
    file's size is compared with the registry's before copying, and the copy is capped at `raw.served_cap`."""
    def download(url: str, output_file, pooch_obj, check_only: bool = False):
        src = Path(url)
        if check_only:
            return src.is_file()
        if not src.is_file():
            if src.exists():   # a folder, FIFO or device of the file's name: never opened (a FIFO would block)
                raise FileNotFoundError(f"in the mirror folder but not a regular file: {src}")
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


def _http_downloader(raw: RawFile, timeout: float):
    """pooch's HTTP downloader writing through a cap of `raw.served_cap` bytes (a URL may serve without end)."""
    inner = _pooch().HTTPDownloader(timeout=timeout, progressbar=False)

    def download(url: str, output_file, pooch_obj, check_only: bool = False):
        if check_only:
            return inner(url, output_file, pooch_obj, check_only=True)
        what = f"{url}: the download"
        if hasattr(output_file, "write"):
            return inner(url, _CappedWriter(output_file, raw.served_cap, what), pooch_obj)
        with open(output_file, "w+b") as fh:
            return inner(url, _CappedWriter(fh, raw.served_cap, what), pooch_obj)
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


def _download(src: Source, dest: Path, raw: RawFile, retries: int, timeout: float) -> None:
    """pooch.retrieve into dest (a temporary file beside it, size-capped, hash-checked, then moved); network errors
    retried."""
    pooch = _pooch()
    if src.kind == "mirror-folder":
        downloader, attempts = _copy_downloader(raw), 1
    else:
        downloader, attempts = _http_downloader(raw, timeout), retries + 1
    for attempt in range(attempts):
        try:
            pooch.retrieve(src.location, raw.known_hash, fname=dest.name, path=dest.parent, downloader=downloader)
            return
        except ValueError:  # checksum mismatch or size cap: pooch deleted its temporary file; retrying gives the same
            raise
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

    locks.sweep(cache / INCOMING, STAGE_PREFIX)  # staging folders of fetches that were killed
    with locks.signals_raise():
        stage = locks.owned_dir(cache / INCOMING, STAGE_PREFIX) if raw.known_hash is None else None
        try:
            fetched = _fetch_sources(relpath, raw, target, stage, mirror, failures, retries, timeout)
        finally:
            if stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
    if fetched is not None:
        return fetched
    _give_up(raw, target, mirror, failures)


def _fetch_sources(relpath: str, raw: RawFile, target: Path, stage: Path | None, mirror: str | None,
                   failures: list[str], retries: int, timeout: float) -> Fetched | None:
    """Try each source in turn; the verified file at `target`, or None with every failure in `failures`. A file
    without a published checksum is staged in `stage` (this process's own folder) until it parses."""
    for src in sources(raw, mirror):
        dest = target if stage is None else stage / Path(raw.relpath).name
        if dest != target and dest.exists():
            dest.unlink()  # the previous source's copy, which failed verification
        try:
            _download(src, dest, raw, retries, timeout)
        except SizeCapError as exc:
            failures.append(f"{src.kind} {src.location}: refused by size: {exc}")
            continue
        except ValueError as exc:
            failures.append(f"{src.kind} {src.location}: checksum mismatch ({str(exc).splitlines()[0]})")
            continue
        except Exception as exc:  # network errors, missing mirror file, HTTP errors
            failures.append(f"{src.kind} {src.location}: {type(exc).__name__}: {exc}")
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
        fetched = Fetched(target, sha256sum(target), f"{src.kind} {src.location}", how)
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
