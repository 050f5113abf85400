"""Beyond the papers, item `audit_run`: a one-run privacy audit of whole T-iteration runs (Steinke, Nasr and Jagielski
2023; `privacy.audit.one_run`), against the papers' composed guarantees.

The item `audit` tests one step of each Gaussian mechanism with two neighbouring datasets and 10^5 trials. The papers'
totals are about the whole run: HUANG's moments accountant over t = 100 iterations, XU's Theorem 1 (an RDP bound
over T iterations), HU's Corollary 1. Here every audited run is ONE run of the library's own algorithm on a dataset
holding many canaries, each in one of two states S_i = +1 / -1 drawn with probability 1/2; the adversary sees the
whole transcript, scores each canary by summing its effect over the transcript, and the one-run bound turns the
correct guesses into a lower bound on the total epsilon (confidence 1 - alpha, Bonferroni over the guess fractions).
The canaries and the white-box score of each algorithm are its mechanism's (`one_run_canaries`, `one_run` of
mechanisms.huang2019 (DP-ADMM, DPSGD), mechanisms.xu2020 (DP-ADMM), mechanisms.hu2020 (ADMM sharing, noise on the
shared values)): every mechanism with the AUDIT_RUN capability whose config block (`audit_run_block`) is set.

Neighbours: replace-one records for HUANG and XU (the relation of HUANG's 2c_1/m_i, XU's c/n as stated and 2c/n
corrected); HU's feature-level relation (one feature column of a party, ||D_m - D'_m|| <= 1).

Claims compared per mechanism and level (the mechanism's `paper_claim` / `level_claim`): the paper's own total
(HUANG: moments accountant; XU: Theorem 1; HU: Theorem 1 per iteration and Corollary 1), the tight total of the same
noise (for XU under replace-one 2c/n), the tight total at the canary's own gap (the ceiling of any audit with these
canaries), the audited lower bound, and the same for a control whose noise is 4x too small (everything else
unchanged, the claim unchanged). [D] HU on N rows of a9a: a smaller N gives a smaller b_1, so a smaller C and less
noise: the audit is stronger than at the paper's N, and "cannot test" carries over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ..mechanisms import AUDIT_RUN, all_mechanisms, catalogue_view
from ..privacy import accounting
from ..privacy.audit import one_run
from ..rng import repeat_generators, seed_sequence
from .beyond_audit import available_data
from .progress import progress

PAPER, ITEM = "beyond", "audit_run"
# {id: short label} of every mechanism with the AUDIT_RUN capability, read from the catalogue at each use
METHODS = catalogue_view(AUDIT_RUN, lambda cls: cls.short_label or cls.label)
VARIANTS = ("claimed", "control")
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
    audit: dict = field(default_factory=dict)        # variant -> OneRunResult
    seconds: dict = field(default_factory=dict)


def mechanisms(params: dict) -> dict:
    """The audited mechanisms with the item's constants: every mechanism with the AUDIT_RUN capability whose config
    block is in `params` (`for_audit_run`)."""
    return {k: cls.for_audit_run(params) for k, cls in all_mechanisms(AUDIT_RUN).items()
            if cls.audit_run_block in params}


def _rng(seed: int, *labels: str) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(seed, PAPER, ITEM, *labels))


def canaries(method: str, X, y, params: dict, seed: int):
    """The method's datasets with canaries (its mechanism's `one_run_setup`: its module's `one_run_canaries`)."""
    return mechanisms(params)[method].one_run_setup(X, y, params, lambda *labels: _rng(seed, *labels))


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


def run(params: dict, seed: int, data: dict) -> dict:
    """Every (method, level, variant): {"settings": [Setting], "skipped": {method: reason}, "hu": HU's canaries}.
    `data`: {name: (X, y)} with adult_huang2019 (HUANG, XU) and, if `hu2020` is configured, a9a (HU)."""
    check_params(params)
    T, level = int(params["iterations"]), 1.0 - float(params["confidence"])
    factors = {"claimed": 1.0, "control": float(params["control_noise_factor"])}
    mechs = mechanisms(params)
    setups, grid, skipped = {}, [], {}
    with threadpool_limits(int(params.get("blas_threads", 1))):
        for m, mech in mechs.items():          # each mechanism's canaries and claims, in catalogue order
            name = mech.audit_run_dataset
            if name not in data:
                skipped[m] = f"dataset {name} unavailable"
                continue
            setups[m] = mech.one_run_setup(*data[name], params, lambda *labels: _rng(seed, *labels))
            grid += settings(m, mech, params, params[mech.audit_run_block], *mech.claim_kwargs(setups[m], params))
        for st in progress(grid, "audit", name=lambda st: f"{st.method} {st.level}"):
            setup, mech = setups[st.method], mechs[st.method]
            for variant, f in factors.items():
                t0 = time.perf_counter()
                rngs = repeat_generators(seed, len(setup.S), PAPER, ITEM, st.method, st.level, variant)
                runs = mech.one_run(setup, T, st.noise, f, rngs)
                st.extras.update({("" if variant == "claimed" else "control.") + k: v for k, v in runs.extras.items()})
                st.audit[variant] = one_run.audit(runs.scores, setup.S, st.delta, level)
                st.canary_eps[variant] = accounting.analytic_gaussian_epsilon(runs.multiplier, st.delta, steps=T)
                st.seconds[variant] = time.perf_counter() - t0
    return {"settings": grid, "skipped": skipped, "hu": setups.get("hu_sharing"), "params": params}


def run_audit_run(params: dict) -> dict:
    """The item: every method whose dataset is available, audited (seed: params["seed"])."""
    check_params(params)
    return run(params, int(params.get("seed", 0)), available_data(params.get("datasets", ["adult_huang2019"])))


# ------------------------------------------------------------------------------------------------- outputs
def metrics(out: dict, params: dict) -> dict:
    """Flat metrics, keys `<method>.<level>.<name>` (documented in config/claims/beyond.yaml).

    Per method and level, the audit's reading of the claim: `contradicted` (the audited bound exceeds the paper's
    total, or the tight total of the claimed noise), `supported` (not contradicted, and the 4x control exceeds the
    tight total of the claimed noise at the same level: this audit would have caught a 4x under-noising there),
    `untestable` (neither: no violation found, but the audit lacks the power to tell). Per method: the counts."""
    m = {"iterations": int(params["iterations"]), "confidence": float(params["confidence"]),
         "control_noise_factor": float(params["control_noise_factor"])}
    for st in out["settings"]:
        p = f"{st.method}.{st.level}."
        m.update({p + "delta": st.delta, p + "paper_delta": st.paper_delta or st.delta,
                  p + "noise": st.noise, p + "paper_eps": st.paper_eps,
                  p + "tight_eps": st.tight_eps, p + "seconds": float(sum(st.seconds.values()))})
        for variant in VARIANTS:
            q = p + ("" if variant == "claimed" else "control.")
            a = st.audit[variant]
            m.update({q + "eps_lo": a.eps_lo, q + "canary_eps": st.canary_eps[variant], q + "guesses": a.guesses,
                      q + "correct": a.correct,
                      # (eps_lo, delta) refuted refutes (paper_eps, paper_delta) only if paper_delta <= delta
                      q + "flagged": bool(a.eps_lo > st.paper_eps and (st.paper_delta or st.delta) <= st.delta),
                      q + "flagged_tight": bool(a.eps_lo > st.tight_eps)})
        m.update({p + key: v for key, v in st.extras.items()})
        m[p + "reading"] = ("contradicted" if m[p + "flagged"] or m[p + "flagged_tight"] else
                            "supported" if m[p + "control.flagged_tight"] else "untestable")
        if st.method == "hu_sharing":
            # HU: a claimed total at or above the cap (every guess correct) cannot be refuted by this audit: its
            # "no violation" is untestable, not a pass
            cap = st.audit["claimed"].cap
            m.update({p + "cap": cap, p + "paper_testable": bool(st.paper_eps < cap),
                      p + "tight_testable": bool(st.tight_eps < cap)})
    for meth in METHODS:
        sts = [st for st in out["settings"] if st.method == meth]
        if sts:
            m[f"{meth}.canaries"] = sts[0].audit["claimed"].canaries
            for reading in ("contradicted", "supported", "untestable"):
                m[f"{meth}.{reading}"] = sum(m[f"{meth}.{st.level}.reading"] == reading for st in sts)
    if out.get("hu") is not None:
        m["hu_sharing.b1"] = out["hu"].b1
        m["hu_sharing.lemma1_C"] = float(out["hu"].C[0])
    m["seconds_total"] = float(sum(sum(st.seconds.values()) for st in out["settings"]))
    return m


def table_markdown(out: dict, m: dict) -> str:
    lines = ["| method | level | delta | paper's total eps | tight eps | ceiling (canary gap) | audited eps >= | "
             "correct / guesses (canaries) | 4x control: ceiling | 4x control: audited eps >= | reading |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for st in out["settings"]:
        p = f"{st.method}.{st.level}."
        flag = lambda q: (" **(exceeds the paper's claim)**" if m[q + "flagged"] else  # noqa: E731
                          " **(exceeds the tight total)**" if m[q + "flagged_tight"] else "")
        lines.append(f"| {METHODS[st.method]} | {st.level} | {st.delta:g} | {st.paper_eps:.3g} | {st.tight_eps:.3g} | "
                     f"{m[p + 'canary_eps']:.3g} | {m[p + 'eps_lo']:.3f}{flag(p)} | {m[p + 'correct']} / "
                     f"{m[p + 'guesses']} ({m[st.method + '.canaries']}) | {m[p + 'control.canary_eps']:.3g} | "
                     f"{m[p + 'control.eps_lo']:.3f}{flag(p + 'control.')} | {m[p + 'reading']} |")
    return "\n".join(lines)


def plot(out: dict, m: dict):
    """Claimed vs audited total epsilon, one panel per method: paper's total, tight total, the canary ceiling and the
    audited bounds (noise as claimed and 4x control) per level."""
    import matplotlib.pyplot as plt

    methods = [k for k in METHODS if any(s.method == k for s in out["settings"])]
    fig, axes = plt.subplots(1, len(methods), figsize=(4.6 * len(methods), 5.2), squeeze=False)
    for ax, meth in zip(axes[0], methods):
        sts = [s for s in out["settings"] if s.method == meth]
        x = np.arange(len(sts))
        def get(name, ctl=False, meth=meth, sts=sts):
            return np.array([m[f"{meth}.{s.level}." + ("control." if ctl else "") + name] for s in sts])

        ax.plot(x, get("paper_eps"), "k_", ms=18, mew=2.5, label="claimed: paper's total")
        ax.plot(x, get("tight_eps"), "D", mfc="none", color="tab:blue", label="claimed noise, tight total")
        ax.plot(x, get("canary_eps"), "s", mfc="none", color="tab:green",
                label="ceiling: tight total at the canary gap")
        ax.plot(x, np.maximum(get("eps_lo"), 1e-3), "o", color="tab:blue", label="audited lower bound")
        ax.plot(x, np.maximum(get("eps_lo", True), 1e-3), "v", color="tab:red", label="audited, 4x control")
        ax.plot(x, get("canary_eps", True), "s", mfc="none", color="tab:red", alpha=0.5,
                label="4x control: ceiling")
        ax.set_xticks(x, [s.level.replace("_", "\n") for s in sts], fontsize=7)
        ax.set_yscale("log")
        ax.set_title(METHODS[meth], fontsize=10)
        ax.set_ylabel(f"total epsilon over T = {m['iterations']} (bounds at {m['confidence']:.0%})")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("Whole-run one-run audit: claimed vs audited epsilon (audited 0 drawn at 1e-3)", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def describe(out: dict, m: dict) -> str:
    """The closing paragraphs, every number from the metrics: per method which claimed totals the whole-run audit
    supports, which it cannot test at this power and which it contradicts."""
    parts = []
    for meth, label in METHODS.items():
        sts = [s for s in out["settings"] if s.method == meth]
        if not sts:
            continue
        p = lambda s, n, c=False: m[f"{meth}.{s.level}." + ("control." if c else "") + n]  # noqa: E731
        groups = {r: [s for s in sts if p(s, "reading") == r] for r in ("supported", "untestable", "contradicted")}
        names = lambda ss: ", ".join(s.level for s in ss) or "no level"  # noqa: E731
        txt = (f"**{label}** ({m[meth + '.canaries']:,} canaries per bound). Supported (no violation, and the 4x "
               f"control is flagged at the same level): {names(groups['supported'])}. Not testable at this power "
               f"(no violation, control missed): {names(groups['untestable'])}. Contradicted: "
               f"{names(groups['contradicted'])}.")
        for s in groups["contradicted"]:
            txt += (f" At {s.level} the audited total is >= {p(s, 'eps_lo'):.3f} against a tight total of "
                    f"{s.tight_eps:.3g} and a paper's total of {s.paper_eps:.3g} (delta {s.delta:g}).")
        reach = [p(s, "control.eps_lo") / p(s, "control.canary_eps") for s in sts if p(s, "control.canary_eps") > 0]
        best = max(sts, key=lambda s: p(s, "eps_lo"))
        txt += (f" Largest audited bound with the claimed noise: {p(best, 'eps_lo'):.3f} at {best.level} (tight "
                f"total {best.tight_eps:.3g}; the canaries' own ceiling {p(best, 'canary_eps'):.3g}). The one-run "
                f"bound recovers at most {max(reach):.0%} of the control's ceiling.")
        parts.append(txt)
    if out.get("hu") is not None and "hu_sharing.lemma1_C" in m:
        hs = [s for s in out["settings"] if s.method == "hu_sharing"]
        nb = [m[f"hu_sharing.{s.level}.noisy_b1"] for s in hs]
        parts.append(f"HU: Lemma 1's C = {m['hu_sharing.lemma1_C']:.3g} for party 1 from b_1 = "
                     f"{m['hu_sharing.b1']:.3g}, the largest ||x||, ||y||, ||z|| of the noise-free run. In the runs "
                     f"with the calibrated noise these norms reach {min(nb):.3g} to {max(nb):.3g}, "
                     f"{min(nb) / m['hu_sharing.b1']:.0f}x to {max(nb) / m['hu_sharing.b1']:.0f}x that b_1: "
                     f"Assumption 1.1 does not hold for the noisy iterates. A party's next release is its data's "
                     f"ridge map applied to the pulled sum, which carries the noise, so the canaries' own ceiling "
                     f"does not fall as the noise grows (ceiling column).")
        over = [s.level for s in hs if not m[f"hu_sharing.{s.level}.paper_testable"]]
        if over:
            parts.append(f"HU: with {m['hu_sharing.canaries']:,} canaries this audit cannot show an epsilon above "
                         f"{max(m[f'hu_sharing.{s.level}.cap'] for s in hs):.3g} (every guess correct): at "
                         f"{', '.join(over)} the paper's total lies at or above that cap, so no violation there is "
                         f"untestable, not a pass.")
    parts.append("A bound below the claim says only that these canaries and this score found no violation. The "
                 "ceiling is the tight total at the canary pair's own gap, the most any audit with these canaries "
                 "could show; the one-run bound recovers a fraction of it, and never more than its guess count "
                 "allows.")
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
