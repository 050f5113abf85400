"""Benchmark: private M-ADMM (penalty perturbation) on Adult, N = 100 nodes, 100 iterations, 10 repeats.

Target (issue 38; issue 20 asked 5 s): the run at N = 100, T = 100, 10 repeats in at most 6 s. Run:
`python benchmarks/bench_zhang2018.py [--iterations T] [--repeats R] [--five-node]`. Prints the setup time, the run time (wall and
CPU, including the privacy record) and its ratio to the 6 s bound (scaled to T when T differs from 100), the time per
iteration, the Newton steps of the local solves (damped Newton, every local problem to ||grad||/kappa <= tol) and
P(T) from the run's record. The damping must not cost more than 20% over the undamped solver it replaced (issue 16).
`--five-node`: the other shape of the ZKL items (zhang2018_madmm fig1/fig2: five nodes of about 9,000 samples,
C = 1000), timed the same way; the issue's bound is for N = 100, so its ratio is only indicative there.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.datasets import load
from repro_dpadmm.privacy.bounds import zhang2018 as bounds

BOUND_S = 6.0  # issue 38: private M-ADMM, N = 100, T = 100, 10 repeats


def measure(nodes: int = 100, iterations: int = 100, repeats: int = 10, tol: float = 1e-6, five_node: bool = False,
            log=print) -> dict:
    """Run private M-ADMM once (printing as it goes) and return its time, the bound and the ratio."""
    if five_node:
        nodes = 5
    data = load("adult_zhang2018")
    X, y = data["X"], data["y"]
    t0 = time.perf_counter()
    graph = {"kind": "five_node"} if five_node else {
        "kind": "erdos_renyi", "nodes": nodes, "p": 0.05 if nodes >= 50 else 0.2, "seed": 1}
    C = 1000.0 if five_node else 100.0
    nd, A = dz.network(X, y, graph, 0, "bench")
    _ = nd.eig_G
    setup = time.perf_counter() - t0
    T, R = iterations, repeats
    f0 = dz.initial_points(0, R, nodes, X.shape[1], 1.0, "bench")
    t0 = time.perf_counter()   # one iteration first: loads (or, after a change to the kernels, compiles) them
    dz.m_admm(nd, A, C=C, rho=1.0, eta=dz.geometric(0.5, 1.05, 1), theta=np.full(1, 0.5), f0=f0,
              alpha=dz.geometric(3.0, 1.04, 1), rngs=dz.noise_generators(1, R, "warm"), tol=tol)
    log(f"  warm-up (kernels loaded or compiled, one iteration): {time.perf_counter() - t0:.2f} s")
    t0, c0 = time.perf_counter(), time.process_time()
    h = dz.m_admm(nd, A, C=C, rho=1.0, eta=dz.geometric(0.5, 1.05, T), theta=np.full(T, 0.5), f0=f0,
                  alpha=dz.geometric(3.0, 1.04, T), rngs=dz.noise_generators(0, R, "bench"), tol=tol)
    run, cpu = time.perf_counter() - t0, time.process_time() - c0
    bound = BOUND_S * T / 100  # the bound is for T = 100; a shorter run is held to its share
    log(f"private M-ADMM: N = {nodes}, C = {C:g}, T = {T}, repeats = {R}, newton tol = {tol:g}")
    log(f"  setup (graph, node data, eigen-decompositions): {setup:.2f} s")
    log(f"  run: {run:.2f} s wall, {cpu:.2f} s CPU ({1e3 * run / T:.1f} ms per iteration); bound {bound:.3g} s "
        f"({BOUND_S:g} s at T = 100): ratio {run / bound:.2f} ({'met' if run <= bound else 'NOT met'})")
    log(f"  Newton steps per local problem: mean {h.meta['newton_steps_mean']:.2f}, most {h.meta['newton_steps_max']}; "
        f"damped steps {h.meta['newton_damped_steps']}; worst residual {h.meta['local_residual_max']:.1e}")
    log(f"  final L_mean = {h.mean('L')[-1]:.4f}; P(T) from the run's privacy record = "
        f"{bounds.paper_total(h.spends[0]):.4g}")
    return {"run_s": run, "cpu_s": cpu, "bound_s": bound, "ratio": run / bound,
            "shape": f"N = {nodes}, T = {T}, {R} repeats"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--five-node", action="store_true", help="five-node graph, C = 1000 (zhang2018_madmm fig2)")
    args = ap.parse_args()
    measure(args.nodes, args.iterations, args.repeats, args.tol, args.five_node)


if __name__ == "__main__":
    main()
