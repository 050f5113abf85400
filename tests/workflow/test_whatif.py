"""A what-if run on the smoke project: one figure rerun with one parameter changed, into its own folder, leaving the
paper run's files byte for byte as they were; its notebook, figure data, settings and report say how it differs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow


def _snapshot(results: Path) -> dict[str, str]:
    return {p.relative_to(results).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(results.rglob("*")) if p.is_file() and not p.relative_to(results).parts[0] == "whatif"}


def test_what_if_run_leaves_the_paper_run_byte_identical(smoke_project, mirror):
    proj, proc = smoke_project
    assert proc.returncode == 0, proc.stderr[-3000:]
    before = _snapshot(proj / "results")
    cmd = [str(Path(sys.executable).parent / "repro-dpadmm"), "run", "zhang2018_radmm", "fig3",
           "--configfile", ".test/config/config.yaml", "--params", '{"q": 1.03}', "--run-name", "q103"]
    run = subprocess.run(cmd, cwd=proj, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "REPRO_DPADMM_DATA_MIRROR": str(mirror), "REPRO_DPADMM_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert _snapshot(proj / "results") == before  # the paper run, byte for byte

    what = proj / "results/whatif/q103/zhang2018_radmm/fig3"
    settings = json.loads((what / "settings.json").read_text())
    assert settings["run"] == "q103" and {"key": "q", "run": 1.03, "paper": 1.01} in settings["changes"]
    assert settings["params"]["q"] == 1.03 and isinstance(settings["params"]["iterations"], int)
    notebook = (what / "fig3.ipynb").read_text()
    assert "What-if run 'q103': not the paper settings" in notebook and "q = 1.03 (paper: 1.01)" in notebook
    assert (what / "fig3.csv").read_text().startswith("panel,")
    report = proj / "results/whatif/q103/report"
    assert "what-if run <code>q103</code>" in (report / "index.html").read_text()
    page = (report / "zhang2018_radmm.html").read_text()
    assert "What-if run <code>q103</code>" in page and "q = 1.03 (paper: 1.01)" in page
    assert json.loads((report / "summary.json").read_text())["papers"].keys() == {"zhang2018_radmm"}
