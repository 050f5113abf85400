"""Claims files: load and validate `config/claims/*.yaml`, and evaluate each claim against the measured numbers.

This is the one claims path: the report and every notebook's "what we see" (`experiments.common.claims_table`) judge
claims here and nowhere else. The format is documented in `config/claims/README.md`. A claim is a quote from a paper
plus checks on the flat metrics an item writes (`results/<paper>/<item>/metrics.json`) or on a dataset sidecar
(`resources/processed/<name>.json`, for `source: dataset:<name>`).

Noise: beside a mean an item may write per-repeat values (`metrics["repeats"][key]`) or a standard error (`<key>.se`).
A comparison of noisy quantities is decided only beyond `z` standard errors of the difference (paired when both
operands have per-repeat values of the same length); inside that band its check is *inconclusive*. Quantities without
noise information are compared exactly.

Evidence kinds: every metric key has a kind (the file's `evidence:` patterns): `measured` (an algorithm run produced
it), `derived` (a formula of config values and paper bounds) or `given` (the data build or the config asserts it). The
kinds a claim's checks read decide its class, so that a claim that could not have failed is never "reproduced":

* **measured** (it reads a measured key): `reproduced` (every check passes), `inconclusive` (none fails, one is inside
  the noise), `degenerate` (none fails, one compares a side that is no better than its trivial reference: the
  majority-class rate, F(x0), the zero model), `partly` (some pass, some fail), `not reproduced` (checks fail, none
  passes);
* **analytic** (derived keys, no measured one): `holds` / `fails` (a theorem's arithmetic, an accountant comparison);
* **setup** (given keys only, or `setup: true`: our own construction): `setup ok` / `setup failed`;
* any class: `not run` (the item or dataset it needs was not run, or a variant's metrics are missing) and
  `not checkable` (nothing to check, a metric missing, null or not a number, or a malformed claim).

`variants:` re-evaluate a claim on the `<key>@<variant>` metrics of a choice the paper leaves open; `finding:` entries
explain a verdict and its cause, and a finding whose cause the evidence contradicts is flagged (a `paper` cause on a
verdict that changes under a variant; a `choice` cause on a claim that fails under every variant). A check's numeric
thresholds carry `from:` (the paper's number or the rule) and, optionally, `paper_threshold:` (a looser threshold is
flagged).

Loading never raises on a bad claim: problems are collected (`ClaimsFile.problems`) so that a caller can list them
all; `validate_claims_file` is the strict form (raises `ClaimsError` listing every problem).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import yaml

from . import safeload

# The verdicts a claim can get, by class, in the order the report lists them.
VERDICTS = ("reproduced", "partly", "inconclusive", "degenerate", "not reproduced", "not run", "not checkable")
ANALYTIC_VERDICTS = ("holds", "fails", "not run", "not checkable")
SETUP_VERDICTS = ("setup ok", "setup failed")
CLASS_VERDICTS = {"measured": VERDICTS, "analytic": ANALYTIC_VERDICTS,
                  "setup": SETUP_VERDICTS + ("not run", "not checkable")}
ALL_VERDICTS = VERDICTS + ("holds", "fails") + SETUP_VERDICTS
# A claim with one of these verdicts and no matching `finding:` is flagged "unexplained".
FAILING = ("partly", "inconclusive", "degenerate", "not reproduced", "fails", "setup failed")
# Verdicts that judged the numbers (a finding can only be stale against one of these).
JUDGED = ("reproduced", "partly", "inconclusive", "degenerate", "not reproduced", "holds", "fails", "setup ok",
          "setup failed")
CAUSES = ("paper", "paper-inconsistency", "choice", "bug-fixed-since")
PAPER_CAUSES = ("paper", "paper-inconsistency")
# Evidence kinds of a metric key, and the class of claim a claim's most informative kind makes it.
KINDS = ("measured", "derived", "given")
CLASS_OF_KIND = {"measured": "measured", "derived": "analytic", "given": "setup"}
CLASSES = ("measured", "analytic", "setup")
# Check fields that hold numeric thresholds (each needs `from:`; see the schema).
THRESHOLD_FIELDS = ("margin", "tol", "min", "max", "rel_tol", "abs_tol")
DEFAULT_NOISE_Z = 2.0
REPEATS_KEY = "repeats"     # the one reserved non-flat key of metrics.json: {key: [per-repeat values]}

CHECK_KINDS = ("approx", "equal", "less", "greater", "monotone", "range", "true", "false", "ratio_range")
# The schema of a claims file (JSON Schema 2020-12): the one structural definition of the format.
SCHEMA_NAME = "claims.schema.yaml"
SOURCE_SCHEMA = Path(__file__).resolve().parents[2] / "config" / "claims" / SCHEMA_NAME


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
    setup: bool = False         # checks our own construction: shown with the item, never counted as reproduced
    variants: list[str] = field(default_factory=list)            # names declared under the file's `variants:`
    variant_specs: dict[str, dict] = field(default_factory=dict)  # name -> {choice, label, item?, note?}
    findings: list[dict] = field(default_factory=list)           # [{when: [verdicts], cause, text, evidence}]
    noise_z: float = DEFAULT_NOISE_Z                              # the file's `settings.noise_z`
    kinds: dict[str, str] = field(default_factory=dict)          # metric key -> measured | derived | given
    references: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (reference key, lower|higher)
    file: str = ""
    line: int | None = None     # where the claim starts in its file
    invalid: str = ""           # why the claim cannot be evaluated (malformed), empty when valid

    @property
    def dataset(self) -> str | None:
        return self.source.split(":", 1)[1] if self.source else None

    def metric_keys(self) -> list[str]:
        return [k for c in self.checks for k in check_keys(c)]

    @property
    def claim_class(self) -> str:
        """measured, analytic or setup: from the most informative kind its checks read (`setup: true` forces setup;
        a claim with nothing to check, or whose kinds are unknown, is measured)."""
        if self.setup:
            return "setup"
        kinds = {self.kinds.get(k) for k in self.metric_keys()} - {None}
        for kind in KINDS:
            if kind in kinds:
                return CLASS_OF_KIND[kind]
        return "measured"

    def looser_thresholds(self) -> list[str]:
        """Checks whose threshold is looser than the paper's own value (`paper_threshold:`), in words."""
        return [text for c in self.checks if (text := looser_threshold(c))]


@dataclass
class ClaimsFile:
    path: Path
    name: str                                   # file stem: a paper id, or e.g. "datasets"
    metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    items: dict[str, dict] = field(default_factory=dict)
    privacy: dict[str, dict] = field(default_factory=dict)
    variants: dict[str, dict] = field(default_factory=dict)     # name -> {choice, label, item?, note?}
    evidence: dict[str, list[EvidenceRule]] = field(default_factory=dict)   # item | "*" | dataset:<name> -> rules
    noise_z: float = DEFAULT_NOISE_Z
    problems: list[str] = field(default_factory=list)   # errors: the affected claims cannot be evaluated
    warnings: list[str] = field(default_factory=list)   # documentation gaps (e.g. an undocumented metric key)

    def rule_for(self, item: str, key: str) -> tuple[EvidenceRule, dict[str, str]] | None:
        """The evidence rule of `key` in `item` (its own rules first, then "*"), with the `{name}` parts it matched.
        `<key>@<variant>` and `<key>.se` take their base key's rule."""
        base = key.split("@", 1)[0]
        for candidate in (base, base[:-3]) if base.endswith(".se") else (base,):
            for scope in (item, "*"):
                for rule in self.evidence.get(scope, ()):
                    found = rule.match(candidate)
                    if found is not None:
                        return rule, found
        return None

    def kind_of(self, item: str, key: str) -> str | None:
        hit = self.rule_for(item, key)
        return hit[0].kind if hit else None

    def reference_of(self, item: str, key: str) -> tuple[str, str] | None:
        """(reference key, better) of a measured key with a trivial reference, else None."""
        hit = self.rule_for(item, key)
        if not hit or not hit[0].reference:
            return None
        rule, parts = hit
        return rule.reference.format_map(parts), rule.better


@dataclass(frozen=True)
class EvidenceRule:
    """One `evidence:` entry: a key pattern (`*` any characters, `{name}` one dot-free segment), its kind, and for a
    measured error, accuracy or loss its trivial reference (`{name}` filled in as matched)."""
    keys: str
    kind: str
    reference: str = ""
    better: str = ""
    line: int | None = None

    @functools.cached_property
    def regex(self) -> re.Pattern:
        out, names = [], []
        for part in re.split(r"(\*|\{[A-Za-z_][A-Za-z0-9_]*\})", self.keys):
            if part == "*":
                out.append(".*")
            elif part.startswith("{") and part.endswith("}") and len(part) > 2:
                name = part[1:-1]
                out.append(f"(?P={name})" if name in names else f"(?P<{name}>[^.@]+)")
                names.append(name)
            else:
                out.append(re.escape(part))
        return re.compile("".join(out))

    def match(self, key: str) -> dict[str, str] | None:
        m = self.regex.fullmatch(key)
        return None if m is None else m.groupdict()


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


# ------------------------------------------------------------------------------------------------------ loading

def schema_path(claims_dir: str | Path | None = None) -> Path:
    """The claims schema: `<claims_dir>/claims.schema.yaml` when there is one, else the source checkout's."""
    if claims_dir is not None and (Path(claims_dir) / SCHEMA_NAME).is_file():
        return Path(claims_dir) / SCHEMA_NAME
    return SOURCE_SCHEMA


@functools.lru_cache(maxsize=4)
def _validator(path: Path):
    schema = safeload.load_yaml(path, expect=dict)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def claims_paths(claims_dir: str | Path) -> list[Path]:
    """The claims files of a folder: every `*.yaml` but the schema, sorted."""
    return sorted(p for p in Path(claims_dir).glob("*.yaml") if p.name != SCHEMA_NAME)


class _Lines:
    """Line numbers of the nodes of a YAML document, by path (keys and list positions), and its duplicate keys."""

    def __init__(self, root):
        self.lines: dict[tuple, int] = {}
        self.duplicates: list[tuple[tuple, str, int]] = []
        if root is not None:
            self._walk(root, ())

    def _walk(self, node, path: tuple) -> None:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                if name in seen:
                    self.duplicates.append((path, str(name), key.start_mark.line + 1))
                seen.add(name)
                self._walk(value, path + (name,))
                self.lines[path + (name,)] = key.start_mark.line + 1   # a key's line, not its value's
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                self._walk(value, path + (i,))

    def line(self, path) -> int | None:
        path = tuple(path)
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)


def _at(fname: str, lines: _Lines | None, path) -> str:
    line = lines.line(path) if lines else None
    return f"{fname}:{line}" if line else fname


def _path_text(data, path) -> str:
    """claims[3] (id 'x.y.z').checks[0].right, from a schema error's path."""
    out, node = "", data
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            if out.startswith("claims[") and out.count("[") == 1 and isinstance(node, list) \
                    and isinstance(node[part], dict) and isinstance(node[part].get("id"), str):
                out += f" (id {node[part]['id']!r})"
        else:
            out += f".{part}" if out else str(part)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            node = None
    return out or "top level"


def schema_problems(data, fname: str, lines: _Lines | None = None, schema: Path | None = None) -> list[str]:
    """Every violation of the claims schema, as '<file>:<line>: <where>: <message>'."""
    errors = sorted(_validator(schema or SOURCE_SCHEMA).iter_errors(data),
                    key=lambda e: (lines.line(e.absolute_path) or 0) if lines else 0)
    # A check whose kind-specific part fails also reports its fields as unevaluated; keep only the real error.
    failing = [tuple(e.absolute_path) for e in errors if e.validator != "unevaluatedProperties"]
    root = _validator(schema or SOURCE_SCHEMA).schema
    out = []
    for err in errors:
        path = tuple(err.absolute_path)
        if err.validator == "unevaluatedProperties" and any(f[:len(path)] == path for f in failing):
            unknown = _unknown_check_fields(root, err.instance)
            if not unknown:
                continue
            msg = f"Unknown fields are not allowed ({', '.join(map(repr, unknown))} was unexpected)"
            out.append(f"{_at(fname, lines, path)}: {_path_text(data, path)}: {msg}")
            continue
        msg = err.message
        rule = _rule(root, err.absolute_schema_path)
        if err.validator == "oneOf" and not rule and err.context:
            # the alternative of the instance's own type that came closest, e.g. a finding's bad cause
            fits = [e for e in err.context if not (e.validator == "type" and not e.relative_path)] or err.context
            best = max(fits, key=lambda e: len(e.relative_path))
            path = path + tuple(best.relative_path)
            msg = best.message
        elif err.validator in ("anyOf", "oneOf", "not") and (err.schema.get("description") or rule):
            msg = rule or err.schema["description"]      # the rule in words, not the failing sub-schemas
        elif err.validator in ("pattern", "enum", "type") and isinstance(err.schema, dict) \
                and err.schema.get("description"):
            msg += f" ({err.schema['description'].rstrip('.')})"
        elif err.validator == "dependentRequired" and "'from'" in msg:
            msg += " (a numeric threshold says where it comes from: the paper's number it encodes or the rule)"
        elif rule:
            msg += f" ({rule.rstrip('.')})"
        msg = msg.replace("Unevaluated properties are", "Unknown fields are").replace(
            "Additional properties are", "Unknown fields are")
        out.append(f"{_at(fname, lines, path)}: {_path_text(data, path)}: {msg}")
    return out


def _unknown_check_fields(schema: dict, check) -> list[str]:
    """The fields of a check that its kind does not allow (from the schema's check and check_<kind> definitions)."""
    if not isinstance(check, dict):
        return []
    defs = schema["$defs"]
    allowed = set(defs["check"]["properties"])
    for branch in defs["check"]["allOf"]:
        kind = branch["if"]["properties"].get("kind")
        if kind is None:        # a rule spanning fields (e.g. a number as right needs from), not a kind's fields
            continue
        if check.get("kind") == kind.get("const") or check.get("kind") in kind.get("enum", ()):
            allowed |= set(defs[branch["then"]["$ref"].rsplit("/", 1)[1]].get("properties", {}))
    return sorted(set(check) - allowed)


def _rule(schema: dict, schema_path) -> str:
    """The description of the innermost `allOf` entry a schema error comes from (a rule spanning fields, in words)."""
    node, rule, parts = schema, "", list(schema_path)
    for i, part in enumerate(parts):
        while isinstance(node, dict) and part not in node and str(node.get("$ref", "")).startswith("#/"):
            ref, node = node["$ref"], schema      # the path steps through a local $ref: #/$defs/<name>
            for name in ref[2:].split("/"):
                node = node[name]
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return rule
        if i >= 1 and parts[i - 1] == "allOf" and isinstance(node, dict) and node.get("description"):
            rule = node["description"]
    return rule


def _str_list(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def parse_claims(data, path: Path | str = "<claims>", lines: _Lines | None = None,
                 schema: Path | None = None) -> ClaimsFile:
    """Parse an already-loaded claims mapping; problems are collected, never raised.

    The schema decides the structure; a file that violates it has only problems (no claims). The rules that span
    fields are checked here (id vs item and file, unique ids, min <= max, declared variants)."""
    path = Path(path)
    cf = ClaimsFile(path=path, name=path.stem)
    fname = path.name
    if data is None:
        data = {}
    cf.problems = schema_problems(data, fname, lines, schema)
    if lines:
        cf.problems += [f"{fname}:{ln}: {_path_text(data, p) if p else 'top level'}: key {k!r} is given more "
                        "than once (YAML keeps only the last)" for p, k, ln in lines.duplicates]
    if cf.problems:
        return cf
    cf.metrics = {str(item): {str(k): ("" if v is None else str(v)) for k, v in (keys or {}).items()}
                  for item, keys in (data.get("metrics") or {}).items()}
    for item, spec in (data.get("items") or {}).items():
        cf.items[str(item)] = {"title": str(spec.get("title") or ""), "caption": str(spec.get("caption") or ""),
                               "figure": _str_list(spec.get("figure")), "choices": _str_list(spec.get("choices")),
                               "inconsistencies": _str_list(spec.get("inconsistencies"))}
    cf.privacy = {str(m): {k: str(v) for k, v in spec.items() if v is not None}
                  for m, spec in (data.get("privacy") or {}).items()}
    cf.noise_z = float((data.get("settings") or {}).get("noise_z", DEFAULT_NOISE_Z))
    cf.variants = {str(n): {k: str(v) for k, v in spec.items()} for n, spec in (data.get("variants") or {}).items()}
    cf.evidence = {str(scope): [EvidenceRule(str(r["keys"]), r["kind"], str(r.get("reference") or ""),
                                             str(r.get("better") or ""),
                                             lines.line(("evidence", scope, i)) if lines else None)
                                for i, r in enumerate(rules)]
                   for scope, rules in (data.get("evidence") or {}).items()}
    cf.problems += _evidence_problems(cf, data, lines)
    for n, raw in enumerate(data.get("claims") or []):
        claim, probs, warns = _parse_claim(raw, cf, lines.line(("claims", n)) if lines else None)
        cf.problems += probs
        cf.warnings += warns
        cf.claims.append(claim)
    ids = [c.id for c in cf.claims]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        cf.problems.append(f"{fname}: claim id {dup!r} is used more than once")
    return cf


def _evidence_problems(cf: ClaimsFile, data: dict, lines: _Lines | None) -> list[str]:
    """Every documented metric key has a kind, and every trivial reference a documented measured key names exists."""
    fname, out = cf.path.name, []
    for scope in cf.evidence:
        if scope not in ("*",) and not scope.startswith("dataset:") and scope not in cf.metrics:
            out.append(f"{_at(fname, lines, ('evidence', scope))}: evidence.{scope}: no item {scope!r} under metrics")
    for item, docs in cf.metrics.items():
        for key in docs:
            where = f"{_at(fname, lines, ('metrics', item, key))}: metrics.{item}.{key}"
            hit = cf.rule_for(item, key)
            if hit is None:
                out.append(f"{where}: the key has no evidence kind (no pattern of evidence.{item} or evidence['*'] "
                           "matches it; kinds: measured, derived, given)")
                continue
            ref = cf.reference_of(item, key)
            if ref and ref[0] not in docs:
                out.append(f"{where}: its trivial reference {ref[0]!r} (evidence pattern {hit[0].keys!r}) is not a "
                           f"documented key of metrics.{item}")
            elif ref and cf.kind_of(item, ref[0]) != "measured":
                out.append(f"{where}: its trivial reference {ref[0]!r} must be a measured key "
                           f"(it is {cf.kind_of(item, ref[0])})")
    return out


def _finding_problems(where: str, findings: list[dict], claim_keys: set[str], scope: str, cf: ClaimsFile,
                      claims_root: Path) -> list[str]:
    """A finding's evidence names keys of the claim's item (read by the claim, documented, or, for a dataset fact,
    with an evidence kind), declared variants, or existing test files."""
    documented = cf.metrics.get(scope)
    out = []
    for f in findings:
        for ev in f.get("evidence") or []:
            if ev.startswith("variant:"):
                if ev[len("variant:"):] not in cf.variants:
                    out.append(f"{where}: finding evidence {ev!r}: no such variant is declared")
            elif ev.startswith("test:"):
                path = ev[len("test:"):].split("::", 1)[0]
                # checked where the tests are: a copy of the workflow (the smoke project) holds no tests/
                if (claims_root / "tests").is_dir() and not (claims_root / path).is_file():
                    out.append(f"{where}: finding evidence {ev!r}: no file {path} in the repository")
            elif ev not in claim_keys and not (documented is not None and ev.split("@", 1)[0] in documented) \
                    and not (documented is None and cf.kind_of(scope, ev)):
                out.append(f"{where}: finding evidence {ev!r} is neither a metric key of the claim's item nor "
                           "variant:<name> nor test:<path>::<name>")
    return out


def looser_threshold(check: dict) -> str:
    """In words, how a check's threshold is looser than the paper's own value of it (`paper_threshold`), else ""."""
    p = check.get("paper_threshold")
    if p is None:
        return ""
    kind = check.get("kind")
    lo_p, hi_p = (p[0], p[1]) if isinstance(p, list) else (p, p)
    found = []
    if kind in ("range", "ratio_range"):
        if _is_number(check.get("min")) and check["min"] < lo_p:
            found.append(f"min {fmt(check['min'])} is below the paper's {fmt(lo_p)}")
        if _is_number(check.get("max")) and check["max"] > hi_p:
            found.append(f"max {fmt(check['max'])} is above the paper's {fmt(hi_p)}")
    elif kind in ("less", "greater"):
        margin = float(check.get("margin", 0.0))
        if _is_number(check.get("right")):
            bound = check["right"] - margin if kind == "less" else check["right"] + margin
            if (kind == "less" and bound > hi_p) or (kind == "greater" and bound < lo_p):
                found.append(f"the bound {fmt(bound)} is looser than the paper's {fmt(p if not isinstance(p, list) else (lo_p if kind == 'greater' else hi_p))}")
        elif margin < lo_p:
            found.append(f"the margin {fmt(margin)} is smaller than the paper's {fmt(lo_p)}")
    elif kind == "approx":
        tol = _tolerance(check)
        if tol > hi_p:
            found.append(f"the tolerance {fmt(tol)} is wider than the paper's {fmt(hi_p)}")
    elif kind == "monotone":
        if float(check.get("tol", 0.0)) > hi_p:
            found.append(f"the step tolerance {fmt(check['tol'])} is wider than the paper's {fmt(hi_p)}")
    return "; ".join(found)


def _parse_claim(raw: dict, cf: ClaimsFile, line: int | None) -> tuple[Claim, list[str], list[str]]:
    """A schema-valid claim (starting at `line` of its file) and the problems of the rules that span its fields."""
    cid, item, source = raw["id"], raw.get("item"), raw.get("source")
    where = f"{cf.path.name}{f':{line}' if line else ''}: claim {cid!r}"
    errors, warnings = [], []
    paper, middle, _ = cid.split(".", 2)
    if source is None:
        if middle != item:
            errors.append(f"{where}: the id's middle part {middle!r} must be the item {item!r}")
        if cf.name not in ("datasets",) and paper != cf.name:
            errors.append(f"{where}: the id must start with the paper of its file, {cf.name!r}")
    for k, check in enumerate(raw.get("checks") or []):
        if _is_number(check.get("min")) and _is_number(check.get("max")) and check["min"] > check["max"]:
            errors.append(f"{where} checks[{k}]: min {check['min']} is greater than max {check['max']}")
    variants = _str_list(raw.get("variants"))
    for name in variants:
        spec = cf.variants.get(name)
        if spec is None:
            errors.append(f"{where}: variant {name!r} is not declared under the file's top-level variants: "
                          f"(declared: {', '.join(sorted(cf.variants)) or 'none'})")
        elif spec.get("item") and spec["item"] != item:
            errors.append(f"{where}: variant {name!r} belongs to item {spec['item']!r}, not {item!r}")
    for k, check in enumerate(raw.get("checks") or []):
        pt = check.get("paper_threshold")
        if _is_number(pt) and check.get("kind") in ("range", "ratio_range") \
                and check.get("min") is not None and check.get("max") is not None:
            errors.append(f"{where} checks[{k}]: paper_threshold must be [lo, hi] for a check with min and max")
    finding = raw.get("finding")
    findings = [{"when": _str_list(f["when"]), "cause": f["cause"], "text": f["text"],
                 "evidence": _str_list(f.get("evidence"))}
                for f in ([finding] if isinstance(finding, dict) else finding or [])]
    scope = item if source is None else source
    check_keys_ = list(dict.fromkeys(k for c in raw.get("checks") or [] for k in check_keys(c)))
    kinds, references = {}, {}
    for key in check_keys_:
        kind = cf.kind_of(scope, key)
        if kind is None:
            errors.append(f"{where}: metric {key!r} has no evidence kind (no pattern of evidence.{scope} or "
                          "evidence['*'] matches it)")
            continue
        kinds[key] = kind
        ref = cf.reference_of(scope, key)
        if ref:
            references[key] = ref
    claims_root = cf.path.resolve().parents[2] if len(cf.path.resolve().parents) > 2 else cf.path.parent
    errors += _finding_problems(where, findings, set(check_keys_), scope, cf, claims_root)
    claim = Claim(
        id=cid, paper=paper, item=item if source is None else None, source=source, quote=raw["quote"],
        where=str(raw.get("where") or ""), paper_value=raw.get("paper_value"), checks=list(raw.get("checks") or []),
        depends_on=_str_list(raw.get("depends_on")), note=str(raw.get("note") or ""),
        not_checkable=str(raw.get("not_checkable") or ""), datasets=_str_list(raw.get("datasets")),
        setup=raw.get("setup") is True, variants=variants,
        variant_specs={v: cf.variants[v] for v in variants if v in cf.variants}, findings=findings,
        noise_z=cf.noise_z, kinds=kinds, references=references, file=cf.path.name, line=line,
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


def load_claims_file(path: str | Path, schema: Path | None = None) -> ClaimsFile:
    """Load one claims file, collecting problems with their line (a YAML syntax error is a problem too)."""
    path = Path(path)
    try:   # within safeload's limits (size, depth, no aliases, finite numbers); the node tree gives the lines
        data, node = safeload.compose_yaml(safeload.read_text(path), path.name)
    except safeload.LoadError as exc:
        cf = ClaimsFile(path=path, name=path.stem)
        cf.problems.append(str(exc))
        return cf
    return parse_claims(data, path, _Lines(node), schema or schema_path(path.parent))


def validate_claims_file(path: str | Path, *, warnings: bool = True) -> ClaimsFile:
    """Strict load: raise ClaimsError listing every problem of the file (and its warnings, unless warnings=False)."""
    cf = load_claims_file(path)
    problems = cf.problems + (cf.warnings if warnings else [])
    if problems:
        raise ClaimsError(f"{len(problems)} problem(s) in {Path(path).name}:\n  " + "\n  ".join(problems))
    return cf


def load_all(claims_dir: str | Path) -> list[ClaimsFile]:
    """Every claims file of the folder (sorted); ids must be unique across files."""
    files = [load_claims_file(p) for p in claims_paths(claims_dir)]
    seen: dict[str, str] = {}
    for cf in files:
        for c in cf.claims:
            if c.id in seen:
                cf.problems.append(f"{cf.path.name}: claim id {c.id!r} is also used in {seen[c.id]}")
            seen.setdefault(c.id, cf.path.name)
    return files


def load_all_strict(claims_dir: str | Path) -> list[ClaimsFile]:
    """`load_all`, raising ClaimsError with every problem (file and line) of every file: a report must never be
    built on a claims file that could not be read as written."""
    files = load_all(claims_dir)
    problems = [p for cf in files for p in cf.problems]
    if problems:
        raise ClaimsError(f"{len(problems)} problem(s) in the claims files of {Path(claims_dir).name}/ "
                          "(fix them; `python -m repro_dpadmm.report.validate` lists them):\n  "
                          + "\n  ".join(problems))
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


PASS, FAIL, INCONCLUSIVE, MISSING = "pass", "fail", "inconclusive", "not evaluated"
DEGENERATE = "degenerate"     # a comparison with a side no better than its trivial reference: it decides nothing


@dataclass
class CheckResult:
    kind: str
    check: str            # what is checked, short (keys and operator)
    expected: str         # what would pass, short
    measured: str         # the measured numbers, short ("—" when not evaluated)
    passed: bool | None   # True: pass; False: fail; None: inconclusive or not evaluated (see outcome)
    reason: str = ""
    label: str = ""
    observed: str = ""    # the measured numbers with their keys, for claims.json
    outcome: str = ""     # pass | fail | inconclusive | degenerate | not evaluated
    se: float | None = None       # standard error the decision used (None: exact)
    z: float | None = None        # the noise factor it used (None: exact)
    paired: bool = False          # the SE is that of paired per-repeat differences

    def __post_init__(self):
        if not self.outcome:
            self.outcome = MISSING if self.passed is None else PASS if self.passed else FAIL

    source: str = ""      # the check's `from:` (where its threshold comes from)
    looser: str = ""      # how its threshold is looser than the paper's own value, else ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "check": self.check, "expected": self.expected, "measured": self.measured,
                "passed": self.passed, "outcome": self.outcome, "se": self.se, "z": self.z, "paired": self.paired,
                "reason": self.reason, "label": self.label, "from": self.source, "looser": self.looser}


class _Missing(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _name(key) -> str:
    return fmt(key) if _is_number(key) else str(key)


def _bounds(check) -> str:
    lo, hi = check.get("min"), check.get("max")
    if lo is not None and hi is not None:
        return f"in [{fmt(lo)}, {fmt(hi)}]"
    return f"≥ {fmt(lo)}" if lo is not None else f"≤ {fmt(hi)}"


def _tolerance(check) -> float:
    exp = float(check["expected"])
    return max(float(check.get("abs_tol", 0.0)), float(check.get("rel_tol", 0.0)) * abs(exp))


@dataclass
class _Operand:
    """One number a check reads, with what is known of its noise."""
    key: str | None               # the key actually read (`<key>@<variant>` when the variant overrides it)
    value: float
    reps: np.ndarray | None = None    # per-repeat values (at least two, all finite)
    se: float | None = None           # its standard error (None: exact)


class _Metrics:
    """Flat metrics read under a variant: `<key>@<variant>` where it exists, else `<key>`; plus their noise."""

    def __init__(self, metrics: dict, variant: str | None = None):
        self.metrics = metrics
        self.variant = variant
        reps = metrics.get(REPEATS_KEY)
        self.repeats = reps if isinstance(reps, dict) else {}

    def key(self, key: str) -> str:
        if self.variant and f"{key}@{self.variant}" in self.metrics:
            return f"{key}@{self.variant}"
        return key

    def raw(self, key: str):
        k = self.key(key)
        if k not in self.metrics:
            raise _Missing(f"metric {k!r} is missing")
        return self.metrics[k]

    def number(self, key) -> float:
        """The numeric value of `key` (a number given in place of a key is itself)."""
        if _is_number(key):
            return float(key)
        v = self.raw(key)
        k = self.key(key)
        if v is None:
            raise _Missing(f"metric {k!r} is null (not computed, NaN or infinite)")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Missing(f"metric {k!r} is not a number ({v!r})")
        if math.isnan(v) or math.isinf(v):
            raise _Missing(f"metric {k!r} is {v}")
        return float(v)

    def operand(self, key) -> _Operand:
        value = self.number(key)
        if _is_number(key):
            return _Operand(None, value)
        k = self.key(key)
        reps = self.repeats.get(k)
        if isinstance(reps, list) and len(reps) >= 2 and all(_is_number(x) and math.isfinite(x) for x in reps):
            arr = np.asarray(reps, dtype=float)
            return _Operand(k, value, arr, float(arr.std(ddof=1) / math.sqrt(arr.size)))
        for se_key in (f"{k}.se",) + ((f"{key}.se@{self.variant}",) if k != key else ()):
            se = self.metrics.get(se_key)
            if _is_number(se) and math.isfinite(se) and se >= 0:
                return _Operand(k, value, None, float(se))
        return _Operand(k, value)


def _pair(a: _Operand, b: _Operand, check: dict) -> bool:
    return (check.get("paired", True) is not False and a.reps is not None and b.reps is not None
            and a.reps.size == b.reps.size)


def _diff_se(a: _Operand, b: _Operand, check: dict) -> tuple[float | None, bool, int | None]:
    """(SE of a - b, paired?, n): paired per-repeat differences when both have repeats of one length; else the
    independent sqrt(se_a^2 + se_b^2) over the operands that have an SE; None when neither is noisy."""
    if _pair(a, b, check):
        d = a.reps - b.reps
        return float(d.std(ddof=1) / math.sqrt(d.size)), True, int(d.size)
    ses = [x.se for x in (a, b) if x.se is not None]
    if not ses:
        return None, False, None
    ns = [x.reps.size for x in (a, b) if x.reps is not None]
    return float(math.sqrt(sum(s * s for s in ses))), False, (min(ns) if ns else None)


def _decide(d: float, se: float | None, z: float, strict: bool = True) -> str:
    """A signed margin d (> 0 is the claim's side) against z standard errors; exact when there is no noise."""
    if not se:
        return PASS if (d > 0 if strict else d >= 0) else FAIL
    if d > z * se:
        return PASS
    if d < -z * se:
        return FAIL
    return INCONCLUSIVE


def _decide_interval(v: float, se: float | None, z: float, lo: float | None, hi: float | None) -> str:
    """v ± z·SE against [lo, hi]: pass if inside, fail if entirely outside, else inconclusive.

    Exact (no SE): lo <= v <= hi."""
    half = z * se if se else 0.0
    a, b = v - half, v + half
    if (lo is None or a >= lo) and (hi is None or b <= hi):
        return PASS
    if (lo is not None and b < lo) or (hi is not None and a > hi):
        return FAIL
    return INCONCLUSIVE


def _noise_text(se: float | None, paired: bool, n: int | None) -> str:
    if not se:
        return ""
    return f" ± {fmt(se)} SE" + (f", paired over {n} repeats" if paired else f", n = {n}" if n else "")


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


@dataclass
class _Measured:
    outcome: str
    measured: str
    observed: str
    se: float | None = None
    paired: bool = False
    reason: str = ""


def _within(what: str, d: float, se: float, z: float) -> str:
    return f"{what} {fmt(d)} is within {fmt(z)} SE ({fmt(abs(d) / se)} SE) of the noise"


def _beats_reference(key: str, m: _Metrics, check: dict, z: float, references: dict) -> tuple[bool, str]:
    """Whether the metric `key` is better than its trivial reference beyond z standard errors (paired when both have
    per-repeat values of one length), and, when it is not, why in words. A key without a reference passes."""
    ref = references.get(key)
    if ref is None:
        return True, ""
    ref_key, better = ref
    side, base = m.operand(key), m.operand(ref_key)
    d = base.value - side.value if better == "lower" else side.value - base.value
    se, paired, n = _diff_se(side, base, check)
    if _decide(d, se, z) == PASS:
        return True, ""
    return False, (f"{side.key} = {fmt(side.value)} is no better than {base.key} = {fmt(base.value)}"
                   f"{_noise_text(se, paired, n)} ({better} is better)")


def _degenerate(check: dict, m: _Metrics, z: float, references: dict) -> str:
    """Why a comparison is degenerate (a side no better than its trivial reference beyond the noise), else "".

    less / greater / ratio_range: either side with a reference that is not the check's other side; monotone: fewer
    than two of its values (those with a reference judged, the others counted as informative) beat their reference."""
    kind = check["kind"]
    if not references or kind not in ("less", "greater", "ratio_range", "monotone"):
        return ""
    if kind == "monotone":
        verdicts = [_beats_reference(k, m, check, z, references) for k in check["metrics"]]
        if not any(k in references for k in check["metrics"]) or sum(ok for ok, _ in verdicts) >= 2:
            return ""
        return "degenerate: fewer than two values beat their reference: " + "; ".join(w for ok, w in verdicts if w)
    left, right = check["left"], check["right"]
    whys = []
    for side, other in ((left, right), (right, left)):
        if not isinstance(side, str) or side not in references or references[side][0] == other:
            continue
        ok, why = _beats_reference(side, m, check, z, references)
        if not ok:
            whys.append(why)
    return ("degenerate: " + "; ".join(whys)) if whys else ""


def _measure(check: dict, m: _Metrics, z: float, references: dict | None = None) -> _Measured:
    """Evaluate one check; raises _Missing when a value it needs is unusable. With `references` ({key: (reference
    key, better)}), a comparison whose side is no better than its trivial reference is degenerate."""
    r = _measure_plain(check, m, z)
    why = _degenerate(check, m, z, references or {})
    if why:
        return _Measured(DEGENERATE, r.measured, r.observed, r.se, r.paired, why)
    return r


def _measure_plain(check: dict, m: _Metrics, z: float) -> _Measured:
    kind = check["kind"]
    if kind in ("approx", "range"):
        key = check["metric"]
        op = m.operand(key)
        noise = _noise_text(op.se, False, op.reps.size if op.reps is not None else None)
        if kind == "approx":
            exp, tol = float(check["expected"]), _tolerance(check)
            lo, hi = exp - tol, exp + tol
            diff = op.value - exp
            rel = f", {diff / exp:+.1%}" if exp else ""
            short = f"{fmt(op.value)}{noise} (off by {fmt(diff)}{rel})"
        else:
            lo, hi = check.get("min"), check.get("max")
            short = f"{fmt(op.value)}{noise}"
        out = _decide_interval(op.value, op.se, z, lo, hi)
        reason = (f"{op.key} = {fmt(op.value)} ± {fmt(z)}·{fmt(op.se)} straddles the bound"
                  if out == INCONCLUSIVE else "")
        return _Measured(out, short, f"{op.key} = {fmt(op.value)}", op.se, False, reason)
    if kind == "equal":
        key, exp = check["metric"], check["expected"]
        v = m.raw(key)
        same = float(v) == float(exp) if _is_number(v) and _is_number(exp) else (v == exp and type(v) is type(exp))
        return _Measured(PASS if same else FAIL, fmt(v), f"{m.key(key)} = {fmt(v)}")
    if kind in ("true", "false"):
        key = check["metric"]
        v = m.raw(key)
        if not isinstance(v, bool):
            raise _Missing(f"metric {m.key(key)!r} is not a boolean ({v!r})")
        return _Measured(PASS if v == (kind == "true") else FAIL, fmt(v), f"{m.key(key)} = {fmt(v)}")
    if kind in ("less", "greater"):
        left, right, margin = check["left"], check["right"], float(check.get("margin", 0.0))
        a, b = m.operand(left), m.operand(right)
        # d > 0 is the claim's side: less: (right - margin) - left; greater: left - (right + margin)
        d = (b.value - margin) - a.value if kind == "less" else a.value - (b.value + margin)
        se, paired, n = _diff_se(a, b, check)
        out = _decide(d, se, z)
        observed = ", ".join(f"{o.key} = {fmt(o.value)}" for o in (a, b) if o.key)
        fa, fb = (fmt(a.value), fmt(b.value)) if fmt(a.value) != fmt(b.value) else (f"{a.value:.10g}",
                                                                                  f"{b.value:.10g}")
        short = f"{fa} vs {fb}" + (f" (difference {fmt(a.value - b.value)}{_noise_text(se, paired, n)})" if se else "")
        reason = _within("the difference", a.value - b.value, se, z) if out == INCONCLUSIVE else ""
        return _Measured(out, short, observed, se, paired, reason)
    if kind == "monotone":
        keys = check["metrics"]
        strict, tol = bool(check.get("strict", False)), float(check.get("tol", 0.0))
        ops = [m.operand(k) for k in keys]
        sign = 1.0 if check["direction"] == "increasing" else -1.0
        outs, steps, ses, paired_any = [], [], [], False
        for a, b in zip(ops, ops[1:], strict=False):
            d = sign * (b.value - a.value) + tol        # each step as a greater/less with margin -tol
            se, paired, _ = _diff_se(b, a, check)
            outs.append(_decide(d, se, z, strict=strict))
            steps.append(f"{fmt(b.value - a.value)}" + (f" ± {fmt(se)}" if se else ""))
            ses.append(se)
            paired_any |= paired
        out = FAIL if FAIL in outs else INCONCLUSIVE if INCONCLUSIVE in outs else PASS
        noisy = any(ses)
        short = ", ".join(fmt(o.value) for o in ops) + (f" (steps {', '.join(steps)} SE)" if noisy else "")
        reason = ""
        if out == INCONCLUSIVE:
            bad = [f"{keys[i]} → {keys[i + 1]}" for i, o in enumerate(outs) if o == INCONCLUSIVE]
            reason = f"step(s) {'; '.join(bad)} within {fmt(z)} SE of the noise"
        big = max((s for s in ses if s), default=None)
        return _Measured(out, short, ", ".join(f"{o.key} = {fmt(o.value)}" for o in ops), big, paired_any, reason)
    if kind == "ratio_range":
        left, right = check["left"], check["right"]
        a, b = m.operand(left), m.operand(right)
        if b.value == 0:
            raise _Missing(f"the ratio {_name(left)} / {_name(right)} is undefined: the denominator is 0")
        r = a.value / b.value
        grad = np.array([1.0 / b.value, -a.value / b.value ** 2])     # delta method for a / b
        paired = _pair(a, b, check)
        if paired:
            cov = np.cov(np.vstack([a.reps, b.reps]), ddof=1) / a.reps.size
            se = float(math.sqrt(max(grad @ cov @ grad, 0.0)))
        elif a.se is not None or b.se is not None:
            se = float(math.hypot(grad[0] * (a.se or 0.0), grad[1] * (b.se or 0.0)))
        else:
            se = None
        out = _decide_interval(r, se, z, check.get("min"), check.get("max"))
        noise = _noise_text(se, paired, a.reps.size if paired else None)
        reason = f"the ratio {fmt(r)} ± {fmt(z)}·{fmt(se)} straddles the bound" if out == INCONCLUSIVE else ""
        return _Measured(out, f"{fmt(r)}{noise} (= {fmt(a.value)} / {fmt(b.value)})",
                         f"{_name(a.key or left)} / {_name(b.key or right)} = {fmt(r)}", se, paired, reason)
    raise ValueError(f"unknown check kind {kind!r}")


def evaluate_check(check: dict, metrics: dict, *, z: float | None = None, variant: str | None = None,
                   references: dict[str, tuple[str, str]] | None = None) -> CheckResult:
    """Evaluate one well-formed check on flat metrics (with their optional `repeats` and `.se` keys).

    `z`: noise factor (the check's own `z:` wins; default DEFAULT_NOISE_Z); `variant`: read `<key>@<variant>` where
    it exists (references too); `references`: {key: (trivial reference key, "lower" | "higher")}, which makes a
    comparison with a side no better than its reference "degenerate". A missing, null or non-numeric value (a
    reference included) gives outcome "not evaluated" (passed None) with the reason."""
    what, expected = describe_check(check)
    label = str(check.get("label") or "")
    zz = float(check.get("z", z if z is not None else DEFAULT_NOISE_Z))
    extra = {"label": label, "source": str(check.get("from") or ""), "looser": looser_threshold(check)}
    try:
        r = _measure(check, _Metrics(metrics, variant), zz, references)
    except _Missing as exc:
        return CheckResult(check["kind"], what, expected, "—", None, reason=exc.reason, outcome=MISSING, **extra)
    passed = True if r.outcome == PASS else False if r.outcome == FAIL else None
    return CheckResult(check["kind"], what, expected, r.measured, passed, reason=r.reason, observed=r.observed,
                       outcome=r.outcome, se=r.se, z=zz if r.se else None, paired=r.paired, **extra)


@dataclass
class VariantVerdict:
    name: str
    choice: str
    label: str
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)

    def record(self) -> dict:
        return {"name": self.name, "choice": self.choice, "label": self.label, "verdict": self.verdict,
                "reason": self.reason, "checks": [r.as_dict() for r in self.checks]}


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reason: str
    checks: list[CheckResult] = field(default_factory=list)
    variants: list[VariantVerdict] = field(default_factory=list)

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
        return "; ".join(c.observed for c in self.checks if c.outcome != MISSING) or "—"

    @property
    def setup(self) -> bool:
        """A setup check (given keys only, or `setup: true`): our own construction, never counted as a claim."""
        return self.claim.claim_class == "setup"

    @property
    def claim_class(self) -> str:
        return self.claim.claim_class

    @property
    def looser(self) -> list[str]:
        return self.claim.looser_thresholds()

    @property
    def depends_on_choice(self) -> list[str]:
        """The choices under whose variants the verdict differs from the headline (variants that could not be
        judged, "not run" / "not checkable", show nothing about the choice and are left out)."""
        if self.verdict not in JUDGED:
            return []
        return list(dict.fromkeys(v.choice for v in self.variants
                                  if v.verdict in JUDGED and v.verdict != self.verdict))

    @property
    def finding(self) -> dict | None:
        """The first finding whose `when` matches the headline verdict."""
        return next((f for f in self.claim.findings if self.verdict in f["when"]), None)

    @property
    def unexplained(self) -> bool:
        """A failing verdict (partly, inconclusive, degenerate, not reproduced, fails, setup failed) with no matching
        finding."""
        return self.verdict in FAILING and self.finding is None

    @property
    def contradicted(self) -> str:
        """Why the evidence contradicts the matching finding's cause, else "": a paper cause on a failing verdict that
        a variant turns into a passing one (the cause is a choice), or a choice cause on a claim that fails under
        the default and under every variant that was judged (the choice does not decide it). A variant that only
        turns one failing verdict into another (partly into inconclusive, say) leaves a paper cause standing: no
        choice we tried makes the claim hold."""
        f = self.finding
        if f is None:
            return ""
        if f["cause"] in PAPER_CAUSES and self.depends_on_choice:
            changed = [f"{v.label}: {v.verdict}" for v in self.variants
                       if v.verdict in JUDGED and v.verdict not in FAILING and v.verdict != self.verdict]
            if changed:
                return (f"cause {f['cause']!r}, but the verdict changes under a variant ({'; '.join(changed)}): the "
                        "cause is a choice")
        judged = [v for v in self.variants if v.verdict in JUDGED]
        if f["cause"] == "choice" and judged and self.verdict in FAILING \
                and all(v.verdict in FAILING for v in judged):
            return (f"cause 'choice', but the claim fails under the default and under every variant "
                    f"({', '.join(v.label for v in judged)}): no choice we tried decides it")
        return ""

    @property
    def stale(self) -> list[dict]:
        """Findings whose `when` no longer matches the headline verdict (only once the numbers were judged: a claim
        that was not run says nothing about its findings)."""
        if self.verdict not in JUDGED:
            return []
        return [f for f in self.claim.findings if self.verdict not in f["when"]]

    def record(self) -> dict:
        c = self.claim
        return {"id": c.id, "paper": c.paper, "item": c.item if c.item else c.source, "quote": c.quote,
                "where": c.where, "paper_value": c.paper_value, "expected": self.expected,
                "measured": self.measured, "verdict": self.verdict, "reason": self.reason,
                "checks": [r.as_dict() for r in self.checks], "depends_on": c.depends_on, "note": c.note,
                "setup": self.setup, "variants": [v.record() for v in self.variants],
                "depends_on_choice": self.depends_on_choice, "finding": self.finding,
                "unexplained": self.unexplained, "contradicted": self.contradicted, "stale": self.stale,
                "class": self.claim_class, "looser": self.looser, "noise_z": c.noise_z,
                "source": c.source or f"results/{c.paper}/{c.item}/metrics.json", "file": c.file, "line": c.line}


def _judge(claim: Claim, metrics: dict, status: str, unavailable: dict, variant: str | None
           ) -> tuple[str, str, list[CheckResult]]:
    """(verdict, reason, check results) of a claim's checks on usable metrics, under `variant` if given."""
    results = [evaluate_check(c, metrics, z=claim.noise_z, variant=variant, references=claim.references)
               for c in claim.checks]
    undecided = [r for r in results if r.outcome == MISSING]
    if undecided:
        reason = "; ".join(dict.fromkeys(r.reason for r in undecided))
        if unavailable and any(r.reason.endswith("is missing") for r in undecided):
            return "not run", f"{reason}, and the item lacks dataset(s) " + ", ".join(sorted(unavailable)), results
        if status != "ok" and metrics.get("reason"):
            reason += f" (item status {status!r}: {metrics['reason']})"
        return "not checkable", reason, results
    failed = [r for r in results if r.outcome == FAIL]
    unsure = [r for r in results if r.outcome == INCONCLUSIVE]
    degenerate = [r for r in results if r.outcome == DEGENERATE]
    passed = [r for r in results if r.outcome == PASS]
    n = len(results)

    def listing(rs):
        return "; ".join(f"{r.check} (measured {r.measured})" for r in rs)

    def besides():
        return (f"; inside the noise: {listing(unsure)}" if unsure else "") + (
            f"; degenerate: {'; '.join(f'{r.check} ({r.reason})' for r in degenerate)}" if degenerate else "")

    if not failed and not unsure and not degenerate:
        if n == 1:
            return "reproduced", f"{results[0].check}: measured {results[0].measured}", results
        return "reproduced", f"all {n} checks pass", results
    if not failed and degenerate:
        return ("degenerate", f"{len(degenerate)} of {n} check(s) compare a side no better than its trivial "
                "reference: " + "; ".join(f"{r.check} ({r.reason.removeprefix('degenerate: ')})"
                                          for r in degenerate)
                + (f"; inside the noise: {listing(unsure)}" if unsure else ""), results)
    if not failed:
        return ("inconclusive", f"{len(unsure)} of {n} check(s) inside the noise: "
                + "; ".join(f"{r.check} ({r.reason})" for r in unsure), results)
    if passed:
        return "partly", f"{len(passed)} of {n} checks pass; fails: {listing(failed)}" + besides(), results
    head = "fails: " if n == 1 else f"{len(failed)} of {n} checks fail, none passes: "
    return "not reproduced", head + listing(failed) + besides(), results


def _class_verdict(claim_class: str, verdict: str) -> str:
    """A measured verdict as the claim's class names it: analytic holds / fails, setup ok / failed."""
    if claim_class == "measured" or verdict in ("not run", "not checkable"):
        return verdict
    ok = verdict == "reproduced"
    if claim_class == "analytic":
        return "holds" if ok else "fails"
    return "setup ok" if ok else "setup failed"


def _variant_has_metrics(claim: Claim, metrics: dict, variant: str) -> bool:
    return any(f"{k}@{variant}" in metrics for k in claim.metric_keys())


def evaluate_claim(claim: Claim, metrics: dict | None, *, missing_reason: str = "",
                   unavailable: dict[str, str] | None = None) -> Verdict:
    """The verdict of one claim on the metrics of its item (or the flattened dataset sidecar), with the verdict
    under each of its variants.

    metrics None: the item or dataset produced no numbers; `missing_reason` says why (verdict "not run").
    A metrics dict whose `status` is "not run" gives "not run" with its `reason`.
    `unavailable`: {dataset: reason} for the unavailable datasets the item reads. A claim listing such a dataset in
    its `datasets:` is "not run"; a missing metric in an item that lacks a dataset is "not run" too, saying so.
    """
    unavailable = unavailable or {}

    klass = claim.claim_class

    def done(verdict, reason, checks=None, variants=None):
        return Verdict(claim, _class_verdict(klass, verdict), reason, checks or [], variants or [])

    if claim.invalid:
        return done("not checkable", f"malformed claim: {claim.invalid}")
    if claim.not_checkable:
        return done("not checkable", claim.not_checkable)
    if metrics is None:
        return done("not run", missing_reason or "no results")
    status = metrics.get("status", "ok")
    if status == "not run":
        return done("not run", str(metrics.get("reason") or "the item was not run"))
    blocked = [d for d in claim.datasets if d in unavailable]
    if blocked:
        return done("not run",
                    "dataset unavailable: " + "; ".join(f"{d} ({_first_line(unavailable[d])})" for d in blocked))
    verdict, reason, results = _judge(claim, metrics, status, unavailable, None)
    variants = []
    for name in claim.variants:
        spec = claim.variant_specs.get(name, {})
        choice, label = spec.get("choice", name), spec.get("label", name)
        if not _variant_has_metrics(claim, metrics, name):
            keys = ", ".join(f"{k}@{name}" for k in dict.fromkeys(claim.metric_keys()))
            variants.append(VariantVerdict(name, choice, label, "not run",
                                           f"variant metrics missing (none of {keys})"))
            continue
        v, r, res = _judge(claim, metrics, status, unavailable, name)
        variants.append(VariantVerdict(name, choice, label, _class_verdict(klass, v), r, res))
    return done(verdict, reason, results, variants)


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
