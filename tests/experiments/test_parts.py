"""experiments.parts: an item split into parts combines to exactly the numbers of the whole run; part files are used
when they were written with the same parameters, recomputed (and said so) when missing or stale; bad keys fail."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.experiments import parts
from repro_dpadmm.experiments import zhang2018_madmm as em

from _zkl_synth import adult_like

PARAMS = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "repeats": 3,
          "theta": 0.5, "curves": {"blue": {"q1": 1.05, "q2": 1.04}, "black": {"q1": 1.0, "q2": 1.04}},
          "twins": ["blue"], "alpha1": [3.0, 5.0], "newton_tol": 1e-10,
          "seed": 0}


@pytest.fixture
def small_adult(monkeypatch):
    monkeypatch.setattr(em, "_adult", lambda: adult_like())
    monkeypatch.setattr(em, "RUNS_PER_PART", 10)    # one part per alpha(1), unless a test sets it lower


def test_split_item_combines_to_the_whole_runs_numbers(small_adult, tmp_path):
    assert parts.is_split("zhang2018_madmm", "fig2") and not parts.is_split("zhang2018_radmm", "fig1")
    assert not parts.is_split("demo", "item") and parts.part_keys("demo", "item", {}) == []  # no experiment module
    assert parts.part_keys("zhang2018_madmm", "fig2", PARAMS) == ["alpha3", "alpha5"]
    combined = em.run_fig2(PARAMS)["alphas"]
    X, y = adult_like()
    for a in (3.0, 5.0):
        whole = em.private_comparison(X, y, PARAMS, 0, a, "fig2")
        assert list(combined[a]["curves"]) == list(whole["curves"])
        for name, c in whole["curves"].items():
            assert np.array_equal(combined[a]["curves"][name]["L"], c["L"])  # bit for bit: same draws
            assert combined[a]["curves"][name]["P_total"] == c["P_total"]
        assert np.array_equal(combined[a]["B"], whole["B"])


def test_an_item_sharing_the_code_but_not_split_computes_its_pieces_silently(small_adult):
    said = []
    got = parts.gather("xu2020_dpaccadmm", "table1", {}, lambda k: k.upper(), keys=["alpha3"], log=said.append)
    assert got == {"alpha3": "ALPHA3"} and said == []
    with pytest.raises(ValueError, match="are not its part keys"):  # a split item's pieces are its parts
        parts.gather("zhang2018_madmm", "fig2", PARAMS, keys=["alpha3"])


def test_part_files_are_used_and_stale_or_missing_ones_recomputed(small_adult, tmp_path):
    key = "alpha3"
    record = parts.run_part("zhang2018_madmm", "fig2", key, PARAMS)
    parts.write_part(parts.part_path("zhang2018_madmm", "fig2", key, tmp_path), record)
    computed, said = [], []

    def compute(k):
        computed.append(k)
        return em.part_fig2(PARAMS, k)

    got = parts.gather("zhang2018_madmm", "fig2", PARAMS, compute, out_dir=tmp_path, log=said.append)
    assert computed == ["alpha5"] and got[key]["curves"]["black"]["L"].shape == (3, 5)
    assert np.array_equal(got[key]["curves"]["black"]["L"], record["value"]["curves"]["black"]["L"])
    assert all("is missing: computing part" in s for s in said)
    computed.clear()
    said.clear()
    other = {**PARAMS, "iterations": 3}  # written with other parameters: never used
    parts.gather("zhang2018_madmm", "fig2", other, lambda k: computed.append(k), out_dir=tmp_path, log=said.append)
    assert key in computed and any("written with other parameters" in s for s in said)


def test_bad_part_keys_fail_before_any_work(monkeypatch):
    with pytest.raises(ValueError, match="no part 'alpha7'"):
        parts.run_part("zhang2018_madmm", "fig2", "alpha7", PARAMS)
    monkeypatch.setattr(em, "parts_fig2", lambda p: ["a", "a"])
    with pytest.raises(ValueError, match="unique file names"):
        parts.part_keys("zhang2018_madmm", "fig2", PARAMS)


def test_radmm_fig2_parts_combine_to_the_whole_runs_numbers(monkeypatch):
    from repro_dpadmm.experiments import zhang2018_radmm as er

    monkeypatch.setattr(er, "_adult", lambda: adult_like())
    params = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "repeats": 2,
              "newton_tol": 1e-10, "seed": 0, "eta": 1.0, "gamma": 0.2, "alphas": [1.0, 3.0], "dvp": {"eta": 1.0},
              "pp": {"pp_a": {"theta": 1.0, "eta1": 1.0, "q1": 1.05, "q2": 1.04}}, "pp_default": "pp_a"}
    assert parts.part_keys("zhang2018_radmm", "fig2", params) == ["alpha1", "alpha3"]
    combined = er.run_fig2(params)["alphas"]
    X, y = adult_like()
    for a in (1.0, 3.0):
        whole = er.fig2(X, y, params, 0, a)
        assert list(combined[a]["curves"]) == list(whole["curves"]) and combined[a]["target"] == whole["target"]
        for name, c in whole["curves"].items():
            assert np.array_equal(combined[a]["curves"][name]["L"], c["L"]), name


def test_a_group_of_more_runs_than_a_part_holds_is_split_and_combines_to_the_same_numbers(small_adult, monkeypatch):
    monkeypatch.setattr(em, "RUNS_PER_PART", 3)    # 4 paper runs: blue, black, blue_twin, blue_twin_fixed_eps 
    keys = parts.part_keys("zhang2018_madmm", "fig2", PARAMS)
    assert keys == ["alpha3", "alpha3.2", "alpha5", "alpha5.2"]
    chunks = [em._alpha_keys(PARAMS, "fig2")[k] for k in keys[:2]]
    assert [len(c[2]) for c in chunks] == [2, 2] and [c[3] for c in chunks] == [True, False]  # references once
    combined = em.run_fig2(PARAMS)["alphas"][3.0]
    whole = em.private_comparison(*adult_like(), PARAMS, 0, 3.0, "fig2")
    assert list(combined["curves"]) == list(whole["curves"])
    for name, c in whole["curves"].items():
        assert np.array_equal(combined["curves"][name]["L"], c["L"])
    assert combined["L_star"] == whole["L_star"] and np.array_equal(combined["L_init"], whole["L_init"])
