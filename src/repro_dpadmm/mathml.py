"""Formulas of the rendered notebooks as MathML, written into the HTML when the notebook is converted.

A notebook's Markdown (its text cells and the Markdown it displays, such as "what we see") writes formulas in LaTeX
between `$...$` (inline) or `$$...$$` (display). nbconvert's Markdown parser already finds them; `OfflineHTMLExporter`
renders each one to MathML with `latex2mathml` instead of leaving the TeX for MathJax.

Why MathML on the server rather than MathJax or KaTeX: the rendered notebook opens offline and the report shows it
in a sandboxed frame where scripts may not run. MathML Core is rendered natively by Chromium, Firefox and Safari, so
the page needs no script, no font and nothing from another host; a bundled MathJax or KaTeX would have to be copied
beside every rendered notebook, the report and each bundle, and would still not run in the sandbox.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert
from nbconvert import HTMLExporter
from jinja2 import pass_context
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

# HTML needs no namespace on <math>; dropping it keeps every address out of the page.
_XMLNS = re.compile(r'\s+xmlns="[^"]*"')


def to_mathml(tex: str, *, display: bool = False) -> str:
    """MathML of the LaTeX formula `tex` (without its `$` delimiters), inline or as a display block. Raises
    ValueError naming the formula when latex2mathml cannot read it."""
    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as err:  # latex2mathml raises its own exception types and also plain ones for bad input
        raise ValueError(f"cannot convert the formula ${tex}$ to MathML: {err}") from err
    return _XMLNS.sub("", out, count=1)


def _shown(tex: str, display: bool) -> str:
    """The formula as MathML; a formula latex2mathml cannot read is shown as its TeX source in <code> (without the
    `$`), so that one bad formula does not lose the whole page. tests/test_mathml.py converts every notebook's."""
    try:
        return to_mathml(tex, display=display)
    except ValueError:
        return f'<code class="tex">{html.escape(tex)}</code>'


class MathMLRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer, with `$...$`, `$$...$$` and LaTeX environments written as MathML."""

    def inline_math(self, body: str) -> str:
        return _shown(body, display=False)

    def block_math(self, body: str) -> str:
        return _shown(body, display=True)

    def latex_environment(self, name: str, body: str) -> str:
        return _shown(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


class OfflineHTMLExporter(HTMLExporter):
    """HTMLExporter whose `markdown2html` filter renders formulas to MathML (the same arguments as nbconvert's own,
    nbconvert.exporters.html.HTMLExporter.markdown2html, with the renderer swapped)."""

    @pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        renderer = MathMLRenderer(
            escape=False,
            attachments=cell.get("attachments", {}),
            embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text,
            exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options,
        )
        return MarkdownWithMath(renderer=renderer).render(source)
