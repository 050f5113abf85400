"""An item's outputs are complete or absent: a run writes into a hidden staging folder beside the item's folder and,
only when it succeeded, commits it: the old metrics.json goes first, then the old files, then the new files move in
and the new metrics.json last. So a folder holding a metrics.json holds exactly the files of the run that wrote it
(never an old figure beside new metrics, never an old notebook's parameters), and a run killed at any point leaves the
previous complete outputs, the new complete outputs, or a folder without metrics.json, which the report and Snakemake
treat as "not run yet" and the next run clears. A hidden manifest (`.outputs.json`) lists what the run wrote, and only
that is ever removed: sub-folders of other rules (beyond/frontier's `jobs/`, linked into the staging folder so the
notebook sees them) and a user's own files in an `--out-dir` stay.

The runner (`repro_dpadmm.runner`) stages every item it runs; a notebook run by hand (Jupyter, `jupyter nbconvert
--execute`) stages through the same functions (`experiments.common.setup_item` / `write_metrics`).

Each run also leaves `settings.json`: the parameters it ran with, the name of a what-if run, and how the parameters
differ from the paper settings of `config/config.yaml` (what the notebook, its figures and the report state).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import sys
from contextlib import contextmanager
from pathlib import Path

from . import locks, safeload
from .paths import SETTINGS

METRICS = "metrics.json"
MANIFEST = ".outputs.json"  # the names a run wrote into the item's folder (so a rerun removes exactly those)
STAGING = ".staging-"
BUNDLE_MANIFEST = "MANIFEST.sha256"   # at the top of a results bundle (repro_dpadmm.bundle)
PAPER_SETTINGS = "config/config.yaml"


def owned(out_dir: Path, item: str, legacy_all: bool) -> list[Path]:
    """The entries of `out_dir` that runs of this item wrote, hence may remove: those its manifest lists; without a
    manifest, every file of a results/ folder written before manifests existed (`legacy_all`), and nothing of any
    other folder (an `--out-dir`'s files of an output's name may be a user's: a run refuses them, `check_collisions`).
    Anything else in the folder (another rule's sub-folder, a user's files) is left alone."""
    if not out_dir.is_dir():
        return []
    try:
        names = safeload.load_json(out_dir / MANIFEST)
    except safeload.LoadError:
        names = None
    if not isinstance(names, list):   # a results/ folder written before manifests; an --out-dir: nothing is ours
        names = ([p.name for p in out_dir.iterdir() if not p.name.startswith(".") and
                  (p.is_symlink() or not p.is_dir())] if legacy_all else [])
    entries = [out_dir / n for n in map(str, names) if plain_name(n) and n != MANIFEST]
    return [p for p in entries if p.exists() or p.is_symlink()]


def plain_name(name) -> bool:
    """Whether a name read from a manifest or marker (which may come from anywhere) names an entry of the folder
    itself: never "", "." or ".." (the folder or its parent), never a path."""
    return isinstance(name, str) and name not in ("", ".", "..") and not any(c in name for c in "/\\\x00")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _write_manifest(out_dir: Path, names: list[str]) -> None:
    tmp = out_dir / (MANIFEST + ".part")
    tmp.write_text(json.dumps(sorted(set(names))) + "\n")
    os.replace(tmp, out_dir / MANIFEST)


def remove_outputs(out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Remove an item's outputs, metrics.json first (from then on the folder reads as "not run yet")."""
    if (out_dir / METRICS).exists():
        (out_dir / METRICS).unlink()
    for p in owned(out_dir, item, legacy_all):
        _remove(p)
    if (out_dir / MANIFEST).exists():
        (out_dir / MANIFEST).unlink()


def clear_incomplete(out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Remove what killed runs left: staging folders whose process is gone (`locks.sweep`; a live run's stays), and
    the outputs of an item folder without metrics.json."""
    locks.sweep(stage_parent(out_dir, legacy_all), f".{out_dir.name}{STAGING}")
    if not (out_dir / METRICS).is_file():
        remove_outputs(out_dir, item, legacy_all)


def item_lock(paper: str, item: str, out_dir: Path, wait: bool = True, own: bool = True):
    """The lock one run of an item holds: `.<folder>.lock` beside an item's own folder of results/, inside any other
    output folder (`stage_parent`; locks.held). A notebook run by hand takes it while it clears and while it commits
    (experiments.common), so neither interleaves with a run's."""
    return locks.held(stage_parent(out_dir, own) / f".{out_dir.name}.lock", f"item {paper}/{item} ({out_dir})",
                      wait=wait)


def check_collisions(out_dir: Path, item: str, names, legacy_all: bool = True) -> None:
    """OutDirError when an output folder other than the item's own (`legacy_all` False: an `--out-dir`) holds an
    entry of one of `names` that no run of this item wrote: a user's file is never replaced by a run's output."""
    if legacy_all or not out_dir.is_dir():
        return
    mine = {p.name for p in owned(out_dir, item, legacy_all)}
    foreign = [n for n in dict.fromkeys(names) if n not in mine and ((out_dir / n).exists() or (out_dir / n).is_symlink())]
    if foreign:
        listed = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise OutDirError(f"{out_dir.name}/ holds {listed}, which no run of {item} wrote there, and the run's outputs "
                          "have the same names; move them away or give another output folder")


def commit(stage: Path, out_dir: Path, item: str, legacy_all: bool = True) -> None:
    """Replace the item's outputs by the staged ones; metrics.json leaves first and arrives last. The manifest
    always covers every output that may be present, so an interrupted commit is cleared by the next run. In an
    `--out-dir` an entry of an output's name that no run wrote stops the commit before anything moves."""
    out_dir.mkdir(parents=True, exist_ok=True)
    new = sorted(p.name for p in stage.iterdir() if not p.is_symlink() and p.name != METRICS)
    check_collisions(out_dir, item, [*new, METRICS], legacy_all)
    old = [p.name for p in owned(out_dir, item, legacy_all)]
    _write_manifest(out_dir, [*old, *new, METRICS])
    if (out_dir / METRICS).exists():
        (out_dir / METRICS).unlink()
    for name in old:
        if name != METRICS:
            _remove(out_dir / name)
    for name in new:
        if (out_dir / name).is_dir() and not (out_dir / name).is_symlink():
            shutil.rmtree(out_dir / name)
        os.replace(stage / name, out_dir / name)
    _write_manifest(out_dir, [*new, METRICS])
    os.replace(stage / METRICS, out_dir / METRICS)


def stage_parent(out_dir: Path, legacy_all: bool) -> Path:
    """Where the staging folders (and the lock) of runs into `out_dir` live: beside an item's own folder of results/
    (Snakemake removes that folder before a job), inside any other output folder (nothing is written in a folder the
    user did not name)."""
    return out_dir.parent if legacy_all else out_dir


def new_stage(out_dir: Path, item: str, legacy_all: bool = True) -> Path:
    """A new staging folder for `out_dir` (`stage_parent`), with links to the sub-folders other rules keep in it."""
    stage_parent(out_dir, legacy_all).mkdir(parents=True, exist_ok=True)
    mine = owned(out_dir, item, legacy_all)
    folder = locks.owned_dir(stage_parent(out_dir, legacy_all), f".{out_dir.name}{STAGING}")   # named by its process
    os.chmod(folder, 0o755)
    for sub in out_dir.iterdir() if out_dir.is_dir() else []:
        if sub.is_dir() and not sub.is_symlink() and sub not in mine and not sub.name.startswith("."):
            (folder / sub.name).symlink_to(sub.resolve(), target_is_directory=True)
    return folder


def own_folder(out_dir: Path, root: Path) -> bool:
    """Whether `out_dir` is an item's own folder of the project, `results/<paper>/<item>/` or
    `results/whatif/<name>/<paper>/<item>/` (every file in it is the item's); elsewhere (`--out-dir`, including other
    folders below results/) only what a run wrote is ever removed."""
    results = (root / "results").resolve()
    target = out_dir.resolve()
    if not target.is_relative_to(results):
        return False
    parts = target.relative_to(results).parts
    return (len(parts) == 2 and parts[0] not in ("report", "rejudged", "whatif")) or \
        (len(parts) == 4 and parts[0] == "whatif" and parts[3] != "report")


# the checkout's folders an item run never writes into: its tracked tree, the datasets it reads (resources/: raw
# files and processed sidecars the workflow checks), the logs and Snakemake's own state
PROJECT_FOLDERS = ("config", "src", "workflow", "notebooks", "tests", "docs", "benchmarks", "envs", "resources",
                   "logs", ".git", ".snakemake")


def check_item_folder(out_dir: Path, root: Path, paper: str, item: str) -> None:
    """OutDirError unless a run of `paper`/`item` may write into `out_dir`: not a file, not the
    project or a folder holding it, not inside the checkout's own folders (PROJECT_FOLDERS), not a
    report's folder, not another item's folder (of results/, or one whose settings.json names another item). Any
    other folder may hold other files: a run removes only what runs wrote there (its manifest)."""
    shown = _shown_path(out_dir, root)
    _check_folder_path(out_dir, shown, root)
    whose = _folder_item(out_dir, root)
    if whose is not None and whose != (paper, item):
        raise OutDirError(f"--out-dir {shown} holds the outputs of {whose[0]}/{whose[1]}; a run of {paper}/{item} "
                          "never writes into another item's folder")
    for above in out_dir.resolve().parents:   # nor into a folder inside one (its parts/, the frontier's jobs/)
        whose = _folder_item(above, root)
        if whose is not None:
            raise OutDirError(f"--out-dir {shown} lies inside {_shown_path(above, root)}, the folder of "
                              f"{whose[0]}/{whose[1]}'s outputs; a run never writes into an item's folder's own "
                              "folders: give an item's folder (results/<paper>/<item>) or one of your own")
    root = Path(root).resolve()
    if root.is_relative_to(out_dir.resolve()):
        raise OutDirError(f"--out-dir {shown} holds the project itself; give a folder of its own")
    results = root / "results"
    if out_dir.resolve().parent == results and out_dir.name in ("report", "rejudged", "whatif"):
        where = ("where what-if runs go, each in a folder of its own (`run --run-name NAME`)" if out_dir.name == "whatif"
                 else "where the project's reports go")
        raise OutDirError(f"--out-dir {shown} is {where}; an item run never writes there: give an item's folder "
                          "(results/<paper>/<item>) or one of your own")
    if out_dir.resolve() == results or out_dir.resolve().parent == results:
        raise OutDirError(f"--out-dir {shown} is the project's results folder or a paper's folder in it, which hold "
                          "other items' outputs; give an item's folder (results/<paper>/<item>) or one of your own")
    tracked = project_folder(out_dir, root)
    if tracked is not None:
        raise OutDirError(f"--out-dir {shown} lies in the checkout's {tracked}/; give a folder of its own")
    if out_dir.is_dir() and ((out_dir / REPORT_MARK).exists() or
                             (_legacy_entries(out_dir) is not None and not (out_dir / METRICS).exists())):
        raise OutDirError(f"--out-dir {shown} holds a report; an item run never writes into a report's folder")
    if out_dir.is_dir() and out_dir.stat().st_mode & stat.S_IWOTH:
        # a folder anyone may write into (the system's temporary folder): other users' files, and a lock or staging
        # folder of this run that others could replace
        raise OutDirError(f"--out-dir {shown} is a folder anyone may write into (like the system's temporary folder); "
                          "give a folder of your own (e.g. one made inside it)")


def _folder_item(out_dir: Path, root: Path) -> tuple[str, str] | None:
    """The (paper, item) whose outputs `out_dir` is or holds: an item's own folder of results/ by its place, any
    other folder by the settings.json a run left there; None when neither says."""
    if own_folder(out_dir, root):
        parts = out_dir.resolve().relative_to((Path(root) / "results").resolve()).parts
        return tuple(parts[-2:])
    record = read_settings(out_dir) if out_dir.is_dir() else None
    if isinstance(record, dict) and isinstance(record.get("paper"), str) and isinstance(record.get("item"), str):
        return record["paper"], record["item"]
    return None


# ------------------------------------------------------------------------------------------------ settings.json

def settings_record(paper: str, item: str, params: dict, *, run: str | None = None, by_hand: bool = False,
                    root: Path | None = None) -> dict:
    """What `settings.json` says about a run: its parameters, the name of a what-if run, and how the parameters
    differ from the paper settings (the item's entry of config/config.yaml and the base seed; `changes` is None
    when that config has no such item), and the commit of the checkout it ran from."""
    from .config import ConfigError, item_params
    from .paths import project_root
    from .provenance import git_state, param_changes

    root = root or project_root()
    try:
        paper_params = item_params(paper, item, root=root)
    except (ConfigError, OSError):
        paper_params = None
    git = git_state(root)
    return {"paper": paper, "item": item, "run": run, "by_hand": by_hand, "params": params,
            "commit": git["describe"] if git.get("commit") else None, "paper_settings": PAPER_SETTINGS,
            "changes": None if paper_params is None else param_changes(params, paper_params)}


def write_settings(folder: Path, record: dict) -> Path:
    path = Path(folder) / SETTINGS
    path.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    return path


def read_settings(folder: Path) -> dict | None:
    """The `settings.json` of an item folder (None when there is none or it cannot be read)."""
    try:
        data = safeload.load_json(Path(folder) / SETTINGS)
    except safeload.LoadError:
        return None
    return data if isinstance(data, dict) else None


def changes_text(changes: list[dict] | None, limit: int | None = None) -> str:
    """"q = 1.03 (paper: 1.01); repeats = 2 (paper: 10)", at most `limit` of them ("... and 3 more")."""
    if not changes:
        return ""
    shown = changes if limit is None else changes[:limit]
    text = "; ".join(f"{c['key']} = {_short(c.get('run'))} (paper: {_short(c.get('paper'))})" for c in shown)
    return text + (f"; and {len(changes) - len(shown)} more" if len(shown) < len(changes) else "")


def _short(value, n: int = 40) -> str:
    if value is None:
        return "unset"
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= n else text[: n - 1] + "…"


# ------------------------------------------------------------------------------------------------ report folders
# A report (the project's, a what-if run's, a re-judged bundle's) is built in a staging folder beside its folder and
# swapped in with signals held back, so a stopped build leaves the previous report or the new one, complete. The
# folder's marker (`REPORT_MARK`) lists the entries the report wrote: only those are ever replaced or removed (a
# user's own files beside them stay), and a folder that holds other files but no marker is never written into.

REPORT_MARK = ".repro-dpadmm-report.json"
REPORT_STAGING = ".report-staging-"
# What a report folder written before markers existed holds (the names build_report writes), taken as the report's
# own only in a folder that has one of LEGACY_SIGNS, or both LEGACY_PAGES (Snakemake removes a job's declared
# outputs, index.html, claims.json, summary.json and items/, before it runs the report again).
LEGACY_SIGNS = ("summary.json", "claims.json", "items")
LEGACY_PAGES = ("privacy.html", "provenance.html")
LEGACY_FILES = ("claims.json", "summary.json", "rejudged.json", "index.html", *LEGACY_PAGES)


class OutDirError(ValueError):
    """An output folder that a report or a run may not write into (the message says which and why)."""


def _check_folder_path(out_dir: Path, shown: str, root: Path | None) -> None:
    """OutDirError when `out_dir` is a file, or lies below one (it could never be made), or lies in a results bundle
    (a folder with MANIFEST.sha256 at its top: a file written there breaks the bundle's manifest, and a bundle's own
    report is what its re-judge compares with)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutDirError(f"the output folder {shown} is a file, not a folder")
    above = next((p for p in out_dir.parents if p.exists() or p.is_symlink()), None)
    if above is not None and not above.is_dir():
        raise OutDirError(f"the output folder {shown} lies below {_shown_path(above, root)}, which is a file, not a "
                          "folder")
    bundle = bundle_around(out_dir)
    if bundle is not None:
        raise OutDirError(f"the output folder {shown} lies in the results bundle {_shown_path(bundle, root)} (its "
                          f"{BUNDLE_MANIFEST}), which is never written into; give a folder of its own")


def bundle_around(path: Path) -> Path | None:
    """The results bundle `path` lies in (or is): the nearest folder at or above it with BUNDLE_MANIFEST at its top."""
    target = Path(path).resolve()
    return next((p for p in (target, *target.parents) if (p / BUNDLE_MANIFEST).is_file()), None)


def project_folder(path: Path, root: Path) -> str | None:
    """The checkout's own folder (PROJECT_FOLDERS) that `path` lies in, if any: never an output's place."""
    target = Path(path).resolve()
    return next((f for f in PROJECT_FOLDERS if target.is_relative_to(Path(root).resolve() / f)), None)


def _shown_path(path: Path, root: Path | None) -> str:
    if root is not None and path.resolve().is_relative_to(root.resolve()):
        return path.resolve().relative_to(root.resolve()).as_posix() or "."
    return str(path)


def read_report_mark(out_dir: Path) -> dict | None:
    """The marker of a report folder ({"kind", "source", "entries"}), None when it has none (or an unreadable one)."""
    try:
        mark = safeload.load_json(out_dir / REPORT_MARK, expect=dict, limit=2**20)
    except safeload.LoadError:
        return None
    return mark if isinstance(mark.get("entries"), list) else None


def _report_location(out_dir: Path) -> bool:
    """Whether `out_dir` is where the project itself puts a report: results/report, results/rejudged/<name> or
    results/whatif/<name>/report. Only there can a folder without a marker be taken for a report written before
    markers existed; anywhere else a report's file names (index.html, items/) may well be a user's own."""
    parts = out_dir.resolve().parts
    return (parts[-2:] == ("results", "report") or parts[-3:-1] == ("results", "rejudged")
            or (len(parts) >= 4 and parts[-1] == "report" and parts[-4:-2] == ("results", "whatif")))


def _written_by_report(out_dir: Path) -> bool:
    """Whether the folder's files are a report's own: its summary.json (a mapping with `papers`) or claims.json (a
    list of claim records), or, where Snakemake removed those, its privacy or provenance page with the report's
    footer. A user's own files of the same names are not."""
    try:
        summary = safeload.load_json(out_dir / "summary.json", expect=dict, limit=2**26)
        if isinstance(summary.get("papers"), dict):
            return True
    except safeload.LoadError:
        pass
    try:
        records = safeload.load_json(out_dir / "claims.json", expect=list, limit=2**28)
        if records and isinstance(records[0], dict) and {"id", "verdict"} <= set(records[0]):
            return True
    except safeload.LoadError:
        pass
    for page in LEGACY_PAGES:
        try:
            with open(out_dir / page, "rb") as fh:
                if b"Built by <code>repro-dpadmm report</code>" in fh.read(2**24):
                    return True
        except OSError:
            pass
    return False


def _legacy_entries(out_dir: Path) -> list[str] | None:
    """The report's own entries of a report folder written before markers (None if the folder is no report)."""
    from .registry import paper_ids

    if not _report_location(out_dir) or not _written_by_report(out_dir):
        return None
    names = {p.name for p in out_dir.iterdir()}
    if not (names & set(LEGACY_SIGNS) or set(LEGACY_PAGES) <= names):
        return None
    pages = {f"{p}.html" for p in paper_ids()}
    own = [n for n in names if n in LEGACY_FILES or n in pages]
    if (out_dir / "items").is_dir() and not (out_dir / "items").is_symlink():
        own.append("items")
    claims = out_dir / "claims"
    if claims.is_dir() and not claims.is_symlink() and all(p.suffix == ".html" for p in claims.iterdir()):
        own.append("claims")
    return sorted(own)


def report_entries(out_dir: Path) -> list[str]:
    """The entries of `out_dir` a report wrote (hence may replace or remove)."""
    if not out_dir.is_dir():
        return []
    mark = read_report_mark(out_dir)
    names = mark["entries"] if mark else (_legacy_entries(out_dir) or [])
    return [n for n in names if plain_name(n) and n != REPORT_MARK
            and ((out_dir / n).exists() or (out_dir / n).is_symlink())]


def check_report_folder(out_dir: Path, *, kind: str, source: str | None = None, root: Path | None = None,
                        protected: tuple[Path, ...] = ()) -> None:
    """Raise OutDirError unless a report of `kind` ("report", "whatif", "rejudged") may be written into `out_dir`:
    not a file; not the project's root, nor a folder holding it; none of `protected` (folders that must never receive
    a report, e.g. a bundle's own folder), nor inside or around one; empty, absent, or a report folder already (its
    marker, or the files of a report written before markers); and not a report of another kind (a project report
    never replaces a what-if run's report, nor a re-judge either, nor the other way round)."""
    shown = _shown_path(out_dir, root)
    _check_folder_path(out_dir, shown, root)
    target = out_dir.resolve()
    if root is not None and Path(root).resolve().is_relative_to(target):
        raise OutDirError(f"--out-dir {shown} holds the project itself; give a folder of its own")
    for folder in protected:
        folder = Path(folder).resolve()
        if target.is_relative_to(folder) or folder.is_relative_to(target):
            raise OutDirError(f"--out-dir {shown} lies inside or around {_shown_path(folder, root)}, which a report "
                              "never writes into; give a folder of its own")
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    mark = read_report_mark(out_dir)
    if mark is None and _legacy_entries(out_dir) is None:
        raise OutDirError(f"--out-dir {shown} is a folder that holds other files and no report; a report never "
                          "writes into (or deletes from) a folder it did not create: give a new or empty folder")
    if mark is not None and mark.get("kind") != kind:
        what = {"rejudged": "a re-judged bundle's report", "whatif": "a what-if run's report"}
        raise OutDirError(f"--out-dir {shown} holds {what.get(mark.get('kind'), 'a project report')}, and this is "
                          f"{what.get(kind, 'a project report')}; give another folder")


def report_stage(out_dir: Path) -> Path:
    """A new staging folder beside `out_dir` for a report being built (named by its process: see locks.sweep)."""
    locks.sweep(out_dir.parent, f".{out_dir.name}{REPORT_STAGING}")
    return locks.owned_dir(out_dir.parent, f".{out_dir.name}{REPORT_STAGING}")


@contextmanager
def _signals_held():
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done (then act as usual)."""
    sigs = {getattr(signal, s) for s in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, s)}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _write_mark(out_dir: Path, kind: str, source: str | None, entries, files=None) -> None:
    tmp = out_dir / (REPORT_MARK + ".part")
    mark = {"kind": kind, "source": source, "entries": sorted(set(entries))}
    if files is not None:   # every file the report wrote inside its entries: any other is a user's, and is kept
        mark["files"] = files
    tmp.write_text(json.dumps(mark) + "\n")
    os.replace(tmp, out_dir / REPORT_MARK)


def _files_below(folder: Path) -> list[str]:
    """Every file under `folder` as a relative POSIX path; a link (also to a folder) is a file here, never followed:
    a user's linked folder inside a report must not have its target's files moved."""
    out = []
    for here, dirs, files in os.walk(folder):   # followlinks=False
        rel = Path(here).relative_to(folder)
        out += [(rel / n).as_posix() for n in files]
        out += [(rel / d).as_posix() for d in dirs if (Path(here) / d).is_symlink()]
    return sorted(out)


def _keep_users_files(trash: Path, out_dir: Path, written: list[str]) -> list[str]:
    """Move the files in `trash` (the old report's entries) that the old report did not write back into `out_dir`,
    where the new report has no file of that name; the ones moved (a user's notes in `items/` were deleted)."""
    kept, written = [], set(written)
    for rel in _files_below(trash):
        if rel in written or (out_dir / rel).exists() or (out_dir / rel).is_symlink():
            continue
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(trash / rel, out_dir / rel)
        kept.append(rel)
    return kept


@contextmanager
def _folder_locked(folder: Path):
    """An exclusive lock on the folder itself (flock on its descriptor: no lock file is left beside a report)."""
    try:
        import fcntl
    except ImportError:   # no file locks on this system: swaps are not serialised
        yield
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def swap_report(stage: Path, out_dir: Path, *, kind: str, source: str | None = None) -> None:
    """Replace the report in `out_dir` by the one built in `stage` (which is consumed): with signals held back, the
    old report's entries move aside and the new ones in (renames only), then the old ones are deleted."""
    out_dir.mkdir(parents=True, exist_ok=True)
    new = sorted(p.name for p in stage.iterdir())
    files = _files_below(stage)
    # one swap at a time per folder (two reports built at once: the second waits, then replaces the first whole);
    # without it, one swap's renames could move the other's entries into its trash
    with _folder_locked(out_dir):
        trash = locks.owned_dir(out_dir.parent, f".{out_dir.name}{REPORT_STAGING}")
        with _signals_held():
            old = report_entries(out_dir)
            written = (read_report_mark(out_dir) or {}).get("files")
            _write_mark(out_dir, kind, source, [*old, *new])
            for name in old:
                os.replace(out_dir / name, trash / name)
            for name in new:
                os.replace(stage / name, out_dir / name)
            # a marker that lists its files (this one's, from now on) tells a user's files from the report's
            kept = _keep_users_files(trash, out_dir, written) if isinstance(written, list) else []
            _write_mark(out_dir, kind, source, new, files)
        shutil.rmtree(trash, ignore_errors=True)
    if kept:
        print(f"report: kept {len(kept):,} file{'s' if len(kept) > 1 else ''} the report did not write: "
              + ", ".join(safeload.printable(k) for k in kept[:5]) + (" ..." if len(kept) > 5 else ""),
              file=sys.stderr)

