"""The whole reproduction as a benchmark: run the Snakemake DAG (datasets already built) and print its wall time,
its CPU time (every process it started: Snakemake, the notebook kernels, the frontier jobs), CPU utilisation of the
cores it was given, the peak memory of any job, and the ten most expensive jobs (from the rules' `benchmark:` files).

    python benchmarks/dag.py                        # paper settings, --cores 2, every item job forced to rerun
    python benchmarks/dag.py --cores 2 -- --configfile .test/config/config.yaml   # the CI smoke DAG
    python benchmarks/dag.py --read                 # only the job table of a finished run (logs/benchmarks)

Run it from the project root. The items, their parts and the frontier's jobs are forced to run again (`--forcerun
item_notebook item_part frontier_jobs_<k> frontier_job_lanes_<k> report`); the datasets are not (build them first:
`snakemake --cores 2 datasets`).
CPU time is the rusage of the finished child processes, so it includes everything the DAG ran. Per job, the CPU
time is read from the last line of the job's log (`repro-dpadmm job cost: ... s CPU`, written by the job's own
process for itself and its children); Snakemake's own job processes and the dataset jobs are not in that sum. A run
reads the logs and benchmark files it wrote, not those an earlier run left in logs/ (with --read, every file).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from repro_dpadmm.costs import read_tsv

FORCE = ("item_notebook", "item_part", "frontier_job", "report")   # rules forced to rerun, by name or prefix


def forced_rules(snakemake_args: list[str]) -> list[str]:
    """The rules of the DAG that FORCE names, each by its own name: the frontier's rules are one per group of jobs
    (frontier_jobs_<k>, frontier_job_lanes_<k>), and --forcerun takes rule names only."""
    out = subprocess.run([sys.executable, "-m", "snakemake", "--list-rules", *snakemake_args], capture_output=True,
                         text=True, check=True).stdout.split()
    return [r for r in out if r.startswith(FORCE)]


def _written(files, since: float | None):
    """The files written at or after `since` (a time.time()), all with None: a run's own files, not those an earlier run
    left in the same folder (a frontier of other job groups, say)."""
    return [f for f in files if since is None or f.stat().st_mtime >= since]


def jobs(benchmarks: Path, since: float | None = None) -> list[tuple[str, float, float | None]]:
    """(job, wall seconds, peak resident MB) of every benchmark file of a run (written since `since`), most
    expensive first."""
    out = []
    for tsv in _written(sorted(benchmarks.rglob("*.tsv")), since):
        cost = read_tsv(tsv)
        out.append((str(tsv.relative_to(benchmarks).with_suffix("")), cost.wall_s, cost.max_rss_mb))
    return sorted(out, key=lambda r: -r[1])


COST_LINE = re.compile(r"repro-dpadmm job cost: ([0-9.]+) s wall, ([0-9.]+) s CPU")


def job_cpu(logs: Path, since: float | None = None) -> dict[str, float]:
    """{job (its log's path under logs/, without .log): CPU seconds} from each job log's cost line (logs written
    since `since`)."""
    out = {}
    for log in _written(sorted(logs.rglob("*.log")), since):
        try:
            found = COST_LINE.findall(log.read_text(errors="replace")[-4000:])
        except OSError:
            continue
        if found:
            out[str(log.relative_to(logs).with_suffix(""))] = float(found[-1][1])
    return out


def job_table(rows, n: int = 10) -> str:
    lines = [f"{'job':58s} {'wall':>9s} {'peak RSS':>10s}"]
    for name, wall, rss in rows[:n]:
        lines.append(f"{name:58s} {wall:8.1f}s {'' if rss is None else f'{rss:8.0f} MB':>10s}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--read", action="store_true", help="do not run: print the job table of a finished run")
    ap.add_argument("--benchmarks", type=Path, default=Path("logs/benchmarks"))
    ap.add_argument("--limit", type=float, default=90.0, help="list the jobs longer than this (seconds of wall)")
    ap.add_argument("snakemake_args", nargs="*", help="more Snakemake arguments (after --)")
    args = ap.parse_args(argv)
    started = None   # with --read every file counts; a run counts the files it wrote
    if not args.read:
        # the forced rules last: --forcerun takes every word after it as a rule, a target too
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), *args.snakemake_args, "--forcerun",
               *forced_rules(args.snakemake_args)]
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.time()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        print(f"\nDAG: {' '.join(cmd[1:])} -> exit {proc.returncode}")
        print(f"wall {wall / 60:.1f} min ({wall:.0f} s); CPU {user + system:.0f} s (user {user:.0f} s, system "
              f"{system:.0f} s); utilisation {(user + system) / (wall * args.cores):.0%} of {args.cores} cores")
        if proc.returncode:
            return proc.returncode
    if not args.benchmarks.is_dir():
        print(f"no benchmark files in {args.benchmarks}", file=sys.stderr)
        return 2
    rows = jobs(args.benchmarks, started)
    peak = max((r[2] for r in rows if r[2] is not None), default=None)
    print(f"{len(rows)} jobs; sum of job wall times {sum(r[1] for r in rows) / 60:.1f} min; largest peak resident "
          f"memory {'unknown' if peak is None else f'{peak:.0f} MB'}\n")
    print(job_table(rows))
    long = [r for r in rows if r[1] > args.limit]
    print(f"\njobs over {args.limit:g} s: {len(long)}" + "".join(f"\n  {n} {w:.1f} s" for n, w, _ in long))
    cpu = job_cpu(args.benchmarks.parent, started)
    if cpu:
        print(f"job CPU from the jobs' logs: {sum(cpu.values()):.0f} s over {len(cpu)} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
