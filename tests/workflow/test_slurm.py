"""The SLURM profile against a real one-node SLURM (.ci/slurm-up): a slice of the smoke DAG (a split item with its
parts, the frontier with its jobs, the report) submitted with sbatch through workflow/profiles/slurm, its outputs
compared with the same slice run locally; a job that fails; a job killed with scancel, then the rerun.

Skipped, with the reason, where SLURM or the executor plugin is not installed (`.ci/slurm-up --install` installs
SLURM as root; `.ci/run` does). The cluster's files (config, munge key, state, logs) live in the test's temporary
folder and it is stopped at the end of this module, whether its tests passed or not."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import pickle
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, fresh_copy

pytestmark = [pytest.mark.workflow, pytest.mark.mirror]

SBIN = os.pathsep.join(["/usr/sbin", "/sbin"])
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "sinfo")
PAPER, ITEM = "zhang2018_radmm", "fig2"          # a split item: four parts (two noise levels, each with its sweep)
METRICS = f"results/{PAPER}/{ITEM}/metrics.json"
SUBMITTED = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")
# The test's cluster has no accounting database (.ci/slurm-up says why): job states come from squeue, which keeps a
# finished job for MinJobAge (300 s), far longer than the status checks (every 2 s after a job finished, instead of
# the plugin's 40 s, so that the slice takes about as long as its jobs).
CLUSTER_ARGS = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
                "--seconds-between-status-checks", "2"]


# ------------------------------------------------------------------------------------------------- the cluster
def _why_not() -> str | None:
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "the SLURM executor plugin is not installed (pip install -e '.[cluster]')"
    path = os.pathsep.join([os.environ.get("PATH", ""), SBIN])
    missing = [c for c in DAEMONS if shutil.which(c, path=path) is None]
    if missing:
        return f"SLURM is not installed ({', '.join(missing)} not found; `.ci/slurm-up --install` installs it as root)"
    if os.geteuid() != 0:
        return "the one-node SLURM of .ci/slurm-up runs its daemons as root"
    return None


def _free_port_pair() -> int:
    """A port p with p and p + 1 free (slurmctld and slurmd), from SLURM's default 6817 up."""
    for port in range(6817, 6917, 2):
        try:
            for p in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("", p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports in 6817-6916 for slurmctld and slurmd")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, mirror):
    """A running one-node SLURM; yields the environment every Snakemake run of this module gets (SLURM_CONF, the
    mirror, and temporary and cache folders inside the test's folder, so that nothing lands outside it)."""
    why = _why_not()
    if why:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("slurm")
    state = base / "cluster"
    env = {**os.environ, "SLURM_CI_PORT": str(_free_port_pair())}
    try:
        up = subprocess.run([str(ROOT / ".ci/slurm-up"), str(state)], env=env, capture_output=True, text=True,
                            timeout=180)
        assert up.returncode == 0, f"slurm-up failed:\n{up.stdout}\n{up.stderr}"
        conf = re.search(r"^SLURM_CONF=(.+)$", up.stdout, re.M).group(1)
        home = base / "home"
        for sub in ("tmp", "cache", "config", "jupyter", "mpl", "bin"):
            (home / sub).mkdir(parents=True)
        # Inside a job, the plugin's job step (snakemake-executor-plugin-slurm-jobstep) starts the rule with `srun`
        # after removing every SLURM_* variable but the job's ids from its environment, SLURM_CONF included; a
        # cluster whose slurm.conf is not at the default path (this one's is in the test's folder) then fails every
        # job with "Could not establish a configuration source". This srun puts it back (workflow/profiles/README.md
        # gives users the same workaround).
        srun = home / "bin/srun"
        srun.write_text(f"#!/bin/sh\nSLURM_CONF={conf} exec {shutil.which('srun')} \"$@\"\n")
        srun.chmod(0o755)
        yield {
            **os.environ,
            "PATH": os.pathsep.join([str(home / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]]),
            "SLURM_CONF": conf,
            "REPRO_DPADMM_DATA_MIRROR": str(mirror),
            "REPRO_DPADMM_OFFLINE": "1",
            "TMPDIR": str(home / "tmp"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "JUPYTER_RUNTIME_DIR": str(home / "jupyter"),
            "MPLCONFIGDIR": str(home / "mpl"),
        }
    finally:
        down = subprocess.run([str(ROOT / ".ci/slurm-down"), str(state)], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr


def _squeue(env) -> dict[str, dict]:
    """Every job the controller still knows (finished ones for MinJobAge): id -> state, name, comment, time limit,
    memory, cores."""
    out = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T|%j|%k|%l|%m|%C"], env=env,
                         capture_output=True, text=True, check=True).stdout
    keys = ("state", "name", "comment", "time_limit", "memory", "cpus")
    return {row.split("|")[0]: dict(zip(keys, row.split("|")[1:])) for row in out.splitlines() if row.strip()}


# ------------------------------------------------------------------------------------------------- the slice
def _slice_project(dst: Path, processed_root: Path) -> Path:
    """A fresh copy of the workflow whose config is the smoke config cut to the slice: ZKL-RADMM Fig. 2 (split into
    parts) and the frontier at one level for one method (its job with its noiseless run, and the floor), with the two
    processed datasets they read already in place (the datasets rule is the workflow test's)."""
    from repro_dpadmm.config import deep_merge

    proj = fresh_copy(dst)
    cfg = deep_merge(yaml.safe_load((ROOT / "config/config.yaml").read_text()),
                     yaml.safe_load((ROOT / "config/smoke.yaml").read_text()))
    frontier = {**cfg["papers"]["beyond"]["frontier"], "levels": [3.0], "methods": ["zhang_radmm"]}
    cfg["papers"] = {PAPER: {ITEM: cfg["papers"][PAPER][ITEM]}, "beyond": {"frontier": frontier}}
    needed = {d for items in cfg["papers"].values() for p in items.values() for d in p.get("datasets", [])}
    cfg["datasets"] = {k: v for k, v in cfg["datasets"].items() if k in needed}
    (proj / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (proj / "resources/processed").mkdir(parents=True)
    for name in sorted(needed):
        for ext in ("json", "npz"):
            shutil.copy2(processed_root / f"resources/processed/{name}.{ext}", proj / "resources/processed")
    return proj


def _snakemake(args, proj, env, timeout=600):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=proj, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return proc, time.monotonic() - t0


def _on_slurm(*args):
    return ["--workflow-profile", "workflow/profiles/slurm", *CLUSTER_ARGS, *args]


@pytest.fixture(scope="module")
def local_slice(cluster, processed_root, tmp_path_factory):
    proj = _slice_project(tmp_path_factory.mktemp("local") / "project", processed_root)
    proc, seconds = _snakemake(["--cores", "2"], proj, cluster)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proj, seconds


@pytest.fixture(scope="module")
def slurm_slice(cluster, local_slice, processed_root, tmp_path_factory):
    proj = _slice_project(tmp_path_factory.mktemp("onslurm") / "project", processed_root)
    proc, seconds = _snakemake(_on_slurm(), proj, cluster)
    return proj, proc, seconds


# ------------------------------------------------------------------------------------------------- comparing
def _without_times(value):
    """A JSON value without the keys that time the run (wall, CPU and calibration seconds)."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if "time" not in k}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def _part(proj: Path, rel: str) -> dict:
    """A part file's record, its signature checked with its own project's key (each project signs with its own),
    without its wall time."""
    blob = (proj / rel).read_bytes()
    head = b"repro-dpadmm signed part 1\n"
    mac, data = blob[len(head):len(head) + 32], blob[len(head) + 32:]
    key = (proj / "resources/.parts-key").read_bytes()
    assert blob.startswith(head) and hmac.compare_digest(mac, hmac.new(key, data, hashlib.sha256).digest()), rel
    rec = pickle.loads(data)
    rec.pop("wall_time_s", None)
    return rec


def _same_outputs(a: Path, b: Path) -> list[str]:
    """The outputs the slice compares (every JSON the items, the jobs and the report write, and every part), as
    relative paths; asserts each is the same in both projects, times aside."""
    names = sorted(str(p.relative_to(a)) for p in (a / "results").rglob("*.json")
                   if not p.name.startswith(".") and p.name != "settings.json" and "/report/items/" not in str(p))
    assert names and sorted(str(p.relative_to(b)) for p in (b / "results").rglob("*.json")
                            if not p.name.startswith(".") and p.name != "settings.json"
                            and "/report/items/" not in str(p)) == names
    for rel in names:
        if rel == "results/report/summary.json":
            continue  # it records each item's run times and dates; its verdicts are those of claims.json
        assert _without_times(json.loads((a / rel).read_text())) == \
            _without_times(json.loads((b / rel).read_text())), rel
    parts = sorted(str(p.relative_to(a)) for p in (a / "results").rglob("parts/*.pkl"))
    assert len(parts) == 4, parts
    for rel in parts:
        assert pickle.dumps(_part(a, rel)) == pickle.dumps(_part(b, rel)), rel
    return names + parts


# ------------------------------------------------------------------------------------------------- the tests
def test_slice_runs_through_sbatch_and_its_outputs_are_the_local_runs(cluster, local_slice, slurm_slice, capsys):
    local, local_s = local_slice
    proj, proc, slurm_s = slurm_slice
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    run_id = re.search(r"SLURM run ID: (\S+)", out).group(1)
    submitted = dict(SUBMITTED.findall(out))
    # every job of the slice but the target rule: 4 parts, 2 frontier jobs (ZKL R-ADMM's level with its noise-free
    # run, rule frontier_job_lanes_1; the floor, rule frontier_jobs_1), 2 notebooks, the report
    assert len(submitted) == 9, out[-5000:]
    seen = _squeue(cluster)
    for jobid in submitted:
        assert jobid in seen, (jobid, seen)
        assert seen[jobid]["state"] == "COMPLETED" and seen[jobid]["name"] == run_id, seen[jobid]
    # the profile's resources as sbatch got them: 15 minutes, 2000 MB, one core
    by_rule = {seen[j]["comment"].split("_wildcards_")[0]: seen[j] for j in submitted}
    assert set(by_rule) == {"rule_item_part", "rule_frontier_jobs_1", "rule_frontier_job_lanes_1", "rule_item_notebook",
                            "rule_report"}, by_rule
    for rule, job in by_rule.items():
        assert (job["time_limit"], job["memory"], job["cpus"]) == ("15:00", "2000M", "1"), (rule, job)
    # SLURM's own logs go to logs/slurm/ and are deleted once a job succeeded
    assert all(Path(log).parent.is_relative_to(proj / "logs/slurm") for log in submitted.values())
    assert not list((proj / "logs/slurm").rglob("*.log"))
    compared = _same_outputs(local, proj)
    with capsys.disabled():
        print(f"\nSLURM slice: {len(submitted)} sbatch jobs (ids {', '.join(sorted(submitted, key=int))}), "
              f"all COMPLETED in squeue; {slurm_s:.0f} s on SLURM against {local_s:.0f} s locally (--cores 2); "
              f"{len(compared)} outputs identical to the local run's")


def test_a_failing_job_is_reported_failed_with_its_log(cluster, slurm_slice, capsys):
    """An unreachable solver tolerance (the schema allows it; the solver raises, naming the residual) for one part."""
    proj, _, _ = slurm_slice
    target = f"results/{PAPER}/{ITEM}/parts/alpha1.pkl"
    proc, _ = _snakemake(_on_slurm(target, "--retries", "0", "--config",
                                   f"papers={{{PAPER}: {{{ITEM}: {{newton_tol: 1.0e-300}}}}}}"), proj, cluster)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-4000:]
    (jobid, slurm_log), = SUBMITTED.findall(out)
    assert _squeue(cluster)[jobid]["state"] == "FAILED"
    assert f"SLURM-job '{jobid}' failed, SLURM status is: 'FAILED'" in out, out[-4000:]
    assert "Error in rule item_part" in out
    # the rule's log, shown in the output (show-failed-logs), and SLURM's log of the job, kept since it failed
    assert f"logs/{PAPER}/{ITEM}/alpha1.log" in out and "NotConvergedError" in out, out[-4000:]
    assert "NotConvergedError" in (proj / f"logs/{PAPER}/{ITEM}/alpha1.log").read_text()
    assert Path(slurm_log).is_file() and "Error in rule item_part" in Path(slurm_log).read_text()
    assert not (proj / target).exists()
    with capsys.disabled():
        print(f"\nSLURM failing job: {jobid} FAILED in squeue, reported with its log and SLURM's")


def test_a_job_killed_with_scancel_fails_the_run_and_the_rerun_completes(cluster, local_slice, slurm_slice, tmp_path,
                                                                         capsys):
    local, _ = local_slice
    proj, _, _ = slurm_slice
    log = tmp_path / "killed.log"
    with open(log, "w") as fh:
        run = subprocess.Popen([sys.executable, "-m", "snakemake", *_on_slurm(METRICS, "--retries", "0",
                                                                              "--forcerun", "item_notebook")],
                               cwd=proj, env=cluster, stdout=fh, stderr=subprocess.STDOUT, text=True)
        try:
            victim, deadline = None, time.monotonic() + 300
            while victim is None and time.monotonic() < deadline and run.poll() is None:
                running = [j for j, s in _squeue(cluster).items()
                           if s["comment"].startswith("rule_item_notebook") and s["state"] == "RUNNING"]
                victim = running[0] if running else None
                time.sleep(0.2)
            assert victim, log.read_text()[-4000:]
            subprocess.run(["scancel", victim], env=cluster, check=True)
            run.wait(timeout=300)
        finally:
            if run.poll() is None:
                run.kill()
    out = log.read_text()
    assert run.returncode != 0, out[-4000:]
    assert _squeue(cluster)[victim]["state"] == "CANCELLED"
    assert f"SLURM-job '{victim}' failed, SLURM status is: 'CANCELLED'" in out, out[-4000:]
    assert not (proj / METRICS).exists()   # the killed run replaced nothing: its outputs are absent, not partial
    proc, _ = _snakemake(_on_slurm(METRICS), proj, cluster)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    rerun = dict(SUBMITTED.findall(proc.stdout + proc.stderr))
    assert len(rerun) == 1 and all(_squeue(cluster)[j]["state"] == "COMPLETED" for j in rerun)
    assert _without_times(json.loads((proj / METRICS).read_text())) == \
        _without_times(json.loads((local / METRICS).read_text()))
    with capsys.disabled():
        print(f"\nSLURM scancel: job {victim} CANCELLED, the run failed; the rerun's job {', '.join(rerun)} "
              f"COMPLETED with the local run's metrics")
