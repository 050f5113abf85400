"""benchmarks/smoke_metrics.py compare: per-key tolerances from a rules file, the largest move per item."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("smoke_metrics", ROOT / "benchmarks" / "smoke_metrics.py")
sm = importlib.util.module_from_spec(_spec)
sys.modules["smoke_metrics"] = sm   # its dataclasses look their module up while they are made
_spec.loader.exec_module(sm)


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def test_the_projects_rules_file_loads_and_every_rule_says_why():
    rules = sm.load_rules()
    assert rules and all(r.why for r in rules)


def test_a_rule_without_why_or_with_an_unknown_field_is_an_error(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("rules:\n  - keys: '.*'\n    rtol: 1e-6\n")
    with pytest.raises(ValueError, match="needs keys and why"):
        sm.load_rules(bad)
    bad.write_text("rules:\n  - keys: '.*'\n    why: x\n    rtoll: 1e-6\n")
    with pytest.raises(ValueError, match="rtoll"):
        sm.load_rules(bad)


def test_a_metric_with_repeats_may_move_a_fraction_of_its_standard_error(tmp_path, capsys):
    reps = [1.0, 2.0, 3.0, 4.0]                     # sd 1.29, se 0.645 -> tolerance 0.0645 at fraction 0.1
    rules = [sm.Rule(items="*", keys=".*", why="se", se_fraction=0.1)]
    before = _write(tmp_path, "a.json", {"p/i": {"m": 2.5, "repeats": {"m": reps}}})
    inside = _write(tmp_path, "b.json", {"p/i": {"m": 2.56, "repeats": {"m": [r + 0.06 for r in reps]}}})
    outside = _write(tmp_path, "c.json", {"p/i": {"m": 2.57, "repeats": {"m": reps}}})
    assert sm.compare(before, inside, 1e-10, rules=rules) == 0
    out = capsys.readouterr().out
    assert "p/i" in out and "0.93" in out          # 0.06 / 0.0645: the largest move against its tolerance
    assert sm.compare(before, outside, 1e-10, rules=rules) == 1
    assert "BEYOND p/i: m: 2.5 -> 2.57" in capsys.readouterr().out


def test_a_metric_without_repeats_moves_by_round_off_only_unless_a_rule_names_it(tmp_path):
    before = _write(tmp_path, "a.json", {"p/i": {"solver.obj": 1.0, "closed": 2.0}})
    after = _write(tmp_path, "b.json", {"p/i": {"solver.obj": 1.0 + 5e-7, "closed": 2.0}})
    se_only = [sm.Rule(items="*", keys=".*", why="se", se_fraction=0.1)]
    solver = [sm.Rule(items="p/*", keys=r"solver\.", why="Newton tolerance 1e-6", rtol=1e-6)] + se_only
    assert sm.compare(before, after, 1e-10, rules=se_only) == 1   # the se rule needs repeats: round-off decides
    assert sm.compare(before, after, 1e-10, rules=solver) == 0
    assert sm.compare(before, after, 1e-10, rules=[sm.Rule(items="q/*", keys=r"solver\.", why="x", rtol=1e-6)]) == 1


def test_a_changed_flag_or_status_is_always_beyond_tolerance(tmp_path):
    rules = [sm.Rule(items="*", keys=".*", why="anything", rtol=1.0)]
    before = _write(tmp_path, "a.json", {"p/i": {"ok": True, "status": "ok"}})
    assert sm.compare(before, _write(tmp_path, "b.json", {"p/i": {"ok": False, "status": "ok"}}), 1e-10,
                      rules=rules) == 1
    assert sm.compare(before, _write(tmp_path, "c.json", {"p/i": {"ok": True, "status": "not run"}}), 1e-10,
                      rules=rules) == 1
    assert sm.compare(before, before, 1e-10, rules=rules) == 0


def test_wall_clock_metrics_are_not_compared(tmp_path):
    before = _write(tmp_path, "a.json", {"p/i": {"wall_time_s": 1.0}})
    after = _write(tmp_path, "b.json", {"p/i": {"wall_time_s": 9.0}})
    assert sm.compare(before, after, 1e-10, rules=[]) == 0


def test_strict_ignores_the_rules(tmp_path):
    before = _write(tmp_path, "a.json", {"p/i": {"m": 1.0}})
    after = _write(tmp_path, "b.json", {"p/i": {"m": 1.0 + 1e-8}})
    loose = [sm.Rule(items="*", keys=".*", why="x", rtol=1e-6)]
    assert sm.compare(before, after, 1e-10, rules=loose) == 0
    assert sm.compare(before, after, 1e-10, strict=True, rules=loose) == 1
