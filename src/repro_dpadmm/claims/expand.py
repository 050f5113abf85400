"""Claims declared once: a claim over its cases (`over:`), shared blocks (`sets:`, `defaults:`) and metric docs as
patterns (`axes:`), expanded into plain claims and keys when a file is loaded.

* `over: {dataset: [a8a, a9a]}` (any axes; several give every combination) makes one claim per case. `{dataset}`
  is replaced in every string of the claim (its id, metric keys, labels, quote, findings); a mapping whose keys are
  values of one axis (with `"*"` for the others) is a per-case field and gives the case's entry (a field missing for
  a case is left out); a list entry with `cases: [a8a]` is kept only for the cases it names.
* `sets: {name: [...]}`: a list entry `{set: name}` in a claim's `depends_on` or `variants` (or an item's `choices`)
  is replaced by the set's entries.
* `defaults: {field: value}`: fields every claim of the file takes unless it sets them.
* `axes: {name: [values]}`: a documented metric key with `{name}` in it (`gap_T.{alg}.{dataset}`) stands for one key
  per value (every combination), its meaning with `{name}` replaced too.

Expansion is bounded (lists only: no YAML anchors reach here, and at most MAX_CASES cases per claim, MAX_CLAIMS
claims and MAX_KEYS documented keys per file), and every problem names the path of the raw document it comes from.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

MAX_CASES = 256          # cases of one claim (the product of its axes)
MAX_CLAIMS = 20_000      # claims of one file after expansion
MAX_KEYS = 100_000       # documented metric keys of one file after expansion
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFAULTABLE = ("item", "where", "depends_on", "variants", "datasets", "setup", "note", "paper_value")


class Expanded:
    """The expanded document, where each expanded claim came from, and the problems found on the way.

    `origin[n]`: the index in the raw `claims:` list of expanded claim n; `cases[n]`: its case ({axis: value}, empty
    for a claim without `over:`); `groups[n]`: the raw claim's id (with its `{axis}` placeholders) when it has cases."""

    def __init__(self, data: dict):
        self.data = data
        self.origin: list[int] = []
        self.cases: list[dict[str, str]] = []
        self.groups: list[str | None] = []
        self.axes: list[dict[str, list[str]]] = []
        self.problems: list[tuple[tuple, str]] = []

    def raw_path(self, path) -> tuple:
        """The raw document's path of a path into the expanded one (claims[n] -> claims[origin[n]])."""
        path = tuple(path)
        if len(path) >= 2 and path[0] == "claims" and isinstance(path[1], int) and path[1] < len(self.origin):
            return ("claims", self.origin[path[1]]) + path[2:]
        return path


def _value_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _splice_sets(values, sets: dict, where: tuple, problems: list) -> Any:
    """A list with each `{set: name}` entry replaced by the set's entries."""
    if not isinstance(values, list):
        return values
    out = []
    for i, v in enumerate(values):
        if isinstance(v, dict) and set(v) == {"set"}:
            name = v["set"]
            if not isinstance(name, str) or name not in sets:
                problems.append((where + (i,), f"no set {name!r} under the file's sets: "
                                               f"(declared: {', '.join(sorted(sets)) or 'none'})"))
                continue
            out.extend(sets[name])
        else:
            out.append(v)
    return out


def _substitute(node, case: dict[str, str], axes: dict[str, list[str]], path: tuple, problems: list):
    """The node for one case: `{axis}` replaced in strings, per-case mappings resolved, `cases:` entries filtered.
    Returns `_DROP` for a per-case field the case does not have."""
    if isinstance(node, str):
        for axis, value in case.items():
            node = node.replace("{" + axis + "}", value)
        return node
    if isinstance(node, dict):
        per_axis = _per_case_axis(node, axes)
        if per_axis is not None:
            key = case[per_axis]
            if key in node:
                return _substitute(node[key], case, axes, path + (key,), problems)
            if "*" in node:
                return _substitute(node["*"], case, axes, path + ("*",), problems)
            return _DROP
        out = {}
        for k, v in node.items():
            sub = _substitute(v, case, axes, path + (k,), problems)
            if sub is not _DROP:
                out[k] = sub
        return out
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            if isinstance(v, dict) and "cases" in v:
                if not _wanted(v["cases"], case, axes, path + (i, "cases"), problems):
                    continue
                v = {k: x for k, x in v.items() if k != "cases"}
            sub = _substitute(v, case, axes, path + (i,), problems)
            if sub is not _DROP:
                out.append(sub)
        return out
    return node


_DROP = object()


def _wanted(cases, case: dict[str, str], axes: dict[str, list[str]], path: tuple, problems: list) -> bool:
    """Whether a `cases:` entry keeps its list entry for `case`: a list of values (of any axis: kept when the case
    has one of them), or a mapping {axis: [values]} (kept when the case's value of every axis named is listed)."""
    by_axis = cases if isinstance(cases, dict) else {None: cases}
    keep = True
    for axis, wanted in by_axis.items():
        wanted = {_value_text(w) for w in (wanted if isinstance(wanted, list) else [wanted])}
        known = set(axes.get(axis, ())) if axis is not None else {x for vals in axes.values() for x in vals}
        if axis is not None and axis not in axes:
            problems.append((path, f"cases names {axis!r}, which is no axis of the claim ({', '.join(axes)})"))
        elif wanted - known:
            problems.append((path, f"cases {sorted(wanted - known)} are not values of the claim's axes "
                                   f"({', '.join(axes)})"))
        values = {case.get(axis)} if axis is not None else set(case.values())
        keep &= bool(wanted & values)
    return keep


def _per_case_axis(node: dict, axes: dict[str, list[str]]) -> str | None:
    """The axis a mapping is keyed by (all its keys are values of that one axis, or "*"), else None."""
    keys = {str(k) for k in node}
    if not keys - {"*"}:
        return None
    for axis, values in axes.items():
        if keys <= set(values) | {"*"}:
            return axis
    return None


def _cases(over, path: tuple, problems: list) -> tuple[dict[str, list[str]], list[dict[str, str]]]:
    if not isinstance(over, dict) or not over:
        problems.append((path, "over must map each axis name to a list of its values, e.g. {dataset: [a8a, a9a]}"))
        return {}, []
    axes = {}
    for axis, values in over.items():
        if not isinstance(axis, str) or not NAME.match(axis):
            problems.append((path + (axis,), f"axis name {axis!r} must be a word (letters, digits, _)"))
            return {}, []
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
            problems.append((path + (axis,), f"axis {axis!r} must list its values (strings or numbers)"))
            return {}, []
        texts = [_value_text(v) for v in values]
        if len(set(texts)) != len(texts):
            problems.append((path + (axis,), f"axis {axis!r} lists a value twice"))
            return {}, []
        if any(not re.fullmatch(r"[A-Za-z0-9_.\-]+", t) for t in texts):
            problems.append((path + (axis,), f"the values of axis {axis!r} must be dot-free words or numbers"))
            return {}, []
        axes[axis] = texts
    n = 1
    for values in axes.values():
        n *= len(values)
    if n > MAX_CASES:
        problems.append((path, f"over gives {n} cases; at most {MAX_CASES} per claim"))
        return {}, []
    return axes, [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


def expand(data: Any) -> Expanded:
    """Expand a raw claims document (already within safeload's limits). Non-mappings are returned as they are, for
    the schema to reject."""
    if not isinstance(data, dict):
        out = Expanded(data)
        return out
    out = Expanded({})
    problems = out.problems
    sets = data.get("sets") or {}
    if not isinstance(sets, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                                             for v in sets.values()):
        problems.append((("sets",), "sets must map each name to a list of strings"))
        sets = {}
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.append((("defaults",), "defaults must be a mapping of claim fields"))
        defaults = {}
    for k in defaults:
        if k not in _DEFAULTABLE:
            problems.append((("defaults", k), f"{k!r} cannot have a default (allowed: {', '.join(_DEFAULTABLE)})"))
    axes_decl = data.get("axes") or {}
    doc = dict(data)      # sets, defaults and axes stay, for the schema to check and document
    if isinstance(doc.get("metrics"), dict):
        doc["metrics"] = _expand_metric_docs(doc["metrics"], axes_decl, problems)
    if isinstance(doc.get("items"), dict):
        doc["items"] = {name: ({**spec, "choices": _splice_sets(spec["choices"], sets, ("items", name, "choices"),
                                                                problems)}
                               if isinstance(spec, dict) and "choices" in spec else spec)
                        for name, spec in doc["items"].items()}
    raw_claims = data.get("claims")
    if not isinstance(raw_claims, list):
        out.data = doc
        return out
    claims = []
    for i, raw in enumerate(raw_claims):
        if not isinstance(raw, dict):
            claims.append(raw)
            out.origin.append(i), out.cases.append({}), out.groups.append(None), out.axes.append({})
            continue
        base = {**{k: v for k, v in defaults.items() if k in _DEFAULTABLE and k not in raw}, **raw}
        if "case" in raw:
            problems.append((("claims", i, "case"), "case is set by the expansion of over:, never by hand"))
        if "over" in base:
            axes, cases = _cases(base.pop("over"), ("claims", i, "over"), problems)
            group = base.get("id")
        else:
            axes, cases, group = {}, [{}], None
        for case in cases:
            claim = _substitute(base, case, axes, ("claims", i), problems) if case else base
            claim = dict(claim)
            for field in ("depends_on", "variants"):     # sets are spliced in after the case is chosen
                if field in claim:
                    claim[field] = _splice_sets(claim[field], sets, ("claims", i, field), problems)
            claims.append(claim)
            out.origin.append(i), out.cases.append(case), out.groups.append(group), out.axes.append(axes)
        if len(claims) > MAX_CLAIMS:
            problems.append((("claims", i), f"the file expands to more than {MAX_CLAIMS} claims"))
            break
    doc["claims"] = claims
    out.data = doc
    return out


def _expand_metric_docs(metrics: dict, axes: Any, problems: list) -> dict:
    """Documented metric keys with `{axis}` in them, one key per value of the file's `axes:`."""
    if not isinstance(axes, dict) or not all(isinstance(v, list) for v in axes.values()):
        problems.append((("axes",), "axes must map each name to a list of values"))
        axes = {}
    axes = {str(a): [_value_text(v) for v in vals] for a, vals in axes.items()}
    total, out = 0, {}
    for item, docs in metrics.items():
        if not isinstance(docs, dict):
            out[item] = docs
            continue
        keys = {}
        for key, text in docs.items():
            names = list(dict.fromkeys(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", str(key))))
            unknown = [n for n in names if n not in axes]
            if unknown:
                problems.append((("metrics", item, key), f"{{{unknown[0]}}} is not an axis declared under axes: "
                                                         f"(declared: {', '.join(sorted(axes)) or 'none'})"))
                continue
            for combo in itertools.product(*(axes[n] for n in names)):
                k, t = str(key), text
                for n, v in zip(names, combo, strict=True):
                    k = k.replace("{" + n + "}", v)
                    t = t.replace("{" + n + "}", v) if isinstance(t, str) else t
                if k in keys:
                    problems.append((("metrics", item, key), f"the key {k!r} is documented twice"))
                keys[k] = t
                total += 1
                if total > MAX_KEYS:
                    problems.append((("metrics", item, key), f"more than {MAX_KEYS} documented keys"))
                    out[item] = keys
                    return out
        out[item] = keys
    return out
