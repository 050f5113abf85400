"""A synthetic project for the report tests: claims files, a results folder and dataset sidecars, all small.

It covers every item state (produced, not run, missing, extra), every verdict (inconclusive from per-repeat values,
degenerate against a trivial reference), the three claim classes (measured, analytic, setup), a variant that changes
a verdict, findings (matching, stale, missing, contradicted), a threshold looser than the paper's, privacy keys and a
dataset claim.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from repro_dpadmm.paths import project_root

REPO = project_root(Path(__file__).parent)

HUANG_CLAIMS = {
    "metrics": {
        "fig1": {
            "el_final.n10": "empirical loss at k = 100, n = 10",
            "el_final.n50": "empirical loss at k = 100, n = 50",
            "el_final.n100": "empirical loss at k = 100, n = 100",
            "err_final.n100": "test error at k = 100, n = 100",
            "centralised_err": "test error of the centralised optimum",
            "converged": "all runs finished",
            "privacy.dpadmm.eps0.1_delta1e-4.paper_eps": "moments accountant (paper)",
            "privacy.dpadmm.eps0.1_delta1e-4.rdp_eps": "dp-accounting RDP",
            "privacy.dpadmm.eps0.1_delta1e-4.pld_eps": "dp-accounting PLD",
            "privacy.dpadmm.eps0.1_delta1e-4.delta": "delta",
            "privacy.dvp.eps0.1.paper_eps": "basic composition (pure eps)",
            "err.dpadmm": "test error of DP-ADMM, mean over repeats",
            "err.dpsgd": "test error of DPSGD (average convention), mean over repeats",
            "bisection.eps": "the epsilon the calibration bisection reached (target 0.1)",
            "err.const": "test error of the majority-class classifier",
            "err.dvp": "test error of DVP, mean over repeats",
        },
        "fig2": {"aov_final.eps0.1": "AOV at k = 100"},
        "fig3": {"el_final.dpadmm": "EL of DP-ADMM", "el_final.dpsgd": "EL of DPSGD"},
    },
    "evidence": {
        "*": [{"keys": "privacy.*", "kind": "derived"}],
        "fig1": [{"keys": "bisection.*", "kind": "derived"}, {"keys": "err.const", "kind": "measured"},
                 {"keys": "err.*", "kind": "measured", "reference": "err.const", "better": "lower"},
                 {"keys": "el_final.*", "kind": "measured"}, {"keys": "err_final.*", "kind": "measured"},
                 {"keys": "centralised_err", "kind": "measured"}, {"keys": "converged", "kind": "measured"}],
        "fig2": [{"keys": "*", "kind": "measured"}],
        "fig3": [{"keys": "*", "kind": "measured"}],
    },
    "items": {
        "fig1": {"title": "Fig. 1", "caption": "Impact of distributed data source number on DP-ADMM "
                                               "(l_1-regularized logistic regression).",
                 "figure": "fig1.png", "choices": ["[D] n in {10, 50, 100}", "[D] eps = 0.1, delta = 1e-4"],
                 "inconsistencies": ["[!] c_w = 23 disagrees with the measured ||w*|| (docs/choices.md#huang-paper-inconsistencies)"]},
        "fig2": {"title": "Fig. 2", "caption": "Convergence properties of DP-ADMM."},
        "fig3": {"title": "Fig. 3", "caption": "Accuracy comparison."},
    },
    "variants": {"dpsgd_sum": {"choice": "dpsgd_convention", "label": "DPSGD sum convention", "item": "fig1"}},
    "privacy": {"dpadmm": {"label": "DP-ADMM", "mechanism": "Gaussian output perturbation",
                           "bound": "moments accountant (§IV-C)"},
                "dvp": {"label": "DVP", "mechanism": "Gamma-norm (pure ε)"}},
    "claims": [
        {"id": "huang2019_dpadmm.fig1.accuracy_decreases_with_n", "item": "fig1",
         "quote": "the accuracy of our training model would decrease if we consider larger number of data sources",
         "where": "§VI-E, Fig. 1",
         "checks": [{"kind": "monotone", "metrics": ["el_final.n10", "el_final.n50", "el_final.n100"],
                     "direction": "increasing"}],
         "depends_on": ["[D] n in {10, 50, 100}"]},
        {"id": "huang2019_dpadmm.fig1.error_near_centralised", "item": "fig1",
         "quote": "DP-ADMM approaches the centralised error", "paper_value": 0.15,
         "checks": [{"kind": "approx", "metric": "err_final.n100", "expected": 0.15, "abs_tol": 0.01,
                     "from": "§VI-E: the paper's 0.15, one point either side"},
                    {"kind": "less", "left": "err_final.n100", "right": 0.2, "from": "rule: an error below 0.2",
                     "paper_threshold": 0.16}],
         "finding": {"when": "not reproduced", "text": "the test split was the train split"}},
        {"id": "huang2019_dpadmm.fig1.beats_dpsgd_noisy", "item": "fig1",
         "quote": "DP-ADMM is more accurate than DPSGD",
         "variants": ["dpsgd_sum"],
         "checks": [{"kind": "less", "left": "err.dpadmm", "right": "err.dpsgd"}],
         "finding": {"when": "inconclusive",
                     "text": "the two are within the noise under the average convention"}},
        {"id": "huang2019_dpadmm.fig1.dpsgd_beats_dpadmm_sum", "item": "fig1",
         "quote": "DPSGD under the sum convention is worse", "variants": ["dpsgd_sum"],
         "checks": [{"kind": "greater", "left": "err.dpsgd", "right": "err.dpadmm"}],
         "finding": {"when": "inconclusive", "text": "blamed on the paper", "evidence": ["err.dpsgd"]}},
        {"id": "huang2019_dpadmm.fig1.bisection_hit_target", "item": "fig1", "quote": "calibrated to eps = 0.1",
         "setup": True, "checks": [{"kind": "approx", "metric": "bisection.eps", "expected": 0.1, "rel_tol": 1e-6,
                                    "from": "rule: the bisection's tolerance"}]},
        {"id": "huang2019_dpadmm.fig1.accountant_is_loose", "item": "fig1",
         "quote": "the moments accountant overstates the tight total",
         "checks": [{"kind": "greater", "left": "privacy.dpadmm.eps0.1_delta1e-4.paper_eps",
                     "right": "privacy.dpadmm.eps0.1_delta1e-4.pld_eps"}]},
        {"id": "huang2019_dpadmm.fig1.dvp_better_than_dpadmm", "item": "fig1",
         "quote": "DVP is more accurate than DP-ADMM",
         "checks": [{"kind": "less", "left": "err.dvp", "right": "err.dpadmm"}],
         "finding": {"when": "degenerate", "text": "DVP does not learn at this epsilon", "evidence": ["err.dvp"]}},
        {"id": "huang2019_dpadmm.fig1.error_tiny", "item": "fig1", "quote": "a claim that does not hold",
         "checks": [{"kind": "less", "left": "err_final.n100", "right": "centralised_err"}]},
        {"id": "huang2019_dpadmm.fig1.rate", "item": "fig1", "quote": "O(1/sqrt(t)) convergence", "checks": [],
         "not_checkable": "a bound with unknown constants (Theorem 3)"},
        {"id": "huang2019_dpadmm.fig1.needs_missing_key", "item": "fig1", "quote": "uses a key never written",
         "checks": [{"kind": "true", "metric": "converged"},
                    {"kind": "range", "metric": "el_final.n200", "max": 1, "from": "rule: a loss below 1"}]},
        {"id": "huang2019_dpadmm.fig2.aov_converges", "item": "fig2", "quote": "AOV converges",
         "checks": [{"kind": "range", "metric": "aov_final.eps0.1", "max": 100, "from": "Fig. 2: AOV below 100"}]},
        {"id": "huang2019_dpadmm.fig3.beats_dpsgd", "item": "fig3", "quote": "our approach outperforms DPSGD",
         "checks": [{"kind": "less", "left": "el_final.dpadmm", "right": "el_final.dpsgd"}]},
    ],
}

XU_CLAIMS = {
    "metrics": {"table1": {"n_train.a9a": "training samples of a9a"}},
    "evidence": {"table1": [{"keys": "n_train.*", "kind": "given"}]},
    "items": {"table1": {"title": "Table I", "caption": "Summary of data sets."}},
    "claims": [
        {"id": "xu2020_dpaccadmm.table1.a9a_size", "item": "table1", "quote": "a9a: 32,561 training samples",
         "checks": [{"kind": "equal", "metric": "n_train.a9a", "expected": 32561}]},
        {"id": "xu2020_dpaccadmm.table1.bio_size", "item": "table1", "quote": "bio_train: 72,876",
         "datasets": ["bio_train"],
         "checks": [{"kind": "equal", "metric": "n_train.bio_train", "expected": 72876}]},
    ],
}


def _png(path: Path, title: str, wide: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    k = np.arange(1, 101)
    fig, axes = plt.subplots(1, 2 if wide else 1, figsize=(9 if wide else 5, 3.2), squeeze=False)
    for i, ax in enumerate(axes[0]):
        for n in (10, 50, 100):
            ax.plot(k, 0.33 + 0.5 / np.sqrt(k) * (1 + n / 100) * (1 + i), label=f"n = {n}")
        ax.set_xlabel("iteration k")
        ax.set_ylabel("empirical loss" if i == 0 else "test error")
        ax.legend(frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _item(root: Path, paper: str, item: str, metrics: dict, params: dict | None = None, *,
          figure: bool = True, wide: bool = False) -> Path:
    d = root / "results" / paper / item
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps(metrics, indent=2))
    if metrics.get("status", "ok") == "ok" or figure:
        (d / f"{item}.html").write_text(f"<!doctype html><title>{item}</title><h1>{paper} {item}</h1>")
    if figure and metrics.get("status", "ok") == "ok":
        _png(d / f"{item}.png", f"{paper} {item} (synthetic)", wide)
    if params is not None:
        nb = {"cells": [], "metadata": {"papermill": {"parameters": {"params": params, "out_dir": str(d)}}},
              "nbformat": 4, "nbformat_minor": 5}
        (d / f"{item}.ipynb").write_text(json.dumps(nb))
    return d


def make_project(root: Path) -> Path:
    """Write the synthetic project under `root` and return it."""
    (root / "config" / "claims").mkdir(parents=True)
    (root / "Snakefile").write_text("# synthetic\n")
    fig1_params = {"datasets": ["adult_huang2019"], "n": [10, 50, 100], "repeats": 10}
    (root / "config" / "config.yaml").write_text(yaml.safe_dump({
        "seed": 0, "papers": {"huang2019_dpadmm": {"fig1": fig1_params, "fig2": {"datasets": ["adult_huang2019"]}},
                              "xu2020_dpaccadmm": {"table1": {"datasets": ["a9a", "bio_train"]}}}}))
    (root / "config" / "claims" / "huang2019_dpadmm.yaml").write_text(yaml.safe_dump(HUANG_CLAIMS, sort_keys=False))
    (root / "config" / "claims" / "xu2020_dpaccadmm.yaml").write_text(yaml.safe_dump(XU_CLAIMS, sort_keys=False))
    shutil.copy(REPO / "config" / "claims" / "datasets.yaml", root / "config" / "claims" / "datasets.yaml")

    processed = root / "resources" / "processed"
    processed.mkdir(parents=True)
    sidecars = {
        "adult_huang2019": {"name": "adult_huang2019", "available": True, "arrays": {"X": [45222, 104], "y": [45222]},
                            "n_rows_read": 48842, "options": {"row_normalisation": "per_row"},
                            "sources": {"uci/adult/adult.data": {"sha256": "5b00264637dbfec36bdeaab5676b0b30"}}},
        "adult_zhang2018": {"name": "adult_zhang2018", "available": True, "arrays": {"X": [45222, 105]},
                            "n_rows_read": 48842, "options": {}, "sources": {}},
        "a9a": {"name": "a9a", "available": True, "options": {},
                "arrays": {"X_train": [32561, 123], "X_test": [16281, 123]}, "sources": {}},
        "bio_train": {"name": "bio_train", "available": False, "options": {},
                      "reason": "could not obtain kddcup2004/data_kddcup04.tar.gz\n  tried: ..."},
    }
    for name, side in sidecars.items():
        (processed / f"{name}.json").write_text(json.dumps(side))

    ok = {"status": "ok", "reason": ""}
    _item(root, "huang2019_dpadmm", "fig1", {
        **ok, "wall_time_s": 12.5, "el_final.n10": 0.41, "el_final.n50": 0.45, "el_final.n100": 0.52,
        "err_final.n100": 0.155, "centralised_err": 0.15, "converged": True,
        "privacy.dpadmm.eps0.1_delta1e-4.paper_eps": 1.0146, "privacy.dpadmm.eps0.1_delta1e-4.rdp_eps": 1.21,
        "privacy.dpadmm.eps0.1_delta1e-4.pld_eps": 0.93, "privacy.dpadmm.eps0.1_delta1e-4.delta": 1e-4,
        "privacy.dvp.eps0.1.paper_eps": 10.0, "privacy.dvp.eps0.1.rdp_eps": None,
        "privacy.dpadmm.eps0.1_delta1e-4.pld_eps@dpsgd_sum": 0.95, "privacy.dpadmm.eps0.1_delta1e-4.pld_eps.se": 0.01,
        "err.dpadmm": 0.2, "err.dpsgd": 0.205, "err.dpsgd@dpsgd_sum": 0.28, "bisection.eps": 0.1,
        "err.const": 0.3, "err.dvp": 0.31,
        "repeats": {"err.dpadmm": [0.18, 0.19, 0.2, 0.21, 0.22], "err.dpsgd": [0.215, 0.185, 0.205, 0.225, 0.195]}},
        params=fig1_params, wide=True)
    _item(root, "huang2019_dpadmm", "fig2", {"status": "not run", "reason": "dataset unavailable (adult: test)",
                                             "wall_time_s": 0.0}, figure=False)
    # fig3: missing (no folder); fig4: folder without metrics.json (a failed run)
    (root / "results" / "huang2019_dpadmm" / "fig4").mkdir(parents=True)
    # an item that aggregates separately scheduled jobs (as the frontier does) reports their summed time
    _item(root, "huang2019_dpadmm", "extra_item", {**ok, "wall_time_s": 1.0, "wall_time.jobs_sum_s": 125.0, "x": 1,
                                                           "note": "Winner at every level: method X."},
          figure=False)
    _item(root, "xu2020_dpaccadmm", "table1", {**ok, "wall_time_s": 0.4, "n_train.a9a": 32561},
          params={"datasets": ["a9a", "bio_train"], "repeats": 1}, figure=False)
    return root
