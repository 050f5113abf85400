"""A method added in one file, as the README's "Adding a method" describes: this class alone puts it on the
equal-privacy frontier and in both audits (tests/mechanisms/test_extension.py checks that it shows up there, and
tests/mechanisms/test_conformance.py runs the common suite on it).

The toy is HUANG's distributed DPSGD taking two noisy gradient steps per iteration: it releases 2T messages with
noise multiplier z, so a calibration that assumes T identical Gaussian steps spends more than it claims
(test_conformance shows the old calibrator's 1.000 against the 1.465 of its own spend). No paper bounds it: its
Spend names no paper bound (paper_eps None on the frontier), and in the whole-run audit its claimed total is the
tight one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from repro_dpadmm.mechanisms import AUDIT, AUDIT_RUN, FRONTIER
from repro_dpadmm.mechanisms.base import Claim
from repro_dpadmm.mechanisms.huang2019 import DpSgd
from repro_dpadmm.privacy import accounting, calibrate
from repro_dpadmm.privacy.spend import REPLACE_ONE, Spend, gaussian_steps


@dataclass(frozen=True)
class TwoStepDpSgd(DpSgd):
    """DPSGD (algorithms.sgd.dpsgd) with two noisy steps per iteration: 2T releases of multiplier z. Its constants
    are DPSGD's (rho, lam_n, lr, convention; the frontier's `huang.dpsgd` block); its whole-run audit reads its
    own config block `toy_two_step` (the keys of the `huang2019` block)."""

    id: ClassVar[str] = "toy_two_step"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER, AUDIT, AUDIT_RUN})
    paper: ClassVar[str] = "toy"
    label: ClassVar[str] = "toy DPSGD, two steps per iteration"
    short_label: ClassVar[str] = "toy two-step DPSGD"
    release: ClassVar[str] = "Gaussian noise on each agent's gradient, twice per iteration"
    paper_accounting: ClassVar[str] = "none (no paper)"
    audit_kind: ClassVar[str] = "toy_two_step"
    audit_run_block: ClassVar[str] = "toy_two_step"

    def spend(self, T: int, delta: float, z: float) -> Spend:
        return Spend(gaussian_steps(float(z), 2 * int(T)), REPLACE_ONE)

    def run(self, data, cal, T: int, rngs, *, noiseless: bool = False):
        return super().run(data, cal, 2 * T, rngs, noiseless=noiseless)

    def one_run(self, st, T: int, z: float, factor: float, rngs):
        return super().one_run(st, 2 * T, z, factor, rngs)

    def claim(self, z: float, delta: float, T: int) -> Claim:
        tight = accounting.analytic_gaussian_epsilon(z, delta, steps=2 * int(T))
        return Claim(delta, z, tight, tight)

    def level_claim(self, level: float, delta: float, T: int) -> Claim:
        return self.claim(calibrate.gaussian_multiplier_exact(level, delta, 2 * int(T)).value, delta, T)
