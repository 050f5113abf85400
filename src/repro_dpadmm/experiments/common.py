"""What every item notebook does: resolve its parameters, check its datasets, save figures and metrics."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from pathlib import Path

import numpy as np

from .. import config as config_mod
from .. import safeload, staging
from ..datasets import is_available
from ..paths import project_root, results_dir

# Staging folders of notebooks run by hand: {staging folder: (the item's folder, item)}; write_metrics commits them.
_BY_HAND: dict[Path, tuple[Path, str]] = {}


def setup_item(paper: str, item: str, params: dict | None = None, out_dir: str | Path | None = None):
    """(params, out_dir) for a notebook, and a note on top of it when the run is not at the paper settings.

    Under the runner, papermill injects both (out_dir is the runner's staging folder, holding its settings.json).
    Run by hand (Jupyter, `jupyter nbconvert --execute`), the parameters come from config/config.yaml (unless the
    parameters cell sets them) and the outputs go through the runner's own staging: a hidden folder beside
    results/<paper>/<item>/ that `write_metrics` commits in one step, replacing every file of the earlier run (the
    item's folder then holds this run's figures, settings.json and metrics.json, and no stale notebook)."""
    if not params:
        params = config_mod.item_params(paper, item)
    params = dict(params)
    if out_dir:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        settings = staging.read_settings(out)
    else:
        final = results_dir() / paper / item
        final.parent.mkdir(parents=True, exist_ok=True)
        with staging.item_lock(paper, item, final):   # never while a run of the item (runner) clears or commits
            staging.clear_incomplete(final, item)
        out = staging.new_stage(final, item)
        _BY_HAND[out.resolve()] = (final, item)
        settings = staging.settings_record(paper, item, params, by_hand=True)
        staging.write_settings(out, settings)
    note = settings_note(settings)
    if note:
        show(f"**{note}**")
    return params, out


def settings_note(settings: dict | None) -> str:
    """One line saying that a run is a what-if run or not at the paper settings, and how ("" at paper settings)."""
    if not settings:
        return ""
    run, changes = settings.get("run"), settings.get("changes")
    head = f"What-if run '{run}'" if run else ""
    if changes:
        return (f"{head + ': n' if head else 'N'}ot the paper settings ({settings.get('paper_settings')}): "
                + staging.changes_text(changes))
    return f"{head}: the paper settings" if head else ""


def show(markdown: str) -> None:
    """Display Markdown in the notebook; its plain-text form (what the item's log shows) is the same text, not an
    object's repr."""
    from IPython.display import display

    display({"text/markdown": markdown, "text/plain": markdown}, raw=True)


def dataset_status(names) -> dict[str, tuple[bool, str]]:
    """{name: (available, reason)} from the processed sidecars."""
    return {n: is_available(n, project_root()) for n in names}


def _clean(value):
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    raise TypeError(f"metrics must be flat scalars (number, string, bool, null); got {type(value).__name__}")


def _repeats(repeats: dict, flat: dict) -> dict[str, list]:
    """Per-repeat values as JSON lists (non-finite values as null), each the repeats of a flat key that is their
    mean; raises ValueError naming the key otherwise (the claims engine judges the mean by these values)."""
    out = {}
    for key, values in repeats.items():
        if not isinstance(key, str):
            raise TypeError(f"repeats keys must be metric names (strings), got {key!r}")
        if key not in flat:
            raise ValueError(f"repeats[{key!r}]: every repeats key must also be a flat metric (its mean); "
                             f"{key!r} is not one")
        arr = np.asarray(values, dtype=float)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"repeats[{key!r}] must be a non-empty 1-D array of per-repeat values, "
                             f"got shape {arr.shape}")
        mean = flat[key]
        if np.all(np.isfinite(arr)):
            if not (isinstance(mean, (int, float)) and not isinstance(mean, bool)
                    and math.isclose(mean, float(arr.mean()), rel_tol=1e-9, abs_tol=1e-12)):
                raise ValueError(f"repeats[{key!r}]: the flat metric {key!r} = {mean!r} is not the mean of its "
                                 f"{arr.size} repeats ({float(arr.mean())!r})")
        out[key] = [float(x) if math.isfinite(x) else None for x in arr]
    return out


def write_metrics(out_dir: str | Path, metrics: dict, *, status: str = "ok", reason: str = "",
                  note: str = "", repeats: dict | None = None) -> Path:
    """Write the flat `metrics.json` the report reads. Keys are documented in config/claims/<paper>.yaml.

    `reason` says why an item did not run; `note` is a short plain-text finding the report shows with the item.
    `repeats`: {key: 1-D array of per-repeat values} for the noisy metrics a claim compares; each key must also be
    a flat metric holding their mean. The claims engine judges comparisons of such keys against their standard
    error (paired when both sides have repeats of one length: repeat i of each must then share its data split and
    noise stream). Stored under the one reserved non-flat key `"repeats"` (config/claims/README.md)."""
    flat = {"status": status, "reason": reason}
    if note:
        flat["note"] = note
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"metric names must be strings, got {key!r}")
        if key == "repeats" and (repeats or isinstance(value, (dict, list))):
            raise ValueError("'repeats' is the reserved key of per-repeat values; pass them as repeats= "
                             "(and name a count of repeats e.g. n_repeats)")
        flat[key] = _clean(value)
    if repeats:
        flat["repeats"] = _repeats(repeats, flat)
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise FileNotFoundError(f"{out_dir} does not exist: a notebook run by hand commits its outputs once; rerun it "
                                "from the top (setup_item) to write them again")
    path = out_dir / "metrics.json"
    path.write_text(json.dumps(flat, indent=2, sort_keys=True) + "\n")
    by_hand = _BY_HAND.pop(out_dir.resolve(), None)
    if by_hand is not None:  # a notebook run by hand: its staged outputs replace the item's, metrics.json last
        final, item = by_hand
        with staging.item_lock(final.parent.name, item, final):   # after a run of the item that is under way
            staging.commit(out_dir, final, item)
        shutil.rmtree(out_dir, ignore_errors=True)
        path = final / "metrics.json"
        print(f"outputs committed to {_relative(final)}")
    return path


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(project_root()))
    except ValueError:
        return str(path)


def save_figures(figures: dict, out_dir: str | Path) -> None:
    """Save each {name: matplotlib figure} of an item's `plot_<item>` (png, pdf and the csv of what it plots), show
    the saved png in the notebook (an image output whatever the matplotlib backend, so the rendered HTML has every
    figure) and close it."""
    import base64

    import matplotlib.pyplot as plt
    from IPython.display import display

    for name, fig in figures.items():
        png = save_figure(fig, out_dir, name)
        display({"image/png": base64.b64encode(png.read_bytes()).decode("ascii"),
                 "text/plain": f"{name}.png (data: {name}.csv)"}, raw=True)
        plt.close(fig)


def save_figure(fig, out_dir: str | Path, name: str) -> Path:
    """Save `name`.png (for the HTML and the report), `name`.pdf and `name`.csv: every value the figure draws, as
    one tidy table (experiments.plotting.figure_data). A run that is not at the paper settings (a what-if or smoke
    run; the settings.json in out_dir says so) gets a line under the figure saying how it differs."""
    from .plotting import write_figure_data

    out_dir = Path(out_dir)
    write_figure_data(fig, out_dir / f"{name}.csv")
    note = settings_note(staging.read_settings(out_dir))
    if note:
        width = max(40, int(fig.get_figwidth() * 15))
        fig.text(0.5, 0.0, "\n".join(textwrap.wrap(note, width)[:4]), ha="center", va="top", fontsize=8,
                 color="#b3261e")
    fig.savefig(out_dir / f"{name}.png", dpi=130, bbox_inches="tight")
    fig.savefig(out_dir / f"{name}.pdf", bbox_inches="tight")
    return out_dir / f"{name}.png"


def show_params(params: dict, paper: str, item: str) -> str:
    """Markdown table of every parameter with its meaning from the config schema (workflow/schemas), where
    reproduction choices no paper states are marked [D]."""
    from ..config_doc import parameter_descriptions

    desc = parameter_descriptions(paper, item)
    lines = ["| parameter | value | meaning |", "|---|---|---|"]
    for k, v in params.items():
        lines.append(f"| `{k}` | `{_cell(v)}` | {_cell(desc.get(k, '')) or '–'} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _cited_items(claim) -> dict:
    """The metrics of the other items a claim cites (`<paper>/<item>:<key>`), as far as they have run."""
    from ..claims import cited, cited_keys

    out = {}
    for paper, item, _ in {cited(k)[:2] + ("",) for k in cited_keys(claim)}:
        path = project_root() / "results" / paper / item / "metrics.json"
        if path.is_file():
            out[(paper, item)] = safeload.load_json(path, expect=dict)
    return out


SHOWN_VARIANTS = 3   # variants with another verdict a notebook's "what we see" names (the report has them all)


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def claims_table(paper: str, item: str, metrics: dict, *, repeats: dict | None = None, status: str = "ok",
                 reason: str = "", note: str = "") -> str:
    """Markdown table of the item's claims in config/claims/<paper>.yaml, judged on `metrics` (and the per-repeat
    values `repeats`, or a `"repeats"` entry of `metrics`) by the report's own evaluate_claim, so that a notebook's
    "what we see" and the reproduction report never disagree. Takes the same arguments as `write_metrics` (so both
    can be called with one `**ex.metrics_<item>(result)`); `status`/`reason` mark an item that did not run. A
    malformed claims file raises ClaimsError."""
    from ..claims import discount_implausible, evaluate_claim, validate_claims_file, with_cited

    cf = validate_claims_file(project_root() / "config" / "claims" / f"{paper}.yaml", warnings=False)
    reps = dict(metrics.get("repeats") or {}) if isinstance(metrics.get("repeats"), dict) else {}
    reps.update(repeats or {})
    flat = {"status": status, "reason": reason,
            **{k: _clean(v) for k, v in metrics.items() if k != "repeats"}}
    if reps:
        flat["repeats"] = _repeats(reps, flat)
    verdicts = [evaluate_claim(c, with_cited(flat, c, _cited_items(c))) for c in cf.claims if c.item == item]
    discount_implausible(verdicts)
    lines = ["| claim | verdict | measured | cause |", "|---|---|---|---|"]
    for v in verdicts:
        verdict = f"**{v.verdict}**"
        if v.variants:   # the variants that agree are counted, those that differ named (at most SHOWN_VARIANTS)
            differ = [x for x in v.variants if x.verdict != v.verdict]
            verdict += f"<br>{len(v.variants) - len(differ)} of {len(v.variants)} variants agree"
            verdict += "".join(f"<br>{_cell(_clip(x.label, 70))}: {x.verdict}" + (" (implausible)" if x.implausible
                                                                                  else "")
                               for x in differ[:SHOWN_VARIANTS])
            if len(differ) > SHOWN_VARIANTS:
                verdict += f"<br>(+{len(differ) - SHOWN_VARIANTS} more in the report)"
        if v.depends_on_choice:
            verdict += f"<br>depends on {_cell(', '.join(v.depends_on_choice))}"
        if v.depends_on_threshold:
            verdict += f"<br>depends on {_cell(', '.join(v.depends_on_threshold))}"
        f = v.finding
        cause = f"**{v.cause}**" if v.cause else ""
        if v.deciding:
            cause += f" ({_cell('; '.join(v.deciding))})"
        cause += f": {_cell(f['text'])}" if f else (" **unexplained**" if v.unexplained else "")
        if v.stale:
            cause += " (**stale** finding: " + "; ".join(f"when {'/'.join(s['when'])}" for s in v.stale) + ")"
        klass = "" if v.claim_class == "measured" else f" [{v.claim_class}]"
        lines.append(f"| {_cell(v.claim.quote)} (`{v.claim.id.rsplit('.', 1)[-1]}`){klass} | {verdict} | "
                     f"{_cell(_clip(v.reason, 400))} | {cause} |")
    counted = [v for v in verdicts if v.claim_class == "measured"]
    held = sum(v.verdict == "reproduced" for v in counted)
    analytic = [v for v in verdicts if v.claim_class == "analytic"]
    setup = sum(v.claim_class == "setup" for v in verdicts)
    return (f"{held} of {len(counted)} measured claims reproduced (as the report judges them)"
            + (f"; {len(analytic)} analytic claim(s), {sum(v.verdict == 'holds' for v in analytic)} holding"
               if analytic else "")
            + (f"; {setup} setup check(s) of our own construction, not counted" if setup else "")
            + ".\n\n" + "\n".join(lines))
