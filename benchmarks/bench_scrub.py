"""Benchmark: the bundle's text scrubbing (bundle.scrub_paths) on hostile text, which must take linear time.

A log of 300 KB made of one short piece repeated (`=/`, `&#47;`, `\\u002f`, `file://`, ...) once took two minutes in
a pattern that scanned ahead from every slash or address; each piece here should take well under a second, about the
time of plain text of the same size (the first row).

    python benchmarks/bench_scrub.py [--kb 300]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from repro_dpadmm.bundle import scrub_paths

PIECES = ("plain text ", "=/", "(/", "&a=/b", "u=/a/b&", "/a ", "a /b", "\\n/", "0m/", "%2F", "%2f", "\\/", "&#47;",
          "&sol;", "&#x2F;", "\\u002f", "file://", "https://h/x?", ":/", "-I/", '"/a', "/.", "/a/..", "TOKEN=",
          "password: |\n", "--password ", "Bearer ", "-----BEGIN RSA PRIVATE KEY-----")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=int, default=300)
    args = ap.parse_args()
    root = Path.cwd()
    print(f"{'piece':>14}  seconds for {args.kb} KB")
    for piece in PIECES:
        text = piece * (args.kb * 1000 // len(piece))
        t0 = time.perf_counter()
        scrub_paths(text, root)
        print(f"{piece!r:>14}  {time.perf_counter() - t0:8.3f}")


if __name__ == "__main__":
    main()
