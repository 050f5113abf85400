"""Claims declared once (claims/expand.py), summarised over their cases (claims/cases.py) and folded by the authoring
tool (claims/fold.py). Synthetic claims files, and the repository's own files for the round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repro_dpadmm import safeload
from repro_dpadmm.claims import SOME_CASES, evaluate_claim, fold_verdicts, load_claims_file, parse_claims
from repro_dpadmm.claims import folding as fold_tool
from repro_dpadmm.claims.expand import MAX_CASES, expand

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = {"fig1": [{"keys": "base.*", "kind": "measured"},
                     {"keys": "err.*", "kind": "measured", "reference": "base.x", "better": "lower"},
                     {"keys": "n.*", "kind": "given"}]}


def doc(claims, **top):
    """A claims document (copied, so that YAML writes no anchors for shared parts)."""
    return json.loads(json.dumps({"evidence": EVIDENCE, "metrics": {"fig1": {"base.x": "the baseline"}},
                                  "claims": claims, **top}))


OVER = {"id": "huang2019_dpadmm.fig1.beats.{ds}", "over": {"ds": ["a8a", "a9a", "ijcnn1"]}, "item": "fig1",
        "quote": "DP-ADMM beats the baseline on {ds}", "paper_value": {"a8a": 0.8, "*": None},
        "checks": [{"kind": "less", "left": "err.{ds}", "right": "err.{ds}_sgd", "label": "on {ds}"}],
        "finding": [{"when": "partly", "cases": ["ijcnn1"], "text": "ijcnn1 ends at {err.ijcnn1:.2f}"}]}


def test_a_claim_over_its_cases_expands_into_one_claim_per_case():
    cf = parse_claims(doc([OVER]), "huang2019_dpadmm.yaml")
    assert not cf.problems, cf.problems
    assert [c.id for c in cf.claims] == [f"huang2019_dpadmm.fig1.beats.{d}" for d in ("a8a", "a9a", "ijcnn1")]
    a8a, a9a, ij = cf.claims
    assert a8a.quote == "DP-ADMM beats the baseline on a8a" and a8a.checks[0]["left"] == "err.a8a"
    assert a8a.checks[0]["label"] == "on a8a" and a8a.paper_value == 0.8 and a9a.paper_value is None
    assert a8a.findings == [] and ij.findings[0]["text"] == "ijcnn1 ends at {err.ijcnn1:.2f}"
    assert a8a.case == {"ds": "a8a"} and a8a.group == "huang2019_dpadmm.fig1.beats.{ds}"


def test_several_axes_give_every_combination_and_the_cases_are_bounded():
    two = {**OVER, "id": "huang2019_dpadmm.fig1.beats.{ds}.{eps}", "over": {"ds": ["a8a", "a9a"], "eps": [0.1, 1]},
           "finding": []}
    cf = parse_claims(doc([two]), "huang2019_dpadmm.yaml")
    assert [c.case for c in cf.claims] == [{"ds": "a8a", "eps": "0.1"}, {"ds": "a8a", "eps": "1"},
                                           {"ds": "a9a", "eps": "0.1"}, {"ds": "a9a", "eps": "1"}]
    huge = {**OVER, "over": {"a": list(range(20)), "b": list(range(20))}}
    problems = parse_claims(doc([huge]), "huang2019_dpadmm.yaml").problems
    assert any(f"at most {MAX_CASES} per claim" in p for p in problems), problems
    bad = {**OVER, "over": {"ds": "a8a"}}
    assert any("must list its values" in p for p in parse_claims(doc([bad]), "huang2019_dpadmm.yaml").problems)


def test_sets_and_defaults_are_declared_once():
    data = doc([{"id": "huang2019_dpadmm.fig1.a", "quote": "q", "checks": [{"kind": "true", "metric": "n.ok"}],
                 "depends_on": [{"set": "common"}, "its own"]},
                {"id": "huang2019_dpadmm.fig1.b", "quote": "q", "checks": [{"kind": "true", "metric": "n.ok"}],
                 "depends_on": [{"set": "nope"}]}],
               sets={"common": ["[D] T = 100", "[D] 10 runs"]}, defaults={"item": "fig1", "where": "Fig. 1"})
    cf = parse_claims(data, "huang2019_dpadmm.yaml")
    assert any("no set 'nope'" in p for p in cf.problems), cf.problems
    del data["claims"][1]
    a = parse_claims(data, "huang2019_dpadmm.yaml").claims[0]
    assert a.depends_on == ["[D] T = 100", "[D] 10 runs", "its own"] and a.item == "fig1" and a.where == "Fig. 1"


def test_metric_docs_are_patterns_over_the_files_axes():
    data = doc([], axes={"alg": ["admm", "acc"], "ds": ["a8a", "a9a"]},
               metrics={"fig1": {"err.{alg}.{ds}": "test error of {alg} on {ds}", "base.x": "b"}})
    cf = parse_claims(data, "huang2019_dpadmm.yaml")
    assert cf.metrics["fig1"]["err.acc.a9a"] == "test error of acc on a9a" and len(cf.metrics["fig1"]) == 5
    unknown = parse_claims(doc([], metrics={"fig1": {"err.{m}": "d"}}), "huang2019_dpadmm.yaml")
    assert any("{m} is not an axis" in p for p in unknown.problems), unknown.problems


def test_a_problem_in_a_case_names_the_line_of_the_declared_claim(tmp_path):
    bad = {**OVER, "checks": [{"kind": "range", "metric": "err.{ds}", "mni": 0}]}
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text(yaml.safe_dump(doc([OVER, bad]), sort_keys=False))
    text = "\n".join(load_claims_file(path).problems)
    line = next(i for i, s in enumerate(path.read_text().splitlines(), 1) if "kind: range" in s)
    assert f"huang2019_dpadmm.yaml:{line}:" in text and "beats.a8a" in text


def test_a_claim_with_one_failing_case_summarises_as_on_some_cases():
    cf = parse_claims(doc([OVER]), "huang2019_dpadmm.yaml")
    m = {"base.x": 0.5, "err.a8a": 0.1, "err.a8a_sgd": 0.2, "err.a9a": 0.1, "err.a9a_sgd": 0.2,
         "err.ijcnn1": 0.3, "err.ijcnn1_sgd": 0.2}
    [folded] = fold_verdicts([evaluate_claim(c, m) for c in cf.claims])
    assert folded.id == "huang2019_dpadmm.fig1.beats.{ds}" and folded.verdict == SOME_CASES
    assert folded.summary == "reproduced on a8a, a9a; not reproduced on ijcnn1" and folded.cause == "paper"
    m["err.ijcnn1"] = 0.1
    [folded] = fold_verdicts([evaluate_claim(c, m) for c in cf.claims])
    assert folded.verdict == "reproduced" and folded.summary == "reproduced on all 3 cases" and folded.cause == "robust"


def test_the_fold_tool_folds_and_its_output_expands_to_the_same_claims(tmp_path):
    claims = [{"id": f"huang2019_dpadmm.fig1.beats.{d}", "item": "fig1", "quote": f"on {d}",
               "checks": [{"kind": "less", "left": f"err.{d}", "right": f"err.{d}_sgd"}], "paper_value": pv}
              for d, pv in (("a8a", 1), ("a9a", 2), ("ijcnn1", 2))]
    folded = fold_tool.fold_claims(claims, "ds", ["a8a", "a9a", "ijcnn1"], ["{v}"])
    assert len(folded) == 1 and folded[0]["over"] == {"ds": ["a8a", "a9a", "ijcnn1"]}
    assert folded[0]["paper_value"] == {"a8a": 1, "*": 2}
    assert expand({"claims": folded}).data["claims"] == claims
    path = tmp_path / "huang2019_dpadmm.yaml"
    path.write_text("# header\n" + yaml.safe_dump({"claims": claims}, sort_keys=False))
    assert fold_tool.main([str(path), "--axis", "ds", "--values", "a8a,a9a,ijcnn1"]) == 0
    assert path.read_text().startswith("# header\n") and "over:" in path.read_text()
    assert expand(safeload.load_yaml(path)).data["claims"] == claims


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "config" / "claims").glob("*.yaml")
                                        if p.name != "claims.schema.yaml"))
def test_the_repositorys_claims_files_are_folded_as_far_as_the_tool_folds_them(name):
    """Folding a file again over its own metric axes and repeated lists changes nothing it judges."""
    raw = safeload.load_yaml(ROOT / "config" / "claims" / name)
    again = fold_tool.extract_sets(dict(raw))
    before, after = expand(raw).data, expand(safeload.loads_yaml(fold_tool.dump(again), "again")).data
    assert after["claims"] == before["claims"] and after.get("metrics") == before.get("metrics")


def test_every_case_carries_its_claims_summary():
    from repro_dpadmm.claims import summarise

    cf = parse_claims(doc([OVER]), "huang2019_dpadmm.yaml")
    m = {"base.x": 0.5, "err.a8a": 0.1, "err.a8a_sgd": 0.2, "err.a9a": 0.3, "err.a9a_sgd": 0.2,
         "err.ijcnn1": 0.1, "err.ijcnn1_sgd": 0.2}
    verdicts = [evaluate_claim(c, m) for c in cf.claims]
    summarise(verdicts)
    assert all(v.over_cases["verdict"] == SOME_CASES for v in verdicts)
    assert verdicts[0].record()["over_cases"]["summary"] == "reproduced on a8a, ijcnn1; not reproduced on a9a"


def test_cases_may_name_their_axis_where_the_values_of_two_axes_overlap():
    two = {**OVER, "id": "huang2019_dpadmm.fig1.b.{ds}.{n}", "over": {"ds": ["a8a", "a9a"], "n": [1, 2]},
           "finding": [{"when": "partly", "cases": {"n": [1]}, "text": "n 1"},
                       {"when": "partly", "cases": {"ds": ["a9a"], "n": [2]}, "text": "a9a, n 2"}]}
    cf = parse_claims(doc([two]), "huang2019_dpadmm.yaml")
    assert not cf.problems, cf.problems
    assert [[f["text"] for f in c.findings] for c in cf.claims] == [["n 1"], [], ["n 1"], ["a9a, n 2"]]
    bad = {**two, "finding": [{"when": "partly", "cases": {"q": [1]}, "text": "t"}]}
    assert any("'q', which is no axis" in p for p in parse_claims(doc([bad]), "huang2019_dpadmm.yaml").problems)
