"""Fold claims that repeat one another over a case into one claim declared `over:` its cases, and lists that repeat
across claims into named `sets:` (the inverse of `claims.expand`, for authors of claims files).

    python -m repro_dpadmm.claims.folding config/claims/<paper>.yaml --axis dataset --values a8a,a9a,ijcnn1
    python -m repro_dpadmm.claims.folding config/claims/<paper>.yaml --axis alpha --values 3,5 --form 'a{v}' --form 'alpha{v}'
    python -m repro_dpadmm.claims.folding config/claims/<paper>.yaml --sets

Claims whose ids differ only in a case's token (`--form`, default the value itself, matched as a whole word) become
one claim with `{axis}` in place of the token in every string; what still differs between them becomes a per-case
mapping. The file is rewritten only when its expansion gives back exactly the claims it had (compared by id), so a
fold never changes what is judged. The rewritten file keeps its leading comment block; other comments are dropped.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

from .. import safeload
from .expand import expand


def _token_re(tokens: list[str]) -> re.Pattern:
    alts = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9])({alts})(?![A-Za-z0-9])")


def _replace(node, pattern: re.Pattern, repl):
    if isinstance(node, str):
        return pattern.sub(repl, node)
    if isinstance(node, dict):
        return {k: _replace(v, pattern, repl) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(v, pattern, repl) for v in node]
    return node


def _merge(nodes: list, values: list[str], originals: list | None = None):
    """One node standing for `nodes` (one per case value, the case token already replaced by `{axis}`): equal parts
    as they are, differing parts per case. Where the nodes differ but the `originals` (before the replacement) are
    equal, the original stands (a text that names one dataset in every case)."""
    originals = nodes if originals is None else originals
    first = nodes[0]
    if all(n == first for n in nodes):
        return first
    if all(o == originals[0] for o in originals):
        return originals[0]
    if all(isinstance(n, dict) for n in nodes):
        out = {}
        for k in dict.fromkeys(k for n in nodes for k in n):
            if all(k in n for n in nodes):
                out[k] = _merge([n[k] for n in nodes], values, [o[k] for o in originals])
            else:   # a field some cases lack: given for the cases that have it
                have = [(v, n[k]) for v, n in zip(values, nodes, strict=True) if k in n]
                out[k] = _per_case([x for _, x in have], [v for v, _ in have], allow_default=False)
        return out
    if all(isinstance(n, list) for n in nodes) and len({len(n) for n in nodes}) == 1:
        return [_merge([n[i] for n in nodes], values, [o[i] for o in originals]) for i in range(len(first))]
    return _per_case(nodes, values)


_MISSING = object()


def _per_case(nodes: list, values: list[str], allow_default: bool = True) -> dict:
    reps = [yaml.safe_dump(n, sort_keys=True) for n in nodes]
    common, count = Counter(reps).most_common(1)[0]
    if not allow_default:
        count = 0
    out = {}
    for v, n, r in zip(values, nodes, reps, strict=True):
        if not (count >= 2 and r == common):
            out[v] = n
    if count >= 2:
        out["*"] = nodes[reps.index(common)]
    return out


def fold_claims(claims: list[dict], axis: str, values: list[str], forms: list[str]) -> list[dict]:
    """Claims with ids that differ only in the case token folded into claims `over: {axis: values}`."""
    tokens = {v: [f.replace("{v}", v) for f in forms] for v in values}
    by_token = {t: v for v, ts in tokens.items() for t in ts}
    pattern = _token_re(list(by_token))
    groups: dict[str, list[tuple[int, str, dict]]] = {}
    for i, c in enumerate(claims):
        cid = c.get("id", "") if isinstance(c, dict) else ""
        found = {by_token[m.group(1)] for m in pattern.finditer(cid)}
        if len(found) != 1:
            continue
        value = found.pop()
        forms_of = {f.replace("{v}", value): f for f in forms}
        template_id = _token_re(tokens[value]).sub(
            lambda m, f=forms_of: f[m.group(1)].replace("{v}", "{" + axis + "}"), cid)
        groups.setdefault(template_id, []).append((i, value, c))
    out, done = [], set()
    for i, c in enumerate(claims):
        if i in done:
            continue
        group = next((g for g in groups.values() if len(g) >= 2 and g[0][0] == i), None)
        if group is None or len({v for _, v, _ in group}) != len(group):
            out.append(c)
            continue
        templates = []
        for _, value, member in group:
            own = _token_re(tokens[value])
            forms_of = {f.replace("{v}", value): f for f in forms}
            templates.append(_replace(member, own,
                                      lambda m, f=forms_of: f[m.group(1)].replace("{v}", "{" + axis + "}")))
        case_values = [v for _, v, _ in group]
        merged = _merge(templates, case_values, [m for _, _, m in group])
        folded = {"id": merged.pop("id")} if isinstance(merged.get("id"), str) else {}
        if not folded:
            out.append(c)
            continue
        folded["over"] = {axis: [_number(v) for v in case_values]}
        folded.update(merged)
        out.append(folded)
        done.update(j for j, _, _ in group)
    return out


def _number(v: str):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v) if re.fullmatch(r"[0-9.eE+-]+", v) else v
        except ValueError:
            return v


def fold_metric_docs(metrics: dict, axis: str, values: list[str], forms: list[str]) -> dict:
    """Documented keys that exist for every case value, with one meaning up to the value (its token in the key, the
    token or the bare value in the meaning), as one `{axis}` pattern."""
    out = {}
    place = "{" + axis + "}"
    for item, docs in metrics.items():
        if not isinstance(docs, dict):
            out[item] = docs
            continue
        groups: dict[str, dict[str, tuple[str, str]]] = {}
        for key, text in docs.items():
            if place in key:
                continue
            for v in values:
                forms_of = {f.replace("{v}", v): f for f in forms}
                pat = _token_re(list(forms_of))
                if len(pat.findall(key)) == 1:
                    sub = lambda m, f=forms_of: f[m.group(1)].replace("{v}", place)  # noqa: E731
                    bare = _token_re([v])
                    doc = bare.sub(place, pat.sub(sub, str(text)))
                    groups.setdefault(pat.sub(sub, key), {})[v] = (key, doc)
                    break
        member_of = {k: t for t, g in groups.items() for k, _ in g.values()}
        folded = {}
        for key, text in docs.items():
            template = member_of.get(key)
            g = groups.get(template) if template else None
            if g and set(g) == set(values) and len({d for _, d in g.values()}) == 1:
                folded.setdefault(template, next(iter(g.values()))[1])
            else:
                folded[key] = text
        out[item] = folded
    return out


def discover_axes(metrics: dict, min_values: int = 2) -> list[tuple[str, list[str], list[str]]]:
    """(axis, values, forms) for the numbered key segments of a file (`eps0.1`, `paper_eps0.05`, `n100`): every
    prefix whose numbers recur in one set over at least two key groups."""
    seg = re.compile(r"(?:^|(?<=\.))([A-Za-z_]*[A-Za-z_])(\d+(?:\.\d+)?(?:e-?\d+)?)(?=\.|$)")
    groups: dict[tuple[str, str], set] = {}
    for docs in metrics.values():
        for key in docs or {}:
            key = str(key)
            for m in seg.finditer(key):
                template = key[:m.start(2)] + "{}" + key[m.end(2):]
                groups.setdefault((m.group(1), template), set()).add(m.group(2))
    sets: Counter = Counter()
    for (prefix, _), vals in groups.items():
        if len(vals) >= min_values:
            sets[(prefix, tuple(sorted(vals, key=float)))] += 1
    out, used = [], set()
    for (prefix, vals), n in sets.most_common():
        if n < 2:
            continue
        name = re.sub(r"_+$", "", prefix) or "n"
        k, base = 2, name
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        out.append((name, list(vals), [prefix + "{v}"]))
    return out


def extract_sets(doc: dict, min_uses: int = 3, min_len: int = 2) -> dict:
    """Lists of `depends_on` and `variants` that recur in at least `min_uses` claims as named sets (a new
    document; `doc` is left as it was)."""
    doc = copy.deepcopy(doc)
    uses: Counter = Counter()
    for c in doc.get("claims") or []:
        for field in ("depends_on", "variants"):
            v = c.get(field)
            if isinstance(v, list) and len(v) >= min_len and all(isinstance(x, str) for x in v):
                uses[(field, tuple(v))] += 1
    sets = dict(doc.get("sets") or {})
    names = {}
    for (field, values), n in uses.most_common():
        if n < min_uses:
            break
        items = {str(c.get("item")) for c in doc.get("claims") or [] if c.get(field) == list(values)}
        stem = f"{items.pop()}_{field}" if len(items) == 1 and None not in items else field
        name, k = stem, 2
        while name in sets:
            name, k = f"{stem}_{k}", k + 1
        names[(field, values)] = name
        sets[name] = list(values)
    if not names:
        return doc
    for c in doc.get("claims") or []:
        for field in ("depends_on", "variants"):
            v = c.get(field)
            if isinstance(v, list) and all(isinstance(x, str) for x in v) and (field, tuple(v)) in names:
                c[field] = [{"set": names[(field, tuple(v))]}]
    return {**{k: v for k, v in doc.items() if k != "claims"}, "sets": sets, "claims": doc.get("claims")}


class _Flow(dict):
    """A mapping written on one line (checks, evidence rules, small per-case maps)."""


class _FlowList(list):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, data: d.represent_mapping("tag:yaml.org,2002:map", data.items(),
                                                                   flow_style=True))
_Dumper.add_representer(_FlowList, lambda d, data: d.represent_sequence("tag:yaml.org,2002:seq", data,
                                                                        flow_style=True))


def _scalar(v) -> bool:
    return isinstance(v, (str, int, float, bool, type(None)))


def _flat(node) -> bool:
    """Scalars only (a mapping may also hold lists of scalars): what can be written on one line."""
    if isinstance(node, dict):
        return all(_scalar(v) or (isinstance(v, list) and all(map(_scalar, v))) for v in node.values())
    return isinstance(node, list) and all(map(_scalar, node))


def _width(node) -> int:
    return len(yaml.safe_dump(node, default_flow_style=True, width=10_000, allow_unicode=True).strip())


def _styled(node, indent: int = 0, always: bool = False):
    """The document with every flat mapping or list that fits in the line (checks and evidence rules always)
    written on one line, as the hand-written files are."""
    if _flat(node) and node and (always or indent + _width(node) <= 116):
        return _Flow(node) if isinstance(node, dict) else _FlowList(node)
    if isinstance(node, dict):
        return {k: _styled(v, indent + 2, always=k in ("checks", "evidence") or (isinstance(k, str)
                                                                              and k.startswith("_flow")))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_styled(x, indent + 2, always=always) for x in node]
    return node


def dump(doc: dict, header: str = "") -> str:
    styled = {k: _styled(v, 2) for k, v in doc.items()}
    if isinstance(doc.get("evidence"), dict):
        styled["evidence"] = {scope: [_styled(r, 4, always=True) for r in rules]
                              for scope, rules in doc["evidence"].items()}
    text = yaml.dump(styled, Dumper=_Dumper, sort_keys=False, width=118, allow_unicode=True)
    return header + text


def _by_id(claims: list[dict]) -> dict:
    return {c["id"]: c for c in claims}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--axis")
    ap.add_argument("--values", help="comma-separated case values")
    ap.add_argument("--form", action="append", help="how a value appears as a token ('a{v}'); default '{v}'")
    ap.add_argument("--sets", action="store_true", help="also name depends_on / variants lists used 3+ times")
    ap.add_argument("--restyle", action="store_true", help="only rewrite in the compact style")
    ap.add_argument("--metric-axes", action="store_true",
                    help="fold documented keys over their numbered segments (eps0.1, n100) as axes")
    args = ap.parse_args(argv)
    text = safeload.read_text(args.file)
    raw = safeload.loads_yaml(text, args.file.name, expect=dict)
    header = "".join(line + "\n" for line in text.splitlines()[:next(
        (i for i, line in enumerate(text.splitlines()) if not line.startswith("#")), 0)])
    before = expand(raw)
    if before.problems:
        print(f"{args.file}: expansion problems: {before.problems}", file=sys.stderr)
        return 1
    doc = dict(raw)
    if args.axis:
        values, forms = args.values.split(","), args.form or ["{v}"]
        doc["claims"] = fold_claims(doc.get("claims") or [], args.axis, values, forms)
        if isinstance(doc.get("metrics"), dict) and forms == ["{v}"]:
            metrics = fold_metric_docs(doc["metrics"], args.axis, values, forms)
            if metrics != doc["metrics"]:
                axes = dict(doc.get("axes") or {})
                axes[args.axis] = [_number(v) for v in values]
                doc = {"axes": axes, **{k: v for k, v in doc.items() if k != "axes"}}
                doc["metrics"] = metrics
    if args.sets:
        doc = extract_sets(doc)
    if args.metric_axes and isinstance(doc.get("metrics"), dict):
        axes = dict(doc.get("axes") or {})
        for name, values, forms in discover_axes(doc["metrics"]):
            while name in axes and axes[name] != [_number(v) for v in values]:
                name += "_"
            metrics = fold_metric_docs(doc["metrics"], name, values, forms)
            if metrics != doc["metrics"]:
                axes[name] = [_number(v) for v in values]
                doc["metrics"] = metrics
        doc = {"axes": axes, **{k: v for k, v in doc.items() if k != "axes"}} if axes else doc
    after = expand(safeload.loads_yaml(dump(doc), "folded", expect=dict))
    if after.problems or _by_id(after.data["claims"]) != _by_id(before.data["claims"]) \
            or after.data.get("metrics") != before.data.get("metrics"):
        bad = [k for k in _by_id(before.data["claims"])
               if _by_id(after.data["claims"]).get(k) != _by_id(before.data["claims"])[k]]
        print(f"{args.file}: the folded file does not expand to the same claims ({bad[:5]}, {after.problems[:3]}); "
              "left as it was", file=sys.stderr)
        return 1
    args.file.write_text(dump(doc, header), encoding="utf-8")
    n_before, n_after = len(text.splitlines()), len(args.file.read_text().splitlines())
    print(f"{args.file}: {len(raw.get('claims') or [])} -> {len(doc.get('claims') or [])} claims as written, "
          f"{n_before} -> {n_after} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
