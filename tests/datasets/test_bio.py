"""XU: the bio_train loader on synthetic KDD Cup 2004 files, and one smoke item end to end on the mirrored data."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from repro_dpadmm.datasets import bio
from repro_dpadmm.paths import project_root


def kdd_lines(rng, n):
    """Rows in the KDD Cup 2004 protein-homology layout: BLOCK-ID EXAMPLE-ID label(0/1) then 74 features."""
    rows = []
    for i in range(n):
        feats = " ".join(f"{v:.4f}" for v in rng.normal(size=bio.N_FEATURES))
        rows.append(f"{279 + i // 3}\t{261532 + i}\t{int(i % 4 == 0)}\t{feats}")
    return "\n".join(rows) + "\n"


def test_bio_parse_split_and_archive(tmp_path):
    rng = np.random.default_rng(0)
    text = kdd_lines(rng, 11)
    X, y = bio.parse(io.StringIO(text))
    assert X.shape == (11, 74)
    np.testing.assert_array_equal(y, np.where(np.arange(11) % 4 == 0, 1.0, -1.0))
    first = np.array(text.splitlines()[0].split()[3:], dtype=float)
    np.testing.assert_allclose(X[0], first)  # the two ids and the label are dropped
    parts = bio.split(X, y, np.random.default_rng(0))
    assert parts["X_train"].shape == (6, 74) and parts["X_test"].shape == (5, 74)  # odd row goes to training
    assert sorted(np.r_[parts["y_train"], parts["y_test"]].tolist()) == sorted(y.tolist())

    plain = tmp_path / "bio_train.dat"
    plain.write_text(text)
    archive = tmp_path / "data_kddcup04.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(plain, arcname="bio_train.dat")
        extra = tmp_path / "phy_train.dat"
        extra.write_text("not this one\n")
        tar.add(extra, arcname="phy_train.dat")
    for path in (plain, archive):
        Xa, ya = bio.read_archive(path)
        np.testing.assert_array_equal(Xa, X)
        np.testing.assert_array_equal(ya, y)


def test_bio_bad_files(tmp_path):
    with pytest.raises(ValueError, match="77 columns"):
        bio.parse(io.StringIO("1 2 1 0.5 0.5\n"))
    rng = np.random.default_rng(1)
    bad = kdd_lines(rng, 2).replace("\t1\t", "\t2\t", 1)
    with pytest.raises(ValueError, match="labels"):
        bio.parse(io.StringIO(bad))
    archive = tmp_path / "empty.tar.gz"
    other = tmp_path / "other.dat"
    other.write_text("x\n")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(other, arcname="other.dat")
    with pytest.raises(ValueError, match="no bio_train.dat"):
        bio.read_archive(archive)


@pytest.mark.mirror
def test_smoke_table1_through_runner(processed_root, tmp_path):
    from repro_dpadmm import config
    from repro_dpadmm.runner import run_item

    ROOT = project_root(Path(__file__).parent)

    for entry in ("Snakefile", "config", "notebooks", "workflow"):  # a freshly built data root: borrow the project
        if not (processed_root / entry).exists():
            (processed_root / entry).symlink_to(ROOT / entry)
    params = config.item_params("xu2020_dpaccadmm", "table1", processed_root / "config/smoke.yaml",
                                root=processed_root)
    params["datasets"] = ["ijcnn1", "bio_train"]  # the small one, and one that may be unavailable
    metrics = run_item("xu2020_dpaccadmm", "table1", params, tmp_path / "table1", root=processed_root)
    assert metrics["status"] == "ok"
    on_disk = json.loads((tmp_path / "table1" / "metrics.json").read_text())
    assert on_disk == metrics
    assert metrics["n_train.ijcnn1"] == 49990 and metrics["n_test.ijcnn1"] == 91701 and metrics["d.ijcnn1"] == 22
    assert metrics["edges.ijcnn1"] >= 22 and metrics["eta.ijcnn1"] > 0
    if not metrics["available.bio_train"]:
        assert metrics["status.bio_train"] == "not run: dataset unavailable"
    assert (tmp_path / "table1" / "table1.html").stat().st_size > 0
