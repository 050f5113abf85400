"""Shared fixtures: the offline data mirror and a processed-data root built from it once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repro_dpadmm.paths import project_root

ROOT = project_root(Path(__file__).parent)


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The data mirror folder from REPRO_DPADMM_DATA_MIRROR; tests that need it are skipped (with the reason) without."""
    value = os.environ.get("REPRO_DPADMM_DATA_MIRROR")
    if not value:
        pytest.skip("REPRO_DPADMM_DATA_MIRROR is not set: tests that read the real datasets are skipped")
    path = Path(value)
    if "://" not in value and not path.is_dir():
        pytest.fail(f"REPRO_DPADMM_DATA_MIRROR={value} is not a folder")
    return path


@pytest.fixture(scope="session")
def processed_root(mirror, tmp_path_factory) -> Path:
    """A project-like root whose resources/processed holds the mirrored datasets, built once per test session.

    Reuses the repository's own resources/processed when it is already built (fast local runs).
    """
    from repro_dpadmm.datasets import DATASETS, build, is_available

    if all(is_available(n, ROOT)[0] for n in ("adult_huang2019", "adult_zhang2018", "a9a", "a8a", "ijcnn1")):
        return ROOT
    root = tmp_path_factory.mktemp("project")
    for name in DATASETS:
        build(name, mirror=str(mirror), root=root)
    return root


def fresh_copy(dst: Path) -> Path:
    """The tracked workflow files in a new folder, as after a clone (no resources/, results/, .snakemake/)."""
    import shutil

    dst.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", "config", "notebooks", "envs", ".test"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst / name)
    return dst


def snakemake(args, cwd, env=None, timeout=1800):
    import subprocess
    import sys

    env = {**os.environ, **(env or {}),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="session")
def smoke_project(mirror, tmp_path_factory):
    """A fresh copy of the workflow on which the whole DAG ran once with the CI config .test/config/config.yaml
    (the smoke settings of config/smoke.yaml; offline, mirror).

    Returns (project folder, completed process). `--keep-going` lets every item run even if one fails, so each
    test can report exactly which item broke. One thread per item job (as the rule asks; kept explicit): on CI's two
    cores two small items run side by side.
    """
    proj = fresh_copy(tmp_path_factory.mktemp("smoke") / "project")
    proc = snakemake(["--cores", "2", "--keep-going", "--set-threads", "item_notebook=1",
                      "--configfile", ".test/config/config.yaml"], proj,
                     {"REPRO_DPADMM_DATA_MIRROR": str(mirror), "REPRO_DPADMM_OFFLINE": "1"})
    return proj, proc
