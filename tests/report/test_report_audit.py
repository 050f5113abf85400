"""Claims files against a results folder: every claim names an existing item and metric keys that item writes.

`check_results(results_dir)` is the reusable part: the end-to-end smoke test calls it on the `results/` the smoke DAG
produced. Here it runs on (a) the folder named by REPRO_DPADMM_RESULTS, or the repository's results/ when it holds
every item a claim names (e.g. after `make smoke`), else is skipped; and (b) synthetic results generated from the
claims files' own metric documentation, plus a synthetic project with known mistakes that it must catch.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from _report_synth import make_project

from repro_dpadmm.paths import project_root
from repro_dpadmm.report.audit import audit
from repro_dpadmm.claims import load_all

ROOT = project_root(Path(__file__).parent)
CLAIMS = ROOT / "config" / "claims"
PROCESSED = ROOT / "resources" / "processed"


def check_results(results: Path, claims_dir: Path = CLAIMS, processed: Path = PROCESSED) -> None:
    """Fail with every problem if a claim names a missing item or a metric key its item does not write."""
    result = audit(claims_dir, results, processed)
    assert result.ok, "claims inconsistent with " + str(results) + ":\n  " + "\n  ".join(result.problems)


@pytest.fixture
def smoke_results() -> Path:
    """REPRO_DPADMM_RESULTS if set; else the repository's results/ when it holds every item a claim names."""
    value = os.environ.get("REPRO_DPADMM_RESULTS")
    if value:
        path = Path(value)
        if not path.is_dir():
            pytest.fail(f"REPRO_DPADMM_RESULTS={value} is not a folder")
        return path
    results = ROOT / "results"
    needed = {(c.paper, c.item) for cf in load_all(CLAIMS) for c in cf.claims if c.item}
    absent = sorted(f"{p}/{i}" for p, i in needed if not (results / p / i / "metrics.json").is_file())
    if not needed or absent:
        pytest.skip("no complete results/ to check the claims against (run the smoke DAG, or set "
                    f"REPRO_DPADMM_RESULTS); missing: {', '.join(absent[:5]) or 'no item claims yet'}")
    return results


def test_claims_match_the_smoke_results(smoke_results):
    check_results(smoke_results)


def synthetic_results(claims_dir: Path, out: Path) -> Path:
    """A results folder in which every item writes exactly the keys its claims file documents."""
    for cf in load_all(claims_dir):
        for item, docs in cf.metrics.items():
            d = out / cf.name / item
            d.mkdir(parents=True, exist_ok=True)
            metrics = {"status": "ok", "reason": "", "wall_time_s": 1.0, **{k: 0.5 for k in docs}}
            (d / "metrics.json").write_text(json.dumps(metrics))
    return out


def test_claims_match_results_written_from_their_own_documentation(tmp_path):
    # Holds when every key a claim reads is documented under metrics.<item> (what an item then writes).
    check_results(synthetic_results(CLAIMS, tmp_path / "results"))


def test_audit_catches_missing_items_and_keys(tmp_path):
    root = make_project(tmp_path / "p")
    claims_dir = root / "config" / "claims"
    data = yaml.safe_load((claims_dir / "huang2019_dpadmm.yaml").read_text())
    data["claims"].append({"id": "huang2019_dpadmm.fig9.nope", "item": "fig9", "quote": "q",
                           "checks": [{"kind": "true", "metric": "x"}]})
    (claims_dir / "huang2019_dpadmm.yaml").write_text(yaml.safe_dump(data))
    result = audit(claims_dir, root / "results", root / "resources" / "processed")
    text = "\n".join(result.problems)
    assert "huang2019_dpadmm.fig9.nope: item huang2019_dpadmm/fig9 is neither in the registry nor in the results" in text
    assert "huang2019_dpadmm.fig1.needs_missing_key" in text and "el_final.n200" in text
    assert "huang2019_dpadmm.fig3.beats_dpsgd: no huang2019_dpadmm/fig3/metrics.json" in text
    assert not any("fig2.aov_converges" in p for p in result.problems)      # not run: skipped, with a note
    assert any("fig2.aov_converges" in n and "not run" in n for n in result.notes)
    assert not any("accuracy_decreases_with_n" in p for p in result.problems)
    # dataset claims are checked on the sidecars: a key the sidecar lacks is caught
    shutil.copy(CLAIMS / "datasets.yaml", claims_dir / "datasets.yaml")
    side = root / "resources" / "processed" / "a9a.json"
    side.write_text(json.dumps({"name": "a9a", "available": True, "arrays": {"X_train": [32561, 123]}}))
    result = audit(claims_dir, root / "results", root / "resources" / "processed")
    assert any("hu2020_sharing.data.a9a_size" in p and "arrays.X_test.0" in p for p in result.problems)


@pytest.mark.mirror
def test_dataset_claims_read_keys_the_real_sidecars_have(mirror, processed_root, tmp_path):
    claims_dir = tmp_path / "claims"
    claims_dir.mkdir()
    shutil.copy(CLAIMS / "datasets.yaml", claims_dir / "datasets.yaml")
    result = audit(claims_dir, tmp_path / "results", processed_root / "resources" / "processed")
    assert result.ok, result.problems
    assert result.checked >= 6  # the Adult and a9a facts (gisette is not in the mirror)


def test_audit_checks_repeats_and_notes_missing_variant_metrics(tmp_path):
    root = make_project(tmp_path / "p")
    claims_dir, results = root / "config" / "claims", root / "results"
    fig1 = results / "huang2019_dpadmm" / "fig1" / "metrics.json"
    metrics = json.loads(fig1.read_text())
    result = audit(claims_dir, results, root / "resources" / "processed")
    assert not any("repeats[" in p for p in result.problems)
    assert not any("variant dpsgd_sum" in n for n in result.notes)   # err.dpsgd@dpsgd_sum is written
    metrics.pop("err.dpsgd@dpsgd_sum")
    metrics["repeats"]["err.ghost"] = [1.0, 2.0]
    fig1.write_text(json.dumps(metrics))
    result = audit(claims_dir, results, root / "resources" / "processed")
    assert any("repeats['err.ghost'] has no flat key" in p for p in result.problems)
    assert any("beats_dpsgd_noisy: variant dpsgd_sum has no <key>@dpsgd_sum" in n for n in result.notes)
