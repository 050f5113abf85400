"""The `repro-dpadmm` command."""

import pytest

from repro_dpadmm.cli import main


def test_info_lists_versions_mirror_and_cache(capsys, monkeypatch):
    monkeypatch.setenv("REPRO_DPADMM_DATA_MIRROR", "/some/mirror")
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "dp-accounting" in out and "/some/mirror" in out and "uci/adult/adult.data" in out


def test_data_list_names_every_dataset(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("adult_huang2019", "adult_zhang2018", "a9a", "a8a", "ijcnn1", "gisette", "bio_train"):
        assert name in out


def test_data_fetch_reports_failure_with_exit_code(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_DPADMM_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DPADMM_DATA_MIRROR", raising=False)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["data", "fetch", "gisette"]) == 1
    assert "could not obtain libsvm/binary/gisette_scale.bz2" in capsys.readouterr().err


def test_unknown_item_is_a_clear_error(capsys):
    assert main(["run", "huang2019_dpadmm", "no_such_item"]) == 2
    assert "no item huang2019_dpadmm/no_such_item" in capsys.readouterr().err


def test_unknown_dataset_is_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        main(["data"])
    assert main(["data", "build", "mnist"]) == 2
    assert "unknown dataset 'mnist'" in capsys.readouterr().err
