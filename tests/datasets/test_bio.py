"""datasets.bio: the bio_train loader (KDD Cup 2004 protein homology, XU) on synthetic files."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from repro_dpadmm.datasets import bio


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


def test_a_member_larger_than_the_real_file_is_refused_from_its_header(tmp_path, monkeypatch):
    """A mirror's archive whose bio_train.dat is far larger than the real one (a 14 MB archive held 1.5 GB, read as
    6 GB) is refused before a byte of it is read."""
    import io
    import tarfile

    from repro_dpadmm.datasets import bio

    monkeypatch.setattr(bio, "MAX_BYTES", 1000)
    archive = tmp_path / "data_kddcup04.tar.gz"
    data = b"1 1 0 " + b"0.5 " * 600 + b"\n"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("bio_train.dat")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="bio_train.dat has 2,407 bytes, more than the 1,000"):
        bio.read_archive(archive)


def test_an_oversized_pax_header_is_refused_before_it_is_read(tmp_path):
    """tarfile reads a pax header whole: a 1 GiB one in a 4.6 MB archive from a mirror ran out of memory."""
    import io
    import tarfile

    from repro_dpadmm.datasets import bio
    from repro_dpadmm.datasets.registry import SizeCapError

    archive = tmp_path / "data_kddcup04.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("bio_train.dat")
        info.pax_headers = {"comment": "x" * (bio.MAX_HEADER + 10)}
        info.size = 4
        tar.addfile(info, io.BytesIO(b"1 1\n"))
    with pytest.raises(SizeCapError, match=r"a tar header of [\d,]+ bytes \(pax or GNU long name; at most 1,048,576\)"):
        bio.read_archive(archive)
