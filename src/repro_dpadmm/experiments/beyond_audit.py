"""Beyond the papers, item `audit`: an empirical privacy audit of one release of each Gaussian mechanism as this
package implements it.

For each configured mechanism (`mechanisms`: its kind, the `audit_kind` of a mechanism class with the AUDIT
capability (`kinds`), and the epsilon it claims per step), two neighbouring datasets
that differ in one worst-case canary, many trials of ONE step of the library's own code on each (the mechanism's
`audit_case`: its own calibration, update and noise draw), the threshold test and Clopper-Pearson lower bound of
`privacy.audit`, beside the epsilon the calibration claims. The same audit of a control whose noise is
`control_noise_factor` times the claimed one (0.25: 4x too small; everything else unchanged) shows the audit has the
power to catch a wrongly calibrated implementation.

Neighbours: replace-one records for the record-level mechanisms (HUANG DP-ADMM and DPSGD, XU's gradient step), the
relation of HUANG's sensitivities 2 c_1 / m, with the gradient canary of `privacy.audit.canaries` on Adult rows;
HU's own feature-level relation for its release (`mechanisms.hu2020.sharing_canary`, a9a rows).

What it cannot show: it audits one step (one release), not the composition over T iterations; it gives a lower
bound, capped near ln(trials / 3) by the trial count, so a correct mechanism's bound sits well below its claim and
says no more than "no violation found"; and it finds only what its canary and test can reach.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from ..datasets import load
from ..mechanisms import AUDIT, all_mechanisms
from ..privacy.audit.trials import AuditCase, audit_variants, check_sampling
from ..privacy.audit.two_datasets import check_audit_args, gaussian_eps, trial_cap
from ..rng import seed_sequence
from .common import dataset_status
from .progress import progress

PAPER, ITEM = "beyond", "audit"
VARIANTS = ("claimed", "control")


def kinds() -> dict[str, type]:
    """{kind: mechanism class} of every mechanism with the AUDIT capability: the config's `kind` is its
    `audit_kind`; the class names the dataset its canary pair is built from (`audit_dataset`), builds the pair
    (`audit_pair`) and its release on it (`audited`)."""
    return {cls.audit_kind: cls for cls in all_mechanisms(AUDIT).values()}


# ------------------------------------------------------------------------------------------------- parameters
def check_params(params: dict) -> None:
    """Clear errors for the audit's own settings, before any work."""
    for k in ("delta", "confidence", "trials", "calibration_trials", "control_noise_factor", "mechanisms"):
        if k not in params:
            raise ValueError(f"beyond/audit needs the parameter {k!r} (see config/config.yaml)")
    check_audit_args(float(params["delta"]), 1.0 - float(params["confidence"]), params["trials"],
                     params["calibration_trials"])
    check_sampling(params.get("sampling", "affine"))
    if not 0 < float(params["control_noise_factor"]) < 1:
        raise ValueError(f"control_noise_factor must lie in (0, 1) (0.25: noise 4x too small), "
                         f"got {params['control_noise_factor']!r}")
    known = kinds()
    for key, mech in params["mechanisms"].items():
        if mech.get("kind") not in known:
            raise ValueError(f"mechanism {key!r}: kind must be one of {sorted(known)}, got {mech.get('kind')!r}")
        if not float(mech.get("epsilon", 0)) > 0:
            raise ValueError(f"mechanism {key!r}: epsilon must be > 0, got {mech.get('epsilon')!r}")
        known[mech["kind"]].audit_check(key, mech)


def needed_datasets(params: dict) -> list[str]:
    known = kinds()
    return sorted({known[m["kind"]].audit_dataset for m in params["mechanisms"].values()})


def available_data(names) -> dict:
    """{name: (X, y)} of the datasets among `names` that are available (training rows where a test split exists)."""
    data = {}
    for name, (ok, _) in dataset_status(names).items():
        if ok:
            d = load(name)
            data[name] = (d["X"], d["y"]) if "X" in d else (d["X_train"], d["y_train"])
    return data


# ------------------------------------------------------------------------------------------------- cases
def build_cases(params: dict, seed: int, data: dict) -> tuple[dict[str, AuditCase], dict]:
    """{key: AuditCase} of every mechanism of `params["mechanisms"]` whose dataset is in `data` ({name: (X, y)}), in
    order, and {key: reason} for those skipped because their dataset is missing. Each kind's class builds the
    neighbouring pair (`audit_pair`: the gradient canary for the record-level methods, HU's feature-level canary on
    a9a; one pair per builder, dataset and warm state, shared by the kinds that use it) and its release on it
    (`audited`, with the audit's constants)."""
    check_params(params)
    known = kinds()
    out, skipped, pairs = {}, {}, {}

    def rng_of(*labels):
        return np.random.default_rng(seed_sequence(seed, PAPER, ITEM, *labels))

    for key, mech in params["mechanisms"].items():
        cls = known[mech["kind"]]
        name = cls.audit_dataset
        if name not in data:
            skipped[key] = f"dataset {name} unavailable"
            continue
        # HU: a mechanism with warm_noise audits a step from a state its own noise shaped (its own pair)
        warm = float(mech["epsilon"]) if mech.get("warm_noise") else None
        pair = (getattr(cls.audit_pair, "__func__", cls.audit_pair), name, warm)
        if pair not in pairs:
            pairs[pair] = cls.audit_pair(*data[name], params, rng_of, warm)
        out[key] = cls.audited(params, mech, pairs[pair])
    return out, skipped


def audit_one(case: AuditCase, key: str, params: dict, seed: int, variants=VARIANTS) -> dict:
    """The case with its noise as claimed and the control: {variant: VariantAudit}. Each variant draws from its own
    streams (seed, beyond, audit, key, variant)."""
    factors = {"claimed": 1.0, "control": float(params["control_noise_factor"])}
    return audit_variants(case, {v: factors[v] for v in variants}, seed=seed, labels=(PAPER, ITEM, key),
                          alpha=1.0 - float(params["confidence"]), trials=int(params["trials"]),
                          calibration_trials=int(params["calibration_trials"]), chunk=int(params.get("chunk", 50_000)),
                          sampling=params.get("sampling", "affine"))


def run(params: dict, seed: int, data: dict) -> dict:
    """Build and audit every mechanism whose dataset is available.

    {"results": {key: {"case": AuditCase, "claimed": VariantAudit, "control": VariantAudit, "build_seconds": s}},
     "skipped": {key: reason}, "params": params}.
    """
    with threadpool_limits(int(params.get("blas_threads", 1))):
        t0 = time.perf_counter()
        cases, skipped = build_cases(params, seed, data)
        build = time.perf_counter() - t0
        results = {key: {"case": case, **audit_one(case, key, params, seed), "build_seconds": build}
                   for key, case in progress(list(cases.items()), "audit", name=lambda kc: kc[0])}
    return {"results": results, "skipped": skipped, "params": params}


def run_audit(params: dict) -> dict:
    """The item: every mechanism whose dataset is available, audited (seed: params["seed"])."""
    check_params(params)
    return run(params, int(params.get("seed", 0)), available_data(needed_datasets(params)))


# ------------------------------------------------------------------------------------------------- outputs
def metrics(results: dict, params: dict) -> dict:
    """Flat metrics: per mechanism the claim, the ceilings and both audits (keys documented in
    config/claims/beyond.yaml). Ceilings that do not exist for a mechanism (not isotropic noise) are left out."""
    m = {"confidence": float(params["confidence"]), "trials": int(params["trials"]),
         "calibration_trials": int(params["calibration_trials"]),
         "control_noise_factor": float(params["control_noise_factor"]),
         "trial_cap_eps": trial_cap(int(params["trials"]), float(params["delta"]), 1 - float(params["confidence"]))}
    for key, r in results.items():
        case = r["case"]
        p = f"{key}."
        m[p + "claimed_eps"] = case.epsilon
        m[p + "delta"] = case.delta
        m[p + "sigma"] = case.sigma
        if case.sensitivity:
            m[p + "bound_eps"] = gaussian_eps(case.sigma / case.sensitivity, case.delta)
        if case.pair_distance:
            m[p + "pair_eps"] = gaussian_eps(case.sigma / case.pair_distance, case.delta)
        if case.sensitivity and case.pair_distance:
            m[p + "canary_reach"] = case.pair_distance / case.sensitivity
        m.update({p + k: v for k, v in case.extras.items()})
        if case.pair_distance and case.extras.get("lemma1_C") and "lemma1_C_state_b1" in case.extras:
            # HU: sigma is proportional to Lemma 1's C; the pair's epsilon had b_1 also bounded the warm (noisy) state
            scale = case.extras["lemma1_C_state_b1"] / case.extras["lemma1_C"]
            m[p + "pair_eps_state_b1"] = gaussian_eps(case.sigma * scale / case.pair_distance, case.delta)
        for variant in VARIANTS:
            res, q = r[variant].result, p + ("" if variant == "claimed" else "control.")
            m[q + "eps_lo"] = res.eps_lo
            m[q + "flagged"] = bool(res.eps_lo > case.epsilon)
            m[q + "fpr"] = res.fpr
            m[q + "fnr"] = res.fnr
            m[q + "seconds"] = r[variant].seconds
    return m


def metrics_audit(result: dict) -> dict:
    """write_metrics arguments: the flat metrics, and "not run" (with the reasons) when no mechanism could run."""
    return {"metrics": metrics(result["results"], result["params"]),
            "status": "ok" if result["results"] else "not run",
            "reason": "; ".join(f"{k}: {v}" for k, v in result["skipped"].items())}


def table_markdown(results: dict, m: dict) -> str:
    """Per mechanism: the claim, its ceilings and both audits, every number from the metrics."""
    fmt = lambda v: "–" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))  # noqa: E731
    lines = ["| mechanism | neighbours | claimed eps (delta) | sigma | tight eps at the bound | canary reach | "
             "eps of the canary pair | audited eps >= | FPR / FNR | 4x control: audited eps >= | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in results.items():
        case, p = r["case"], f"{key}."
        flag = lambda q: " **(violates the claim)**" if m[q + "flagged"] else ""  # noqa: E731
        lines.append(
            f"| {case.label} (`{key}`) | {case.neighbours} | {case.epsilon:g} ({case.delta:g}) | {case.sigma:.4g} | "
            f"{fmt(m.get(p + 'bound_eps'))} | {fmt(m.get(p + 'canary_reach'))} | {fmt(m.get(p + 'pair_eps'))} | "
            f"{m[p + 'eps_lo']:.3f}{flag(p)} | {m[p + 'fpr']:.2g} / {m[p + 'fnr']:.2g} | "
            f"{m[p + 'control.eps_lo']:.3f}{flag(p + 'control.')} | "
            f"{m[p + 'seconds'] + m[p + 'control.seconds']:.1f} |")
    return "\n".join(lines)


def table_audit(result: dict, m: dict) -> str:
    """The results table, each mechanism's set-up notes, and the closing text computed from the metrics."""
    results = result["results"]
    notes = [f"* `{key}`: {r['case'].label}. " + "; ".join(r["case"].notes) for key, r in results.items()]
    return "\n\n".join([table_markdown(results, m), "\n".join(notes), describe(results, result["skipped"], m)])


def plot(results: dict, m: dict):
    """Claimed epsilon, the ceilings and the audited lower bounds (with their one-sided intervals) per mechanism."""
    import matplotlib.pyplot as plt

    keys = list(results)
    fig, ax = plt.subplots(figsize=(10, 0.9 * len(keys) + 2.2))
    cap = m["trial_cap_eps"]
    left, right = 1e-2, 1.6 * max([cap] + [m[f"{k}.claimed_eps"] for k in keys])
    labelled = set()

    def lab(text):  # each legend entry once
        if text in labelled:
            return None
        labelled.add(text)
        return text

    for i, key in enumerate(keys[::-1]):
        p = f"{key}."
        ax.plot([m[p + "claimed_eps"]] * 2, [i - 0.35, i + 0.35], color="black", lw=2.5, label=lab("claimed epsilon"))
        for dy, q, color, text in ((0.14, p, "tab:blue", "audited lower bound and its interval, noise as claimed"),
                                   (-0.14, p + "control.", "tab:red", "audited lower bound, 4x control")):
            lo = max(m[q + "eps_lo"], 1.15 * left)       # a bound of 0 is drawn at the left edge
            ax.plot([lo, right], [i + dy] * 2, color=color, lw=1, alpha=0.5)
            ax.plot(lo, i + dy, "o", color=color, label=lab(text))
        if p + "bound_eps" in m:
            ax.plot(m[p + "bound_eps"], i + 0.14, "D", mfc="none", color="tab:blue", ms=8,
                    label=lab("tight epsilon of the noise at the sensitivity bound"))
        if p + "pair_eps" in m:
            ax.plot(m[p + "pair_eps"], i + 0.14, "s", mfc="none", color="tab:green",
                    label=lab("epsilon of the canary pair (the audit's ceiling)"))
    ax.axvline(cap, color="grey", ls=":", label=lab(f"largest bound {m['trials']:,} trials per dataset can give"))
    ax.set_yticks(range(len(keys)), [results[k]["case"].label for k in keys[::-1]], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_xlabel(f"epsilon at the mechanism's delta (lower bounds at {m['confidence']:.0%} confidence)")
    ax.set_title("Empirical privacy audit of one step of each Gaussian mechanism", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    return fig


def plot_audit(result: dict) -> dict:
    if not result["results"]:
        return {}
    return {"audit": plot(result["results"], metrics(result["results"], result["params"]))}


def describe(results: dict, skipped: dict, m: dict) -> str:
    """The closing text: what the audit contradicts and what it cannot show, computed from the metrics."""
    out = []
    bad = [k for k in results if m[f"{k}.flagged"]]
    ok = [k for k in results if not m[f"{k}.flagged"]]
    caught = [k for k in results if m[f"{k}.control.flagged"]]
    label = lambda k: results[k]["case"].label  # noqa: E731
    if bad:
        out.append("**The audit contradicts the claimed privacy of:** " + "; ".join(
            f"{label(k)} (claimed eps = {m[f'{k}.claimed_eps']:g}, audited eps >= {m[f'{k}.eps_lo']:.3f} at "
            f"{m['confidence']:.0%} confidence)" for k in bad) + ".")
    if ok:
        out.append("No violation found for: " + "; ".join(
            f"{label(k)} (audited eps >= {m[f'{k}.eps_lo']:.3f} against a claim of {m[f'{k}.claimed_eps']:g}"
            + (f"; the canary pair itself has eps = {m[f'{k}.pair_eps']:.3f}" if f"{k}.pair_eps" in m else "")
            + ")" for k in ok) + ".")
    out.append(f"The 4x mis-calibrated control is flagged for {len(caught)} of {len(results)} mechanisms"
               + (": " + ", ".join(f"`{k}` (eps >= {m[f'{k}.control.eps_lo']:.3f})" for k in caught) if caught else "")
               + ".")
    missed = [k for k in results if not m[f"{k}.control.flagged"]]
    for k in missed:
        reach = m.get(f"{k}.canary_reach")
        out.append(f"The control of `{k}` is not flagged" + (
            f": its canary reaches only {reach:.0%} of the sensitivity bound the calibration uses, so even 4x less "
            f"noise leaves this pair within the claim (the bound is loose or the canary search weak; the audit "
            f"cannot tell which)." if reach is not None else "."))
    for k in results:
        if m.get(f"{k}.bound_eps", 0) > m[f"{k}.claimed_eps"]:
            out.append(f"`{k}`: the tight accounting (dp-accounting PLD) of the same sigma at the worst-case "
                       f"sensitivity of the audit's neighbouring relation gives eps = {m[f'{k}.bound_eps']:.3f} > "
                       f"{m[f'{k}.claimed_eps']:g}: the calibration itself is short"
                       + (", and the audit confirms it empirically." if m[f"{k}.flagged"] else
                          "; the audit, a lower bound, does not reach it at this trial count."))
        if results[k]["case"].score_name == "subspace residual" and m[f"{k}.flagged"]:
            out.append(f"`{k}`: the released value D_m (x_m + xi) lies in the column space of D_m, which the "
                       f"neighbour changes; the subspace test tells the two datasets apart with error rates "
                       f"{m[f'{k}.fpr']:.2g} (FPR) and {m[f'{k}.fnr']:.2g} (FNR) over {m['trials']:,} trials each: "
                       f"the privacy loss is unbounded, and the bound {m[f'{k}.eps_lo']:.2f} is limited only by "
                       f"the trial count (cap {m['trial_cap_eps']:.2f})." + results[k]["case"].caveat)
    hu = next((k for k in results if f"{k}.lemma1_step_bound" in m), None)
    if hu is not None:
        gap, step, C = m[f"{hu}.share_gap"], m[f"{hu}.lemma1_step_bound"], m[f"{hu}.lemma1_C"]
        verdict = (f"the proof of Lemma 1 bounds this step by {step:.3f}, {gap / step:.1f}x less, so the proof does "
                   f"not hold as written" if gap > step else f"within the proof's per-step bound {step:.3f}")
        cover = "still covers it" if gap <= C else "does not cover it either"
        out.append(f"HU Lemma 1: the canary moves party 1's shared value by {gap:.3f} in the noise-free step; "
                   f"{verdict}. The C = {C:.3f} used for sigma (b_1 = {m[f'{hu}.b1']:.3g}, the largest norm of "
                   f"the noise-free run) {cover}.")
    if skipped:
        out.append("Not run: " + "; ".join(f"`{k}` ({v})" for k, v in skipped.items()) + ".")
    out.append(f"What this cannot show: each audit is of one step (one release), not of the composition over T "
               f"iterations; a bound below the claim means only that this canary and this test found no violation "
               f"with {m['trials']:,} trials per dataset, and no bound can exceed {m['trial_cap_eps']:.2f} at this "
               f"trial count.")
    return "\n\n".join(out)
