"""Load, merge and validate the workflow configuration outside Snakemake (notebooks, CLI, tests)."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import yaml

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


def schema(root: Path | None = None) -> dict:
    return yaml.safe_load(((root or project_root()) / "workflow/schemas/config.schema.yaml").read_text())


def validate(config: dict, root: Path | None = None) -> dict:
    """Raise ConfigError naming the offending key and value if `config` violates the schema."""
    validator = jsonschema.Draft202012Validator(schema(root))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  {'.'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}" for e in errors[:10]]
        raise ConfigError("invalid configuration:\n" + "\n".join(lines))
    return config


def load(*overrides: str | Path, root: Path | None = None) -> dict:
    """config/config.yaml merged with each override file in turn, validated."""
    root = root or project_root()
    config = yaml.safe_load((root / "config/config.yaml").read_text())
    for path in overrides:
        config = deep_merge(config, yaml.safe_load(Path(path).read_text()) or {})
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
