"""config/README.md is generated from the config schema and kept up to date; every key has a meaning there, which the
notebooks' parameter tables and the report read (parameter_descriptions, key_description)."""

from __future__ import annotations

from pathlib import Path

import yaml

from repro_dpadmm import config
from repro_dpadmm.config_doc import key_description, main, parameter_descriptions, render

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["seed"],
    "properties": {
        "seed": {"type": "integer", "minimum": 0, "description": "base seed"},
        "papers": {"type": "object", "properties": {"p": {"$ref": "#/$defs/p"}},
                   "additionalProperties": {"$ref": "#/$defs/item"}},
    },
    "$defs": {
        "item": {"type": "object", "properties": {"repeats": {"type": "integer", "minimum": 1}}},
        "p": {"allOf": [{"$ref": "#/$defs/item"},
                        {"type": "object", "required": ["reg"],
                         "properties": {"reg": {"enum": ["l1", "l2"], "default": "l1",
                                                "description": "[D] regulariser | choice"}}}]},
    },
}


def project(root: Path, schema: dict) -> Path:
    (root / "workflow/schemas").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "Snakefile").write_text("")
    (root / "workflow/schemas/config.schema.yaml").write_text(yaml.safe_dump(schema))
    return root


def test_every_key_is_a_row_with_type_default_and_description(tmp_path):
    text = render(project(tmp_path, SCHEMA))
    assert "| `seed` | integer (>= 0) | yes |  | base seed |" in text
    assert "| `papers.p.reg` | one of `\"l1\"`, `\"l2\"` | yes | `\"l1\"` | [D] regulariser \\| choice |" in text
    assert "| `papers.p.repeats` | integer (>= 1) |  |  | – |" in text     # from the allOf'd $ref
    assert "| `papers.<other>.repeats` |" in text                          # additionalProperties
    assert "7 keys; 5 without a description" in text


# An item schema as the project writes them: a $ref to the keys its paper's items share plus its own keys, nested
# objects, names given by a pattern or free (additionalProperties), a oneOf of objects, and a description at the
# place of reference.
ITEMS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "seed": {"type": "integer", "description": "base seed"},
        "papers": {"type": "object", "properties": {"p": {"$ref": "#/$defs/p"}}},
    },
    "$defs": {
        "p": {"type": "object", "properties": {"fig1": {"$ref": "#/$defs/fig1", "description": "Fig. 1"}}},
        "common": {"type": "object", "required": ["noise_on"],
                   "properties": {"noise_on": {"enum": ["a", "b"], "description": "where the noise goes"}}},
        "q": {"type": "number", "description": "a growth factor"},
        "fig1": {
            "$ref": "#/$defs/common", "unevaluatedProperties": False, "required": ["panels"],
            "properties": {
                "panels": {"type": "object", "description": "one panel per dataset",
                           "patternProperties": {"^(a9a|gisette)$": {
                               "type": "object", "description": "a panel",
                               "properties": {"read_at": {"type": "integer", "description": "when to read"}}}}},
                "curves": {"type": "object", "description": "named curves",
                           "additionalProperties": {"type": "object", "description": "one curve",
                                                    "properties": {"q1": {"$ref": "#/$defs/q"}}}},
                "graph": {"description": "the network",
                          "oneOf": [{"type": "object", "required": ["kind"],
                                     "properties": {"kind": {"const": "ring", "description": "topology"}}},
                                    {"type": "object", "required": ["kind", "nodes"],
                                     "properties": {"kind": {"const": "random", "description": "or random"},
                                                    "nodes": {"type": "integer", "description": "N"}}}]},
            }},
    },
}


def test_an_item_shows_its_shared_keys_and_every_nested_key(tmp_path):
    """A $ref'd item schema with its own properties keeps the referenced ones (noise_on was lost before), and keys
    under patternProperties, additionalProperties and oneOf branches are rows too."""
    root = project(tmp_path, ITEMS)
    text = render(root)
    for row in ("| `papers.p.fig1` | object |  |  | Fig. 1 |",
                "| `papers.p.fig1.noise_on` | one of `\"a\"`, `\"b\"` | yes |  | where the noise goes |",
                "| `papers.p.fig1.panels.<a9a|gisette>.read_at` | integer |  |  | when to read |",
                "| `papers.p.fig1.curves.<other>.q1` | number |  |  | a growth factor |",
                "| `papers.p.fig1.graph.kind` | `\"ring\"` or `\"random\"` | yes |  | topology; or random |",
                "| `papers.p.fig1.graph.nodes` | integer |  |  | N |"):
        assert row.replace("|gisette", "\\|gisette") in text, row
    assert parameter_descriptions("p", "fig1", root) == {
        "noise_on": "where the noise goes", "panels": "one panel per dataset", "panels.<a9a|gisette>": "a panel",
        "panels.<a9a|gisette>.read_at": "when to read", "curves": "named curves", "curves.<other>": "one curve",
        "curves.<other>.q1": "a growth factor", "graph": "the network", "graph.kind": "topology; or random", "graph.nodes": "N",
        "seed": "base seed"}
    assert key_description("p", "fig1", ["panels", "gisette", "read_at"], root) == "when to read"
    assert key_description("p", "fig1", ["curves", "blue", "q1"], root) == "a growth factor"
    assert key_description("p", "fig1", ["graph", "nodes"], root) == "N"
    assert key_description("p", "fig1", ["graph", "kind"], root) == "topology; or random"
    assert key_description("p", "fig1", ["seed"], root) == "base seed"
    assert key_description("p", "fig1", ["nope"], root) == ""


def _paths(value, prefix=()):
    """Every key path of a parameter mapping, nested keys included."""
    for key, sub in value.items():
        yield (*prefix, key)
        if isinstance(sub, dict):
            yield from _paths(sub, (*prefix, key))


def test_every_schema_key_has_a_description():
    text = render()
    missing = [line.split("|")[1].strip() for line in text.splitlines()
               if line.startswith("| `") and line.rstrip().endswith("| – |")]
    assert not missing, f"{len(missing)} keys of workflow/schemas/config.schema.yaml lack a description: {missing}"
    assert " 0 without a description" in text


def test_every_parameter_of_every_item_has_a_meaning():
    """What the notebooks' parameter tables and the report show: a meaning for each key of each item of the config
    (and of the smoke config), nested keys included."""
    lacking = []
    for cfg in (config.load(), config.load("config/smoke.yaml")):
        for paper, items in cfg["papers"].items():
            for item, params in items.items():
                top = parameter_descriptions(paper, item)
                lacking += [f"{paper}.{item}.{k}" for k in [*params, "seed"] if not top.get(k)]
                lacking += [f"{paper}.{item}.{'.'.join(path)}" for path in _paths(params)
                            if not key_description(paper, item, path)]
    assert not lacking, f"parameters without a meaning: {sorted(set(lacking))}"


def test_check_fails_when_the_schema_changed(tmp_path, monkeypatch):
    root = project(tmp_path, SCHEMA)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    assert main([]) == 0 and main(["--check"]) == 0
    SCHEMA2 = {**SCHEMA, "properties": {**SCHEMA["properties"], "seed": {"type": "integer", "description": "new"}}}
    (root / "workflow/schemas/config.schema.yaml").write_text(yaml.safe_dump(SCHEMA2))
    assert main(["--check"]) == 1


def test_config_readme_is_up_to_date_with_the_schema():
    """Fails when workflow/schemas/config.schema.yaml changed without `python -m repro_dpadmm.config_doc`."""
    assert main(["--check"]) == 0
