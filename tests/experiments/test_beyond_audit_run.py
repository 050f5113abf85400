"""beyond/audit_run: the whole-run (one-run) audit of every method and level on synthetic data: same seed, same
numbers; the settings fail before any work. The bound is tested in tests/privacy/audit/test_one_run.py, the
canaries and scores of each method in tests/mechanisms."""

import pytest

from repro_dpadmm.experiments import beyond_audit_run as ex
from repro_dpadmm.privacy.audit import gaussian_pair as gp

from _audit_synth import sparse_rows


def _rows(N=1200, d=12, seed=0):
    return sparse_rows(N, d, seed)


HP = {"agents": 4, "rows_per_agent": 60, "canaries_per_agent": 5, "runs": 2, "reg": "l2", "rho": 0.1,
      "lam_n": 1e-6, "lr": 0.1, "paper_epsilons": [0.2], "paper_delta": 1e-4}
SMALL = {"iterations": 4, "confidence": 0.95, "control_noise_factor": 0.25, "levels": [3.0], "level_delta": 1e-5,
         "huang2019": HP,
         "xu2020": {"rows": 300, "canaries": 4, "runs": 3, "rho": 1.0, "gamma": 1.0, "lam": 1e-5, "mu": 0.5,
                    "c": 1.0, "u0": "paper", "paper_epsilons": [0.1], "paper_delta": 1e-3,
                    "graph": {"alphas": [0.5, 0.3, 0.2, 0.1], "tol": 1e-3, "max_iter": 100}}}
HU = {"rows": 200, "canaries": 6, "runs": 2, "boundaries": [0, 7, 12], "rho": 1.0, "lam": 1e-3, "c1": 2.0,
      "iterations_b1": 5, "paper_epsilons": [3.0], "paper_delta": 0.01, "delta_prime": 1e-5}


def test_same_seed_same_numbers_other_seed_other_numbers():
    X, y = _rows()
    data = {"adult_huang2019": (X, y), "a9a": _rows(N=400, d=12)}
    params = {**SMALL, "hu2020": HU}
    a = ex.metrics(ex.run(params, 5, data), params)
    b = ex.metrics(ex.run(params, 5, data), params)
    c = ex.metrics(ex.run(params, 6, data), params)
    strip = lambda m: {k: v for k, v in m.items() if "seconds" not in k}  # noqa: E731
    assert strip(a) == strip(b)
    assert any(a[k] != c[k] for k in a if k.endswith("correct"))
    assert {"huang_dpadmm.paper_eps0.2.eps_lo", "huang_dpsgd.level_eps3.control.eps_lo",
            "xu_dpadmm.paper_eps0.1.canary_eps", "hu_sharing.level_eps3.noisy_b1"} <= set(a)
    # HU: a claimed total at or above what 12 canaries can show (every guess correct) is untestable
    for lev in ("paper_eps3", "level_eps3"):
        q = f"hu_sharing.{lev}."
        assert a[q + "eps_lo"] <= a[q + "cap"]
        assert a[q + "paper_testable"] == (a[q + "paper_eps"] < a[q + "cap"])
        assert a[q + "tight_testable"] == (a[q + "tight_eps"] < a[q + "cap"])
    assert not a["hu_sharing.paper_eps3.paper_testable"]            # Corollary 1's total at eps = 3 per iteration


def test_item_functions_and_a_missing_dataset():
    params = {**SMALL, "hu2020": HU}
    result = ex.run(params, 0, {"adult_huang2019": _rows()})
    m = ex.metrics_audit_run(result)
    assert m["status"] == "ok" and m["reason"] == "hu_sharing: dataset a9a unavailable"
    assert not any(k.startswith("hu_sharing") for k in m["metrics"])
    assert list(ex.plot_audit_run(result)) == ["audit_run"]
    assert "Not run: hu_sharing (dataset a9a unavailable)." in ex.table_audit_run(result, m["metrics"])
    nothing = ex.run(SMALL, 0, {})
    assert ex.metrics_audit_run(nothing)["status"] == "not run" and ex.plot_audit_run(nothing) == {}


WB = {**SMALL, "huang2019": {**HP, "white_box": {"canaries_per_agent": 10, "runs": 2}},
      "xu2020": {**SMALL["xu2020"], "white_box": {"canaries": 10, "runs": 40}}}


def test_white_box_rows_reach_the_bound_and_flag_the_control():
    """White-box canaries sit at the sensitivity bound: their ceiling is the tight total itself (the record-level
    DP-ADMM and XU canaries reach half the gap), and at a level as large as 3 a handful of them flags the 4x control
    with the f-DP (GDP) analysis while the claimed noise stays unflagged. Every row carries both analyses and the
    control's power."""
    X, y = _rows()
    params = WB
    assert ex.methods(params) == ["huang_dpadmm", "huang_dpsgd", "xu_dpadmm", "huang_dpadmm_wb", "huang_dpsgd_wb",
                                  "xu_dpadmm_wb"]
    out = ex.run(params, 3, {"adult_huang2019": (X, y)})
    m = ex.metrics(out, params)
    for meth in ("huang_dpadmm_wb", "huang_dpsgd_wb", "xu_dpadmm_wb"):
        q = f"{meth}.level_eps3."
        assert m[q + "canary_eps"] == pytest.approx(m[q + "tight_eps"], rel=1e-6)
        assert m[q + "control.flagged_tight"] and not m[q + "flagged_tight"] and not m[q + "flagged"]
        assert m[q + "control.eps_lo_gdp"] > m[q + "control.eps_lo"] * 0.5
        # "supported" only where the power calculation of a reading expects the control to be flagged and that
        # reading flagged it (else a flag is luck)
        caught = ((m[q + "control.testable"] and m[q + "control.flagged_tight"]) or
                  (m[q + "control.testable_gauss"] and m[q + "control.flagged_gauss"]))
        assert m[q + "reading"] == ("supported" if caught else "untestable")
        # the Gaussian-pair reading: white-box scores are exactly a Gaussian pair (the fit is not rejected), the
        # claimed noise is not flagged, the control is, and its estimate lies within 4 standard errors of the canaries'
        # own mu (sqrt(T) / multiplier)
        assert m[q + "gauss_fit_ok"] and not m[q + "flagged_gauss"] and m[q + "control.flagged_gauss"]
        mu = gp.gdp_mu_of_epsilon(m[q + "canary_eps"], m[q + "delta"])
        assert abs(m[q + "mu_hat_gauss"] - mu) < 4 * m[q + "mu_se_gauss"]
        assert m[q + "mu_lo_gauss"] < m[q + "mu_hat_gauss"]
        assert m[q + "ratio_gauss"] == pytest.approx(m[q + "eps_lo_gauss"] / m[q + "tight_eps"])
        # testable at this power iff the canaries the power calculation asks for are there (to its 5% grid)
        need, have = m[q + "control.canaries_needed"], m[meth + ".canaries"]
        if not 0.94 < need / have < 1.06:
            assert m[q + "control.testable"] == (need < have)
        assert m[q + "ratio"] == pytest.approx(m[q + "eps_lo_gdp"] / m[q + "tight_eps"])
    assert m["huang_dpadmm.level_eps3.canary_eps"] < 0.6 * m["huang_dpadmm.level_eps3.tight_eps"]
    assert m["huang_dpadmm_wb.canaries"] == 4 * 10 * 2 and m["xu_dpadmm_wb.canaries"] == 400
    assert m["xu_dpadmm_wb.runs"] == 40 and m["huang_dpadmm.runs"] == 2
    assert "white-box" in ex.table_audit_run(out, m)
    # the parts of the item are its methods, and combining them gives the whole run
    # (a record-level method's rows in one job, a white-box method's one row per job)
    assert ex.parts_audit_run(params) == ["huang_dpadmm", "huang_dpsgd", "xu_dpadmm"] + [
        f"{w}.{lev}" for w, lev in (("huang_dpadmm_wb", "paper_eps0.2"), ("huang_dpadmm_wb", "level_eps3"),
                                    ("huang_dpsgd_wb", "paper_eps0.2"), ("huang_dpsgd_wb", "level_eps3"),
                                    ("xu_dpadmm_wb", "paper_eps0.1"), ("xu_dpadmm_wb", "level_eps3"))]
    assert m["xu_dpadmm_wb.row_level"] == pytest.approx(0.05 / 2)
    one = ex.combine([ex.run_method("xu_dpadmm_wb", params, 3, {"adult_huang2019": (X, y)}, lev)
                      for lev in ("paper_eps0.1", "level_eps3")], params)
    m1 = ex.metrics(one, params)
    for key in ("level_eps3.control.correct", "level_eps3.mu_hat_gauss", "paper_eps0.1.sim_flags"):
        assert m1[f"xu_dpadmm_wb.{key}"] == m[f"xu_dpadmm_wb.{key}"]
    for key in ("xu_dpadmm_wb.level_eps7", "xu_dpadmm_wb", "xu_dpadmm.level_eps3"):
        with pytest.raises(ValueError, match="no part"):
            ex.part_audit_run(params, key)


def test_bad_settings_fail_before_any_work():
    with pytest.raises(ValueError, match="paper_epsilons"):
        ex.check_params({**SMALL, "huang2019": {**HP, "paper_epsilons": [2.0]}})
    with pytest.raises(ValueError, match="control_noise_factor"):
        ex.check_params({**SMALL, "control_noise_factor": 1.5})
    with pytest.raises(ValueError, match="canaries_per_agent"):
        ex.check_params({**SMALL, "huang2019": {**HP, "canaries_per_agent": 60}})
    with pytest.raises(ValueError, match="white_box.canaries_per_agent"):
        ex.check_params({**SMALL, "huang2019": {**HP, "white_box": {"canaries_per_agent": 60, "runs": 1}}})
    with pytest.raises(ValueError, match="xu2020.white_box.runs"):
        ex.check_params({**SMALL, "xu2020": {**SMALL["xu2020"], "white_box": {"canaries": 4, "runs": 0}}})
