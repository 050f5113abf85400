"""Claims files: the validator and the verdict logic, on synthetic metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repro_dpadmm.paths import project_root
from repro_dpadmm.report.claims import (ClaimsError, evaluate_check, evaluate_claim, flatten, fmt, parse_claims,
                                        validate_claims_file)

ROOT = project_root(Path(__file__).parent)


def claim(checks, **extra):
    raw = {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "checks": checks, **extra}
    cf = parse_claims({"claims": [raw]}, "huang2019_dpadmm.yaml")
    assert len(cf.claims) == 1, cf.problems
    return cf.claims[0], cf


def verdict(checks, metrics, **kw):
    c, _ = claim(checks)
    return evaluate_claim(c, metrics, **kw)


# ------------------------------------------------------------------------------------------------- check kinds

@pytest.mark.parametrize("value, passed", [(0.10, True), (0.119, True), (0.081, True), (0.0799, False),
                                           (0.1201, False)])
def test_approx_abs_tolerance_edges(value, passed):
    r = evaluate_check({"kind": "approx", "metric": "m", "expected": 0.1, "abs_tol": 0.02}, {"m": value})
    assert r.passed is passed


def test_approx_edge_is_inclusive_and_rel_tol_scales_with_expected():
    # exactly at the tolerance passes (<=); rel_tol is relative to |expected|
    assert evaluate_check({"kind": "approx", "metric": "m", "expected": 4.0, "abs_tol": 0.5}, {"m": 4.5}).passed
    assert evaluate_check({"kind": "approx", "metric": "m", "expected": 4.0, "abs_tol": 0.5}, {"m": 4.5001}).passed \
        is False
    chk = {"kind": "approx", "metric": "m", "expected": -200.0, "rel_tol": 0.1}
    assert evaluate_check(chk, {"m": -180.0}).passed
    assert evaluate_check(chk, {"m": -179.0}).passed is False
    # both given: the looser one counts
    chk = {"kind": "approx", "metric": "m", "expected": 1.0, "rel_tol": 0.01, "abs_tol": 0.1}
    assert evaluate_check(chk, {"m": 1.09}).passed


def test_less_greater_margin_and_numeric_right():
    assert evaluate_check({"kind": "less", "left": "a", "right": "b"}, {"a": 1, "b": 2}).passed
    assert evaluate_check({"kind": "less", "left": "a", "right": "b"}, {"a": 2, "b": 2}).passed is False
    assert evaluate_check({"kind": "less", "left": "a", "right": "b", "margin": 1}, {"a": 1, "b": 2}).passed is False
    assert evaluate_check({"kind": "less", "left": "a", "right": 0.25}, {"a": 0.2}).passed
    close = evaluate_check({"kind": "less", "left": "a", "right": "b"}, {"a": 0.150004, "b": 0.150001})
    assert close.passed is False and close.measured == "0.150004 vs 0.150001"  # digits enough to see why
    assert evaluate_check({"kind": "greater", "left": "a", "right": "b", "margin": 0.5}, {"a": 3, "b": 2.4}).passed
    assert evaluate_check({"kind": "greater", "left": "a", "right": "b", "margin": 0.5}, {"a": 3, "b": 2.5}).passed \
        is False


def test_monotone_strict_and_tolerance():
    inc = {"kind": "monotone", "metrics": ["a", "b", "c"], "direction": "increasing"}
    assert evaluate_check(inc, {"a": 1, "b": 1, "c": 2}).passed
    assert evaluate_check({**inc, "strict": True}, {"a": 1, "b": 1, "c": 2}).passed is False
    assert evaluate_check(inc, {"a": 1, "b": 0.99, "c": 2}).passed is False
    assert evaluate_check({**inc, "tol": 0.02}, {"a": 1, "b": 0.99, "c": 2}).passed
    dec = {"kind": "monotone", "metrics": ["a", "b"], "direction": "decreasing"}
    assert evaluate_check(dec, {"a": 2, "b": 1}).passed and not evaluate_check(dec, {"a": 1, "b": 2}).passed


def test_range_true_false_equal_ratio():
    assert evaluate_check({"kind": "range", "metric": "m", "min": 0, "max": 1}, {"m": 1}).passed
    assert evaluate_check({"kind": "range", "metric": "m", "min": 0, "max": 1}, {"m": 1.01}).passed is False
    assert evaluate_check({"kind": "range", "metric": "m", "min": 5}, {"m": 4}).passed is False
    assert evaluate_check({"kind": "true", "metric": "m"}, {"m": True}).passed
    assert evaluate_check({"kind": "true", "metric": "m"}, {"m": False}).passed is False
    assert evaluate_check({"kind": "false", "metric": "m"}, {"m": False}).passed
    assert evaluate_check({"kind": "equal", "metric": "m", "expected": 45223}, {"m": 45222}).passed is False
    assert evaluate_check({"kind": "equal", "metric": "m", "expected": 105}, {"m": 105.0}).passed
    assert evaluate_check({"kind": "equal", "metric": "m", "expected": "per_row"}, {"m": "per_row"}).passed
    assert evaluate_check({"kind": "equal", "metric": "m", "expected": 1}, {"m": True}).passed is False
    r = evaluate_check({"kind": "ratio_range", "left": "a", "right": "b", "min": 10, "max": 13}, {"a": 67.2, "b": 5.2})
    assert r.passed and "12.92" in r.measured
    assert evaluate_check({"kind": "ratio_range", "left": "a", "right": "b", "min": 10}, {"a": 5, "b": 1}).passed \
        is False


@pytest.mark.parametrize("metrics, needle", [
    ({}, "'m' is missing"),
    ({"m": None}, "null"),
    ({"m": "abc"}, "not a number"),
    ({"m": True}, "not a number"),
])
def test_unusable_values_are_not_evaluated(metrics, needle):
    r = evaluate_check({"kind": "range", "metric": "m", "max": 1}, metrics)
    assert r.passed is None and needle in r.reason


def test_ratio_with_zero_denominator_is_not_evaluated():
    r = evaluate_check({"kind": "ratio_range", "left": "a", "right": "b", "min": 1}, {"a": 1, "b": 0})
    assert r.passed is None and "denominator is 0" in r.reason


# ----------------------------------------------------------------------------------------------------- verdicts

def test_each_verdict_kind():
    lt = {"kind": "less", "left": "a", "right": "b"}
    gt = {"kind": "greater", "left": "a", "right": "b"}
    m = {"status": "ok", "reason": "", "a": 1.0, "b": 2.0}
    assert verdict([lt], m).verdict == "reproduced"
    assert verdict([lt, gt], m).verdict == "partly"
    v = verdict([gt], m)
    assert v.verdict == "not reproduced" and "measured 1 vs 2" in v.reason
    assert verdict([lt], {"status": "not run", "reason": "dataset unavailable (gisette)"}).verdict == "not run"
    v = verdict([lt], None, missing_reason="item missing: no results")
    assert v.verdict == "not run" and v.reason == "item missing: no results"
    c, _ = claim([], not_checkable="a rate with unknown constants")
    v = evaluate_claim(c, m)
    assert v.verdict == "not checkable" and v.reason == "a rate with unknown constants"


def test_missing_metric_gives_not_checkable_naming_the_key_never_a_crash():
    v = verdict([{"kind": "less", "left": "a", "right": "b"}, {"kind": "true", "metric": "ok"}],
                {"status": "ok", "a": 1.0})
    assert v.verdict == "not checkable"
    assert "'b' is missing" in v.reason and "'ok' is missing" in v.reason
    # a partial result never turns into "reproduced" on the checks that did evaluate
    v = verdict([{"kind": "less", "left": "a", "right": 2}, {"kind": "true", "metric": "ok"}], {"a": 1.0})
    assert v.verdict == "not checkable"


def test_missing_metric_in_an_item_lacking_a_dataset_is_not_run():
    c, _ = claim([{"kind": "range", "metric": "acc.bio_train", "min": 0.5}])
    v = evaluate_claim(c, {"status": "ok"}, unavailable={"bio_train": "could not obtain it\n  tried: ..."})
    assert v.verdict == "not run" and "bio_train" in v.reason
    c, _ = claim([{"kind": "range", "metric": "acc.bio_train", "min": 0.5}], datasets=["bio_train"])
    v = evaluate_claim(c, {"status": "ok", "acc.bio_train": 0.9}, unavailable={"bio_train": "could not obtain it"})
    assert v.verdict == "not run" and "could not obtain it" in v.reason


def test_record_has_the_report_fields():
    v = verdict([{"kind": "approx", "metric": "a", "expected": 0.08, "abs_tol": 0.02}], {"a": 0.0812},)
    rec = v.record()
    for key in ("id", "paper", "item", "quote", "expected", "measured", "verdict", "reason"):
        assert key in rec
    assert rec["verdict"] == "reproduced" and rec["paper"] == "huang2019_dpadmm" and rec["item"] == "fig1"
    assert "0.08 ± 0.02" in rec["expected"] and "a = 0.0812" in rec["measured"]


def test_fmt_and_flatten():
    assert fmt(45222) == "45,222" and fmt(0.08123456) == "0.08123"
    assert fmt(1e-4) == "0.0001" and fmt(2.5e-6) == "2.5e-06"
    assert fmt(True) == "true" and fmt(None) == "null" and fmt(3.0) == "3"
    assert flatten({"arrays": {"X": [45222, 104]}, "available": True}) == {
        "arrays.X.0": 45222, "arrays.X.1": 104, "available": True}


# ---------------------------------------------------------------------------------------------------- validator

BAD = [
    ({"claims": [{"id": "nodots", "item": "fig1", "quote": "q", "checks": []}]}, "id must look like"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "checks": [{"kind": "true", "metric": "x"}]}]},
     "quote is required"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig2", "quote": "q",
                  "checks": [{"kind": "true", "metric": "x"}]}]}, "middle part 'fig1' must be the item 'fig2'"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "nearly", "metric": "x"}]}]}, "unknown check kind 'nearly'"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "approx", "metric": "x", "expected": 1}]}]},
     "approx needs rel_tol and/or abs_tol"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "less", "left": "x"}]}]}, "needs field(s) right"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "monotone", "metrics": ["x"], "direction": "up"}]}]}, "at least two metric keys"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "range", "metric": "x", "min": 2, "max": 1}]}]}, "greater than max"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q", "checks": []}]},
     "checks: [] with not_checkable"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q", "chekcs": []}]},
     "unknown field(s) chekcs"),
    ({"claims": [{"id": "hu2020_sharing.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "true", "metric": "x"}]}]}, "must start with the paper of its file"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "true", "metric": "x"}]}] * 2}, "used more than once"),
    ({"metrics": {"fig1": {"a": "doc"}}, "claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                                                     "checks": [{"kind": "true", "metric": "b"}]}]},
     "metric 'b' is not documented under metrics.fig1"),
    ({"clams": []}, "unknown top-level key(s) clams"),
    ([1, 2], "the top level must be a mapping"),
]


@pytest.mark.parametrize("data, message", BAD, ids=[m for _, m in BAD])
def test_validator_rejects_malformed_claims_with_a_clear_message(tmp_path, data, message):
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ClaimsError) as exc:
        validate_claims_file(path)
    assert message in str(exc.value)
    assert "huang2019_dpadmm.yaml" in str(exc.value)


def test_validator_rejects_bad_yaml(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("claims: [unclosed")
    with pytest.raises(ClaimsError, match="not valid YAML"):
        validate_claims_file(path)


def test_malformed_claim_is_reported_not_checkable_not_a_crash():
    cf = parse_claims({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                                   "checks": [{"kind": "less", "left": "x"}]}]}, "huang2019_dpadmm.yaml")
    assert cf.problems and cf.claims
    v = evaluate_claim(cf.claims[0], {"x": 1})
    assert v.verdict == "not checkable" and "malformed claim" in v.reason and "right" in v.reason


def test_dataset_claim_format():
    cf = parse_claims({"claims": [{"id": "zhang2018_madmm.data.size", "source": "dataset:adult_zhang2018",
                                   "quote": "45,223 individuals",
                                   "checks": [{"kind": "equal", "metric": "arrays.X.0", "expected": 45223}]}]},
                      "datasets.yaml")
    assert not cf.problems
    c = cf.claims[0]
    assert c.dataset == "adult_zhang2018" and c.item is None and c.paper == "zhang2018_madmm"
    v = evaluate_claim(c, flatten({"arrays": {"X": [45222, 105]}}))
    assert v.verdict == "not reproduced" and "45,222" in v.reason
    bad = parse_claims({"claims": [{"id": "zhang2018_madmm.data.size", "source": "adult", "quote": "q",
                                    "checks": [{"kind": "true", "metric": "x"}]}]}, "datasets.yaml")
    assert any("source must be 'dataset:<name>'" in p for p in bad.problems)


def test_every_claims_file_in_the_repository_is_valid():
    files = sorted((ROOT / "config" / "claims").glob("*.yaml"))
    assert files, "config/claims/ has no claims files"
    for path in files:
        validate_claims_file(path)  # raises ClaimsError listing every problem


def test_unknown_fields_warn_but_the_claim_is_still_evaluated(tmp_path):
    data = {"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q", "comment": "x",
                        "paper_value": [0.08, 0.1],
                        "checks": [{"kind": "less", "left": "a", "right": 1, "strict": True}]}]}
    cf = parse_claims(data, "huang2019_dpadmm.yaml")
    assert not cf.problems and len(cf.warnings) == 2
    assert evaluate_claim(cf.claims[0], {"a": 0.5}).verdict == "reproduced"
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ClaimsError, match="unknown field"):
        validate_claims_file(path)
