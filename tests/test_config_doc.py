"""config/README.md is generated from the config schema and kept up to date."""

from __future__ import annotations

from pathlib import Path

import yaml

from repro_dpadmm.config_doc import main, render

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
    assert "7 keys; 4 without a description" in text


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
