"""Beyond the papers, item `audit_run`: a one-run privacy audit of whole T-iteration runs against the papers'
composed guarantees, with the power to catch a 4x mis-calibration.

The item `audit` tests one step of each Gaussian mechanism with two neighbouring datasets and 10^5 trials. The papers'
totals are about the whole run: HUANG's moments accountant over t = 100 iterations, XU's Theorem 1 (an RDP bound
over T iterations), HU's Corollary 1. Here every audited run is ONE run of the library's own algorithm holding many
canaries, each in one of two states S_i = +1 / -1 drawn with probability 1/2; the adversary sees the whole
transcript, scores each canary by summing its effect over the transcript, and guesses the states it is surest of.

Two threat models, one row each (`threat`):

* black-box (`<method>`): the canaries are records (`one_run_canaries`, `one_run` of mechanisms.huang2019,
  xu2020, hu2020). A violation means real records leak more than claimed. From states the adversary does not choose,
  a unit-norm record moves the gradient by about half the replace-one bound (HUANG DP-ADMM, XU; DPSGD's clipping and
  HU's feature-column canaries reach the bound or beyond).
* white-box (`<method>_wb`, Nasr et al. 2023's gradient canaries): a gradient of the bound's norm inserted where the
  sensitivity is taken (`white_box_canaries`, `one_run_white_box`), so each canary's two states are the full
  sensitivity apart at every step and its ceiling is the tight total of the claimed noise itself. A violation means
  the noise is too small for the sensitivity the proof claims (a calibration error), whether or not real records
  reach the bound. HU has none: its record-level canaries already exceed Lemma 1's bound.

Three analyses of the same guesses: the one-run bound of Steinke, Nasr and Jagielski (2023; `privacy.audit.one_run`),
and the f-DP analysis of Mahloujifar, Melis and Chaudhuri (2024; `privacy.audit.fdp_one_run`) with the
(epsilon, delta) trade-off and with the Gaussian one (an audited mu). What carries over from the f-DP paper: its
setting is exactly the one-run setting here (independent canaries, one run, abstaining guesses); a T-step Gaussian
mechanism with multiplier z is exactly sqrt(T)/z-GDP, so the Gaussian reading tests the claimed noise's exact
trade-off, the tight total; and it does not pay Steinke et al.'s 2 m delta, which caps their bound at m ~ 1/delta
canaries. Each claim is compared with the analysis chosen for it before any run: the paper's (epsilon, delta) total
with the one-run bound, the tight total with the Gaussian reading. Confidence: 1 - confidence is split over a
method's rows (a claim checks them together) and then over the guess fractions (Bonferroni).

A fourth reading uses the scores themselves, not guesses: the Gaussian pair of Agrawal, Wei, Singh, Magdon-Ismail
and Zikas ("Let's Ask Gauss", 2026; `privacy.audit.gaussian_pair`) fits the present and absent canaries' scores by
two Gaussians of equal variance, whose hockey-stick divergence is mu-GDP's: an audited mu with its standard error and
a lower confidence bound exact under that model, its epsilon at delta (`eps_lo_gauss`, `flagged_gauss` against the
tight total) and a test of the model itself; a row whose fit the test rejects does not count this reading's flag.
The white-box scores are exactly such a pair (the projected noise is Gaussian and the rest of the update is
subtracted), so this reading approaches the tight total as the canaries grow, where the thresholded readings lose
what the thresholding discards. The same reading of `simulated_seeds` simulated correct Gaussian mechanisms per row
(exactly at its tight total, its canaries and level) counts its false flags. Xiang et al. ("Tight Privacy Audit in
One Run", 2025) tighten the guess-based analysis instead (order statistics of the released guesses); it is not
implemented here: on the white-box rows the Gaussian pair already reaches the tight total up to its sampling error.

Power (`privacy.audit.power`): the canary counts are those at which the 4x control's expected bound (correct
guesses expected at its true mu, less 2 standard deviations) exceeds the tight total; a level where it does not is
reported "not testable at this power" with the canaries it would need. For the Gaussian pair
(`gaussian_pair.expected_mu_lo`, `canaries_needed`): the control's bound 2 standard deviations below the median run
against the tight total (`control.testable_gauss`), and the claimed noise's expected audited / tight in the median run
and 2 standard deviations below it (`expected_ratio_gauss`, `assured_ratio_gauss`), with the canaries at which the
latter reaches 0.9 (`canaries_needed_ratio09`); the white-box canary counts (140,000) are those at which it does at
level 1 and above.

Neighbours: replace-one records for HUANG and XU (the relation of HUANG's 2c_1/m_i, XU's c/n as stated and 2c/n
corrected); HU's feature-level relation (one feature column of a party, ||D_m - D'_m|| <= 1).

Claims compared per mechanism and level (the mechanism's `paper_claim` / `level_claim`): the paper's own total
(HUANG: moments accountant; XU: Theorem 1; HU: Theorem 1 per iteration and Corollary 1), the tight total of the same
noise (for XU under replace-one 2c/n), the tight total at the canary's own gap (the ceiling of any audit with these
canaries), the audited lower bounds, and the same for a control whose noise is 4x too small (everything else
unchanged, the claim unchanged). [D] HU on N rows of a9a: a smaller N gives a smaller b_1, so a smaller C and less
noise: the audit is stronger than at the paper's N, and "cannot test" carries over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import binom
from threadpoolctl import threadpool_limits

from ..mechanisms import AUDIT_RUN, all_mechanisms, catalogue_view
from ..privacy import accounting
from ..privacy.audit import fdp_one_run, gaussian_pair, one_run, power
from ..rng import repeat_generators, seed_sequence
from .beyond_audit import available_data
from .parts import gather
from .progress import progress

PAPER, ITEM = "beyond", "audit_run"
# {id: short label} of every mechanism with the AUDIT_RUN capability, read from the catalogue at each use
METHODS = catalogue_view(AUDIT_RUN, lambda cls: cls.short_label or cls.label)
WHITE_BOX = "_wb"   # suffix of a method's white-box row (its mechanism's `white_box_setup`, `one_run_white_box`)
THREAT = {"black-box": "black-box: canaries are records any participant could contribute; a violation means real "
                       "records leak more than claimed",
          "white-box": "white-box: a gradient of the bound's norm inserted where the sensitivity is taken; a violation "
                       "means the noise is too small for the sensitivity the proof claims (a calibration error)"}
VARIANTS = ("claimed", "control")


def threat(method: str) -> str:
    return "white-box" if method.endswith(WHITE_BOX) else "black-box"


def base(method: str) -> str:
    """The mechanism (catalogue id) an audited row belongs to: its claims, config block and dataset."""
    return method.removesuffix(WHITE_BOX)


def _mech_class(method: str) -> type:
    return all_mechanisms(AUDIT_RUN)[base(method)]


def audited_rows(out: dict) -> list[str]:
    """The audited rows' methods of a result, in table order (each row's first appearance)."""
    return list(dict.fromkeys(st.method for st in out["settings"]))


def methods(params: dict) -> list[str]:
    """The audited rows' methods of these settings, in table order: each paper's record-level canaries, then the
    white-box canaries of the blocks that configure them (`white_box`)."""
    mechs = mechanisms(params)
    return list(mechs) + [k + WHITE_BOX for k, mech in mechs.items()
                          if hasattr(mech, "white_box_setup") and "white_box" in params[mech.audit_run_block]]
# ------------------------------------------------------------------------------------------------- settings
def check_params(params: dict) -> None:
    """Clear errors for the item's settings, before any work."""
    for k in ("iterations", "confidence", "control_noise_factor", "levels", "level_delta", "huang2019", "xu2020"):
        if k not in params:
            raise ValueError(f"beyond/audit_run needs the parameter {k!r} (see config/config.yaml)")
    if int(params["iterations"]) != params["iterations"] or params["iterations"] < 1:
        raise ValueError(f"iterations must be an integer >= 1, got {params['iterations']!r}")
    if not 0.5 <= float(params["confidence"]) < 1:
        raise ValueError(f"confidence must lie in [0.5, 1), got {params['confidence']!r}")
    if not 0 < float(params["control_noise_factor"]) < 1:
        raise ValueError(f"control_noise_factor must lie in (0, 1), got {params['control_noise_factor']!r}")
    if not 0 < float(params["level_delta"]) < 1:
        raise ValueError(f"level_delta must lie in (0, 1), got {params['level_delta']!r}")
    if any(not float(v) > 0 for v in params["levels"]):
        raise ValueError(f"levels must be positive total epsilons, got {params['levels']!r}")
    h, x = params["huang2019"], params["xu2020"]
    for name, block, keys in (("huang2019", h, ("agents", "rows_per_agent", "canaries_per_agent", "runs")),
                              ("xu2020", x, ("rows", "canaries", "runs"))):
        for k in keys:
            if int(block.get(k, 0)) != block.get(k, 0) or block.get(k, 0) < 1:
                raise ValueError(f"{name}.{k} must be an integer >= 1, got {block.get(k)!r}")
    if h["canaries_per_agent"] >= h["rows_per_agent"]:
        raise ValueError("huang2019.canaries_per_agent must be smaller than rows_per_agent")
    for k in ("paper_epsilons",):
        for block, name in ((h, "huang2019"), (x, "xu2020")):
            if any(not float(v) > 0 for v in block.get(k, [])):
                raise ValueError(f"{name}.{k} must hold positive epsilons")
    if any(float(v) > 1 for v in h.get("paper_epsilons", [])):
        raise ValueError("huang2019.paper_epsilons: HUANG's Theorem 1 needs a per-iteration epsilon in (0, 1]")
    if "hu2020" in params:
        u = params["hu2020"]
        for k in ("boundaries", "rho", "lam", "c1", "iterations_b1", "paper_delta", "delta_prime"):
            if k not in u:
                raise ValueError(f"hu2020.{k} is required (see config/config.yaml)")
        for k in ("rows", "canaries", "runs"):
            if int(u.get(k, 0)) != u.get(k, 0) or u.get(k, 0) < 1:
                raise ValueError(f"hu2020.{k} must be an integer >= 1, got {u.get(k)!r}")
        b = [int(v) for v in u["boundaries"]]
        if u["canaries"] >= b[1] - b[0]:
            raise ValueError("hu2020.canaries must be fewer than party 1's columns")
        if 2 * u["canaries"] >= u["rows"]:
            raise ValueError("hu2020.rows must exceed twice the canaries (two dedicated rows each)")
    if not float(h.get("dpsgd_canary_norm", 1)) >= 1:
        raise ValueError("huang2019.dpsgd_canary_norm must be >= 1")
    for name, block, keys in (("huang2019", h, ("canaries_per_agent", "runs")), ("xu2020", x, ("canaries", "runs"))):
        wb = block.get("white_box")
        if wb is None:
            continue
        for k in keys:
            if int(wb.get(k, 0)) != wb.get(k, 0) or wb.get(k, 0) < 1:
                raise ValueError(f"{name}.white_box.{k} must be an integer >= 1, got {wb.get(k)!r}")
    if "white_box" in h and h["white_box"]["canaries_per_agent"] >= h["rows_per_agent"]:
        raise ValueError("huang2019.white_box.canaries_per_agent must be smaller than rows_per_agent")
    if "white_box" in x and x["white_box"]["canaries"] >= x["rows"]:
        raise ValueError("xu2020.white_box.canaries must be smaller than rows")




# ------------------------------------------------------------------------------------------------- mechanisms, claims
@dataclass
class Setting:
    """One (method, level) row: its noise, its claims and what the audit found."""

    method: str
    level: str                 # e.g. "paper_eps0.1" or "level_eps1"
    source: str                # "paper" or "frontier"
    delta: float
    noise: float               # z (HUANG) or sigma (XU, HU party 1) of the claimed noise
    paper_eps: float           # the paper's own accounting of that noise
    tight_eps: float           # exact total of the same noise under the sensitivity the claim should use
    paper_delta: float | None = None   # delta of the paper's total (None: the same as delta)
    extras: dict = field(default_factory=dict)       # method-specific numbers, written as <method>.<level>.<key>
    canary_eps: dict = field(default_factory=dict)   # variant -> tight epsilon at the canary's own gap (ceiling)
    audit: dict = field(default_factory=dict)        # variant -> OneRunResult (Steinke, Nasr and Jagielski)
    fdp: dict = field(default_factory=dict)          # variant -> fdp_one_run.FdpResult (Mahloujifar et al.)
    gauss: dict = field(default_factory=dict)        # variant -> gaussian_pair.GaussPairResult (Agrawal et al.)
    power: dict = field(default_factory=dict)        # the control's expected bound at this power, canaries needed
    seconds: dict = field(default_factory=dict)


def mechanisms(params: dict) -> dict:
    """The audited mechanisms with the item's constants: every mechanism with the AUDIT_RUN capability whose config
    block is in `params` (`for_audit_run`)."""
    return {k: cls.for_audit_run(params) for k, cls in all_mechanisms(AUDIT_RUN).items()
            if cls.audit_run_block in params}


def _rng(seed: int, *labels: str) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(seed, PAPER, ITEM, *labels))


def canaries(method: str, mech, X, y, params: dict, seed: int):
    """The row's datasets with canaries: its mechanism's `one_run_setup` (records), or `white_box_setup` for a
    white-box row."""
    setup = mech.white_box_setup if threat(method) == "white-box" else mech.one_run_setup
    return setup(X, y, params, lambda *labels: _rng(seed, *labels))


def settings(method: str, mech, params: dict, block: dict, paper_kw: dict | None = None,
             level_kw: dict | None = None) -> list[Setting]:
    """The method's rows: the paper's own calibration at each of `block["paper_epsilons"]` (at its paper_delta), and
    the noise calibrated to each of the frontier's levels at level_delta."""
    T, ld = int(params["iterations"]), float(params["level_delta"])
    out = [Setting(method, f"paper_eps{eps:g}", "paper",
                   *mech.paper_claim(float(eps), float(block["paper_delta"]), T, **(paper_kw or {})))
           for eps in block.get("paper_epsilons", [])]
    return out + [Setting(method, f"level_eps{lev:g}", "frontier", *mech.level_claim(float(lev), ld, T,
                                                                                     **(level_kw or {})))
                  for lev in params["levels"]]


def row_level(method: str, params: dict) -> float:
    """The level of each row's bound: 1 - confidence split (Bonferroni) over the method's rows, so that every
    reading of a method (a claim checks all its levels together) holds at the stated confidence. Within a row each
    analysis splits it again over the guess fractions."""
    block = params[_mech_class(method).audit_run_block]
    return (1.0 - float(params["confidence"])) / (len(block.get("paper_epsilons", [])) + len(params["levels"]))


def row_levels(method: str, params: dict) -> list[str]:
    """The method's row names in table order (`settings`' levels), without building anything."""
    block = params[_mech_class(method).audit_run_block]
    return ([f"paper_eps{float(e):g}" for e in block.get("paper_epsilons", [])] +
            [f"level_eps{float(v):g}" for v in params["levels"]])


def run_method(method: str, params: dict, seed: int, data: dict, row: str | None = None) -> dict:
    """One method's rows (see `run`): {"settings": [Setting], "skipped": {method: reason}, "hu": HU's b_1 and C}.
    `row`: only that row (e.g. "paper_eps0.1", "level_eps3"); every row draws from its own seeds, so a row is the
    same whether run alone or with the others."""
    T, level = int(params["iterations"]), row_level(method, params)
    factors = {"claimed": 1.0, "control": float(params["control_noise_factor"])}
    cls = _mech_class(method)
    name = cls.audit_run_dataset
    if name not in data:
        return {"settings": [], "skipped": {method: f"dataset {name} unavailable"}, "hu": None}
    mech = cls.for_audit_run(params)
    with threadpool_limits(int(params.get("blas_threads", 1))):
        setup = canaries(method, mech, *data[name], params, seed)
        # HU's b_1 and Lemma 1's C of the noise-free run, reported beside its rows
        hu = {"b1": float(setup.b1), "C": [float(c) for c in setup.C]} if method == "hu_sharing" else None
        grid = settings(method, mech, params, params[mech.audit_run_block], *mech.claim_kwargs(setup, params))
        grid = [st for st in grid if row in (None, st.level)]
        one = mech.one_run_white_box if threat(method) == "white-box" else mech.one_run
        for st in progress(grid, "audit", name=lambda st: f"{st.method} {st.level}"):
            for variant, f in factors.items():
                t0 = time.perf_counter()
                # a white-box row draws its own noise (its runs are not the record-level rows' runs)
                labels = (st.method if threat(method) == "white-box" else base(method), st.level, variant)
                rngs = repeat_generators(seed, len(setup.S), PAPER, ITEM, *labels)
                runs = one(setup, T, st.noise, f, rngs)
                st.extras.update({("" if variant == "claimed" else "control.") + k: v for k, v in runs.extras.items()})
                st.audit[variant] = one_run.audit(runs.scores, setup.S, st.delta, level)
                st.fdp[variant] = fdp_one_run.audit(runs.scores, setup.S, st.delta, level)
                st.gauss[variant] = gaussian_pair.audit(runs.scores, setup.S, st.delta, level)
                st.canary_eps[variant] = accounting.analytic_gaussian_epsilon(runs.multiplier, st.delta, steps=T)
                if variant == "control":
                    st.power.update(control_power(runs.multiplier, T, st, setup.S.size, level))
                else:
                    st.power.update(claimed_power(runs.multiplier, T, st, setup.S.size, level))
                    st.power.update(simulated_false_flags(st, setup.S.size, level, int(params.get("simulated_seeds", 0)),
                                                          _rng(seed, st.method, st.level, "simulated")))
                st.seconds[variant] = time.perf_counter() - t0
    return {"settings": grid, "skipped": {}, "hu": hu}


def control_power(multiplier: float, T: int, st: Setting, canaries: int, level: float) -> dict:
    """What the audit can be expected to show of the 4x control (`privacy.audit.power`, GDP analysis, the expected
    correct guesses less 2 standard deviations): its expected bound with these canaries, whether that exceeds the
    tight total of the claimed noise (testable at this power) and the canaries it would need."""
    mu = power.gdp_mu(multiplier, T)
    expected = power.expected_bound(mu, canaries, st.delta, level, "gdp")
    return {"expected_eps": expected, "testable": bool(expected > st.tight_eps),
            "canaries_needed": power.canaries_needed(mu, st.tight_eps, st.delta, level, "gdp"),
            **_gauss_power("control.", mu, st, canaries, level, sds=2.0)}


def _gauss_power(prefix: str, mu: float, st: Setting, canaries: int, level: float, sds: float) -> dict:
    """The Gaussian-pair reading's power (`gaussian_pair`) with these canaries: a control's expected bound 2 standard
    deviations below the median run against the tight total, and the canaries it needs; for the claimed noise the
    expected audited / tight in the median run and 2 standard deviations below it (reached in about 98% of runs), and
    the canaries at which the latter reaches 0.9."""
    if prefix:
        expected = gaussian_pair.expected_eps(mu, canaries, st.delta, level, sds)
        need = gaussian_pair.canaries_needed(mu, gaussian_pair.gdp_mu_of_epsilon(st.tight_eps, st.delta), level, sds)
        return {"expected_eps_gauss": expected, "testable_gauss": bool(expected > st.tight_eps),
                "canaries_needed_gauss": need}
    target = gaussian_pair.gdp_mu_of_epsilon(0.9 * st.tight_eps, st.delta)
    return {"expected_ratio_gauss": gaussian_pair.expected_eps(mu, canaries, st.delta, level, 0.0) / st.tight_eps,
            "assured_ratio_gauss": gaussian_pair.expected_eps(mu, canaries, st.delta, level, sds) / st.tight_eps,
            "canaries_needed_ratio09": gaussian_pair.canaries_needed(mu, target, level, sds)}


def claimed_power(multiplier: float, T: int, st: Setting, canaries: int, level: float) -> dict:
    """The claimed noise's expected audited / tight under the Gaussian-pair reading with these canaries (median run,
    and 2 standard deviations below it), and the canaries at which the latter reaches 0.9 (inf: the canaries' own
    ceiling is below 0.9 of the tight total, e.g. record canaries at half the sensitivity)."""
    return _gauss_power("", power.gdp_mu(multiplier, T), st, canaries, level, sds=2.0)


def simulated_false_flags(st: Setting, canaries: int, level: float, seeds: int, rng: np.random.Generator,
                          chunk: int = 20) -> dict:
    """The Gaussian-pair reading on `seeds` simulated correct mechanisms at this row's canaries and level: scores
    S mu/2 + N(0, 1) with mu the tight total's own (a mechanism exactly as private as claimed, the worst correct
    case): the flags it raises ({"sim_seeds", "sim_flags"}); the rate should stay below `level`."""
    if seeds < 1:
        return {"sim_seeds": 0, "sim_flags": 0}
    mu = gaussian_pair.gdp_mu_of_epsilon(st.tight_eps, st.delta)
    flags = 0
    for start in range(0, seeds, chunk):
        r = min(chunk, seeds - start)
        S = np.where(rng.random((r, canaries)) < 0.5, 1, -1)
        b = gaussian_pair.mu_bounds(S * (mu / 2) + rng.standard_normal((r, canaries)), S, level)
        flags += int(np.count_nonzero(b["mu_lo"] > mu))
    return {"sim_seeds": int(seeds), "sim_flags": flags}


def run(params: dict, seed: int, data: dict, only: list[str] | None = None) -> dict:
    """Every (method, level, variant): {"settings": [Setting], "skipped": {method: reason}, "hu": HU's b_1 and C,
    "params"}. `data`: {name: (X, y)} with adult_huang2019 (HUANG, XU) and, if `hu2020` is configured, a9a (HU).
    `only`: the methods to run (default all of `methods(params)`)."""
    check_params(params)
    parts = [run_method(m, params, seed, data) for m in (only or methods(params))]
    return combine(parts, params)


def combine(parts: list[dict], params: dict) -> dict:
    """The methods' results as one item result."""
    out = {"settings": [st for p in parts for st in p["settings"]], "skipped": {}, "hu": None, "params": params}
    for p in parts:
        out["skipped"].update(p["skipped"])
        out["hu"] = out["hu"] or p["hu"]
    return out


def parts_audit_run(params: dict) -> list[str]:
    """The item's jobs: a white-box method's rows one per job, `<method>.<level>` (e.g. `xu_dpadmm_wb.level_eps1`,
    10-20 s each at paper settings with the canary counts the Gaussian-pair power calculation asks for); a record-level
    method's rows in one job, `<method>` (3-5 s a row, much of it the process's start and the method's canary set-up,
    which its rows share). Every row draws from its own seeds, so a row's numbers do not depend on its job."""
    return [f"{m}.{lev}" if threat(m) == "white-box" else m for m in methods(params)
            for lev in (row_levels(m, params) if threat(m) == "white-box" else [None])]


def part_audit_run(params: dict, key: str) -> dict:
    check_params(params)
    if key not in parts_audit_run(params):
        raise ValueError(f"beyond/audit_run has no part {key!r}: its parts are {', '.join(parts_audit_run(params))}")
    method, _, row = key.partition(".")
    names = [n for n in (_mech_class(method).audit_run_dataset,) if n in params.get("datasets", ["adult_huang2019"])]
    return run_method(method, params, int(params.get("seed", 0)), available_data(names), row or None)


def run_audit_run(params: dict) -> dict:
    """The item: every method whose dataset is available, audited (seed: params["seed"]), one part per method."""
    check_params(params)
    return combine(list(gather(PAPER, ITEM, params).values()), params)


# ------------------------------------------------------------------------------------------------- outputs
def metrics(out: dict, params: dict) -> dict:
    """Flat metrics, keys `<method>.<level>.<name>` (documented in config/claims/beyond.yaml).

    Three readings of the same guesses: `eps_lo` (Steinke, Nasr and Jagielski 2023), `eps_lo_fdp` (Mahloujifar et
    al. 2024, (epsilon, delta) trade-off) and `mu_lo` / `eps_lo_gdp` (the same, Gaussian trade-off). Each claim is
    compared with the analysis designed for it, fixed before any run: the paper's (epsilon, delta) total with
    `eps_lo` (`flagged`), the tight total of the claimed noise (exactly mu-GDP) with `eps_lo_gdp` (`flagged_tight`).
    Per method and level, the audit's reading of the claim: `contradicted` (a flag with the claimed noise),
    `supported` (not contradicted, and at the same level the 4x control is both testable at this power and flagged
    against the tight total: this audit caught a 4x under-noising it was built to catch there), `untestable` (the
    rest: a control flagged where the power calculation expects no flag is luck, not power). `control.testable`:
    the control's expected bound at this power exceeds the tight total (`privacy.audit.power`);
    `control.canaries_needed`: the canaries it needs."""
    m = {"iterations": int(params["iterations"]), "confidence": float(params["confidence"]),
         "control_noise_factor": float(params["control_noise_factor"])}
    for st in out["settings"]:
        p = f"{st.method}.{st.level}."
        m.update({p + "delta": st.delta, p + "paper_delta": st.paper_delta or st.delta,
                  p + "noise": st.noise, p + "paper_eps": st.paper_eps,
                  p + "tight_eps": st.tight_eps, p + "seconds": float(sum(st.seconds.values()))})
        for variant in VARIANTS:
            q = p + ("" if variant == "claimed" else "control.")
            a, f, g = st.audit[variant], st.fdp[variant], st.gauss[variant]
            fit_ok = bool(g.fit_p >= g.level)
            m.update({q + "eps_lo": a.eps_lo, q + "eps_lo_fdp": f.eps_lo, q + "mu_lo": f.mu_lo,
                      q + "eps_lo_gdp": f.eps_lo_gdp, q + "canary_eps": st.canary_eps[variant],
                      q + "guesses": a.guesses, q + "correct": a.correct,
                      q + "mu_hat_gauss": g.mu_hat, q + "mu_se_gauss": g.se, q + "mu_lo_gauss": g.mu_lo,
                      q + "eps_hat_gauss": g.eps_hat, q + "eps_lo_gauss": g.eps_lo, q + "gauss_fit_p": g.fit_p,
                      q + "gauss_fit_ok": fit_ok, q + "gauss_sd_ratio": g.sd_ratio,
                      # (eps_lo, delta) refuted refutes (paper_eps, paper_delta) only if paper_delta <= delta
                      q + "flagged": bool(a.eps_lo > st.paper_eps and (st.paper_delta or st.delta) <= st.delta),
                      q + "flagged_tight": bool(f.eps_lo_gdp > st.tight_eps),
                      # the Gaussian-pair reading rests on its model: a flag counts only where the fit test does not
                      # reject the model at the row's level
                      q + "flagged_gauss": bool(g.eps_lo > st.tight_eps and fit_ok)})
        m.update({p + "ratio": m[p + "eps_lo_gdp"] / st.tight_eps, p + "ratio_steinke": m[p + "eps_lo"] / st.tight_eps,
                  p + "ratio_fdp": m[p + "eps_lo_fdp"] / st.tight_eps,
                  p + "ratio_gauss": m[p + "eps_lo_gauss"] / st.tight_eps,
                  p + "control.expected_eps": st.power["expected_eps"],
                  p + "control.testable": st.power["testable"],
                  p + "control.canaries_needed": st.power["canaries_needed"],
                  p + "control.expected_eps_gauss": st.power["expected_eps_gauss"],
                  p + "control.testable_gauss": st.power["testable_gauss"],
                  p + "control.canaries_needed_gauss": st.power["canaries_needed_gauss"],
                  p + "expected_ratio_gauss": st.power["expected_ratio_gauss"],
                  p + "assured_ratio_gauss": st.power["assured_ratio_gauss"],
                  p + "canaries_needed_ratio09": st.power["canaries_needed_ratio09"],
                  p + "reaches_ratio09": bool(m[p + "eps_lo_gauss"] >= 0.9 * st.tight_eps),
                  p + "sim_seeds": st.power["sim_seeds"], p + "sim_flags": st.power["sim_flags"]})
        m.update({p + key: v for key, v in st.extras.items()})
        m[p + "reading"] = ("contradicted" if m[p + "flagged"] or m[p + "flagged_tight"] or m[p + "flagged_gauss"] else
                            "supported" if (m[p + "control.flagged_tight"] and m[p + "control.testable"]) or
                            (m[p + "control.flagged_gauss"] and m[p + "control.testable_gauss"]) else
                            "untestable")
        if st.method == "hu_sharing":
            # HU: a claimed total at or above the cap (every guess correct) cannot be refuted by this audit: its
            # "no violation" is untestable, not a pass
            cap = st.audit["claimed"].cap
            m.update({p + "cap": cap, p + "paper_testable": bool(st.paper_eps < cap),
                      p + "tight_testable": bool(st.tight_eps < cap)})
    for meth in audited_rows(out):
        sts = [st for st in out["settings"] if st.method == meth]
        if sts:
            m[f"{meth}.canaries"] = sts[0].audit["claimed"].canaries
            m[f"{meth}.seconds"] = float(sum(sum(st.seconds.values()) for st in sts))
            m[f"{meth}.runs"] = runs_of(meth, params)
            m[f"{meth}.row_level"] = row_level(meth, params)
            for reading in ("contradicted", "supported", "untestable"):
                m[f"{meth}.{reading}"] = sum(m[f"{meth}.{st.level}.reading"] == reading for st in sts)
            m[f"{meth}.not_testable"] = sum(not m[f"{meth}.{st.level}.control.testable"] for st in sts)
            m[f"{meth}.best_ratio"] = max(m[f"{meth}.{st.level}.ratio"] for st in sts)
            m[f"{meth}.best_ratio_steinke"] = max(m[f"{meth}.{st.level}.ratio_steinke"] for st in sts)
            m[f"{meth}.best_ratio_gauss"] = max(m[f"{meth}.{st.level}.ratio_gauss"] for st in sts)
            # levels where the power calculation expects the claimed noise to reach audited / tight >= 0.9 with these
            # canaries in about 98% of runs (2 standard deviations below the median run), and how many of them did
            can = [st for st in sts if m[f"{meth}.{st.level}.assured_ratio_gauss"] >= 0.9]
            m[f"{meth}.levels_can_reach09"] = len(can)
            m[f"{meth}.levels_reached09"] = sum(m[f"{meth}.{st.level}.reaches_ratio09"] for st in can)
            m[f"{meth}.gauss_fit_rejected"] = sum(not m[f"{meth}.{st.level}.gauss_fit_ok"] for st in sts)
            m[f"{meth}.control_testable_gauss"] = sum(m[f"{meth}.{st.level}.control.testable_gauss"] for st in sts)
            m[f"{meth}.control_flagged_gauss"] = sum(m[f"{meth}.{st.level}.control.flagged_gauss"] for st in sts)
            m[f"{meth}.control_testable_flagged_gauss"] = sum(
                m[f"{meth}.{st.level}.control.flagged_gauss"] for st in sts
                if m[f"{meth}.{st.level}.control.testable_gauss"])
    if out.get("hu") is not None:
        m["hu_sharing.b1"] = out["hu"]["b1"]
        m["hu_sharing.lemma1_C"] = float(out["hu"]["C"][0])
    m["seconds_total"] = float(sum(sum(st.seconds.values()) for st in out["settings"]))
    # the Gaussian-pair reading on simulated correct mechanisms (`simulated_false_flags`), over every row
    seeds = sum(st.power.get("sim_seeds", 0) for st in out["settings"])
    m["sim_seeds"] = int(seeds)
    m["sim_flags"] = int(sum(st.power.get("sim_flags", 0) for st in out["settings"]))
    if seeds:
        m["sim_false_flag_rate"] = m["sim_flags"] / seeds
        m["sim_max_row_level"] = max(row_level(st.method, params) for st in out["settings"])
        # P[Binomial(seeds, largest row level) >= flags]: each row's rate is at most its level, so this is conservative
        m["sim_false_flag_p"] = float(binom.sf(m["sim_flags"] - 1, seeds, m["sim_max_row_level"]))
    return m


def runs_of(method: str, params: dict) -> int:
    """Runs pooled in each bound (the cost beside the canaries and seconds)."""
    block = params[_mech_class(method).audit_run_block]
    return int((block["white_box"] if threat(method) == "white-box" else block)["runs"])


def count(n: float, limit: int = power.MAX_CANARIES) -> str:
    """A canary count as the table writes it (inf: beyond the `limit` the power calculation looks at, or never)."""
    return f"{n:,.0f}" if np.isfinite(n) else f"more than {limit:,}"


def count_gauss(n: float) -> str:
    """A canary count of the Gaussian-pair power calculation (inf: more than 10^9, or never, the canaries' own ceiling
    being at or below the target)."""
    return f"{n:,.0f}" if np.isfinite(n) else f"more than {gaussian_pair.MAX_CANARIES:,} or never"


def table_markdown(out: dict, m: dict) -> str:
    lines = ["| method | threat model | level | delta | paper's total eps | tight eps | audited eps >= (one-run / "
             "f-DP / GDP / Gaussian pair) | audited / tight (one-run / f-DP / GDP / Gaussian pair) | Gaussian pair: "
             "mu (se), fit p | expected audited / tight, Gaussian pair: median / 98% of runs (canaries for 0.9 in 98%) | "
             "correct / guesses "
             "(canaries) | 4x control: ceiling | 4x control: audited eps >= (one-run / f-DP / GDP / Gaussian pair) | "
             "4x control testable at this power: GDP / Gaussian pair (canaries needed) | reading |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for st in out["settings"]:
        p = f"{st.method}.{st.level}."
        flag = lambda q: (" **(exceeds the paper's claim)**" if m[q + "flagged"] else  # noqa: E731
                          " **(exceeds the tight total)**" if m[q + "flagged_tight"] or m[q + "flagged_gauss"] else "")
        quad = lambda q: (f"{m[q + 'eps_lo']:.3f} / {m[q + 'eps_lo_fdp']:.3f} / {m[q + 'eps_lo_gdp']:.3f} / "  # noqa: E731
                          f"{m[q + 'eps_lo_gauss']:.3f}")
        yn = lambda b: "yes" if b else "no"  # noqa: E731
        fit = f"{m[p + 'gauss_fit_p']:.2g}" + ("" if m[p + "gauss_fit_ok"] else " (rejected)")
        lines.append(f"| {METHODS[base(st.method)]} | {threat(st.method)} | {st.level} | {st.delta:g} | "
                     f"{st.paper_eps:.3g} | {st.tight_eps:.3g} | {quad(p)}{flag(p)} | {m[p + 'ratio_steinke']:.2f} / "
                     f"{m[p + 'ratio_fdp']:.2f} / {m[p + 'ratio']:.2f} / {m[p + 'ratio_gauss']:.2f} | "
                     f"{m[p + 'mu_hat_gauss']:.3g} ({m[p + 'mu_se_gauss']:.2g}), {fit} | "
                     f"{m[p + 'expected_ratio_gauss']:.2f} / {m[p + 'assured_ratio_gauss']:.2f} "
                     f"({count_gauss(m[p + 'canaries_needed_ratio09'])}) | "
                     f"{m[p + 'correct']} / {m[p + 'guesses']} ({m[st.method + '.canaries']:,}) | "
                     f"{m[p + 'control.canary_eps']:.3g} | {quad(p + 'control.')}{flag(p + 'control.')} | "
                     f"{yn(m[p + 'control.testable'])} / {yn(m[p + 'control.testable_gauss'])} "
                     f"({count(m[p + 'control.canaries_needed'])} / {count_gauss(m[p + 'control.canaries_needed_gauss'])})"
                     f" | {m[p + 'reading']} |")
    return "\n".join(lines)


def plot(out: dict, m: dict):
    """Claimed vs audited total epsilon, one panel per method and threat model: paper's total, tight total, the
    canary ceiling and the audited bounds (one-run, GDP) with the noise as claimed and for the 4x control."""
    import matplotlib.pyplot as plt

    rows = audited_rows(out)
    ncol = min(4, len(rows))
    nrow = -(-len(rows) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 4.4 * nrow), squeeze=False)
    for ax in axes.ravel()[len(rows):]:
        ax.axis("off")
    for ax, meth in zip(axes.ravel(), rows):
        sts = [s for s in out["settings"] if s.method == meth]
        x = np.arange(len(sts))

        def get(name, ctl=False, meth=meth, sts=sts):
            return np.array([m[f"{meth}.{s.level}." + ("control." if ctl else "") + name] for s in sts])

        ax.plot(x, get("paper_eps"), "k_", ms=16, mew=2.5, label="claimed: paper's total")
        ax.plot(x, get("tight_eps"), "D", mfc="none", color="tab:blue", label="claimed noise, tight total")
        ax.plot(x, np.maximum(get("eps_lo"), 1e-3), "o", mfc="none", color="tab:blue",
                label="audited: one-run bound (Steinke et al.)")
        ax.plot(x, np.maximum(get("eps_lo_gdp"), 1e-3), "o", color="tab:blue", label="audited: f-DP, GDP")
        ax.plot(x, np.maximum(get("eps_lo_gauss"), 1e-3), "*", ms=9, color="tab:green",
                label="audited: Gaussian pair (Agrawal et al.)")
        ax.plot(x, get("canary_eps", True), "s", mfc="none", color="tab:red", alpha=0.5,
                label="4x control: ceiling (canary gap)")
        ax.plot(x, np.maximum(get("eps_lo", True), 1e-3), "v", mfc="none", color="tab:red",
                label="4x control: one-run bound")
        ax.plot(x, np.maximum(get("eps_lo_gdp", True), 1e-3), "v", color="tab:red", label="4x control: f-DP, GDP")
        ax.plot(x, np.maximum(get("eps_lo_gauss", True), 1e-3), "*", ms=9, mfc="none", color="tab:red",
                label="4x control: Gaussian pair")
        ax.set_xticks(x, [s.level.replace("_", "\n") for s in sts], fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"{METHODS[base(meth)]} ({threat(meth)}, {m[meth + '.canaries']:,} canaries)", fontsize=9)
        ax.set_ylabel(f"total epsilon over T = {m['iterations']}", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=4, bbox_to_anchor=(0.5, -0.01))
    fig.suptitle(f"Whole-run one-run audit: claimed vs audited epsilon (bounds at {m['confidence']:.0%}; audited 0 "
                 f"drawn at 1e-3)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def describe(out: dict, m: dict) -> str:
    """The closing paragraphs, every number from the metrics: per method and threat model which claimed totals the
    whole-run audit supports, which it cannot test at this power (and what power it would need) and which it
    contradicts."""
    parts = []
    for meth in audited_rows(out):
        sts = [s for s in out["settings"] if s.method == meth]
        if not sts:
            continue
        p = lambda s, n, c=False: m[f"{meth}.{s.level}." + ("control." if c else "") + n]  # noqa: E731
        groups = {r: [s for s in sts if p(s, "reading") == r] for r in ("supported", "untestable", "contradicted")}
        names = lambda ss: ", ".join(s.level for s in ss) or "no level"  # noqa: E731
        txt = (f"**{METHODS[base(meth)]}**, {THREAT[threat(meth)]}. Cost: {m[meth + '.canaries']:,} canaries in "
               f"{m[meth + '.runs']} run(s) per bound, {m[meth + '.seconds']:.1f} s for all its levels. Supported "
               f"(no violation, and the 4x control testable at this power and flagged at the same level): "
               f"{names(groups['supported'])}. Untestable (no violation, control not testable or missed): "
               f"{names(groups['untestable'])}. Contradicted: "
               f"{names(groups['contradicted'])}.")
        weak = [s for s in sts if not p(s, "testable", True)]
        if weak:
            txt += (" Not testable at this power by the f-DP (GDP) reading (the control's expected bound stays below "
                    "the tight total): " +
                    ", ".join(f"{s.level} (needs {count(p(s, 'canaries_needed', True))} canaries)" for s in weak) + ".")
        for s in groups["contradicted"]:
            txt += (f" At {s.level} the audited total is >= {max(p(s, 'eps_lo'), p(s, 'eps_lo_gdp')):.3f} against a "
                    f"tight total of {s.tight_eps:.3g} and a paper's total of {s.paper_eps:.3g} (delta {s.delta:g}).")
        best = max(sts, key=lambda s: p(s, "ratio"))
        txt += (f" Best audited / tight with the claimed noise: {p(best, 'ratio'):.2f} at {best.level} (f-DP, GDP; "
                f"one-run bound {p(best, 'ratio_steinke'):.2f}).")
        txt += (f" Gaussian-pair reading (present and absent canaries' scores fitted by two Gaussians): best audited /"
                f" tight {p(max(sts, key=lambda s: p(s, 'ratio_gauss')), 'ratio_gauss'):.2f}; the power calculation "
                f"expects >= 0.9 in about 98% of runs with these canaries at {m[meth + '.levels_can_reach09']} of "
                f"{len(sts)} levels, and {m[meth + '.levels_reached09']} of those reached it.")
        short = [s for s in sts if p(s, "assured_ratio_gauss") < 0.9]
        if short:
            txt += (" Below 0.9 in 98% of runs by the power calculation: " + ", ".join(
                f"{s.level} (median run {p(s, 'expected_ratio_gauss'):.2f}, ceiling "
                f"{p(s, 'canary_eps') / s.tight_eps:.2f}, canaries for 0.9 in 98% of runs: "
                f"{count_gauss(p(s, 'canaries_needed_ratio09'))})" for s in short) + ".")
        weak_g = [s for s in sts if not p(s, "testable_gauss", True)]
        txt += (" Not testable at this power by the Gaussian-pair reading: " + (", ".join(
            f"{s.level} (needs {count_gauss(p(s, 'canaries_needed_gauss', True))} canaries)" for s in weak_g)
            if weak_g else "no level") + ".")
        rej = [s.level for s in sts if not p(s, "gauss_fit_ok")]
        if rej:
            txt += (" The Gaussian model of the scores is rejected (normality or equal variances) at " + ", ".join(rej)
                    + ": its flags there are not counted.")
        parts.append(txt)
    if m.get("sim_seeds"):
        parts.append(f"Simulated correct mechanisms: the Gaussian-pair reading on {m['sim_seeds']:,} simulated runs "
                     f"of a Gaussian mechanism exactly at each row's tight total, with each row's canaries and level, "
                     f"flagged {m['sim_flags']} ({m['sim_false_flag_rate']:.2%}; each row's level is at most "
                     f"{m['sim_max_row_level']:.2%}).")
    if out.get("hu") is not None and "hu_sharing.lemma1_C" in m:
        hs = [s for s in out["settings"] if s.method == "hu_sharing"]
        nb = [m[f"hu_sharing.{s.level}.noisy_b1"] for s in hs]
        parts.append(f"HU: Lemma 1's C = {m['hu_sharing.lemma1_C']:.3g} for party 1 from b_1 = "
                     f"{m['hu_sharing.b1']:.3g}, the largest ||x||, ||y||, ||z|| of the noise-free run. In the runs "
                     f"with the calibrated noise these norms reach {min(nb):.3g} to {max(nb):.3g}, "
                     f"{min(nb) / m['hu_sharing.b1']:.0f}x to {max(nb) / m['hu_sharing.b1']:.0f}x that b_1: "
                     f"Assumption 1.1 does not hold for the noisy iterates. A party's next release is its data's "
                     f"ridge map applied to the pulled sum, which carries the noise, so the canaries' own ceiling "
                     f"does not fall as the noise grows (ceiling column). Its record-level canaries already exceed "
                     f"Lemma 1's bound, so it has no white-box row: a canary at the bound would be weaker.")
        over = [s.level for s in hs if not m[f"hu_sharing.{s.level}.paper_testable"]]
        if over:
            parts.append(f"HU: with {m['hu_sharing.canaries']:,} canaries the one-run bound cannot show an epsilon "
                         f"above {max(m[f'hu_sharing.{s.level}.cap'] for s in hs):.3g} (every guess correct): at "
                         f"{', '.join(over)} the paper's total lies at or above that cap, so no violation there is "
                         f"untestable, not a pass.")
    parts.append("A bound below the claim says only that these canaries and this score found no violation. The "
                 "ceiling is the tight total at the canary pair's own gap, the most any audit with these canaries "
                 "could show. The one-run bound (Steinke et al.) pays 2 m delta for m canaries; the f-DP analysis "
                 "(Mahloujifar et al.) of the same guesses does not, and its GDP reading is the test of the claimed "
                 "noise's exact trade-off. The Gaussian-pair reading (Agrawal et al. 2026) uses the scores themselves, "
                 "not guesses: exact under its model (the present and absent scores two Gaussians of equal variance), "
                 "which a fit test checks on every row.")
    if out["skipped"]:
        parts.append("Not run: " + "; ".join(f"{k} ({v})" for k, v in out["skipped"].items()) + ".")
    return "\n\n".join(parts)


def metrics_audit_run(result: dict) -> dict:
    """write_metrics arguments: the flat metrics, and "not run" (with the reasons) when no method could run."""
    return {"metrics": metrics(result, result["params"]), "status": "ok" if result["settings"] else "not run",
            "reason": "; ".join(f"{k}: {v}" for k, v in result["skipped"].items())}


def plot_audit_run(result: dict) -> dict:
    if not result["settings"]:
        return {}
    return {"audit_run": plot(result, metrics(result, result["params"]))}


def table_audit_run(result: dict, m: dict) -> str:
    """The results table, the audit's time, and the closing text computed from the metrics."""
    return (table_markdown(result, m) + f"\n\nAudit time: {m['seconds_total']:.1f} s.\n\n" + describe(result, m))
