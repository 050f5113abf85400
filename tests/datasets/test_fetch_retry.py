"""A failed fetch does not stick: the real dataset and item rules, driven by `snakemake` in a scratch project.

A mirror folder that lacks the files: the dataset is recorded unavailable, its item "not run", and a second call has
nothing to do. The mirror is fixed: the next `snakemake` call rebuilds the dataset and runs the item. An intact
dataset is then not rebuilt when the mirror setting changes.
"""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from conftest import ROOT, snakemake

FILES = ("libsvm/binary/a8a", "libsvm/binary/a8a.t")


@pytest.fixture
def scratch(tmp_path):
    proj = tmp_path / "proj"
    (proj / "config").mkdir(parents=True)
    (proj / "workflow/schemas").mkdir(parents=True)
    (proj / "workflow/schemas/config.schema.yaml").write_text("type: object\n")
    rules = ROOT / "workflow/rules"
    (proj / "Snakefile").write_text(
        "import os, sys\n"
        "os.environ['PATH'] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get('PATH', '')])\n"
        "config.update(seed=0, datasets={'a8a': {}}, papers={'demo': {'item': {'datasets': ['a8a']}}})\n"
        f"include: {str(rules / 'common.smk')!r}\n"
        f"include: {str(rules / 'items.smk')!r}\n"
        f"include: {str(rules / 'datasets.smk')!r}\n"
        "rule all:\n    default_target: True\n    input: item_outputs('demo', 'item')\n")
    nb = new_notebook(cells=[
        new_code_cell("params = None\nout_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell("from repro_dpadmm.datasets import load\n"
                      "from repro_dpadmm.experiments.common import write_metrics\n"
                      "write_metrics(out_dir, {'rows': load('a8a')['X_train'].shape[0]})"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (proj / "notebooks/demo").mkdir(parents=True)
    nbformat.write(nb, proj / "notebooks/demo/item.ipynb")
    return proj


def _run(proj, env, *args):
    run = snakemake(["--cores", "1", *args], cwd=proj, env={"REPRO_DPADMM_OFFLINE": "1", **env}, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout + run.stderr


def _state(proj):
    side = json.loads((proj / "resources/processed/a8a.json").read_text())
    metrics = json.loads((proj / "results/demo/item/metrics.json").read_text())
    return side["available"], metrics["status"], metrics.get("rows")


@pytest.mark.workflow
@pytest.mark.mirror
def test_mirror_fixed_afterwards_rebuilds_the_dataset_and_runs_the_item(scratch, mirror, tmp_path):
    fixme = tmp_path / "mirror"
    (fixme / "libsvm/binary").mkdir(parents=True)
    env = {"REPRO_DPADMM_DATA_MIRROR": str(fixme)}
    _run(scratch, env)  # the mirror lacks the files
    assert _state(scratch) == (False, "not run", None)
    assert "Nothing to be done" in _run(scratch, env, "-n")  # a failure with nothing changed is not redone

    for rel in FILES:  # the mirror is fixed
        shutil.copy(mirror / rel, fixme / rel)
    out = _run(scratch, env)
    assert "rule dataset:" in out and "demo/item: running its notebook" in out  # both jobs ran again
    assert _state(scratch) == (True, "ok", 22696)
    # an intact dataset is not rebuilt, whatever the mirror setting (tests/test_data_faults.py: attempt state)
    assert "Nothing to be done" in _run(scratch, {"REPRO_DPADMM_DATA_MIRROR": ""}, "-n")
