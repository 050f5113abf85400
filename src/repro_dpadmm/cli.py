"""`repro-dpadmm`: data, items and environment facts without Snakemake (the workflow calls it too)."""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import platform
import re
import sys
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import registry, safeload
from .safeload import printable, redact
from .provenance import package_versions

WHATIF = "results/whatif"  # what-if runs: results/whatif/<name>/<paper>/<item>/, and their report in .../<name>/report/
REJUDGED = "results/rejudged"  # re-judged bundles: results/rejudged/<bundle name>/


def cmd_info(args) -> int:
    from .datasets.fetch import cache_status, resolve_mirror
    from .paths import project_root

    root = project_root()
    if os.environ.get("REPRO_DPADMM_ROOT") and not (root / "config" / "config.yaml").exists():
        from .config import ConfigError   # as `items`, `run` and `report` refuse it, before calling it a project

        raise ConfigError(f"REPRO_DPADMM_ROOT={printable(os.environ['REPRO_DPADMM_ROOT'])} has no config/config.yaml: "
                          "it must name the project's root (the checkout's top folder)")
    print(f"repro-dpadmm project at {root}")
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    for name, v in package_versions().items():
        if name == "python":
            continue
        print(f"  {name:14s} {v}")
    try:   # the config key counts too, as in the workflow (after --mirror and the environment)
        from .config import read_config_file

        config_mirror = read_config_file(root / "config" / "config.yaml").get("data_mirror")
    except ValueError:
        config_mirror = None
    mirror = resolve_mirror(args.mirror, config_mirror if isinstance(config_mirror, str) else None)
    print(f"data mirror: {printable(redact(mirror)) if mirror else 'none (set REPRO_DPADMM_DATA_MIRROR)'}")
    print("raw cache (resources/raw):")
    for rel, state in cache_status().items():
        print(f"  {state:34s} {rel}")
    return 0


def cmd_data_list(args) -> int:
    from .datasets import DATASETS
    from .datasets.processed import state as dataset_state

    for name, spec in DATASETS.items():
        state, _ = dataset_state(name)
        print(f"{name:16s} {state:12s} {', '.join(spec.papers):40s} {spec.description}")
    return 0


def cmd_data_fetch(args) -> int:
    from .datasets import DATASETS
    from .datasets.fetch import FetchError, fetch_raw
    from .datasets.registry import dataset

    names = args.names or list(DATASETS)
    failed = 0
    for name in names:
        for rel in dataset(name).raw:
            try:
                print(f"ok      {printable(fetch_raw(rel, mirror=args.mirror))}")
            except FetchError as exc:   # the message may quote a mirror's address or a file's name
                failed += 1
                print(f"FAILED  {_printable_lines(exc)}", file=sys.stderr)
    return 1 if failed else 0


def cmd_data_build(args) -> int:
    from .datasets import build

    from . import config
    from .datasets.registry import dataset

    dataset(args.name)  # an unknown name is an error before anything is fetched
    options = config.parse_json(args.options, "--options") if args.options else {}
    config.validate({"seed": 0, "datasets": {args.name: options}, "papers": {}})
    # no schema checks --attempt: NaN or Infinity written into the sidecar would make it unreadable
    attempt = config.parse_json(args.attempt, "--attempt", finite=True) if args.attempt else None
    sidecar = build(args.name, mirror=args.mirror or None, options=options, attempt_state=attempt)
    if sidecar.get("kept"):
        print(f"{args.name}: not rebuilt; {_printable_lines(sidecar['kept'])}", file=sys.stderr)
    elif sidecar["available"]:
        print(f"{args.name}: built {sidecar['arrays']}")
    else:
        print(f"{args.name}: UNAVAILABLE\n{_printable_lines(sidecar['reason'])}", file=sys.stderr)
    return 0  # an unavailable dataset is recorded, not an error: the items that need it say "not run"


def cmd_items(args) -> int:
    """The items the config runs, each as its Snakemake target (repro_dpadmm.registry.Item.target)."""
    from . import config
    from .registry import Item

    from .datasets.fetch import resolve_mirror

    cfg = config.load(*_from_cwd(args.configfile))
    # the workflow's own check of the data mirror in force (workflow/Snakefile): a config it refuses is refused here
    resolve_mirror(None, cfg.get("data_mirror") if isinstance(cfg.get("data_mirror"), str) else None)
    for paper, items in cfg["papers"].items():
        for item in items:
            print(Item(paper, item).target)
    return 0


def _from_cwd(paths: list[str]) -> list[Path]:
    """Paths given on the command line are relative to the working directory (not the project root)."""
    return [Path(p).resolve() for p in paths]


def _item_params(paper: str, item: str, args) -> dict:
    """The item's entry in the config (with --configfile overrides), with --params merged into it key by key (a
    nested mapping is merged, a list or a number replaced), validated by the config's schema before any work."""
    from . import config

    if args.params is not None and not args.params.strip():
        raise ValueError("--params is empty: give a JSON object of the parameters to change, or leave --params out")
    for path in _from_cwd(args.configfile):   # a file given by name is an error when it cannot be read, --params or not
        config.read_config_file(path)
    try:
        params = config.item_params(paper, item, *_from_cwd(args.configfile))
    except (config.ConfigError, OSError):
        if not args.params:
            raise
        params = {}  # no config, or one without the item (a scratch project's): --params must then say everything
    if args.params:
        params = config.deep_merge(params, config.parse_json(args.params, "--params"))
        config.check_item_params(paper, item, params)
    return params


# A run estimated at more than this many times the work of the paper's settings asks for --yes (or
# REPRO_DPADMM_WORK_LIMIT: another factor, or 'off') instead of starting: `iterations: 100000` is schema-valid and
# about a day of computing.
WORK_LIMIT = 20.0
WORK_LIMIT_ENV = "REPRO_DPADMM_WORK_LIMIT"


def _work_limit() -> float | None:
    text = os.environ.get(WORK_LIMIT_ENV, "").strip()
    if not text:
        return WORK_LIMIT
    if text.lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise ValueError(f"{WORK_LIMIT_ENV} must be a positive number or 'off', got {text!r}")
    return value


def _check_cost(paper: str, item: str, params: dict, yes: bool = False) -> None:
    """Before any work: refuse (experiments.estimate.TooLarge, naming the keys) settings whose estimated memory
    exceeds the machine's, and settings estimated at more than WORK_LIMIT times the work of the paper's unless `yes`;
    log the estimate beside the work relative to the paper's settings."""
    from . import config
    from .costs import expected_seconds
    from .experiments import estimate
    from .paths import project_root

    why = estimate.cannot_run(paper, item, params)
    if why:
        raise ValueError(why)
    e = estimate.refuse_too_large(paper, item, params)
    try:
        ref = config.item_params(paper, item)
    except (ValueError, KeyError):
        ref = None
    limit = _work_limit()
    if ref is not None and limit is not None and not yes:
        base = estimate.estimate(paper, item, ref).work
        factor = e.work / base if base > 0 and e.work > 0 else 0.0
        if factor > limit:
            seconds = expected_seconds(paper, item, project_root() / "README.md")
            took = f" (the paper's settings take about {seconds:.0f} s, so about {seconds * factor / 3600:.1f} hours)" \
                if seconds else ""
            raise ValueError(f"{paper}/{item}: these settings are about {factor:.3g}x the work of the paper's "
                             f"settings{took}, more than the {limit:g}x a run starts without asking; lower them, or "
                             f"add --yes (or set {WORK_LIMIT_ENV}=off) to run anyway")
    print(estimate.summary(e, ref), file=sys.stderr, flush=True)


RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def cmd_run(args) -> int:
    from .paths import project_root
    from .locks import Busy
    from .registry import problem
    from .runner import run_item

    root = project_root()
    why = problem(args.paper, args.item, root)
    if why:  # an unregistered item is an error before its parameters are even looked up
        raise ValueError(f"{args.paper}/{args.item}: {why}")
    if args.run_name is not None and not RUN_NAME.fullmatch(args.run_name):
        raise ValueError(f"--run-name {args.run_name!r}: a folder name of letters, digits, '_', '.' and '-' "
                         "(at most 64, starting with a letter or digit)")
    if args.run_name is not None and args.out_dir:
        raise ValueError("--run-name and --out-dir both say where the outputs go: give one of them")
    params = _item_params(args.paper, args.item, args)
    _check_cost(args.paper, args.item, params, args.yes)
    if args.out_dir:
        out_dir = Path(args.out_dir).resolve()
    elif args.run_name is not None:
        out_dir = root / WHATIF / args.run_name / args.paper / args.item
    else:
        out_dir = root / "results" / args.paper / args.item
    # A what-if run is started by hand: its notebook's cell output goes to a log file and the terminal shows progress
    # and a short summary (under Snakemake, a job's stderr is its log already).
    log = root / WHATIF / args.run_name / "logs" / f"{args.paper}_{args.item}.log" if args.run_name else None
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    try:
        with cell_output_to(log, f"{args.paper}/{args.item}"):
            metrics = run_item(args.paper, args.item, params, out_dir, run_name=args.run_name,
                               wait=not args.no_wait)
    except Busy as exc:
        print(f"repro-dpadmm: {exc}", file=sys.stderr)
        return 3
    except PapermillExecutionError as exc:   # the kernel's traceback is in the cell output above (or the log)
        said = " ".join(str(exc.evalue).split())
        print(f"repro-dpadmm: {args.paper}/{args.item}: the notebook failed in cell {exc.exec_count}: {exc.ename}: "
              f"{printable(said[:500])}" + (f" (the whole output: {printable(log)})" if log else "")
              + "; the item's previous outputs are as they were", file=sys.stderr)
        return 1
    except (DeadKernelError, CellTimeoutError) as exc:   # the kernel was killed (out of memory, a signal) or hung
        said = "the notebook's kernel died (killed by a signal, or by the system when memory ran out)" \
            if isinstance(exc, DeadKernelError) else f"a cell ran past its time limit ({' '.join(str(exc).split())[:200]})"
        print(f"repro-dpadmm: {args.paper}/{args.item}: {said}; the item's previous outputs are as they were",
              file=sys.stderr)
        return 1
    shown = out_dir.relative_to(root) if out_dir.is_relative_to(root) else out_dir
    print(f"{args.paper}/{args.item}: {metrics.get('status')} ({metrics.get('wall_time_s')} s) -> {printable(shown)}")
    if metrics.get("status") == "not run" and metrics.get("reason"):   # why, not only that: the reason names the fix
        print(f"  why: {safeload.printable(str(metrics['reason']))}")
    if args.run_name is not None:  # the what-if run's own report: its claims judged on its numbers
        from .report import build_report

        run_dir = root / WHATIF / args.run_name
        report_dir = run_dir / "report"
        build_report(report_dir, root=root, results=run_dir, run_name=args.run_name, quiet=True)
        print("\n".join(whatif_summary(report_dir, root, log)))
    return 0


WHATIF_SHOWN = 5   # differing verdicts the terminal lists (the what-if report has them all)


def whatif_summary(report_dir: Path, root: Path, log: Path | None) -> list[str]:
    """At most 10 lines on a what-if run: where its report and log are, how many verdicts differ from the paper
    run's (the first few named, every string escaped for the terminal) and the metric that moved most."""
    wi = safeload.load_json(report_dir / "summary.json", expect=dict).get("whatif") or {}

    def rel(p: Path) -> str:
        return str(p.relative_to(root)) if p.is_relative_to(root) else str(p)

    lines = [f"what-if report: {rel(report_dir / 'index.html')}"]
    if log is not None:
        lines.append(f"notebook output: {rel(log)}")
    differ = wi.get("verdicts") or []
    if not wi.get("compared"):
        lines.append(f"no paper run to compare with ({printable(str(wi.get('not_compared') or 'no results/report/claims.json'))})")
    else:
        lines.append(f"{len(differ)} verdict{'s' if len(differ) != 1 else ''} differ from the paper run's"
                     + (":" if differ else ""))
        lines += [f"  {printable(d['id'])}: {printable(d['paper'])} -> {printable(d['whatif'])}"
                  for d in differ[:WHATIF_SHOWN]]
        if len(differ) > WHATIF_SHOWN:
            lines.append(f"  ... and {len(differ) - WHATIF_SHOWN} more (in the report)")
    top = (wi.get("metrics") or [None])[0]
    if top:
        lines.append(f"moved most: {printable(top['key'])} {top['paper']:.4g} -> {top['whatif']:.4g}")
    return lines[:10]


class _CellLog:
    """A stand-in for stderr while a notebook runs: everything goes to the log file; on a terminal, each cell's
    start (papermill's "Executing Cell N") is shown as one progress line rewritten in place."""

    def __init__(self, fh, terminal, label: str):
        self.fh, self.terminal, self.label, self.shown = fh, terminal, label, False

    def write(self, text: str) -> int:
        self.fh.write(text)
        if self.terminal.isatty():
            for line in text.splitlines():
                m = re.match(r"Executing Cell (\d+)", line.strip())
                if m:
                    self.terminal.write(f"\r{self.label}: cell {m.group(1)} ...")
                    self.terminal.flush()
                    self.shown = True
        return len(text)

    def flush(self) -> None:
        self.fh.flush()

    def isatty(self) -> bool:
        return False


@contextmanager
def cell_output_to(log: Path | None, label: str):
    """Send what the notebook prints to stderr into `log` (None: leave stderr alone)."""
    if log is None:
        yield
        return
    from .locks import Busy

    log.parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stderr
    # Written under a name of this process and moved onto the log's name when the run ends: a second run of the same
    # item, refused or waiting for the first one's lock, never empties the log the first one is writing.
    part = log.with_name(f".{log.name}.{os.getpid()}.part")
    keep = True
    try:
        with open(part, "w", encoding="utf-8") as fh:
            cells = _CellLog(fh, terminal, label)
            sys.stderr = cells
            try:
                yield
            except Busy:
                keep = False
                raise
            except BaseException:
                sys.stderr = terminal
                terminal.write(("\n" if cells.shown else "") + f"{label}: the notebook's output is in {log}\n")
                cells.shown = False
                raise
            finally:
                sys.stderr = terminal
                if cells.shown:
                    terminal.write("\n")
    finally:
        if keep:
            os.replace(part, log)
        else:
            part.unlink(missing_ok=True)


def cmd_part(args) -> int:
    from .datasets import is_available
    from .experiments import parts
    from .paths import project_root
    from .registry import problem

    why = problem(args.paper, args.item, project_root())
    if why:
        raise ValueError(f"{args.paper}/{args.item}: {why}")
    params = _item_params(args.paper, args.item, args)
    parts.check_key(args.paper, args.item, args.key, params)  # before any work: the key, and what is allowed
    _check_cost(args.paper, args.item, params, args.yes)
    out = Path(args.out) if args.out else parts.part_path(args.paper, args.item, args.key)
    _check_out_file(out, ".pkl", lambda path: parts.is_part_file(path, args.key), f"part {args.key}",
                    why=parts.foreign_part_file)
    needed = params.get("datasets", [])
    status = {name: is_available(name, project_root()) for name in needed}
    if needed and not any(ok for ok, _ in status.values()):  # the item itself will say "not run" (runner.run_item)
        parts.write_part(out, parts.record(args.key, params, status="not run"))
        print(f"{args.paper}/{args.item} part {args.key}: not run (datasets unavailable) -> {printable(out)}")
        return 0
    record = parts.run_part(args.paper, args.item, args.key, params)
    parts.write_part(out, record)
    print(f"{args.paper}/{args.item} part {args.key}: {record['wall_time_s']:.1f} s -> {printable(out)}")
    return 0


def _check_out_file(out: Path, suffix: str, ours, kind: str, why=None) -> None:
    """Before any work: `--out` names a file of `suffix` that is absent or one this package wrote (`ours(path)`
    decides, reading it); never a folder, never a user's file, which the atomic write would replace, never a file in
    the checkout's own folders."""
    from .paths import project_root
    from .staging import bundle_around, project_folder

    if out.is_dir():
        raise ValueError(f"--out {printable(out)} is a folder; give the {kind} file's path")
    if out.suffix != suffix:
        raise ValueError(f"--out {printable(out)}: a {kind} file's name ends in {suffix}")
    inside = project_folder(out, project_root())
    if inside is not None:
        raise ValueError(f"--out {printable(out)} lies in the checkout's {inside}/, which a {kind} never writes into; "
                         "give a path of its own (default: under results/)")
    bundle = bundle_around(out.parent)
    if bundle is not None:   # a file added to an unpacked bundle breaks its manifest
        raise ValueError(f"--out {printable(out)} lies in the results bundle {printable(bundle)} (its "
                         "MANIFEST.sha256), which is never written into; give a path outside it")
    if out.exists() or out.is_symlink():
        if not (out.is_file() and not out.is_symlink() and ours(out)):
            said = why(out) if why is not None and out.is_file() and not out.is_symlink() else ""
            raise ValueError(f"--out {printable(out)} exists and is not a {kind} file of repro-dpadmm"
                             + (f" ({said})" if said else "") + "; it is never replaced: move it away or give another "
                             "path")


def cmd_frontier_job(args) -> int:
    from . import config
    from .datasets import is_available
    from .experiments import beyond_frontier as bf

    if args.params:
        # A job's params are the item's cut to its own method and level, without datasets (frontier_job_params in
        # workflow/rules/common.smk): checked by the item's schema with those two restored.
        params = config.parse_json(args.params, "--params")
        whole = {"datasets": [bf.DATASET], **params, "methods": params.get("methods") or list(bf.METHODS)[:1]}
        config.check_item_params(bf.PAPER, bf.ITEM, whole)
    else:
        whole = params = config.item_params(bf.PAPER, bf.ITEM, *_from_cwd(args.configfile))
    levels = list(args.level)
    if len(set(levels)) != len(levels):
        raise ValueError(f"a level is given twice: {' '.join(levels)}")
    for level in levels:
        bf.check_job(args.method, level, params)
    _check_cost(bf.PAPER, bf.ITEM, whole, args.yes)   # memory and work, as for `run` and `part`
    if args.out and len(args.out) != len(levels):
        raise ValueError(f"--out: one file per level ({len(levels)}), got {len(args.out)}")
    outs = {lv: Path(path) for lv, path in zip(levels, args.out or [bf.job_path(f"results/{bf.PAPER}/{bf.ITEM}",
                                                                                 args.method, lv) for lv in levels])}
    if args.floor_out:   # every level's noise-free twin in the same run (bf.run_job_lanes)
        if len(args.floor_out) != len(levels):
            raise ValueError(f"--floor-out: one file per level ({len(levels)}), got {len(args.floor_out)}")
        for level, path in zip(levels, args.floor_out):
            if not bf.pairs_with_floor(args.method, level):
                raise ValueError(f"--floor-out: {args.method}/{level} does not run paired with its noise-free run "
                                 f"(ZKL's methods do, at a level of the grid); run its noiseless job on its own")
            outs[f"{level}-{bf.NOISELESS}"] = Path(path)
    if len({path.resolve() for path in outs.values()}) != len(outs):
        raise ValueError("--out and --floor-out: every job needs a file of its own; a path is given twice")
    for level, path in outs.items():
        _check_out_file(path, ".json", lambda p, lv=level: bf.is_job_file(p, args.method, lv),
                        f"{args.method}/{level} job")
    ok, reason = is_available(bf.DATASET)
    if not ok:  # recorded, not an error: the item then says "not run" (runner.run_item)
        for level, path in outs.items():
            bf.write_job({"method": args.method, "level": level, "status": "not run",
                          "reason": f"dataset unavailable: {reason.splitlines()[0] if reason else bf.DATASET}"}, path)
            print(f"{args.method}/{level}: not run ({bf.DATASET} unavailable) -> {printable(path)}")
        return 0
    if args.floor_out:
        jobs = [job for pair in bf.run_job_lanes(args.method, levels, params) for job in pair]
    else:   # one after another, on the data loaded once (the rules frontier_jobs_<k>)
        jobs = bf.run_jobs(args.method, levels, params)
    for job in jobs:
        path = outs[job["level"]]
        bf.write_job(job, path)
        err = sum(job["test_error"]) / len(job["test_error"])
        cal = job.get("calibration", {})
        noise = f", {cal['noise_name']} = {cal['noise']:.4g}" if cal else ""
        print(f"{args.method}/{job['level']}: test error {err:.4f} over {job['repeats']} repeats{noise} "
              f"({job['wall_time_s']:.1f} s) -> {printable(path)}")
    return 0


def cmd_report(args) -> int:
    from .claims import ClaimsError
    from .locks import signals_raise
    from .staging import OutDirError

    if args.results is None:
        from .paths import project_root

        claims = project_root() / "config" / "claims"
        if not claims.is_dir():   # a report of no claims would say nothing and exit 0: not this project's folder?
            raise ValueError(f"no config/claims/ in {printable(claims.parent.parent)} (the project's root: "
                             "REPRO_DPADMM_ROOT or the folder above the working one holding the Snakefile); the "
                             "report judges the claims files there")
    try:
        with signals_raise():   # SIGTERM/SIGHUP: the staging folder goes and the previous report stays, as on Ctrl-C
            return _rejudge(args) if args.results else _report(args)
    except OutDirError as exc:
        print(f"repro-dpadmm: error: {_printable_lines(exc)}", file=sys.stderr)
        return 2
    except ClaimsError as exc:   # a claims file that cannot be read as written: no report, a clear error
        print(f"repro-dpadmm report: {exc}", file=sys.stderr)
        return 1


def _report(args) -> int:
    """The project's report from its results/."""
    from .report import build_report  # provided by the report package

    # --out-dir is relative to the working folder, as for `run` and the re-judge; the default is the project's
    build_report(out_dir=Path(args.out_dir).resolve() if args.out_dir else Path("results/report"))
    return 0


def _rejudge(args) -> int:
    """Re-judge a bundle (--results) with the current claims files (bundle.rejudge)."""
    from .bundle import BundleError, rejudge, rejudge_folder
    from .paths import project_root
    from .staging import OutDirError

    source = Path(args.results)
    # beside the run's own results, under results/ (which git ignores), never in the checkout's tracked tree
    out = Path(args.out_dir) if args.out_dir else rejudge_folder(source, project_root() / REJUDGED)
    try:
        result = rejudge(source, out)
    except (BundleError, OutDirError) as exc:
        print(f"repro-dpadmm: error: {_printable_lines(exc)}", file=sys.stderr)
        return 2
    print(result.summary())
    print(f"re-judged report: {safeload.printable(result.out_dir / 'index.html')}")
    return 0


def _printable_lines(exc) -> str:
    """An error message that may quote a bundle's strings, each of its lines escaped for the terminal."""
    return "\n".join(safeload.printable(line) for line in str(exc).split("\n"))


def cmd_bundle(args) -> int:
    from .bundle import BundleError, make_bundle

    try:
        path = make_bundle(args.out, with_whatif=args.with_whatif)
    except BundleError as exc:
        print(f"repro-dpadmm: error: {exc}", file=sys.stderr)
        return 2
    print(f"bundle: {printable(path)} ({path.stat().st_size / 1e6:.1f} MB); "
          f"re-judge it with: repro-dpadmm report --results {printable(shlex.quote(str(path)))}")
    return 0


EXAMPLES = """\
examples:
  repro-dpadmm info                                   versions, data mirror, raw-file cache
  repro-dpadmm data build adult_huang2019             fetch, verify and preprocess one dataset
  repro-dpadmm items                                  every item (Snakemake target <paper>_<item>)
  repro-dpadmm run huang2019_dpadmm fig3 --configfile config/smoke.yaml
                                                      run one item's notebook at smoke settings
  repro-dpadmm run zhang2018_radmm fig3 --params '{"q": 1.03}' --run-name q103
                                                      what-if: one parameter changed, into
                                                      results/whatif/q103/ (the paper run stays)
  repro-dpadmm report                                 rebuild results/report/ from results/
  repro-dpadmm bundle                                 pack results/ into one archive with a manifest
  repro-dpadmm report --results bundle.tar.gz --out-dir rejudged
                                                      re-judge a bundle with the current claims files

The whole workflow runs through Snakemake: `snakemake --cores all` (see README.md).
"""


def _package_version() -> str:
    try:
        return version("repro-dpadmm")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="repro-dpadmm", description=__doc__, epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="versions, data mirror and cache status")
    info.add_argument("--mirror", default=None,
                      help="data mirror to show instead of REPRO_DPADMM_DATA_MIRROR (local folder or URL base)")
    info.set_defaults(func=cmd_info)

    data = sub.add_parser("data", help="dataset commands").add_subparsers(dest="data_command", required=True)
    dl = data.add_parser("list", help="processed datasets and their state")
    dl.set_defaults(func=cmd_data_list)
    df = data.add_parser("fetch", help="download and verify raw files (all datasets if none named)")
    df.add_argument("names", nargs="*", help="dataset names, e.g. adult_huang2019 a9a (see `data list`)")
    df.add_argument("--mirror", default=None, help="local folder or URL base (wins over REPRO_DPADMM_DATA_MIRROR)")
    df.set_defaults(func=cmd_data_fetch)
    db = data.add_parser("build", help="fetch + preprocess one dataset into resources/processed/",
                         description="Fetch, verify and preprocess one dataset into resources/processed/. The exit "
                                     "status is 0 also when the dataset is unavailable or a failed rebuild kept the "
                                     "verified earlier build: its sidecar records which (the workflow goes on, and the "
                                     "items that need it say 'not run'), and the terminal says so.")
    db.add_argument("name", help="dataset name, e.g. adult_huang2019 (see `data list`)")
    db.add_argument("--mirror", default=None,
                    help="local folder or URL base tried before the canonical URL (wins over REPRO_DPADMM_DATA_MIRROR)")
    db.add_argument("--options", default=None, help="JSON preprocessing options")
    db.add_argument("--attempt", default=None, help="JSON source state to record (the workflow passes it)")
    db.set_defaults(func=cmd_data_build)

    items = sub.add_parser("items", help="list the items (Snakemake target names)")
    items.add_argument("--configfile", action="append", default=[],
                       help="config override merged over config/config.yaml, e.g. config/smoke.yaml (repeatable)")
    items.set_defaults(func=cmd_items)

    run = sub.add_parser("run", help="run one item's notebook (papermill) and render it to HTML")
    run.add_argument("paper", help=f"paper id: {', '.join(registry.paper_ids())} (see `items`)")
    run.add_argument("item", help="item id: " + "; ".join(f"{p.id}: {', '.join(p.item_ids)}" for p in registry.PAPERS))
    run.add_argument("--params", default=None,
                     help="JSON merged into the item's parameters from the config, e.g. '{\"q\": 1.03}' (a nested "
                          "mapping is merged key by key, a list or number replaced)")
    run.add_argument("--configfile", action="append", default=[], help="config override, e.g. config/smoke.yaml")
    run.add_argument("--run-name", default=None, metavar="NAME",
                     help="a what-if run: write into results/whatif/NAME/<paper>/<item>/ (the paper run stays as it "
                          "is) and build its report in results/whatif/NAME/report/; the notebook, its figures and "
                          "the report state how the parameters differ from the paper settings")
    run.add_argument("--out-dir", default=None, help="output folder (default results/<paper>/<item>)")
    run.add_argument("--no-wait", action="store_true",
                     help="if the item is being run already (e.g. by Snakemake), stop at once naming that run "
                          "(exit status 3) instead of waiting for it")
    run.add_argument("--yes", action="store_true",
                     help=f"run even when the settings are estimated at more than {WORK_LIMIT:g}x the work of the "
                          f"paper's settings (or set {WORK_LIMIT_ENV}: another factor, or 'off')")
    run.set_defaults(func=cmd_run)

    pa = sub.add_parser("part", help="run one part of an item split into parts (its settings as separate jobs) and "
                                     "write results/<paper>/<item>/parts/<key>.pkl")
    pa.add_argument("paper", help="paper id (see `items`)")
    pa.add_argument("item", help="item id of a split item (`repro-dpadmm items` lists the items)")
    pa.add_argument("key", help="part key (an unknown key is refused with the item's keys listed)")
    pa.add_argument("--params", default=None, help="item parameters as JSON (default: from the config)")
    pa.add_argument("--configfile", action="append", default=[], help="config override, e.g. config/smoke.yaml")
    pa.add_argument("--out", default=None, help="default results/<paper>/<item>/parts/<key>.pkl")
    pa.add_argument("--yes", action="store_true", help="as for `run`: run settings of very large estimated work")
    pa.set_defaults(func=cmd_part)

    fj = sub.add_parser("frontier-job", help="run (method, level) jobs of beyond/frontier and write their JSON files")
    fj.add_argument("method", help="a method of the frontier (e.g. huang_dpadmm) or 'floor'")
    fj.add_argument("level", nargs="+", help="a level such as eps0.1, a noiseless run (eps0.1-noiseless or noiseless) "
                    "or 'nonprivate' for the floor; several levels run one after another in one process, or with "
                    "--floor-out as lanes of one run (ZKL's methods)")
    fj.add_argument("--params", default=None, help="item parameters as JSON (default: from the config)")
    fj.add_argument("--configfile", action="append", default=[], help="config override, e.g. config/smoke.yaml")
    fj.add_argument("--out", nargs="+", default=None, metavar="FILE",
                    help="one per level; default results/beyond/frontier/jobs/<method>/<level>.json")
    fj.add_argument("--floor-out", nargs="+", default=None, metavar="FILE",
                    help="also each level's noise-free job (<level>-noiseless), run with the levels as lanes of one "
                         "run (ZKL's methods), one file per level, in the order of the levels")
    fj.add_argument("--yes", action="store_true", help="as for `run`: run settings of very large estimated work")
    fj.set_defaults(func=cmd_frontier_job)

    rep = sub.add_parser("report", help="build the reproduction report from results/*/*/metrics.json, or re-judge "
                                        "a results bundle with the current claims files")
    rep.add_argument("--results", default=None, metavar="BUNDLE",
                     help="a results bundle (.tar.gz from `repro-dpadmm bundle`, or its unpacked folder): verify its "
                          "manifest, rebuild the report from its numbers with the current config/claims/*.yaml "
                          "(nothing is recomputed) and list changed verdicts and items whose parameters differ "
                          "from the current config")
    rep.add_argument("--out-dir", default=None,
                     help="where index.html, claims.json, summary.json go (default results/report; with --results: "
                          "results/rejudged/<bundle name>/ of the project)")
    rep.set_defaults(func=cmd_report)

    bun = sub.add_parser("bundle", help="pack a finished run (metrics, notebooks, figures, report, logs, provenance) "
                                        "into one .tar.gz with a sha256 manifest")
    bun.add_argument("--out", default=None, metavar="FILE.tar.gz",
                     help="archive to write (default bundles/repro-dpadmm-results-<time>-<commit>.tar.gz)")
    bun.add_argument("--with-whatif", action="store_true",
                     help="include the what-if runs (results/whatif/); left out by default: they are not the paper run")
    bun.set_defaults(func=cmd_bundle)
    return p


# The commands a workflow job runs: each ends its log with its wall and CPU time (this process and the children it
# waited for, e.g. the notebook's kernel), so a run's CPU can be read per job (benchmarks/dag.py): the CPU time of
# Snakemake's benchmark files is sampled every few seconds and misses most of a short job.
JOB_COMMANDS = ("cmd_run", "cmd_part", "cmd_frontier_job")


def _cpu_seconds() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# The options naming a path or an address: given empty (`--out-dir "$OUT"` with OUT unset), each is an error, never
# its default (which may hold good results the command would replace).
PATH_OPTIONS = {"out_dir": "--out-dir", "out": "--out", "results": "--results", "mirror": "--mirror",
                "configfile": "--configfile"}


def _check_paths_given(args) -> None:
    for key, option in PATH_OPTIONS.items():
        values = getattr(args, key, None)
        for value in values if isinstance(values, list) else [values]:
            if value is not None and not value.strip():
                raise ValueError(f"{option} is empty: give a path, or leave {option} out")
            # a name of bytes that are not UTF-8 (lone surrogates here) cannot go into the records that name it
            if value is not None and not value.isascii() and re.search("[\ud800-\udfff]", value):
                raise ValueError(f"{option} {printable(value)}: a path whose name is not valid UTF-8; rename it")


def _check_environment(args) -> None:
    """The package's size caps (and the data commands' fetch deadline and mirror) from the environment, read once
    before any work: a bad value is one error naming its variable, not one per file it would have capped (the bundle
    caps only where bundles are read or made: importing bundle.py costs a job's start-up about 80 ms)."""
    safeload.max_bytes()
    if args.func in (cmd_data_fetch, cmd_data_build, cmd_info, cmd_bundle):
        from .datasets.fetch import deadline_override, offline, resolve_mirror

        deadline_override()
        offline()
        # a file:// address that names no folder here, a ~user of no user: an error before any work (a bundle names
        # the mirror in force as <mirror>)
        resolve_mirror(getattr(args, "mirror", None))
    if args.func in (cmd_report, cmd_bundle):
        from .bundle import Limits

        Limits.from_env()


def _quiet_after_stop() -> None:
    """After the one-line stop message: the notebook client's tasks that the stop cut short (a kernel the signal
    killed first: DeadKernelError) are reported by asyncio as "Task exception was never retrieved" with a traceback
    when they are collected at exit; they are the stop's own consequence, said already, so asyncio's log is off."""
    import logging

    logging.getLogger("asyncio").disabled = True


def main(argv=None) -> int:
    import time

    t0 = time.perf_counter()
    args = build_parser().parse_args(argv)
    try:
        _check_paths_given(args)
        _check_environment(args)
        rc = args.func(args)
    except RuntimeError as exc:
        from .solvers import NotConvergedError   # here, not at the top: numpy's import would slow every command

        if not isinstance(exc, NotConvergedError):
            raise
        # a solver that stopped short of its tolerance: its own message names the problem and the residual
        print(f"repro-dpadmm: error: {type(exc).__name__}: {_printable_lines(exc)}", file=sys.stderr)
        return 1
    except (ValueError, KeyError, FileNotFoundError) as exc:
        # a KeyError's str() is the repr of its message (quotes, doubled backslashes): its message as written
        text = exc.args[0] if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str) else exc
        print(f"repro-dpadmm: error: {_printable_lines(text)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of the output went away (`| head`): stop quietly, as command-line tools do on SIGPIPE; stdout
        # points at nothing from here on, so Python's own flush at exit cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as exc:
        if not exc.filename and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG):
            # the output (standard output, say) cannot be written: one line, as for a closed pipe, and stdout points
            # at nothing from here on, so Python's own flush at exit cannot fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            print(f"repro-dpadmm: error: cannot write the output: {exc.strerror}", file=sys.stderr)
            return 1
        if not exc.filename:   # not about a path the command was given or made: a defect, with its traceback
            raise
        # a path that cannot be used (a file where a folder is needed, a name too long, no permission): one line
        # naming it (at most 200 characters of it), not a traceback
        name = str(exc.filename)
        name = name if len(name) <= 200 else name[:100] + "…" + name[-99:]
        print(f"repro-dpadmm: error: {exc.strerror or type(exc).__name__}: {safeload.printable(name)}",
              file=sys.stderr)
        return 2
    except SystemExit as exc:   # SIGTERM / SIGHUP, raised as SystemExit(128 + signal) by locks.signals_raise
        if exc.code in (128 + 15, 128 + 1):
            print(f"repro-dpadmm: stopped ({'SIGTERM' if exc.code == 143 else 'SIGHUP'}) after "
                  f"{time.perf_counter() - t0:.1f} s; the outputs of what was running are as they were before it",
                  file=sys.stderr)
            _quiet_after_stop()
        raise
    except MemoryError:   # beyond the estimate (refused before any work), e.g. under a process limit lower than RAM
        advice = ("lower the settings (a run's estimate assumes the machine's memory, or REPRO_DPADMM_MEMORY_GB)"
                  if getattr(args.func, "__name__", "") in JOB_COMMANDS else
                  "the files read were larger than this machine's memory allows (a stranger's bundle may be)")
        print(f"repro-dpadmm: error: out of memory after {time.perf_counter() - t0:.1f} s; {advice}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:   # Ctrl-C: one line, not the tracebacks of every layer it went through
        print(f"repro-dpadmm: stopped (Ctrl-C) after {time.perf_counter() - t0:.1f} s; the outputs of what was "
              "running are as they were before it", file=sys.stderr)
        _quiet_after_stop()
        return 130
    if getattr(args.func, "__name__", "") in JOB_COMMANDS and argv is None:
        print(f"repro-dpadmm job cost: {time.perf_counter() - t0:.2f} s wall, {_cpu_seconds():.2f} s CPU",
              file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
