"""Claims files: load and validate `config/claims/*.yaml`, and evaluate each claim against the measured numbers.

The format is documented in `config/claims/README.md`. A claim is a quote from a paper plus checks on the flat
metrics an item writes (`results/<paper>/<item>/metrics.json`) or on a dataset sidecar
(`resources/processed/<name>.json`, for `source: dataset:<name>`). Its verdict:

* `reproduced`: every check passes;
* `partly`: some checks pass, some fail;
* `not reproduced`: every check fails;
* `not run`: the item (or dataset) it needs was not run or is missing;
* `not checkable`: the paper gives nothing to check (`not_checkable:`), or a metric a check needs is missing,
  null or not a number, or the claim itself is malformed.

Loading never raises on a bad claim: problems are collected (`ClaimsFile.problems`) so the report still shows
everything else; `validate_claims_file` is the strict form (raises `ClaimsError` listing every problem).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

VERDICTS = ("reproduced", "partly", "not reproduced", "not run", "not checkable")

# kind -> (required fields, optional fields); every check may also carry `label` and `note`.
CHECK_KINDS: dict[str, tuple[frozenset, frozenset]] = {
    "approx": (frozenset({"metric", "expected"}), frozenset({"rel_tol", "abs_tol"})),
    "equal": (frozenset({"metric", "expected"}), frozenset()),
    "less": (frozenset({"left", "right"}), frozenset({"margin"})),
    "greater": (frozenset({"left", "right"}), frozenset({"margin"})),
    "monotone": (frozenset({"metrics", "direction"}), frozenset({"strict", "tol"})),
    "range": (frozenset({"metric"}), frozenset({"min", "max"})),
    "true": (frozenset({"metric"}), frozenset()),
    "false": (frozenset({"metric"}), frozenset()),
    "ratio_range": (frozenset({"left", "right"}), frozenset({"min", "max"})),
}
COMMON_CHECK_FIELDS = frozenset({"kind", "label", "note"})
CLAIM_FIELDS = frozenset({"id", "item", "source", "quote", "where", "paper_value", "checks", "depends_on", "note",
                          "not_checkable", "datasets"})
ITEM_FIELDS = frozenset({"title", "caption", "figure", "choices", "inconsistencies"})
PRIVACY_FIELDS = frozenset({"label", "mechanism", "bound", "note"})
TOP_FIELDS = frozenset({"metrics", "claims", "items", "privacy"})
ID_RE = re.compile(r"^[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.[A-Za-z0-9_][A-Za-z0-9_.]*$")  # the slug may hold dots (e.g. a dataset)
SOURCE_RE = re.compile(r"^dataset:[A-Za-z0-9_]+$")


class ClaimsError(ValueError):
    """A claims file is malformed; the message lists every problem and where it is."""


@dataclass
class Claim:
    id: str
    paper: str
    item: str | None            # None for dataset claims
    source: str | None          # "dataset:<name>" or None (the item's metrics)
    quote: str
    where: str = ""
    paper_value: Any = None
    checks: list[dict] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    note: str = ""
    not_checkable: str = ""
    datasets: list[str] = field(default_factory=list)
    file: str = ""
    invalid: str = ""           # why the claim cannot be evaluated (malformed), empty when valid

    @property
    def dataset(self) -> str | None:
        return self.source.split(":", 1)[1] if self.source else None

    def metric_keys(self) -> list[str]:
        return [k for c in self.checks for k in check_keys(c)]


@dataclass
class ClaimsFile:
    path: Path
    name: str                                   # file stem: a paper id, or e.g. "datasets"
    metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    items: dict[str, dict] = field(default_factory=dict)
    privacy: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)   # errors: the affected claims cannot be evaluated
    warnings: list[str] = field(default_factory=list)   # documentation gaps (e.g. an undocumented metric key)


def check_keys(check: dict) -> list[str]:
    """The metric keys a check reads (numbers given in place of a key are not keys)."""
    keys = []
    for name in ("metric", "left", "right"):
        if isinstance(check.get(name), str):
            keys.append(check[name])
    if isinstance(check.get("metrics"), list):
        keys.extend(k for k in check["metrics"] if isinstance(k, str))
    return keys


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_problems(check, where: str, warnings: list[str] | None = None) -> list[str]:
    """Structural problems of one check (empty list when it is well formed).

    Unknown fields go to `warnings` (they do not change what is checked) when a list is given.
    """
    if not isinstance(check, dict):
        return [f"{where}: a check must be a mapping like {{kind: approx, metric: ..., expected: ...}}, "
                f"got {check!r}"]
    kind = check.get("kind")
    if kind not in CHECK_KINDS:
        return [f"{where}: unknown check kind {kind!r}; use one of {', '.join(CHECK_KINDS)}"]
    required, optional = CHECK_KINDS[kind]
    out = []
    missing = sorted(required - set(check))
    if missing:
        out.append(f"{where}: check kind {kind!r} needs field(s) {', '.join(missing)}")
    unknown = sorted(set(check) - required - optional - COMMON_CHECK_FIELDS)
    if unknown:
        (warnings if warnings is not None else out).append(
            f"{where}: check kind {kind!r} has unknown field(s) {', '.join(unknown)} "
                   f"(allowed: {', '.join(sorted(required | optional | COMMON_CHECK_FIELDS))})")
    for name in ("metric", "left"):
        if name in check and not (isinstance(check[name], str) and check[name]):
            out.append(f"{where}: {name} must be a metric key (a non-empty string), got {check[name]!r}")
    if "right" in check and not (isinstance(check["right"], str) and check["right"]) \
            and not _is_number(check["right"]):
        out.append(f"{where}: right must be a metric key or a number, got {check['right']!r}")
    for name in ("rel_tol", "abs_tol", "margin", "min", "max", "tol"):
        if name in check and not _is_number(check[name]):
            out.append(f"{where}: {name} must be a number, got {check[name]!r}")
    for name in ("rel_tol", "abs_tol", "tol"):
        if _is_number(check.get(name)) and check[name] < 0:
            out.append(f"{where}: {name} must be >= 0, got {check[name]}")
    if kind == "approx":
        if "rel_tol" not in check and "abs_tol" not in check:
            out.append(f"{where}: approx needs rel_tol and/or abs_tol (how close counts as reproduced)")
        if "expected" in check and not _is_number(check["expected"]):
            out.append(f"{where}: approx expected must be a number, got {check['expected']!r}")
    if kind == "equal" and "expected" in check and isinstance(check["expected"], (dict, list)):
        out.append(f"{where}: equal expected must be a number, string, boolean or null")
    if kind in ("range", "ratio_range") and "min" not in check and "max" not in check:
        out.append(f"{where}: {kind} needs min and/or max")
    if _is_number(check.get("min")) and _is_number(check.get("max")) and check["min"] > check["max"]:
        out.append(f"{where}: min {check['min']} is greater than max {check['max']}")
    if kind == "monotone":
        ms = check.get("metrics")
        if not (isinstance(ms, list) and len(ms) >= 2 and all(isinstance(m, str) and m for m in ms)):
            out.append(f"{where}: monotone needs metrics: a list of at least two metric keys, got {ms!r}")
        if check.get("direction") not in ("increasing", "decreasing"):
            out.append(f"{where}: monotone direction must be 'increasing' or 'decreasing', "
                       f"got {check.get('direction')!r}")
        if "strict" in check and not isinstance(check["strict"], bool):
            out.append(f"{where}: strict must be true or false, got {check['strict']!r}")
    for name in ("label", "note"):
        if name in check and not isinstance(check[name], str):
            out.append(f"{where}: {name} must be a string")
    return out


def _str_list(value, where: str, name: str) -> tuple[list[str], list[str]]:
    if value is None:
        return [], []
    if isinstance(value, str):
        return [value], []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value), []
    return [], [f"{where}: {name} must be a list of strings, got {value!r}"]


def parse_claims(data, path: Path | str = "<claims>") -> ClaimsFile:
    """Parse an already-loaded claims mapping; problems are collected, never raised."""
    path = Path(path)
    cf = ClaimsFile(path=path, name=path.stem)
    fname = path.name
    if data is None:
        data = {}
    if not isinstance(data, dict):
        cf.problems.append(f"{fname}: the top level must be a mapping with keys metrics, claims, items, privacy; "
                           f"got {type(data).__name__}")
        return cf
    unknown = sorted(set(data) - TOP_FIELDS)
    if unknown:
        cf.warnings.append(f"{fname}: unknown top-level key(s) {', '.join(unknown)} "
                           f"(allowed: {', '.join(sorted(TOP_FIELDS))})")

    metrics = data.get("metrics") or {}
    if not isinstance(metrics, dict):
        cf.problems.append(f"{fname}: metrics must map item -> {{metric key: description}}")
        metrics = {}
    for item, keys in metrics.items():
        if not isinstance(keys, dict):
            cf.problems.append(f"{fname}: metrics.{item} must map metric key -> description, got {keys!r}")
            continue
        cf.metrics[str(item)] = {str(k): ("" if v is None else str(v)) for k, v in keys.items()}

    items = data.get("items") or {}
    if not isinstance(items, dict):
        cf.problems.append(f"{fname}: items must map item -> {{title, caption, figure, choices, inconsistencies}}")
        items = {}
    for item, spec in items.items():
        where = f"{fname}: items.{item}"
        if not isinstance(spec, dict):
            cf.problems.append(f"{where} must be a mapping")
            continue
        bad = sorted(set(spec) - ITEM_FIELDS)
        if bad:
            cf.warnings.append(f"{where}: unknown field(s) {', '.join(bad)} "
                               f"(allowed: {', '.join(sorted(ITEM_FIELDS))})")
        clean = {"title": str(spec.get("title") or ""), "caption": str(spec.get("caption") or "")}
        figs, probs = _str_list(spec.get("figure"), where, "figure")
        clean["figure"] = figs
        cf.problems += probs
        for name in ("choices", "inconsistencies"):
            vals, probs = _str_list(spec.get(name), where, name)
            clean[name] = vals
            cf.problems += probs
        cf.items[str(item)] = clean

    privacy = data.get("privacy") or {}
    if not isinstance(privacy, dict):
        cf.problems.append(f"{fname}: privacy must map method -> {{label, mechanism, bound, note}}")
        privacy = {}
    for method, spec in privacy.items():
        if not isinstance(spec, dict) or set(spec) - PRIVACY_FIELDS:
            cf.problems.append(f"{fname}: privacy.{method} must be a mapping with keys among "
                               f"{', '.join(sorted(PRIVACY_FIELDS))}")
            continue
        cf.privacy[str(method)] = {k: str(v) for k, v in spec.items() if v is not None}

    claims = data.get("claims") or []
    if not isinstance(claims, list):
        cf.problems.append(f"{fname}: claims must be a list of claims")
        claims = []
    for n, raw in enumerate(claims):
        claim, probs, warns = _parse_claim(raw, cf, n)
        cf.problems += probs
        cf.warnings += warns
        if claim is not None:
            cf.claims.append(claim)
    ids = [c.id for c in cf.claims]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        cf.problems.append(f"{fname}: claim id {dup!r} is used more than once")
    return cf


def _parse_claim(raw, cf: ClaimsFile, n: int) -> tuple[Claim | None, list[str], list[str]]:
    fname = cf.path.name
    if not isinstance(raw, dict):
        return None, [f"{fname}: claims[{n}] must be a mapping, got {raw!r}"], []
    cid = raw.get("id")
    where = f"{fname}: claim {cid!r}" if cid else f"{fname}: claims[{n}]"
    if not (isinstance(cid, str) and ID_RE.match(cid)):
        return None, [f"{where}: id must look like <paper>.<item>.<slug> (letters, digits, _; the slug may also hold dots), got {cid!r}"], []
    errors, warnings = [], []
    paper, middle, _ = cid.split(".", 2)
    unknown = sorted(set(raw) - CLAIM_FIELDS)
    if unknown:
        warnings.append(f"{where}: unknown field(s) {', '.join(unknown)} "
                        f"(allowed: {', '.join(sorted(CLAIM_FIELDS))})")
    source = raw.get("source")
    item = raw.get("item")
    if source is not None:
        if not (isinstance(source, str) and SOURCE_RE.match(source)):
            errors.append(f"{where}: source must be 'dataset:<name>', got {source!r}")
        if item is not None:
            errors.append(f"{where}: give either item (checks on the item's metrics.json) or source, not both")
    else:
        if not (isinstance(item, str) and item):
            errors.append(f"{where}: item is required (the item whose metrics.json the checks read)")
        elif middle != item:
            errors.append(f"{where}: the id's middle part {middle!r} must be the item {item!r}")
        if cf.name not in ("datasets",) and paper != cf.name:
            errors.append(f"{where}: the id must start with the paper of its file, {cf.name!r}")
    quote = raw.get("quote")
    if not (isinstance(quote, str) and quote.strip()):
        errors.append(f"{where}: quote is required (the paper's words, or a precise paraphrase)")
    if "where" in raw and not isinstance(raw["where"], str):
        errors.append(f"{where}: where must be a string like '§VI-E, Fig. 1'")
    pv = raw.get("paper_value")
    checks = raw.get("checks")
    if checks is None:
        checks = []
    if not isinstance(checks, list):
        errors.append(f"{where}: checks must be a list")
        checks = []
    nc = raw.get("not_checkable")
    if nc is not None and not (isinstance(nc, str) and nc.strip()):
        errors.append(f"{where}: not_checkable must say why, as a non-empty string")
    if not checks and not nc:
        errors.append(f"{where}: give at least one check, or checks: [] with not_checkable: '<why>'")
    if checks and nc:
        errors.append(f"{where}: a claim with checks cannot also be not_checkable")
    for k, check in enumerate(checks):
        errors += _check_problems(check, f"{where} checks[{k}]", warnings)
    depends_on, probs = _str_list(raw.get("depends_on"), where, "depends_on")
    errors += probs
    datasets, probs = _str_list(raw.get("datasets"), where, "datasets")
    errors += probs
    if "note" in raw and not isinstance(raw["note"], str):
        errors.append(f"{where}: note must be a string")

    claim = Claim(
        id=cid, paper=paper, item=item if isinstance(item, str) and source is None else None,
        source=source if isinstance(source, str) else None, quote=str(quote or ""),
        where=str(raw.get("where") or ""), paper_value=pv,
        checks=[c for c in checks if isinstance(c, dict)], depends_on=depends_on,
        note=str(raw.get("note") or ""), not_checkable=str(nc or ""), datasets=datasets, file=cf.path.name,
        invalid="; ".join(e.split(": ", 2)[-1] for e in errors),
    )
    # Documentation check: every key a claim reads should be documented under metrics.<item>.
    if not errors and claim.item is not None and cf.metrics:
        documented = cf.metrics.get(claim.item)
        if documented is None:
            warnings.append(f"{where}: metrics.{claim.item} does not exist; document the item's metric keys")
        else:
            for key in claim.metric_keys():
                if key not in documented:
                    warnings.append(f"{where}: metric {key!r} is not documented under metrics.{claim.item}")
    return claim, errors, warnings


def load_claims_file(path: str | Path) -> ClaimsFile:
    """Load one claims file, collecting problems (a YAML syntax error is a problem too)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        cf = ClaimsFile(path=path, name=path.stem)
        cf.problems.append(f"{path.name}: not valid YAML: {exc}")
        return cf
    return parse_claims(data, path)


def validate_claims_file(path: str | Path) -> ClaimsFile:
    """Strict load: raise ClaimsError listing every problem (errors and warnings) of the file."""
    cf = load_claims_file(path)
    problems = cf.problems + cf.warnings
    if problems:
        raise ClaimsError(f"{len(problems)} problem(s) in {Path(path).name}:\n  " + "\n  ".join(problems))
    return cf


def load_all(claims_dir: str | Path) -> list[ClaimsFile]:
    """Every `*.yaml` in the claims folder (sorted); ids must be unique across files."""
    files = [load_claims_file(p) for p in sorted(Path(claims_dir).glob("*.yaml"))]
    seen: dict[str, str] = {}
    for cf in files:
        for c in cf.claims:
            if c.id in seen:
                cf.problems.append(f"{cf.path.name}: claim id {c.id!r} is also used in {seen[c.id]}")
            seen.setdefault(c.id, cf.path.name)
    return files


# --------------------------------------------------------------------------------------------------- evaluation

def fmt(value) -> str:
    """A number as the report shows it: integers with thousands separators, floats to 4 significant digits."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value == 0:
            return "0"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:.4g}"
    return str(value)


@dataclass
class CheckResult:
    kind: str
    check: str            # what is checked, short (keys and operator)
    expected: str         # what would pass, short
    measured: str         # the measured numbers, short ("—" when not evaluated)
    passed: bool | None   # None: could not be evaluated (see reason)
    reason: str = ""
    label: str = ""
    observed: str = ""    # the measured numbers with their keys, for claims.json

    def as_dict(self) -> dict:
        return {"kind": self.kind, "check": self.check, "expected": self.expected, "measured": self.measured,
                "passed": self.passed, "reason": self.reason, "label": self.label}


class _Missing(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _number(metrics: dict, key) -> float:
    """The numeric value of `key` (a number given in place of a key is itself)."""
    if _is_number(key):
        return float(key)
    if key not in metrics:
        raise _Missing(f"metric {key!r} is missing")
    v = metrics[key]
    if v is None:
        raise _Missing(f"metric {key!r} is null (not computed, NaN or infinite)")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Missing(f"metric {key!r} is not a number ({v!r})")
    if math.isnan(v) or math.isinf(v):
        raise _Missing(f"metric {key!r} is {v}")
    return float(v)


def _name(key) -> str:
    return fmt(key) if _is_number(key) else str(key)


def _bounds(check) -> str:
    lo, hi = check.get("min"), check.get("max")
    if lo is not None and hi is not None:
        return f"in [{fmt(lo)}, {fmt(hi)}]"
    return f"≥ {fmt(lo)}" if lo is not None else f"≤ {fmt(hi)}"


def _in_bounds(v: float, check) -> bool:
    lo, hi = check.get("min"), check.get("max")
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def _tolerance(check) -> float:
    exp = float(check["expected"])
    return max(float(check.get("abs_tol", 0.0)), float(check.get("rel_tol", 0.0)) * abs(exp))


def describe_check(check: dict) -> tuple[str, str]:
    """(what is checked, what passes) of a well-formed check, without any measurement."""
    kind = check["kind"]
    if kind == "approx":
        return f"{check['metric']} ≈ {fmt(check['expected'])}", f"{fmt(check['expected'])} ± {fmt(_tolerance(check))}"
    if kind == "equal":
        return f"{check['metric']} = {fmt(check['expected'])}", fmt(check["expected"])
    if kind in ("less", "greater"):
        op = "<" if kind == "less" else ">"
        margin = float(check.get("margin", 0.0))
        m = f" {'−' if kind == 'less' else '+'} {fmt(margin)}" if margin else ""
        return f"{_name(check['left'])} {op} {_name(check['right'])}{m}", f"left {op} right{m}"
    if kind == "monotone":
        strict = bool(check.get("strict", False))
        op = ("<" if strict else "≤") if check["direction"] == "increasing" else (">" if strict else "≥")
        tol = float(check.get("tol", 0.0))
        return (f" {op} ".join(check["metrics"]),
                f"{'strictly ' if strict else ''}{check['direction']}" + (f" (tolerance {fmt(tol)})" if tol else ""))
    if kind == "range":
        return f"{check['metric']} {_bounds(check)}", _bounds(check)
    if kind in ("true", "false"):
        return f"{check['metric']} is {kind}", kind
    if kind == "ratio_range":
        return f"{_name(check['left'])} / {_name(check['right'])} {_bounds(check)}", _bounds(check)
    raise ValueError(f"unknown check kind {kind!r}")


def _measure(check: dict, metrics: dict) -> tuple[bool, str, str]:
    """(passed, measured short, measured with keys); raises _Missing when a value is unusable."""
    kind = check["kind"]
    if kind == "approx":
        key, exp = check["metric"], float(check["expected"])
        v = _number(metrics, key)
        diff = v - exp
        rel = f", {diff / exp:+.1%}" if exp else ""
        return abs(diff) <= _tolerance(check), f"{fmt(v)} (off by {fmt(diff)}{rel})", f"{key} = {fmt(v)}"
    if kind == "equal":
        key, exp = check["metric"], check["expected"]
        if key not in metrics:
            raise _Missing(f"metric {key!r} is missing")
        v = metrics[key]
        if _is_number(v) and _is_number(exp):
            same = float(v) == float(exp)
        else:
            same = v == exp and type(v) is type(exp)
        return same, fmt(v), f"{key} = {fmt(v)}"
    if kind in ("less", "greater"):
        left, right, margin = check["left"], check["right"], float(check.get("margin", 0.0))
        a, b = _number(metrics, left), _number(metrics, right)
        ok = a < b - margin if kind == "less" else a > b + margin
        observed = ", ".join(f"{k} = {fmt(x)}" for k, x in ((left, a), (right, b)) if isinstance(k, str))
        fa, fb = (fmt(a), fmt(b)) if fmt(a) != fmt(b) else (f"{a:.10g}", f"{b:.10g}")  # show the difference
        return ok, f"{fa} vs {fb}", observed
    if kind == "monotone":
        keys = check["metrics"]
        strict, tol = bool(check.get("strict", False)), float(check.get("tol", 0.0))
        values = [_number(metrics, k) for k in keys]
        sign = 1.0 if check["direction"] == "increasing" else -1.0
        steps = [sign * (b - a) for a, b in zip(values, values[1:], strict=False)]
        ok = all((s > -tol if tol else s > 0) if strict else s >= -tol for s in steps)
        observed = ", ".join(f"{k} = {fmt(v)}" for k, v in zip(keys, values, strict=True))
        return ok, ", ".join(fmt(v) for v in values), observed
    if kind == "range":
        v = _number(metrics, check["metric"])
        return _in_bounds(v, check), fmt(v), f"{check['metric']} = {fmt(v)}"
    if kind in ("true", "false"):
        key = check["metric"]
        if key not in metrics:
            raise _Missing(f"metric {key!r} is missing")
        v = metrics[key]
        if not isinstance(v, bool):
            raise _Missing(f"metric {key!r} is not a boolean ({v!r})")
        return v == (kind == "true"), fmt(v), f"{key} = {fmt(v)}"
    if kind == "ratio_range":
        left, right = check["left"], check["right"]
        a, b = _number(metrics, left), _number(metrics, right)
        if b == 0:
            raise _Missing(f"the ratio {_name(left)} / {_name(right)} is undefined: the denominator is 0")
        r = a / b
        return _in_bounds(r, check), f"{fmt(r)} (= {fmt(a)} / {fmt(b)})", f"{_name(left)} / {_name(right)} = {fmt(r)}"
    raise ValueError(f"unknown check kind {kind!r}")


def evaluate_check(check: dict, metrics: dict) -> CheckResult:
    """Evaluate one well-formed check on flat metrics. A missing, null or non-numeric value gives passed=None."""
    what, expected = describe_check(check)
    label = str(check.get("label") or "")
    try:
        ok, measured, observed = _measure(check, metrics)
    except _Missing as exc:
        return CheckResult(check["kind"], what, expected, "—", None, reason=exc.reason, label=label)
    return CheckResult(check["kind"], what, expected, measured, bool(ok), label=label, observed=observed)


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def expected(self) -> str:
        if self.claim.not_checkable:
            return "nothing measurable"
        parts = []
        for c in self.checks:
            extra = f" ({c.expected})" if c.kind in ("approx", "monotone") else ""
            parts.append(c.check + extra)
        return "; ".join(parts)

    @property
    def measured(self) -> str:
        return "; ".join(c.observed for c in self.checks if c.passed is not None) or "—"

    def record(self) -> dict:
        c = self.claim
        return {"id": c.id, "paper": c.paper, "item": c.item if c.item else c.source, "quote": c.quote,
                "where": c.where, "paper_value": c.paper_value, "expected": self.expected,
                "measured": self.measured, "verdict": self.verdict, "reason": self.reason,
                "checks": [r.as_dict() for r in self.checks], "depends_on": c.depends_on, "note": c.note,
                "source": c.source or f"results/{c.paper}/{c.item}/metrics.json", "file": c.file}


def evaluate_claim(claim: Claim, metrics: dict | None, *, missing_reason: str = "",
                   unavailable: dict[str, str] | None = None) -> Verdict:
    """The verdict of one claim on the metrics of its item (or the flattened dataset sidecar).

    metrics None: the item or dataset produced no numbers; `missing_reason` says why (verdict "not run").
    A metrics dict whose `status` is "not run" gives "not run" with its `reason`.
    `unavailable`: {dataset: reason} for the unavailable datasets the item reads. A claim listing such a dataset in
    its `datasets:` is "not run"; a missing metric in an item that lacks a dataset is "not run" too, saying so.
    """
    unavailable = unavailable or {}
    if claim.invalid:
        return Verdict(claim, "not checkable", f"malformed claim: {claim.invalid}")
    if claim.not_checkable:
        return Verdict(claim, "not checkable", claim.not_checkable)
    if metrics is None:
        return Verdict(claim, "not run", missing_reason or "no results")
    status = metrics.get("status", "ok")
    if status == "not run":
        return Verdict(claim, "not run", str(metrics.get("reason") or "the item was not run"))
    blocked = [d for d in claim.datasets if d in unavailable]
    if blocked:
        return Verdict(claim, "not run",
                       "dataset unavailable: " + "; ".join(f"{d} ({_first_line(unavailable[d])})" for d in blocked))
    results = [evaluate_check(c, metrics) for c in claim.checks]
    undecided = [r for r in results if r.passed is None]
    if undecided:
        reason = "; ".join(dict.fromkeys(r.reason for r in undecided))
        if unavailable and any(r.reason.endswith("is missing") for r in undecided):
            return Verdict(claim, "not run", f"{reason}, and the item lacks dataset(s) "
                           + ", ".join(sorted(unavailable)), results)
        if status != "ok" and metrics.get("reason"):
            reason += f" (item status {status!r}: {metrics['reason']})"
        return Verdict(claim, "not checkable", reason, results)
    failed = [r for r in results if not r.passed]
    if not failed:
        if len(results) == 1:
            return Verdict(claim, "reproduced", f"{results[0].check}: measured {results[0].measured}", results)
        return Verdict(claim, "reproduced", f"all {len(results)} checks pass", results)
    fails = "; ".join(f"{r.check} (measured {r.measured})" for r in failed)
    if len(failed) < len(results):
        return Verdict(claim, "partly", f"{len(results) - len(failed)} of {len(results)} checks pass; fails: {fails}",
                       results)
    return Verdict(claim, "not reproduced", ("fails: " if len(results) == 1 else f"all {len(results)} checks fail: ")
                   + fails, results)


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else "unavailable"


def flatten(obj, prefix: str = "") -> dict:
    """Nested mappings and lists as flat dotted keys: {"arrays": {"X": [45222, 104]}} -> {"arrays.X.0": 45222, ...}."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = obj
    return out

