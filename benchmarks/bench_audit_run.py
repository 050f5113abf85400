"""Speed of the whole-run one-run audit (beyond/audit_run) at the paper configuration.

    python benchmarks/bench_audit_run.py

Target (2 cores, one BLAS thread): the whole item's computation under 2 minutes (every method, level and the 4x
control); the report lists the seconds per method so that the slowest part is visible.
"""

from __future__ import annotations

import time

from repro_dpadmm import config
from repro_dpadmm.datasets import load
from repro_dpadmm.experiments import beyond_audit_run as ex


def main() -> None:
    params = config.item_params("beyond", "audit_run")
    adult, a9a = load("adult_huang2019"), load("a9a")
    data = {"adult_huang2019": (adult["X"], adult["y"]), "a9a": (a9a["X_train"], a9a["y_train"])}
    t0 = time.perf_counter()
    out = ex.run(params, int(params["seed"]), data)
    total = time.perf_counter() - t0
    per = {}
    for st in out["settings"]:
        per[st.method] = per.get(st.method, 0.0) + sum(st.seconds.values())
    for meth, s in per.items():
        print(f"{meth:14s} {s:6.1f} s (all levels, claimed + control)")
    print(f"whole item     {total:6.1f} s (target < 120 s), setup {total - sum(per.values()):.1f} s")


if __name__ == "__main__":
    main()
