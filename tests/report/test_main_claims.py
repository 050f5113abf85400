"""The reproducibility summary: a paper's main claims over their cases and readings, computed from the verdicts
(never typed), and a specification curve per main claim."""

from __future__ import annotations

import json
import os
import re
from types import SimpleNamespace

import yaml
from _report_synth import make_project

from repro_dpadmm.report import build_report
from repro_dpadmm.report.main_claims import curve_svg, reading_effect, status


def _verdict(verdict, readings=(), cause=None, case=None):
    return SimpleNamespace(verdict=verdict, cause=cause, claim=SimpleNamespace(case=case or {}),
                           readings=[SimpleNamespace(verdict=r) for r in readings])


def test_status_over_cases_and_readings():
    assert status([_verdict("reproduced", ["reproduced"])]) == "holds under every reading"
    assert status([_verdict("partly", ["reproduced"], "choice"),
                   _verdict("reproduced", ["not reproduced"], "choice")]) == "holds under some readings"
    assert status([_verdict("reproduced", ["reproduced"]),
                   _verdict("not reproduced", ["partly"], "paper")]) == "holds on some cases"
    assert status([_verdict("not reproduced", ["partly"], "paper")]) == "fails under every reading"
    assert status([_verdict("inconclusive", ["degenerate"], "power")]) == "undecided"
    assert status([_verdict("not run")]) == "not run"


def test_reading_effect_is_the_weakest_check_and_exact_checks_sit_at_the_ends():
    checks = [SimpleNamespace(effect=4.0), SimpleNamespace(effect=-1.5), SimpleNamespace(effect=None)]
    assert reading_effect("partly", checks) == -1.5
    assert reading_effect("reproduced", [SimpleNamespace(effect=None)]) == float("inf")
    assert reading_effect("not reproduced", [SimpleNamespace(effect=None)]) == float("-inf")
    assert reading_effect("not run", []) is None


def test_curve_is_sorted_marks_the_default_and_escapes_labels():
    points = [{"case": "a9a", "reading": "<b>rho = 2</b>", "kind": "variant", "verdict": "partly", "effect": 3.0},
              {"case": "a9a", "reading": "default", "kind": "default", "verdict": "reproduced", "effect": 9.0},
              {"case": "a8a", "reading": "default", "kind": "default", "verdict": "not reproduced", "effect": -4.0}]
    svg = curve_svg(points, 2.0)
    assert "<b>" not in svg and "&lt;b&gt;rho = 2&lt;/b&gt;" in svg
    ys = [float(y) for y in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    assert ys == sorted(ys, reverse=True)                      # sorted by effect: the y axis points down
    assert svg.count('stroke="#1f2328"') == 2                    # the two default readings are ringed
    assert curve_svg([], 2.0) == ""
    exact = curve_svg([{"case": "", "reading": "default", "kind": "default", "verdict": "reproduced", "effect": None,
                        "exact": True}], 2.0)
    assert "(exact)" in exact


def test_summary_comes_from_the_metrics_and_opens_the_report(tmp_path):
    root = make_project(tmp_path / "project")
    path = root / "config" / "claims" / "huang2019_dpadmm.yaml"
    doc = yaml.safe_load(path.read_text())
    claim = next(c for c in doc["claims"] if c["id"] == "huang2019_dpadmm.fig1.error_tiny")
    claim["main"] = "DP-ADMM comes within a hair of the centralised error."
    path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def main_record():
        build_report("results/report", root=root)
        out = root / "results" / "report"
        records = json.loads((out / "summary.json").read_text())["papers"]["huang2019_dpadmm"]["main_claims"]
        assert [r["id"] for r in records] == ["huang2019_dpadmm.fig1.error_tiny"]
        return records[0], out

    first, out = main_record()
    assert "Infinity" not in (out / "summary.json").read_text()             # strict JSON
    index = (out / "index.html").read_text()
    assert index.index('id="summary"') < index.index('id="headline"')      # the first question answered first
    assert "within a hair of the centralised error" in (out / "huang2019_dpadmm.html").read_text()
    assert 'class="speccurve"' in (out / "huang2019_dpadmm.html").read_text()

    assert first["status"] == "fails under every reading" and first["cases_passing"] == 0
    metrics_path = root / "results" / "huang2019_dpadmm" / "fig1" / "metrics.json"
    metrics = json.loads(metrics_path.read_text())
    metrics["err_final.n100"] = metrics["centralised_err"] - 0.01
    metrics_path.write_text(json.dumps(metrics))
    second, _ = main_record()
    assert second["status"] == "holds under every reading" and second["cases_passing"] == 1
    assert first["ours"] != second["ours"] and "0.14" in second["ours"]


def test_a_what_if_report_names_its_change_and_lists_what_differs_from_the_paper_run(tmp_path):
    root = make_project(tmp_path / "project")
    build_report("results/report", root=root)                      # the paper run's judgement
    paper = json.loads((root / "results/huang2019_dpadmm/fig1/metrics.json").read_text())
    run = root / "results/whatif/tight/huang2019_dpadmm/fig1"
    run.mkdir(parents=True)
    # a timing that moved far more than any result: never "moved most" (it moves with the machine's load)
    (run / "metrics.json").write_text(json.dumps({**paper, "err_final.n100": paper["centralised_err"] - 0.01,
                                                  "graph_seconds.a9a": 1e6}))
    (root / "results/huang2019_dpadmm/fig1/metrics.json").write_text(json.dumps({**paper, "graph_seconds.a9a": 1.0}))
    (run / "settings.json").write_text(json.dumps({"run": "tight"}))
    build_report(run.parents[1] / "report", root=root, results=run.parents[1], run_name="tight", quiet=True)
    wi = json.loads((run.parents[1] / "report/summary.json").read_text())["whatif"]
    assert wi["compared"] and {"id": "huang2019_dpadmm.fig1.error_tiny", "paper": "not reproduced",
                               "whatif": "reproduced"} in wi["verdicts"]
    assert wi["metrics"][0]["key"] == "huang2019_dpadmm/fig1:err_final.n100"
    index = (run.parents[1] / "report/index.html").read_text()
    assert "huang2019_dpadmm.fig1.error_tiny</span>: not reproduced →" in index
    # a paper run's report that cannot be read is named as such, not as absent
    claims = root / "results/report/claims.json"
    for broken, why in (('[{"id": 5', "results/report/claims.json is unreadable"),
                        (None, "results/report/claims.json is not a regular file"), ("[]", "holds no verdicts")):
        claims.unlink()
        if broken is None:
            os.mkfifo(claims)
        else:
            claims.write_text(broken)
        build_report(run.parents[1] / "report", root=root, results=run.parents[1], run_name="tight", quiet=True)
        wi = json.loads((run.parents[1] / "report/summary.json").read_text())["whatif"]
        assert not wi["compared"] and why in wi["not_compared"], wi.get("not_compared")


def test_odd_values_from_elsewhere_neither_crash_nor_swell_the_report(tmp_path):
    """A sidecar whose arrays are not shapes, and a note of megabytes, from a results folder of someone else's."""
    root = make_project(tmp_path / "project")
    side = root / "resources/processed/a9a.json"
    side.write_text(json.dumps({**json.loads(side.read_text()), "arrays": "x"}))
    path = root / "results/huang2019_dpadmm/fig1/metrics.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "note": "n" * 2_000_000}))
    build_report("results/report", root=root)
    page = (root / "results/report/huang2019_dpadmm.html").read_text()
    assert len(page) < 1_000_000 and "n… (2,000,000 characters)" in page


def test_an_absurd_size_cap_is_no_cap_rather_than_a_crash(monkeypatch):
    from repro_dpadmm import safeload

    monkeypatch.setenv(safeload.MAX_BYTES_ENV, "1e30")
    assert 0 < safeload.max_bytes() < 2**63


def test_an_analytic_main_claim_is_summarised_as_analytic_not_as_measured():
    def analytic(verdict, readings=()):
        return SimpleNamespace(**vars(_verdict(verdict, readings)), claim_class="analytic")

    assert status([analytic("holds", ["holds"])]) == "holds (analytic)"
    assert status([analytic("fails", ["fails"], )]) == "fails (analytic)"
    assert status([analytic("holds", ["fails"])]) == "holds under some readings"   # its readings decide it
    assert status([_verdict("reproduced", ["reproduced"])]) == "holds under every reading"


def test_the_curve_marks_the_papers_reading_where_the_claim_declares_one():
    from repro_dpadmm.report.main_claims import _points

    def reading(name, verdict):
        return SimpleNamespace(name=name, label=f"label of {name}", kind="variant", verdict=verdict, checks=[])

    v = SimpleNamespace(verdict="reproduced", checks=[], readings=[reading("rho2", "partly"), reading("T", "reproduced")],
                        claim=SimpleNamespace(case={}, paper_reading="rho2"))
    points = _points([v])
    assert [p["paper"] for p in points] == [False, True, False]
    svg = curve_svg(points, 2.0)
    assert svg.count('class="paper-reading"') == 1 and "label of rho2: partly (exact) · the paper's reading" in svg
    v.claim.paper_reading = ""
    assert not any(p["paper"] for p in _points([v])) and "paper-reading" not in curve_svg(_points([v]), 2.0)


def test_the_scatter_places_subnormal_and_huge_numbers_at_its_axis_ends():
    """5e-324 once ended the report ("math domain error": 10 ** -324 is 0); such numbers sit at the axis' end."""
    from repro_dpadmm.report.main_claims import scatter_svg

    svg = scatter_svg([{"id": "a", "key": "k", "paper": 0.5, "ours": 5e-324, "outcome": "pass"},
                       {"id": "b", "key": "k", "paper": 1e308, "ours": 2.0, "outcome": "fail"}])
    assert svg.count("<circle") == 2 and ">1e-300<" in svg and svg.count("<text") <= 2 * 10 + 2
