"""The item notebooks are generated (`python -m repro_dpadmm.notebooks`): every committed notebook is exactly what the
generator writes from the registry, the experiment module's functions and the item's `<item>.md`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro_dpadmm import notebooks, registry
from repro_dpadmm.paths import project_root

ROOT = project_root(Path(__file__).parent)


@pytest.mark.parametrize("item", registry.items(), ids=lambda it: it.target)
def test_the_committed_notebook_is_what_the_generator_writes(item):
    path = ROOT / item.notebook
    assert path.is_file(), f"{item.notebook} is missing: run `python -m repro_dpadmm.notebooks`"
    assert path.read_text(encoding="utf-8") == notebooks.render(item, ROOT), (
        f"{item.notebook} differs from what `python -m repro_dpadmm.notebooks` writes from {notebooks.text_path(item)}"
        " (edit the .md, not the notebook, then run it)")


def test_every_text_file_belongs_to_an_item():
    texts = {p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("*/*.md")}
    assert texts == {notebooks.text_path(it) for it in registry.items()}


def _project(tmp_path: Path, item: registry.Item, text: str) -> Path:
    (tmp_path / "notebooks" / item.paper).mkdir(parents=True)
    (tmp_path / notebooks.text_path(item)).write_text(text)
    return tmp_path


def test_the_generator_builds_the_skeleton_from_the_text_and_the_module(tmp_path):
    item = registry.PAPER_BY_ID["zhang2018_radmm"].items[0]      # fig1: a figure, no table
    root = _project(tmp_path, item, "# Title\n\n> the claim\n\n<!-- notes -->\nclosing words\n")
    nb = json.loads(notebooks.render(item, root))
    kinds = [(c["cell_type"], c["id"]) for c in nb["cells"]]
    assert kinds == [("markdown", "fig1-title"), ("code", "fig1-parameters"), ("code", "fig1-setup"),
                     ("code", "fig1-run"), ("code", "fig1-figures"), ("code", "fig1-metrics"),
                     ("code", "fig1-what-we-see"), ("markdown", "fig1-notes")]
    source = ["".join(c["source"]) for c in nb["cells"]]
    assert source[0] == "# Title\n\n> the claim" and source[-1] == "closing words"
    assert nb["cells"][1]["metadata"] == {"tags": ["parameters"]} and source[1] == "params = None\nout_dir = None"
    assert 'from repro_dpadmm.experiments import zhang2018_radmm as ex' in source[2]
    assert 'PAPER, ITEM = "zhang2018_radmm", "fig1"' in source[2]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in nb["cells"] if c["cell_type"] == "code")
    beyond = registry.PAPER_BY_ID["beyond"].items[0]
    root = _project(tmp_path / "b", beyond, "# Beyond\n")
    cells = json.loads(notebooks.render(beyond, root))["cells"]
    assert f"import beyond_{beyond.id} as ex" in "".join(cells[2]["source"]) and cells[-1]["cell_type"] == "code"


def test_a_missing_text_names_the_file(tmp_path):
    item = registry.items()[0]
    with pytest.raises(FileNotFoundError, match=notebooks.text_path(item)):
        notebooks.render(item, tmp_path)


def test_check_reports_a_stale_notebook_and_write_fixes_it(tmp_path, monkeypatch):
    item = registry.PAPER_BY_ID["zhang2018_radmm"].items[0]
    root = _project(tmp_path, item, "# Title\n")
    monkeypatch.setattr(registry, "items", lambda: (item,))
    assert notebooks.stale(root) == [item.notebook]
    assert notebooks.write_all(root) == [item.notebook] and notebooks.stale(root) == []
    (root / notebooks.text_path(item)).write_text("# Another title\n")
    assert notebooks.stale(root) == [item.notebook]
