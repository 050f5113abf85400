"""Plotting and table helpers any paper's experiment module may use (shared, not a paper module).

* `summary` / `range_bars`: the mean curve over runs with vertical bars of total height L_range(t) = max - min over
  the runs, centred at the mean (SPEC §1.6; ZKL's L_mean(t) and L_range(t), ICML §5.2).
* `accuracy_privacy`: columns of an accuracy panel (mean with range bars) above a privacy panel (a bound P(t)), the
  layout of ZKL-ICML Figs. 2-4 and ZKL-RADMM Figs. 2-3.
* `metrics_table`: a Markdown table of selected metrics, for a notebook's results table.

matplotlib is imported inside the functions: the notebook chooses its backend before anything draws.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np


def summary(L: np.ndarray) -> dict:
    """L_mean(t), L_range(t) = max - min over runs (SPEC §1.6), as arrays over t; L has shape (runs, T + 1)."""
    return {"L_mean": L.mean(axis=0), "L_range": L.max(axis=0) - L.min(axis=0)}


def range_bars(ax, t, mean, rng, color, every: int, label=None, **kw):
    """Mean curve with vertical bars of total height L_range centred at L_mean (SPEC §1.6), every `every` points."""
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
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
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
