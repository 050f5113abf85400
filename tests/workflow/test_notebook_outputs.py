"""Every notebook of the smoke run reads cleanly: its Markdown tables are valid, no output holds a warning, an
object's repr or the checkout's absolute path, its HTML loads nothing from another host, and the item logs carry no
warnings either."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT

pytestmark = pytest.mark.workflow

NOISE = ("Warning", "TCP without encryption", "<IPython.core.display", " object at 0x", "PosixPath(",
         "Traceback (most recent call last)")
# ipykernel's control channel may fail to publish its last "idle" status while the kernel shuts down, after the item
# has finished and written its outputs (pyzmq: "Socket operation on non-socket"). It is raised in the kernel's own
# threads and says nothing about the item; a traceback with any frame of the project's code is never this.
KERNEL_SHUTDOWN = re.compile(r"Traceback \(most recent call last\):\n(?:(?:  File \"[^\"]*(?:zmq|ipykernel|jupyter_client|"
                             r"tornado|asyncio)[^\"]*\".*\n|  File \"zmq/.*\n|    .*\n))+"
                             r"zmq\.error\.ZMQError: Socket operation on non-socket\n")


def _cells(row: str) -> int:
    """The cells of a Markdown table row (an escaped pipe is text, not a separator)."""
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


def table_problems(markdown: str) -> list[str]:
    """Rows of the Markdown tables in `markdown` whose number of cells differs from their header's (such a table is
    rendered as raw pipes)."""
    out, lines = [], markdown.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*",
                                                                                       lines[i + 1]):
            width = _cells(lines[i])
            j = i + 1
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                if _cells(lines[j]) != width:
                    out.append(f"row {j - i} has {_cells(lines[j])} cells, the header {width}: {lines[j][:80]}")
                j += 1
            i = j
        else:
            i += 1
    return out


def test_the_table_checker_finds_a_short_row():
    assert table_problems("| a | b |\n|---|---|\n| 1 | 2 |\n| `x\\|y` | 3 |") == []
    assert table_problems("| a | b |\n|---|---|\n| 1 | 2 |\n| total |")


def _texts(output: dict) -> list[str]:
    if output.get("output_type") == "stream":
        return ["".join(output.get("text", ""))]
    data = output.get("data", {})
    return ["".join(data[k]) for k in ("text/markdown", "text/plain") if k in data]


def test_every_notebook_output_is_clean(smoke_project):
    proj, proc = smoke_project
    notebooks = sorted((proj / "results").glob("*/*/*.ipynb"))
    assert len(notebooks) > 15, proc.stderr[-3000:]
    problems = []
    for path in notebooks:
        where = path.relative_to(proj / "results")
        text = path.read_text()
        if str(proj) in text or str(ROOT) in text:
            problems.append(f"{where}: the checkout's absolute path")
        nb = json.loads(text)
        params = nb["metadata"]["papermill"]["parameters"]
        if params["out_dir"] != f"results/{where.parent}":
            problems.append(f"{where}: out_dir {params['out_dir']!r}")
        for n, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "markdown":
                problems += [f"{where} cell {n}: {p}" for p in table_problems("".join(cell["source"]))]
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    problems.append(f"{where} cell {n}: stderr output {''.join(output['text'])[:120]!r}")
                for t in _texts(output):
                    problems += [f"{where} cell {n}: {p}" for p in table_problems(t)]
                    problems += [f"{where} cell {n}: {w!r} in {t[:120]!r}" for w in NOISE if w in t]
        html = path.with_suffix(".html").read_text()
        if re.search(r"<script[^>]+src=", html) or str(proj) in html:
            problems.append(f"{where}: the HTML loads a script from elsewhere or names the checkout")
    assert problems == [], "\n".join(problems)


def test_item_logs_carry_no_warnings_or_reprs(smoke_project):
    proj, _ = smoke_project
    logs = sorted((proj / "logs").glob("*/*.log"))
    assert logs
    problems = [f"{p.relative_to(proj)}: {w!r}" for p in logs if p.parent.name != "datasets"
                for w in NOISE if w in KERNEL_SHUTDOWN.sub("", p.read_text())]
    assert problems == [], "\n".join(problems)
