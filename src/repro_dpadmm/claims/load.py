"""Loading claims files: the schema, line numbers of every node, and the rules that span fields.

Loading never raises on a bad claim: problems are collected (`ClaimsFile.problems`, each '<file>:<line>: <where>:
<message>') so that a caller can list them all; `validate_claims_file` is the strict form (raises `ClaimsError`
listing every problem)."""

from __future__ import annotations

import functools
from pathlib import Path

import jsonschema
import yaml

from .. import safeload
from .expand import expand
from .judge import cited, placeholder_keys
from .kinds import CHECKS, check_keys
from .model import RANGE_FIELDS, Claim, ClaimsError, ClaimsFile, EvidenceRule
from .noise import DEFAULT_NOISE_Z, _is_number

# The schema of a claims file (JSON Schema 2020-12): the one structural definition of the format.
SCHEMA_NAME = "claims.schema.yaml"
SOURCE_SCHEMA = Path(__file__).resolve().parents[3] / "config" / "claims" / SCHEMA_NAME


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


class _ExpandedLines:
    """Line numbers of an expanded document's nodes: each expanded claim's path is read in the raw claim it came
    from."""

    def __init__(self, lines: _Lines, expanded):
        self.base, self.expanded = lines, expanded
        self.duplicates = lines.duplicates

    def line(self, path) -> int | None:
        return self.base.line(self.expanded.raw_path(path))


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
    ex = expand(data)     # claims over their cases, shared sets and defaults, metric-doc patterns
    raw_data, raw_lines = data, lines
    lines = _ExpandedLines(lines, ex) if lines is not None else None
    cf.problems = [f"{_at(fname, raw_lines, p)}: {_path_text(raw_data, p)}: {msg}" for p, msg in ex.problems]
    data = ex.data
    cf.problems += schema_problems(data, fname, lines, schema)
    if lines:
        cf.problems += [f"{fname}:{ln}: {_path_text(raw_data, p) if p else 'top level'}: key {k!r} is given more "
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
    cf.variants = {str(n): {k: ({str(a): str(b) for a, b in v.items()} if isinstance(v, dict) else str(v))
                            for k, v in spec.items()} for n, spec in (data.get("variants") or {}).items()}
    cf.evidence = {str(scope): [EvidenceRule(str(r["keys"]), r["kind"], str(r.get("reference") or ""),
                                             str(r.get("better") or ""),
                                             lines.line(("evidence", scope, i)) if lines else None)
                                for i, r in enumerate(rules)]
                   for scope, rules in (data.get("evidence") or {}).items()}
    cf.problems += _evidence_problems(cf, data, lines)
    for n, raw in enumerate(data.get("claims") or []):
        claim, probs, warns = _parse_claim(raw, cf, lines.line(("claims", n)) if lines else None)
        claim.case, claim.group = ex.cases[n], ex.groups[n]
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



def _placeholder_problems(where: str, findings: list[dict], claim_keys: set[str], scope: str,
                          cf: ClaimsFile) -> list[str]:
    """Every `{key}` a finding's text cites is a metric of the claim's item (documented, read by the claim, with
    `.se` or `@<variant>` allowed), or of another item (`<paper>/<item>:<key>`)."""
    documented = cf.metrics.get(scope)
    out = []
    for f in findings:
        for key in placeholder_keys(f["text"]):
            base = key.split("@", 1)[0]
            base = base[:-3] if base.endswith(".se") and base not in (documented or {}) else base
            ok = (key in claim_keys or base in claim_keys or cited(key)
                  or (documented is not None and base in documented)
                  or (documented is None and cf.kind_of(scope, base)))
            if not ok:
                out.append(f"{where}: {'finding text' if 'when' in f else 'note'} cites {{{key}}}, which is no metric of "
                           f"{'item ' + scope if documented is not None else scope} (a placeholder names a "
                           "documented metric key; write a literal brace as {{ or }})")
    return out


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
    paper_reading = str(raw.get("paper_reading") or "")
    if paper_reading and paper_reading != "default" and paper_reading not in variants:
        errors.append(f"{where}: paper_reading {paper_reading!r} is neither 'default' nor a variant the claim lists "
                      f"(variants: {', '.join(variants) or 'none'})")
    for k, check in enumerate(raw.get("checks") or []):
        pt = check.get("paper_threshold")
        if _is_number(pt) and check.get("kind") in CHECKS and CHECKS[check["kind"]].bounded \
                and check.get("min") is not None and check.get("max") is not None:
            errors.append(f"{where} checks[{k}]: paper_threshold must be [lo, hi] for a check with min and max")
    finding = raw.get("finding")
    findings = [{"when": _str_list(f["when"]), "text": f["text"], "evidence": _str_list(f.get("evidence"))}
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
    errors += _placeholder_problems(where, findings + [{"text": str(raw.get("note") or "")}], set(check_keys_),
                                    scope, cf)
    if raw.get("gates") and raw.get("setup") is not True:
        errors.append(f"{where}: gates: belongs to a setup check (setup: true): it names the claims that rest on it")
    unranged = []
    for k, check in enumerate(raw.get("checks") or []):
        ranged = check.get("range") or {}
        for fld, (lo, hi) in ranged.items():
            value = check.get(fld)
            if not _is_number(value):
                errors.append(f"{where} checks[{k}]: range gives {fld!r}, which the check has no number for")
            elif not lo <= value <= hi:
                errors.append(f"{where} checks[{k}]: {fld} = {value} lies outside its range [{lo}, {hi}]")
        if str(check.get("from") or "").lstrip().lower().startswith("rule"):
            unranged += [f"checks[{k}].{f}" for f in RANGE_FIELDS
                         if _is_number(check.get(f)) and f not in ranged]
    claim = Claim(
        id=cid, paper=paper, item=item if source is None else None, source=source, quote=raw["quote"],
        where=str(raw.get("where") or ""), paper_value=raw.get("paper_value"), checks=list(raw.get("checks") or []),
        depends_on=_str_list(raw.get("depends_on")), note=str(raw.get("note") or ""), main=str(raw.get("main") or ""),
        paper_reading=paper_reading,
        not_checkable=str(raw.get("not_checkable") or ""), datasets=_str_list(raw.get("datasets")),
        setup=raw.get("setup") is True, gates=_str_list(raw.get("gates")), variants=variants,
        variant_specs={v: cf.variants[v] for v in variants if v in cf.variants}, findings=findings,
        noise_z=cf.noise_z, kinds=kinds, references=references, unranged=unranged, file=cf.path.name, line=line,
        invalid="; ".join(e.split(": ", 2)[-1] for e in errors),
    )
    # A rule of ours says how far a careful reader could place it (the paper's own numbers need no range).
    warnings += [f"{where} {u}: the threshold is a rule of ours ('from: rule: ...') with no plausible range "
                 f"(range: {{{u.rsplit('.', 1)[1]}: [lo, hi]}})" for u in unranged] if not errors else []
    # Documentation check: every key a claim reads should be documented under metrics.<item>.
    if not errors and claim.item is not None and cf.metrics:
        documented = cf.metrics.get(claim.item)
        if documented is None:
            warnings.append(f"{where}: metrics.{claim.item} does not exist; document the item's metric keys")
        else:
            for key in claim.metric_keys():
                # a check may read one setting's value directly (`<key>@<variant>`, e.g. one case per swept
                # setting): its base key is what is documented, and the variant must be declared
                base, _, variant = key.partition("@")
                if variant and variant not in cf.variants:
                    warnings.append(f"{where}: metric {key!r} names no declared variant {variant!r}")
                elif base not in documented and not cited(key):
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
