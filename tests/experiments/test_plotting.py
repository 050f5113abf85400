"""Every figure's data: what plotting.figure_data reads back from the Axes is exactly what was drawn, and
common.save_figure writes it beside the png and pdf (and says under the figure when a run is off the paper
settings)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from repro_dpadmm.experiments.common import save_figure  # noqa: E402
from repro_dpadmm.experiments.plotting import DATA_COLUMNS, figure_data, range_bars  # noqa: E402


def _figure():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(9, 3))
    t = np.arange(5.0)
    range_bars(ax[0], t, t ** 2 / 7, np.full(5, 0.2), "C0", 2, label="DP-ADMM")
    ax[0].fill_between(t, t ** 2 / 7 - 0.1, t ** 2 / 7 + 0.1, color="C0", alpha=0.2)
    ax[0].axhline(0.3, color="k", label="optimum")
    ax[0].axvline(2.0, color="grey")
    ax[0].plot(t, [0.1, np.nan, 0.3, 0.4, 0.5], label="with a gap")
    ax[0].set(title="(a) loss", xlabel="iteration", ylabel="L", yscale="log")
    ax[1].bar([0, 1], [3.0, 4.5], 0.4, label="ADMM")
    ax[1].set_xticks([0, 1], ["eps 0.1", "eps 1"])
    ax[1].errorbar([0, 1], [1.0, 2.0], yerr=[0.1, 0.25], marker="o", label="XU")
    ax[2].scatter([1.0, 2.0], [3.0, 4.0], label="points")
    ax[2].text(0.5, 0.5, "not data", transform=ax[2].transAxes)
    return fig


def _series(rows, panel, series, kind):
    return [r for r in rows if (r["panel"], r["series"], r["kind"]) == (panel, series, kind)]


def test_figure_data_reads_back_exactly_what_is_drawn():
    rows = figure_data(_figure())
    assert set(rows[0]) == set(DATA_COLUMNS)
    line = _series(rows, 1, "DP-ADMM", "line")
    assert [float(r["x"]) for r in line] == list(np.arange(5.0))
    assert [float(r["y"]) for r in line] == list(np.arange(5.0) ** 2 / 7)  # bit for bit (repr round-trips)
    assert {r["title"] for r in line} == {"(a) loss"} and line[0]["ylabel"] == "L"
    bars = _series(rows, 1, "DP-ADMM", "errorbar")  # unlabelled range bars take their line's label
    assert [(float(r["x"]), float(r["ylow"]), float(r["yhigh"])) for r in bars] == [
        (x, x ** 2 / 7 - 0.1, x ** 2 / 7 + 0.1) for x in (0.0, 2.0, 4.0)]
    band = _series(rows, 1, "DP-ADMM", "band")
    assert len(band) == 5 and float(band[3]["ylow"]) == pytest.approx(9 / 7 - 0.1)
    assert [r["y"] for r in _series(rows, 1, "optimum", "hline")] == ["0.3"]
    assert [r["x"] for r in _series(rows, 1, "line 5", "vline")] == ["2.0"]
    assert [r["y"] for r in _series(rows, 1, "with a gap", "line")][1] == ""  # a gap stays a gap
    assert [(r["x"], r["y"], r["xtick"]) for r in _series(rows, 2, "ADMM", "bar")] == [
        ("0.0", "3.0", "eps 0.1"), ("1.0", "4.5", "eps 1")]
    assert [r["y"] for r in _series(rows, 2, "XU", "line")] == ["1.0", "2.0"]
    assert [(r["ylow"], r["yhigh"]) for r in _series(rows, 2, "XU", "errorbar")] == [("0.9", "1.1"),
                                                                                    ("1.75", "2.25")]
    assert [(r["x"], r["y"]) for r in _series(rows, 3, "points", "scatter")] == [("1.0", "3.0"), ("2.0", "4.0")]
    assert not [r for r in rows if "not data" in r["series"]]


def test_save_figure_writes_png_pdf_and_csv_and_states_non_paper_settings(tmp_path):
    import matplotlib.pyplot as plt

    fig = _figure()
    save_figure(fig, tmp_path, "fig9")
    assert {p.name for p in tmp_path.iterdir()} == {"fig9.png", "fig9.pdf", "fig9.csv"}
    with (tmp_path / "fig9.csv").open() as fh:
        assert list(csv.DictReader(fh)) == [{k: str(v) for k, v in r.items()} for r in figure_data(fig)]
    assert not fig.texts  # at the paper settings (no settings.json saying otherwise) nothing is added
    plt.close(fig)
    (tmp_path / "settings.json").write_text(json.dumps(
        {"run": "q103", "changes": [{"key": "q", "run": 1.03, "paper": 1.01}], "paper_settings": "config/config.yaml"}))
    fig = _figure()
    save_figure(fig, tmp_path, "fig9")
    (note,) = fig.texts
    assert note.get_text() == "What-if run 'q103': not the paper settings (config/config.yaml): q = 1.03 (paper: 1.01)"
    plt.close(fig)
