import numpy as np
import pytest

from repro_dpadmm.solvers import NotConvergedError, require_converged


def test_require_converged_passes_within_tolerance():
    require_converged("toy", 3, np.array([1e-9, 5e-9]), 1e-8)


def test_require_converged_names_problem_iteration_and_worst_residual():
    with pytest.raises(NotConvergedError) as err:
        require_converged("local problem of node 3", 50, np.array([1e-9, 2.5e-3]), 1e-8)
    assert err.value.iteration == 50 and err.value.residual == pytest.approx(2.5e-3)
    assert "local problem of node 3" in str(err.value) and "2.500e-03" in str(err.value)


def test_nan_residual_is_not_converged():
    with pytest.raises(NotConvergedError):
        require_converged("toy", 1, np.array([np.nan, 0.0]), 1.0)
