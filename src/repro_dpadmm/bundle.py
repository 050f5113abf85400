"""Results bundles: one archive of a finished run that anyone can verify and re-judge without recomputing anything.

`make_bundle()` packs, in the project's own layout,

* `results/<paper>/<item>/`: every item's metrics.json, executed notebook, rendered HTML, figures (and job files);
* `results/report/`: the report as judged at run time (its pages, claims.json, summary.json; not its `items/`
  copies, which duplicate the item folders); not `results/rejudged/` (other bundles' re-judged reports), nor the
  what-if runs of `results/whatif/` unless asked (`with_whatif`, `repro-dpadmm bundle --with-whatif`);
* `resources/processed/*.json`: the dataset sidecars (availability, shapes, the raw files' sha256), never the data;
* `logs/`: each job's log and its Snakemake benchmark TSV (time and memory);
* `config/`: the configuration and claims files as they were when the bundle was made;
* `provenance.json`: every installed package with its version, Python, platform, git commit, and the datasets'
  checksums (raw sources from the sidecars, processed arrays hashed here);
* `MANIFEST.sha256`: the sha256 of every other file (`sha256sum -c MANIFEST.sha256` checks it too).

`rejudge()` verifies the manifest, then rebuilds the report from the bundle's measurements with the *current* claims
files (`report.build_report`, the same function the workflow uses), and says which verdicts changed since the bundle
was judged and which items ran with parameters that differ from the current config.

Bundles are shared, so `opened()` treats one as hostile until proven otherwise:

* An archive is unpacked here, member by member, never by `TarFile.extractall`: each member is checked before any of
  its bytes are written (a regular file or a folder only: no link, device, FIFO or sparse member; a relative name
  without `..`; within the caps of `Limits` on the number of members, each member's size, the total size and the
  ratio of unpacked to packed bytes, so a small archive cannot fill the disk), then written with `open` and
  `copyfileobj`. The decompressed stream itself is read through a budget, and never backwards, so that oversized
  tar headers or a member pointing back at an earlier one cannot exhaust memory or loop. Why not tarfile's
  `filter="data"`: it let the symlink-chain archive of CVE-2025-4517 write outside the folder on Python 3.11.7,
  3.12.1 and 3.13.0 (fixed in 3.11.13, 3.12.11 and 3.13.4; CVE-2025-8194's loop on negative offsets later still,
  in 3.13.6 on the 3.13 line), and the `filter=` argument itself is a TypeError on 3.11.0-3.11.3; extracting only
  regular files and folders ourselves is safe on every interpreter the package supports (>= 3.11).
* The manifest may name only files under the bundle, and the files are found by walking the folder without following
  links (a folder given as the bundle may hold no link or special file either); every file is size-checked before
  it is hashed.
* The unpacked folder is a temporary folder removed on every exit, SIGTERM and SIGHUP included
  (`locks.signals_raise`); one left by a killed process is removed by the next `opened()` once its process is gone.
* A bundle never holds pickles (parts' `.pkl` files stay out: the re-judge never reads them, and loading a pickle can
  run code); a bundle that has one is refused.
* provenance.json and every JSON the re-judge reads go through `safeload` (size, depth, finite numbers), and
  provenance.json must match PROVENANCE_SCHEMA.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import platform
import posixpath
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, distributions, version
from pathlib import Path

import jsonschema
import pooch

from . import locks, safeload
from .safeload import redact
from .config import YTE_KEY
from .staging import BUNDLE_MANIFEST, bundle_around
from .paths import project_root

FORMAT = 1
MANIFEST = BUNDLE_MANIFEST   # "MANIFEST.sha256"
PROVENANCE = "provenance.json"
REPORT_DIR = "results/report"
REJUDGED_DIR = "results/rejudged"   # re-judged bundles' reports: never packed into a bundle
WHATIF_DIR = "results/whatif"   # what-if runs: bundled only with --with-whatif (they are not the paper run)
# The packages whose versions the re-judged report shows for the bundle's run (provenance.json has them all).
KEY_PACKAGES = ("numpy", "scipy", "scikit-learn", "dp-accounting", "privacy-estimates", "snakemake", "papermill")
# Paths (relative to the project root) a bundle takes, as (folder, glob); results/report/items/ is left out.
CONTENT = (("results", "**/*"), ("resources/processed", "*.json"), ("logs", "**/*"), ("config", "*.yaml"),
           ("config/claims", "*.yaml"))
# Never bundled, and refused in a bundle: a pickle (parts/*.pkl) can run code when it is loaded.
PICKLE_SUFFIXES = (".pkl", ".pickle")


def is_pickle(name: str) -> bool:
    """Whether a file name ends in a pickle suffix, in any case (`x.PKL` is as much a pickle as `x.pkl`)."""
    return name.lower().endswith(PICKLE_SUFFIXES)
UNPACK_PREFIX = "repro-dpadmm-bundle-"
STAGE_PREFIX = ".bundle-"       # make_bundle's staging folder beside the archive: .bundle-<pid>@<host>.<random>
# provenance.json as make_bundle writes it: the re-judge shows these fields, so their types are checked first.
_TEXT = {"type": "string", "maxLength": 2000}
PROVENANCE_SCHEMA = {
    "type": "object",
    "properties": {
        "format": {"type": "integer"}, "created": _TEXT, "repro_dpadmm": {"type": ["string", "null"], "maxLength": 200},
        "python": _TEXT, "platform": _TEXT,
        "git": {"type": "object", "properties": {"commit": {"type": ["string", "null"], "maxLength": 100},
                                                 "dirty": {"type": ["boolean", "null"]}, "describe": _TEXT}},
        "packages": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 200}},
        "datasets": {"type": "object"},
    },
    # what every bundle's record holds (`provenance`): without it the pages would show "None" for the run's origin
    "required": ["format", "created", "repro_dpadmm", "git", "python", "platform", "packages"],
}


class BundleError(ValueError):
    """A bundle cannot be made, opened or trusted (the message says which file and why)."""


def sha256_file(path: Path) -> str:
    return pooch.file_hash(str(path), alg="sha256")


# Folders below a bundle's top (or a packed folder of the project) a walk goes into: a paper-scale bundle needs 5; an
# archive's names (at most 1,024 characters) allow about 500, a folder on disk thousands.
MAX_DEPTH = 64


def walk(folder: Path):
    """(folder, its entries sorted by name, depth below `folder`) for `folder` and every folder under it, links never
    followed, depth first. Without recursion: os.walk and Path.glob('**') recurse once per level on Python 3.11, so a
    tree a thousand folders deep ends in RecursionError; the caller decides what a depth beyond MAX_DEPTH means."""
    stack = [(Path(folder), 0)]
    while stack:
        here, depth = stack.pop()
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        yield here, entries, depth
        stack.extend((Path(e.path), depth + 1) for e in reversed(entries) if e.is_dir(follow_symlinks=False))


def _member_files(root: Path, with_whatif: bool = False) -> tuple[list[str], list[str], list[str]]:
    """The project files a bundle holds, as sorted POSIX paths relative to `root` (what-if runs only when asked), and
    the links and the special files (FIFOs, devices, sockets) among the candidates, which are left out (a link is
    never followed: it may point anywhere on the machine that packs the bundle; a FIFO would block). BundleError for
    a folder nested deeper than MAX_DEPTH."""
    out, links, special = set(), set(), set()
    left_out = (f"{REPORT_DIR}/items/", "results/rejudged/") + (() if with_whatif else (f"{WHATIF_DIR}/",))
    for folder, pattern in CONTENT:
        base = root / folder
        if not base.is_dir():
            continue
        if pattern == "**/*":
            found = []
            for here, entries, depth in walk(base):
                if depth > MAX_DEPTH:
                    raise BundleError(f"{safeload.printable(here.relative_to(root).as_posix()[:200])}...: folders "
                                      f"nested deeper than {MAX_DEPTH} levels under {folder}/; a bundle (and its "
                                      "re-judge) refuses them: move that tree out of the project")
                found += [(Path(e.path), e.is_symlink()) for e in entries if not e.is_dir(follow_symlinks=False)]
        else:
            found = [(path, path.is_symlink()) for path in base.glob(pattern)]
        for path, is_link in found:
            rel = path.relative_to(root).as_posix()
            if rel.startswith(left_out) or "/." in f"/{rel}" or is_pickle(rel):
                continue
            if is_link:
                links.add(rel)
            elif path.is_file():
                out.add(rel)
            else:
                special.add(rel)
    return sorted(out), sorted(links), sorted(special)


def installed_packages() -> dict[str, str]:
    """{distribution name: version} of every package installed in the running environment."""
    out = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower().replace("_", "-")] = dist.version
    return dict(sorted(out.items()))


def dataset_checksums(processed: Path) -> dict[str, dict]:
    """Per dataset: available or not, the raw sources' sha256 (from its sidecar) and the processed arrays' sha256."""
    out = {}
    for sidecar in sorted(processed.glob("*.json")) if processed.is_dir() else []:
        try:
            side = safeload.load_json(sidecar, expect=dict)
        except safeload.LoadError as exc:
            out[sidecar.stem] = {"available": False, "reason": f"unreadable sidecar: {exc}"}
            continue
        listed = side.get("sources") if isinstance(side.get("sources"), dict) else {}   # a sidecar may be damaged
        sources = {rel: (info.get("sha256") if isinstance(info, dict) else info) for rel, info in listed.items()}
        arrays = processed / f"{sidecar.stem}.npz"
        out[sidecar.stem] = {"available": bool(side.get("available")), "sources_sha256": sources,
                             "processed_sha256": sha256_file(arrays) if arrays.is_file() else None}
    return out


def provenance(root: Path) -> dict:
    from .provenance import git_state

    try:
        own = version("repro-dpadmm")
    except PackageNotFoundError:
        own = None
    return {"format": FORMAT, "created": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "repro_dpadmm": own, "git": git_state(root), "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.machine()}", "packages": installed_packages(),
            "datasets": dataset_checksums(root / "resources" / "processed")}


def write_manifest(folder: Path) -> Path:
    """MANIFEST.sha256 listing every file under `folder` (but itself), in `sha256sum` format."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    lines = [f"{sha256_file(folder / rel)}  {rel}" for rel in files if rel != MANIFEST]
    path = folder / MANIFEST
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class Limits:
    """Caps on what a bundle may hold (README "Sharing and re-judging results"); each can be raised with an
    environment variable (`Limits.from_env`). A paper-scale bundle holds about 1,000 files and 100 MB; its largest
    files (rendered notebooks with their figures) are a few MB."""

    members: int = 20_000                # files and folders
    member_bytes: int = 512 * 2**20      # one file
    total_bytes: int = 4 * 2**30         # all files
    ratio: float = 200.0                 # unpacked bytes per packed byte, beyond the first RATIO_FREE bytes
    ENV = {"members": "REPRO_DPADMM_BUNDLE_MAX_FILES", "member_bytes": "REPRO_DPADMM_BUNDLE_MAX_FILE_MB",
           "total_bytes": "REPRO_DPADMM_BUNDLE_MAX_TOTAL_MB", "ratio": "REPRO_DPADMM_BUNDLE_MAX_RATIO"}
    RATIO_FREE = 64 * 2**20

    @classmethod
    def from_env(cls) -> "Limits":
        values = {}
        for name, var in cls.ENV.items():
            text = os.environ.get(var)
            if not text:
                continue
            try:
                number = float(text)
            except ValueError:
                number = -1.0
            if not number > 0:
                raise BundleError(f"{var} must be a positive number, got {text!r}")
            if not number < 1e15:   # a C size, and more than any machine holds (1e15 MiB is 1 ZiB)
                raise BundleError(f"{var} must be below 1e15, got {text!r}")
            if name == "members" and number != int(number):
                raise BundleError(f"{var} must be a whole number of files, got {text!r}")
            if name.endswith("bytes") and number * 2**20 < 1:
                raise BundleError(f"{var} must allow at least one byte (it is in MiB), got {text!r}")
            values[name] = int(number * 2**20) if name.endswith("bytes") else \
                (int(number) if name == "members" else number)
        return cls(**values)

    def hint(self, name: str) -> str:
        return f"set {self.ENV[name]} to allow more"


_MAX_NAME = 1024
_MANIFEST_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)", re.DOTALL)


def _is_utf8(name: str) -> bool:
    """Whether a file name read from the file system was valid UTF-8 (undecodable bytes come as surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_name(name: str) -> str:
    """Why a path named by an archive member or a manifest line is not a plain relative path inside the bundle ('' if
    it is): absolute, '..', empty or '.' parts, backslashes, control characters, too long."""
    if not name:
        return "an empty name"
    if len(name) > _MAX_NAME:
        return f"a name of {len(name)} characters (at most {_MAX_NAME})"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "an absolute path"
    if "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a backslash or control character"
    parts = name.split("/")
    if ".." in parts:
        return "a '..' (a path outside the bundle)"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' path part"
    return ""


def _files(folder: Path, limits: Limits) -> tuple[dict[str, int], list[str]]:
    """The regular files under `folder` ({relative POSIX path: size}), found without following links, and the
    problems: links, special files, pickles, and files beyond the limits (none of them is ever opened). Every entry
    walked (folders, links and special files too) counts against `limits.members`, as every member of an archive
    does, so a folder of countless empty folders is refused as early as an archive of them."""
    found, problems, total, entries = {}, [], 0, 0
    for here, names, depth in walk(folder):
        if depth > MAX_DEPTH:
            problems.append(f"folders nested deeper than {MAX_DEPTH} levels: "
                            f"{safeload.printable(here.relative_to(folder).as_posix()[:200])}...")
            return found, problems
        for name in (e.name for e in names):
            entries += 1
            if entries > limits.members:
                problems.append(f"more than {limits.members:,} files and folders ({limits.hint('members')})")
                return found, problems
            path = here / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                kind = "a link" if stat.S_ISLNK(mode) else "a special file"
                problems.append(f"not a regular file: {safeload.printable(rel)} is {kind} (a bundle holds only files and folders)")
            elif is_pickle(rel):
                problems.append(f"pickle: {safeload.printable(rel)} (a bundle never holds pickles: loading one can run code)")
            else:
                size = path.lstat().st_size
                total += size
                if size > limits.member_bytes:
                    problems.append(f"too large: {safeload.printable(rel)} has {size:,} bytes, more than {limits.member_bytes:,} "
                                    f"({limits.hint('member_bytes')})")
                else:
                    found[rel] = size
        if total > limits.total_bytes:
            problems.append(f"more than {limits.total_bytes:,} bytes in all ({limits.hint('total_bytes')})")
            return found, problems
    return found, problems


def verify(folder: str | Path, limits: Limits | None = None) -> list[str]:
    """Problems of an unpacked bundle against its manifest: modified, missing or unlisted files, manifest lines that
    name a path outside the bundle, links, special files, pickles, files beyond the limits (empty if intact)."""
    folder = Path(folder)
    limits = limits or Limits.from_env()
    manifest = folder / MANIFEST
    if manifest.is_symlink():
        return [f"{MANIFEST} is a link (a bundle holds only files and folders): not a results bundle"]
    if not manifest.is_file():
        return [f"no {MANIFEST} at the top of the bundle: not a results bundle"]
    present, problems = _files(folder, limits)
    if problems:
        return problems
    try:
        text = safeload.read_text(manifest, limit=limits.members * (_MAX_NAME + 70))
    except safeload.LoadError as exc:
        return [str(exc)]
    listed = {}
    for n, line in enumerate(text.splitlines(), 1):
        # as `sha256sum` writes it, and reads it with -c: `<64 hex digits>  <path>`, or ` *<path>` (its binary mode)
        m = _MANIFEST_LINE.fullmatch(line)
        if not m:
            problems.append(f"{MANIFEST} line {n} is malformed: {line[:200]!r} (a line is `<64 hex digits>  <path>`, "
                            "as sha256sum writes it)")
            continue
        digest, rel = m.group(1).lower(), m.group(2)
        why = safe_name(rel)
        if why:
            problems.append(f"{MANIFEST} line {n} names {rel[:200]!r}: {why}; a bundle's manifest lists only files "
                            "inside the bundle")
            continue
        if rel in listed:
            problems.append(f"{MANIFEST} line {n} lists {safeload.printable(rel[:200])} a second time")
            continue
        listed[rel] = digest
    for rel, digest in listed.items():
        if rel not in present:   # never opened: only files found by the walk are
            problems.append(f"{MANIFEST} lists {safeload.printable(rel)}, a folder, not a file"
                            if (folder / rel).is_dir() and not (folder / rel).is_symlink()
                            else f"missing: {safeload.printable(rel)}")
        elif sha256_file(folder / rel) != digest:
            problems.append(f"modified: {safeload.printable(rel)} (sha256 differs from {MANIFEST})")
    problems += [f"not in {MANIFEST}: {safeload.printable(rel)}" for rel in sorted(set(present) - set(listed) - {MANIFEST})]
    if not listed and not problems:   # an empty manifest of an empty folder: nothing to judge
        problems.append(f"{MANIFEST} lists no file: not a results bundle")
    budget = [CONFIG_PARSE_BUDGET]
    for rel in sorted(r for r in present if r.startswith("config/")):
        why = _template_code(folder / rel, budget)
        if why:
            problems.append(f"template code: {safeload.printable(rel)} {why} (Snakemake would run its expressions as "
                            "Python if the file were given with --configfile; a bundle's config never has it)")
    return problems


# The bytes of a bundle's config files that are parsed to look for the template key written with escapes, in all:
# PyYAML's pure-Python parser reads about 0.25 MiB a second, so many files inside the caps would hold a re-judge for
# hours; a run's own config files with a backslash are about 0.2 MiB.
CONFIG_PARSE_BUDGET = 4 * 2**20


def _template_code(path: Path, budget: list[int]) -> str:
    """Why a file in a bundle's config/ could be a YTE template for Snakemake's --configfile loader ('' if it cannot):
    it holds the key, as written or as YAML or JSON would read it (`"\\x5f_use_yte__"`, `"\\u005f..."`), whatever
    its name; or it is larger than a config may be, or beyond the bytes parsed for all of them (`budget`, what is
    left of CONFIG_PARSE_BUDGET), so it is not read (the run's own config files are small)."""
    if _holds(path, YTE_KEY.encode()):
        return f"holds {YTE_KEY}"
    limit = safeload.max_yaml_bytes()
    if path.stat().st_size > limit:
        return (f"has {path.stat().st_size:,} bytes, more than the {limit:,} a config file may have, so it is not "
                f"read to look for {YTE_KEY}")
    data = path.read_bytes()
    if b"\\" not in data and _is_utf8_bytes(data):
        # no escape, and read as written: a scalar (or a key) can only be the key as written, looked for above (YAML
        # folds a scalar's lines with a space or a line break, never joining two pieces of a word)
        return ""
    if len(data) > budget[0]:
        return (f"is beyond the {CONFIG_PARSE_BUDGET // 2**20} MiB of config files with escapes (or not in UTF-8) "
                f"that are read to look for {YTE_KEY}, so it is not read")
    budget[0] -= len(data)
    import yaml

    # every scalar as each parser reads it (escapes decoded), one event at a time: nothing is built. YTE reads a config
    # with PyYAML's pure-Python parser (its FullLoader), which takes what libyaml refuses (a `%YAML 1.3` directive),
    # so that parser decides; libyaml's too, should it take a file the other refuses.
    for loader in {yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)}:
        try:
            for event in yaml.parse(data, Loader=loader):
                if isinstance(event, yaml.ScalarEvent) and event.value == YTE_KEY:
                    return f"holds {YTE_KEY} (written with escapes)"
        except (yaml.YAMLError, UnicodeDecodeError):   # not YAML for this parser: it takes no template from it
            continue
    return ""


def _is_utf8_bytes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _holds(path: Path, needle: bytes, chunk: int = 1 << 20) -> bool:
    """Whether the file holds `needle`, read in pieces (a member may be as large as the caps allow)."""
    tail = b""
    with open(path, "rb") as fh:
        while piece := fh.read(chunk):
            if needle in tail + piece:
                return True
            tail = piece[-len(needle):]
    return False


def default_name(prov: dict) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    commit = (prov.get("git") or {}).get("commit")
    return f"repro-dpadmm-results-{stamp}" + (f"-{commit[:8]}" if commit else "")


def make_bundle(out: str | Path | None = None, *, root: Path | None = None, with_whatif: bool = False) -> Path:
    """Pack the finished run under `root` into `out` (default `bundles/<name>.tar.gz`); return the archive path.
    What-if runs (results/whatif/) are left out unless `with_whatif`.

    The run must be finished: the report (`results/report/claims.json`) exists and is newer than every item's
    metrics.json, so that the bundled verdicts are the ones of the bundled numbers. The bundle is staged in a hidden
    folder beside `out` named by its process (`.bundle-<pid>@<host>.<random>`), removed on every exit, SIGTERM and
    SIGHUP included, or by a later bundle once its process is gone.
    """
    root = Path(root) if root else project_root()
    claims = root / REPORT_DIR / "claims.json"
    if (root / REPORT_DIR).is_symlink():   # a bundle never follows a link: the judged report would be left out
        raise BundleError(f"{REPORT_DIR} is a link; a bundle packs the report as judged at run time and never follows "
                          "a link: rebuild it in place (`repro-dpadmm report`) first")
    if not claims.is_file():
        raise BundleError(f"no {REPORT_DIR}/claims.json under {root}: finish the run first "
                          "(`snakemake --cores all`, or `repro-dpadmm report` after the items)")
    # the items' metrics the report judged: not a hidden folder's (a stopped run's staging folder, never packed)
    stale = [p.relative_to(root).as_posix() for p in (root / "results").glob("*/*/metrics.json")
             if not any(part.startswith(".") for part in p.relative_to(root).parts)
             and p.stat().st_mtime > claims.stat().st_mtime]
    if stale:
        raise BundleError(f"the report is older than {', '.join(sorted(stale)[:5])}"
                          f"{' ...' if len(stale) > 5 else ''}: rebuild it (`snakemake --cores all report`) first")
    prov = provenance(root)
    out = Path(out) if out else root / "bundles" / f"{default_name(prov)}.tar.gz"
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise BundleError(f"bundle name {out.name!r} must end in .tar.gz or .tgz")
    if out.exists() or out.is_symlink():   # a bundle never replaces a file (or folder) that is already there
        raise BundleError(f"{out} already exists; give another name or remove it first")
    top = out.name.removesuffix(".tar.gz").removesuffix(".tgz")
    if not top or top.startswith("."):   # the top folder of the archive: a bundle without one is refused
        raise BundleError(f"bundle name {out.name!r} must have a name before .tar.gz or .tgz that does not start "
                          "with '.' (it names the bundle's top folder)")
    inside = bundle_around(out.parent)
    if inside is not None:   # a file added to an unpacked bundle breaks its manifest
        raise BundleError(f"{safeload.printable(out)} lies in the results bundle {safeload.printable(inside)} (its "
                          f"{MANIFEST}), which is never written into; give a path outside it")
    if safeload.printable(top) != top:   # the re-judge refuses control characters in member names
        raise BundleError(f"bundle name {safeload.printable(out.name)!r} holds control or invisible characters")
    packed = next((folder for folder, _ in CONTENT if out.resolve().is_relative_to((root / folder).resolve())), None)
    if packed is not None:   # the next bundle would pack this one
        raise BundleError(f"{safeload.printable(out)} lies in the project's {packed}/, which a bundle packs: give a "
                          "path outside it (default: bundles/)")
    limits = Limits.from_env()
    rels, links, special = _member_files(root, with_whatif)
    opaque = [r for r in rels if is_opaque(root / r)]
    rels = [r for r in rels if r not in set(opaque)]
    unscrubbed = _beyond_scrub_budget(root, rels)
    rels = [r for r in rels if r not in set(unscrubbed)]
    # left out, and said: the user sees these files in results/ and would not find them in the bundle
    _said_left_out(links, "link", "a bundle never follows a link")
    _said_left_out(special, "special file", "FIFOs, devices and sockets are never read")
    _said_left_out(opaque, "binary file", "a bundle takes text, PNG and PDF files only, whose text it can check for "
                                          "paths")
    _said_left_out(unscrubbed, "text file", f"each text file is searched for paths: one over "
                                            f"{SCRUB_MAX_FILE // 2**20} MiB, or beyond {SCRUB_MAX_TOTAL // 2**20} MiB "
                                            "of them in all (results first, logs last), is not")
    # refused here, naming them, rather than by the re-judge of the bundle: names of bytes that are not UTF-8 (held
    # as surrogate escapes, shown as their bytes), then names with control or invisible characters
    not_utf8 = [os.fsencode(r).decode("utf-8", "backslashreplace") for r in map(str, rels) if not _is_utf8(r)]
    odd = [safeload.printable(r) for r in map(str, rels) if _is_utf8(r) and safeload.printable(r) != r]
    # and names a member may not have (a backslash, over _MAX_NAME characters with the top folder)
    unfit = [f"{r[:200]} ({why})" for r in map(str, rels) if _is_utf8(r) and safeload.printable(r) == r
             and (why := safe_name(f"{top}/{r}"))]
    # and names that hold a secret (a token of a known form, `api_key=...`): a member's name and the manifest's line
    # are not scrubbed like a file's text, so the file is refused by its name, which is shown with the secret hidden
    secret = [scrub_secrets(r) for r in map(str, rels) if _is_utf8(r) and scrub_secrets(r) != r]
    for names, what in ((not_utf8, "would be refused by its own re-judge: file names that are not valid UTF-8"),
                        (odd, "would be refused by its own re-judge: file names with control or invisible characters"),
                        (unfit, "would be refused by its own re-judge: file names a member may not have"),
                        (secret, "would carry a secret in file names (rename or remove these files)")):
        if names:
            raise BundleError(f"{out.name} {what}: {', '.join(safeload.printable(n) for n in names[:5])}"
                              + (f" and {len(names) - 5:,} more" if len(names) > 5 else ""))
    too_large = _too_large(root, rels, limits)
    if too_large:
        more = [f"... and {len(too_large) - 10:,} more"] if len(too_large) > 10 else []
        raise BundleError(f"{out.name} would be refused by its own re-judge:\n  " + "\n  ".join(too_large[:10] + more))
    above = next((p for p in out.parents if p.exists() or p.is_symlink()), None)
    if above is not None and not above.is_dir():
        raise BundleError(f"{safeload.printable(out)} lies below {safeload.printable(above)}, which is a file, not a "
                          "folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        probe = locks.owned_dir(out.parent, STAGE_PREFIX)   # can a folder be made beside it (where it is staged)?
        probe.rmdir()
    except OSError as exc:   # named by the bundle's path, not by the staging folder the package would make there
        raise BundleError(f"cannot write {safeload.printable(out)}: {exc.strerror or exc} in "
                          f"{safeload.printable(out.parent)}") from None
    # the staging folder is named by its process (locks.owned_dir) and removed on every exit, SIGTERM and SIGHUP
    # included (locks.signals_raise); one left by a killed bundle (SIGKILL, power loss) is swept by the next bundle
    # made in the same folder once its process is gone (a name that records no owner is never ours to remove)
    locks.sweep(out.parent, STAGE_PREFIX, unnamed_stale=False)
    with locks.signals_raise():
        tmp = locks.owned_dir(out.parent, STAGE_PREFIX)
        try:
            stage = tmp / top
            for rel in rels:
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                _copy_scrubbed(root / rel, stage / rel, root, rel)
            (stage / PROVENANCE).write_text(scrub_paths(json.dumps(prov, indent=2, sort_keys=True), root) + "\n")
            write_manifest(stage)
            partial = tmp / out.name
            with tarfile.open(partial, "w:gz") as tar:
                tar.add(stage, arcname=top, filter=_normalise)
            problems = beyond_limits(stage, partial.stat().st_size, limits)
            if problems:
                raise BundleError(f"{out.name} would be refused by its own re-judge:\n  " + "\n  ".join(problems))
            # atomic and never over another file: a half-written bundle never appears under its name, and of two
            # bundles made at once into one name the second fails (a rename would silently replace the first)
            try:
                os.link(partial, out)
            except FileExistsError:
                raise BundleError(f"{out} appeared while this bundle was made (another bundle of the same name?); a "
                                  "bundle never replaces a file: give another --out") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


# Every text file a bundle takes is searched for paths (about a second per 2-4 MB): a file over SCRUB_MAX_FILE, or
# beyond SCRUB_MAX_TOTAL in all, is left out and said, so that a bundle of a 500 MB log takes seconds, not minutes.
# A smoke run's text is about 64 MB in all, its largest file 4 MB.
SCRUB_MAX_FILE = 64 * 2**20
SCRUB_MAX_TOTAL = 256 * 2**20


def _beyond_scrub_budget(root: Path, rels: list[str]) -> list[str]:
    """The text files (not figures) over SCRUB_MAX_FILE, and those beyond SCRUB_MAX_TOTAL in all, taken in the order
    results/, config/, resources/, logs/ (a log is the first to go)."""
    out, left = [], SCRUB_MAX_TOTAL
    for rel in sorted(rels, key=lambda r: (r.startswith("logs/"), not r.startswith("results/"), r)):
        if Path(rel).suffix.lower() in FIGURE_SUFFIXES:
            continue
        size = (root / rel).stat().st_size
        if size > SCRUB_MAX_FILE or size > left:
            out.append(rel)
        else:
            left -= size
    return sorted(out)


def _said_left_out(rels: list[str], kind: str, why: str) -> None:
    if rels:
        print(f"bundle: {len(rels):,} {kind}{'s' if len(rels) > 1 else ''} left out ({why}): "
              + ", ".join(safeload.printable(r) for r in rels[:5]) + (" ..." if len(rels) > 5 else ""),
              file=sys.stderr)


def _too_large(root: Path, rels: list[str], limits: Limits) -> list[str]:
    """The project files a bundle would take that are larger than one member may be (checked before anything is
    copied: a file over the cap would make the bundle one its re-judge refuses)."""
    out = []
    for rel in rels:
        size = (root / rel).stat().st_size
        if size > limits.member_bytes:
            out.append(f"too large: {safeload.printable(rel)} has {size:,} bytes, more than {limits.member_bytes:,} "
                       f"({limits.hint('member_bytes')}, here and where it is re-judged)")
    return out


def beyond_limits(stage: Path, packed: int, limits: Limits) -> list[str]:
    """What the re-judge (`opened`, `unpack`) would refuse in the bundle staged in the folder `stage` and packed into
    `packed` bytes: its members (the top folder, every folder and file), each file's size, the total and the ratio
    of unpacked to packed bytes, against the same `limits`."""
    found, problems = _files(stage, limits)
    if problems:
        return problems
    members = 1 + sum(1 for _ in stage.rglob("*"))
    if members > limits.members:
        problems.append(f"{members:,} members, more than {limits.members:,} ({limits.hint('members')})")
    total = sum(found.values())
    if total > max(Limits.RATIO_FREE, limits.ratio * packed):
        problems.append(f"{total:,} bytes unpacked from {packed:,} packed: more than {limits.ratio:g} times its size "
                        f"({limits.hint('ratio')})")
    return problems


# Figures are copied byte for byte (an edit would break them) once their text is checked to hold no path
# (figure_files). Every other file is copied as text with the machine's paths taken out, whatever its suffix (a
# suffix-less log, `.out`, `.sh`); a binary file of another kind (an archive, an array, a file with a NUL byte) is
# left out, and said: its text cannot be checked, and a run writes none where a bundle looks.
FIGURE_SUFFIXES = (".png", ".pdf")
BINARY_SUFFIXES = (".jpg", ".jpeg", ".gif", ".webp", ".npz", ".npy", ".gz", ".tgz", ".bz2", ".xz", ".zip", ".zst")


def is_opaque(path: Path) -> bool:
    """A binary file a bundle leaves out: a BINARY_SUFFIXES suffix, or a NUL byte in its first 8 KiB."""
    suffix = path.suffix.lower()
    if suffix in FIGURE_SUFFIXES:
        return False
    if suffix in BINARY_SUFFIXES:
        return True
    with open(path, "rb") as fh:
        return b"\0" in fh.read(8192)


def scrub_paths(text: str, root: Path) -> str:
    """`text` without this machine's paths: the project root (paths below it become relative), the data mirror in
    force (`<mirror>`) and the home folder (`~`), in that order (a result is no place for a checkout's location)."""
    from .datasets.fetch import resolve_mirror

    mirror = resolve_mirror(None)
    pairs = [(f"{Path(root).resolve()}{os.sep}", ""), (str(Path(root).resolve()), ".")]
    if root != Path(root).resolve():
        pairs = [(f"{root}{os.sep}", ""), (str(root), "."), *pairs]
    if mirror and "://" not in mirror:
        pairs.append((str(Path(mirror).expanduser().resolve()), "<mirror>"))
        pairs.append((mirror.rstrip(os.sep), "<mirror>"))
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        pairs.append((f"{home}{os.sep}", f"~{os.sep}"))
    # a terminal's colour codes (`ESC[0;32m/srv/x`) stand aside while paths are found: the letter that ends one would
    # hide the path after it (a pattern that let any `<digit>m/` start a path took base64 images for paths); and so
    # does an image's base64 data (most of a notebook's or a page's bytes, and no path: it is not searched)
    codes: list[str] = []
    if _HIDDEN not in text:
        text = _ASIDE.sub(lambda m: codes.append(m.group(0)) or f"{_HIDDEN}{len(codes) - 1}{_HIDDEN_END}", text)
    # `<root>/../../srv/x` is /srv/x, not a project path `../../srv/x`: such paths are resolved (as text) first
    text = _UNRESOLVED.sub(lambda m: _lexical(m.group(0)) if _NOT_LEXICAL.search(m.group(0)) else m.group(0), text)
    # the same paths as JSON writes them (`Jos\u00e9`: json.dumps escapes every non-ASCII character)
    pairs += [(esc, new) for old, new in pairs if (esc := json.dumps(old)[1:-1]) != old]
    for old, new in pairs:
        if old and old != os.sep:
            # whole paths only: a mirror `/data` is not the `/data` of `claims/datasets.yaml` or `/database/x`
            end = "" if old.endswith(os.sep) else r"(?![\w.+@~-])"
            text = re.sub(rf"(?:(?<![\w.~-])|{_ESCAPE_BEFORE}){re.escape(old)}{end}", lambda m: new, text)
    # and no address's user:password (a mirror with credentials in a config file or a log), nor a secret set by name
    text = scrub_secrets(redact(scrub_owners(scrub_other_paths(text, root))))
    if codes:   # each back in its place (one inside a path scrubbed as a whole goes with it)
        text = re.sub(f"{_HIDDEN}(\\d+){_HIDDEN_END}", lambda m: codes[int(m.group(1))], text)
    return text


# A terminal control sequence (colour codes and the like), raw or as JSON, Python or a shell writes its escape
_CSI = re.compile(r"(?:\x1b|\\u001[bB]|\\x1[bB]|\\033|\\e)\[[0-9;?]*[A-Za-z]")
_BASE64_IMAGE = re.compile(r"""(?:(?<=;base64,)|(?<="image/png": ")|(?<="image/jpeg": ")|(?<="image/gif": "))"""
                           r"[A-Za-z0-9+/]{64,}={0,2}")
_ASIDE = re.compile(f"{_CSI.pattern}|{_BASE64_IMAGE.pattern}")
_HIDDEN, _HIDDEN_END = "\ue000", "\ue001"   # private-use characters: neither word characters nor a path's


# A secret written as a setting (`GITHUB_TOKEN=...`, `"AWS_SECRET_ACCESS_KEY": "..."`, `api_key: ...`): a name whose
# last part says it is one, then its value; and tokens whose form says what they are (GitHub's, Slack's, AWS access key ids).
SECRET_PLACEHOLDER = "<secret>"
_SECRET_NAME = (r"""(?:[\w.-]*(?:token|secret|passw(?:or)?d|passphrase|api[_-]?key|access[_-]?key|"""
                r"""private[_-]?key|(?:secret|signing|encryption)[_-]?key|credentials?)|(?:[\w.-]*[_.-])?(?:pass|pwd))""")
_SECRET_SETTING = re.compile(
    rf"""(?i)(?<![\w-])((?:--?)?{_SECRET_NAME}"""
    r"""(?:\\?["'])?[ \t]*[=:][ \t]*)(?!<)"""
    r"""((?:(?:!!?[\w/]+|&[\w-]+)[ \t]+)*(?:\\"(?:[^"\\\n]|\\[^"])*\\"|"[^"\n]*"|'[^'\n]*'|"[^"]{0,4096}"|'[^']{0,4096}'|"[^\n]*|'[^\n]*|[|>][-+]?\d*[ \t]*\n(?:[ \t]+.*(?:\n|$))+|"""
    r"""[ \t]*\n(?:[ \t]*-[ \t]+.*(?:\n|$))+|(?:[^\s"',;\\]|[,;](?=\S))+))""")
# Secrets whose form says what they are: tokens of GitHub, GitLab, Slack, Hugging Face, Google, npm and OpenAI-style
# keys, AWS key ids, a Slack webhook's address, a private key block, an Authorization header's credentials.
_TOKENS = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|"
                     r"sk-[A-Za-z0-9_-]{20,}|glpat-[\w-]{20,}|hf_[A-Za-z0-9]{30,}|AIza[0-9A-Za-z_-]{35}|"
                     r"npm_[A-Za-z0-9]{36})\b|hooks\.slack\.com/services/[\w/]+")
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----")
_KEY_END = re.compile(r"-----END [A-Z ]{0,40}PRIVATE KEY-----")
# A secret given as a long option (`--password X`) or after an Authorization header's scheme (`Bearer X`)
_SECRET_AFTER = re.compile(r"(?i)((?<![\w-])--(?:[\w-]*-)?(?:password|passwd|token|secret|api-key)[ \t]+(?!-)|"
                           r"\bauthorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?:bearer|basic|token)[ \t]+|"
                           r"(?-i:\bBearer)[ \t]+(?=[A-Za-z0-9._~+/=-]{16}))([A-Za-z0-9._~+/=-]+|\S+)")


def scrub_secrets(text: str) -> str:
    """`text` with the value of every setting whose name says it is a secret, and every token of a known form, as
    `<secret>` (a token in a log or an environment dump is the packer's, never the bundle's)."""
    text = _SECRET_SETTING.sub(_secret_value, _without_secret_blocks(text))
    text = _SECRET_AFTER.sub(lambda m: m.group(1) + SECRET_PLACEHOLDER, text)
    return _TOKENS.sub(SECRET_PLACEHOLDER, _without_private_keys(text))


# A secret setting as a YAML key at the start of a line (in a list item too), with its value, or the rest of it, on
# the lines below that are indented more than the key (`password:\n  x`, a plain value continued there, a nested
# mapping or list)
_SECRET_KEY_LINE = re.compile(rf"(?mi)^([ \t]*(?:-[ \t]+)?)[\"']?{_SECRET_NAME}[\"']?[ \t]*:[^\n]*\n")


@functools.cache
def _indented_beyond(column: int) -> re.Pattern:
    return re.compile(rf"(?:[ \t]{{{column + 1},}}\S[^\n]*(?:\n|$))+")


def _without_secret_blocks(text: str) -> str:
    """`text` with the lines below a secret setting's YAML key that hold its value (_SECRET_KEY_LINE) as one
    `<secret>` at their indentation; a search per key line found (each found once: linear in the text)."""
    parts, pos = [], 0
    for m in _SECRET_KEY_LINE.finditer(text):
        if m.start() < pos:
            continue
        below = _indented_beyond(len(m.group(1))).match(text, m.end())
        if below:
            lines = below.group(0)
            indent = lines[:len(lines) - len(lines.lstrip(" \t"))]
            parts += [text[pos:m.end()], indent + SECRET_PLACEHOLDER + ("\n" if lines.endswith("\n") else "")]
            pos = below.end()
    return "".join(parts) + text[pos:] if parts else text


def _without_private_keys(text: str) -> str:
    """`text` with each private key block (BEGIN ... END) as `<secret>`; one search from each block on (a pattern
    with a lazy run to END took quadratic time on text of BEGIN lines alone)."""
    parts, pos = [], 0
    while (begin := _KEY_BEGIN.search(text, pos)) and (end := _KEY_END.search(text, begin.end())):
        parts += [text[pos:begin.start()], SECRET_PLACEHOLDER]
        pos = end.end()
    return "".join(parts) + text[pos:] if parts else text


def _secret_value(m: re.Match) -> str:
    value = re.sub(r"^(?:(?:!!?[\w/]+|&[\w-]+)[ \t]+)+", "", m.group(2))   # a YAML tag or anchor goes with its value
    quote = '\\"' if value.startswith('\\"') else value[0] if value[:1] in ("\"", "'") else ""
    quote = quote if value.endswith(quote) and len(value) > len(quote) else ""   # an unclosed quote is not restored
    end = "\n" if value.endswith("\n") else ""   # a block or a list ends its line
    return f"{m.group(1)}{quote}{SECRET_PLACEHOLDER}{quote}{end}"


# Where a path may start although a letter comes before it: after an escape (`\n/x` in JSON text, `\u001b`) or the end
# of a terminal's colour code (`ESC[0;32m/x`, also as `\u001b[0;32m`): the letter belongs to the escape.
_ESCAPE_BEFORE = r"(?<=\\[ntrbf])|(?<=\\u[0-9a-fA-F]{4})"
# Not preceded by a character that makes the slash part of something else (`a/b`, `</div>`, `~/x`, `\/`, `x@/`)
# or by a placeholder of a path already scrubbed.
_STARTS = (rf"(?:(?<![\w.~/+\\-])(?<!<mirror>)(?<!<path>)(?<!&lt;mirror&gt;)(?<!&lt;path&gt;)"   # scrubbed already
           rf"|(?m:(?<=^[+-]))|(?<=\s[+-])|(?<=\.\.\.)|{_ESCAPE_BEFORE})")   # a diff's line, a sign, an ellipsis
# An absolute POSIX path of at least two parts, its first part a name (so that `</div>`, URLs, `a/b`, `it/s`, dates
# and base64 data are not paths): what is left of one after the known roots are taken out (another checkout's, the
# venv's, a scratch folder's). Not preceded by a character that makes the slash part of something else; after a `:`
# it is a path (a PATH list's entry, `key:/srv/x`, `file:/x`), and after a one-letter option too (`-I/opt/x`).
# A folder's name may hold single spaces where a slash follows ("/mnt/Jane Doe/notes"): a path's last part cannot be
# told from the prose after it, unless it is quoted (_QUOTED).
_U = r"\\+u(?!002[fF])[0-9a-fA-F]{4}"   # a character as JSON escapes it (`Jos\u00e9`, `\\u00e9` twice), not a slash
# Punctuation a folder's name may hold (`lab,jane`, `user#1`, `[old]`, `x (copy)`): inside a path where a name's
# character or a slash follows, so that the prose's comma or bracket after a path stays outside it.
_INNER = r"[,#\[\]()!$=](?=[\w.+@~/\[\]()-])"
# A terminal colour code inside a path (`/home/ESC[1mjane/x`, grep's highlighting), hidden as `\ue000N\ue001` while
# paths are scrubbed: part of the path where more of it follows, so the path goes whole, the code with it.
_CODE = "\ue000\\d+\ue001(?=[\\w.+@~/-]|\ue000)"
_ABSOLUTE = re.compile(rf"(?:{_STARTS}|(?<=[\s\"'=,(\[]-[A-Za-z]))(?!(?<=:)//)(?!(?<=58;)//)(?!(?<=3[aA];)//)/+(?:[\w.]|@(?=[\w.])|{_U}|{_CODE})"
                       rf"(?:[\w.+@-]|{_U}|{_INNER}|{_CODE})*"
                       rf"(?:(?: (?:[\w.+@~-]|{_U}|{_INNER}|{_CODE})+)*/+(?:[\w.+@~-]|{_U}|{_INNER}|{_CODE})+)+/?")
# The same path in the other forms text holds it: a whole quoted string (its last part may hold spaces), a file://
# address, JSON's escaped slashes (\/home\/x) and percent-encoding (%2Fhome%2Fx). Escapes may be layered (a notebook's
# output of JSON text is JSON again: `\\/home\\/x`, `\\u002f`, `&amp;#x2F;`), and a path's first slash alone escaped.
_QUOTED = re.compile(r"""(?:(?<=["'])|(?<=&quot;)|(?<=&#34;)|(?<=&#39;)|(?<=&apos;))"""
                     rf"""/(?:[\w.]|{_U})(?:[^"'\\\n<>/&]|{_U})*(?:/(?:[^"'\\\n<>/&]|{_U})+)+/?(?=["'\\&])""")
_FILE_URL = re.compile(r"""file://(?:localhost)?(/[^\s"'<>()\[\]\\]*)""", re.IGNORECASE)
_ESCAPED = re.compile(rf"(?:(?<![\w.~/<>+\\@-])|{_ESCAPE_BEFORE})(?!(?<=:)\\+/\\*/)(?:\\+/)+[\w.][\w.+@-]*"
                      r"(?:(?: [\w.+@~-]+)*(?:\\*/)+[\w.+@~-]+)+(?:\\*/)?")
# Percent-encoded slashes, alone or mixed with plain ones (`%2Fsrv/x`, `/srv%2Fx`): a match without a `%2F` is left
# to _ABSOLUTE (scrub_other_paths)
_ENCODED = re.compile(rf"(?:(?<![\w%/])|{_ESCAPE_BEFORE})(?!(?<=:)//)(?:%2F|/)+"
                      r"(?:[\w.]|%(?!2F)[0-9A-F]{2})(?:[\w.+@~-]|%(?!2F)[0-9A-F]{2})*"
                      r"(?:(?:%2F|/)+(?:[\w.+@~-]|%(?!2F)[0-9A-F]{2})+)+(?:%2F|/)?", re.IGNORECASE)
# Slashes written as JSON's (or JavaScript's) \u002f and as HTML's character references: a reader (a JSON parser, a
# browser) shows the same path, so the path is scrubbed in that form too.
_SLASH_CODE = r"(?:\\+u002[fF]|&(?:amp;)*#[xX]0*2[fF];|&(?:amp;)*#0*47;|&(?:amp;)*sol;)"   # a run of them starts once: (?<!47;) and so on
_CODED = re.compile(rf"(?:(?<![\w.~:+@-])|{_ESCAPE_BEFORE})(?<!47;)(?<!2[fF];)(?<!&sol;)(?<!\\u002[fF])(?:{_SLASH_CODE})+[\w.][\w.+@-]*"
                    rf"(?:(?:{_SLASH_CODE})+[\w.+@~-]+)+(?:{_SLASH_CODE})?")
# A plain absolute path with a repeated slash or a `.` or `..` part (not an address's `://`), and the same path as text
# resolves it (`/x//y/../z` is `/x/z`; symbolic links are not followed: the scrubbed text names no real file).
_UNRESOLVED = re.compile(rf"{_STARTS}(?!(?<=:)//)(?!(?<=58;)//)(?!(?<=3[aA];)//)/[^\s\"'<>|;,:)\ue000]*")   # a run of path characters, taken whole
_NOT_LEXICAL = re.compile(r"//|/\.\.?(?:/|$)")
_USER_HOME = re.compile(r"(?<![\w.~/+\\-])~[A-Za-z_][\w.-]*(?:/[\w.+@~-]+)*/?(?![\w.+@~-])")


def _lexical(path: str) -> str:
    """`path` with repeated slashes collapsed and its `.` and `..` parts resolved as text."""
    norm = posixpath.normpath("/" + path.lstrip("/"))
    return norm + ("/" if path.endswith("/") and norm != "/" else "")


# The top folders of the project's layout: an absolute path through one of them, whose part from there on exists in
# the project, is a path of (a copy of) the project and becomes relative to it.
PROJECT_TOPS = ("results", "resources", "logs", "config", "notebooks", "workflow", "bundles")
PATH_PLACEHOLDER = "<path>"


def _project_relative(path: str, root: Path) -> str:
    """`path` relative to the project where it is a project path, else PATH_PLACEHOLDER: its longest part from a
    PROJECT_TOPS folder on that exists under `root`, else its part from the first PROJECT_TOPS folder that `root`
    has (a raw data file of another checkout, say, that this one has not fetched)."""
    parts = path.rstrip("/").split("/")
    tops = [i for i, part in enumerate(parts) if part in PROJECT_TOPS and (Path(root) / part).is_dir()]
    rels = ["/".join(parts[i:]) for i in tops]
    rel = next((r for r in rels if (Path(root) / r).exists()), rels[0] if rels else None)
    return PATH_PLACEHOLDER if rel is None else rel + ("/" if path.endswith("/") else "")


def scrub_other_paths(text: str, root: Path) -> str:
    """`text` with every absolute path that is left (one of no root this machine knows: results copied from another
    checkout, a package's or a scratch folder's path) made relative to the project where it is a project path, and
    `<path>` otherwise (issue "Hostile input": moved runs were bundled with the old checkout's paths)."""
    from urllib.parse import unquote

    def relative(path: str, slash: str = "/") -> str:
        rel = _project_relative(_lexical(path), root)
        return rel if rel == PATH_PLACEHOLDER else rel.replace("/", slash)

    text = _FILE_URL.sub(lambda m: "file://" + relative(unquote(m.group(1))), text)
    # each encoded form only where its sign is in the text (a plain substring search is far faster than a pattern)
    if "\\/" in text:
        text = _ESCAPED.sub(lambda m: relative(re.sub(r"\\*/", "/", m.group(0)), re.match(r"\\+/", m.group(0))[0]),
                            text)
    if "%2f" in text or "%2F" in text:
        text = _ENCODED.sub(lambda m: relative(unquote(m.group(0)), "%2F") if "%2f" in m.group(0).lower()
                            else m.group(0), text)
    if "\\u002" in text or "&#" in text or "&sol;" in text or "&amp;" in text:
        text = _CODED.sub(lambda m: relative(re.sub(_SLASH_CODE, "/", m.group(0)),
                                             re.match(_SLASH_CODE, m.group(0))[0]), text)
    text = _QUOTED.sub(lambda m: relative(m.group(0)), text)
    text = _ABSOLUTE.sub(lambda m: relative(m.group(0)), text)
    # a user's home folder by name (`~alice/data/x.csv`): the name is the user's, the rest of it theirs
    return _USER_HOME.sub(PATH_PLACEHOLDER, text) if "~" in text else text


# An owned folder's name records its process (`<prefix><pid>@<host>.<random>`, locks.owned_dir), and a lock's
# holder is named as `process <pid> on <host> (started ...)` (locks.holder): both named in logs, neither shared.
_OWNER = re.compile(r"(?<=[-.])\d+@[A-Za-z0-9._-]+?\.(?=[a-z0-9_]{8}(?![a-z0-9_]))")
_HOLDER = re.compile(r"\bprocess \d+ on \S+ \(started")


def scrub_owners(text: str) -> str:
    """`text` with the process ids and host names of owned folders' names and of lock holders replaced by
    `<pid>@<host>` (`.fig1.staging-<pid>@<host>.k2j4x9q1/`) and `process <pid> on <host>`; and any other
    `<pid>@<this host>`."""
    text = _OWNER.sub("<pid>@<host>.", text)
    text = _HOLDER.sub("process <pid> on <host> (started", text)
    return re.sub(rf"\b\d+@{re.escape(locks.HOST)}\b", "<pid>@<host>", text)


def _copy_scrubbed(src: Path, dest: Path, root: Path, rel: str) -> None:
    """Copy one file into a bundle: text without this machine's paths (scrub_paths), a figure byte for byte once its
    text is checked (BundleError, naming it by `rel`, if that holds a path or credentials). Text that is not valid
    UTF-8 (a Latin-1 byte in a log) is scrubbed too: its other bytes are kept as they are (surrogateescape)."""
    from . import figure_files

    data = src.read_bytes()
    suffix = src.suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        text = data.decode("utf-8", "surrogateescape")
        why = _embedded_problem(text, root)
        if why:
            raise BundleError(f"{safeload.printable(rel)} {why} (data embedded as base64 is copied as it is, so what "
                              "it holds is checked first): rerun its item or remove that output")
        dest.write_bytes(_scrubbed_bytes(text, root).encode("utf-8", "surrogateescape"))
    else:
        texts = figure_files.png_texts if suffix == ".png" else figure_files.pdf_texts
        try:
            found = next((t for t in texts(data) if scrub_paths(t, root) != t), None)
        except figure_files.FigureError as exc:
            raise BundleError(f"{safeload.printable(rel)} cannot be bundled: {exc}; remove it or rerun its item "
                              "(a figure is copied as it is, so its text is checked first)") from None
        if found is not None:
            raise BundleError(f"{safeload.printable(rel)} holds a path or an address's credentials in its text (a "
                              "figure is copied as it is, never edited): rerun its item (a run's figures hold none) "
                              "or remove it")
        dest.write_bytes(data)
    shutil.copystat(src, dest)


# Letters that stand for bytes that are not UTF-8 while paths are found (Yi syllables, else Hangul ones: letters, so
# `/data/\xe9quipe/jane` is one path), unless the text holds one of them already
_BYTE_LETTERS = (0xA000, 0xAC00)


def _scrubbed_bytes(text: str, root: Path) -> str:
    """scrub_paths of a file's text read with surrogateescape: a byte that is not UTF-8 (a Latin-1 letter of a folder's
    name in a log) counts as a letter of a path, not as a break in it, and comes back as the same byte."""
    lone = {c for c in text if "\udc80" <= c <= "\udcff"}
    base = next((b for b in _BYTE_LETTERS if not any(chr(b + k) in text for k in range(0x80, 0x100))), None)
    if not lone or base is None:
        return scrub_paths(text, root)
    there, back = {0xDC00 + k: base + k for k in range(0x80, 0x100)}, {base + k: 0xDC00 + k for k in range(0x80, 0x100)}
    return scrub_paths(text.translate(there), root).translate(back)


# Data embedded as base64: a page's `data:` addresses and a notebook's binary outputs (the image types Jupyter stores
# so). The scrubber sets base64 aside (a path is never found in it), so what it decodes to is checked as a file of its
# type is: a PNG's and a PDF's text, text as text; other binary types cannot be checked.
_EMBEDDED = re.compile(r"""(?:data:([\w.+-]+\\?/[\w.+-]+)(?:;[\w.+-]+=[\w.+-]+)*;base64,|"""
                       r""""((?:image\\?/(?:png|jpeg|gif))|application\\?/pdf)": ?")([A-Za-z0-9+/=\s\\]+)""")
_TEXT_TYPES = re.compile(r"text/.*|image/svg\+xml|application/(?:json|javascript|xml|x-ipynb\+json|[\w.-]+\+(?:json|xml))")


def _embedded_problem(text: str, root: Path) -> str:
    """Why `text` cannot be bundled for what its base64 data hold ('' if it can): a path or a secret in what they
    decode to, or a type whose text cannot be read."""
    import base64
    import binascii

    from . import figure_files

    if "base64," not in text and '"image' not in text and '"application' not in text:
        return ""
    found = []   # every payload's text, checked at once (scrub_paths per piece costs more than the search)
    for m in _EMBEDDED.finditer(text):
        kind = (m.group(1) or m.group(2)).lower().replace("\\", "")
        raw = re.sub(r"\\n|[\s\\=]", "", m.group(3))   # JSON's line breaks and escaped slashes, padding
        if len(raw) < 64:   # a stub, not data
            continue
        try:
            data = base64.b64decode(raw + "=" * (-len(raw) % 4))
        except (binascii.Error, ValueError):   # not base64 after all: its text is scrubbed as text
            continue
        if kind in ("image/png", "application/pdf"):
            try:
                texts = list((figure_files.png_texts if kind == "image/png" else figure_files.pdf_texts)(data))
            except figure_files.FigureError as exc:
                return f"embeds {kind} data (base64) that cannot be read: {exc}"
        elif _TEXT_TYPES.fullmatch(kind):
            texts = [data.decode("utf-8", "surrogateescape")]
        else:
            return (f"embeds {safeload.printable(kind)} data (base64), whose text a bundle cannot check (it takes "
                    "PNG and PDF images and text)")
        found += [(kind, t) for t in texts]
    joined = "\n".join(t for _, t in found)
    if found and scrub_paths(joined, root) != joined:
        kind = next(k for k, t in found if scrub_paths(t, root) != t)
        return f"embeds {kind} data (base64) holding a path or a secret"
    return ""


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


# The largest single read from the decompressed stream: the data of a member is read in 1 MiB pieces
# (_write_member), so only a header that tarfile reads whole (pax, GNU long name) can ask for more, and a header of a
# bundle (a path of at most 1,024 characters) needs a few kilobytes.
MAX_READ = 2**20


class _Budget:
    """A read-only, forward-only view of a decompressed stream that refuses to deliver more than `budget` bytes in
    all: tarfile reads oversized headers (pax, long names) whole into memory and follows a negative size backwards
    (CVE-2025-8194); through this view the first is an error before the read, the second an error at the seek."""

    def __init__(self, raw, budget: int, source: str, hint: str, bomb: int | None = None, bomb_hint: str = ""):
        self.raw, self.budget, self.source, self.hint, self.pos = raw, budget, source, hint, 0
        self.bomb, self.bomb_hint = bomb, bomb_hint

    def _check(self, end: int) -> None:
        if end > self.budget:
            raise BundleError(f"{self.source} unpacks to more than {self.budget:,} bytes ({self.hint})")
        if self.bomb is not None and end > self.bomb:   # headers, padding and data alike
            raise BundleError(f"{self.source} unpacks to more than {self.bomb:,} bytes from {self.bomb_hint}, a "
                              "decompression bomb")

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:               # read to the end: one byte past the budget shows an overflow
            data = self.raw.read(self.budget - self.pos + 1)
            self._check(self.pos + len(data))
        else:
            if n > MAX_READ:   # only tarfile reads a header whole (pax, GNU long name); data comes in 1 MiB reads
                raise BundleError(f"{self.source}: a tar header of {n:,} bytes (pax or GNU long name; at most "
                                  f"{MAX_READ:,}): a malformed or hostile archive")
            self._check(self.pos + n)
            data = self.raw.read(n)
        self.pos += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self.pos + offset if whence == 1 else None
        if target is None:
            raise BundleError(f"{self.source}: cannot seek from the end of a compressed archive")
        if target < self.pos:
            raise BundleError(f"{self.source} is malformed: a member points back to an earlier offset "
                              f"({target} < {self.pos})")
        self._check(target)
        self.raw.seek(target)
        self.pos = target
        return target

    def tell(self) -> int:
        return self.pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True


# The longest gzip header name or comment (FNAME, FCOMMENT) a bundle may carry; `gzip` writes a file name of a few
# dozen bytes, and Python's gzip reads these fields (and zero padding between members) one byte per call.
MAX_GZIP_FIELD = 64 * 1024


class _GzipFields:
    """The packed file as GzipFile reads it: a run of more than MAX_GZIP_FIELD one-byte reads (a header's FNAME or
    FCOMMENT, or zero padding, read byte by byte) is refused, since a field of gigabytes would take minutes."""

    def __init__(self, raw, source: str):
        self.raw, self.source, self.run = raw, source, 0

    def read(self, n: int = -1) -> bytes:
        self.run = self.run + 1 if n == 1 else 0
        if self.run > MAX_GZIP_FIELD:
            raise BundleError(f"{self.source}: a gzip header field (file name or comment) or padding longer than "
                              f"{MAX_GZIP_FIELD:,} bytes: a malformed or hostile archive")
        return self.raw.read(n)

    def __getattr__(self, name):
        return getattr(self.raw, name)


_KINDS = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.CHRTYPE: "a character device",
          tarfile.BLKTYPE: "a block device", tarfile.FIFOTYPE: "a FIFO", tarfile.CONTTYPE: "a contiguous file",
          tarfile.GNUTYPE_SPARSE: "a sparse file"}


def _refuse_member(m: tarfile.TarInfo, seen: dict[str, str], counts: dict, limits: Limits, packed: int,
                   under: dict[str, str] | None = None) -> str:
    """Why an archive member may not be unpacked ('' if it may), from its header alone. `under` maps each folder
    that earlier members lie under to the first of them (a file member of that name is refused naming both)."""
    why = safe_name(m.name.removeprefix("./"))
    if why:
        return f"member {m.name[:200]!r} has {why}"
    if m.issparse() or m.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
        kind = "a sparse file" if m.issparse() else _KINDS.get(m.type, f"of tar type {m.type!r}")
        return f"member {m.name!r} is {kind}: a bundle holds only regular files and folders"
    name = m.name.removeprefix("./").rstrip("/")
    if name in seen:
        return f"member {m.name!r} appears twice"
    parent = posixpath.dirname(name)
    while parent:
        if seen.get(parent) == "file":
            return f"member {m.name!r} lies under {parent!r}, which is a file"
        parent = posixpath.dirname(parent)
    if not m.isdir() and under and name in under:
        return f"member {m.name!r} is a file, but the earlier member {under[name]!r} lies under it"
    counts["members"] += 1
    if counts["members"] > limits.members:
        return f"more than {limits.members:,} members ({limits.hint('members')})"
    if m.isdir():
        return ""
    if m.size < 0:
        return f"member {m.name!r} has a negative size ({m.size:,}): a malformed or hostile header"
    if m.size > limits.member_bytes:
        return (f"member {m.name!r} has {m.size:,} bytes, more than {limits.member_bytes:,} "
                f"({limits.hint('member_bytes')})")
    if is_pickle(m.name):
        return f"member {m.name!r} is a pickle (a bundle never holds pickles: loading one can run code)"
    counts["bytes"] += m.size
    if counts["bytes"] > limits.total_bytes:
        return f"more than {limits.total_bytes:,} bytes in all ({limits.hint('total_bytes')})"
    if counts["bytes"] > max(Limits.RATIO_FREE, limits.ratio * packed):
        return (f"{counts['bytes']:,} bytes unpacked from {packed:,} packed: more than {limits.ratio:g} times its "
                f"size, a decompression bomb ({limits.hint('ratio')})")
    return ""


# the magic numbers of the compressions tarfile could read but a bundle never uses (it is gzip or plain tar)
_OTHER_COMPRESSION = ((b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"),
                      (b"\x5d\x00\x00", "lzma"), (b"PK\x03\x04", "zip"), (b"7z\xbc\xaf", "7z"))


def unpack(source: Path, dest: Path, limits: Limits | None = None) -> None:
    """Unpack the archive `source` (.tar.gz or .tar) into the existing folder `dest`, refusing (BundleError) any
    member that is not a plain regular file or folder inside `dest`, or beyond the limits, before writing it."""
    limits = limits or Limits.from_env()
    packed = source.stat().st_size
    with open(source, "rb") as fh:
        magic = fh.read(2)
        fh.seek(0)
        head = fh.read(6)
        fh.seek(0)
        other = next((kind for sig, kind in _OTHER_COMPRESSION if head.startswith(sig)), None)
        if other:
            raise BundleError(f"{source.name} is {other}-compressed; a bundle is a .tar.gz (gzip) or a plain .tar, "
                              "as `repro-dpadmm bundle` writes it")
        raw = gzip.GzipFile(fileobj=_GzipFields(fh, source.name), mode="rb") if magic == b"\x1f\x8b" else fh
        # headers and padding of every member, on top of the data the caps allow
        headers = 4 * 512 * (limits.members + 2) + 2**20
        budget = _Budget(raw, limits.total_bytes + headers, source.name, limits.hint("total_bytes"),
                         int(max(Limits.RATIO_FREE, limits.ratio * packed)),
                         f"{packed:,} packed (more than {limits.ratio:g} times its size; {limits.hint('ratio')})")
        seen: dict[str, str] = {}
        under: dict[str, str] = {}   # a folder earlier members lie under -> the first of them
        counts = {"members": 0, "bytes": 0}
        last = -1
        try:
            with tarfile.open(fileobj=budget, mode="r:") as tar:
                for m in tar:
                    if m.isdir() and m.name.rstrip("/") in (".", ""):   # `tar -C <folder> .` names the folder "./"
                        continue
                    if m.offset <= last:
                        raise BundleError(f"{source.name} is malformed: member {m.name!r} at offset {m.offset} "
                                          "does not follow the previous one")
                    last = m.offset
                    why = _refuse_member(m, seen, counts, limits, packed, under)
                    if why:
                        raise BundleError(f"{source.name}: {why}")
                    name = m.name.removeprefix("./").rstrip("/")
                    parent = posixpath.dirname(name)
                    while parent and parent not in under:   # its folders, so far unnamed by any member
                        under[parent] = m.name
                        parent = posixpath.dirname(parent)
                    target = dest.joinpath(*name.split("/"))
                    if m.isdir():
                        seen[name] = "dir"
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    seen[name] = "file"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    _write_member(tar, m, target, source.name)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise BundleError(f"cannot unpack {source.name}: {exc}") from None
        except OSError as exc:
            raise BundleError(f"cannot unpack {source.name}: {exc.strerror or exc}") from None


def _write_member(tar: tarfile.TarFile, m: tarfile.TarInfo, target: Path, source: str) -> None:
    """Write exactly m.size bytes of a regular member into a new file (never through a link, never over a file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as out, tar.extractfile(m) as data:
        left = m.size
        while left:
            chunk = data.read(min(left, MAX_READ))
            if not chunk:
                raise BundleError(f"{source} is truncated: member {m.name!r} ends early")
            out.write(chunk)
            left -= len(chunk)


SHOWN_PROBLEMS = 20   # lines of a manifest mismatch on the terminal; a stranger's bundle may have any number


def _listed(problems: list[str], n: int = SHOWN_PROBLEMS) -> str:
    """The first `n` problems, one per indented line, and how many more there are of each kind."""
    lines = [f"  {p}" for p in problems[:n]]
    if len(problems) > n:
        kinds = {}
        for p in problems[n:]:
            kind = re.sub(r"\bline \d+", "line N", p.split(":", 1)[0])
            kinds[kind] = kinds.get(kind, 0) + 1
        lines.append(f"  ... and {len(problems) - n:,} more (" +
                     ", ".join(f"{k}: {v:,}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:5]) + ")")
    return "\n".join(lines)


@contextmanager
def opened(source: str | Path, limits: Limits | None = None):
    """The folder of a bundle (an archive is unpacked into a temporary folder for the duration), verified against
    its manifest; raises BundleError naming every modified, missing, unlisted or unsafe file."""
    source = Path(source)
    limits = limits or Limits.from_env()
    if source.is_dir():
        problems = verify(source, limits)   # said first, of the folder as given
        if problems:
            raise BundleError(f"{source} is refused as a results bundle:\n" + _listed(problems))
    elif source.exists() and not source.is_file():
        raise BundleError(f"{source} is not a regular file: a bundle is a .tar.gz file or its unpacked folder")
    elif not source.is_file():
        raise BundleError(f"no bundle at {source}")
    tmp_root = Path(tempfile.gettempdir())
    locks.sweep(tmp_root, UNPACK_PREFIX, unnamed_stale=False)   # of re-judges that were killed (SIGKILL, power loss)
    with locks.signals_raise():
        tmp = locks.owned_dir(tmp_root, UNPACK_PREFIX)
        try:
            if source.is_dir():
                # a private copy, verified again, is what the report reads: whoever can write into the folder could
                # otherwise swap a checked file for a link between the check and the copy into the report
                _snapshot(source, tmp / "bundle")
            else:
                unpack(source, tmp, limits)
            tops = sorted(p.name for p in tmp.iterdir())
            if len(tops) != 1 or not (tmp / tops[0]).is_dir():
                raise BundleError(f"{source.name} is not a results bundle: it must hold one folder, and it holds "
                                  f"{len(tops)} entries at its top ({', '.join(tops[:5]) or 'nothing'})")
            folder = tmp / tops[0]
            problems = verify(folder, limits)
            if problems:
                raise BundleError(f"{source} is refused as a results bundle:\n" + _listed(problems))
            yield folder
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _snapshot(folder: Path, dest: Path) -> None:
    """Copy the folders and regular files under `folder` into `dest`, never following a link: each file is opened
    with O_NOFOLLOW and copied from the descriptor whose type was checked. BundleError for anything else (the folder
    changed since it was verified)."""
    for here, entries, _ in walk(folder):
        (dest / here.relative_to(folder)).mkdir(parents=True, exist_ok=True)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                continue
            rel = Path(entry.path).relative_to(folder)
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            except OSError:
                fd = None
            if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
                if fd is not None:
                    os.close(fd)
                raise BundleError(f"{folder}: {safeload.printable(rel.as_posix())} is no longer a regular file (the "
                                  "folder changed while it was read)")
            with os.fdopen(fd, "rb") as src, open(dest / rel, "xb") as out:
                shutil.copyfileobj(src, out, 1 << 20)


def param_differences(results: Path, root: Path) -> dict[str, list[str]]:
    """{"<paper>/<item>": ["path: run value in the run, current value now", ...]} for every bundled item whose
    executed parameters (papermill's record in its notebook) differ from what the current config would pass it: one
    entry per differing leaf, named by its path (`panels.a9a.epsilons[1]`), whole (the summary cuts them, see
    Difference)."""
    from .provenance import executed_params, load_config

    current = load_config(root)  # config/config.yaml as the report reads it
    if not current:
        return {"<config>": [f"no readable config/config.yaml under {root}"]}
    out = {}
    for item_dir in sorted(p for p in results.glob("*/*") if p.is_dir() and p.parent.name != "report"):
        paper, item = item_dir.parent.name, item_dir.name
        ran = executed_params(item_dir, item)
        if ran is None:
            continue
        cfg = (current.get("papers") or {}).get(paper, {}).get(item)
        if cfg is None:
            out[f"{paper}/{item}"] = ["not in the current config"]
            continue
        diffs = [Difference.of(*leaf) for leaf in leaf_differences(ran, {**cfg, "seed": current.get("seed")})]
        if diffs:
            out[f"{paper}/{item}"] = diffs
    return out


_ABSENT = object()   # a key (or list element) one side does not have


def leaf_differences(ran, now) -> list[tuple[str, object, object]]:
    """[(path, value in the run, value now)] of every leaf where two parameter values differ: mappings compared key
    by key (key order is no difference) and lists element by element, down to the values that differ; a key or
    element only one side has is _ABSENT on the other. Paths as `panels.a9a.epsilons[1]`, in sorted key order.
    Iterative: a bundle's notebook may nest its parameters as deep as its reader allows."""
    out, stack = [], [("", ran, now)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            keys = sorted(set(a) | set(b), key=str)
            stack += [(f"{path}.{k}" if path else str(k), a.get(k, _ABSENT), b.get(k, _ABSENT))
                      for k in reversed(keys)]
        elif isinstance(a, list) and isinstance(b, list) and path:
            stack += [(f"{path}[{i}]", a[i] if i < len(a) else _ABSENT, b[i] if i < len(b) else _ABSENT)
                      for i in reversed(range(max(len(a), len(b))))]
        elif a is _ABSENT or b is _ABSENT or type(a) is not type(b) and (isinstance(a, bool) or isinstance(b, bool)) \
                or a != b:
            out.append((path, a, b))
    return out


class Difference(str):
    """One parameter difference, whole (as rejudged.json records it); `short` is the same with its path and values
    cut for the terminal (made when shown: a bundle's notebook may record any number of parameters)."""

    @classmethod
    def of(cls, path: str, ran, now) -> Difference:
        self = cls(cls._text(path, ran, now, None))
        self._leaf = (path, ran, now)
        return self

    @property
    def short(self) -> str:
        return self._text(*self._leaf, 60)

    @staticmethod
    def _text(path: str, ran, now, n: int | None) -> str:
        def value(v):
            text = v if isinstance(v, str) and v and v == v.strip() else json.dumps(v)
            return text if n is None else _short(text, n)

        shown = path if n is None or len(path) <= n else path[: n // 2 - 1] + "..." + path[-(n // 2 - 2):]
        if now is _ABSENT:
            return f"{shown}: only in the run ({value(ran)})"
        if ran is _ABSENT:
            return f"{shown}: only in the current config ({value(now)})"
        return f"{shown}: {value(ran)} in the run, {value(now)} now"


def claims_differences(folder: Path, root: Path) -> list[str]:
    """The claims files of the checkout at `root` that differ from (or are absent in) the bundle's own copy: the
    re-judge always uses the checkout's files and their rules, so these are what may change a verdict."""
    here, there = root / "config" / "claims", folder / "config" / "claims"
    names = sorted({p.name for p in here.glob("*.yaml")} | {p.name for p in there.glob("*.yaml")})
    return [n for n in names if not (here / n).is_file() or not (there / n).is_file()
            or (here / n).read_bytes() != (there / n).read_bytes()]


# What the re-judge's summary shows of the parameters that differ (rejudged.json has them all): a bundle's notebook
# may record any number of parameters, and the terminal is no place for all of them.
SHOWN_ITEMS = 20
SHOWN_DIFFS = 5


def _first(diffs: list[str], n: int, show=str) -> str:
    """The first `n` of `diffs` (each as `show` gives it) joined by '; ', and how many more there are."""
    more = f"; ... and {len(diffs) - n:,} more" if len(diffs) > n else ""
    return "; ".join(map(show, diffs[:n])) + more


def _short(value, n: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= n else text[: n - 3] + "..."


def _bundle_json(path: Path, name: str, expect):
    """A JSON file of the bundle read through safeload (None when absent); BundleError naming `name` if unreadable."""
    if not path.is_file():
        return None
    try:
        return safeload.load_json(path, expect=expect, name=name)
    except safeload.LoadError as exc:
        raise BundleError(f"the bundle's {exc}") from None


def read_verdicts(path: Path, name: str) -> dict[str, str]:
    """{claim id: verdict} of a claims.json ({} when there is none); BundleError naming `name` if it is unreadable."""
    records = _bundle_json(path, name, list) or []
    bad = [i for i, r in enumerate(records)
           if not (isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("verdict"), str))]
    if bad:   # passed over, the claim was called new, "not in the bundle's judgement"
        raise BundleError(f"{name}: record {bad[0]}{f' (and {len(bad) - 1:,} more)' if len(bad) > 1 else ''} is not a "
                          "claim's judgement (an object with a text id and a text verdict), as every report writes "
                          "them")
    # a verdict is a word or two of the report's vocabulary: one of any length was printed whole, once per claim
    return {safeload.clipped(r["id"]): safeload.clipped(r["verdict"], VERDICT_MAX) for r in records}


VERDICT_MAX = 60   # the characters of a bundle's judged verdict that are shown (the longest the report writes: 17)


def judged_by(path: Path, name: str) -> str:
    """Which claims rules a bundle's claims.json was judged by: records with a computed `cause` come from the rules
    of Claims v3 (causes computed over every reading); older ones typed their causes in findings."""
    records = _bundle_json(path, name, list) or []
    if not records:
        return "no judgement"
    return "v3" if any(isinstance(r, dict) and "thresholds" in r for r in records) else "before v3"


def verdict_changes(old: dict[str, str], new: dict[str, str]) -> list[dict]:
    """Claims whose verdict differs between two judgements (new and removed claims included)."""
    return [{"id": cid, "before": old.get(cid), "after": new.get(cid)}
            for cid in sorted(set(old) | set(new)) if old.get(cid) != new.get(cid)]


def read_provenance(folder: Path) -> dict:
    """The bundle's provenance.json, checked against PROVENANCE_SCHEMA; BundleError naming the field otherwise, or
    saying it is missing (every bundle `repro-dpadmm bundle` makes has one)."""
    if not (folder / PROVENANCE).is_file():
        raise BundleError(f"the bundle has no {PROVENANCE} (or it is not a file): every bundle `repro-dpadmm bundle` "
                          "makes records where and how its run was made there")
    prov = _bundle_json(folder / PROVENANCE, PROVENANCE, dict) or {}
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(PROVENANCE_SCHEMA).iter_errors(prov))
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "top level"
        raise BundleError(f"the bundle's {PROVENANCE}: {where}: {error.message[:300]}")
    return safeload.clip_strings(prov)   # its strings are shown on every page (its datasets have no schema cap)


@dataclass
class Rejudged:
    source: str
    out_dir: Path
    provenance: dict
    files: int
    params_differ: dict[str, list[str]] = field(default_factory=dict)
    changes: list[dict] = field(default_factory=list)
    report: object = None
    claims_differ: list[str] = field(default_factory=list)   # checkout claims files that differ from the bundle's
    rules: str = ""             # the claims rules the bundle was judged by ("v3", "before v3", "no judgement")

    def record(self) -> dict:
        prov = self.provenance
        # the bundle's file name only: the re-judged report is shared, the re-judger's folders are not
        return {"bundle": Path(self.source).name, "manifest_files": self.files,
                "bundle_made": prov.get("created"), "bundle_git": (prov.get("git") or {}).get("describe"),
                "bundle_repro_dpadmm": prov.get("repro_dpadmm"),
                "verdict_changes": self.changes, "params_differ_from_current_config": self.params_differ,
                "claims_files_differ_from_bundle": self.claims_differ, "bundle_judged_by_rules": self.rules}

    def summary(self) -> str:
        prov = self.provenance
        lines = [f"bundle {self.source}: manifest ok ({self.files} files); made {prov.get('created')} at "
                 f"{(prov.get('git') or {}).get('describe', 'unknown commit')}, repro-dpadmm "
                 f"{prov.get('repro_dpadmm')}, Python {prov.get('python')}"]
        if self.rules == "before v3":
            lines.append("the bundle was judged by the claims rules before v3 (causes typed in findings, the "
                         "degenerate rule on both sides of a comparison); this judgement uses v3 (causes computed "
                         "from the verdicts under every reading, the degenerate rule on the side claimed better)")
        if self.claims_differ:   # a bundle may carry any number of claims files, of any name length
            differ = self.claims_differ
            more = f" ... and {len(differ) - SHOWN_ITEMS:,} more" if len(differ) > SHOWN_ITEMS else ""
            lines.append("judged with this checkout's claims files and rules, not the bundle's; these differ from the "
                         f"bundle's copy ({len(differ)}): {', '.join(_short(n) for n in differ[:SHOWN_ITEMS])}{more}"
                         " (the bundle's "
                         "own judgement is its results/report/claims.json)")
        changed = [c for c in self.changes if c["before"] and c["after"]]
        if self.rules == "no judgement":   # nothing to compare with: every verdict would count as a "new claim"
            lines.append(f"the bundle holds no judgement (its {REPORT_DIR}/claims.json is missing or lists no "
                         f"claim): its {sum(1 for c in self.changes if c['after']):,} verdicts are judged here for "
                         "the first time, with nothing to compare them with")
        elif changed:
            lines.append(f"verdicts changed since the bundle was judged ({len(changed)}):")
            lines += [f"  {_short(c['id'])}: {c['before']} -> {c['after']}" for c in changed[:SHOWN_ITEMS]]
            if len(changed) > SHOWN_ITEMS:
                lines.append(f"  ... and {len(changed) - SHOWN_ITEMS:,} more (rejudged.json lists them all)")
        else:
            lines.append("no verdict changed since the bundle was judged")
        for side, what in (("before", "new claims, not in the bundle's judgement"),
                           ("after", "claims of the bundle's judgement that no longer exist")):
            if self.rules == "no judgement":
                break
            ids = [c["id"] for c in self.changes if not c[side]]
            if ids:
                lines.append(f"{len(ids)} {what}: " + ", ".join(_short(i) for i in ids[:5])
                             + (" ..." if len(ids) > 5 else ""))
        if self.params_differ:
            lines.append(f"items whose parameters differ from the current config ({len(self.params_differ)}):")
            for name, diffs in list(self.params_differ.items())[:SHOWN_ITEMS]:
                lines.append(f"  {_short(name)}: " + _first(diffs, SHOWN_DIFFS, lambda d: getattr(d, "short", d)))
            if len(self.params_differ) > SHOWN_ITEMS:
                lines.append(f"  ... and {len(self.params_differ) - SHOWN_ITEMS:,} more items (rejudged.json lists "
                             "them all)")
        else:
            lines.append("every bundled item ran with the current config's parameters")
        # every line may carry the bundle's strings (ids, verdicts, parameters, provenance): shown escaped
        return "\n".join(safeload.printable(line) for line in lines)


def rejudge(source: str | Path, out_dir: str | Path, *, root: Path | None = None) -> Rejudged:
    """Rebuild the report and every verdict from a bundle (archive or unpacked folder) with the current claims files
    of the project at `root`, into `out_dir`; nothing is recomputed. Also writes `out_dir/rejudged.json`."""
    from .report import build_report

    from .staging import PROJECT_FOLDERS, OutDirError, _shown_path, check_report_folder

    root = Path(root) if root else project_root()
    out_dir = Path(out_dir).resolve()
    shown = _shown_path(out_dir, root)
    results, rejudged = (root / "results").resolve(), (root / REJUDGED_DIR).resolve()
    # `bundle` packs everything under results/ but results/rejudged/: a stranger's report elsewhere would ride along
    if out_dir.is_relative_to(results) and not out_dir.is_relative_to(rejudged):
        raise OutDirError(f"--out-dir {shown} lies in the project's results/, which `repro-dpadmm bundle` packs: a "
                          f"re-judged bundle's report goes under {REJUDGED_DIR}/ (the default) or outside the project")
    tmp = Path(tempfile.gettempdir()).resolve()
    if tmp.is_relative_to(out_dir):   # the unpacked (or copied) bundle would fill the out-dir
        raise OutDirError(f"the temporary folder {tmp} (TMPDIR) lies in --out-dir {shown}, where the bundle is "
                          "unpacked (or copied) for the re-judge; set TMPDIR to a folder outside it")
    if tmp.is_relative_to(results):   # a killed re-judge would leave the stranger's files where `bundle` packs them
        raise OutDirError(f"the temporary folder {tmp} (TMPDIR) lies in the project's results/, which `repro-dpadmm "
                          "bundle` packs; set TMPDIR to a folder outside it")
    # a bundle given as a folder is never written into (nor a folder around it): checked before anything is unpacked
    keep_out = (Path(source).resolve(),) if Path(source).is_dir() else ()
    if keep_out and not (Path(source) / MANIFEST).is_file():
        # said first: a project's own folder (or any other) would otherwise be refused as the output's surroundings
        raise BundleError(f"{source} is not a results bundle: it has no {MANIFEST} at its top (`repro-dpadmm bundle` "
                          "makes one of a finished run; `repro-dpadmm report` without --results judges this project)")
    check = dict(kind="rejudged", source=source_id(source), root=root,
                 protected=(*(root / folder for folder in PROJECT_FOLDERS), root / REPORT_DIR, *keep_out))
    check_report_folder(out_dir, **check)
    with opened(source) as folder:
        prov = read_provenance(folder)
        judged = read_verdicts(folder / REPORT_DIR / "claims.json", f"{REPORT_DIR}/claims.json")
        origin = {"name": Path(source).name, "created": prov.get("created"),
                  "git": (prov.get("git") or {}).get("describe"), "repro_dpadmm": prov.get("repro_dpadmm"),
                  "python": prov.get("python"), "platform": prov.get("platform"),
                  "packages": {k: v for k, v in (prov.get("packages") or {}).items() if k in KEY_PACKAGES}}
        files = sum(1 for _ in (folder / MANIFEST).read_text().splitlines())
        done = []

        def with_record(report, stage: Path) -> None:
            # written into the staging folder before the swap: a re-judge stopped at any point leaves the earlier
            # report (with its rejudged.json) or this one with its own, never the new pages without it
            result = Rejudged(str(source), out_dir, prov, files, param_differences(folder / "results", root),
                              verdict_changes(judged, {v.claim.id: v.verdict for v in report.verdicts}), report,
                              claims_differences(folder, root),
                              judged_by(folder / REPORT_DIR / "claims.json", f"{REPORT_DIR}/claims.json"))
            (stage / "rejudged.json").write_text(json.dumps(result.record(), indent=2) + "\n")
            done.append(result)

        build_report(out_dir, root=root, results=folder / "results", claims_dir=root / "config" / "claims",
                     processed=folder / "resources" / "processed", bundle=origin, previous=judged,
                     source=check["source"], keep_out=keep_out, before_swap=with_record)
    return done[0]


def rejudge_folder(source: str | Path, parent: Path) -> Path:
    """The default folder of a bundle's re-judge under `parent` (results/rejudged/): the bundle's name without its
    archive suffix, made a plain folder name ('run.v1.tar.gz' -> 'run.v1'; '.hidden.tar.gz' -> 'hidden'; '.tar.gz' ->
    'bundle'); when that folder holds the re-judge of another bundle, the name gets a hash of this bundle's path, so
    that two bundles of one name never share (or replace) a folder."""
    from .staging import read_report_mark

    source = Path(source)
    name = source.name
    for suffix in (".tar.gz", ".tgz", ".tar"):
        if name.endswith(suffix):   # '.tar.gz' alone leaves nothing: the folder is then 'bundle'
            name = name[: -len(suffix)]
            break
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".-")[:100] or "bundle"
    folder = parent / name
    mark = read_report_mark(folder) if folder.is_dir() else None
    here = source_id(source)
    if folder.exists() and (mark is None or mark.get("source") != here):
        folder = parent / f"{name}-{here.rsplit('#', 1)[1][:10]}"
    return folder


def source_id(source: str | Path) -> str:
    """How a re-judged report's marker names its bundle: the file name and a hash of its absolute path (two bundles
    of one name stay apart; the re-judger's folders are not written into the report)."""
    source = Path(source)
    return f"{source.name}#{hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]}"
