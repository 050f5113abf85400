"""The interleaved timer (repro_dpadmm.timing): its ratio interval covers 1 for two identical functions and excludes
it for a function that takes twice as long."""

import time

import numpy as np
import pytest

from repro_dpadmm.timing import interleaved, ratio_ci


def _sleeper(seconds):
    def f(_r):
        time.sleep(seconds)
    return f


def test_identical_functions_ratio_ci_contains_one():
    t = interleaved({"a": _sleeper(0.005), "b": _sleeper(0.005)}, 20, rng=np.random.default_rng(0))
    ci = ratio_ci(t["a"], t["b"], level=0.999)
    assert ci["lo"] <= 1.0 <= ci["hi"]


def test_twice_as_slow_function_ratio_ci_excludes_one():
    t = interleaved({"slow": _sleeper(0.04), "fast": _sleeper(0.02)}, 12, rng=np.random.default_rng(0))
    ci = ratio_ci(t["slow"], t["fast"])
    assert ci["lo"] > 1.0 and 1.2 < ci["ratio"] < 3.0


def test_every_function_once_per_round_in_varying_order():
    calls = []
    funcs = {k: (lambda r, k=k: calls.append((r, k))) for k in "abc"}
    t = interleaved(funcs, 5, rng=np.random.default_rng(1), warmup=False)
    assert all(v.shape == (5,) for v in t.values())
    rounds = [[k for r, k in calls if r == i] for i in range(5)]
    assert all(sorted(x) == ["a", "b", "c"] for x in rounds)
    assert len({tuple(x) for x in rounds}) > 1


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="rounds"):
        interleaved({"a": _sleeper(0)}, 1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="equal-length"):
        ratio_ci([1.0, 2.0], [1.0])
