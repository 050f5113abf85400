"""Adding a method is one file: the toy of tests/_toy_method.py (one class, nothing else edited) is on the
equal-privacy frontier (its jobs, its calibration, its row in the table, its curve in the figure, its metrics) and in
both audits (their lists, tables and figures), because it declares those capabilities. It has no paper bound, so
this also checks that the frontier's table and figure render a method without one."""

from __future__ import annotations

import copy

import pytest

import _toy_method  # noqa: F401  (the one file that adds the method)
from _audit_synth import sparse_rows
from repro_dpadmm import config
from repro_dpadmm.experiments import beyond_audit as ba
from repro_dpadmm.experiments import beyond_audit_run as bar
from repro_dpadmm.experiments import beyond_frontier as bf

TOY = "toy_two_step"


@pytest.mark.mirror
def test_the_toy_is_on_the_frontier(processed_root, tmp_path, monkeypatch):
    p = copy.deepcopy(config.item_params("beyond", "frontier"))
    p.update(levels=[1.0], repeats=2, rows=1500, n_train=1200, iterations=4, step_grid=[1.0, 3.0],
             methods=["huang_dpsgd", TOY])
    p["huang"] = {**p["huang"], "agents": 6}
    bf.check_params(p)
    assert TOY in bf.METHODS and bf.METHODS[TOY].tunable
    assert [j for j in bf.jobs_of(p) if j[0] == TOY] == [(TOY, "eps1"), (TOY, "noiseless")]
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(processed_root))  # its datasets (a fresh clone has none built)
    result = bf.run_frontier(p, tmp_path)                      # runs every job, the toy's included
    job = bf.load_jobs(p, tmp_path, run_missing=False)[(TOY, "eps1")]
    cal = job["calibration"]
    assert cal["paper_eps"] is None and cal["calibrator"] == "search against the spend"
    assert 0.998 <= cal["spend_eps"] <= 1.0
    out = bf.metrics_frontier(result)
    m = out["metrics"]
    assert m[f"privacy.{TOY}.eps1.paper_eps"] is None and m[f"err.{TOY}.eps1"] > 0
    assert m["calibration.max_excess"] <= 0
    table = bf.table_frontier(result, m)
    row = next(line for line in table.splitlines() if line.startswith("| toy DPSGD, two steps per iteration |"))
    assert "— (none (no paper))" in row
    assert "toy DPSGD, two steps per iteration (learning rate" in table
    fig = bf.plot_frontier(result)["frontier"]
    assert any("toy DPSGD" in t.get_text() for t in fig.axes[0].get_legend().get_texts())


AUDIT_HP = {"reg": "l2", "rho": 0.1, "lam_n": 1e-6, "lr": 0.1, "agents": 1}


def test_the_toy_is_in_the_one_step_audit():
    params = {**copy.deepcopy(config.item_params("beyond", "audit")), "trials": 4000, "calibration_trials": 2000,
              "chunk": 4000, "huang2019": AUDIT_HP,
              "mechanisms": {"huang_dpsgd": {"kind": "huang2019_dpsgd", "epsilon": 1.0},
                             "toy": {"kind": TOY, "epsilon": 1.0}}}
    assert TOY in ba.kinds()
    X, y = sparse_rows(1200, 12, 1)
    result = ba.run(params, 0, {"adult_huang2019": (X.toarray(), y)})
    assert list(result["results"]) == ["huang_dpsgd", "toy"]
    m = ba.metrics_audit(result)["metrics"]
    assert "toy.eps_lo" in m and "toy.control.eps_lo" in m
    assert "| toy DPSGD, two steps per iteration step (`toy`) |" in ba.table_audit(result, m)
    assert list(ba.plot_audit(result)) == ["audit"]


RUN_HP = {"agents": 3, "rows_per_agent": 40, "canaries_per_agent": 4, "runs": 2, "reg": "l2", "rho": 0.1,
          "lam_n": 1e-6, "lr": 0.1, "paper_epsilons": [0.2], "paper_delta": 1e-4}
RUN = {"iterations": 2, "confidence": 0.95, "control_noise_factor": 0.25, "levels": [3.0], "level_delta": 1e-5,
       "huang2019": RUN_HP,
       "xu2020": {"rows": 200, "canaries": 4, "runs": 2, "rho": 1.0, "gamma": 1.0, "lam": 1e-5, "mu": 0.5, "c": 1.0,
                  "u0": "paper", "paper_epsilons": [0.1], "paper_delta": 1e-3,
                  "graph": {"alphas": [0.5, 0.3, 0.2, 0.1], "tol": 1e-3, "max_iter": 100}}}


def test_the_toy_is_in_the_whole_run_audit_when_its_block_is_set():
    data = {"adult_huang2019": sparse_rows(1200, 12, 0)}
    assert TOY not in bar.mechanisms(RUN)                       # not configured: not run
    params = {**RUN, TOY: {k: v for k, v in RUN_HP.items() if not k.startswith("paper")}}
    assert list(bar.mechanisms(params)) == ["huang_dpadmm", "huang_dpsgd", "xu_dpadmm", TOY]
    result = bar.run(params, 0, data)
    m = bar.metrics_audit_run(result)["metrics"]
    assert {f"{TOY}.level_eps3.eps_lo", f"{TOY}.level_eps3.reading", f"{TOY}.canaries"} <= set(m)
    assert m[f"{TOY}.level_eps3.tight_eps"] == pytest.approx(3.0, rel=1e-6)
    assert "| toy two-step DPSGD | black-box | level_eps3 |" in bar.table_audit_run(result, m)
    assert len(bar.plot_audit_run(result)["audit_run"].axes) == 4
