"""The package's layers (README.md#layout): no module imports from a higher layer or from a sibling paper's module.

Every import in src/repro_dpadmm is parsed (function-level imports included, since a lazy import is still an edge)
and checked against LAYERS. Within a layer a module may import its own package's helpers; paper modules
(`experiments/<paper>*.py`, `privacy/bounds/<paper>.py`, `mechanisms/<paper>.py`) may not import another paper's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from repro_dpadmm import registry

SRC = Path(__file__).resolve().parents[1] / "src" / "repro_dpadmm"

# Lowest first. A module belongs to the layer of its top-level name under repro_dpadmm.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("rng", "paths", "history", "claims", "solvers", "timing", "provenance", "config", "config_doc", "registry",
     "staging", "kernels", "safeload", "locks", "mathml", "figure_files"),
    ("problems", "privacy"),
    ("algorithms", "graphs", "datasets"),
    ("mechanisms",),
    ("experiments",),
    ("report", "bundle", "costs"),
    ("cli", "runner", "notebooks"),
)
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
# Packages whose modules are per paper: one paper's module may not import another's.
PAPER_PACKAGES = ("experiments", "privacy.bounds", "mechanisms")
# A paper's modules are named by its registry id or the id's stem before "_" (privacy/bounds/huang2019.py).
PAPER_IDS = tuple(sorted({i for p in registry.PAPERS for i in (p.id, p.id.split("_")[0])}))
# Modules of a paper package that every paper module may use (shared helpers, not papers).
HELPERS = {"experiments": ("common", "progress", "plotting", "parts"), "privacy.bounds": (),
           "mechanisms": ("base", "layouts")}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """repro_dpadmm modules `path` imports (relative to repro_dpadmm, '' for the package itself); `from X import y`
    yields X.y when X.y is a module of the package, else X."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("repro_dpadmm").lstrip(".") for a in node.names
                    if a.name.split(".")[0] == "repro_dpadmm"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "repro_dpadmm":
                target = node.module.removeprefix("repro_dpadmm").lstrip(".")
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if _is_module(sub) else target)
    return out


def _is_module(name: str) -> bool:
    p = SRC.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def paper_of(module: str) -> tuple[str, str] | None:
    """(paper package, paper id) of a per-paper module, else None (helpers and other modules)."""
    for pkg in PAPER_PACKAGES:
        if module.startswith(pkg + "."):
            leaf = module[len(pkg) + 1:].split(".")[0]
            if leaf in HELPERS[pkg]:
                return None
            ids = [p for p in PAPER_IDS if leaf == p or leaf.startswith(p + "_")]
            return (pkg, max(ids, key=len)) if ids else (pkg, leaf)
    return None


def _same_paper(a: str, b: str) -> bool:
    # zhang2018_madmm and zhang2018_radmm are two papers; the ids of one paper across packages share a stem.
    return a == b or a.startswith(b + "_") or b.startswith(a + "_")


def violations(edges: dict[str, set[str]]) -> list[str]:
    out = []
    for src, targets in sorted(edges.items()):
        top = src.split(".")[0]
        if top not in LAYER_OF:
            if src:  # the package's __init__ imports nothing of its own
                out.append(f"{src}: not in any layer (add it to LAYERS in this test and to the table of README.md#layout)")
            continue
        for dst in sorted(targets):
            dtop = dst.split(".")[0]
            if not dst or dtop not in LAYER_OF:
                out.append(f"{src} -> {dst or 'repro_dpadmm'}: imports a module outside the layers")
            elif LAYER_OF[dtop] > LAYER_OF[top]:
                out.append(f"{src} -> {dst}: upward ({LAYERS[LAYER_OF[top]][0]} layer imports "
                           f"{LAYERS[LAYER_OF[dtop]][0]} layer)")
            else:
                ps, pd = paper_of(src), paper_of(dst)
                if ps and pd and ps[0] == pd[0] and not _same_paper(ps[1], pd[1]):
                    out.append(f"{src} -> {dst}: sibling paper module")
    return out


def package_edges() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(SRC.rglob("*.py"))}


def test_the_checker_catches_upward_and_sibling_edges():
    assert violations({"report.provenance": {"cli"}}) == [
        "report.provenance -> cli: upward (report layer imports cli layer)"]
    assert violations({"experiments.beyond_audit": {"experiments.hu2020_sharing"}}) == [
        "experiments.beyond_audit -> experiments.hu2020_sharing: sibling paper module"]
    assert violations({"experiments.zhang2018_madmm": {"experiments.zhang2018_radmm"}})
    assert violations({"experiments.beyond_audit_run": {"experiments.beyond_audit", "experiments.common"}}) == []
    assert violations({"algorithms.consensus": {"privacy.mechanisms", "problems", "datasets"}}) == []
    assert violations({"privacy.bounds.xu2020": {"privacy.bounds.hu2020"}})
    assert violations({"newthing": set()})


def test_the_parser_resolves_relative_and_lazy_imports(tmp_path):
    edges = package_edges()
    assert "claims" in edges["experiments.common"]  # a function-level `from ..claims import ...`
    assert "paths" in edges["config"]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_or_sibling_import(path):
    problems = violations({module_name(path): imports_of(path)})
    assert not problems, "\n".join(problems)


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle of the import graph, as the modules of each strongly connected component that has more than one
    module or imports itself (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for dst in targets:
                if dst not in edges:
                    continue
                if dst not in index:
                    index[dst] = low[dst] = len(index)
                    stack.append(dst)
                    on_stack.add(dst)
                    work.append((dst, iter(sorted(edges.get(dst, ())))))
                    break
                if dst in on_stack:
                    low[node] = min(low[node], index[dst])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges.get(node, ()):
                        cycles.append(sorted(component))
    return sorted(cycles)


def test_the_cycle_finder_finds_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert import_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    assert import_cycles({"privacy.spend": {"privacy.bounds.x"}, "privacy.bounds.x": {"privacy.spend"}}) == [
        ["privacy.bounds.x", "privacy.spend"]]


def test_no_import_cycle():
    """No module imports, directly or through others (function-level imports included), a module that imports it: a
    registry is filled by the modules that register in it, or looked up by name, never by importing them back."""
    cycles = import_cycles(package_edges())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
