"""A bad config is rejected, with the offending key named, before any work starts."""

import subprocess
import sys

import pytest
import yaml

from repro_dpadmm import config, registry
from repro_dpadmm.rng import repeat_generators


def test_default_and_smoke_configs_are_valid():
    cfg = config.load()
    assert set(cfg["papers"]) == set(registry.paper_ids())
    config.load("config/smoke.yaml")


@pytest.mark.parametrize("patch, key", [
    ({"seed": -1}, "seed"),
    ({"datasets": {"adult_huang2019": {"row_normalisation": "l1"}}}, "datasets.adult_huang2019"),
    ({"datasets": {"mnist": {}}}, "datasets"),
    ({"papers": {"nobody2020": {}}}, "papers"),
])
def test_bad_values_are_rejected_with_the_key(patch, key):
    cfg = config.deep_merge(config.load(), patch)
    with pytest.raises(config.ConfigError) as exc:
        config.validate(cfg)
    assert key in str(exc.value)


def test_item_level_checks_reject_negative_repeats_and_unknown_datasets():
    base = config.load()
    for bad in ({"repeats": -3}, {"datasets": ["imagenet"]}):
        cfg = config.deep_merge(base, {"papers": {"huang2019_dpadmm": {"some_item": bad}}})
        with pytest.raises(config.ConfigError, match="papers.huang2019_dpadmm.some_item"):
            config.validate(cfg)


def test_snakemake_rejects_a_bad_config_before_running_anything(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"seed": -5}))
    run = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(bad)],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "seed" in (run.stdout + run.stderr) and "-5" in (run.stdout + run.stderr)


def test_repeat_generators_are_reproducible_and_independent():
    a = [g.standard_normal(5) for g in repeat_generators(7, 3, "item")]
    b = [g.standard_normal(5) for g in repeat_generators(7, 3, "item")]
    c = [g.standard_normal(5) for g in repeat_generators(7, 3, "other")]
    assert all((x == y).all() for x, y in zip(a, b))
    assert not (a[0] == a[1]).all() and not (a[0] == c[0]).all()
    # the r-th generator does not depend on how many repeats were asked for
    assert (repeat_generators(7, 5, "item")[2].standard_normal(5) == a[2]).all()
    with pytest.raises(ValueError):
        repeat_generators(-1, 2)


def _item_keys():
    cfg = config.load()
    return [(p, i, k) for p, items in cfg["papers"].items() for i, params in items.items() for k in params]


def test_jsonschema_itself_names_the_offending_key_for_every_item_key():
    """What Snakemake shows is jsonschema's best_match: for a bad value under any key of any item it must point at
    that key (per-item objects use $ref + their own properties, so no valid key is reported as 'unevaluated')."""
    import jsonschema

    cfg, sch = config.load(), config.schema()
    validator = jsonschema.Draft202012Validator(sch)
    wrong = []
    for paper, item, key in _item_keys():
        params = {**cfg["papers"][paper][item], key: {"not_a_key": "x"}}
        err = jsonschema.exceptions.best_match(validator.iter_errors(
            {"seed": 0, "datasets": {}, "papers": {paper: {item: params}}}))
        if err is None or list(err.absolute_path)[:4] != ["papers", paper, item, key]:
            wrong.append(f"{paper}.{item}.{key}: {list(err.absolute_path) if err else 'accepted'}")
    assert not wrong, wrong


def test_strings_where_the_schema_wants_numbers_become_numbers():
    """What Snakemake's --config gives for nested values: strings. They become the value they spell where the
    schema wants a number, integer, boolean or list; a string field and an unparsable value stay as they are."""
    base = config.load()
    given = config.deep_merge(base, {"seed": "3", "data_mirror": "123", "papers": {
        "zhang2018_radmm": {"fig3": {"q": "1.02", "iterations": "5"}},
        "huang2019_dpadmm": {"fig3": {"epsilons": ["0.1", "1e-2"], "admm": {"tol": "1e-6"}, "repeats": "x"}}}})
    got = config.coerce_strings(given)
    assert got["seed"] == 3 and got["data_mirror"] == "123"
    assert got["papers"]["zhang2018_radmm"]["fig3"]["q"] == 1.02
    assert got["papers"]["zhang2018_radmm"]["fig3"]["iterations"] == 5
    huang = got["papers"]["huang2019_dpadmm"]["fig3"]
    assert huang["epsilons"] == [0.1, 0.01] and huang["admm"]["tol"] == 1e-6
    assert huang["repeats"] == "x"  # left for the validation to name
    assert any("papers.huang2019_dpadmm.fig3.repeats" in e for e in config.errors(got))


def test_a_misspelt_key_is_one_line_with_did_you_mean():
    bad = config.deep_merge(config.load(), {"papers": {"huang2019_dpadmm": {"fig3": {"repeatz": 2}}}})
    (msg,) = config.errors(bad)
    assert msg.startswith("papers.huang2019_dpadmm.fig3.repeatz: unknown key (did you mean 'repeats'?)")


def test_an_integer_beyond_64_bits_from_any_path_is_named_by_the_config_check():
    """A `--config seed=<23 digits>` reaches the workflow as a Python int the schema accepts; every job's --params
    would refuse it, so the config check names it first."""
    from repro_dpadmm.config import errors, load

    cfg = load()
    cfg["seed"] = 10**22
    assert any(m.startswith("seed: the integer 100000000000... (23 digits) is outside the 64-bit range")
               for m in errors(cfg))
