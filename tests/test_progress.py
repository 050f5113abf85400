"""Progress while an item runs: a line per sweep setting, and the notebook's output in the log as it is produced."""

from __future__ import annotations

import io
import json

import nbformat

from repro_dpadmm.experiments.progress import progress


def test_one_line_per_setting_with_its_time_and_the_elapsed_time():
    ticks = iter([0.0, 1.0, 3.5, 3.5, 10.0])  # start, then (begin, end) of each setting
    out = io.StringIO()
    seen = []
    for eps in progress([0.1, 1.0], "fig2", name=lambda e: f"eps={e}", stream=out, clock=lambda: next(ticks)):
        seen.append(eps)
        assert out.getvalue().count("\n") == len(seen) - 1  # the line comes when the setting is done
    assert seen == [0.1, 1.0]
    assert out.getvalue().splitlines() == ["fig2: 1/2 eps=0.1 done in 2.5 s (3.5 s elapsed, about 3.5 s left)",
                                           "fig2: 2/2 eps=1.0 done in 6.5 s (10.0 s elapsed, about 0.0 s left)"]


def test_the_estimate_quotes_the_cost_table_when_the_runner_passes_it(monkeypatch):
    ticks = iter([0.0, 0.0, 30.0, 30.0, 200.0, 200.0, 210.0])
    out = io.StringIO()
    monkeypatch.setenv("REPRO_DPADMM_EXPECTED_S", "240")
    list(progress(["a", "b", "c"], "fig3", stream=out, clock=lambda: next(ticks)))
    assert out.getvalue().splitlines() == [
        "fig3: 1/3 a done in 30.0 s (30.0 s elapsed, about 60.0 s left; cost table: 4.0 min for the item at paper "
        "settings)",
        "fig3: 2/3 b done in 2.8 min (3.3 min elapsed, about 100.0 s left; cost table: 4.0 min for the item at "
        "paper settings)",
        "fig3: 3/3 c done in 10.0 s (3.5 min elapsed, about 0.0 s left; cost table: 4.0 min for the item at paper "
        "settings)"]
    monkeypatch.setenv("REPRO_DPADMM_EXPECTED_S", "not a number")
    out = io.StringIO()
    list(progress(["a"], "fig3", stream=out, clock=iter([0.0, 0.0, 1.0]).__next__))
    assert "cost table" not in out.getvalue()


def test_item_log_streams_the_notebook_output(tmp_path, capfd):
    """runner.run_item executes with papermill's log_output: each cell and its printed output reach stderr (the
    job's log under Snakemake) while the notebook runs."""
    from repro_dpadmm.runner import run_item

    root = tmp_path / "project"
    (root / "notebooks/demo").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "Snakefile").write_text("")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("params = {}\nout_dir = '.'", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print('sweep: 1/1 setting done')"),
                nbformat.v4.new_code_cell("import json, pathlib\n"
                                          "metrics = pathlib.Path(out_dir, 'metrics.json')\n"
                                          "metrics.write_text(json.dumps({'status': 'ok'}))")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "notebooks/demo/item.ipynb")
    metrics = run_item("demo", "item", {}, root / "results/demo/item", root=root)
    assert metrics["status"] == "ok"
    err = capfd.readouterr().err
    assert "Executing Cell 2" in err and "sweep: 1/1 setting done" in err
    assert json.loads((root / "results/demo/item/metrics.json").read_text())["status"] == "ok"
