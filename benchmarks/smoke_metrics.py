"""Run the smoke DAG on a fresh copy of the workflow and collect every item's metrics.json into one file; or compare
two such files. Used to show that a refactoring or an optimisation keeps the numbers:

    python benchmarks/smoke_metrics.py run before.json          # on the old commit
    python benchmarks/smoke_metrics.py run after.json           # on the new one
    python benchmarks/smoke_metrics.py compare before.json after.json [--rtol 1e-10] [--strict]
    python benchmarks/smoke_metrics.py collect <project> part.json  # the items a project folder has results of
    python benchmarks/smoke_metrics.py compare before.json part.json --common   # only the items both have

Metrics measured in wall-clock time (keys naming a time, and the ratios of timings of Huang's Table II) differ from
run to run by nature and are listed apart, not compared. Needs REPRO_DPADMM_DATA_MIRROR.

Tolerances. A change to the numerics (a vectorised exponential, a solver's stopping test) may move a metric, but only
within what the metric rests on; `compare` reads those tolerances from `benchmarks/tolerances.yaml`:

* a metric with repeats (its mean and every repeat's value) may move by a fraction (`se_fraction`, 0.1) of the
  standard error of its mean over the repeats of the `before` run: a comparison decided beyond 2 standard errors
  cannot change side unless it was within that fraction of its boundary, and `compare` lists such cases;
* a metric that rests on an iterative solver may move by that solver's tolerance (a rule of the file names the keys,
  the tolerance and the solver it comes from);
* everything else (counts, strings, flags, closed-form numbers) by round-off only (`--rtol`, default 1e-10).

`compare` prints, per item, the largest move against its tolerance (`move/tol`, with the key), and exits 1 when any
move exceeds its tolerance or a non-numeric value (a status, a flag) changes. `--rtol 0` with `--strict` compares every
value at that relative tolerance and ignores the file (the old bit-for-bit check).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TRACKED = ("Snakefile", "workflow", "config", "notebooks", "envs", ".test")
# Metrics of wall-clock measurements: noisy by nature. Keys containing one of TIMED, and per item the keys containing
# one of TIMED_ITEMS (Huang Table II's ratios of timings and their intervals; R-ADMM's wall time of an update over
# ADMM's).
TIMED = ("time", "seconds", "timing", "speed", "_ms", "per_iter_s", "cpu_")
TIMED_ITEMS = {"huang2019_dpadmm/table2": ("ratio",), "zhang2018_radmm/fig1": ("over_admm",)}


def run(out: Path, cores: int) -> int:
    with tempfile.TemporaryDirectory(prefix="smoke-metrics-") as tmp:
        proj = Path(tmp) / "project"
        proj.mkdir()
        for name in TRACKED:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, proj / name)
        env = {**os.environ, "REPRO_DPADMM_OFFLINE": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(cores), "--keep-going",
                               "--set-threads", "item_notebook=1", "--configfile", ".test/config/config.yaml"],
                              cwd=proj, env=env, capture_output=True, text=True)
        collect(proj, out)
        print(f"snakemake exit {proc.returncode}")
        if proc.returncode:
            print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode


def collect(proj: Path, out: Path) -> int:
    metrics = {}
    for path in sorted((proj / "results").glob("*/*/metrics.json")):
        metrics[f"{path.parent.parent.name}/{path.parent.name}"] = json.loads(path.read_text())
    out.write_text(json.dumps(metrics, indent=1, sort_keys=True) + "\n")
    print(f"{len(metrics)} items -> {out}")
    return 0


def _timed(item: str, key: str) -> bool:
    bare = key.removeprefix("repeats[")
    return any(t in key.lower() for t in TIMED) or any(t in bare for t in TIMED_ITEMS.get(item, ()))


@dataclass(frozen=True)
class Rule:
    """A tolerance for the keys `keys` (a regular expression matched from the start of the key) of the items `items`
    (a glob): `rtol` (relative to the larger of the two values) and `atol` (absolute), or, with `se_fraction`, that
    fraction of the standard error over repeats (only for a metric with repeats). `why`: the solver or noise it
    rests on."""

    items: str
    keys: str
    why: str
    rtol: float = 0.0
    atol: float = 0.0
    se_fraction: float | None = None

    def matches(self, item: str, key: str) -> bool:
        return fnmatch.fnmatchcase(item, self.items) and re.match(self.keys, key) is not None


TOLERANCES = Path(__file__).with_name("tolerances.yaml")


def load_rules(path: Path = TOLERANCES) -> list[Rule]:
    """The rules of a tolerances file, in order (the first that matches a key decides); a rule without `why` or
    with an unknown field is an error naming it."""
    doc = yaml.safe_load(path.read_text()) or {}
    rules = []
    for i, r in enumerate(doc.get("rules", [])):
        unknown = set(r) - {"items", "keys", "why", "rtol", "atol", "se_fraction"}
        if unknown or not r.get("why") or "keys" not in r:
            raise ValueError(f"{path}: rule {i + 1} needs keys and why, and knows only items, keys, why, rtol, "
                             f"atol, se_fraction (got {sorted(r)})")
        rules.append(Rule(items=r.get("items", "*"), keys=r["keys"], why=r["why"], rtol=float(r.get("rtol", 0.0)),
                          atol=float(r.get("atol", 0.0)),
                          se_fraction=None if r.get("se_fraction") is None else float(r["se_fraction"])))
    return rules


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same(a, b) -> bool:
    if _number(a) and _number(b) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _standard_error(values) -> float | None:
    xs = [float(v) for v in values or [] if _number(v) and math.isfinite(v)]
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))


def tolerance(item: str, key: str, a: float, b: float, se: float | None, rules: list[Rule], rtol: float
              ) -> tuple[float, str]:
    """(the absolute tolerance of a move from a to b of metric `key`, the reason). `se`: the standard error of the
    metric's mean over repeats (None without repeats)."""
    scale = max(abs(a), abs(b))
    for rule in rules:
        if not rule.matches(item, key):
            continue
        if rule.se_fraction is not None:
            if se is None:
                continue
            return rule.se_fraction * se, rule.why
        return rule.atol + rule.rtol * scale, rule.why
    return rtol * scale, "round-off"


@dataclass
class Move:
    item: str
    key: str
    before: object
    after: object
    tol: float
    why: str

    @property
    def ratio(self) -> float:
        """The move against its tolerance (inf for a changed non-number or a move where none is allowed)."""
        if not (_number(self.before) and _number(self.after)):
            return 0.0 if _same(self.before, self.after) else math.inf
        if _same(self.before, self.after):
            return 0.0
        d = abs(float(self.after) - float(self.before))
        if math.isnan(d):
            return math.inf
        return d / self.tol if self.tol > 0 else (0.0 if d == 0 else math.inf)


def moves(item: str, ma: dict, mb: dict, rules: list[Rule], rtol: float) -> list[Move]:
    """Every value of one item, before and after, with its tolerance. The key of a repeat's value is
    `repeats[<key>][<i>]`; it has the tolerance of its metric's mean."""
    ma, mb = dict(ma), dict(mb)
    ra, rb = ma.pop("repeats", {}) or {}, mb.pop("repeats", {}) or {}
    ses = {k: _standard_error(v) for k, v in ra.items()}
    out = []

    def add(key, metric, x, y):
        tol, why = (tolerance(item, metric, float(x), float(y), ses.get(metric), rules, rtol)
                    if _number(x) and _number(y) else (0.0, "not a number"))
        out.append(Move(item, key, x, y, tol, why))

    for k in sorted(set(ma) | set(mb)):
        add(k, k, ma.get(k), mb.get(k))
    for k in sorted(set(ra) | set(rb)):
        xs, ys = ra.get(k, []), rb.get(k, [])
        for i in range(max(len(xs), len(ys))):
            add(f"repeats[{k}][{i}]", k, xs[i] if i < len(xs) else None, ys[i] if i < len(ys) else None)
    return out


def compare(before: Path, after: Path, rtol: float, common: bool = False, strict: bool = False,
            rules: list[Rule] | None = None) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    if common:
        a, b = {k: v for k, v in a.items() if k in b}, {k: v for k, v in b.items() if k in a}
    rules = [] if strict else (load_rules() if rules is None else rules)
    bad, timed, n, per_item = [], 0, 0, []
    for item in sorted(set(a) | set(b)):
        if item not in a or item not in b:
            bad.append(f"{item}: only in {'after' if item in b else 'before'}")
            continue
        ms = moves(item, a[item], b[item], rules, rtol)
        n += len(ms)
        is_clock = [_timed(item, m.key.removeprefix("repeats[").split("]")[0]) for m in ms]
        timed += sum(1 for m, c in zip(ms, is_clock) if c and m.ratio > 0)
        ms = [m for m, c in zip(ms, is_clock) if not c]
        worst = max(ms, key=lambda m: m.ratio, default=None)
        moved = sum(1 for m in ms if m.ratio > 0)
        per_item.append((item, worst, moved, len(ms)))
        bad += [f"{m.item}: {m.key}: {m.before!r} -> {m.after!r} (tolerance {m.tol:.3g}: {m.why})"
                for m in ms if m.ratio > 1]
    against = f"at rtol {rtol:g} only" if strict else f"against benchmarks/tolerances.yaml, else rtol {rtol:g}"
    print(f"{len(set(a) | set(b))} items, {n} values compared ({against}): {len(bad)} beyond their tolerance"
          f" (+ {timed} wall-clock timings that moved, not compared)")
    print(f"{'item':44s} {'moved':>11s} {'largest move/tol':>17s}  key")
    for item, worst, moved, total in per_item:
        r = 0.0 if worst is None else worst.ratio
        print(f"{item:44s} {moved:5d}/{total:<5d} {r:17.3g}  {'' if not r else worst.key + ' (' + worst.why + ')'}")
    for line in bad[:200]:
        print("  BEYOND", line)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--cores", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--rtol", type=float, default=1e-10)
    c.add_argument("--common", action="store_true", help="compare only the items both files have")
    c.add_argument("--strict", action="store_true", help="every value at --rtol, no tolerances file")
    k = sub.add_parser("collect")
    k.add_argument("project", type=Path)
    k.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return run(args.out, args.cores)
    if args.cmd == "collect":
        return collect(args.project, args.out)
    return compare(args.before, args.after, args.rtol, args.common, args.strict)


if __name__ == "__main__":
    sys.exit(main())
