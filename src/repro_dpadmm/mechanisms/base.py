"""What every paper's private step offers as a mechanism object (the `mechanisms` layer, README.md#layout).

A mechanism is a frozen dataclass of its algorithm's public constants (penalties, step-size rules, data sizes; each
field defaults to the paper's value where the paper gives one) with

* a description: `paper`, `label`, `release` (what it perturbs, with which noise), `kind` (GAUSSIAN or PURE),
  `noise_name` (the parameter a calibration sets), `paper_accounting` (how the paper totals its privacy),
  `neighbouring` (the relation its sensitivity is derived under), `sound` (False where its own calibration does not
  give the guarantee it claims), `distributed` (every agent protects its own records) and
  `noiseless_needs_calibration` (its noise-free run still depends on the calibrated noise, e.g. through step sizes)
  and `step_name` (None, or what its learning rate is: such a mechanism has a field `step_scale`, 1.0 by default, that
  multiplies the paper's learning rate; methods whose local step is an exact minimisation have none);
* `paper_noise(...)`: the paper's own calibration of one release; `calibrate(target, delta, T, ...)`: the noise for a
  TOTAL (target, delta) over T releases under a sound accounting, as a JSON-able dict holding the noise parameter(s)
  and every accounting of them (`tight_eps`, `paper_eps`, ...);
* `spend(T, delta, **noise)`: the `privacy.spend.Spend` of T releases with that noise (dp-accounting event,
  neighbouring relation, the paper bound that claims it);
* `run(data, cal, T, rngs, noiseless=...)`: the algorithm with the calibrated noise (`cal` is `calibrate`'s dict),
  every repeat at once where the library batches repeats, one seeded Generator per repeat;
* where audited, `audit_case(...)`: one release on two neighbouring datasets as a `privacy.audit.trials.AuditCase`
  (the pair, the released statistic as a function of the noise draws, the claimed (epsilon, delta)); and the
  one-run audit's canaries and white-box score of whole runs (`one_run_canaries`, `one_run`: a `OneRun`), with
  the claims it is compared with (`paper_claim`, `level_claim`: a `Claim`).

The catalogue. A concrete method declares its `id` (job and metric name) and its `capabilities` (FRONTIER: a run on
the equal-privacy frontier; AUDIT: the one-step audit; AUDIT_RUN: the whole-run audit); declaring an id registers
the class, and `repro_dpadmm.mechanisms.all_mechanisms(capability)` finds it (registration by subclassing, as
scikit-learn's `all_estimators` finds estimators and benchopt its solvers). Per capability it declares:

* FRONTIER: its `layout` (mechanisms.layouts: the data it runs on and the config block of the constants it shares
  with its layout) and `parameters`, {its own config key in that block (dotted): its field} (e.g. HUANG DPSGD's
  {"dpsgd.lr": "lr"}); the schema's method entries are checked against these (tests/mechanisms).
* AUDIT: `audit_kind` (the config's `kind`), `audit_dataset`, `audit_pair` (the canary pair) and `audited` (the
  mechanism with the audit's constants, and its `audit_case`).
* AUDIT_RUN: `audit_run_block` (its config block), `audit_run_dataset`, `for_audit_run` (the mechanism with the
  item's constants), `one_run_setup` (its `one_run_canaries` from the config) and `claim_kwargs`.

One calibrator. `Mechanism.calibrate` searches the noise parameter against the mechanism's own `spend()`: the tight
total (dp-accounting PLD; pure steps: their optimal composition, or the basic sum with how="basic") of what the run
records, by the same bracketing and regula falsi for every method (privacy.calibrate.solve). A mechanism may declare
a fast path (`fast_calibration`, which also says which steps it composed: e.g. T identical Gaussian steps of
multiplier z); it is used only when the mechanism's own spend at the noise found is, step for step, what the fast
path composed (`spend_steps`; up to the last bits of a float), and otherwise the general search runs. A mechanism
that releases more than its fast path assumes (twice per iteration, say) is therefore calibrated by the search.
Every calibration reports `spend_eps`, the total of its own spend at the noise found. (Why steps and not totals:
the pure accountant's grid is a fixed fraction of the per-step epsilon, so a last-bit difference in the epsilon read
back from the event can move every step's rounding by one cell, about 1e-4 of the total; the steps are the same.)

The frontier (experiments.beyond_frontier) and both audits (experiments.beyond_audit, beyond_audit_run) use these
objects; nothing here imports an experiment.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np

from ..privacy import accounting, calibrate
from ..privacy.audit import canaries
from ..privacy.spend import REPLACE_ONE, Spend, pure_epsilons, totals

GAUSSIAN, PURE = "gaussian", "pure"
FRONTIER, AUDIT, AUDIT_RUN = "frontier", "audit", "audit_run"
CAPABILITIES = (FRONTIER, AUDIT, AUDIT_RUN)
# what each capability needs the class to define (checked when the class registers)
_NEEDS = {FRONTIER: ("layout", "run", "spend"), AUDIT: ("audit_kind", "audit_dataset", "audit_pair", "audited"),
          AUDIT_RUN: ("audit_run_block", "audit_run_dataset", "for_audit_run", "one_run_setup", "one_run",
                      "paper_claim", "level_claim")}
# "never above the target": up to the last bits of a float (a pure step's epsilon read back from its event)
FLOAT_SLACK = 1e-12
# id -> class, in the order the classes were defined (the package's paper modules first, see all_mechanisms)
CATALOGUE: dict[str, type] = {}


class Mechanism:
    """Base of every paper's private step; see the module docstring for what a subclass provides."""

    paper: ClassVar[str]
    label: ClassVar[str]
    release: ClassVar[str]
    kind: ClassVar[str]
    noise_name: ClassVar[str]
    paper_accounting: ClassVar[str]
    neighbouring: ClassVar[str] = REPLACE_ONE
    sound: ClassVar[bool] = True
    distributed: ClassVar[bool] = True
    noiseless_needs_calibration: ClassVar[bool] = False
    step_name: ClassVar[str | None] = None
    # the catalogue (module docstring); a class without its own `id` is a base, not a method
    id: ClassVar[str | None] = None
    capabilities: ClassVar[frozenset] = frozenset()
    short_label: ClassVar[str | None] = None      # a short name for tables (default: label)
    layout: ClassVar[object | None] = None
    parameters: ClassVar[dict] = {}
    spend_parameter: ClassVar[str | None] = None  # the spend() keyword the search sets (default: noise_name)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "id" not in cls.__dict__ or cls.id is None:
            return
        if not (isinstance(cls.id, str) and cls.id.isidentifier()):
            raise TypeError(f"{cls.__qualname__}: a method id is one word (letters, digits, _), got {cls.id!r}")
        unknown = set(cls.capabilities) - set(CAPABILITIES)
        if unknown:
            raise TypeError(f"{cls.__qualname__}: unknown capabilities {sorted(unknown)}; known: {CAPABILITIES}")
        for cap in cls.capabilities:
            missing = [a for a in _NEEDS[cap] if getattr(cls, a, None) is None or
                       getattr(getattr(cls, a), "__func__", getattr(cls, a)) is getattr(Mechanism, a, object())]
            if missing:
                raise TypeError(f"{cls.__qualname__} declares {cap!r} but does not define {missing}")
        old = CATALOGUE.get(cls.id)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"method id {cls.id!r} of {cls.__module__}.{cls.__qualname__} is already "
                            f"{old.__module__}.{old.__qualname__}'s")
        CATALOGUE[cls.id] = cls

    def spend(self, T: int, delta: float, **noise) -> Spend:
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------- calibration
    def spend_noise(self, cal: dict) -> dict:
        """The keyword arguments of `spend` for a calibration's noise (default: the noise parameter alone)."""
        return {self.noise_name: cal[self.noise_name]}

    def spend_epsilon(self, T: int, delta: float, noise: dict, *, target: float, how: str = "optimal") -> float:
        """The total of this mechanism's own spend(T, delta, **noise): dp-accounting's PLD (on the grid the
        calibrations use near `target`), pure steps by their optimal composition (how="optimal") or their sum
        ("basic", the papers' own composition)."""
        tot = totals(self.spend(T, delta, **noise), delta, discretization=accounting.pld_grid(target))
        if how == "basic" and tot.get("basic_eps") is not None:
            return tot["basic_eps"]
        return tot["pld_eps"]

    # ------------------------------------------------------------------------------------------- step lanes
    def run_lanes(self, data, cal: dict | None, T: int, rngs, scales, *, noiseless: bool = False) -> np.ndarray:
        """`run` at every multiple in `scales` of the learning rate (a mechanism with a `step_name`), as lanes of one
        batched run: the lanes share the data, `cal` and the noise draws of `rngs` exactly as separate runs
        `replace(self, step_scale=s).run(data, cal, T, <fresh Generators of the same seeds>)` would, and lane l
        returns what that run returns (stacked: (L, R, models, d)). Defined by the mechanisms that have a lane form
        (see `has_lanes`)."""
        raise NotImplementedError(f"{type(self).__name__} has no lane form of its run")

    @classmethod
    def has_lanes(cls) -> bool:
        """Whether `run_lanes` runs what `run` runs: it is defined below Mechanism, by the class that defines `run`
        or a subclass of it (a subclass that changes `run` alone, e.g. one running 2T steps, keeps the sequential
        path: its parent's lanes would run the parent's algorithm)."""
        return cls._runs_as("run_lanes")

    def run_with_floor(self, data, cals: list[dict], T: int, rngs: list) -> list[tuple[np.ndarray, np.ndarray]]:
        """For every level l: (`run(data, cals[l], T, rngs[l])`, `run(data, cals[l], T, rngs[l], noiseless=True)`), all
        as lanes of one batched run: each level's private run and its noise-free twin (the optimiser floor at the same
        calibration) share the data and everything but the noise and the level's own parameters, each equal bit for
        bit to its own run. Defined by the mechanisms with such a form (see `has_floor_lanes`)."""
        raise NotImplementedError(f"{type(self).__name__} has no paired form of its run")

    @classmethod
    def has_floor_lanes(cls) -> bool:
        """Whether `run_with_floor` runs what `run` runs (as `has_lanes` for `run_lanes`)."""
        return cls._runs_as("run_with_floor")

    @classmethod
    def _runs_as(cls, name: str) -> bool:
        def owner(attr):
            return next(k for k in cls.__mro__ if attr in vars(k))
        other = owner(name)
        return other is not Mechanism and issubclass(other, owner("run"))

    def fast_calibration(self, target: float, delta: float, T: int, *, rtol: float, how: str) -> dict | None:
        """A calibration the mechanism knows a faster way to (None: none), with "steps": the per-step values it
        composed (`spend_steps`'s form); `calibrate` uses it only when the mechanism's own spend has those steps.
        Otherwise the same keys as `calibrate`'s result."""
        return None

    def calibrate(self, target: float, delta: float, T: int, *, rtol: float = 2e-3, how: str = "optimal") -> dict:
        """The noise for a TOTAL (target, delta) over T iterations under the mechanism's own spend(): the declared
        fast path if the spend at its noise has exactly the steps it composed (then its total is the spend's), else
        the search of the noise parameter against the spend (privacy.calibrate.solve), which meets
        (1 - rtol) target <= total <= target. A JSON-able dict: "noise", the parameter
        by its name, "tight_eps" (the total it meets), "spend_eps" (its own spend's total), "rdp_eps",
        "paper_eps", "evaluations", "accounting", and any further calibrated parameter."""
        fast = self.fast_calibration(target, delta, T, rtol=rtol, how=how)
        if fast is not None:
            steps = fast.pop("steps")
            if same_steps(spend_steps(self.spend(T, delta, **self.spend_noise(fast))), steps):
                return {**fast, "spend_eps": fast["tight_eps"], "calibrator": "fast path (its steps are the spend's)"}
        return self.search_calibration(target, delta, T, rtol=rtol, how=how, start=fast)

    def search_calibration(self, target: float, delta: float, T: int, *, rtol: float = 2e-3, how: str = "optimal",
                           start: dict | None = None) -> dict:
        """The noise parameter by bracketing and regula falsi (privacy.calibrate.solve) on the total of the
        mechanism's own spend; parameters a fast path fixed besides the noise (ZKL's C) are kept from `start`."""
        name = self.spend_parameter or self.noise_name
        fixed = {} if start is None else {k: v for k, v in self.spend_noise(start).items() if k != name}
        x0 = float(start[name]) if start is not None else 1.0

        def eps_of(x):
            return self.spend_epsilon(T, delta, {**fixed, name: x}, target=target, how=how)

        cal = calibrate.solve(eps_of, target, lo=x0, hi=x0 * 1.05, increasing=self.kind == PURE, rtol=rtol)
        noise = {**fixed, name: cal.value}
        tot = totals(self.spend(T, delta, **noise), delta, pld=False)
        return {**(start or {}), **noise, "noise": cal.value, "tight_eps": cal.epsilon, "spend_eps": cal.epsilon,
                "evaluations": cal.evaluations, "rdp_eps": tot["rdp_eps"], "paper_eps": tot["paper_eps"],
                "accounting": f"dp-accounting {'basic sum' if how == 'basic' else 'PLD'} of the mechanism's own "
                              f"spend (replace-one sensitivity)",
                "calibrator": "search against the spend"}


class GaussianMechanism(Mechanism):
    """A release with i.i.d. Gaussian noise of standard deviation z times its l2-sensitivity: the noise parameter is
    the multiplier z, and `spend(T, delta, z=...)` gives the record of T such releases."""

    kind: ClassVar[str] = GAUSSIAN
    noise_name: ClassVar[str] = "z"

    def fast_calibration(self, target: float, delta: float, T: int, *, rtol: float = 2e-3,
                         how: str = "optimal") -> dict:
        """z such that T identical Gaussian steps total `target` at `delta` by dp-accounting's PLD (tight), with the
        RDP total and the paper's own total of that z from its Spend: exact when the spend is T such steps (checked
        by `calibrate`). (`how` is for pure-DP mechanisms; unused here.)"""
        cal = calibrate.gaussian_multiplier(target, delta, T, rtol=rtol)
        z = cal.value
        tot = totals(self.spend(T, delta, z=z), delta, pld=False)
        return {"noise": z, "z": z, "tight_eps": cal.epsilon, "evaluations": cal.evaluations, "steps": (GAUSSIAN,
                np.full(int(T), z)),
                "accounting": "dp-accounting PLD of T Gaussian steps (replace-one sensitivity)",
                "rdp_eps": tot["rdp_eps"], "paper_eps": tot["paper_eps"]}


def spend_steps(spend: Spend) -> tuple[str, np.ndarray] | None:
    """What a Spend composes, step by step: (GAUSSIAN, the multipliers) or (PURE, the per-step epsilons), sorted (the
    order does not change a composition); None for other events."""
    pure = pure_epsilons(vars(spend)["event"])
    if pure is not None:
        return PURE, np.sort(pure)
    zs = accounting.gaussian_multipliers(spend.event)
    return None if zs is None else (GAUSSIAN, np.sort(zs))


def same_steps(a: tuple[str, np.ndarray] | None, b: tuple[str, np.ndarray] | None) -> bool:
    """Whether two `spend_steps` are the same steps, up to the last bits of a float (FLOAT_SLACK relative)."""
    if a is None or b is None or a[0] != b[0] or len(a[1]) != len(b[1]):
        return False
    x, y = np.sort(np.asarray(a[1], float)), np.sort(np.asarray(b[1], float))
    return bool(np.all(np.abs(x - y) <= FLOAT_SLACK * np.maximum(np.abs(x), np.abs(y))))


class RecordCanaryAudit:
    """The one-step audit's pair for record-level methods (replace-one): the gradient canary of
    privacy.audit.canaries on `rows` Adult rows (the audit config's `rows` and `canary` block)."""

    audit_dataset: ClassVar[str] = "adult_huang2019"

    @staticmethod
    def audit_pair(X, y, params: dict, rng_of, warm_epsilon: float | None = None):
        """The canary pair; `rng_of(*labels)` gives the audit's seeded Generator of those labels."""
        cp = params["canary"]
        return canaries.gradient_canary(X, y, int(params["rows"]), state_norm=float(cp["state_norm"]),
                                        offset=float(cp["offset"]), rng=rng_of("rows"))

    @classmethod
    def audit_check(cls, key: str, mech: dict) -> None:
        """Raise a ValueError naming the audited entry `key` if its config does not fit this method."""
        if mech.get("warm_noise"):
            raise ValueError(f"mechanism {key!r}: warm_noise applies to HU with noise_on='shared' only")


class OneRun(NamedTuple):
    """A whole-run (one-run) audit's view of runs with canaries: a score per canary (higher: more likely +1), the
    noise multiplier of the canaries' own composed Gaussian (sigma / the canary pair's gap: the ceiling of any audit
    with these canaries), and further numbers of the runs."""

    scores: np.ndarray
    multiplier: float
    extras: dict


class Claim(NamedTuple):
    """A claimed guarantee of T releases, as a one-run audit compares it: the delta it is audited at, the noise
    parameter, the paper's own total (at `paper_delta`; None: the same delta), and the tight total of the same
    noise at `delta`."""

    delta: float
    noise: float
    paper_eps: float
    tight_eps: float
    paper_delta: float | None = None
