"""beyond/audit_run: the whole-run (one-run) audit of every method and level on synthetic data: same seed, same
numbers; the settings fail before any work. The bound is tested in tests/privacy/audit/test_one_run.py, the
canaries and scores of each method in tests/mechanisms."""

import pytest

from repro_dpadmm.experiments import beyond_audit_run as ex

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


def test_bad_settings_fail_before_any_work():
    with pytest.raises(ValueError, match="paper_epsilons"):
        ex.check_params({**SMALL, "huang2019": {**HP, "paper_epsilons": [2.0]}})
    with pytest.raises(ValueError, match="control_noise_factor"):
        ex.check_params({**SMALL, "control_noise_factor": 1.5})
    with pytest.raises(ValueError, match="canaries_per_agent"):
        ex.check_params({**SMALL, "huang2019": {**HP, "canaries_per_agent": 60}})
