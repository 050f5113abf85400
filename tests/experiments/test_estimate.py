"""Resource bounds (issue 33): a maximum on every integer size of the schema, and a memory estimate that refuses,
naming the keys, schema-valid settings that would not fit in the machine's memory, before any work."""

from __future__ import annotations

import json
import re

import pytest

from repro_dpadmm import config, safeload
from repro_dpadmm.cli import main
from repro_dpadmm.experiments import estimate
from repro_dpadmm.paths import project_root

ROOT = project_root()


def _measured_peaks() -> dict[str, float]:
    """{paper/item: peak MB} from the README's cost table (a paper-scale run's Snakemake benchmarks), without the
    items its note says did not run (their job only reports that its data is missing)."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("<!-- costs:start -->"):text.index("<!-- costs:end -->")]
    not_run = set(re.findall(r"([a-z0-9_]+/[a-z0-9_]+) did not run", table))
    return {m[1]: float(m[2]) for m in re.finditer(r"^\| ([a-z0-9_]+/[a-z0-9_]+)[^|]*\|[^|]*\| ([\d,]+) MB \|",
                                                   table, flags=re.M)
            if float(m[2].replace(",", "")) > 0 and m[1] not in not_run}


def test_at_paper_settings_the_estimate_lies_between_the_measured_peak_and_three_times_it():
    peaks = _measured_peaks()
    cfg = config.load()
    checked = 0
    for paper, items in cfg["papers"].items():
        for item, params in items.items():
            if f"{paper}/{item}" not in peaks:
                continue
            est = estimate.estimate(paper, item, {**params, "seed": 0}).bytes / 1e6
            assert peaks[f"{paper}/{item}"] <= est <= 3 * peaks[f"{paper}/{item}"], (paper, item, est)
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("paper, item, patch, keys", [
    ("huang2019_dpadmm", "fig3", {"repeats": 1000, "iterations": 100_000}, ["repeats", "iterations"]),
    ("beyond", "audit", {"trials": 10_000_000, "calibration_trials": 10_000_000, "chunk": 10_000_000}, ["chunk"]),
    ("zhang2018_madmm", "fig3", {"repeats": 100, "iterations": 100_000,
                                 "graph": {"kind": "erdos_renyi", "nodes": 5000, "p": 0.1}},
     ["repeats", "iterations", "graph.nodes"]),
])
def test_schema_valid_settings_too_large_are_refused_naming_the_keys(paper, item, patch, keys, monkeypatch):
    monkeypatch.setenv(estimate.MEMORY_ENV, "24")
    params = {**config.item_params(paper, item), **patch}
    config.check_item_params(paper, item, params)   # within every maximum of the schema
    with pytest.raises(estimate.TooLarge) as exc:
        estimate.refuse_too_large(paper, item, params)
    message = str(exc.value)
    for key in keys:
        assert f"papers.{paper}.{item}.{key}" in message, message
    assert "more than REPRO_DPADMM_MEMORY_GB=24 (24.0 GiB)" in message
    monkeypatch.setenv(estimate.MEMORY_ENV, "off")
    estimate.refuse_too_large(paper, item, params)


def test_the_memory_setting_is_checked_and_the_machine_is_read(monkeypatch):
    params = config.item_params("huang2019_dpadmm", "fig3")
    monkeypatch.setenv(estimate.MEMORY_ENV, "0.1")
    with pytest.raises(estimate.TooLarge, match="papers.huang2019_dpadmm.fig3.repeats"):
        estimate.refuse_too_large("huang2019_dpadmm", "fig3", params)
    monkeypatch.setenv(estimate.MEMORY_ENV, "plenty")
    with pytest.raises(estimate.TooLarge, match="must be a positive number of GiB or 'off'"):
        estimate.refuse_too_large("huang2019_dpadmm", "fig3", params)
    monkeypatch.delenv(estimate.MEMORY_ENV)
    total, source = estimate.machine_memory()
    assert total > 2**30 and "memory" in source
    assert estimate.refuse_too_large("huang2019_dpadmm", "fig3", params).bytes < total


def test_cli_refuses_before_any_work_and_logs_the_estimate(monkeypatch, capsys):
    from repro_dpadmm import runner

    monkeypatch.setattr(runner, "run_item", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setenv(estimate.MEMORY_ENV, "24")
    params = {**config.item_params("huang2019_dpadmm", "fig3"), "repeats": 1000, "iterations": 100_000}
    assert main(["run", "huang2019_dpadmm", "fig3", "--params", json.dumps(params)]) == 2
    err = capsys.readouterr().err
    assert "papers.huang2019_dpadmm.fig3.repeats" in err and "Traceback" not in err
    paper = config.item_params("huang2019_dpadmm", "fig3")   # 10 repeats of 100 iterations
    e = estimate.estimate("huang2019_dpadmm", "fig3", {**paper, "repeats": 20, "iterations": 200})
    assert "about 4x the work of the paper's settings" in estimate.summary(e, paper)


def _integers(node, path=()):
    if isinstance(node, dict):
        types = node.get("type")
        if "integer" in ([types] if isinstance(types, str) else types or []):
            yield ".".join(path), node
        for key, value in node.items():
            yield from _integers(value, path + (str(key),))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _integers(value, path + (str(i),))


def test_every_integer_size_of_the_schema_has_a_maximum():
    schema = safeload.load_yaml(ROOT / "workflow/schemas/config.schema.yaml")
    fields = list(_integers(schema))
    unbounded = [path for path, node in fields if "maximum" not in node and not path.endswith("seed")]
    assert len(fields) > 70 and unbounded == []


def test_the_issues_examples_are_refused_by_the_schema_naming_the_key():
    for paper, item, patch, key in (("huang2019_dpadmm", "fig3", {"iterations": 10**9}, "iterations"),
                                    ("beyond", "audit", {"trials": 10**10}, "trials")):
        with pytest.raises(config.ConfigError,
                           match=rf"papers\.{paper}\.{item}\.{key}: .* is greater than the maximum"):
            config.check_item_params(paper, item, {**config.item_params(paper, item), **patch})
    graph = {"kind": "erdos_renyi", "nodes": 200_000, "p": 0.01}
    with pytest.raises(config.ConfigError, match=r"graph.nodes: 200000 is greater than the maximum of 5000"):
        config.check_item_params("zhang2018_madmm", "fig3",
                                 {**config.item_params("zhang2018_madmm", "fig3"), "graph": graph})


def test_memory_zero_is_refused_not_taken_for_off(monkeypatch):
    """`off` is the one word that skips the check: 0 (or -1) is a number of GiB, refused as any below one byte."""
    from repro_dpadmm.experiments.estimate import MEMORY_ENV, TooLarge, machine_memory

    monkeypatch.setenv(MEMORY_ENV, "0")
    with pytest.raises(TooLarge, match="must be a positive number of GiB or 'off', got '0'"):
        machine_memory()
    monkeypatch.setenv(MEMORY_ENV, "off")
    assert machine_memory()[0] is None
