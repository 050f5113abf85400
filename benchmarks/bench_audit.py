"""Speed of the empirical privacy audit (beyond/audit) at the paper configuration.

    python benchmarks/bench_audit.py

Target (2 cores, one BLAS thread): under 5 s per mechanism for the claimed audit and its 4x control together
(2 x (200,000 + 50,000) trials per dataset), and under 60 s for the whole item's computation. Also reports the cost of
one trial through the library's full step (`sampling: direct`), the reason the audit reads the step's affine map off
the library instead.
"""

from __future__ import annotations

import time

import numpy as np

from repro_dpadmm import config
from repro_dpadmm.datasets import load
from repro_dpadmm.experiments import beyond_audit as ba
from repro_dpadmm.privacy.audit import trials


def main() -> None:
    params = config.item_params("beyond", "audit")
    adult, a9a = load("adult_huang2019"), load("a9a")
    data = {"adult_huang2019": (adult["X"], adult["y"]), "a9a": (a9a["X_train"], a9a["y_train"])}
    t0 = time.perf_counter()
    out = ba.run(params, int(params["seed"]), data)
    total = time.perf_counter() - t0
    for key, r in out["results"].items():
        s = r["claimed"].seconds + r["control"].seconds
        print(f"{key:16s} claimed + control: {s:6.2f} s (target < 5 s: {'meets' if s < 5 else 'MISSES'})")
    print(f"{'all':16s} build + audits:     {total:6.2f} s (target < 60 s: {'meets' if total < 60 else 'MISSES'})")
    case = out["results"]["xu_replace_one"]["case"]
    k = 2_000
    t = time.perf_counter()
    trials.direct_sampler(case.step, 1.0, trials.streams(0, "bench", "direct"))(0, k)
    per = (time.perf_counter() - t) / k
    print(f"direct library step (xu_replace_one): {1e6 * per:.0f} microseconds per trial, "
          f"{per * 2 * (params['trials'] + params['calibration_trials']):.0f} s per audit at this trial count")
    np.testing.assert_(total > 0)


if __name__ == "__main__":
    main()
