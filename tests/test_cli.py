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
    """The registry decides which items exist: an unlisted item or paper is named, with what is allowed."""
    assert main(["run", "huang2019_dpadmm", "no_such_item"]) == 2
    assert ("huang2019_dpadmm/no_such_item: no such item (not in repro_dpadmm.registry; allowed: fig1, fig2, fig3, "
            "fig4, fig5, fig6, table2)") in capsys.readouterr().err
    assert main(["run", "huang2019", "fig1"]) == 2
    assert "no paper 'huang2019' in repro_dpadmm.registry" in capsys.readouterr().err


def test_unknown_part_is_a_clear_error_before_any_work(capsys, tmp_path):
    """`part` names the bad key and the item's parts, and writes nothing."""
    out = tmp_path / "p.pkl"
    assert main(["part", "zhang2018_madmm", "fig2", "alpha9", "--configfile", "config/smoke.yaml",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "zhang2018_madmm/fig2 has no part 'alpha9'; its parts: alpha3, alpha3_sweep, alpha5, alpha5_sweep" in err
    assert not out.exists()
    assert main(["part", "zhang2018_madmm", "fig1", "x", "--out", str(out)]) == 2
    assert "its parts: none" in capsys.readouterr().err


def test_unknown_dataset_is_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        main(["data"])
    assert main(["data", "build", "mnist"]) == 2
    assert "unknown dataset 'mnist'" in capsys.readouterr().err


def test_relative_out_dir_is_the_working_directorys(monkeypatch, tmp_path):
    from repro_dpadmm import runner

    seen = {}
    monkeypatch.setattr(runner, "run_item", lambda paper, item, params, out_dir: seen.update(out=out_dir) or
                        {"status": "ok", "wall_time_s": 0})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "huang2019_dpadmm", "fig1", "--out-dir", "here/fig1"]) == 0
    assert seen["out"] == tmp_path / "here/fig1"


def test_data_list_says_damaged_when_the_npz_is_truncated(capsys, monkeypatch, tmp_path):
    import json

    import numpy as np

    processed = tmp_path / "resources/processed"
    processed.mkdir(parents=True)
    np.savez(processed / "a9a.npz", X_train=np.zeros((2, 2)))
    data = (processed / "a9a.npz").read_bytes()
    (processed / "a9a.json").write_text(json.dumps({"available": True, "npz": {"sha256": "0", "size": len(data)}}))
    (processed / "a9a.npz").write_bytes(data[:-20])
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(tmp_path))
    assert main(["data", "list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("a9a "))
    assert "damaged" in line
