"""The rendered notebooks' formulas: `$...$` and `$$...$$` in Markdown become MathML when the notebook is converted
to HTML (repro_dpadmm.mathml), with nothing loaded from another host and no script."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from repro_dpadmm.mathml import OfflineHTMLExporter, to_mathml
from repro_dpadmm.paths import project_root
from repro_dpadmm.runner import HTML_TEMPLATES

ROOT = project_root(Path(__file__).parent)
# nbconvert's own pattern for $$...$$ and $...$ (nbconvert.filters.markdown_mistune.MathInlineParser)
FORMULA = re.compile(r"(?<![$\\])\$\$(.+?)(?<![$\\])\$\$|(?<![$\\])\$(.+?)(?<![$\\])\$", re.S)


def render(*cells) -> str:
    """The <body> of the offline HTML of a notebook with `cells`."""
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    html, _ = OfflineHTMLExporter(template_name="offline",
                                  extra_template_basedirs=[str(HTML_TEMPLATES)]).from_notebook_node(nb)
    return html[html.index("<body"):]


def test_a_markdown_cells_formula_is_mathml():
    body = render(nbformat.v4.new_markdown_cell(r"The step size $\eta \le 1/L$ and the rate $$O(1/T^2)$$."))
    assert "<math" in body and "$" not in body
    assert "<mi>η</mi><mo>≤</mo>" in body           # the symbols, not the TeX source
    assert 'display="block"' in body and "<msup><mi>T</mi><mn>2</mn></msup>" in body


def test_displayed_markdown_formulas_are_mathml_too():
    """"What we see" is Markdown a code cell displays; its formulas are converted the same way, in a table too."""
    table = "| claim | verdict |\n|---|---|\n| $\\varepsilon$-DP | holds |\n"
    out = nbformat.v4.new_output("display_data", data={"text/markdown": table, "text/plain": table})
    body = render(nbformat.v4.new_code_cell("show(table)", outputs=[out]))
    assert "<table" in body and "<mi>ε</mi>" in body and "$" not in body


def test_markdown_around_a_formula_is_still_markdown():
    body = render(nbformat.v4.new_markdown_cell(r"*x_1* and $a_i^{t-1}$ and `c_d`"))
    assert "<em>x_1</em>" in body and "<msubsup><mi>a</mi><mi>i</mi>" in body and "<code>c_d</code>" in body


def test_a_formula_latex2mathml_cannot_read_is_shown_as_its_source():
    with pytest.raises(ValueError, match=r"\$x\^\$"):
        to_mathml("x^")
    body = render(nbformat.v4.new_markdown_cell(r"bad $x^$ here"))
    assert '<code class="tex">' in body and "$" not in body


def test_the_offline_page_loads_nothing_from_another_host_and_runs_no_script():
    body = render(nbformat.v4.new_markdown_cell(r"$\sum_i x_i$"))
    page = render()  # the head too
    for html in (body, page):
        assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html), "a resource from another host"
        assert not re.search(r"url\(\s*['\"]?(?:https?:)?//", html) and "@import" not in html
        assert "<script src" not in html and "xmlns=" not in body
    template = (HTML_TEMPLATES / "offline" / "index.html.j2").read_text()
    assert not re.search(r"https?://|//cdn", template)


def formulas(text: str) -> list[tuple[str, bool]]:
    """(TeX, display?) of every `$$...$$` and `$...$` in Markdown `text`."""
    return [(m.group(1) or m.group(2), m.group(1) is not None) for m in FORMULA.finditer(text)]


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*/*.md")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_notebook_formula_converts(path):
    text = path.read_text(encoding="utf-8")
    for tex, display in formulas(text):
        mathml = to_mathml(tex, display=display)
        # latex2mathml writes a command it does not know as its name: none may be left in the page
        assert "<math" in mathml and "\\" not in mathml, f"{path.relative_to(ROOT)}: ${tex}$ gives {mathml}"
    left = FORMULA.sub("", text)
    assert "$" not in left, f"{path.relative_to(ROOT)}: an unpaired $ (a formula not closed)"
