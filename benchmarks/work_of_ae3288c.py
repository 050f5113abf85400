"""Rewrite a clone's config/config.yaml to the work of commit ae3288c (the last performance round's DAG), so that
`benchmarks/dag.py` times the same work with today's code (issue 38: "the same work as ae3288c, its items and
frontier at its settings"):

    python benchmarks/work_of_ae3288c.py config/config.yaml     # in a disposable clone, before benchmarks/dag.py

What later rounds added is taken out, key by key (EDITS below): the frontier's step grid, HUANG's DPSGD learning-rate
sweep and per-iteration error records, HU's runs as the authors ran them, ZKL's twins, sweeps, node-varying runs and
extra networks, XU's (step, T) sweeps, rho sweep and min-max variants, and the audits' white-box rows. Two settings
have no exact old form and are the nearest: XU's step (ae3288c: 1/L_f; today `eta: tuned` over `eta_grid`, here a
grid of the one step 1/L_f = 4 on unit-norm rows) and ZKL-ICML Fig. 2's equal-noise run (ae3288c: one run of blue
at a constant penalty; here `twins: [blue]`, which runs two). The old conservative-step variants of XU, which
today's code no longer has, are not run. Comments in the file are lost (it is a disposable copy).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

DELETE = object()

EDITS = {
    "papers.beyond.frontier.step_grid": [1.0],
    "papers.beyond.frontier.huang.dpsgd.convention": "average",
    "papers.beyond.audit_run.huang2019.white_box": DELETE,
    "papers.beyond.audit_run.xu2020.white_box": DELETE,
    **{f"papers.huang2019_dpadmm.{f}.err_every": 5 for f in ("fig1", "fig3", "fig4", "fig6")},
    **{f"papers.huang2019_dpadmm.{f}.dpsgd.lr_grid": DELETE for f in ("fig3", "fig6")},
    **{f"papers.huang2019_dpadmm.{f}.dpsgd.conventions": ["average", "sum"] for f in ("fig3", "fig6")},
    "papers.hu2020_sharing.fig3.variants": ["eq7_literal", "sklearn_defaults"],
    "papers.hu2020_sharing.fig3.as_run_repeats": DELETE,
    "papers.hu2020_sharing.eps_sweep.variants": ["authors_calibration", "eq7_literal", "sklearn_defaults"],
    "papers.hu2020_sharing.eps_sweep.as_run_repeats": DELETE,
    "papers.zhang2018_madmm.fig1.eta_cap": DELETE,
    "papers.zhang2018_madmm.fig2.twins": ["blue"],
    "papers.zhang2018_madmm.fig2.node_varying": DELETE,
    "papers.zhang2018_madmm.fig2.sweep": DELETE,
    **{f"papers.zhang2018_madmm.{f}.{k}": DELETE for f in ("fig3", "fig4") for k in ("twins", "sweep",
                                                                                      "extra_networks")},
    "papers.zhang2018_radmm.fig2.dvp.eta_sweep": DELETE,
    "papers.zhang2018_radmm.fig2.pp_grid": DELETE,
    "papers.zhang2018_radmm.fig3.alpha_sweep": DELETE,
    **{f"papers.xu2020_dpaccadmm.{f}.eta_grid": [4.0] for f in ("table1", "fig1", "fig2")},
    "papers.xu2020_dpaccadmm.fig1.variants": DELETE,
    "papers.xu2020_dpaccadmm.fig2.variants": {"iterations": [30, 100, 300],
                                              "epsilons": [0.01, 0.02, 0.05, 0.07, 0.08, 0.1]},
    "papers.xu2020_dpaccadmm.fig2.rho_sweep": DELETE,
}


def apply(cfg: dict, edits: dict = EDITS) -> dict:
    for dotted, value in edits.items():
        *path, last = dotted.split(".")
        node = cfg
        for key in path:
            if key not in node:
                raise KeyError(f"{dotted}: no {key!r} in the config")
            node = node[key]
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return cfg


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    cfg = apply(yaml.safe_load(path.read_text()))
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, width=120))
    print(f"{path}: rewritten to the work of ae3288c ({len(EDITS)} edits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
