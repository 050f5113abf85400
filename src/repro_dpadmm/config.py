"""Load, merge and validate the workflow configuration outside Snakemake (notebooks, CLI, tests).

One validator for every way a value comes in (config files, `--config`, `repro-dpadmm run --params`, the CLI's
JSON options): the JSON schema `workflow/schemas/config.schema.yaml`, with numbers required to be finite (NaN and
infinity are not numbers here), plus the registry's rule (`repro_dpadmm.registry`) that an item exists only if it is
registered and its notebook is on disk. Every error names the key (a dotted path) and what is allowed there.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import re
from pathlib import Path

import jsonschema

from . import registry, safeload
from .paths import project_root


class ConfigError(ValueError):
    pass


def deep_merge(base: dict, override: dict) -> dict:
    """Recursive dict update, as Snakemake merges --configfile over configfile."""
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


SCHEMA = "workflow/schemas/config.schema.yaml"


def schema_path(root: Path | None) -> Path:
    """The project's schema; a root without one (a scratch folder given by REPRO_DPADMM_ROOT) uses the schema of
    the checkout this package runs from."""
    path = (root or project_root()) / SCHEMA
    return path if path.is_file() else Path(__file__).resolve().parents[2] / SCHEMA


def schema(root: Path | None = None) -> dict:
    return safeload.load_yaml(schema_path(root), expect=dict)


def _finite_number(checker, instance) -> bool:
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and math.isfinite(instance))


def _finite_integer(checker, instance) -> bool:
    return _finite_number(checker, instance) and (isinstance(instance, int) or instance.is_integer())


_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
    {"number": _finite_number, "integer": _finite_integer})
Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_TYPES)


@functools.lru_cache(maxsize=8)
def _validator(path: Path, mtime_ns: int):
    """The schema's validator, parsed once per version of the file."""
    return Validator(safeload.load_yaml(path, expect=dict))


def _resolve(sub: dict, root_schema: dict) -> dict:
    """Follow a schema that is only a reference ({$ref: ...}) to what it names."""
    while isinstance(sub, dict) and "$ref" in sub and sub["$ref"].startswith("#/") and \
            not set(sub) - {"$ref", "description"}:
        node = root_schema
        for part in sub["$ref"][2:].split("/"):
            node = node[part]
        sub = node
    return sub if isinstance(sub, dict) else {}


def _known_keys(sub: dict, root_schema: dict) -> set[str]:
    """Keys an object schema names: its own properties, those of what it references ($ref, allOf) and patterns."""
    sub = _resolve(sub, root_schema)
    keys = set(sub.get("properties", {})) | {f"<matching {p}>" for p in sub.get("patternProperties", {})}
    if isinstance(sub.get("$ref"), str):
        keys |= _known_keys({"$ref": sub["$ref"]}, root_schema)
    for branch in sub.get("allOf", []):
        keys |= _known_keys(branch, root_schema)
    return keys


def allowed(sub: dict, root_schema: dict) -> str:
    """What a (sub)schema allows, in words: type, range, choices, length."""
    sub = _resolve(sub, root_schema)
    if "enum" in sub:
        return "one of " + ", ".join(json.dumps(v) for v in sub["enum"])
    if "const" in sub:
        return f"exactly {json.dumps(sub['const'])}"
    for alt in ("oneOf", "anyOf"):
        if alt in sub:
            return " or ".join(allowed(s, root_schema) for s in sub[alt])
    parts = []
    types = sub.get("type")
    if types:
        types = [types] if isinstance(types, str) else types
        parts.append(" or ".join("finite number" if t == "number" else t for t in types))
    for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in sub:
            parts.append(f"{op} {sub[key]}")
    if "multipleOf" in sub:
        parts.append(f"a multiple of {sub['multipleOf']}")
    if "minItems" in sub or "maxItems" in sub:
        parts.append(f"{sub.get('minItems', 0)} to {sub.get('maxItems', 'any number of')} items")
    if "items" in sub:
        parts.append(f"each {allowed(sub['items'], root_schema)}")
    if sub.get("uniqueItems"):
        parts.append("no repeats")
    if "properties" in sub or "allOf" in sub or "$ref" in sub:
        parts.append("keys " + ", ".join(sorted(_known_keys(sub, root_schema))))
    return ", ".join(parts) or "see workflow/schemas/config.schema.yaml"


def _describe(err: jsonschema.ValidationError, root_schema: dict) -> list[str]:
    where = ".".join(map(str, err.absolute_path)) or "<top>"
    if err.validator in ("additionalProperties", "unevaluatedProperties"):
        known = sorted(_known_keys(err.schema, root_schema))
        patterns = [k[len("<matching "):-1] for k in known if k.startswith("<matching ")]
        extra = sorted(k for k in err.instance if k not in known and not any(re.search(p, k) for p in patterns)) \
            if isinstance(err.instance, dict) else []
        if known or extra:
            plain = [k for k in known if not k.startswith("<matching ")]
            allowed_here = f"(allowed keys here: {', '.join(known) or 'none'})"
            return [f"{where}.{k}: unknown key{registry.did_you_mean(k, plain, cutoff=0.6)} {allowed_here}" for k in extra] \
                or [f"{where}: unknown key {allowed_here}"]
    if err.validator == "required":
        missing = err.message.split("'")[1] if err.message.count("'") >= 2 else "?"
        prop = _resolve(err.schema, root_schema).get("properties", {}).get(missing)
        what = allowed(prop, root_schema) if prop else "see workflow/schemas/config.schema.yaml"
        return [f"{where}.{missing}: required key missing (allowed: {what})"]
    return [f"{where}: {err.message} (allowed: {allowed(err.schema, root_schema)})"]


def _leaf(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a failed oneOf/anyOf, the error deepest inside the value when there is one (it names the key)."""
    if err.validator in ("oneOf", "anyOf") and err.context:
        deeper = [e for e in err.context if len(e.absolute_path) > len(err.absolute_path)]
        if deeper:
            return _leaf(jsonschema.exceptions.best_match(deeper))
    return err


def _spurious(err: jsonschema.ValidationError, root_schema: dict) -> bool:
    """An 'unevaluated properties' error listing only keys the schema knows: a sibling allOf branch failed (that
    real error is reported on its own)."""
    if err.validator != "unevaluatedProperties" or not isinstance(err.instance, dict):
        return False
    known = _known_keys(err.schema, root_schema)
    return bool(known) and set(err.instance) <= known  # <matching ...> entries never equal a key


def errors(config: dict, root: Path | None = None) -> list[str]:
    """Every problem with `config`, each naming its key and what is allowed."""
    root = root or project_root()
    path = schema_path(root)
    validator = _validator(path, path.stat().st_mtime_ns)
    sch = validator.schema
    found = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    msgs = list(dict.fromkeys(m for e in found if not _spurious(e, sch) for m in _describe(_leaf(e), sch)))
    papers = config.get("papers") if isinstance(config, dict) else None
    # what a value must be wherever it comes from (a 23-digit seed from `--config` passes the schema, and every job
    # would refuse it); NaN and infinities are the schema's to name, with the key's allowed range
    beyond = safeload.value_problem(config, finite=False)
    return ([beyond] if beyond else []) + msgs + registry.config_errors(papers or {}, root)


def validate(config: dict, root: Path | None = None) -> dict:
    """Raise ConfigError naming the offending key, value and allowed range if `config` violates the schema."""
    problems = errors(config, root)
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  {m}" for m in problems[:20]))
    return config


_JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


def _types(sub: dict, root_schema: dict) -> set[str]:
    """The JSON types a (sub)schema allows: its `type`, the types of its enum or const, or those of its branches."""
    sub = _resolve(sub, root_schema)
    types = sub.get("type")
    if types:
        return {types} if isinstance(types, str) else set(types)
    if "enum" in sub or "const" in sub:
        return {_json_type(v) for v in sub.get("enum", [sub.get("const")])}
    out = set()
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in sub.get(key, []):
            out |= _types(branch, root_schema)
    if isinstance(sub.get("$ref"), str):
        out |= _types({"$ref": sub["$ref"]}, root_schema)
    return out


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "object")


def _children(sub: dict, key, root_schema: dict) -> list[dict]:
    """The schemas that may apply to `key` of an object (or to the items of an array, key None)."""
    sub = _resolve(sub, root_schema)
    out = []
    if key is None:
        if isinstance(sub.get("items"), dict):
            out.append(sub["items"])
    else:
        if key in sub.get("properties", {}):
            out.append(sub["properties"][key])
        out += [v for p, v in sub.get("patternProperties", {}).items() if re.search(p, str(key))]
        if isinstance(sub.get("additionalProperties"), dict):
            out.append(sub["additionalProperties"])
    for branch_key in ("oneOf", "anyOf", "allOf"):
        for branch in sub.get(branch_key, []):
            out += _children(branch, key, root_schema)
    if isinstance(sub.get("$ref"), str):
        out += _children({"$ref": sub["$ref"]}, key, root_schema)
    return out


def _parse_scalar(text: str):
    """A command-line string as the value it spells: an integer, a number, or YAML (true, null, [1, 2], ...)."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    try:
        return safeload.loads_yaml(text, "a command-line value")
    except safeload.LoadError:
        return text


def _coerce(value, schemas: list[dict], root_schema: dict):
    if isinstance(value, str):
        types = set().union(*(_types(s, root_schema) for s in schemas)) if schemas else set()
        if not types or "string" in types:
            return value
        parsed = _parse_scalar(value)
        kind = _json_type(parsed)
        if kind in types or (kind == "integer" and "number" in types):
            return _coerce(parsed, schemas, root_schema) if isinstance(parsed, (dict, list)) else parsed
        return value
    if isinstance(value, dict):
        return {k: _coerce(v, [c for s in schemas for c in _children(s, k, root_schema)], root_schema)
                for k, v in value.items()}
    if isinstance(value, list):
        items = [c for s in schemas for c in _children(s, None, root_schema)]
        return [_coerce(v, items, root_schema) for v in value]
    return value


def coerce_strings(config: dict, root: Path | None = None) -> dict:
    """`config` with every string that sits where the schema wants no string (a number, an integer, a boolean,
    null, a list) replaced by the value it spells, as far as that value has an allowed type: Snakemake reads nested
    `--config` values (`--config 'papers={zhang2018_radmm: {fig3: {q: 1.02}}}'`) as strings. Anything that does not
    parse stays as it was, for the validation to name. A value that Snakemake's reading of `--config` left as a
    shared reference (a YAML alias: `--config 'papers={a: &x [...], b: [*x, *x]}'`) is a ConfigError before anything
    is walked: expanding nested aliases takes exponential time and memory."""
    _refuse_shared(config)
    return _coerce(config, [schema(root)], schema(root))


def _refuse_shared(config) -> None:
    """ConfigError naming the key if one mapping or list is reached twice in `config` (what a YAML alias leaves) or
    nesting is deeper than safeload.MAX_DEPTH; one pass, each container visited once."""
    seen: set[int] = set()
    stack = [(config, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        where = ".".join(map(str, path)) or "<top>"
        if id(node) in seen:
            raise ConfigError(f"invalid configuration:\n  {where}: a YAML alias (a value given as *name) is not "
                              "allowed in a config value (aliases can expand a few hundred bytes into gigabytes; "
                              "write the values out)")
        seen.add(id(node))
        if len(path) >= safeload.MAX_DEPTH:
            raise ConfigError(f"invalid configuration:\n  {where}: nested deeper than {safeload.MAX_DEPTH} levels")
        stack.extend((child, path + (key,)) for key, child in (node.items() if isinstance(node, dict)
                                                                  else enumerate(node)))


def read_config_file(path: str | Path) -> dict:
    """One config file, read within the limits of `safeload` (size, depth, no YAML aliases, finite numbers);
    ConfigError naming the file and line otherwise."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder, not a file")
    if path.exists() and not path.is_file():   # a FIFO or a device: reading it could block or never end
        raise ConfigError(f"config file {path} is not a regular file")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist (relative paths are read from {Path.cwd()})")
    try:   # NaN and infinity pass here: the schema refuses them naming the key and what is allowed
        data = safeload.load_yaml(path, expect=dict, finite=False)
    except safeload.LoadError as exc:   # about the file, or about the size cap the environment sets
        raise ConfigError(str(exc) if exc.source == safeload.MAX_BYTES_ENV else f"config file {exc}") from None
    if isinstance(data, dict) and YTE_KEY in data:
        raise ConfigError(f"config file {path} holds {YTE_KEY}: Snakemake runs such a file's template expressions "
                          "as Python code when it is given with --configfile, before this workflow's checks; a config "
                          "of this project never has it (do not give this file to snakemake)")
    return data or {}


# The key that turns a YAML file into a YTE template in Snakemake's own --configfile loader (yte's require_use_yte).
YTE_KEY = "__use_yte__"


def load(*overrides: str | Path, root: Path | None = None) -> dict:
    """config/config.yaml merged with each override file in turn (relative to the working directory), validated."""
    root = root or project_root()
    if not (root / "config/config.yaml").exists() and os.environ.get("REPRO_DPADMM_ROOT"):
        raise ConfigError(f"REPRO_DPADMM_ROOT={os.environ['REPRO_DPADMM_ROOT']} has no config/config.yaml: it must "
                          "name the project's root (the checkout's top folder)")
    config = read_config_file(root / "config/config.yaml")
    for path in overrides:
        config = deep_merge(config, read_config_file(path))
    return validate(config, root)


def item_params(paper: str, item: str, *overrides: str | Path, root: Path | None = None) -> dict:
    """The parameters of one item as the workflow would pass them (plus the base seed)."""
    config = load(*overrides, root=root)
    try:
        params = config["papers"][paper][item]
    except KeyError:
        known = {p: list(v) for p, v in config["papers"].items()}
        raise ConfigError(f"no item {paper}/{item} in the config; known items: {known}") from None
    return {**params, "seed": config["seed"]}


def parse_json(text: str, what: str, *, finite: bool = False) -> dict:
    """A JSON object given on the command line, read within the limits of `safeload`; ConfigError naming the option
    if it is not one. finite=True refuses NaN and infinities here, for an option no schema checks afterwards."""
    try:   # as in read_config_file: the schema refuses NaN and infinity, naming the key
        value = safeload.loads_json(text, what, finite=finite, unique_keys=True)
    except safeload.LoadError as exc:
        if exc.problem.startswith("not valid JSON"):
            raise ConfigError(f"{what} is not valid JSON ({exc.problem.removeprefix('not valid JSON: ')})") from None
        raise ConfigError(str(exc)) from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what} must be a JSON object of keys, got {type(value).__name__}")
    return value


def check_item_params(paper: str, item: str, params: dict, root: Path | None = None) -> dict:
    """Validate an item's parameters given directly (`repro-dpadmm run --params`) by the config's own schema:
    the item's keys as `papers.<paper>.<item>.<key>`, the base seed as `seed`."""
    params = dict(params)
    cfg = {"seed": params.pop("seed", 0), "datasets": {}, "papers": {paper: {item: params}}}
    return validate(cfg, root)
