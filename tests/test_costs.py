"""The cost table from Snakemake benchmark TSVs."""

from __future__ import annotations

from pathlib import Path

from repro_dpadmm.costs import END, START, collect, main, table

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def tsv(path: Path, s: float, rss: str = "100.0", cpu: str = "1.0") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{s}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")


def test_table_sums_jobs_into_their_item_and_totals(tmp_path):
    b = tmp_path / "benchmarks"
    tsv(b / "datasets/a9a.tsv", 10, "300.5", "8")
    tsv(b / "datasets/adult.tsv", 20, "200", "NA")
    tsv(b / "huang2019_dpadmm/fig1.tsv", 240, "900", "400")
    tsv(b / "beyond/frontier.tsv", 5, "150", "4")
    tsv(b / "beyond/frontier/huang_dpadmm/eps0.1.tsv", 60, "1200", "55")
    tsv(b / "beyond/frontier/floor/nonprivate.tsv", 30, "800", "25")
    tsv(b / "report.tsv", 3, "-", "2")
    rows = {c.name: c for c in collect(b)}
    assert rows["datasets (download, verify, preprocess)"].wall_s == 30
    frontier = rows["beyond/frontier (with its 2 jobs)"]
    assert (frontier.wall_s, frontier.max_rss_mb, frontier.jobs) == (95, 1200, 3)
    assert rows["report"].max_rss_mb is None  # "-": not measured, not zero
    text = table(list(rows.values()))
    assert "| huang2019_dpadmm/fig1 | 4.0 min | 900 MB |" in text
    assert "| **total** (one job after another) | 6.1 min | 1200 MB |" in text


def test_update_rewrites_only_between_the_markers(tmp_path):
    tsv(tmp_path / "b/huang2019_dpadmm/fig1.tsv", 12)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{START}\nold table\n{END}\nrest\n")
    assert main(["--benchmarks", str(tmp_path / "b"), "--update", str(readme), "--note", "2 cores"]) == 0
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith(f"{END}\nrest\n") and "old table" not in text
    assert "| huang2019_dpadmm/fig1 | 12 s |" in text and "2 cores" in text
