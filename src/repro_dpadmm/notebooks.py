"""The item notebooks, generated: `notebooks/<paper>/<item>.ipynb` from the registry and the item's text.

Every item notebook is one skeleton (notebooks/README.md): the item's text, a papermill `parameters` cell, the
set-up and parameter table, `ex.run_<item>`, `ex.plot_<item>` (when the experiment module has one),
`ex.metrics_<item>` and `write_metrics`, `ex.table_<item>` (when it has one), and "what we see" from the claims
evaluator; optionally closing notes. So a notebook is determined by its paper, its item, the experiment module's
functions and the item's text, which lives in `notebooks/<paper>/<item>.md`: the title cell (the paper's caption
and the quoted claims), and, after a line `<!-- notes -->`, the closing notes, if any.

    python -m repro_dpadmm.notebooks           # write every item's notebook (those that changed)
    python -m repro_dpadmm.notebooks --check   # exit 1 naming every notebook that differs from what it would write

`tests/test_notebooks.py` fails when a committed notebook is not what this writes.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import nbformat

from . import registry
from .paths import project_root

NOTES_MARK = "<!-- notes -->"   # in <item>.md: what follows is the closing cell, after "what we see"

SETUP = '''import matplotlib
matplotlib.use("Agg")
from repro_dpadmm.experiments.common import claims_table, save_figures, setup_item, show, show_params, write_metrics
from repro_dpadmm.experiments import {module} as ex

PAPER, ITEM = "{paper}", "{item}"
params, out_dir = setup_item(PAPER, ITEM, params, out_dir)
show(show_params(params, PAPER, ITEM))'''

KERNEL = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}


def experiment_module(item: registry.Item) -> str:
    """The experiments module an item's notebook calls: the paper's (`experiments/<paper>.py`), or for the items of
    "Beyond the papers" `experiments/beyond_<item>.py`."""
    return f"beyond_{item.id}" if registry.PAPER_BY_ID[item.paper].beyond else item.paper


def text_path(item: registry.Item) -> str:
    """The item's text (title cell and closing notes), relative to the project root."""
    return f"notebooks/{item.paper}/{item.id}.md"


def read_text(item: registry.Item, root: Path) -> tuple[str, str]:
    """(title cell, closing notes or "") of an item, from its `<item>.md`."""
    path = root / text_path(item)
    if not path.is_file():
        raise FileNotFoundError(f"{text_path(item)}: no text for {item.paper}/{item.id} (its title cell: the "
                                "paper's caption and the quoted claims; notebooks/README.md)")
    title, _, notes = path.read_text(encoding="utf-8").partition(f"\n{NOTES_MARK}\n")
    return title.strip("\n"), notes.strip("\n")


def notebook(item: registry.Item, root: Path) -> nbformat.NotebookNode:
    """The notebook of `item`, built from the registry, its experiment module's functions and its text."""
    module = experiment_module(item)
    ex = importlib.import_module(f"repro_dpadmm.experiments.{module}")
    title, notes = read_text(item, root)
    cells = [("title", "markdown", title),
             ("parameters", "code", "params = None\nout_dir = None"),
             ("setup", "code", SETUP.format(module=module, paper=item.paper, item=item.id)),
             ("run", "code", f"result = ex.run_{item.id}(params)")]
    if hasattr(ex, f"plot_{item.id}"):
        cells.append(("figures", "code", f"save_figures(ex.plot_{item.id}(result), out_dir)"))
    cells.append(("metrics", "code", f"m = ex.metrics_{item.id}(result)\nmetrics_file = write_metrics(out_dir, **m)"))
    if hasattr(ex, f"table_{item.id}"):
        cells.append(("table", "code", f'show(ex.table_{item.id}(result, m["metrics"]))'))
    cells.append(("what-we-see", "code", 'show("## What we see\\n\\n" + claims_table(PAPER, ITEM, **m))'))
    if notes:
        cells.append(("notes", "markdown", notes))
    nb = nbformat.v4.new_notebook(metadata=KERNEL)
    for name, kind, source in cells:
        cell_id = f"{item.id}-{name}"
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(source, id=cell_id))
        else:
            cell = nbformat.v4.new_code_cell(source, id=cell_id)
            if name == "parameters":
                cell.metadata["tags"] = ["parameters"]   # where papermill injects the run's parameters
            nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(item: registry.Item, root: Path) -> str:
    """The notebook file's text, as it is committed."""
    return nbformat.writes(notebook(item, root), version=4) + "\n"


def _differing(root: Path):
    """(item, path, text) of every notebook that differs from what `render` writes, or is missing."""
    for item in registry.items():
        path, text = root / item.notebook, render(item, root)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            yield item, path, text


def stale(root: Path) -> list[str]:
    """The notebooks (relative paths) that differ from what `render` writes, or are missing."""
    return [item.notebook for item, _, _ in _differing(root)]


def write_all(root: Path) -> list[str]:
    """Write every item's notebook that differs from what `render` gives; the paths written."""
    written = []
    for item, path, text in _differing(root):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(item.notebook)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repro_dpadmm.notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is not current")
    args = parser.parse_args(argv)
    root = project_root()
    if args.check:
        bad = stale(root)
        for path in bad:
            print(f"{path}: not what `python -m repro_dpadmm.notebooks` writes", file=sys.stderr)
        return 1 if bad else 0
    for path in write_all(root):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
