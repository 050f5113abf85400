"""benchmarks/dag.py: a run's job table and job CPU count the files that run wrote, not older ones in the folder."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("dag_benchmark", ROOT / "benchmarks" / "dag.py")
dag = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dag)


def _job(logs: Path, name: str, cpu: float, wall: float, age: float) -> None:
    log, tsv = logs / f"{name}.log", logs / "benchmarks" / f"{name}.tsv"
    for p in (log, tsv):
        p.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"output\nrepro-dpadmm job cost: {wall} s wall, {cpu} s CPU\n")
    tsv.write_text(f"s\th:m:s\tmax_rss\n{wall}\t0:00:01\t100.0\n")
    old = time.time() - age
    for p in (log, tsv):
        os.utime(p, (old, old))


def test_a_run_counts_only_the_logs_and_benchmark_files_it_wrote(tmp_path):
    _job(tmp_path, "beyond/frontier/zhang_dvp/eps0.1+eps0.3", cpu=80.0, wall=85.0, age=3600.0)   # an earlier run's
    _job(tmp_path, "beyond/frontier/zhang_dvp/eps0.1", cpu=30.0, wall=31.0, age=0.0)
    since = time.time() - 60.0
    assert dag.job_cpu(tmp_path, since) == {"beyond/frontier/zhang_dvp/eps0.1": 30.0}
    assert [r[0] for r in dag.jobs(tmp_path / "benchmarks", since)] == ["beyond/frontier/zhang_dvp/eps0.1"]
    assert sum(dag.job_cpu(tmp_path).values()) == 110.0 and len(dag.jobs(tmp_path / "benchmarks")) == 2   # --read
