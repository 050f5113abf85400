"""The kernel targets in one run: DP-ADMM against the streaming bandwidth measured in the same run, ADMM with exact
local solves and private M-ADMM at N = 100 against their time bounds (bench_huang2019.py, bench_zhang2018.py), as one
table of ratios (a ratio <= 1 meets its target); then the lane table (bench_lanes.py): one sparse matrix of a9a's
shape times a block of k vectors against k separate products, with no target, for what running a sweep's settings
as columns of one product would save:

    python benchmarks/kernels.py                       # print both tables
    python benchmarks/kernels.py --update README.md    # and write the targets table between the README's markers
    python benchmarks/kernels.py --lanes-only          # the lane table alone

Run it on a quiet machine: the bounds are absolute times (or, for DP-ADMM, the bandwidth measured here), and two
processes sharing a core double the times.
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_huang2019  # noqa: E402  (the benchmarks folder is not a package)
import bench_lanes  # noqa: E402
import bench_zhang2018  # noqa: E402

from repro_dpadmm import costs  # noqa: E402

START, END = "<!-- kernels:start -->", "<!-- kernels:end -->"


def table(huang: dict, zhang: dict) -> str:
    def verdict(ratio):
        return "met" if ratio <= 1 else "not met"

    rows = [
        ("DP-ADMM (HUANG Algorithm 3, l2)", huang["shape"],
         f"{huang['dpadmm_s']:.2f} s = {100 * huang['bandwidth_fraction']:.0f}% of the streaming bandwidth "
         f"({huang['bandwidth_Bps'] / 1e9:.1f} GB/s measured)",
         f">= {100 * bench_huang2019.BANDWIDTH_TARGET:.0f}% (<= {huang['dpadmm_bound_s']:.2f} s here)",
         huang["dpadmm_ratio"]),
        ("ADMM, exact local solves (HUANG)", huang["shape"], f"{huang['admm_s']:.2f} s",
         f"<= {bench_huang2019.ADMM_BOUND_S:g} s", huang["admm_ratio"]),
        ("private M-ADMM (ZKL-ICML PP)", zhang["shape"], f"{zhang['run_s']:.2f} s",
         f"<= {zhang['bound_s']:g} s", zhang["ratio"]),
    ]
    lines = ["| kernel | shape | measured | target | ratio |", "|---|---|---|---|---:|"]
    lines += [f"| {k} | {s} | {m} | {t} | {r:.2f} ({verdict(r)}) |" for k, s, m, t, r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", type=Path, metavar="README.md", help="write the table between its kernels markers")
    ap.add_argument("--note", default="", help="a line under the table (the machine, how quiet it was)")
    ap.add_argument("--lanes-only", action="store_true", help="only the lane table (SpMM against k SpMVs)")
    args = ap.parse_args(argv)
    if args.lanes_only:
        print("\n" + bench_lanes.table(bench_lanes.measure()))
        return 0
    huang = bench_huang2019.measure()
    print()
    zhang = bench_zhang2018.measure()
    text = table(huang, zhang)
    note = args.note or f"one run of `python benchmarks/kernels.py` on {platform.machine()}"
    text += f"\n\n{note}"
    print("\n" + text)
    print()
    print("\n" + bench_lanes.table(bench_lanes.measure()))
    if args.update:
        costs.update(args.update, text, START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
