"""The suite every method of the catalogue passes (as scikit-learn's `parametrize_with_checks` runs one suite on every
estimator): parametrised over `all_mechanisms()`, the toy method of tests/_toy_method.py included.

* what it declares: an id, known capabilities, and per capability what that capability needs (a layout whose config
  block holds its parameters; an audit kind of its own);
* FRONTIER: the calibration meets each target under the method's own spend() (within rtol, never above); seeded runs
  repeat bit for bit; the noiseless run differs from the noisy one; the models' shapes;
* AUDIT: its one-step audit runs on a small case; AUDIT_RUN: its whole-run audit (canaries, claims, scores, bound)
  runs on a small case.

And the calibrator itself: a method releasing twice per iteration fails under the old "T identical Gaussian steps"
calibration (1.000 claimed, 1.465 by its own spend) and passes under `calibrate`.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import yaml
from conftest import ROOT

import _toy_method  # noqa: F401  (registers the toy method before the suite is parametrised)
from _audit_synth import sparse_rows
from repro_dpadmm import config
from repro_dpadmm.experiments import beyond_audit as ba
from repro_dpadmm.experiments import beyond_audit_run as bar
from repro_dpadmm.experiments import beyond_frontier as bf
from repro_dpadmm.mechanisms import AUDIT, AUDIT_RUN, CAPABILITIES, FRONTIER, all_mechanisms
from repro_dpadmm.mechanisms.base import FLOAT_SLACK, GAUSSIAN, PURE, same_steps, spend_steps
from repro_dpadmm.mechanisms.layouts import LAYOUTS
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.audit import one_run
from repro_dpadmm.privacy.spend import totals
from repro_dpadmm.rng import repeat_generators, seed_sequence

CATALOGUE = all_mechanisms()
IDS = list(CATALOGUE)
FRONTIER_IDS = list(all_mechanisms(FRONTIER))
DELTA, RTOL = 1e-5, 2e-3

# a small frontier problem on synthetic unit-norm rows: 4 agents of HUANG's star, ZKL's five nodes, one XU curator
N_ROWS, D, N_TRAIN, R, T = 600, 10, 480, 2, 4
SMALL = {**copy.deepcopy(config.item_params("beyond", "frontier")), "levels": [1.0], "repeats": R,
         "n_train": N_TRAIN, "iterations": T}
SMALL["huang"] = {**SMALL["huang"], "agents": 4}


def _frontier_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N_ROWS, D)) * (rng.random((N_ROWS, D)) < 0.6)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.standard_normal(D) > 0, 1.0, -1.0)
    perms = [g.permutation(N_ROWS) for g in repeat_generators(0, R, "conformance", "split")]
    return X, y, [(p[:N_TRAIN], p[N_TRAIN:]) for p in perms]


# ------------------------------------------------------------------------------------------------- declarations
@pytest.mark.parametrize("method", IDS)
def test_declares_what_it_supports(method):
    cls = CATALOGUE[method]
    assert method.isidentifier() and cls.id == method
    assert cls.capabilities and set(cls.capabilities) <= set(CAPABILITIES)
    proto = cls()
    assert proto.label and proto.paper and proto.kind in (GAUSSIAN, PURE)
    fields = {f.name for f in dataclasses.fields(cls)}
    if FRONTIER in cls.capabilities:
        assert cls.layout in LAYOUTS
        block = config.item_params("beyond", "frontier")[cls.layout.block]   # the paper settings' block
        for key, field in cls.parameters.items():
            assert field in fields, f"{method}: parameter {key} sets no field {field}"
            assert bf._config_value(block, key) is not None
        assert set(cls.layout.constants(SMALL, n_train=N_TRAIN, lam=1e-6, dataset="x")) <= fields
    if AUDIT in cls.capabilities:
        assert [c for c in all_mechanisms(AUDIT).values() if c.audit_kind == cls.audit_kind] == [cls]


def test_the_schema_lists_the_catalogue():
    """The config schema's method entries are the package's methods: the frontier's `methods` are its FRONTIER ids,
    every layout block documents the constants its methods share and each method's own parameters; the one-step
    audit's kinds are its AUDIT kinds; the whole-run audit has a block per AUDIT_RUN method."""
    defs = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())["$defs"]
    ours = {k: c for k, c in CATALOGUE.items() if c.__module__.startswith("repro_dpadmm.")}
    front = defs["beyond_frontier"]["properties"]
    assert sorted(front["methods"]["items"]["enum"]) == sorted(k for k, c in ours.items() if FRONTIER in c.capabilities)
    for cls in (c for c in ours.values() if FRONTIER in c.capabilities):
        block = front[cls.layout.block]
        for key in cls.parameters:
            node = block
            for part in key.split("."):
                node = node["properties"][part]
    for lay in LAYOUTS:  # the constants a layout reads from its block are documented there
        keys = {"star": ["rho", "agents"], "graph": ["graph", "floor_share", "newton_tol"],
                "curator": ["rho", "gamma", "mu", "c", "eta"]}[lay.name]
        assert set(keys) <= set(front[lay.block]["properties"])
    kinds = defs["beyond_audit"]["properties"]["mechanisms"]["additionalProperties"]["properties"]["kind"]["enum"]
    assert sorted(kinds) == sorted(c.audit_kind for c in ours.values() if AUDIT in c.capabilities)
    run = defs["beyond_audit_run"]["properties"]
    assert all(c.audit_run_block in run for c in ours.values() if AUDIT_RUN in c.capabilities)


# ------------------------------------------------------------------------------------------------- frontier
@pytest.mark.parametrize("method", FRONTIER_IDS)
@pytest.mark.parametrize("level", [0.3, 1.0])
def test_calibration_meets_the_target_under_its_own_spend(method, level):
    mech = bf.configured(method, bf.context(SMALL))
    cal = mech.calibrate(level, DELTA, T, rtol=RTOL)
    if not mech.sound:  # XU as published: its own calibration claims the level; the true total is above it
        assert cal["paper_eps"] == level and cal["tight_eps"] > level
        return
    spend = mech.spend(T, DELTA, **mech.spend_noise(cal))
    assert (1 - RTOL) * level <= cal["spend_eps"] <= level * (1 + FLOAT_SLACK)
    steps = spend_steps(spend)
    if steps[0] == GAUSSIAN:  # the accountant on the recorded event, independently of the calibrator
        own = totals(spend, DELTA, discretization=accounting.pld_grid(level))["pld_eps"]
        assert own == pytest.approx(cal["spend_eps"], rel=1e-12)
    if cal["calibrator"].startswith("fast path"):   # the fast path composed exactly the recorded steps
        assert same_steps(steps, spend_steps(mech.spend(T, DELTA, **mech.spend_noise(cal))))


@pytest.fixture(scope="module")
def frontier_data():
    return _frontier_data()


@pytest.mark.parametrize("method", FRONTIER_IDS)
def test_seeded_runs_repeat_and_noise_matters(method, frontier_data):
    X, y, splits = frontier_data
    ctx = bf.context(SMALL)
    mech = bf.configured(method, ctx)
    cal = bf.calibrate_method(method, 1.0, ctx)
    train = bf.train_csr(X, splits)

    def run(noiseless=False, seed=0):
        rngs = bf._rngs({**SMALL, "seed": seed}, method, "eps1", mech.layout.block)
        data = bf.layout(method, X, y, splits, ctx, rngs["agents"], train)
        return mech.run(data, cal, T, rngs["noise"], noiseless=noiseless)

    a, b, quiet = run(), run(), run(noiseless=True)
    assert np.array_equal(a, b)
    assert not np.allclose(a, quiet)
    assert not np.array_equal(a, run(seed=1))
    models = {"star": (R, SMALL["huang"]["agents"]), "graph": (R, 5), "curator": (R, 1)}[mech.layout.name]
    assert a.shape[:2] in (models, (R, 1)) and a.shape[2] == D and quiet.shape == a.shape  # DPSGD: one model
    assert np.all(np.isfinite(a))


@pytest.mark.parametrize("method", FRONTIER_IDS)
def test_step_lanes_are_the_runs_at_each_multiple(method, frontier_data):
    """A method with a lane form (`has_lanes`) runs its step multiples as lanes of one run that equal, lane by lane and
    bit for bit, `run` at each multiple with fresh Generators of the same seeds (noisy and noiseless); a method with
    a learning rate but no lane form of its own `run` runs them one after another (the frontier's `step_runs`)."""
    X, y, splits = frontier_data
    ctx = bf.context(SMALL)
    mech = bf.configured(method, ctx)
    if not type(mech).has_lanes():
        return   # no lane form of its own run: step_runs runs its multiples one after another
    assert mech.step_name is not None   # lanes are the multiples of a learning rate
    cal = bf.calibrate_method(method, 1.0, ctx)
    train = bf.train_csr(X, splits)
    scales = [0.25, 0.5, 1.0, 2.0, 4.0]   # a group of four lanes and one more (the lane kernels)

    def rngs():
        return bf._rngs({**SMALL, "seed": 0}, method, "eps1", mech.layout.block)

    for noiseless in (False, True):
        r = rngs()
        lanes = mech.run_lanes(bf.layout(method, X, y, splits, ctx, r["agents"], train), cal, T, r["noise"], scales,
                               noiseless=noiseless)
        assert lanes.shape[0] == len(scales)
        for lane, scale in zip(lanes, scales):
            r = rngs()
            one = dataclasses.replace(mech, step_scale=scale).run(bf.layout(method, X, y, splits, ctx, r["agents"],
                                                                            train), cal, T, r["noise"],
                                                                  noiseless=noiseless)
            np.testing.assert_array_equal(lane, one)
        assert not np.array_equal(lanes[0], lanes[4])


@pytest.mark.parametrize("method", FRONTIER_IDS)
def test_floor_lanes_are_the_private_runs_and_their_noise_free_runs(method, frontier_data):
    """A method with a paired form (`has_floor_lanes`) runs every level's private run and its noise-free twin as
    lanes of one run that equal `run` and `run(noiseless=True)` at that level bit for bit."""
    X, y, splits = frontier_data
    ctx = bf.context(SMALL)
    mech = bf.configured(method, ctx)
    if not type(mech).has_floor_lanes():
        return   # the frontier runs its noiseless jobs on their own
    levels = {"eps0.3": 0.3, "eps1": 1.0}
    cals = [bf.calibrate_method(method, v, ctx) for v in levels.values()]
    train = bf.train_csr(X, splits)

    def rngs(level):
        return bf._rngs({**SMALL, "seed": 0}, method, level, mech.layout.block)

    got = mech.run_with_floor(bf.layout(method, X, y, splits, ctx, rngs("eps1")["agents"], train), cals, T,
                              [rngs(level)["noise"] for level in levels])
    for level, cal, pair in zip(levels, cals, got):
        for noiseless, lane in zip((False, True), pair):
            r = rngs(level)
            np.testing.assert_array_equal(lane, mech.run(bf.layout(method, X, y, splits, ctx, r["agents"], train),
                                                         cal, T, r["noise"], noiseless=noiseless))
        assert not np.array_equal(*pair)
    assert not np.array_equal(got[0][0], got[1][0])


# ------------------------------------------------------------------------------------------------- audits
AUDIT_EXTRA = {"hu2020": {"noise_on": "shared"}}   # what an entry of that kind needs besides kind and epsilon
HU_STEP = {"rows": 60, "boundaries": [0, 7, 12], "party": 0, "rho": 1.0, "lam": 1e-3, "c1": 2.0,
           "warm_iterations": 1, "canary_columns": 2}


@pytest.mark.parametrize("method", list(all_mechanisms(AUDIT)))
def test_one_step_audit_runs_on_a_small_case(method):
    cls = CATALOGUE[method]
    params = {**copy.deepcopy(config.item_params("beyond", "audit")), "trials": 4000, "calibration_trials": 2000,
              "chunk": 4000, "hu2020": HU_STEP,
              "mechanisms": {method: {"kind": cls.audit_kind, "epsilon": 1.0, **AUDIT_EXTRA.get(cls.audit_kind, {})}}}
    X, y = sparse_rows(1200, 12, 1)
    X = X.toarray()
    keep = np.linalg.norm(X, axis=1) > 0                   # HU's canary normalises every sampled row
    data = {cls.audit_dataset: (X[keep], y[keep])}
    cases, skipped = ba.build_cases(params, 0, data)
    assert not skipped and list(cases) == [method]
    out = ba.audit_one(cases[method], method, params, 0)
    assert cases[method].epsilon == 1.0 and cases[method].sigma > 0
    assert out["claimed"].result.eps_lo >= 0 and out["control"].result.eps_lo >= out["claimed"].result.eps_lo - 1.0


RUN_BLOCKS = {
    "huang2019": {"agents": 3, "rows_per_agent": 40, "canaries_per_agent": 4, "runs": 2, "reg": "l2", "rho": 0.1,
                  "lam_n": 1e-6, "lr": 0.1},
    "xu2020": {"rows": 200, "canaries": 4, "runs": 2, "rho": 1.0, "gamma": 1.0, "lam": 1e-5, "mu": 0.5, "c": 1.0,
               "u0": "paper", "graph": {"alphas": [0.5, 0.3, 0.2, 0.1], "tol": 1e-3, "max_iter": 100}},
    "hu2020": {"rows": 200, "canaries": 4, "runs": 2, "boundaries": [0, 7, 12], "rho": 1.0, "lam": 1e-3, "c1": 2.0,
               "iterations_b1": 3, "delta_prime": 1e-5},
}


@pytest.mark.parametrize("method", list(all_mechanisms(AUDIT_RUN)))
def test_whole_run_audit_runs_on_a_small_case(method):
    """Through the item's own routing: the mechanism with the item's constants, its canaries, its claims at a level,
    its runs' scores and the one-run bound."""
    cls = CATALOGUE[method]
    block = cls.audit_run_block
    params = {"iterations": 2, "confidence": 0.95, "control_noise_factor": 0.25, "levels": [3.0],
              "level_delta": 1e-5, block: RUN_BLOCKS.get(block, RUN_BLOCKS["huang2019"])}
    mech = cls.for_audit_run(params)
    X, y = sparse_rows(600, 12, 2)
    setup = mech.one_run_setup(X, y, params, lambda *labels: np.random.default_rng(seed_sequence(0, *labels)))
    (st,) = bar.settings(method, mech, params, params[block], *mech.claim_kwargs(setup, params))
    assert st.tight_eps == pytest.approx(3.0, rel=1e-6) and st.noise > 0
    runs = mech.one_run(setup, 2, st.noise, 1.0, repeat_generators(0, len(setup.S), "conformance", method))
    assert runs.scores.shape == setup.S.shape and runs.multiplier > 0
    assert one_run.audit(runs.scores, setup.S, st.delta, 0.05).eps_lo >= 0


# ------------------------------------------------------------------------------------------------- the calibrator
def test_twice_per_iteration_fails_the_old_calibrator_and_passes_the_new():
    """The old calibration (T identical Gaussian steps, kept as the checked fast path) states 1.000 for a method that
    releases twice per iteration; its own spend says 1.465. `calibrate` rejects that fast path (its steps are not the
    spend's) and searches the spend: 1.000 there, with more noise."""
    toy = CATALOGUE["toy_two_step"]()
    old = toy.fast_calibration(1.0, DELTA, 100)
    assert old["tight_eps"] == pytest.approx(1.0, rel=RTOL) and old["tight_eps"] <= 1.0
    own_old = toy.spend_epsilon(100, DELTA, {"z": old["z"]}, target=1.0)
    assert own_old == pytest.approx(1.465, abs=5e-4)
    new = toy.calibrate(1.0, DELTA, 100)
    assert new["calibrator"] == "search against the spend" and new["z"] > old["z"]
    assert (1 - RTOL) <= toy.spend_epsilon(100, DELTA, {"z": new["z"]}, target=1.0) == new["spend_eps"] <= 1.0


def test_the_gaussian_fast_path_equals_the_search_it_replaces():
    """Where the spend is T identical Gaussian steps the fast path stands; the search on the spend finds the same
    noise within the tolerance both promise."""
    mech = bf.configured("huang_dpadmm", bf.context(SMALL))
    fast = mech.calibrate(0.3, DELTA, 50)
    search = mech.search_calibration(0.3, DELTA, 50, start={"z": 1.5 * fast["z"]})   # started 50% off
    assert fast["calibrator"].startswith("fast path")
    assert search["z"] == pytest.approx(fast["z"], rel=2 * RTOL)
    assert (1 - RTOL) * 0.3 <= search["spend_eps"] <= 0.3


def test_spend_steps_reads_gaussian_and_pure_events():
    mech = CATALOGUE["huang_dvp"]()
    kind, eps = spend_steps(mech.spend(5, DELTA, eps_iter=0.2))
    assert kind == PURE and eps == pytest.approx(np.full(5, 0.2), rel=1e-12)
    assert spend_steps(CATALOGUE["huang_pvp"]().spend(3, DELTA, z=2.0))[0] == GAUSSIAN
    assert not same_steps((GAUSSIAN, np.full(3, 2.0)), (GAUSSIAN, np.full(6, 2.0)))
    assert not same_steps((GAUSSIAN, np.full(3, 2.0)), (PURE, np.full(3, 2.0)))
