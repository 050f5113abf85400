"""A bad config is rejected, with the offending key named, before any work starts."""

import subprocess
import sys

import pytest
import yaml

from repro_dpadmm import config
from repro_dpadmm.rng import repeat_generators


def test_default_and_smoke_configs_are_valid():
    cfg = config.load()
    assert set(cfg["papers"]) >= {"huang2019_dpadmm", "hu2020_sharing", "zhang2018_madmm", "zhang2018_radmm",
                                  "xu2020_dpaccadmm"}
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
