"""Preprocessing matches docs/choices.md#adult-preprocessing, docs/choices.md#libsvm-and-kdd-data exactly on the real files."""

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from repro_dpadmm.datasets import DatasetUnavailable, build, load
from repro_dpadmm.datasets import adult, bio, libsvm


@pytest.fixture(scope="module")
def adult_files(mirror):
    base = mirror / "uci/adult"
    return base / "adult.data", base / "adult.test", base / "adult.names"


def test_adult_huang2019(adult_files):
    out = adult.preprocess(*adult_files[:2])
    X, y = out["X"], out["y"]
    assert X.shape == (45222, 104)
    assert int((y == 1).sum()) == 11208 and int((y == -1).sum()) == 34014
    assert out["n_rows_read"] == 48842 and out["n_removed"] == 3620
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)
    assert X.min() >= 0
    assert "native-country=Holand-Netherlands" in out["feature_names"]
    assert "workclass=Never-worked" not in out["feature_names"]


def test_adult_columns_have_max_one_before_row_normalisation(adult_files):
    out = adult.preprocess(*adult_files[:2], row_normalisation="global_max")
    X = out["X"]
    scale = 1.0 / X.max()  # global-max rule divides every row by the same constant
    col_max = X.max(axis=0) / X.max(axis=0).max()
    assert np.allclose(col_max, 1.0)
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() == pytest.approx(1.0) and 0.84 < norms.min() < 0.86
    assert scale > 0


def test_adult_zhang2018_has_the_never_worked_column(adult_files):
    out = adult.preprocess(*adult_files, levels="names")
    X = out["X"]
    assert X.shape == (45222, 105)
    j = out["feature_names"].index("workclass=Never-worked")
    assert np.all(X[:, j] == 0)
    zero_cols = np.flatnonzero(X.max(axis=0) == 0)
    assert list(zero_cols) == [j]
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)


def test_adult_rejects_bad_options(adult_files):
    with pytest.raises(ValueError, match="row_normalisation"):
        adult.preprocess(*adult_files[:2], row_normalisation="l1")


def test_adult_rejects_a_file_of_the_wrong_shape(tmp_path):
    bad = tmp_path / "adult.data"
    bad.write_text("39, State-gov, 77516\n")
    with pytest.raises(ValueError, match="expected 15 comma-separated fields"):
        adult.read_rows(bad)


@pytest.mark.parametrize("name, train, test", [("a9a", (32561, 123), (16281, 123)),
                                               ("a8a", (22696, 123), (9865, 123)),
                                               ("ijcnn1", (49990, 22), (91701, 22))])
def test_libsvm_shapes(mirror, name, train, test):
    d = train[1]
    suffix = ".bz2" if name == "ijcnn1" else ""
    Xtr, ytr = libsvm.load(mirror / f"libsvm/binary/{name}{suffix}", d)
    Xte, yte = libsvm.load(mirror / f"libsvm/binary/{name}.t{suffix}", d)
    assert Xtr.shape == train and Xte.shape == test
    assert set(np.unique(ytr)) == {-1.0, 1.0} and set(np.unique(yte)) == {-1.0, 1.0}


def test_malformed_libsvm_gives_a_clear_error(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("+1 3:1 oops\n")
    with pytest.raises(libsvm.LibsvmFormatError, match="not a valid LIBSVM file"):
        libsvm.load(bad, 10)
    bad.write_text("+1 30:1\n")
    with pytest.raises(libsvm.LibsvmFormatError, match="10 features"):
        libsvm.load(bad, 10)


def test_libsvm_maps_01_labels_and_rejects_multiclass(tmp_path):
    f = tmp_path / "f"
    dump_svmlight_file(np.eye(3), np.array([0, 1, 1]), str(f))
    assert list(libsvm.load(f, 3)[1]) == [-1.0, 1.0, 1.0]
    dump_svmlight_file(np.eye(3), np.array([0, 1, 2]), str(f))
    with pytest.raises(libsvm.LibsvmFormatError, match="binary labels"):
        libsvm.load(f, 3)


def test_synthetic_gisette_like_dense_file(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20, 50))
    y = np.where(rng.random(20) < 0.5, -1, 1)
    f = tmp_path / "gisette_scale.bz2"
    dump_svmlight_file(X, y, str(tmp_path / "plain"))
    import bz2

    f.write_bytes(bz2.compress((tmp_path / "plain").read_bytes()))
    Xl, yl = libsvm.load(f, 50)
    assert np.allclose(Xl, X, atol=1e-12) and np.array_equal(yl, y)


def test_bio_train_format_and_split(tmp_path):
    rng = np.random.default_rng(1)
    n = 11
    rows = np.column_stack([np.arange(n) // 3, np.arange(n), rng.integers(0, 2, n), rng.normal(size=(n, 74))])
    text = "\n".join("\t".join(f"{v:g}" for v in r) for r in rows)
    path = tmp_path / "bio_train.dat"
    path.write_text(text + "\n")
    X, y = bio.read_archive(path)
    assert X.shape == (n, 74) and set(np.unique(y)) <= {-1.0, 1.0}
    parts = bio.split(X, y, np.random.default_rng(0))
    assert parts["X_train"].shape == (6, 74) and parts["X_test"].shape == (5, 74)
    path.write_text("1 2 1 0.5\n")
    with pytest.raises(ValueError, match="expected 77 columns"):
        bio.read_archive(path)


def test_build_records_unavailable_dataset_without_failing(monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    sidecar = build("gisette", root=tmp_path)
    assert sidecar["available"] is False and "gisette_scale.bz2" in sidecar["reason"]
    on_disk = json.loads((tmp_path / "resources/processed/gisette.json").read_text())
    assert on_disk == sidecar
    assert not (tmp_path / "resources/processed/gisette.npz").exists()
    with pytest.raises(DatasetUnavailable, match="gisette"):
        load("gisette", root=tmp_path)


def test_build_from_mirror_writes_npz_and_sidecar(mirror, monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    sidecar = build("a8a", mirror=str(mirror), root=tmp_path)
    assert sidecar["available"] and sidecar["arrays"]["X_train"] == [22696, 123]
    assert all(s["sha256"] for s in sidecar["sources"].values())
    arrays = load("a8a", root=tmp_path)
    assert arrays["X_test"].shape == (9865, 123)
    assert not list((tmp_path / "resources/processed").glob("*.part"))


def test_a_mirror_file_with_non_finite_values_leaves_the_dataset_unavailable(mirror, monkeypatch, tmp_path):
    """A file that passes its parse-and-shape check can still hold nan or 1e999 (a hostile mirror's bio_train.dat):
    the dataset is unavailable, naming the file, never built with NaNs."""
    from _data_faults import nan_in_x_train

    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    nan_in_x_train(monkeypatch)
    sidecar = build("a8a", mirror=str(mirror), root=tmp_path)
    assert not sidecar["available"] and "non-finite values (nan or inf) in X_train" in sidecar["reason"]
    assert not (tmp_path / "resources/processed/a8a.npz").exists()


def test_a_mirror_addresss_credentials_reach_no_sidecar(monkeypatch, tmp_path):
    """A sidecar is bundled: the user:password of a mirror's address is never written into it."""
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    sidecar = build("a8a", mirror="https://user:secret@127.0.0.1:9/x", root=tmp_path)
    text = (tmp_path / "resources/processed/a8a.json").read_text()
    assert not sidecar["available"] and "secret" not in text and "<credentials>@127.0.0.1" in text
