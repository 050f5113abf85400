"""Where things live: the project root and the conventional folders below it."""

from __future__ import annotations

import os
from pathlib import Path

# An item run's settings file, beside its metrics (written by `staging`, read by `provenance`; here so that neither
# imports the other).
SETTINGS = "settings.json"


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding the `Snakefile`, searched upwards from `start` (default: the working directory).

    `REPRO_DPADMM_ROOT` overrides the search (useful when a notebook is opened from elsewhere).
    """
    env = os.environ.get("REPRO_DPADMM_ROOT")
    if env:
        if not Path(env).is_dir():   # never a results or report tree made at a mistyped path
            raise ValueError(f"REPRO_DPADMM_ROOT={env}: no such folder (it names the project's root)")
        return Path(env).resolve()
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Snakefile").is_file() and (folder / "config").is_dir():
            return folder
    # Fall back to the source checkout this module lives in.
    src_root = Path(__file__).resolve().parents[2]
    if (src_root / "Snakefile").is_file():
        return src_root
    raise FileNotFoundError(
        f"cannot find the repro-dpadmm project root (a folder with a Snakefile) above {here}; "
        "run from inside the repository or set REPRO_DPADMM_ROOT"
    )


def resources_dir(root: Path | None = None) -> Path:
    return (root or project_root()) / "resources"


def raw_dir(root: Path | None = None) -> Path:
    return resources_dir(root) / "raw"


def processed_dir(root: Path | None = None) -> Path:
    return resources_dir(root) / "processed"


def results_dir(root: Path | None = None) -> Path:
    return (root or project_root()) / "results"
