"""What every item notebook does: resolve its parameters, check its datasets, save figures and metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .. import config as config_mod
from ..datasets import is_available
from ..paths import project_root, results_dir


def setup_item(paper: str, item: str, params: dict | None = None, out_dir: str | Path | None = None):
    """(params, out_dir) for a notebook: papermill injects both; run by hand, they come from config/config.yaml."""
    if not params:
        params = config_mod.item_params(paper, item)
    out = Path(out_dir) if out_dir else results_dir() / paper / item
    out.mkdir(parents=True, exist_ok=True)
    return dict(params), out


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


def write_metrics(out_dir: str | Path, metrics: dict, *, status: str = "ok", reason: str = "",
                  note: str = "", repeats: dict | None = None) -> Path:
    """Write the flat `metrics.json` the report reads. Keys are documented in config/claims/<paper>.yaml.

    `reason` says why an item did not run; `note` is a short plain-text finding the report shows with the item."""
    flat = {"status": status, "reason": reason}
    if note:
        flat["note"] = note
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"metric names must be strings, got {key!r}")
        flat[key] = _clean(value)
    if repeats:  # per-repeat values of flat keys (the claims engine's noise convention)
        missing = [k for k in repeats if k not in flat]
        if missing:
            raise KeyError(f"repeats keys must also be flat metrics (their mean): {missing[:5]}")
        flat["repeats"] = {k: [_clean(x) for x in np.asarray(v, dtype=float).ravel()] for k, v in repeats.items()}
    path = Path(out_dir) / "metrics.json"
    path.write_text(json.dumps(flat, indent=2, sort_keys=True) + "\n")
    return path


def save_figure(fig, out_dir: str | Path, name: str) -> Path:
    """Save `name`.png (for the HTML and the report) and `name`.pdf."""
    out_dir = Path(out_dir)
    fig.savefig(out_dir / f"{name}.png", dpi=130, bbox_inches="tight")
    fig.savefig(out_dir / f"{name}.pdf", bbox_inches="tight")
    return out_dir / f"{name}.png"


def show_params(params: dict, defaults: dict) -> str:
    """Markdown list of every parameter, marking the [D] defaults (SPEC) with their reason."""
    lines = ["| parameter | value | source |", "|---|---|---|"]
    for k, v in params.items():
        lines.append(f"| `{k}` | `{v}` | {('[D] ' + defaults[k]) if k in defaults else 'paper / workflow'} |")
    return "\n".join(lines)


def claims_table(paper: str, item: str, metrics: dict) -> str:
    """Markdown table of the item's claims in config/claims/<paper>.yaml, judged on `metrics` by the report's own
    evaluate_claim, so that a notebook's "what we see" and the reproduction report never disagree."""
    from ..report.claims import evaluate_claim, load_claims_file

    cf = load_claims_file(project_root() / "config" / "claims" / f"{paper}.yaml")
    flat = {k: _clean(v) for k, v in metrics.items() if k != "repeats"}
    verdicts = [evaluate_claim(c, flat) for c in cf.claims if c.item == item]
    lines = ["| claim | verdict | measured |", "|---|---|---|"]
    for v in verdicts:
        quote = v.claim.quote.replace("|", "/").replace("\n", " ")
        lines.append(f"| {quote} (`{v.claim.id.rsplit('.', 1)[-1]}`) | **{v.verdict}** | "
                     f"{v.reason.replace('|', '/')} |")
    held = sum(v.verdict == "reproduced" for v in verdicts)
    return f"{held} of {len(verdicts)} claims reproduced (as the report judges them).\n\n" + "\n".join(lines)
