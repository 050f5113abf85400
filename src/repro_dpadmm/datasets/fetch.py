"""Download raw dataset files: cached, checksummed, atomic, mirror-able (pooch does the heavy lifting).

Order of sources for one file: the local cache (`resources/raw/<relpath>`, used only if its checksum matches), then
the data mirror (`REPRO_DPADMM_DATA_MIRROR` or the config key `data_mirror`: a local folder or a URL base laid out
like the canonical servers), then the canonical URL (unless offline mode is on: `REPRO_DPADMM_OFFLINE=1`).

pooch downloads into a temporary file beside the target, verifies the checksum, and only then moves it to the final
name, so an interrupted or corrupted transfer never leaves a file under the final name; a checksum mismatch deletes
the temporary file and raises.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pooch

from ..paths import raw_dir
from .registry import RAW_FILES, RawFile

MIRROR_ENV = "REPRO_DPADMM_DATA_MIRROR"
OFFLINE_ENV = "REPRO_DPADMM_OFFLINE"


class FetchError(RuntimeError):
    """A raw file could not be had from any source."""


@dataclass(frozen=True)
class Source:
    kind: str  # "mirror-folder", "mirror-url", "canonical"
    location: str


def resolve_mirror(config_mirror: str | None = None) -> str | None:
    """The data mirror in force: the environment variable wins over the config key."""
    mirror = os.environ.get(MIRROR_ENV) or config_mirror
    return mirror or None


def _offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in {"1", "true", "yes"}


def sources(raw: RawFile, mirror: str | None) -> list[Source]:
    out: list[Source] = []
    if mirror:
        if "://" in mirror:
            out.append(Source("mirror-url", mirror.rstrip("/") + "/" + raw.relpath))
        else:
            out.append(Source("mirror-folder", str(Path(mirror).expanduser().resolve() / raw.relpath)))
    if not _offline():
        out.append(Source("canonical", raw.url))
    return out


def _copy_downloader(url: str, output_file, pooch_obj, check_only: bool = False):
    """pooch downloader for a mirror that is a local folder (pooch itself rejects file:// and bare paths)."""
    src = Path(url)
    if check_only:
        return src.is_file()
    if not src.is_file():
        # requests' exception type, so that pooch's retry/error path treats it like a failed download
        import requests

        raise requests.exceptions.RequestException(f"not in the mirror folder: {src}")
    if hasattr(output_file, "write"):
        with open(src, "rb") as fh:
            shutil.copyfileobj(fh, output_file)
    else:
        shutil.copyfile(src, output_file)
    return None


def sha256sum(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_raw(relpath: str, *, mirror: str | None = None, cache: Path | None = None, retries: int = 2,
              timeout: float = 30.0) -> Path:
    """Return the local path of a verified raw file, downloading it if needed.

    Raises FetchError naming the file, every source tried, why each failed, and how to set a mirror.
    """
    try:
        raw = RAW_FILES[relpath]
    except KeyError:
        raise FetchError(f"unknown raw file {relpath!r}; known: {', '.join(sorted(RAW_FILES))}") from None
    cache = Path(cache) if cache is not None else raw_dir()
    target = cache / raw.relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_file() and (raw.known_hash is None or pooch.file_hash(str(target), alg=raw.known_hash.split(":")[0])
                             == raw.known_hash.split(":")[1]):
        return target

    failures: list[str] = []
    for src in sources(raw, resolve_mirror(mirror)):
        if src.kind == "mirror-folder":
            downloader, n_retries = _copy_downloader, 0
        else:
            downloader, n_retries = pooch.HTTPDownloader(timeout=timeout, progressbar=False), retries
        try:
            pooch.core.stream_download(src.location, target, raw.known_hash, downloader, None,
                                       retry_if_failed=n_retries)
        except ValueError as exc:  # checksum mismatch: pooch deleted the temporary file
            failures.append(f"{src.kind} {src.location}: checksum mismatch ({str(exc).splitlines()[0]})")
            continue
        except Exception as exc:  # network errors, missing mirror file, HTTP errors
            failures.append(f"{src.kind} {src.location}: {type(exc).__name__}: {exc}")
            continue
        return target

    if not failures:
        failures.append("no source to try: offline mode is on and no data mirror is set")
    raise FetchError(
        f"could not obtain {raw.relpath}\n  tried:\n    - " + "\n    - ".join(failures)
        + f"\n  fix: set a data mirror, e.g. `export {MIRROR_ENV}=/path/to/mirror` (a folder laid out like "
        "uci/adult/adult.data, libsvm/binary/a9a, ...) or a URL base, or the config key `data_mirror`; "
        "or place the verified file at " + str(target)
    )


def cache_status(cache: Path | None = None) -> dict[str, str]:
    """For every registered raw file: 'verified', 'present (no published checksum)', 'corrupt' or 'missing'."""
    cache = Path(cache) if cache is not None else raw_dir()
    out = {}
    for relpath, raw in RAW_FILES.items():
        p = cache / relpath
        if not p.is_file():
            out[relpath] = "missing"
        elif raw.known_hash is None:
            out[relpath] = "present (no published checksum)"
        else:
            alg, want = raw.known_hash.split(":")
            out[relpath] = "verified" if pooch.file_hash(str(p), alg=alg) == want else "corrupt"
    return out
