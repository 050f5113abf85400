"""privacy.bounds.hu2020: Lemma 1, Theorem 1 and Corollary 1 as the paper states them; a party's release as a record
and its tight totals."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy.bounds import hu2020 as bounds
from repro_dpadmm.privacy.spend import PAPER_BOUNDS


# docs/choices.md#hu-privacy [V] examples of Corollary 1 with delta' = 1e-5
@pytest.mark.parametrize("eps, expected", [
    (0.01, [0.108, 0.153, 0.217, 0.344]), (0.1, [1.126, 1.623, 2.356, 3.919]), (1.0, [19.3, 32.4, 55.8, 119.8])])
def test_advanced_composition_matches_spec(eps, expected):
    got = bounds.corollary1_epsilon(eps, np.array([5, 10, 20, 50]), 1e-5)
    np.testing.assert_allclose(got, expected, rtol=6e-3)
    assert bounds.corollary1_delta(0.01, 100, 1e-5) == pytest.approx(1.00001)


def test_theorem1_and_lemma1():
    C = bounds.sensitivity_bound(lam=1e-3, c1=2.0, b1=10.0, M=2, rho=1.0, d_m=np.array([67, 57]))
    np.testing.assert_allclose(C, 3 * (2e-3 + 30.0) / np.array([67, 57]))
    sig = bounds.theorem1_sigma(C, 0.5, 1e-5)
    np.testing.assert_allclose(sig, C * np.sqrt(2 * np.log(1.25e5)) / 0.5)
    np.testing.assert_allclose(bounds.epsilon_for_sigma(C, sig, 1e-5), 0.5)
    with pytest.raises(ValueError, match="epsilon"):
        bounds.theorem1_sigma(C, 3.0, 1e-5)             # outside the theorem's (0, 1] unless strict=False
    assert np.all(bounds.theorem1_sigma(C, 3.0, 1e-5, strict=False) < sig)
    with pytest.raises(ValueError, match="rho"):
        bounds.sensitivity_bound(1e-3, 2.0, 1.0, 2, 0.0, 5)


def test_tight_accounting_beats_advanced_composition():
    z = float(bounds.theorem1_sigma(1.0, 0.5, 1e-5))
    record = bounds.spend(3.0 * z, 3.0, 20, 1e-5, 1e-5)                 # sigma = C z with C = 3
    assert record.event.event.noise_multiplier == pytest.approx(z, rel=1e-15)
    assert PAPER_BOUNDS[record.bound] is bounds.corollary1_total
    got = bounds.tight_totals(record, 20 * 1e-5 + 1e-5)
    assert got["paper_eps"] == pytest.approx(bounds.corollary1_epsilon(0.5, 20, 1e-5), rel=1e-12)
    assert got["pld_eps"] < got["rdp_eps"] < got["paper_eps"]
    shorter = bounds.tight_totals(bounds.spend(z, 1.0, 10), 1e-5)
    assert shorter["pld_eps"] < bounds.tight_totals(bounds.spend(z, 1.0, 20), 1e-5)["pld_eps"]
    assert shorter["paper_eps"] is None                                  # no delta, delta': no paper bound named
