"""The item runner: papermill injects parameters, HTML is rendered, unavailable datasets skip the notebook."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from repro_dpadmm.runner import run_item


@pytest.fixture
def project(tmp_path):
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "config").mkdir()
    (tmp_path / "resources/processed").mkdir(parents=True)
    nb = new_notebook(cells=[
        new_markdown_cell("# Demo item"),
        new_code_cell("params = None\nout_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell("from repro_dpadmm.experiments.common import write_metrics\n"
                      "write_metrics(out_dir, {'doubled': 2 * params['x'], 'seed': params['seed']})"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "notebooks/demo").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks/demo/item.ipynb")
    return tmp_path


def test_notebook_runs_with_injected_parameters(project):
    metrics = run_item("demo", "item", {"x": 21, "seed": 3}, "results/demo/item", root=project)
    out = project / "results/demo/item"
    assert metrics["status"] == "ok" and metrics["doubled"] == 42 and metrics["seed"] == 3
    assert metrics["wall_time_s"] > 0
    assert json.loads((out / "metrics.json").read_text()) == metrics
    html = (out / "item.html").read_text()
    assert "Demo item" in html and "injected-parameters" in (out / "item.ipynb").read_text()


def test_all_datasets_unavailable_skips_the_notebook(project):
    (project / "resources/processed/gisette.json").write_text(
        json.dumps({"name": "gisette", "available": False, "reason": "could not obtain gisette_scale.bz2"}))
    metrics = run_item("demo", "item", {"x": 1, "seed": 0, "datasets": ["gisette"]}, "results/demo/item",
                       root=project)
    assert metrics["status"] == "not run" and "dataset unavailable" in metrics["reason"]
    assert "gisette_scale.bz2" in metrics["reason"]
    assert "not run" in (project / "results/demo/item/item.html").read_text()
    assert not (project / "results/demo/item/item.ipynb").exists()


def test_a_failing_notebook_leaves_no_metrics(project):
    (project / "results/demo/item").mkdir(parents=True)
    (project / "results/demo/item/metrics.json").write_text('{"status": "ok", "stale": 1}')
    with pytest.raises(Exception):
        run_item("demo", "item", {"seed": 0}, "results/demo/item", root=project)  # params['x'] missing
    assert not (project / "results/demo/item/metrics.json").exists()


def test_write_metrics_keeps_a_note_apart_from_the_reason(tmp_path):
    import json

    from repro_dpadmm.experiments.common import write_metrics

    m = json.loads(write_metrics(tmp_path, {"x": 1.0}, note="a finding").read_text())
    assert m == {"status": "ok", "reason": "", "note": "a finding", "x": 1.0}
    assert "note" not in json.loads(write_metrics(tmp_path, {"x": 1.0}).read_text())


def test_claims_table_judges_an_items_claims_as_the_report_does():
    from repro_dpadmm.experiments.common import claims_table

    held = claims_table("huang2019_dpadmm", "fig1", {"central.w_norm": 23.5})
    missed = claims_table("huang2019_dpadmm", "fig1", {"central.w_norm": 104.7})
    assert "(`c_w_l1`) | **reproduced**" in held and "(`c_w_l1`) | **not reproduced**" in missed
    assert "**not checkable**" in held  # claims whose metrics are absent are said to be so, not dropped
    assert "`theorem3_bound`" in missed and "`theorem3_rate`" not in missed  # fig1's claims only, not fig2's
