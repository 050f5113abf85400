"""Run the smoke DAG on a fresh copy of the workflow and collect every item's metrics.json into one file; or compare
two such files. Used to show that a refactoring or an optimisation keeps the numbers:

    python benchmarks/smoke_metrics.py run before.json          # on the old commit
    python benchmarks/smoke_metrics.py run after.json           # on the new one
    python benchmarks/smoke_metrics.py compare before.json after.json [--rtol 1e-10]
    python benchmarks/smoke_metrics.py collect <project> part.json  # the items a project folder has results of
    python benchmarks/smoke_metrics.py compare before.json part.json --common   # only the items both have

Metrics measured in wall-clock time (keys naming a time, and the ratios of timings of Huang's Table II) differ from
run to run by nature and are listed apart, not compared. Needs REPRO_DPADMM_DATA_MIRROR.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACKED = ("Snakefile", "workflow", "config", "notebooks", "envs", ".test")
# Metrics of wall-clock measurements: noisy by nature. Keys containing one of TIMED, and per item the key prefixes of
# TIMED_ITEMS (Huang Table II's ratios of timings and their intervals).
TIMED = ("time", "seconds", "timing", "speed", "_ms", "per_iter_s", "cpu_")
TIMED_ITEMS = {"huang2019_dpadmm/table2": ("ratio",)}


def run(out: Path, cores: int) -> int:
    with tempfile.TemporaryDirectory(prefix="smoke-metrics-") as tmp:
        proj = Path(tmp) / "project"
        proj.mkdir()
        for name in TRACKED:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, proj / name)
        env = {**os.environ, "REPRO_DPADMM_OFFLINE": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(cores), "--keep-going",
                               "--set-threads", "item_notebook=1", "--configfile", ".test/config/config.yaml"],
                              cwd=proj, env=env, capture_output=True, text=True)
        collect(proj, out)
        print(f"snakemake exit {proc.returncode}")
        if proc.returncode:
            print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode


def collect(proj: Path, out: Path) -> int:
    metrics = {}
    for path in sorted((proj / "results").glob("*/*/metrics.json")):
        metrics[f"{path.parent.parent.name}/{path.parent.name}"] = json.loads(path.read_text())
    out.write_text(json.dumps(metrics, indent=1, sort_keys=True) + "\n")
    print(f"{len(metrics)} items -> {out}")
    return 0


def _timed(item: str, key: str) -> bool:
    bare = key.removeprefix("repeats[")
    return any(t in key.lower() for t in TIMED) or bare.startswith(TIMED_ITEMS.get(item, ()))


def _differs(a, b, rtol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a != b
    if math.isnan(a) and math.isnan(b):
        return False
    return not math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)


def compare(before: Path, after: Path, rtol: float, common: bool = False) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    if common:
        a, b = {k: v for k, v in a.items() if k in b}, {k: v for k, v in b.items() if k in a}
    bad, timed, n = [], [], 0
    for item in sorted(set(a) | set(b)):
        if item not in a or item not in b:
            bad.append(f"{item}: only in {'after' if item in b else 'before'}")
            continue
        ma, mb = a[item], b[item]
        ra, rb = ma.pop("repeats", {}) or {}, mb.pop("repeats", {}) or {}
        pairs = [(k, ma.get(k), mb.get(k)) for k in sorted(set(ma) | set(mb))]
        for k in sorted(set(ra) | set(rb)):
            xs, ys = ra.get(k, []), rb.get(k, [])
            pairs += [(f"repeats[{k}][{i}]", xs[i] if i < len(xs) else None, ys[i] if i < len(ys) else None)
                      for i in range(max(len(xs), len(ys)))]
        for key, x, y in pairs:
            n += 1
            if _differs(x, y, rtol):
                (timed if _timed(item, key) else bad).append(f"{item}: {key}: {x!r} -> {y!r}")
    print(f"{len(set(a) | set(b))} items, {n} values compared at rtol {rtol:g}: {len(bad)} differ"
          f" (+ {len(timed)} wall-clock timings, not compared)")
    for line in bad[:200]:
        print("  DIFFERS", line)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--cores", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--rtol", type=float, default=1e-10)
    c.add_argument("--common", action="store_true", help="compare only the items both files have")
    k = sub.add_parser("collect")
    k.add_argument("project", type=Path)
    k.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return run(args.out, args.cores)
    if args.cmd == "collect":
        return collect(args.project, args.out)
    return compare(args.before, args.after, args.rtol, args.common)


if __name__ == "__main__":
    sys.exit(main())
