"""The Snakemake workflow: lint, dry-run on a fresh copy, and the datasets target against the mirror."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
pytestmark = pytest.mark.workflow


def fresh_copy(tmp_path: Path) -> Path:
    """The tracked workflow files in a new folder, as after a clone (no resources/, results/, .snakemake/)."""
    dst = tmp_path / "project"
    dst.mkdir()
    for name in ("Snakefile", "workflow", "config", "notebooks", "envs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst / name)
    return dst


def run(args, cwd, env=None, timeout=900):
    proc = subprocess.run(SNAKEMAKE + args, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)
    return proc


def test_lint_is_clean():
    proc = run(["--lint"], ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dry_run_on_fresh_copy(tmp_path):
    proj = fresh_copy(tmp_path)
    proc = run(["-n", "--cores", "2"], proj)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "report" in proc.stdout and "dataset" in proc.stdout


def test_datasets_target_builds_mirrored_and_records_unavailable(mirror, tmp_path):
    proj = fresh_copy(tmp_path)
    env = {"REPRO_DPADMM_DATA_MIRROR": str(mirror), "REPRO_DPADMM_OFFLINE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = run(["--cores", "2", "datasets"], proj, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import json

    processed = proj / "resources/processed"
    for name in ("adult_huang2019", "adult_zhang2018", "a9a", "a8a", "ijcnn1"):
        meta = json.loads((processed / f"{name}.json").read_text())
        assert meta["available"] and (processed / f"{name}.npz").is_file(), name
    for name in ("gisette", "bio_train"):
        meta = json.loads((processed / f"{name}.json").read_text())
        assert meta["available"] is False and "could not obtain" in meta["reason"], name
    assert (proj / "resources/raw/uci/adult/adult.data").is_file()
    assert (proj / "logs/datasets/gisette.log").read_text().strip()
