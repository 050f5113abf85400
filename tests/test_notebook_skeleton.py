"""Every item notebook is the one skeleton: parameters -> set-up and parameter table -> ex.run_<item> ->
ex.plot_<item> -> ex.metrics_<item> (+ an optional ex.table_<item>) -> claims_table. Anything else (loops, plotting,
metric building, printed numbers) belongs in the experiment module, where it is tested."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from repro_dpadmm import registry
from repro_dpadmm.paths import project_root

ROOT = project_root(Path(__file__).parent)

SETUP = '''import matplotlib
matplotlib.use("Agg")
from repro_dpadmm.experiments.common import claims_table, save_figures, setup_item, show, show_params, write_metrics
from repro_dpadmm.experiments import {module} as ex

PAPER, ITEM = "{paper}", "{item}"
params, out_dir = setup_item(PAPER, ITEM, params, out_dir)
show(show_params(params, PAPER, ITEM))'''
SKELETON = (  # (cell, required)
    ("params = None\nout_dir = None", True),
    (SETUP, True),
    ("result = ex.run_{item}(params)", True),
    ("save_figures(ex.plot_{item}(result), out_dir)", False),
    ("m = ex.metrics_{item}(result)\nmetrics_file = write_metrics(out_dir, **m)", True),
    ('show(ex.table_{item}(result, m["metrics"]))', False),
    ('show("## What we see\\n\\n" + claims_table(PAPER, ITEM, **m))', True),
)


def code_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]).strip() for c in nb["cells"] if c["cell_type"] == "code"]


def skeleton_problems(cells: list[str], paper: str, item: str) -> list[str]:
    """How `cells` differ from the skeleton of (paper, item); [] when they follow it."""
    module = None
    m = re.search(r"from repro_dpadmm\.experiments import (\w+) as ex", cells[1] if len(cells) > 1 else "")
    if m:
        module = m.group(1)
    expected = [(t.format(paper=paper, item=item, module=module), req) for t, req in SKELETON]
    out, i = [], 0
    for text, required in expected:
        if i < len(cells) and cells[i] == text:
            i += 1
        elif required:
            got = cells[i] if i < len(cells) else "(no cell)"
            out.append(f"cell {i + 1}: expected\n{text}\n  got\n{got}")
            return out
    out += [f"cell {j + 1} is not part of the skeleton:\n{cells[j]}" for j in range(i, len(cells))]
    return out


def notebooks():
    return [(p.id, it.id, ROOT / it.notebook) for p in registry.PAPERS for it in p.items]


def test_the_checker_finds_extra_and_changed_cells():
    good = [t.format(paper="p", item="fig1", module="p_mod") for t, _ in SKELETON]
    assert skeleton_problems(good, "p", "fig1") == []
    assert skeleton_problems([c for c, (_, req) in zip(good, SKELETON) if req], "p", "fig1") == []
    assert skeleton_problems(good + ["for k in m: print(k)"], "p", "fig1")
    assert skeleton_problems(good[:2] + ["result = ex.run_fig1(params)\nprint(result)"] + good[3:], "p", "fig1")
    assert skeleton_problems(good, "p", "fig2")  # another item's calls


@pytest.mark.parametrize("paper, item, path", notebooks(), ids=lambda v: str(v) if not isinstance(v, Path) else "")
def test_notebook_follows_the_skeleton(paper, item, path):
    problems = skeleton_problems(code_cells(path), paper, item)
    assert not problems, f"{path.relative_to(ROOT)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("paper, item, path", notebooks(), ids=lambda v: str(v) if not isinstance(v, Path) else "")
def test_the_experiment_module_offers_the_skeletons_functions(paper, item, path):
    import importlib

    cells = code_cells(path)
    m = re.search(r"from repro_dpadmm\.experiments import (\w+) as ex", cells[1] if len(cells) > 1 else "")
    assert m, f"{path.name}: no experiment module imported as ex"
    ex = importlib.import_module(f"repro_dpadmm.experiments.{m.group(1)}")
    for fn in ("run", "metrics"):
        assert callable(getattr(ex, f"{fn}_{item}", None)), f"{m.group(1)} has no {fn}_{item}"
