"""One claims path: a claim is checked only in config/claims/*.yaml, judged only by repro_dpadmm.claims (through
`experiments.common.claims_table` in notebooks). No notebook or experiment module carries its own checker or
computes a verdict inline.

The scanner's own test pins the old checkers' patterns (xu2020_dpaccadmm.evaluate_claims/_check,
hu2020_sharing.describe_*/_verdict, _zhang2018.check/claims_markdown, beyond_audit.checks), so they cannot return.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from repro_dpadmm.paths import project_root

ROOT = project_root(Path(__file__).parent)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*/*.ipynb"))
MODULES = sorted(p for p in (ROOT / "src" / "repro_dpadmm" / "experiments").glob("*.py") if p.name != "common.py")

# Names of the old checkers, and function names that would make a new one.
OLD_CHECKERS = re.compile(r"\b(evaluate_claims|claims_markdown|describe_[a-z_]+|_verdict|_check|check|checks)\s*\(")
CHECKER_DEF = re.compile(r"^(evaluate_claims?|claims_markdown|_?checks?|_?verdicts?|describe_\w+|_?judge\w*)$")
# A verdict typed into code: outcome words in a string literal.
VERDICT_WORDS = re.compile(r"""(["'])[^"'\n]*(\*\*(holds|does not hold|held|not held|reproduced|not reproduced|"""
                           r"""partly)\*\*|\b(does not hold|not held)\b|[✓✗])[^"'\n]*\1""")


def _reads_claims_files(tree: ast.AST) -> bool:
    """A string in code (not a docstring) naming the claims folder: only repro_dpadmm.claims reads it."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
               and re.fullmatch(r"(config/)?claims(/.*)?", n.value) for n in ast.walk(tree))


def notebook_code(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []) if c.get("cell_type") == "code")


def notebook_problems(code: str) -> list[str]:
    """What in a notebook's code judges a claim outside the claims engine."""
    out = [f"calls the old checker {m.group(1)}()" for m in OLD_CHECKERS.finditer(code)]
    out += [f"types a verdict: {m.group(0)[:60]}" for m in VERDICT_WORDS.finditer(code)]
    if "claims_table(" not in code:
        out.append("has no claims_table(...) 'what we see' (the one evaluator)")
    return out


def module_problems(source: str) -> list[str]:
    """What in an experiment module judges a claim outside the claims engine."""
    out, tree = [], ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and CHECKER_DEF.match(node.name):
            out.append(f"defines a checker {node.name}() (line {node.lineno})")
    out += [f"types a verdict: {m.group(0)[:60]}" for m in VERDICT_WORDS.finditer(source)]
    if _reads_claims_files(tree):
        out.append("reads config/claims itself (only repro_dpadmm.claims does)")
    return out


def test_the_scanner_catches_every_old_pattern():
    old = ['display(Markdown(xu.claims_markdown(xu.evaluate_claims("fig2", metrics))))',
           "display(Markdown(ex.describe_noise(metrics, params['panels'])))",
           'rows.append(check(f"DP beats", held, "0.1 vs 0.2"))',
           "display(Markdown(claims_markdown(ex.checks(results, metrics))))",
           'print("**holds**" if gap < 0 else "**does not hold**")']
    for line in old:
        assert notebook_problems(line + "\nclaims_table('p', 'i', m)"), line
    assert notebook_problems("x = 1") == ["has no claims_table(...) 'what we see' (the one evaluator)"]
    assert notebook_problems("display(Markdown(claims_table('huang2019_dpadmm', 'fig1', metrics)))") == []
    assert module_problems("def _verdict(ok):\n    return '**holds**' if ok else '**does not hold**'\n")
    assert module_problems("def load(root):\n    return root / 'config/claims' / 'x.yaml'\n")
    assert module_problems("def load(root):\n    return root / 'config' / 'claims' / 'x.yaml'\n")
    assert module_problems('"""Keys documented in config/claims/x.yaml."""\n') == []
    assert module_problems("def describe_eps(m):\n    return ''\n")
    assert module_problems("def run_item(params):\n    return {'acc': 0.9}\n") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_notebooks_judge_claims_only_through_claims_table(path):
    assert notebook_problems(notebook_code(path)) == []


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_experiment_modules_carry_no_claim_checker(path):
    assert module_problems(path.read_text()) == []
