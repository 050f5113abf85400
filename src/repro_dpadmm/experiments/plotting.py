"""Plotting and table helpers any paper's experiment module may use (shared, not a paper module).

* `summary` / `range_bars`: the mean curve over runs with vertical bars of total height L_range(t) = max - min over
  the runs, centred at the mean (docs/choices.md#range-bars; ZKL's L_mean(t) and L_range(t), ICML §5.2).
* `accuracy_privacy`: columns of an accuracy panel (mean with range bars) above a privacy panel (a bound P(t)), the
  layout of ZKL-ICML Figs. 2-4 and ZKL-RADMM Figs. 2-3.
* `metrics_table`: a Markdown table of selected metrics, for a notebook's results table.
* `figure_data` / `write_figure_data`: every value a figure draws (lines, points, bars, error bars, bands, reference
  lines), read back from its Axes as one tidy table, so that every saved figure comes with a CSV of exactly what it
  plots, whatever item drew it.

matplotlib is imported inside the functions: the notebook chooses its backend before anything draws.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np


def summary(L: np.ndarray) -> dict:
    """L_mean(t), L_range(t) = max - min over runs (docs/choices.md#range-bars), as arrays over t; L has shape (runs, T + 1)."""
    return {"L_mean": L.mean(axis=0), "L_range": L.max(axis=0) - L.min(axis=0)}


def range_bars(ax, t, mean, rng, color, every: int, label=None, **kw):
    """Mean curve with vertical bars of total height L_range centred at L_mean (docs/choices.md#range-bars), every `every` points."""
    ax.plot(t, mean, color=color, label=label, **kw)
    sel = slice(0, None, every)
    ax.errorbar(t[sel], mean[sel], yerr=rng[sel] / 2.0, fmt="none", ecolor=color, elinewidth=0.9, capsize=2)


def accuracy_privacy(columns: list[dict], *, legend_size: int = 7, loss_top: float | None = None,
                     width: float = 5.5, height: float = 7.5):
    """One column per setting: accuracy (L_mean(t) with range bars) above privacy (P(t)).

    Each column is {"accuracy": title, "privacy": title, "curves": [curve, ...]} and each curve a dict with
    "L_mean", "L_range", "P" (arrays over t = 0..T), "label", "color" and optionally "ls". `loss_top` caps the
    accuracy axis (a diverging comparator would otherwise flatten the others). Returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(columns), figsize=(width * len(columns), height), squeeze=False)
    for j, col in enumerate(columns):
        for c in col["curves"]:
            t = np.arange(len(c["L_mean"]))
            ls = c.get("ls", "-")
            range_bars(axes[0, j], t, c["L_mean"], c["L_range"], c["color"], max(1, (len(t) - 1) // 20),
                       label=c["label"], ls=ls)
            axes[1, j].plot(np.arange(len(c["P"])), c["P"], color=c["color"], label=c["label"], ls=ls)
        axes[0, j].set_title(col["accuracy"])
        axes[0, j].set_ylabel("L_mean(t), bars: L_range(t)")
        if loss_top is not None:
            axes[0, j].set_ylim(top=min(axes[0, j].get_ylim()[1], loss_top))
        axes[1, j].set_title(col["privacy"])
        axes[1, j].set_ylabel("P(t)")
        axes[1, j].set_xlabel("iteration t")
        for ax in axes[:, j]:
            ax.legend(fontsize=legend_size)
    fig.tight_layout()
    return fig


def metrics_table(metrics: dict, keep: Callable[[str], bool] | Iterable[str] | None = None) -> str:
    """Markdown table `| metric | value |` of the metrics whose key `keep` accepts (a predicate or a list of keys;
    all by default), in the order of `metrics`."""
    if keep is None:
        selected = list(metrics)
    elif callable(keep):
        selected = [k for k in metrics if keep(k)]
    else:
        selected = [k for k in keep if k in metrics]
    lines = ["| metric | value |", "|---|---|"]
    lines += [f"| `{k}` | {_fmt(metrics[k])} |" for k in selected]
    return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return str(v)
    return f"{v:.6g}"


def rows_table(rows: list[dict]) -> str:
    """Markdown table of `rows` (dicts; the columns are their keys in first-seen order; a missing value shows as -)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(str(c).replace("|", "\\|") for c in cols) + " |", "|" + "---|" * len(cols)]
    return "\n".join(lines + ["| " + " | ".join("–" if r.get(c) is None else _fmt(r[c]).replace("|", "/")
                                                 for c in cols) + " |" for r in rows])


def range_se(L: np.ndarray, rng: np.random.Generator, late_from: int, n_boot: int = 2000) -> dict:
    """The paper's stability measure and its standard error: L_range at the last t and the mean of L_range(t) over
    t >= late_from, for runs L (runs, T + 1), with the bootstrap standard error of each over the runs (runs drawn with
    replacement, n_boot resamples from `rng`). A range is one number per curve; the bootstrap gives it the standard
    error a comparison needs (ties are not results)."""
    L = np.asarray(L, dtype=float)
    idx = rng.integers(0, L.shape[0], size=(n_boot, L.shape[0]))
    late = L[:, late_from:]

    def stats(X):
        rng_t = X.max(axis=-2) - X.min(axis=-2)
        return rng_t[..., -1], rng_t.mean(axis=-1)

    final, late_mean = stats(late)
    b_final, b_late = stats(late[idx])
    return {"final": float(final), "final_se": float(b_final.std(ddof=1)), "late": float(late_mean),
            "late_se": float(b_late.std(ddof=1))}


# ------------------------------------------------------------------------------------------------ figure data

DATA_COLUMNS = ("panel", "title", "xlabel", "ylabel", "series", "kind", "x", "y", "ylow", "yhigh", "xtick")


def _num(value) -> str:
    """A plotted value as text: the shortest repr that reads back to the same float; NaN (a gap) as empty."""
    if value is None:
        return ""
    if isinstance(value, (str, np.str_)):
        return str(value)
    v = float(value)
    return "" if math.isnan(v) else repr(v)


def _name(artist, fallback: str) -> str:
    label = str(artist.get_label() or "")
    return fallback if not label or label.startswith("_") else label


def _same_colour(a, b) -> bool:
    from matplotlib.colors import to_rgba

    try:
        return np.allclose(to_rgba(a)[:3], to_rgba(b)[:3])
    except (TypeError, ValueError):
        return False


def _series_of_colour(ax, colour, fallback: str) -> str:
    """The label of the labelled line drawn in `colour` (an unlabelled band or error bar belongs to it)."""
    for line in ax.get_lines():
        if not str(line.get_label()).startswith("_") and _same_colour(line.get_color(), colour):
            return str(line.get_label())
    return fallback


def _first_colour(collection):
    for getter in ("get_edgecolor", "get_facecolor", "get_color"):
        colours = getattr(collection, getter, lambda: [])()
        if len(colours):
            return colours[0]
    return None


def figure_data(fig) -> list[dict]:
    """Every value `fig` draws, one row per point (columns DATA_COLUMNS), panel by panel (Axes in figure order, from
    1): `line` and `points` (Line2D, markers only), `hline` / `vline` (reference lines across the panel: y or x
    only), `errorbar` (x, ylow, yhigh of each bar), `band` (x, ylow, yhigh of a filled region such as min-max over
    runs), `bar` (centre x, height y, the tick label under it in `xtick`), `scatter`. Unlabelled bands and error bars
    take the label of the line of their colour. Text and legends are not data and are left out."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.container import BarContainer, ErrorbarContainer

    rows = []
    for i, ax in enumerate(fig.axes, 1):
        base = {"panel": i, "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel()}

        def add(series, kind, x=None, y=None, ylow=None, yhigh=None, xtick=""):
            rows.append({**base, "series": series, "kind": kind, "x": _num(x), "y": _num(y), "ylow": _num(ylow),
                         "yhigh": _num(yhigh), "xtick": xtick})

        skip, names = set(), {}
        ticks = {}
        try:
            ticks = {round(float(t), 9): lab.get_text() for t, lab in zip(ax.get_xticks(), ax.get_xticklabels())}
        except (TypeError, ValueError):
            pass
        for k, cont in enumerate(ax.containers, 1):
            if isinstance(cont, ErrorbarContainer):
                data_line, caps, bars = cont.lines
                skip |= {id(c) for c in caps} | {id(b) for b in bars}
                colour = _first_colour(bars[0]) if bars else None
                name = _name(cont, _series_of_colour(ax, colour, f"errorbar {k}") if colour is not None
                             else f"errorbar {k}")
                if data_line is not None:
                    names[id(data_line)] = name
                for coll in bars:
                    for seg in coll.get_segments():
                        (x0, y0), (x1, y1) = seg[0], seg[-1]
                        if x0 == x1:  # vertical bars (y errors)
                            add(name, "errorbar", x=x0, ylow=min(y0, y1), yhigh=max(y0, y1))
            elif isinstance(cont, BarContainer):
                name = _name(cont, f"bars {k}")
                for rect in cont.patches:
                    skip.add(id(rect))
                    x = rect.get_x() + rect.get_width() / 2
                    add(name, "bar", x=x, y=rect.get_y() + rect.get_height(), xtick=ticks.get(round(x, 9), ""))
        for j, line in enumerate(ax.get_lines(), 1):
            if id(line) in skip:
                continue
            tr = line.get_transform()
            xs, ys = np.asarray(line.get_xdata(), dtype=object), np.asarray(line.get_ydata(), dtype=object)
            name = names.get(id(line)) or _name(line, f"line {j}")
            if tr == ax.get_yaxis_transform(which="grid"):        # axhline: across the panel at one y
                add(name, "hline", y=ys[0])
            elif tr == ax.get_xaxis_transform(which="grid"):      # axvline
                add(name, "vline", x=xs[0])
            elif tr == ax.transData:
                kind = "points" if line.get_linestyle() in ("None", "none", "", " ") else "line"
                for x, y in zip(xs, ys):
                    add(name, kind, x=x, y=y)
        for j, coll in enumerate(ax.collections, 1):
            if id(coll) in skip or isinstance(coll, LineCollection):
                continue
            if isinstance(coll, PathCollection):               # scatter
                name = _name(coll, f"scatter {j}")
                for x, y in np.asarray(coll.get_offsets()):
                    add(name, "scatter", x=x, y=y)
            elif isinstance(coll, PolyCollection):             # fill_between: the band's lower and upper edge
                name = _name(coll, _series_of_colour(ax, _first_colour(coll), f"band {j}"))
                for path in coll.get_paths():
                    verts = np.asarray(path.vertices, dtype=float)
                    for x in dict.fromkeys(verts[:, 0]):
                        at = verts[verts[:, 0] == x, 1]
                        add(name, "band", x=x, ylow=at.min(), yhigh=at.max())
    return rows


def write_figure_data(fig, path: str | Path) -> Path:
    """`figure_data(fig)` as a CSV file (header DATA_COLUMNS)."""
    path = Path(path)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=DATA_COLUMNS)
        writer.writeheader()
        writer.writerows(figure_data(fig))
    return path
