"""Benchmark: the whole equal-privacy frontier (beyond/frontier) at paper scale, through Snakemake, on 2 cores.

Target: under 10 minutes of wall time on 2 cores for every (method, level) job, the floor and the notebook
(45 jobs: 11 methods x 4 levels + 1, each 10 repeats of T = 100 on the 40,000 / 5,222 Adult split).

Run from the project root: `python benchmarks/bench_beyond_frontier.py [--cores 2] [--configfile ...]`. It forces
the frontier's jobs and notebook to rerun (`--forcerun frontier_job item_notebook`, only the beyond_frontier target)
and prints the wall time, the summed CPU time of the jobs, the ideal wall time on the given cores (summed CPU time /
cores), and the slowest jobs. The machine's load average is printed too: other processes slow every number.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 600.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--configfile", action="append", default=[])
    args = ap.parse_args()
    from repro_dpadmm.paths import project_root

    root = project_root()
    extra = [a for f in args.configfile for a in ("--configfile", f)]
    cmd = [sys.executable, "-m", "snakemake", "beyond_frontier", "--cores", str(args.cores), "--forcerun",
           "frontier_job", "item_notebook", "--quiet", "progress", *extra]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return proc.returncode
    jobs = [json.loads(p.read_text()) for p in sorted((root / "results/beyond/frontier/jobs").glob("*/*.json"))]
    cpu = sum(j.get("cpu_time_s", 0.0) for j in jobs)
    metrics = json.loads((root / "results/beyond/frontier/metrics.json").read_text())
    print(f"beyond/frontier: {len(jobs)} jobs + notebook on {args.cores} cores")
    print(f"  load average before: {load0[0]:.2f} (1 min), {load0[1]:.2f} (5 min)")
    print(f"  wall time: {wall:.0f} s (target < {TARGET_S:.0f} s): {'MET' if wall < TARGET_S else 'NOT MET'}")
    print(f"  jobs' CPU time summed: {cpu:.0f} s; ideal wall on {args.cores} cores: {cpu / args.cores:.0f} s; "
          f"notebook: {metrics.get('wall_time_s', float('nan')):.0f} s")
    by_method: dict[str, float] = {}
    for j in jobs:
        by_method[j["method"]] = by_method.get(j["method"], 0.0) + j.get("cpu_time_s", 0.0)
    print("  CPU time per method (all levels):")
    for m, s in sorted(by_method.items(), key=lambda kv: -kv[1]):
        print(f"    {m:22s} {s:7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
