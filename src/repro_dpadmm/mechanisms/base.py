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

The frontier (experiments.beyond_frontier) and both audits (experiments.beyond_audit, beyond_audit_run) use these
objects; nothing here imports an experiment.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np

from ..privacy import calibrate
from ..privacy.spend import REPLACE_ONE, Spend, totals

GAUSSIAN, PURE = "gaussian", "pure"


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

    def spend(self, T: int, delta: float, **noise) -> Spend:
        raise NotImplementedError

    def calibrate(self, target: float, delta: float, T: int, *, rtol: float = 2e-3, how: str = "optimal") -> dict:
        raise NotImplementedError


class GaussianMechanism(Mechanism):
    """A release with i.i.d. Gaussian noise of standard deviation z times its l2-sensitivity: the noise parameter is
    the multiplier z, and `spend(T, delta, z=...)` gives the record of T such releases."""

    kind: ClassVar[str] = GAUSSIAN
    noise_name: ClassVar[str] = "z"

    def calibrate(self, target: float, delta: float, T: int, *, rtol: float = 2e-3, how: str = "optimal") -> dict:
        """z such that T releases total `target` at `delta` by dp-accounting's PLD (tight), with the RDP total and
        the paper's own total of that z from its Spend. (`how` is for pure-DP mechanisms; unused here.)"""
        cal = calibrate.gaussian_multiplier(target, delta, T, rtol=rtol)
        z = cal.value
        tot = totals(self.spend(T, delta, z=z), delta, pld=False)
        return {"noise": z, "z": z, "tight_eps": cal.epsilon, "evaluations": cal.evaluations,
                "accounting": "dp-accounting PLD of T Gaussian steps (replace-one sensitivity)",
                "rdp_eps": tot["rdp_eps"], "paper_eps": tot["paper_eps"]}


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
