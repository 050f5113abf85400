"""What each item costs: the Snakemake `benchmark:` TSVs of a run (logs/benchmarks/, also in a results bundle) as
one table of wall time and peak memory per item, for the README and for anyone planning a run.

The TSVs' CPU time is left out: Snakemake samples it from the process tree every few seconds, which misses most of a
short job's notebook kernel (a 44 s smoke item showed 3 s), so it would understate what a job costs.

    python -m repro_dpadmm.costs                       # print the table of logs/benchmarks/
    python -m repro_dpadmm.costs --update README.md    # replace the table between the README's cost markers
    python -m repro_dpadmm.costs --benchmarks <unpacked bundle>/logs/benchmarks

Layout read (the rules' `benchmark:` paths): `<paper>/<item>.tsv` per item, `beyond/frontier/<method>/<level>.tsv`
per frontier job and `<paper>/<item>/<part>.tsv` per part of a split item (each summed into its item's
row), `datasets/<name>.tsv` (summed), `report.tsv`.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

START, END = "<!-- costs:start -->", "<!-- costs:end -->"


@dataclass
class Cost:
    name: str
    wall_s: float
    max_rss_mb: float | None
    jobs: int = 1


def _num(value: str | None) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):  # "NA" / "-": not measured (e.g. a job too short to sample)
        return None


def read_tsv(path: Path) -> Cost:
    """One benchmark TSV (the last row if the job was benchmarked repeatedly)."""
    rows = list(csv.DictReader(path.open(), delimiter="\t"))
    if not rows:
        raise ValueError(f"{path}: empty benchmark file")
    row = rows[-1]
    wall = _num(row.get("s"))
    if wall is None:
        raise ValueError(f"{path}: no wall time (column s)")
    return Cost(path.stem, wall, _num(row.get("max_rss")))


def _sum(name: str, costs: list[Cost]) -> Cost:
    rss = [c.max_rss_mb for c in costs if c.max_rss_mb is not None]
    return Cost(name, sum(c.wall_s for c in costs), max(rss) if rss else None, sum(c.jobs for c in costs))


def collect(benchmarks: Path) -> list[Cost]:
    """Rows in order: datasets, each item (paper/item; the frontier with its jobs), the report."""
    rows = []
    datasets = sorted((benchmarks / "datasets").glob("*.tsv"))
    if datasets:
        rows.append(_sum("datasets (download, verify, preprocess)", [read_tsv(p) for p in datasets]))
    for paper in sorted(p for p in benchmarks.iterdir() if p.is_dir() and p.name != "datasets"):
        for tsv in sorted(paper.glob("*.tsv")):
            cost = read_tsv(tsv)
            cost.name = f"{paper.name}/{tsv.stem}"
            jobs_dir = paper / tsv.stem
            jobs = [read_tsv(p) for p in sorted(jobs_dir.rglob("*.tsv"))] if jobs_dir.is_dir() else []
            if jobs:  # an item that aggregates separate jobs (the frontier): its cost includes theirs
                cost = _sum(f"{cost.name} (with its {len(jobs)} jobs)", [cost, *jobs])
            rows.append(cost)
    if (benchmarks / "report.tsv").is_file():
        report = read_tsv(benchmarks / "report.tsv")
        report.name = "report"
        rows.append(report)
    return rows


def _fmt_time(s: float | None) -> str:
    if s is None:
        return "–"
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"


def table(rows: list[Cost]) -> str:
    """Markdown table with a total row."""
    lines = ["| item | wall time | peak memory |", "|---|---:|---:|"]
    for c in [*rows, _sum("**total** (one job after another)", rows)] if rows else []:
        mem = f"{c.max_rss_mb:.0f} MB" if c.max_rss_mb is not None else "–"
        lines.append(f"| {c.name} | {_fmt_time(c.wall_s)} | {mem} |")
    return "\n".join(lines)


def expected_seconds(paper: str, item: str, readme: Path) -> float | None:
    """The item's wall time at paper settings from the README's cost table (None when the table has no plain row
    for it: an item whose row includes separate jobs only combines them in its notebook)."""
    try:
        doc = readme.read_text()
    except OSError:
        return None
    if START not in doc or END not in doc:
        return None
    for line in doc.split(START, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] == f"{paper}/{item}":
            number, _, unit = cells[1].partition(" ")
            try:
                return float(number) * {"s": 1.0, "min": 60.0, "h": 3600.0}[unit]
            except (ValueError, KeyError):
                return None
    return None


def update(readme: Path, text: str, start: str = START, end: str = END) -> None:
    """Replace what stands between the file's `start` and `end` markers (the cost table's by default) with `text`."""
    doc = readme.read_text()
    if start not in doc or end not in doc:
        raise ValueError(f"{readme} has no {start} ... {end} markers")
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{text}\n{end}{tail}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m repro_dpadmm.costs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmarks", default="logs/benchmarks",
                    help="folder of benchmark TSVs (default logs/benchmarks)")
    ap.add_argument("--note", default="", help="a line printed under the table (e.g. the run's settings and machine)")
    ap.add_argument("--update", default=None, metavar="README.md",
                    help="write the table between the file's costs markers instead of printing it")
    args = ap.parse_args(argv)
    bench = Path(args.benchmarks)
    if not bench.is_dir():
        print(f"no benchmark folder {bench}: run the workflow first", file=sys.stderr)
        return 2
    text = table(collect(bench)) + (f"\n\n{args.note}" if args.note else "")
    if args.update:
        update(Path(args.update), text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
