"""Every reference to a document points inside the repository: no file cites a document that is not in it (the
working notes the first versions cited as "SPEC §x" and "ARCHITECTURE.md"), and every `<path>.md#<anchor>` (and every
relative link of a Markdown file) names a file that exists and, with an anchor, a heading or explicit anchor of it.

Choices are explained in docs/choices.md and cited as `docs/choices.md#<anchor>`; the package's layers in
README.md#layout.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve()
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".ipynb", ".smk", ".toml", ".cff", ".txt", ".cfg", ".sh", ".json",
                 ".html", ".tsv", ".csv", ""}
# Documents that are not in the repository (this file is the one place that names them).
OUTSIDE = re.compile(r"\bSPEC\b|\bARCHITECTURE\b|ARCHITECTURE\.md|SPEC\.md")
# `path.md` or `path.md#anchor` in any text: a path of plain name characters, not part of a URL or a longer path.
MD_REF = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w-][\w.-]*\.md)(?!\w)(#[\w-]+)?")
# Markdown links and images: [text](target) / ![alt](target)
MD_LINK = re.compile(r"\]\(([^()\s]+)\)")


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
        files = [ROOT / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: the folders the project keeps text in
        skip = {".git", ".venv", "results", "resources", "logs", "bundles", ".snakemake", "__pycache__"}
        files = [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    return [p for p in files if p.suffix in TEXT_SUFFIXES and p.is_file() and p.resolve() != SELF]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    """The anchors a Markdown file defines: its headings' slugs (numbered on repeats) and explicit `<a id=...>`."""
    text = _read(path) or ""
    found: set[str] = set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(found)


def _resolve(target: str, source: Path) -> Path | None:
    """A referenced path, from the repository root or from the referencing file's folder."""
    for base in (ROOT, source.parent):
        p = (base / target).resolve()
        if p.exists():
            return p
    return None


def broken_references(files: list[Path]) -> list[str]:
    out: list[str] = []
    for path in files:
        text = _read(path)
        if text is None:
            continue
        rel = path.relative_to(ROOT) if ROOT in path.parents else path
        for i, line in enumerate(text.splitlines(), 1):
            for m in OUTSIDE.finditer(line):
                out.append(f"{rel}:{i}: cites {m.group(0)!r}, a document not in the repository")
            for m in MD_REF.finditer(line):
                target, anchor = m.group(1), m.group(2)
                p = _resolve(target, path)
                if p is None:
                    out.append(f"{rel}:{i}: {target} does not exist")
                elif anchor and anchor[1:] not in anchors(p):
                    out.append(f"{rel}:{i}: {target} has no anchor {anchor}")
            if path.suffix != ".md":
                continue
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
                    continue
                file_part, _, anchor = target.partition("#")
                p = path if not file_part else _resolve(file_part, path)
                if p is None:
                    out.append(f"{rel}:{i}: link to {file_part}, which does not exist")
                elif anchor and p.suffix == ".md" and anchor not in anchors(p):
                    out.append(f"{rel}:{i}: link to {file_part or rel}#{anchor}, which has no such anchor")
    return out


def test_no_reference_leaves_the_repository():
    broken = broken_references(_tracked())
    assert not broken, f"{len(broken)} references to documents or anchors not in the repository:\n" + "\n".join(
        broken[:60])


def test_the_checker_catches_what_it_must(tmp_path):
    """The check itself: an outside document, a missing file and a missing anchor are each reported; good ones not."""
    assert "huang-dvp" in anchors(ROOT / "docs" / "choices.md")
    probe = tmp_path / "probe.md"
    probe.write_text("# Probe\n\nSee SPEC §2.6, docs/choices.md#huang-dvp, docs/choices.md#no-such-choice,\n"
                     "docs/nowhere.md, [here](#probe), [there](#nowhere), [file](docs/choices.md#huang-dvp),\n"
                     "README.md#layout, README.md#no-such-heading.\n", encoding="utf-8")
    found = broken_references([probe])
    assert any("'SPEC'" in b for b in found)
    assert any("no anchor #no-such-choice" in b for b in found)
    assert any("docs/nowhere.md does not exist" in b for b in found)
    assert any("#nowhere, which has no such anchor" in b for b in found)
    assert any("no anchor #no-such-heading" in b for b in found)
    assert len(found) == 5, found


def test_choice_anchors_are_unique():
    """Every choice in docs/choices.md has its own explicit anchor, none used twice."""
    text = (ROOT / "docs" / "choices.md").read_text(encoding="utf-8")
    ids = re.findall(r"<a id=\"([^\"]+)\"></a>", text)
    assert len(ids) >= 40 and len(ids) == len(set(ids))
