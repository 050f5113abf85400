"""config/README.md, generated from the config schema (workflow/schemas/config.schema.yaml): every key, its type and
allowed values, whether it is required, its default and its description.

    python -m repro_dpadmm.config_doc            # rewrite config/README.md
    python -m repro_dpadmm.config_doc --check    # exit 1 if config/README.md is out of date (tests run this)

The schema is the one source: a key gets documented by giving it a `description:` there.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path

from . import safeload
from .config import schema_path
from .paths import project_root

SCHEMA = "workflow/schemas/config.schema.yaml"
OUT = "config/README.md"
CONSTRAINTS = (("minimum", ">= {}"), ("exclusiveMinimum", "> {}"), ("maximum", "<= {}"), ("exclusiveMaximum", "< {}"),
               ("minItems", "at least {} items"), ("maxItems", "at most {} items"))


@functools.lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int) -> dict:
    return safeload.load_yaml(path, expect=dict)


def load_schema(root: Path | None = None) -> dict:
    """The project's config schema (parsed once per version of the file; do not modify the result)."""
    path = schema_path(root or project_root())
    return _load(path, path.stat().st_mtime_ns)


def _merge(base: dict, own: dict) -> dict:
    """`own` over `base`: own keys win, except `properties` (joined; own entries win) and `required` (union)."""
    out = {**base, **own}
    if "properties" in base or "properties" in own:
        out["properties"] = {**base.get("properties", {}), **own.get("properties", {})}
    if "required" in base or "required" in own:
        out["required"] = sorted(set(base.get("required", [])) | set(own.get("required", [])))
    return out


def _resolve(node: dict, schema: dict, depth: int = 0) -> dict:
    """`node` with its $ref followed and its allOf merged, as one object schema: the referenced schema's properties
    and required keys joined with the node's own (an item's schema is a $ref to the keys its paper's items share plus
    its own keys), the node's own description winning."""
    if depth > 20:
        raise ValueError("schema $ref nesting deeper than 20")
    node = dict(node or {})
    ref = node.pop("$ref", None)
    if ref:
        if not ref.startswith("#/"):
            raise ValueError(f"only local $refs are supported, not {ref!r}")
        target = schema
        for part in ref[2:].split("/"):
            target = target[part]
        node = _merge(_resolve(target, schema, depth + 1), node)
    for sub in node.pop("allOf", []):
        node = _merge(_resolve(sub, schema, depth + 1), node)
    return node


def _description(sub: dict, schema: dict) -> str:
    """A key's description: where the key is declared, else on the schema it references."""
    return " ".join(str(sub.get("description") or _resolve(sub, schema).get("description") or "").split())


def _pattern_name(pattern: str) -> str:
    """`^(a9a|gisette)$` -> `<a9a|gisette>`: the names a patternProperties entry allows."""
    inner = re.fullmatch(r"\^\(?([\w|]+)\)?\$", pattern)
    return f"<{inner.group(1)}>" if inner else f"<matching {pattern}>"


def _children(node: dict, schema: dict) -> list[tuple[str, list[dict], bool]]:
    """(name, schemas, required) of every key a resolved object schema allows: its properties, its patternProperties
    (named <a|b>), its additionalProperties (named <other>), and the properties of its oneOf/anyOf branches (a key in
    several branches has one schema per branch)."""
    required = set(node.get("required", []))
    out: dict[str, tuple[list[dict], bool]] = {k: ([v], k in required) for k, v in node.get("properties", {}).items()}
    for pattern, sub in node.get("patternProperties", {}).items():
        out[_pattern_name(pattern)] = ([sub], False)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        out["<other>"] = ([extra], False)
    branches = [_resolve(b, schema) for alt in ("oneOf", "anyOf") for b in node.get(alt, [])]
    branches = [b for b in branches if b.get("properties")]
    for key in dict.fromkeys(k for b in branches for k in b["properties"]):
        subs = [b["properties"][key] for b in branches if key in b["properties"]]
        out.setdefault(key, (subs, all(key in b.get("required", []) for b in branches)))
    return [(k, subs, req) for k, (subs, req) in out.items()]


def _child(node: dict, key: str, schema: dict) -> list[dict]:
    """The schemas of an actual key of a resolved object schema: its property, else the first matching pattern, else
    additionalProperties, else the key in every oneOf/anyOf branch that names it; [] if none applies."""
    if key in node.get("properties", {}):
        return [node["properties"][key]]
    for pattern, sub in node.get("patternProperties", {}).items():
        if re.search(pattern, key):
            return [sub]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        return [extra]
    branches = [_resolve(b, schema) for alt in ("oneOf", "anyOf") for b in node.get(alt, [])]
    return [b["properties"][key] for b in branches if key in b.get("properties", {})]


def _descriptions(subs: list[dict], schema: dict) -> str:
    """The descriptions of a key's schemas (one per oneOf branch that names it), each once."""
    return "; ".join(dict.fromkeys(d for d in (_description(s, schema) for s in subs) if d))


def _type(node: dict, schema: dict) -> str:
    node = _resolve(node, schema)
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    for alt in ("oneOf", "anyOf"):
        if alt in node:
            return " or ".join(dict.fromkeys(_type(b, schema) for b in node[alt]))
    kind = node.get("type", "object" if "properties" in node else "any")
    text = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and "items" in node:
        text = f"list of ({_type(node['items'], schema)})"
    limits = [fmt.format(node[k]) for k, fmt in CONSTRAINTS if k in node]
    return text + (f" ({', '.join(limits)})" if limits else "")


def _short(value, n: int = 48) -> str:
    text = json.dumps(value)
    return f"`{text}`" if len(text) <= n else f"`{text[: n - 3]}...`"


def _rows(node: dict, schema: dict, path: list[str], out: list[tuple]) -> None:
    """(dotted key, type, required, default, description) of every key below `node`, depth first."""
    node = _resolve(node, schema)
    for key, subs, required in _children(node, schema):
        full = [*path, key]
        resolved = [_resolve(s, schema) for s in subs]
        kind = " or ".join(dict.fromkeys(_type(s, schema) for s in subs))
        desc = _descriptions(subs, schema)
        default = next((_short(r["default"]) for r in resolved if "default" in r), "")
        out.append((".".join(full), kind, required, default, desc))
        for res in resolved:
            if _children(res, schema):
                _rows(res, schema, full, out)


def _item_node(schema: dict, paper: str, item: str) -> dict:
    papers = _resolve(schema["properties"]["papers"], schema)
    node = _resolve(papers.get("properties", {}).get(paper, {}), schema)
    return node.get("properties", {}).get(item) or node.get("additionalProperties") or {}


def parameter_descriptions(paper: str, item: str, root: Path | None = None) -> dict[str, str]:
    """{key: description} of an item's parameters as the schema documents them (a reproduction choice that no paper
    states starts with "[D]"): every key of the item, nested keys dotted (`sgd.lr_grid`; free names as `<other>` or
    `<a|b>`), and `seed`, the base seed the item's parameters carry. The notebooks' parameter tables and the report
    read them from here."""
    schema = load_schema(root)
    rows: list[tuple] = []
    _rows(_item_node(schema, paper, item), schema, [], rows)
    out = {name: desc for name, _, _, _, desc in rows}
    out.setdefault("seed", _description(schema["properties"]["seed"], schema))
    return out


def key_description(paper: str, item: str, path: list[str] | tuple[str, ...], root: Path | None = None) -> str:
    """The description of one key of an item's parameters, given by its path of actual names (e.g.
    `("curves", "blue", "q1")`); "" when the schema has none (or does not know the key)."""
    schema = load_schema(root)
    if list(path) == ["seed"]:
        return _description(schema["properties"]["seed"], schema)
    subs = [_item_node(schema, paper, item)]
    for key in path:
        subs = [c for sub in subs for c in _child(_resolve(sub, schema), str(key), schema)]
        if not subs:
            return ""
    return _descriptions(subs, schema)


def render(root: Path | None = None) -> str:
    schema = load_schema(root)
    rows: list[tuple] = []
    _rows(schema, schema, [], rows)
    missing = sum(1 for r in rows if not r[4])
    lines = ["<!-- Generated by `python -m repro_dpadmm.config_doc` from workflow/schemas/config.schema.yaml: do not",
             "     edit; give a key a `description:` in the schema and regenerate. tests/test_config_doc.py checks it.",
             "-->",
             "# Configuration keys", "",
             "`config/config.yaml` holds the paper-faithful parameters of every item; `config/smoke.yaml` overrides "
             "them with tiny settings (`--configfile config/smoke.yaml`); `.test/config/config.yaml` is the "
             "configuration CI runs. Snakemake validates the merged configuration against "
             f"`{SCHEMA}` before any job starts. Reproduction choices that no paper states are marked `[D]`; `[P §x]` "
             "cites the paper's section a value comes from, `docs/choices.md#<anchor>` where the project explains the choice. The notebooks' and the "
             "report's parameter tables show these descriptions.", "",
             "Every integer that sizes a run has a maximum (`<= N` below): 50 to 1,000 times the papers' values "
             "(iterations up to 100,000, repeats up to 1,000, agents up to 10,000, graph nodes up to 5,000, audit "
             "trials up to 10^7), or the dataset's own size, so that a typo cannot ask for days or terabytes; raise "
             "one in the schema if a study needs more. Within them, `repro-dpadmm run` (and so every Snakemake job) "
             "estimates the run's peak memory first and refuses, naming the keys, settings that would not fit in "
             "the machine's memory (`repro_dpadmm.experiments.estimate`; `REPRO_DPADMM_MEMORY_GB` sets the memory "
             "it assumes, `off` skips the check).", "",
             f"{len(rows)} keys; {missing} without a description in the schema yet.", ""]
    section = None
    for name, kind, req, default, desc in rows:
        top = ".".join(name.split(".")[:2]) if name.startswith("papers.") and name.count(".") >= 1 else \
            name.split(".")[0]
        if top != section:
            section = top
            lines += ["", f"## `{section}`", "", "| key | type | required | default | description |",
                      "|---|---|---|---|---|"]
        desc = " ".join(str(desc).split()).replace("|", "\\|") or "–"
        name = name.replace("|", "\\|")  # a pattern's names (<a9a|gisette>): a bare | would end the table cell
        lines.append(f"| `{name}` | {kind.replace('|', '/')} | {'yes' if req else ''} | {default} | {desc} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m repro_dpadmm.config_doc", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help=f"exit 1 if {OUT} differs from what the schema gives")
    args = ap.parse_args(argv)
    root = project_root()
    text, path = render(root), root / OUT
    if args.check:
        if not path.is_file() or path.read_text() != text:
            print(f"{OUT} is out of date with {SCHEMA}: run `python -m repro_dpadmm.config_doc`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
