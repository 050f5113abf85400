"""Benchmark: one sparse matrix times a block of k vectors (SpMM, "lanes") against k separate products (SpMV).

A sweep that runs its settings one after another does one sparse product per setting and iteration; run as lanes
(columns of one block) they are one product that reads the matrix once for all of them. This measures what that
saves on a matrix of a real dataset's shape and density: a9a's training rows as XU's problem stores them (CSR, 32,561
x 123, 451,592 non-zeros; problems/fused_lasso.py keeps a matrix below 25% density sparse), built from the processed
dataset when it is there, else a random CSR matrix of the same shape and the same number of non-zeros per row; and
the same rows repeated 10 times (325,610 rows), a matrix well beyond the caches.

Per k in 1, 2, 4, 8, 16, 32: the time of X @ B for a (d, k) block B in C order and in Fortran order, of k products
X @ b (one column each), the speed-up of the block over the k products, and the matrix bytes each reads (values,
column indices and row pointers, once per product: k times for k products, k times "effectively" for the block,
which reads them once) per second as a share of the streaming bandwidth measured in the same run (a read-only numpy
sum over 400 MiB, bench_huang2019.stream_bandwidth). A share above 100% means the block does more products than
streaming the matrix k times could.

    python benchmarks/bench_lanes.py [--reps 7]
    python benchmarks/bench_lanes.py --frontier [--level eps1]   # the frontier's step lanes (needs the Adult data)

`--frontier`: the equal-privacy frontier's step multiples (beyond_frontier.step_runs) at the paper's settings
(config/config.yaml), per tunable method at one level and in its optimiser-floor job: the CPU time of the runs of
every multiple one after another against the same multiples as lanes of one batched run (`Mechanism.run_lanes`), and
whether every lane's models equal the run's bit for bit. Only the runs are timed: a job also calibrates, loads the
data and evaluates every multiple's models, which lanes do not change.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

from bench_huang2019 import stream_bandwidth

WIDTHS = (1, 2, 4, 8, 16, 32)
A9A_SHAPE, A9A_NNZ = (32561, 123), 451592


def a9a_matrix(seed: int = 0) -> tuple[sp.csr_matrix, str]:
    """(a9a's training rows as CSR, where they came from): the processed dataset, else a random matrix of the same
    shape and non-zeros (the same count in every row but the last few; values 1, as a9a's binary features)."""
    try:
        from repro_dpadmm.datasets import load

        X = sp.csr_matrix(load("a9a")["X_train"])
        return X, "a9a (processed dataset)"
    except (FileNotFoundError, KeyError, ValueError, OSError):
        pass
    rng = np.random.default_rng(seed)
    n, d = A9A_SHAPE
    per_row = np.full(n, A9A_NNZ // n)
    per_row[:A9A_NNZ - per_row.sum()] += 1
    indptr = np.r_[0, np.cumsum(per_row)]
    indices = np.concatenate([np.sort(rng.choice(d, size=k, replace=False)) for k in per_row])
    X = sp.csr_matrix((np.ones(A9A_NNZ), indices, indptr), shape=(n, d))
    return X, "synthetic CSR of a9a's shape and non-zeros (the dataset is not built)"


def matrix_bytes(X: sp.csr_matrix) -> int:
    """What one product must read of the matrix: values, column indices and row pointers."""
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def best_time(f, reps: int) -> float:
    """Seconds of one call of f: the least of `reps` timed calls after one untimed call."""
    f()
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_matrix(X: sp.csr_matrix, bandwidth: float, reps: int = 7, seed: int = 0) -> list[dict]:
    """One row per block width k: the block product in C and Fortran order, k single products, speed-ups and the
    matrix bytes per second of each as a share of `bandwidth`."""
    rng = np.random.default_rng(seed)
    mb = matrix_bytes(X)
    rows = []
    for k in WIDTHS:
        B = rng.standard_normal((X.shape[1], k))
        Bc, Bf = np.ascontiguousarray(B), np.asfortranarray(B)
        cols = [np.ascontiguousarray(B[:, j]) for j in range(k)]
        spmm_c = best_time(lambda: X @ Bc, reps)
        spmm_f = best_time(lambda: X @ Bf, reps)
        spmv = best_time(lambda: [X @ b for b in cols], reps)
        best = min(spmm_c, spmm_f)
        rows.append({"k": k, "spmv_s": spmv, "spmm_c_s": spmm_c, "spmm_f_s": spmm_f,
                     "speedup": spmv / best, "faster_order": "C" if spmm_c <= spmm_f else "F",
                     "spmv_bw": k * mb / spmv / bandwidth, "spmm_bw": k * mb / best / bandwidth})
    return rows


def measure(reps: int = 7, scale: int = 10, log=print) -> dict:
    """The lane table for a9a's matrix and for it repeated `scale` times, and the bandwidth they are read against."""
    X, source = a9a_matrix()
    big = sp.vstack([X] * scale, format="csr")
    bw = stream_bandwidth()
    log(f"lanes: streaming bandwidth {bw / 1e9:.2f} GB/s (read-only numpy sum over 400 MiB, best of 5)")
    out = {"bandwidth_Bps": bw, "matrices": []}
    for label, M in ((f"{source}", X), (f"the same rows x {scale}", big)):
        log(f"lanes: {label}: {M.shape[0]:,} x {M.shape[1]}, {M.nnz:,} non-zeros, "
            f"{matrix_bytes(M) / 1e6:.1f} MB per product")
        out["matrices"].append({"label": label, "shape": M.shape, "nnz": M.nnz, "bytes": matrix_bytes(M),
                                "rows": measure_matrix(M, bw, reps)})
    return out


def table(result: dict) -> str:
    """A markdown table per matrix: per k, k SpMVs against one SpMM (C and Fortran block), speed-up and the matrix
    bytes per second as a share of the measured streaming bandwidth."""
    parts = []
    for m in result["matrices"]:
        lines = [f"{m['label']}: {m['shape'][0]:,} x {m['shape'][1]}, {m['nnz']:,} nnz, "
                 f"{m['bytes'] / 1e6:.1f} MB per product; bandwidth {result['bandwidth_Bps'] / 1e9:.2f} GB/s",
                 "", "| k | k SpMV (ms) | SpMM C (ms) | SpMM F (ms) | speed-up | faster order | "
                 "SpMV bytes/s / bandwidth | SpMM bytes/s / bandwidth |",
                 "|---:|---:|---:|---:|---:|:---:|---:|---:|"]
        lines += [f"| {r['k']} | {1e3 * r['spmv_s']:.2f} | {1e3 * r['spmm_c_s']:.2f} | {1e3 * r['spmm_f_s']:.2f} | "
                  f"{r['speedup']:.1f}x | {r['faster_order']} | {100 * r['spmv_bw']:.0f}% | "
                  f"{100 * r['spmm_bw']:.0f}% |" for r in m["rows"]]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def frontier_lanes(level: str = "eps1", configfile: str = "config/config.yaml", log=print) -> list[dict]:
    """Per tunable frontier method, at `level` and in its noiseless job: the CPU seconds of `step_runs` one multiple
    after another and as lanes, and whether the models are equal bit for bit."""
    from dataclasses import replace

    import yaml

    from repro_dpadmm.experiments import beyond_frontier as bf
    from repro_dpadmm.paths import project_root

    cfg = yaml.safe_load((project_root() / configfile).read_text())
    params = {**cfg["papers"]["beyond"]["frontier"], "seed": cfg["seed"]}
    params.pop("datasets", None)
    ctx = bf.context(params)
    X, y, splits = bf.data(params)
    train = bf.train_csr(X, splits)
    grid = bf.step_grid(params)
    levels = {bf.level_key(v): float(v) for v in params["levels"]}
    rows = []
    for method in params["methods"]:
        m = bf.METHODS[method]
        if not m.tunable:
            continue
        for lv in (level, bf.noiseless_level(method, level)) if m.has_noiseless else (level,):
            base = lv.removesuffix(f"-{bf.NOISELESS}")
            cal = bf.calibrate_method(method, levels[base], ctx) if base in levels else None
            mech = bf.configured(method, ctx)
            noiseless = lv.endswith(bf.NOISELESS)
            times, out = {}, {}
            for way in ("one after another", "lanes"):
                t0 = time.process_time()
                if way == "lanes":
                    out[way] = [w for _, w in bf.step_runs(method, mech, grid, X, y, splits, train, cal, ctx, lv,
                                                           noiseless)]
                else:  # the sequential path of step_runs, whatever the mechanism offers
                    out[way] = []
                    for scale in grid:
                        rngs = bf._rngs(params, method, lv, m.layout.block)
                        data_ = bf.layout(method, X, y, splits, ctx, rngs["agents"], train)
                        out[way].append(replace(mech, step_scale=scale).run(data_, cal, ctx.T, rngs["noise"],
                                                                            noiseless=noiseless))
                times[way] = time.process_time() - t0
            same = all(np.array_equal(a, b) for a, b in zip(out["one after another"], out["lanes"]))
            rows.append({"method": method, "level": lv, "multiples": len(grid), "sequential_s": times[
                "one after another"], "lanes_s": times["lanes"], "equal": same})
            log(f"frontier lanes: {method}/{lv}: {times['one after another']:.2f} s one after another, "
                f"{times['lanes']:.2f} s as lanes, bit-equal: {same}")
    return rows


def frontier_table(rows: list[dict]) -> str:
    lines = ["| method | job | multiples | one after another (CPU s) | lanes (CPU s) | speed-up | bit-equal |",
             "|:---|:---|---:|---:|---:|---:|:---:|"]
    lines += [f"| {r['method']} | {r['level']} | {r['multiples']} | {r['sequential_s']:.2f} | {r['lanes_s']:.2f} | "
              f"{r['sequential_s'] / r['lanes_s']:.2f}x | {'yes' if r['equal'] else 'NO'} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--scale", type=int, default=10, help="the larger matrix: a9a's rows this many times")
    ap.add_argument("--frontier", action="store_true", help="the frontier's step multiples as lanes (paper settings)")
    ap.add_argument("--level", default="eps1", help="--frontier: the level of the jobs timed")
    args = ap.parse_args()
    if args.frontier:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):   # as the frontier's jobs run (blas_threads: 1)
            print("\n" + frontier_table(frontier_lanes(args.level)))
        return
    print("\n" + table(measure(args.reps, args.scale)))


if __name__ == "__main__":
    main()
