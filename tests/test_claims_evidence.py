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

def test_comparison_with_a_side_at_its_trivial_reference_is_degenerate():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"}])
    # b is the constant classifier's error: "a beats b" decides nothing
    v = evaluate_claim(c, {"err.a": 0.20, "err.b": 0.25, "err.const": 0.25})
    assert v.verdict == "degenerate" and v.checks[0].outcome == "degenerate"
    assert "err.b = 0.25 is no better than err.const = 0.25" in v.reason
    # both beat the reference: an honest comparison
    assert evaluate_claim(c, {"err.a": 0.15, "err.b": 0.2, "err.const": 0.25}).verdict == "reproduced"


def test_degenerate_is_judged_beyond_the_noise_and_paired():
    c = one([{"kind": "less", "left": "err.a", "right": "err.b"}])
    const = reps(0.25, 0.01, seed=1)
    # b below the constant by 0.002 but with repeats whose paired SE is larger: not better beyond the noise
    b = [x - 0.002 + 0.01 * e for x, e in zip(const, reps(0.0, 1.0, seed=2), strict=True)]
    m = {"err.a": 0.1, "err.b": float(np.mean(b)), "err.const": float(np.mean(const)),
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
    m = {"err.a": 0.2, "err.b": 0.3, "err.const": 0.25, "loss.a": 0.6, "loss.b": 0.5, "loss.x0": 0.69}
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
    assert evaluate_claim(c, {"acc.a": 0.9, "acc.b": 0.76, "acc.major": 0.76}).verdict == "degenerate"
    assert evaluate_claim(c, {"acc.a": 0.9, "acc.b": 0.8, "acc.major": 0.76}).verdict == "reproduced"


def test_the_reference_is_read_under_the_variant():
    variants = {"v": {"choice": "lr", "label": "lr 3"}}
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}]}], variants=variants)
    c = cf.claims[0]
    m = {"err.a": 0.1, "err.b": 0.2, "err.const": 0.25, "err.b@v": 0.2, "err.const@v": 0.19}
    v = evaluate_claim(c, m)
    assert v.verdict == "reproduced" and v.variants[0].verdict == "degenerate"


# ------------------------------------------------------------------------------------------------ contradicted

def _with_variant(finding):
    variants = {"v": {"choice": "lr", "label": "lr 3"}}
    cf = load([{"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "variants": ["v"],
                "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}], "finding": finding}],
              variants=variants)
    assert not cf.problems, cf.problems
    return cf.claims[0]


def test_a_paper_cause_on_a_verdict_that_changes_under_a_variant_is_contradicted():
    c = _with_variant({"when": "not reproduced", "cause": "paper", "text": "t", "evidence": ["err.a"]})
    m = {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.1}
    v = evaluate_claim(c, m)
    assert v.verdict == "not reproduced" and v.depends_on_choice == ["lr"]
    assert "the cause is a choice" in v.contradicted and not v.unexplained
    assert v.record()["contradicted"]


def test_a_choice_cause_on_a_claim_that_fails_under_every_variant_is_contradicted():
    c = _with_variant({"when": "not reproduced", "cause": "choice", "text": "t"})
    m = {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.19}
    v = evaluate_claim(c, m)
    assert v.verdict == "not reproduced" and v.variants[0].verdict == "not reproduced"
    assert "fails under the default and under every variant" in v.contradicted


def test_a_paper_cause_stands_when_every_variant_fails_in_another_way():
    """A variant that turns 'not reproduced' into 'inconclusive' does not make the claim hold: the paper cause stands
    (the verdict still depends on the choice, but no choice we tried reproduces the claim)."""
    c = _with_variant({"when": "not reproduced", "cause": "paper", "text": "t", "evidence": ["variant:v"]})
    m = {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.1501,
         "repeats": {"err.a@v": [0.16, 0.14, 0.17, 0.13], "err.b": [0.15, 0.15, 0.15, 0.15]}}
    v = evaluate_claim(c, m)
    assert v.verdict == "not reproduced" and v.variants[0].verdict == "inconclusive"
    assert v.depends_on_choice == ["lr"] and v.contradicted == ""


def test_causes_that_the_evidence_supports_are_not_contradicted():
    paper = _with_variant({"when": "not reproduced", "cause": "paper", "text": "t", "evidence": ["variant:v"]})
    m = {"err.a": 0.2, "err.b": 0.15, "err.const": 0.25, "err.a@v": 0.19}
    assert evaluate_claim(paper, m).contradicted == ""
    choice = _with_variant({"when": "not reproduced", "cause": "choice", "text": "t"})
    assert evaluate_claim(choice, {**m, "err.a@v": 0.1}).contradicted == ""


def test_a_paper_finding_without_evidence_fails_validation_with_file_and_line(tmp_path):
    from repro_dpadmm.claims import load_claims_file

    import yaml
    data = {"metrics": METRICS_DOC, "evidence": EVIDENCE, "claims": [
        {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q",
         "checks": [{"kind": "less", "left": "err.a", "right": "err.b"}],
         "finding": {"when": "not reproduced", "cause": "paper", "text": "t"}}]}
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    cf = load_claims_file(path)
    assert any("huang2019_dpadmm.yaml:" in p and "evidence" in p for p in cf.problems), cf.problems


def test_finding_evidence_must_name_keys_variants_or_tests(tmp_path):
    finding = {"when": "not reproduced", "cause": "paper", "text": "t",
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


def test_record_carries_class_contradicted_and_sources():
    c = one([{"kind": "range", "metric": "eps.tight", "max": 1.0, "from": "Theorem 1: eps = 1"}])
    rec = evaluate_claim(c, {"eps.tight": 0.9}).record()
    assert rec["class"] == "analytic" and rec["verdict"] == "holds" and rec["contradicted"] == ""
    assert rec["checks"][0]["from"] == "Theorem 1: eps = 1"
