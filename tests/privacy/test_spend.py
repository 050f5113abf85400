"""privacy.spend: a run's recorded release and the one function from it to the paper's, RDP and PLD totals."""

import numpy as np
import pytest

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.spend import (ADD_OR_REMOVE_ONE, Spend, gaussian_steps, paper_bound, PAPER_BOUNDS,
                                        pure_epsilons, pure_steps, totals)


def test_gaussian_totals_equal_the_accountants_on_the_same_multipliers():
    out = totals(Spend(gaussian_steps(2.0, 100)), 1e-5)
    grid = accounting.pld_grid(out["rdp_eps"])
    assert out["pld_eps"] == pytest.approx(accounting.pld_epsilon(2.0, 1e-5, 100, discretization=grid), rel=1e-9)
    assert out["rdp_eps"] == pytest.approx(accounting.rdp_epsilon(2.0, 1e-5, 100), rel=1e-12)
    assert out["pld_eps"] < out["rdp_eps"]  # PLD is tight, RDP an upper bound
    # the analytic Gaussian (mu-GDP) is the exact total; PLD overstates it only by its discretisation
    exact = accounting.analytic_gaussian_epsilon(2.0, 1e-5, 100)
    assert exact <= out["pld_eps"] <= exact * 1.01


def test_heterogeneous_multipliers_compose_per_step():
    zs = [1.0] * 10 + [3.0] * 20
    a = totals(Spend(gaussian_steps(zs)), 1e-6)["rdp_eps"]
    b = accounting.rdp_epsilon(zs, 1e-6)
    assert a == pytest.approx(b, rel=1e-12)
    assert a > totals(Spend(gaussian_steps(3.0, 30)), 1e-6)["rdp_eps"]


def test_pure_steps_are_the_optimal_composition_and_round_trip_their_epsilons():
    eps = np.array([0.1] * 50 + [0.2] * 50)
    assert np.allclose(np.sort(pure_epsilons(pure_steps(eps))), np.sort(eps))
    out = totals(Spend(pure_steps(eps)), 1e-5)
    assert out["basic_eps"] == pytest.approx(15.0)
    assert out["pld_eps"] == pytest.approx(accounting.pure_composed_epsilon(eps, 1e-5), rel=1e-12)
    assert out["pld_eps"] < out["basic_eps"]
    assert pure_epsilons(gaussian_steps(1.0, 3)) is None


def test_the_paper_bound_is_evaluated_from_the_record(monkeypatch):
    monkeypatch.setitem(PAPER_BOUNDS, "test.sum", lambda T, eps: T * eps)
    out = totals(Spend(gaussian_steps(1.0, 4), ADD_OR_REMOVE_ONE, "test.sum", {"T": 4, "eps": 0.5}), 1e-5)
    assert out["paper_eps"] == 2.0 and out["neighbouring"] == "add/remove-one"


def test_paper_bound_registers_the_function_under_its_name(monkeypatch):
    monkeypatch.setattr("repro_dpadmm.privacy.spend.PAPER_BOUNDS", dict(PAPER_BOUNDS))
    from repro_dpadmm.privacy import spend

    def bound(T):
        return 0.5 * T

    assert paper_bound("test.other")(bound) is bound
    assert spend.PAPER_BOUNDS["test.other"] is bound and "test.other" not in PAPER_BOUNDS


def test_bad_records_are_refused():
    with pytest.raises(TypeError, match="DpEvent"):
        Spend(0.5)
    with pytest.raises(ValueError, match="neighbouring"):
        Spend(gaussian_steps(1.0, 1), "swap")
    with pytest.raises(ValueError, match="not a paper bound"):
        Spend(gaussian_steps(1.0, 1), bound="nobody.bound")
    with pytest.raises(ValueError, match="delta"):
        totals(Spend(gaussian_steps(1.0, 1)), 0.0)
    with pytest.raises(ValueError):
        gaussian_steps(0.0, 3)
    with pytest.raises(ValueError):
        pure_steps([0.1, -1.0])


def test_events_are_built_as_before_where_they_are_read():
    """gaussian_steps and pure_steps return LazyEvents; a Spend reads them as the DpEvents they stand for."""
    import dp_accounting as dpa

    assert Spend(gaussian_steps(2.0, 100)).event == dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(2.0), 100)
    assert Spend(gaussian_steps([3.0, 1.0, 3.0])).event == dpa.ComposedDpEvent(
        [dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 1), dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(3.0), 2)])
    assert Spend(pure_steps([0.5, 0.5])).event == dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(
        dpa.RandomizedResponseDpEvent(noise_parameter=float(2.0 / (1.0 + np.exp(0.5))), num_buckets=2), 2)])
    spend = Spend(gaussian_steps(2.0, 3))
    assert spend.event is spend.event  # built once
    eps = np.array([0.3, 0.1, 0.3, 0.7])
    lazy = pure_steps(eps)
    np.testing.assert_array_equal(pure_epsilons(lazy), pure_epsilons(lazy.build()))  # read off the recipe, same bits
    np.testing.assert_array_equal(accounting.gaussian_multipliers(gaussian_steps([1.0, 2.0])), [1.0, 2.0])


def test_recording_a_spend_does_not_import_dp_accounting():
    """A run that only records its Spend (and pickles it, as a part file does) never imports dp-accounting; the
    unpickled record reads as the same event."""
    import pickle
    import subprocess
    import sys

    code = ("import pickle, sys; from repro_dpadmm.privacy.spend import Spend, gaussian_steps, pure_steps, totals; "
            "b = pickle.dumps([Spend(gaussian_steps(2.0, 10)), Spend(pure_steps([0.1, 0.2]), bound=None)]); "
            "assert abs(totals(pickle.loads(b)[1], 1e-5, pld=False)['basic_eps'] - 0.3) < 1e-12; "
            "assert 'dp_accounting' not in sys.modules, 'imported'; sys.stdout.buffer.write(b)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    a, b = pickle.loads(out)
    assert a == Spend(gaussian_steps(2.0, 10)) and b.event == Spend(pure_steps([0.1, 0.2])).event


def test_a_paper_bound_is_found_by_its_name_in_a_fresh_interpreter():
    """spend imports no bounds module by name: the first lookup of "<module>.<bound>" imports privacy.bounds.<module>,
    and an unknown name lists every bound of the package."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from repro_dpadmm.privacy import spend\n"
            "assert 'repro_dpadmm.privacy.bounds.zhang2018' not in sys.modules\n"
            "fn = spend.bound_function('zhang2018.icml_P')\n"
            "from repro_dpadmm.privacy.bounds import zhang2018\n"
            "assert fn is zhang2018.icml_total\n"
            "try:\n"
            "    spend.bound_function('zhang2018.nothing')\n"
            "except ValueError as exc:\n"
            "    assert 'huang2019.eps_bar' in str(exc) and 'xu2020.theorem1' in str(exc), exc\n"
            "else:\n"
            "    raise AssertionError('an unknown bound was accepted')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
