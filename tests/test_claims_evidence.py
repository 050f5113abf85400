"""Verdicts that could have come out otherwise: evidence kinds, trivial references, causes that follow from the
evidence, thresholds with a source (config/claims/README.md). Synthetic claims and metrics only."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.claims import evaluate_check, evaluate_claim, parse_claims

EVIDENCE = {"fig1": [
    {"keys": "err.const", "kind": "measured"},
    {"keys": "loss.x0", "kind": "measured"},
    {"keys": "err.{m}", "kind": "measured", "reference": "err.const", "better": "lower"},
    {"keys": "loss.{m}", "kind": "measured", "reference": "loss.x0", "better": "lower"},
    {"keys": "eps.*", "kind": "derived"},
    {"keys": "n_train", "kind": "given"},
]}
METRICS_DOC = {"fig1": {k: "doc" for k in ("err.const", "loss.x0", "err.a", "err.b", "loss.a", "loss.b", "eps.paper",
                                           "eps.tight", "n_train")}}


def load(claims, *, evidence=None, variants=None, metrics=None):
    data = {"metrics": METRICS_DOC if metrics is None else metrics,
            "evidence": EVIDENCE if evidence is None else evidence, "claims": claims}
    if variants:
        data["variants"] = variants
    return parse_claims(data, "huang2019_dpadmm.yaml")


def one(checks, **extra):
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "checks": checks, **extra}])
    assert not cf.problems, cf.problems
    return cf.claims[0]


def reps(mean, spread=0.01, n=10, seed=0):
    x = np.random.default_rng(seed).standard_normal(n)
    return list(mean + spread * (x - x.mean()) / x.std(ddof=1))


# ------------------------------------------------------------------------------------------------ classes

def test_a_claim_on_derived_metrics_only_is_analytic_never_reproduced():
    c = one([{"kind": "less", "left": "eps.tight", "right": "eps.paper"}])
    assert c.claim_class == "analytic"
    assert evaluate_claim(c, {"eps.tight": 1.0, "eps.paper": 2.0}).verdict == "holds"
    assert evaluate_claim(c, {"eps.tight": 3.0, "eps.paper": 2.0}).verdict == "fails"


def test_a_claim_on_given_metrics_only_is_a_setup_check():
    c = one([{"kind": "equal", "metric": "n_train", "expected": 40000}])
    assert c.claim_class == "setup"
    v = evaluate_claim(c, {"n_train": 40000})
    assert v.verdict == "setup ok" and v.setup
    assert evaluate_claim(c, {"n_train": 39999}).verdict == "setup failed"


def test_one_measured_key_makes_a_measured_claim_that_can_reproduce():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"},
             {"kind": "equal", "metric": "n_train", "expected": 40000}])
    assert c.claim_class == "measured"
    assert evaluate_claim(c, {"err.a": 0.1, "err.b": 0.2, "err.const": 0.25, "n_train": 40000}).verdict == "reproduced"


def test_setup_true_forces_the_setup_class_on_measured_keys():
    c = one([{"kind": "less", "left": "err.a", "right": "err.const"}], setup=True)
    assert c.claim_class == "setup"
    assert evaluate_claim(c, {"err.a": 0.1, "err.const": 0.25}).verdict == "setup ok"


def test_variant_and_se_keys_take_their_base_keys_kind():
    cf = load([])
    assert cf.kind_of("fig1", "eps.tight@T30") == "derived"
    assert cf.kind_of("fig1", "err.a.se") == "measured"
    assert cf.kind_of("fig1", "n_train.se@v") == "given"
    assert cf.reference_of("fig1", "err.a@v") == ("err.const", "lower")


def test_patterns_first_match_wins_and_star_is_the_fallback():
    cf = load([], evidence={"*": [{"keys": "*", "kind": "given"}],
                            "fig1": [{"keys": "err.*", "kind": "measured"}]}, metrics={"fig1": {"err.a": "d"}})
    assert cf.kind_of("fig1", "err.a") == "measured" and cf.kind_of("fig1", "other") == "given"
    assert cf.kind_of("fig2", "err.a") == "given"


# ------------------------------------------------------------------------------------------------ degenerate

def test_the_side_claimed_better_at_its_trivial_reference_is_degenerate():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"}])
    # "a beats b" with a the constant classifier's error: it decides nothing
    v = evaluate_claim(c, {"err.a": 0.25, "err.b": 0.3, "err.const": 0.25})
    assert v.verdict == "degenerate" and v.checks[0].outcome == "degenerate"
    assert "err.a = 0.25 is no better than err.const = 0.25" in v.reason
    # both beat the reference: an honest comparison
    assert evaluate_claim(c, {"err.a": 0.15, "err.b": 0.2, "err.const": 0.25}).verdict == "reproduced"


def test_the_worse_side_of_an_ordering_may_sit_at_its_reference():
    """"a is better than b" is supported, not emptied, by a b no better than the constant classifier (the paper's
    'DP-AccADMM is worse at small eps' by a DP-AccADMM above F(x0)); only the side claimed better must learn."""
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"}])
    assert evaluate_claim(c, {"err.a": 0.2, "err.b": 0.25, "err.const": 0.25}).verdict == "reproduced"
    assert evaluate_claim(c, {"err.a": 0.2, "err.b": 0.4, "err.const": 0.25}).verdict == "reproduced"
    g = one([{"kind": "greater", "left": "loss.b", "right": "loss.a"}])      # the same ordering written the other way
    assert evaluate_claim(g, {"loss.a": 0.5, "loss.b": 0.9, "loss.x0": 0.69}).verdict == "reproduced"
    assert evaluate_claim(g, {"loss.a": 0.7, "loss.b": 0.9, "loss.x0": 0.69}).verdict == "degenerate"


def test_both_sides_asks_the_worse_side_to_learn_too():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b", "both_sides": True}])
    v = evaluate_claim(c, {"err.a": 0.2, "err.b": 0.4, "err.const": 0.25})
    assert v.verdict == "degenerate" and "err.b = 0.4 is no better than err.const" in v.reason


def test_a_ratio_claims_no_ordering_so_both_sides_must_learn():
    c = one([{"kind": "ratio_range", "left": "err.a", "right": "err.b", "min": 0.5, "from": "rule: r"}])
    assert evaluate_claim(c, {"err.a": 0.2, "err.b": 0.3, "err.const": 0.25}).verdict == "degenerate"


def test_degenerate_is_judged_beyond_the_noise_and_paired():
    c = one([{"kind": "less", "left": "err.b", "right": "err.a"}])
    const = reps(0.25, 0.01, seed=1)
    # b below the constant by 0.002 but with repeats whose paired SE is larger: not better beyond the noise
    b = [x - 0.002 + 0.01 * e for x, e in zip(const, reps(0.0, 1.0, seed=2), strict=True)]
    m = {"err.a": 0.4, "err.b": float(np.mean(b)), "err.const": float(np.mean(const)),
         "repeats": {"err.b": b, "err.const": const}}
    assert evaluate_claim(c, m).verdict == "degenerate"
    b_far = [x - 0.05 for x in const]        # 0.05 better in every repeat: beyond the noise
    m2 = {**m, "err.b": float(np.mean(b_far)), "repeats": {"err.b": b_far, "err.const": const}}
    assert evaluate_claim(c, m2).verdict == "reproduced"


def test_a_check_against_the_reference_itself_is_never_degenerate():
    c = one([{"kind": "less", "left": "err.a", "right": "err.const"}])
    assert evaluate_claim(c, {"err.a": 0.3, "err.const": 0.25}).verdict == "not reproduced"
    assert evaluate_claim(c, {"err.a": 0.2, "err.const": 0.25}).verdict == "reproduced"


def test_a_failing_check_beside_a_degenerate_one_still_fails_the_claim():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"}, {"kind": "less", "left": "loss.a", "right": "loss.b"}])
    m = {"err.a": 0.25, "err.b": 0.3, "err.const": 0.25, "loss.a": 0.6, "loss.b": 0.5, "loss.x0": 0.69}
    v = evaluate_claim(c, m)
    assert v.verdict == "not reproduced" and [r.outcome for r in v.checks] == ["degenerate", "fail"]


def test_monotone_needs_two_values_better_than_their_reference():
    c = one([{"kind": "monotone", "metrics": ["loss.a", "loss.b"], "direction": "decreasing"}])
    assert evaluate_claim(c, {"loss.a": 0.8, "loss.b": 0.7, "loss.x0": 0.69}).verdict == "degenerate"
    assert evaluate_claim(c, {"loss.a": 0.6, "loss.b": 0.5, "loss.x0": 0.69}).verdict == "reproduced"


def test_a_missing_reference_leaves_the_check_not_evaluated():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"}])
    v = evaluate_claim(c, {"err.a": 0.1, "err.b": 0.2})
    assert v.verdict == "not checkable" and "err.const" in v.reason


def test_higher_is_better_references():
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                "checks": [{"kind": "greater", "left": "acc.a", "right": "acc.b"}]}],
              evidence={"fig1": [{"keys": "acc.major", "kind": "measured"},
                                 {"keys": "acc.*", "kind": "measured", "reference": "acc.major", "better": "higher"}]},
              metrics={"fig1": {"acc.major": "d", "acc.a": "d", "acc.b": "d"}})
    c = cf.claims[0]
    assert evaluate_claim(c, {"acc.a": 0.76, "acc.b": 0.7, "acc.major": 0.76}).verdict == "degenerate"
    assert evaluate_claim(c, {"acc.a": 0.9, "acc.b": 0.76, "acc.major": 0.76}).verdict == "reproduced"  # b is worse
    assert evaluate_claim(c, {"acc.a": 0.9, "acc.b": 0.8, "acc.major": 0.76}).verdict == "reproduced"


def test_the_reference_is_read_under_the_variant():
    variants = {"v": {"choice": "lr", "label": "lr 3"}}
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}]}], variants=variants)
    c = cf.claims[0]
    m = {"err.a": 0.1, "err.b": 0.2, "err.const": 0.25, "err.a@v": 0.1, "err.const@v": 0.09}
    v = evaluate_claim(c, m)
    assert v.verdict == "reproduced" and v.variants[0].verdict == "degenerate"


# ------------------------------------------------------------------------------------------------ computed causes

def _with_variant(finding=None, **extra):
    variants = {"v": {"choice": "lr", "label": "lr 3"}}
    claim = {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
             "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}], **extra}
    claim["quote"] = extra.get("quote", "q")
    if finding:
        claim["finding"] = finding
    cf = load([claim], variants=variants)
    assert not cf.problems, cf.problems
    return cf.claims[0]


NOISY_V = {"err.a@v": 0.1501, "repeats": {"err.a@v": [0.16, 0.14, 0.17, 0.13], "err.b": [0.15, 0.15, 0.15, 0.15]}}


def test_failing_at_the_default_and_passing_under_a_variant_is_a_choice_naming_it():
    v = evaluate_claim(_with_variant(), {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.1})
    assert v.verdict == "not reproduced" and v.cause == "choice" and v.depends_on_choice == ["lr"]
    assert v.deciding == ["lr 3: reproduced"] and v.record()["cause"] == "choice"


def test_passing_at_the_default_and_failing_under_a_variant_is_a_choice_too():
    v = evaluate_claim(_with_variant(), {"err.a": 0.1, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.2})
    assert v.verdict == "reproduced" and v.cause == "choice" and v.deciding == ["lr 3: not reproduced"]


def test_failing_beyond_the_noise_under_every_reading_is_the_papers():
    v = evaluate_claim(_with_variant(), {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.19})
    assert v.verdict == "not reproduced" and v.variants[0].verdict == "not reproduced" and v.cause == "paper"


def test_an_analytic_claim_failing_under_every_reading_is_a_paper_inconsistency():
    c = one([{"kind": "less", "left": "eps.tight", "right": "eps.paper"}])
    assert evaluate_claim(c, {"eps.tight": 3.0, "eps.paper": 2.0}).cause == "paper-inconsistency"
    assert evaluate_claim(c, {"eps.tight": 1.0, "eps.paper": 2.0}).cause == "robust"


def test_undecided_under_every_reading_is_power_with_the_repeats_that_would_decide_it():
    reps_a, reps_b = reps(0.20, 0.02, n=10, seed=3), reps(0.21, 0.02, n=10, seed=4)
    m = {"err.a": float(np.mean(reps_a)), "err.b": float(np.mean(reps_b)), "err.const": 0.5,
         "repeats": {"err.a": reps_a, "err.b": reps_b}}
    v = evaluate_claim(_with_variant(), {**m, "err.a@v": m["err.a"] + 0.001})
    assert v.verdict == "inconclusive" and v.variants[0].verdict == "inconclusive" and v.cause == "power"
    check = v.checks[0]
    gap = m["err.b"] - m["err.a"]
    assert check.repeats_needed == int(np.ceil(10 * (2 * check.se / gap) ** 2)) > 10
    # the cheapest undecided reading: the default's check, or the variant's
    assert v.repeats_needed == min(check.repeats_needed, v.variants[0].checks[0].repeats_needed)


def test_a_failure_beside_an_undecided_reading_is_power_not_the_papers():
    c = _with_variant()
    v = evaluate_claim(c, {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, **NOISY_V})
    assert v.verdict == "not reproduced" and v.variants[0].verdict == "inconclusive" and v.cause == "power"
    assert v.deciding == ["lr 3: inconclusive"]


def test_undecided_readings_that_compare_a_model_that_does_not_learn_are_degenerate():
    c = _with_variant()
    v = evaluate_claim(c, {"err.a": 0.26, "err.b": 0.3, "err.const": 0.25, "err.a@v": 0.25})
    assert v.verdict == "degenerate" and v.cause == "degenerate"


def test_setup_checks_and_claims_not_judged_have_no_cause():
    assert evaluate_claim(one([{"kind": "equal", "metric": "n_train", "expected": 4}]), {"n_train": 4}).cause is None
    assert evaluate_claim(_with_variant(), None).cause is None


def test_a_rule_threshold_is_judged_at_both_ends_of_its_range():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b", "margin": 0.05,
              "from": "rule: a clear gap", "range": {"margin": [0.01, 0.1]}}])
    v = evaluate_claim(c, {"err.a": 0.1, "err.b": 0.18, "err.const": 0.25})
    assert v.verdict == "reproduced" and [t.verdict for t in v.thresholds] == ["reproduced", "not reproduced"]
    assert v.depends_on_threshold == ["threshold margin of checks[0]"] and v.cause == "choice"
    assert "margin = 0.1 (high end of [0.01, 0.1])" in v.deciding[0]
    wide = evaluate_claim(c, {"err.a": 0.05, "err.b": 0.18, "err.const": 0.25})
    assert wide.depends_on_threshold == [] and wide.cause == "robust"
    assert c.unranged == []


def test_checks_that_apply_one_rule_are_judged_at_its_ends_together():
    rule = {"from": "rule: much cheaper", "kind": "greater", "right": "err.b"}
    c = one([{**rule, "left": "loss.a", "margin": 0.3, "range": {"margin": [0.1, 0.5]}},
             {**rule, "left": "loss.b", "margin": 0.3, "range": {"margin": [0.2, 0.6]}}])
    v = evaluate_claim(c, {"loss.a": 0.5, "loss.b": 0.3, "err.b": 0.05, "loss.x0": 0.69, "err.const": 0.25})
    assert v.verdict == "partly" and [t.verdict for t in v.thresholds] == ["reproduced", "not reproduced"]
    assert v.thresholds[0].label == "2 checks (rule: much cheaper): margin = 0.1, 0.2 (low end of [0.1, 0.5], [0.2, 0.6])"
    assert v.cause == "choice"


def test_every_rule_at_its_lenient_and_at_its_strict_end_together():
    c = one([{"kind": "greater", "left": "loss.a", "right": "err.b", "margin": 0.3, "from": "rule: one",
              "range": {"margin": [0.1, 0.5]}},
             {"kind": "range", "metric": "loss.b", "max": 0.2, "from": "rule: two", "range": {"max": [0.1, 0.4]}}])
    v = evaluate_claim(c, {"loss.a": 0.3, "loss.b": 0.3, "err.b": 0.05, "loss.x0": 0.69, "err.const": 0.25})
    # each rule alone at its lenient end leaves the other failing; together they pass
    assert v.verdict == "not reproduced" and [t.verdict for t in v.thresholds[:4]] == [
        "partly", "not reproduced", "not reproduced", "partly"]
    assert [(t.label, t.verdict) for t in v.thresholds[4:]] == [
        ("every rule threshold at the lenient end of its range", "reproduced"),
        ("every rule threshold at the strict end of its range", "not reproduced")]
    assert v.cause == "choice"


def test_a_rule_threshold_without_a_range_is_counted_and_a_range_must_hold_its_value():
    c = one([{"kind": "range", "metric": "err.a", "max": 0.3, "from": "rule: below 0.3"}])
    assert c.unranged == ["checks[0].max"]
    paper = one([{"kind": "range", "metric": "err.a", "max": 0.3, "from": "§VI: 0.3"}])
    assert paper.unranged == []
    bad = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                 "checks": [{"kind": "range", "metric": "err.a", "max": 0.3, "from": "rule: r",
                             "range": {"max": [0.4, 0.5], "min": [0, 1]}}]}])
    text = "\n".join(bad.problems)
    assert "max = 0.3 lies outside its range [0.4, 0.5]" in text and "'min', which the check has no number" in text


# ------------------------------------------------------------------------------------------------ findings

def test_a_placeholder_is_filled_from_the_run_and_a_missing_metric_fails_validation(tmp_path):
    from repro_dpadmm.claims import load_claims_file

    import yaml
    c = _with_variant({"when": "not reproduced", "text": "a ends at {err.a:.3f} ({err.a@v}); {{literal}}"})
    v = evaluate_claim(c, {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.19})
    assert v.finding["text"] == "a ends at 0.200 (0.19); {literal}" and v.finding["cause"] == "paper"
    noted = _with_variant(note="b at {err.b:.2f}")
    assert evaluate_claim(noted, {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25}).record()["note"] == "b at 0.15"
    data = {"metrics": METRICS_DOC, "evidence": EVIDENCE, "claims": [
        {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
         "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}],
         "finding": {"when": "not reproduced", "text": "b is at {err.nope:.2f}"}}]}
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    problems = load_claims_file(path).problems
    assert any(p.startswith("huang2019_dpadmm.yaml:31:") and "{err.nope}" in p for p in problems), problems


def test_a_typed_cause_is_a_validation_error():
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}],
                "finding": {"when": "partly", "cause": "paper", "text": "t"}}])
    assert any("'cause' was unexpected" in p for p in cf.problems), cf.problems


def test_a_literal_decimal_that_a_metric_of_the_claim_holds_is_marked_typed():
    c = _with_variant({"when": "not reproduced", "text": "a ends at 0.20 against b's 0.15; the paper says 0.33"},
                      note="b's 0.151 at eps = 0.1", quote="the paper's 0.15")
    v = evaluate_claim(c, {"err.a": 0.2013, "err.b": 0.1512, "err.const": 0.25, "err.a@v": 0.1})
    # 0.15 is the quote's (the paper's number), 0.1 a setting of one significant digit: neither counts
    assert v.typed_numbers == ["0.20 (= err.a)", "0.151 (= err.b)"]
    filled = _with_variant({"when": "not reproduced", "text": "a ends at {err.a:.2f}; the paper says 0.33"})
    assert evaluate_claim(filled, {"err.a": 0.2013, "err.b": 0.15, "err.const": 0.25}).typed_numbers == []


def test_finding_evidence_must_name_keys_variants_or_tests(tmp_path):
    finding = {"when": "not reproduced", "text": "t",
               "evidence": ["nope.key", "variant:undeclared", "test:tests/no_such_file.py::t", "test:tests/real.py"]}
    data = {"metrics": METRICS_DOC, "evidence": EVIDENCE, "claims": [
        {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
         "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}], "finding": finding}]}
    claims_file = tmp_path / "config" / "claims" / "huang2019_dpadmm.yaml"     # a project whose tests/ exists
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "real.py").write_text("")
    text = "\n".join(parse_claims(data, claims_file).problems)
    assert "'nope.key' is neither" in text and "variant:undeclared" in text and "no_such_file.py" in text
    assert "real.py" not in text
    # a copy of the workflow without tests/ (the smoke project) cannot check test ids, and must still load
    (tmp_path / "tests" / "real.py").unlink()
    (tmp_path / "tests").rmdir()
    assert "no_such_file.py" not in "\n".join(parse_claims(data, claims_file).problems)


# ------------------------------------------------------------------------------------------------ across items

def test_a_claim_may_cite_another_items_metric():
    from repro_dpadmm.claims import with_cited

    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                "checks": [{"kind": "true", "metric": "beyond/audit:hu.flagged"},
                           {"kind": "less", "left": "err.a", "right": "beyond/audit_run:x.err"}]}],
              evidence={**EVIDENCE, "fig1": EVIDENCE["fig1"] + [{"keys": "beyond/*", "kind": "measured"}]})
    assert not cf.problems, cf.problems
    c = cf.claims[0]
    produced = {("beyond", "audit"): {"hu.flagged": True},
                ("beyond", "audit_run"): {"x.err": 0.3, "repeats": {"x.err": [0.29, 0.31]}}}
    m = with_cited({"err.a": 0.1, "err.const": 0.25}, c, produced)
    assert m["beyond/audit:hu.flagged"] is True and m["repeats"]["beyond/audit_run:x.err"] == [0.29, 0.31]
    assert evaluate_claim(c, m).verdict == "reproduced"
    v = evaluate_claim(c, with_cited({"err.a": 0.1, "err.const": 0.25}, c, {}))
    assert v.verdict == "not checkable" and "beyond/audit:hu.flagged" in v.reason


# ------------------------------------------------------------------------------------------------ thresholds

@pytest.mark.parametrize("check", [
    {"kind": "less", "left": "err.a", "right": "err.b", "margin": 0.01},
    {"kind": "less", "left": "err.a", "right": 0.3},
    {"kind": "range", "metric": "err.a", "min": 0.1},
    {"kind": "ratio_range", "left": "err.a", "right": "err.b", "max": 2},
    {"kind": "approx", "metric": "err.a", "expected": 0.2, "rel_tol": 0.1},
    {"kind": "monotone", "metrics": ["err.a", "err.b"], "direction": "increasing", "tol": 0.01},
])
def test_a_numeric_threshold_without_from_fails_validation(check):
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "checks": [check]}])
    assert any("from" in p for p in cf.problems), cf.problems
    ok = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                "checks": [{**check, "from": "§VI-C: 0.3"}]}])
    assert not ok.problems, ok.problems


def test_a_metric_key_without_a_kind_fails_validation_with_its_line(tmp_path):
    from repro_dpadmm.claims import load_claims_file

    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text("evidence:\n  fig1:\n    - {keys: 'err.*', kind: measured}\nmetrics:\n  fig1:\n"
                    "    err.a: doc\n    mystery: doc\nclaims: []\n")
    cf = load_claims_file(path)
    assert any(p.startswith("huang2019_dpadmm.yaml:7:") and "mystery" in p and "no evidence kind" in p
               for p in cf.problems), cf.problems


def test_a_check_key_without_a_kind_makes_the_claim_invalid():
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
                "checks": [{"kind": "true", "metric": "unknown_flag"}]}])
    assert any("'unknown_flag' has no evidence kind" in p for p in cf.problems)


@pytest.mark.parametrize("check, looser", [
    ({"kind": "ratio_range", "left": "err.a", "right": "err.b", "min": 5, "paper_threshold": [9.7, 12.9]}, True),
    ({"kind": "ratio_range", "left": "err.a", "right": "err.b", "min": 9.7, "paper_threshold": [9.7, 12.9]}, False),
    ({"kind": "range", "metric": "err.a", "max": 0.3, "paper_threshold": 0.25}, True),
    ({"kind": "less", "left": "err.a", "right": 0.3, "paper_threshold": 0.25}, True),
    ({"kind": "greater", "left": "err.a", "right": "err.b", "margin": 0.01, "paper_threshold": 0.05}, True),
    ({"kind": "greater", "left": "err.a", "right": "err.b", "margin": 0.05, "paper_threshold": 0.05}, False),
])
def test_a_threshold_looser_than_the_papers_own_is_flagged(check, looser):
    c = one([{**check, "from": "paper"}])
    v = evaluate_claim(c, {"err.a": 0.2, "err.b": 0.02, "err.const": 0.25})
    assert bool(v.looser) is looser, v.looser
    assert bool(evaluate_check({**check, "from": "paper"}, {"err.a": 1, "err.b": 1}).looser) is looser


def test_record_carries_class_cause_and_sources():
    c = one([{"kind": "range", "metric": "eps.tight", "max": 1.0, "from": "Theorem 1: eps = 1"}])
    rec = evaluate_claim(c, {"eps.tight": 0.9}).record()
    assert rec["class"] == "analytic" and rec["verdict"] == "holds" and rec["cause"] == "robust"
    assert rec["checks"][0]["from"] == "Theorem 1: eps = 1" and rec["thresholds"] == [] and rec["case"] == {}


def test_a_section_number_is_no_typed_number():
    c = _with_variant({"when": "not reproduced", "text": "Theorem 4.1 and §6.2 say otherwise"})
    assert evaluate_claim(c, {"err.a": 4.1, "err.b": 6.2, "err.const": 9.0}).typed_numbers == []


def test_a_reading_may_swap_a_setting_written_in_the_keys():
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["tol"],
                "checks": [{"kind": "range", "metric": "eps.tol0.005", "max": 20, "from": "§V: 20 updates"}]}],
              variants={"tol": {"choice": "settle tolerance", "label": "within 0.01", "replace": {"tol0.005": "tol0.01"}}},
              metrics={"fig1": {"eps.tol0.005": "d", "eps.tol0.01": "d"}})
    assert not cf.problems, cf.problems
    v = evaluate_claim(cf.claims[0], {"eps.tol0.005": 30, "eps.tol0.01": 16})
    assert v.verdict == "fails" and v.variants[0].verdict == "holds" and v.cause == "choice"
    assert evaluate_claim(cf.claims[0], {"eps.tol0.005": 30}).variants[0].verdict == "not run"


def test_a_degenerate_reading_decides_nothing_beside_decided_failures():
    v = evaluate_claim(_with_variant(), {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.3,
                                         "err.b@v": 0.4})
    assert v.verdict == "not reproduced" and v.variants[0].verdict == "degenerate" and v.cause == "paper"


def test_a_reading_in_the_keys_combines_with_a_variant_of_another_choice():
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["code", "tol"],
                "checks": [{"kind": "range", "metric": "eps.tol0.005", "max": 20, "from": "§V: 20 updates"}]}],
              variants={"tol": {"choice": "settle tolerance", "label": "within 0.01", "replace": {"tol0.005": "tol0.01"}},
                        "code": {"choice": "z-step", "label": "the code's z-step"}},
              metrics={"fig1": {"eps.tol0.005": "d", "eps.tol0.01": "d"}})
    m = {"eps.tol0.005": 30, "eps.tol0.01": 21, "eps.tol0.005@code": 25, "eps.tol0.01@code": 16}
    v = evaluate_claim(cf.claims[0], m)
    assert [(x.name, x.verdict) for x in v.variants] == [("code", "fails"), ("tol", "fails"), ("code+tol", "holds")]
    assert v.cause == "choice" and v.variants[2].choice == "z-step + settle tolerance"


def test_a_degenerate_reading_with_passing_checks_is_undecided_not_blank():
    """Default: one comparison passes, the other's better side does not learn (degenerate, nothing fails); the
    variant fails beyond the noise. The default still supports the claim in part, so the failure is not the paper's."""
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"},
                           {"kind": "less", "left": "loss.a", "right": "loss.b"}]}],
              variants={"v": {"choice": "lr", "label": "lr 3"}})
    m = {"err.a": 0.1, "err.b": 0.2, "err.const": 0.25, "loss.a": 0.7, "loss.b": 0.8, "loss.x0": 0.69,
         "err.a@v": 0.22, "loss.a@v": 0.6}
    v = evaluate_claim(cf.claims[0], m)
    assert v.verdict == "degenerate" and v.variants[0].verdict == "partly" and v.cause == "degenerate"


def test_a_reading_under_which_a_setup_check_of_the_item_fails_is_no_plausible_reading():
    from repro_dpadmm.claims import discount_implausible

    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}]},
               {"id": "huang2019_dpadmm.fig1.baseline", "item": "fig1", "quote": "the baseline learns", "setup": True,
                "variants": ["v"], "checks": [{"kind": "less", "left": "err.b", "right": "err.const"}]}],
              variants={"v": {"choice": "convention", "label": "the other convention"}})
    m = {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.2, "err.b@v": 0.3}
    claim, setup = [evaluate_claim(c, m) for c in cf.claims]
    assert claim.cause == "choice" and setup.variants[0].verdict == "setup failed"
    discount_implausible([claim, setup])
    assert claim.variants[0].implausible == "the setup check huang2019_dpadmm.fig1.baseline fails under it"
    assert claim.cause == "paper" and claim.depends_on_choice == [] and claim.record()["variants"][0]["implausible"]


def _gated(gates=None):
    """A claim over two datasets and a setup check over the same datasets (asking that the noise-free model learn),
    optionally naming the keys of the claims that rest on it."""
    setup = {"id": "huang2019_dpadmm.fig1.learns.{ds}", "over": {"ds": ["a", "b"]}, "item": "fig1",
             "quote": "the noise-free model learns", "setup": True, "variants": ["v"],
             "checks": [{"kind": "greater", "left": "acc0.{ds}", "right": "maj.{ds}"}]}
    if gates:
        setup["gates"] = gates
    return load([{"id": "huang2019_dpadmm.fig1.c.{ds}", "over": {"ds": ["a", "b"]}, "item": "fig1", "quote": "q",
                  "variants": ["v"], "checks": [{"kind": "greater", "left": "acc1.{ds}", "right": "acc2.{ds}"}]},
                 {"id": "huang2019_dpadmm.fig1.f.{ds}", "over": {"ds": ["a", "b"]}, "item": "fig1", "quote": "q",
                  "variants": ["v"], "checks": [{"kind": "less", "left": "obj1.{ds}", "right": "obj2.{ds}"}]},
                 setup],
                variants={"v": {"choice": "step", "label": "a larger step"}},
                metrics={"fig1": {"acc*": "m", "maj.*": "m", "obj*": "m"}},
                evidence={"fig1": [{"keys": k, "kind": "measured"} for k in ("acc*", "maj.*", "obj*")]})


# On case b the noise-free model sits at the majority rate at the default and learns under v; on case a it learns
# at the default and not under v.
GATED = {"acc0.a": 0.9, "maj.a": 0.8, "acc0.a@v": 0.8, "acc0.b": 0.8, "maj.b": 0.8, "acc0.b@v": 0.9,
         "acc1.a": 0.85, "acc2.a": 0.84, "acc1.b": 0.7, "acc2.b": 0.75, "acc1.a@v": 0.7, "acc1.b@v": 0.85,
         "obj1.a": 1.0, "obj2.a": 2.0, "obj1.b": 1.0, "obj2.b": 2.0}


def _judged(cf, m):
    from repro_dpadmm.claims import discount_implausible

    assert not cf.problems, cf.problems
    vs = {v.claim.id: v for v in (evaluate_claim(c, m) for c in cf.claims)}
    discount_implausible(list(vs.values()))
    return vs


def test_a_setup_check_over_cases_discounts_readings_of_its_own_case_only():
    vs = _judged(_gated(), GATED)
    c_a, c_b = vs["huang2019_dpadmm.fig1.c.a"], vs["huang2019_dpadmm.fig1.c.b"]
    assert vs["huang2019_dpadmm.fig1.learns.a"].variants[0].verdict == "setup failed"
    assert "learns.a fails under it" in c_a.variants[0].implausible
    assert c_b.variants[0].implausible == ""          # case a's failing check says nothing of case b
    assert c_b.verdict == "not reproduced"             # no gates: the default is judged as before
    assert vs["huang2019_dpadmm.fig1.f.a"].variants[0].implausible   # without gates every claim of the case


def test_a_gating_setup_check_that_fails_at_the_default_leaves_the_claims_resting_on_it_not_checkable():
    vs = _judged(_gated(["acc*"]), GATED)
    c_a, c_b = vs["huang2019_dpadmm.fig1.c.a"], vs["huang2019_dpadmm.fig1.c.b"]
    assert vs["huang2019_dpadmm.fig1.learns.b"].verdict == "setup failed"
    assert c_b.verdict == "not checkable" and "learns.b fails" in c_b.reason and "not reproduced" in c_b.reason
    assert c_b.variants[0].verdict == "reproduced" and not c_b.variants[0].implausible   # it learns under v
    assert all(t.implausible for t in c_b.thresholds)
    assert c_a.verdict == "reproduced" and c_a.variants[0].implausible                    # case a: v discounted
    f_b = vs["huang2019_dpadmm.fig1.f.b"]   # reads no gated key: judged as if the check were not there
    assert f_b.verdict == "reproduced" and not f_b.variants[0].implausible


def test_a_claim_not_over_the_checks_axis_rests_on_the_case_its_keys_name():
    cf = _gated(["acc*"])
    one_case = load([{"id": "huang2019_dpadmm.fig1.only_b", "item": "fig1", "quote": "q",
                      "checks": [{"kind": "greater", "left": "acc1.b", "right": "acc2.b"}]}],
                    metrics={"fig1": {"acc*": "m"}}, evidence={"fig1": [{"keys": "acc*", "kind": "measured"}]})
    cf.claims += one_case.claims
    vs = _judged(cf, GATED)
    assert vs["huang2019_dpadmm.fig1.only_b"].verdict == "not checkable"
    assert "learns.b" in vs["huang2019_dpadmm.fig1.only_b"].reason and "learns.a" not in \
        vs["huang2019_dpadmm.fig1.only_b"].reason


def test_gates_belong_to_setup_checks():
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "gates": ["acc*"],
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}]}])
    assert any("gates" in p for p in cf.problems)


def test_a_variant_with_its_rule_at_the_lenient_end_is_a_reading():
    """A setting and a threshold open at once: the default fails, the variant fails at the written threshold, and
    the variant passes with the rule at the lenient end of its range: the failure is not the paper's."""
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
                "checks": [{"kind": "range", "metric": "loss.a", "max": 2, "from": "rule: within 2",
                            "range": {"max": [1.5, 4]}}]}],
              variants={"v": {"choice": "step", "label": "a smaller step"}})
    assert not cf.problems, cf.problems
    v = evaluate_claim(cf.claims[0], {"loss.a": 5.0, "loss.x0": 9.0, "loss.a@v": 3.0})
    assert v.verdict == "not reproduced" and v.variants[0].verdict == "not reproduced"
    combo = {t.name: t.verdict for t in v.thresholds}
    assert combo["v+all@lenient"] == "reproduced" and combo["v+all@strict"] == "not reproduced"
    assert v.cause == "choice"
    w = evaluate_claim(cf.claims[0], {"loss.a": 5.0, "loss.x0": 9.0, "loss.a@v": 4.5})
    assert w.cause == "paper"      # no reading passes, the variant at the lenient end included
