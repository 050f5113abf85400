"""Empirical privacy audit: many runs of a mechanism on two neighbouring datasets -> a confidence lower bound on eps.

The auditor runs the mechanism on D_0 and on D_1 (neighbours that differ in one canary record), scores every output,
guesses "D_1" when the score exceeds a threshold tau, and counts the false positives (D_0 outputs guessed D_1) and
false negatives. An (epsilon, delta)-DP mechanism forces every such test to satisfy FPR + e^epsilon FNR >= 1 - delta
and FNR + e^epsilon FPR >= 1 - delta (Kairouz et al. 2015), so Clopper-Pearson bounds on the two rates give an
epsilon that the mechanism's true epsilon exceeds with confidence 1 - alpha (`privacy_estimates.compute_eps_lo`,
Jagielski et al. 2020; Nasr et al. 2021).

To keep that confidence statement exact, the trials are split in two independent parts. The calibration part fixes
everything the test needs (the projection direction and the threshold tau: the one maximising the lower bound on
the calibration counts); the audit part, never looked at before, gives the counts the bound is computed from.

Scores. `projection`: s = <o, u> with u = mean of D_1's calibration outputs - mean of D_0's, the likelihood-ratio
test of two Gaussians with the same isotropic covariance (the mechanism is treated as a black box: only its outputs
are used). Any other score is a function outputs -> scores given by the caller (e.g. a subspace test).

What an audit can show: a lower bound. A bound above the claimed epsilon contradicts the claim (at confidence
1 - alpha); a bound below it shows nothing more than that this test, with this canary and this many trials, found no
violation. The bound is capped by the trial count (about ln(n / 3) with n audit trials per side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import accounting

# Output arrays a sampler returns: (trials, dim). A sampler is called as sample(b, k) for dataset b in {0, 1} and
# returns the outputs of the next k trials on D_b; successive calls continue the same seeded stream.
Sampler = Callable[[int, int], np.ndarray]

# Probability levels at which calibration quantiles are tried as thresholds: both tails, densest where the best tests
# of a Gaussian pair sit (false-positive or false-negative rates of 1e-5 .. 0.5).
_LEVELS = np.unique(np.concatenate([np.logspace(-5.5, np.log10(0.5), 60), 1.0 - np.logspace(-5.5, np.log10(0.5), 60)]))


@dataclass(frozen=True)
class AuditResult:
    """One audit. eps_lo: the (1 - alpha)-confidence lower bound on epsilon at delta, from the audit counts."""

    eps_lo: float
    delta: float
    alpha: float
    threshold: float
    counts: AttackResults        # on the held-out audit trials
    calibration_eps_lo: float    # the same bound on the calibration counts (what tau was chosen by; optimistic)
    trials: int                  # audit trials per dataset
    calibration_trials: int      # calibration trials per dataset
    score: str

    @property
    def fpr(self) -> float:
        return self.counts.FPR

    @property
    def fnr(self) -> float:
        return self.counts.FNR


def check_audit_args(delta: float, alpha: float, trials: int, calibration_trials: int) -> None:
    """Clear errors for bad audit settings, before any trial runs."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha (1 - confidence) must lie in (0, 0.5), got {alpha!r}")
    for name, v in (("trials", trials), ("calibration_trials", calibration_trials)):
        if int(v) != v or v < 100:
            raise ValueError(f"{name} must be an integer >= 100 (per dataset), got {v!r}")


def counts(s0: np.ndarray, s1: np.ndarray, thresholds) -> dict[str, np.ndarray]:
    """FP, FN, TN, TP of the tests "guess D_1 iff score > tau", for every tau at once (sorted scores, searchsorted)."""
    s0, s1 = np.sort(np.asarray(s0, float)), np.sort(np.asarray(s1, float))
    tau = np.asarray(thresholds, float)
    fp = len(s0) - np.searchsorted(s0, tau, side="right")
    tp = len(s1) - np.searchsorted(s1, tau, side="right")
    return {"FP": fp, "TN": len(s0) - fp, "TP": tp, "FN": len(s1) - tp}


def attack_results(c: dict, k: int | None = None) -> AttackResults:
    from privacy_estimates import AttackResults  # imported where used: it pulls in pandas (0.3 s of a start-up)

    pick = (lambda a: int(a)) if k is None else (lambda a: int(a[k]))
    return AttackResults(FN=pick(c["FN"]), FP=pick(c["FP"]), TN=pick(c["TN"]), TP=pick(c["TP"]))


def eps_lower_bound(c: AttackResults, delta: float, alpha: float) -> float:
    """One-sided (1 - alpha) lower confidence bound on epsilon (Clopper-Pearson rates; privacy_estimates)."""
    from privacy_estimates import compute_eps_lo

    return float(compute_eps_lo(count=c, delta=delta, alpha=alpha, method="beta"))


def choose_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple[float, float]:
    """(tau, bound): the calibration-quantile threshold whose test gives the largest lower bound on these scores."""
    taus = np.unique(np.quantile(np.concatenate([s0, s1]), _LEVELS))
    c = counts(s0, s1, taus)
    bounds = np.array([eps_lower_bound(attack_results(c, k), delta, alpha) for k in range(len(taus))])
    k = int(np.argmax(bounds))
    return float(taus[k]), float(bounds[k])


def projection_direction(cal0: np.ndarray, cal1: np.ndarray) -> np.ndarray:
    """u = mean(D_1 outputs) - mean(D_0 outputs), from calibration trials only."""
    u = np.asarray(cal1, float).mean(axis=0) - np.asarray(cal0, float).mean(axis=0)
    if not np.any(u):
        raise ValueError("the calibration outputs on the two datasets have the same mean: no projection direction")
    return u


def run_audit(sample: Sampler, *, delta: float, alpha: float, trials: int, calibration_trials: int,
              chunk: int = 50_000, score: Callable[[np.ndarray], np.ndarray] | None = None,
              score_name: str | None = None) -> AuditResult:
    """Audit the mechanism behind `sample` (see `Sampler`): calibration trials first, then `trials` audit trials per
    dataset in chunks of `chunk` (only scores are kept, so memory stays bounded).

    `score`: outputs (k, dim) -> scores (k,); default the projection on the calibration mean difference.
    """
    check_audit_args(delta, alpha, trials, calibration_trials)
    if int(chunk) < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk!r}")
    cal = [sample(b, int(calibration_trials)) for b in (0, 1)]
    if score is None:
        u = projection_direction(*cal)
        score, score_name = (lambda o: np.asarray(o, float) @ u), "projection"
    tau, cal_bound = choose_threshold(score(cal[0]), score(cal[1]), delta, alpha)
    del cal
    scores = [[], []]
    for start in range(0, int(trials), int(chunk)):
        k = min(int(chunk), int(trials) - start)
        for b in (0, 1):
            scores[b].append(score(sample(b, k)))
    c = attack_results(counts(np.concatenate(scores[0]), np.concatenate(scores[1]), [tau]), 0)
    return AuditResult(eps_lo=eps_lower_bound(c, delta, alpha), delta=float(delta), alpha=float(alpha),
                       threshold=tau, counts=c, calibration_eps_lo=cal_bound, trials=int(trials),
                       calibration_trials=int(calibration_trials), score=score_name or "custom")


def trial_cap(trials: int, delta: float, alpha: float) -> float:
    """The largest lower bound `trials` audit trials per dataset can give: a perfect test (no error at all)."""
    return eps_lower_bound(attack_results({"FP": 0, "FN": 0, "TN": trials, "TP": trials}), delta, alpha)


def gaussian_eps(noise_multiplier: float | None, delta: float) -> float:
    """Exact epsilon at delta of one Gaussian mechanism with this sigma / sensitivity (dp-accounting PLD): the
    ceiling an audit of a Gaussian release can reach."""
    if noise_multiplier is None or not np.isfinite(noise_multiplier):
        return float("nan")
    if noise_multiplier <= 0:
        return float("inf")
    return accounting.pld_epsilon(float(noise_multiplier), delta, steps=1, discretization=1e-4)


def gaussian_pair_sampler(mu: float, dim: int, rng: np.random.Generator) -> Sampler:
    """Reference mechanism for tests: N(0, I) on D_0 and N(mu e_1, I) on D_1 (a Gaussian mechanism whose neighbours
    are mu noise standard deviations apart; its exact epsilon is `accounting.gaussian_epsilon_exact(1 / mu, delta)`)."""
    shift = np.zeros(dim)
    shift[0] = mu

    def sample(b: int, k: int) -> np.ndarray:
        return rng.standard_normal((k, dim)) + (shift if b else 0.0)

    return sample
