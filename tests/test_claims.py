"""Claims files: the validator and the verdict logic, on synthetic metrics."""

from __future__ import annotations

import re

from pathlib import Path

import numpy as np
import pytest
import yaml

from repro_dpadmm.paths import project_root
from repro_dpadmm.claims import (ClaimsError, claims_paths, evaluate_check, evaluate_claim, flatten, fmt,
                                        parse_claims, validate_claims_file)

ROOT = project_root(Path(__file__).parent)
# Every key of these synthetic files is a measured one (the evidence kinds have tests of their own,
# tests/test_claims_evidence.py).
MEASURED = {"*": [{"keys": "*", "kind": "measured"}]}


def measured(data):
    """A synthetic claims mapping with every metric key measured (unless it says otherwise)."""
    return {"evidence": MEASURED, **data} if isinstance(data, dict) else data


def claim(checks, **extra):
    checks = [{"from": "a test threshold", **c} for c in checks]     # `from:` has tests of its own
    raw = {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "checks": checks, **extra}
    cf = parse_claims(measured({"claims": [raw]}), "huang2019_dpadmm.yaml")
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
    assert fmt(1.00001) == "1.00001" and fmt(0.999999) == "0.999999"      # never shown as sitting on a bound of 1
    assert fmt(1 + 1e-13) == "1"                                          # round-off stays invisible
    assert flatten({"arrays": {"X": [45222, 104]}, "available": True}) == {
        "arrays.X.0": 45222, "arrays.X.1": 104, "available": True}


# ---------------------------------------------------------------------------------------------------- validator

BAD = [
    ({"claims": [{"id": "nodots", "item": "fig1", "quote": "q", "checks": []}]}, "'nodots' does not match"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "checks": [{"kind": "true", "metric": "x"}]}]},
     "'quote' is a required property"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig2", "quote": "q",
                  "checks": [{"kind": "true", "metric": "x"}]}]}, "middle part 'fig1' must be the item 'fig2'"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "nearly", "metric": "x"}]}]}, "'nearly' is not one of"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "approx", "metric": "x", "expected": 1}]}]},
     "approx needs rel_tol and/or abs_tol"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "less", "left": "x"}]}]}, "checks[0]: 'right' is a required property"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "monotone", "metrics": ["x"], "direction": "up"}]}]}, "['x'] is too short"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "range", "metric": "x", "min": 2, "max": 1, "from": "f"}]}]}, "greater than max"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q", "checks": []}]},
     "or checks: [] with not_checkable saying why"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q", "chekcs": []}]},
     "Unknown fields are not allowed ('chekcs' was unexpected)"),
    ({"claims": [{"id": "hu2020_sharing.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "true", "metric": "x"}]}]}, "must start with the paper of its file"),
    ({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",   # two copies, not one object twice
                  "checks": [{"kind": "true", "metric": "x"}]} for _ in range(2)]}, "used more than once"),
    ({"metrics": {"fig1": {"a": "doc"}}, "claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                                                     "checks": [{"kind": "true", "metric": "b"}]}]},
     "metric 'b' is not documented under metrics.fig1"),
    # one setting's value read directly: the base key documented, but the setting no declared variant
    ({"metrics": {"fig1": {"a": "doc"}}, "variants": {"v1": {"choice": "T", "label": "T = 1"}},
      "claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                  "checks": [{"kind": "less", "left": "a@v1", "right": "a@v2"}]}]},
     "metric 'a@v2' names no declared variant 'v2'"),
    ({"clams": []}, "top level: Unknown fields are not allowed ('clams'"),
    ([1, 2], "[1, 2] is not of type 'object'"),
]


@pytest.mark.parametrize("data, message", BAD, ids=[m for _, m in BAD])
def test_validator_rejects_malformed_claims_with_a_clear_message(tmp_path, data, message):
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text(yaml.safe_dump(measured(data)))
    with pytest.raises(ClaimsError) as exc:
        validate_claims_file(path)
    assert message in str(exc.value)
    assert "huang2019_dpadmm.yaml" in str(exc.value)


def test_validator_rejects_bad_yaml_naming_file_and_line(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("claims:\n  - id: x.y.z\n    quote: [unclosed\n")
    with pytest.raises(ClaimsError, match=r"x\.yaml:4: not valid YAML"):
        validate_claims_file(path)


def test_schema_violations_name_the_line_of_the_offending_node(tmp_path):
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text("""metrics:
  fig1: {a: "doc"}
claims:
  - id: huang2019_dpadmm.fig1.ok
    item: fig1
    quote: q
    checks: [{kind: less, left: a, right: 1}]
  - id: huang2019_dpadmm.fig1.bad
    item: fig1
    quote: q
    checks:
      - {kind: less, left: a, right: 1}
      - kind: range
        metric: a
        mni: 0
    finding: {when: partly, cause: luck, text: t}
""")
    with pytest.raises(ClaimsError) as exc:
        validate_claims_file(path)
    text = str(exc.value)
    assert "huang2019_dpadmm.yaml:13: claims[1] (id 'huang2019_dpadmm.fig1.bad').checks[1]" in text
    assert "range and ratio_range need min and/or max" in text
    assert "'mni' was unexpected" in text
    assert "huang2019_dpadmm.yaml:16: claims[1] (id 'huang2019_dpadmm.fig1.bad').finding" in text


def test_duplicate_yaml_keys_are_errors(tmp_path):
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text("claims:\n  - id: huang2019_dpadmm.fig1.a\n    item: fig1\n    quote: q\n    quote: r\n"
                    "    checks: [{kind: true, metric: x}]\n")
    with pytest.raises(ClaimsError,
                       match=r"huang2019_dpadmm\.yaml:5: key 'quote' appears twice in one mapping \(first on line 4\)"):
        validate_claims_file(path)


def test_a_malformed_claims_file_has_no_claims_only_problems():
    cf = parse_claims(measured({"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q",
                                   "checks": [{"kind": "less", "left": "x"}]}]}), "huang2019_dpadmm.yaml")
    assert cf.problems and not cf.claims
    assert "'right' is a required property" in cf.problems[0]


def test_dataset_claim_format():
    cf = parse_claims(measured({"claims": [{"id": "zhang2018_madmm.data.size", "source": "dataset:adult_zhang2018",
                                   "quote": "45,223 individuals",
                                   "checks": [{"kind": "equal", "metric": "arrays.X.0", "expected": 45223}]}]}),
                      "datasets.yaml")
    assert not cf.problems
    c = cf.claims[0]
    assert c.dataset == "adult_zhang2018" and c.item is None and c.paper == "zhang2018_madmm"
    v = evaluate_claim(c, flatten({"arrays": {"X": [45222, 105]}}))
    assert v.verdict == "not reproduced" and "45,222" in v.reason
    bad = parse_claims(measured({"claims": [{"id": "zhang2018_madmm.data.size", "source": "adult", "quote": "q",
                                    "checks": [{"kind": "true", "metric": "x"}]}]}), "datasets.yaml")
    assert any("'adult' does not match '^dataset:" in p for p in bad.problems)


def test_every_claims_file_in_the_repository_is_valid():
    files = claims_paths(ROOT / "config" / "claims")
    assert files, "config/claims/ has no claims files"
    for path in files:
        validate_claims_file(path)  # raises ClaimsError listing every problem


def test_unknown_fields_are_errors_at_every_level():
    data = {"claims": [{"id": "huang2019_dpadmm.fig1.a", "item": "fig1", "quote": "q", "comment": "x",
                        "paper_value": [0.08, 0.1],
                        "checks": [{"kind": "less", "left": "a", "right": 1, "from": "f", "strict": True}]}],
            "variants": {"v": {"choice": "c", "label": "l", "colour": "red"}},
            "items": {"fig1": {"title": "t", "captoin": "c"}}}
    cf = parse_claims(measured(data), "huang2019_dpadmm.yaml")
    text = "\n".join(cf.problems)
    assert not cf.claims and len(cf.problems) == 4, text
    for name in ("comment", "strict", "colour", "captoin"):
        assert f"'{name}' was unexpected" in text


def test_every_field_of_the_schema_is_described():
    schema = yaml.safe_load((ROOT / "config" / "claims" / "claims.schema.yaml").read_text())
    missing = []

    def walk(node, path):
        if isinstance(node, dict):
            for name, sub in (node.get("properties") or {}).items():
                if isinstance(sub, dict) and "description" not in sub and "$ref" not in sub:
                    missing.append(f"{path}.properties.{name}")
            for key, sub in node.items():
                if key not in ("if", "then", "else"):   # constraints on fields described elsewhere
                    walk(sub, f"{path}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{path}[{i}]")

    walk(schema, "schema")
    assert schema["$schema"].endswith("2020-12/schema") and missing == []


# --------------------------------------------------------------------------------------- noise: SE-aware checks

def reps(mean: float, se: float, n: int = 10, shift: int = 0) -> list[float]:
    """n values whose mean is `mean` and whose standard error std(ddof=1)/sqrt(n) is exactly `se`."""
    u = np.roll(np.arange(n, dtype=float), shift)
    u = (u - u.mean()) / u.std(ddof=1)
    return list(mean + se * np.sqrt(n) * u)


def noisy(**series) -> dict:
    """Flat metrics with the means of the given per-repeat series plus their `repeats`."""
    return {**{k: float(np.mean(v)) for k, v in series.items()}, "repeats": {k: list(v) for k, v in series.items()}}


def test_reps_helper_has_the_asked_standard_error():
    v = np.array(reps(0.5, 0.01))
    assert v.mean() == pytest.approx(0.5) and v.std(ddof=1) / np.sqrt(v.size) == pytest.approx(0.01)


@pytest.mark.parametrize("right, outcome", [(0.51, "inconclusive"), (0.49, "inconclusive"),   # 1 SE either side
                                            (0.55, "pass"), (0.45, "fail")])                 # 5 SE: decided
def test_a_difference_of_one_se_is_inconclusive_and_of_five_is_decided(right, outcome):
    r = evaluate_check({"kind": "less", "left": "a", "right": right}, noisy(a=reps(0.5, 0.01)))
    assert r.outcome == outcome and r.se == pytest.approx(0.01) and not r.paired
    assert r.passed is {"pass": True, "fail": False, "inconclusive": None}[outcome]
    if outcome == "inconclusive":
        assert "within 2 SE" in r.reason


def test_greater_with_margin_against_the_noise():
    m = noisy(a=reps(0.60, 0.01))
    assert evaluate_check({"kind": "greater", "left": "a", "right": 0.5, "margin": 0.05}, m).outcome == "pass"
    # margin moves the bar: 0.60 - (0.5 + 0.09) = 1 SE
    assert evaluate_check({"kind": "greater", "left": "a", "right": 0.5, "margin": 0.09}, m).outcome == "inconclusive"


def test_paired_comparison_uses_the_paired_standard_error():
    rng = np.random.default_rng(0)
    common = rng.normal(0.0, 0.05, size=12)            # shared split / noise stream: large, cancels in a - b
    a = 0.40 + common + rng.normal(0.0, 0.002, size=12)
    b = 0.41 + common + rng.normal(0.0, 0.002, size=12)
    m = noisy(a=a, b=b)
    r = evaluate_check({"kind": "less", "left": "a", "right": "b"}, m)
    paired_se = np.std(a - b, ddof=1) / np.sqrt(12)
    assert r.paired and r.se == pytest.approx(paired_se) and r.outcome == "pass"
    # the same numbers judged as independent: the shared noise swamps the 0.01 difference
    r = evaluate_check({"kind": "less", "left": "a", "right": "b", "paired": False}, m)
    unpaired_se = np.hypot(np.std(a, ddof=1), np.std(b, ddof=1)) / np.sqrt(12)
    assert not r.paired and r.se == pytest.approx(unpaired_se) and r.outcome == "inconclusive"


def test_repeats_of_different_lengths_are_not_paired():
    m = noisy(a=reps(0.5, 0.01, 10), b=reps(0.53, 0.01, 8))
    r = evaluate_check({"kind": "less", "left": "a", "right": "b"}, m)
    assert not r.paired and r.se == pytest.approx(np.hypot(0.01, 0.01))
    assert r.outcome == "pass"  # 0.03 > 2 * 0.01414


def test_se_keys_and_exact_operands():
    # `.se` keys combine as independent errors
    m = {"a": 0.50, "a.se": 0.006, "b": 0.515, "b.se": 0.008}
    r = evaluate_check({"kind": "less", "left": "a", "right": "b"}, m)
    assert r.se == pytest.approx(0.01) and r.outcome == "inconclusive" and "± 0.01 SE" in r.measured
    # only one side noisy: its SE alone
    r = evaluate_check({"kind": "less", "left": "a", "right": "c"}, {"a": 0.5, "a.se": 0.01, "c": 0.6})
    assert r.se == pytest.approx(0.01) and r.outcome == "pass"
    # no noise information: exact, as before (a tie fails `less`)
    r = evaluate_check({"kind": "less", "left": "a", "right": "b"}, {"a": 0.5, "b": 0.5})
    assert r.outcome == "fail" and r.se is None and r.z is None
    # a single repeat says nothing about the noise: exact
    r = evaluate_check({"kind": "less", "left": "a", "right": 0.6}, noisy(a=[0.5]))
    assert r.se is None and r.outcome == "pass"


def test_z_setting_per_check_and_per_file():
    m = noisy(a=reps(0.5, 0.01))
    chk = {"kind": "less", "left": "a", "right": 0.53, "from": "f"}       # 3 SE
    assert evaluate_check(chk, m).outcome == "pass"
    assert evaluate_check({**chk, "z": 4}, m).outcome == "inconclusive"
    assert evaluate_check(chk, m, z=4).outcome == "inconclusive"
    assert evaluate_check({**chk, "z": 2}, m, z=4).outcome == "pass"   # the check's own z wins
    cf = parse_claims({"evidence": MEASURED, "settings": {"noise_z": 4}, "claims": [
        {"id": "huang2019_dpadmm.fig1.c", "item": "fig1", "quote": "q", "checks": [chk]}]}, "huang2019_dpadmm.yaml")
    assert not cf.problems and cf.claims[0].noise_z == 4
    v = evaluate_claim(cf.claims[0], m)
    assert v.verdict == "inconclusive" and v.checks[0].z == 4


def test_monotone_judges_every_step_against_its_noise():
    inc = {"kind": "monotone", "metrics": ["a", "b", "c"], "direction": "increasing"}
    # steps of 5 SE each (paired SE 0.01 * sqrt(2) for independent-looking shifted repeats): pass
    m = noisy(a=reps(0.40, 0.01), b=reps(0.50, 0.01, shift=3), c=reps(0.60, 0.01, shift=6))
    r = evaluate_check(inc, m)
    assert r.outcome == "pass" and r.paired
    # one step inside the noise: inconclusive, naming it
    m = noisy(a=reps(0.40, 0.01), b=reps(0.50, 0.01, shift=3), c=reps(0.505, 0.01, shift=6))
    r = evaluate_check(inc, m)
    assert r.outcome == "inconclusive" and "b → c" in r.reason
    # one step the wrong way beyond the noise: fail, even with another step inconclusive
    m = noisy(a=reps(0.40, 0.01), b=reps(0.30, 0.01, shift=3), c=reps(0.305, 0.01, shift=6))
    assert evaluate_check(inc, m).outcome == "fail"
    # tol is a margin on each step: going down by 0.1 with tol 0.2 is fine beyond the noise
    m = noisy(a=reps(0.40, 0.01), b=reps(0.30, 0.01, shift=3), c=reps(0.40, 0.01, shift=6))
    assert evaluate_check({**inc, "tol": 0.2}, m).outcome == "pass"


@pytest.mark.parametrize("kind_fields, value, outcome", [
    ({"kind": "range", "min": 0.4, "max": 0.6}, 0.50, "pass"),
    ({"kind": "range", "min": 0.4, "max": 0.6}, 0.59, "inconclusive"),   # 0.59 + 2 SE crosses 0.6
    ({"kind": "range", "min": 0.4, "max": 0.6}, 0.65, "fail"),           # 0.65 - 2 SE still above
    ({"kind": "range", "min": 0.4}, 0.39, "inconclusive"),
    ({"kind": "approx", "expected": 0.5, "abs_tol": 0.05}, 0.52, "pass"),
    ({"kind": "approx", "expected": 0.5, "abs_tol": 0.05}, 0.56, "inconclusive"),
    ({"kind": "approx", "expected": 0.5, "abs_tol": 0.05}, 0.60, "fail"),
])
def test_range_and_approx_judge_value_plus_minus_z_se(kind_fields, value, outcome):
    r = evaluate_check({**kind_fields, "metric": "m"}, noisy(m=reps(value, 0.01)))
    assert r.outcome == outcome, r


def test_ratio_range_delta_method_se():
    m = {"a": 10.0, "a.se": 0.5, "b": 5.0, "b.se": 0.1}
    r = evaluate_check({"kind": "ratio_range", "left": "a", "right": "b", "min": 1.9, "max": 2.1}, m)
    se = 2.0 * np.hypot(0.5 / 10.0, 0.1 / 5.0)
    assert r.se == pytest.approx(se) and r.outcome == "inconclusive"
    r = evaluate_check({"kind": "ratio_range", "left": "a", "right": "b", "min": 1.0, "max": 3.0}, m)
    assert r.outcome == "pass"
    # paired: a_i = 2 b_i exactly, so the ratio has no noise at all whatever the spread of b
    b = np.array(reps(5.0, 0.5))
    r = evaluate_check({"kind": "ratio_range", "left": "a", "right": "b", "min": 1.99, "max": 2.01},
                       noisy(a=2 * b, b=b))
    assert r.paired and r.se == pytest.approx(0.0, abs=1e-12) and r.outcome == "pass"


def test_equal_true_false_stay_exact_whatever_the_repeats():
    m = {**noisy(n=[3.0, 3.0]), "flag": True}
    assert evaluate_check({"kind": "equal", "metric": "n", "expected": 3}, m).outcome == "pass"
    assert evaluate_check({"kind": "true", "metric": "flag"}, m).outcome == "pass"


# ---------------------------------------------------------------------------------- claim verdicts with noise

def test_claim_verdict_from_pass_fail_inconclusive_checks():
    m = noisy(a=reps(0.5, 0.01))
    ok = {"kind": "less", "left": "a", "right": 0.6}            # pass
    tie = {"kind": "less", "left": "a", "right": 0.51}          # inconclusive
    bad = {"kind": "greater", "left": "a", "right": 0.6}        # fail
    assert verdict([ok], m).verdict == "reproduced"
    v = verdict([ok, tie], m)
    assert v.verdict == "inconclusive" and "1 of 2" in v.reason and "a < 0.51" in v.reason
    assert verdict([ok, bad], m).verdict == "partly"
    assert verdict([ok, bad, tie], m).verdict == "partly"
    v = verdict([bad, tie], m)
    assert v.verdict == "not reproduced" and "inside the noise" in v.reason
    assert verdict([tie], m).verdict == "inconclusive"
    rec = verdict([tie], m).record()
    assert rec["checks"][0]["outcome"] == "inconclusive" and rec["checks"][0]["se"] == pytest.approx(0.01)


# ------------------------------------------------------------------------------------------- setup, variants

def claims_of(data: dict):
    cf = parse_claims(measured(data), "huang2019_dpadmm.yaml")
    assert not cf.problems, cf.problems
    return {c.id.rsplit(".", 1)[-1]: c for c in cf.claims}


def test_setup_claims_get_setup_verdicts():
    cs = claims_of({"claims": [
        {"id": "huang2019_dpadmm.fig1.s", "item": "fig1", "quote": "q", "setup": True,
         "checks": [{"kind": "approx", "metric": "eps", "expected": 1.0, "rel_tol": 1e-6, "from": "rule"}]}]})
    assert evaluate_claim(cs["s"], {"eps": 1.0}).verdict == "setup ok"
    v = evaluate_claim(cs["s"], {"eps": 1.1})
    assert v.verdict == "setup failed" and v.setup and v.unexplained
    assert evaluate_claim(cs["s"], None, missing_reason="no results").verdict == "not run"
    assert evaluate_claim(cs["s"], {"eps": 1.0}).record()["setup"] is True


VARIANT_FILE = {
    "variants": {"dpsgd_sum": {"choice": "dpsgd_convention", "label": "DPSGD sum convention (lr x n)",
                               "item": "fig1"},
                 "T30": {"choice": "T", "label": "T = 30"}},
    "claims": [
        {"id": "huang2019_dpadmm.fig1.beats", "item": "fig1", "quote": "DP-ADMM beats DPSGD",
         "variants": ["dpsgd_sum", "T30"],
         "checks": [{"kind": "less", "left": "el.dpadmm", "right": "el.dpsgd"}]},
    ],
}


def test_variant_reads_its_own_keys_and_marks_the_choice_the_verdict_depends_on():
    c = claims_of(VARIANT_FILE)["beats"]
    m = {**noisy(**{"el.dpadmm": reps(0.40, 0.01), "el.dpsgd": reps(0.60, 0.01, shift=4),
                    "el.dpsgd@dpsgd_sum": reps(0.30, 0.01, shift=4)})}
    v = evaluate_claim(c, m)
    assert v.verdict == "reproduced"
    by = {x.name: x for x in v.variants}
    # under dpsgd_sum only el.dpsgd changes; el.dpadmm is the default's
    assert by["dpsgd_sum"].verdict == "not reproduced" and by["dpsgd_sum"].choice == "dpsgd_convention"
    assert "el.dpsgd@dpsgd_sum" in by["dpsgd_sum"].checks[0].observed
    assert "el.dpadmm = 0.4" in by["dpsgd_sum"].checks[0].observed
    assert by["T30"].verdict == "not run" and "variant metrics missing" in by["T30"].reason
    assert v.depends_on_choice == ["dpsgd_convention"]          # a variant not run shows no dependence
    rec = v.record()
    assert rec["depends_on_choice"] == ["dpsgd_convention"]
    assert {r["name"]: r["verdict"] for r in rec["variants"]} == {"dpsgd_sum": "not reproduced", "T30": "not run"}


def test_a_variant_with_the_same_verdict_does_not_make_the_claim_depend_on_it():
    c = claims_of(VARIANT_FILE)["beats"]
    m = {"el.dpadmm": 0.4, "el.dpsgd": 0.6, "el.dpadmm@T30": 0.45, "el.dpsgd@dpsgd_sum": 0.5}
    v = evaluate_claim(c, m)
    assert [x.verdict for x in v.variants] == ["reproduced", "reproduced"] and v.depends_on_choice == []


def test_variants_must_be_declared_and_belong_to_the_item():
    data = {**VARIANT_FILE, "claims": [{**VARIANT_FILE["claims"][0], "variants": ["nope"]}]}
    cf = parse_claims(measured(data), "huang2019_dpadmm.yaml")
    assert any("variant 'nope' is not declared" in p for p in cf.problems)
    data = {**VARIANT_FILE, "claims": [{**VARIANT_FILE["claims"][0], "id": "huang2019_dpadmm.fig2.beats",
                                        "item": "fig2", "variants": ["dpsgd_sum"]}]}
    cf = parse_claims(measured(data), "huang2019_dpadmm.yaml")
    assert any("belongs to item 'fig1'" in p for p in cf.problems)


# ---------------------------------------------------------------------------------------------------- findings

FINDING_CLAIM = {"id": "huang2019_dpadmm.fig1.f", "item": "fig1", "quote": "q",
                 "checks": [{"kind": "less", "left": "a", "right": "b"}]}


def test_finding_matching_the_verdict_is_shown_others_are_stale():
    f_partly = {"when": "not reproduced", "text": "under the average convention ..."}
    f_old = {"when": ["reproduced"], "text": "was a bug"}
    c = claims_of({"claims": [{**FINDING_CLAIM, "finding": [f_partly, f_old]}]})["f"]
    v = evaluate_claim(c, {"a": 2.0, "b": 1.0})
    assert v.verdict == "not reproduced"
    assert v.finding == {"when": ["not reproduced"], "cause": "paper", "text": "under the average convention ...",
                         "evidence": []}
    assert not v.unexplained and [s["text"] for s in v.stale] == ["was a bug"]
    v = evaluate_claim(c, {"a": 1.0, "b": 2.0})
    assert v.verdict == "reproduced" and v.finding["text"] == "was a bug" and v.finding["cause"] == "robust"
    assert [s["text"] for s in v.stale] == ["under the average convention ..."]
    rec = v.record()
    assert rec["finding"]["cause"] == "robust" and rec["stale"][0]["when"] == ["not reproduced"]
    # not run: the numbers were not judged, so nothing is stale or unexplained
    v = evaluate_claim(c, None, missing_reason="no results")
    assert v.stale == [] and not v.unexplained


@pytest.mark.parametrize("metrics, unexplained", [
    ({"a": 2.0, "b": 1.0}, True),                         # not reproduced, no finding
    (noisy(a=reps(0.5, 0.01), b=reps(0.505, 0.01, shift=5)), True),   # inconclusive, no finding
    ({"a": 1.0, "b": 2.0}, False),                        # reproduced needs no explanation
    ({"a": 1.0}, False),                                  # not checkable
])
def test_failing_claim_without_a_matching_finding_is_unexplained(metrics, unexplained):
    c = claims_of({"claims": [FINDING_CLAIM]})["f"]
    v = evaluate_claim(c, metrics)
    assert v.unexplained is unexplained and v.record()["unexplained"] is unexplained


def test_one_finding_mapping_and_bad_findings():
    c = claims_of({"claims": [{**FINDING_CLAIM, "finding": {"when": "partly", "text": "t", "evidence": ["a"]}}]})["f"]
    assert c.findings == [{"when": ["partly"], "text": "t", "evidence": ["a"]}]
    cf = parse_claims(measured({"claims": [{**FINDING_CLAIM, "finding": {"when": "failed", "text": ""}}]}),
                      "huang2019_dpadmm.yaml")
    assert not cf.claims and cf.problems and "finding" in cf.problems[0]


# ------------------------------------------------------------------------------------ metrics.json: repeats

def test_write_metrics_stores_repeats_beside_their_means(tmp_path):
    import json

    from repro_dpadmm.experiments.common import write_metrics

    a = np.array([0.4, 0.5, 0.6])
    m = json.loads(write_metrics(tmp_path, {"a": a.mean(), "b": 1.0}, repeats={"a": a}).read_text())
    assert m["a"] == pytest.approx(0.5) and m["repeats"] == {"a": [0.4, 0.5, 0.6]}
    assert evaluate_check({"kind": "less", "left": "a", "right": 0.55}, m).outcome == "inconclusive"
    with pytest.raises(ValueError, match="must also be a flat metric"):
        write_metrics(tmp_path, {"b": 1.0}, repeats={"a": a})
    with pytest.raises(ValueError, match="not the mean"):
        write_metrics(tmp_path, {"a": 0.45}, repeats={"a": a})
    with pytest.raises(ValueError, match="1-D"):
        write_metrics(tmp_path, {"a": 0.5}, repeats={"a": np.ones((2, 2))})
    with pytest.raises(ValueError, match="reserved"):
        write_metrics(tmp_path, {"repeats": 1.0}, repeats={"a": a})
    # a scalar count under the reserved name is still written (beyond/frontier does, until it is renamed): the
    # engine ignores a 'repeats' that is not a mapping
    m = json.loads(write_metrics(tmp_path, {"repeats": 10, "a": 0.5}).read_text())
    assert evaluate_check({"kind": "less", "left": "a", "right": 0.6}, m).se is None
    # a diverged repeat: its value is null, and the mean (inf) is null too
    m = json.loads(write_metrics(tmp_path, {"a": float("inf")}, repeats={"a": [1.0, float("inf")]}).read_text())
    assert m["a"] is None and m["repeats"]["a"] == [1.0, None]


def test_claims_table_judges_noise_setup_variants_and_findings(tmp_path, monkeypatch):
    from repro_dpadmm.experiments.common import claims_table

    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "config" / "claims").mkdir(parents=True)
    data = {**VARIANT_FILE, "evidence": MEASURED, "claims": [
        {**VARIANT_FILE["claims"][0], "finding": {"when": "inconclusive", "text": "tie",
                                                  "evidence": ["el.dpadmm"]}},
        {"id": "huang2019_dpadmm.fig1.target", "item": "fig1", "quote": "bisection hit its target", "setup": True,
         "checks": [{"kind": "approx", "metric": "eps", "expected": 1.0, "rel_tol": 1e-6, "from": "rule",
                     "range": {"rel_tol": [1e-7, 1e-5]}}]},
        {"id": "huang2019_dpadmm.fig1.norm", "item": "fig1", "quote": "||w|| | a pipe",
         "checks": [{"kind": "range", "metric": "el.dpsgd@dpsgd_sum", "max": 1.0, "label": "||w|| within",
                     "from": "rule: r", "range": {"max": [0.5, 1.5]}}]}]}
    (tmp_path / "config" / "claims" / "huang2019_dpadmm.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    metrics = {"el.dpadmm": 0.4, "el.dpsgd": 0.405, "el.dpsgd@dpsgd_sum": 0.9, "eps": 1.0}
    repeats = {"el.dpadmm": reps(0.4, 0.01), "el.dpsgd": reps(0.405, 0.01, shift=3)}
    table = claims_table("huang2019_dpadmm", "fig1", metrics, repeats=repeats)
    assert table.startswith("1 of 2 measured claims reproduced") and "1 setup check(s)" in table
    # every row keeps its four cells, whatever pipes a quote, label or threshold reading holds
    rows = [r for r in table.splitlines() if r.startswith("|")]
    assert {len(re.split(r"(?<!\\)\|", r)) for r in rows} == {6}, rows
    assert "depends on threshold max of \\|\\|w\\|\\| within" in table
    assert "**inconclusive**" in table and "DPSGD sum convention (lr x n): reproduced" in table
    assert re.search(r"\d of \d variants agree<br>DPSGD sum convention", table)   # agreeing ones counted
    assert "depends on dpsgd_convention" in table and "**choice** (DPSGD sum convention (lr x n): reproduced): tie" in table
    assert "**setup ok**" in table


def test_the_check_kinds_are_the_schemas():
    """`claims.kinds.CHECKS` (one class per kind) and the schema's kinds name the same kinds, each kind with its
    fields' definition in the schema."""
    from repro_dpadmm.claims import CHECKS

    schema = yaml.safe_load((ROOT / "config" / "claims" / "claims.schema.yaml").read_text())
    check = schema["$defs"]["check"]
    assert set(check["properties"]["kind"]["enum"]) == set(CHECKS)
    branched = set()
    for branch in check["allOf"]:
        kind = branch["if"]["properties"].get("kind")
        if kind is not None:
            branched |= {kind["const"]} if "const" in kind else set(kind["enum"])
            assert branch["then"]["$ref"].rsplit("/", 1)[1] in schema["$defs"]
    assert branched == set(CHECKS)


def test_a_new_check_kind_is_one_class(monkeypatch):
    """Defining a CheckKind subclass is all the judge needs: it registers, reads its keys, describes, measures,
    decides beyond the noise and names its looser threshold, with no branch elsewhere."""
    from repro_dpadmm.claims import CHECKS, CheckKind, check_keys, looser_threshold
    from repro_dpadmm.claims.noise import FAIL, PASS, _Measured, fmt as fmt_

    monkeypatch.setattr("repro_dpadmm.claims.kinds.CHECKS", dict(CHECKS))
    from repro_dpadmm.claims import kinds

    class Positive(CheckKind):
        name = "positive"
        shows_expected = True

        def describe(self, check):
            return f"{check['metric']} > 0", "> 0"

        def measure(self, check, m, z):
            v = m.number(check["metric"])
            return _Measured(PASS if v > 0 else FAIL, fmt_(v), f"{check['metric']} = {fmt_(v)}")

        def looser(self, check, p, lo_p, hi_p):
            return ["any positive value passes"]

    assert kinds.CHECKS["positive"].__class__ is Positive and "positive" not in CHECKS
    check = {"kind": "positive", "metric": "gain", "paper_threshold": 0}
    assert check_keys(check) == ["gain"] and looser_threshold(check) == "any positive value passes"
    ok, bad = evaluate_check(check, {"gain": 0.5}), evaluate_check(check, {"gain": -1.0})
    assert (ok.outcome, ok.check, ok.measured) == ("pass", "gain > 0", "0.5") and bad.outcome == "fail"
    assert evaluate_check(check, {}).outcome == "not evaluated"
    with pytest.raises(TypeError, match="defined twice"):
        type("AgainPositive", (CheckKind,), {"name": "positive"})
