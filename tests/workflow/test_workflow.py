"""The Snakemake workflow: lint, dry-run on a fresh copy, and the whole DAG on the smoke config."""

import json

import pytest
import yaml
from conftest import ROOT, fresh_copy, snakemake

pytestmark = pytest.mark.workflow


def test_lint_is_clean():
    proc = snakemake(["--lint"], ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dry_run_on_fresh_copy(tmp_path):
    proj = fresh_copy(tmp_path / "project")
    proc = snakemake(["-n", "--cores", "2"], proj)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "report" in proc.stdout and "dataset" in proc.stdout


def _mirror_lists(mirror):
    """The relative paths the mirror says it holds (MANIFEST.tsv: canonical bytes; REBUILT.tsv: a rebuild whose
    checksum is ours, never pinned) and the ones it says it lacks (MISSING.tsv)."""
    def paths(name):
        table = mirror / name
        if not table.is_file():
            return set()
        rows = table.read_text().splitlines()[1:]          # first line: the column names
        return {row.split("\t", 1)[0] for row in rows if row.strip()}

    return paths("MANIFEST.tsv") | paths("REBUILT.tsv"), paths("MISSING.tsv")


def test_datasets_built_from_mirror_and_unavailable_ones_recorded(smoke_project, mirror):
    """Which datasets build is what the mirror's own lists say it holds, not a list of names written here."""
    from repro_dpadmm.datasets.registry import DATASETS

    if "://" in str(mirror):
        pytest.skip("the mirror is a URL: its lists are not readable as files")
    held, missing = _mirror_lists(mirror)
    assert held and not held & missing, (held, missing)
    proj, _ = smoke_project
    processed = proj / "resources/processed"
    built, lacking = [], []
    for name, ds in DATASETS.items():
        meta = json.loads((processed / f"{name}.json").read_text())
        if set(ds.raw) <= held:
            assert meta["available"] and (processed / f"{name}.npz").is_file(), (name, meta)
            built.append(name)
        else:
            assert set(ds.raw) & missing, f"{name}: its files {ds.raw} are in none of the mirror's lists"
            assert meta["available"] is False and "could not obtain" in meta["reason"], (name, meta)
            assert (proj / f"logs/datasets/{name}.log").read_text().strip(), name
            lacking.append(name)
    assert built and lacking == [n for n in DATASETS if n not in built]
    for rel in sorted(held & {f for ds in DATASETS.values() for f in ds.raw}):
        assert (proj / "resources/raw" / rel).is_file(), rel


def smoke_items():
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    return [(p, i) for p, items in cfg["papers"].items() for i in items]


@pytest.mark.parametrize("paper, item", smoke_items())
def test_every_item_runs_end_to_end_on_smoke_config(smoke_project, paper, item):
    proj, proc = smoke_project
    out = proj / "results" / paper / item
    log = proj / "logs" / paper / f"{item}.log"
    assert (out / "metrics.json").is_file(), (log.read_text() if log.exists() else proc.stderr[-3000:])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] in {"ok", "not run"}, metrics
    if metrics["status"] == "not run":
        assert "dataset unavailable" in metrics["reason"]
    assert (out / f"{item}.html").stat().st_size > 0


def test_split_items_ran_their_parts_as_jobs_and_the_notebook_only_combined_them(smoke_project):
    proj, _ = smoke_project
    split = ("huang2019_dpadmm", "fig6")
    part_files = sorted((proj / "results" / split[0] / split[1] / "parts").glob("*.pkl"))
    # ADMM, 7 (eps, delta) settings, DVP at 4 eps, and DPSGD's learning-rate sweep at each of the 7 settings
    assert len(part_files) == 19, part_files
    assert all((proj / "logs" / split[0] / split[1] / f"{p.stem}.log").is_file() for p in part_files)
    for paper, item in smoke_items():  # no notebook recomputed a part the DAG had run
        log = proj / "logs" / paper / f"{item}.log"
        assert "computing part" not in (log.read_text() if log.exists() else ""), log


def test_whole_smoke_dag_succeeds_and_ends_in_the_report(smoke_project):
    proj, proc = smoke_project
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert (proj / "results/report/index.html").is_file()
    assert (proj / "results/report/claims.json").is_file()


def test_claims_match_what_the_smoke_items_write(smoke_project):
    """Every claim names an existing item and metric keys that item really writes (on the smoke outputs)."""
    from repro_dpadmm.report.audit import audit

    proj, _ = smoke_project
    result = audit(ROOT / "config/claims", proj / "results", proj / "resources/processed")
    assert result.ok, "\n".join(result.problems)
    assert result.checked > 0


def test_nested_config_values_are_read_as_the_schema_types_and_typos_get_did_you_mean(tmp_path):
    """`--config` reads nested values as strings ('1.02'); the workflow turns them into the numbers the schema asks
    for before validating, and a misspelt key is named with its likely meaning."""
    proj = fresh_copy(tmp_path / "project")
    proc = snakemake(["-n", "--cores", "1", "zhang2018_radmm_fig3", "--config",
                      "papers={zhang2018_radmm: {fig3: {q: 1.02, repeats: 3, graph: {kind: five_node}}}}"], proj)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = snakemake(["-n", "--cores", "1", "zhang2018_radmm_fig3", "--config",
                      "papers={zhang2018_radmm: {fig3: {qq: 1.02}}}"], proj)
    assert proc.returncode != 0
    assert "papers.zhang2018_radmm.fig3.qq: unknown key (did you mean 'q'?)" in proc.stdout + proc.stderr


def test_a_data_mirror_naming_no_folder_here_is_a_config_error_not_a_traceback(tmp_path):
    proj = fresh_copy(tmp_path / "project")
    proc = snakemake(["-n", "--cores", "1", "--config", "data_mirror=file://evilhost/x"], proj,
                     env={"REPRO_DPADMM_DATA_MIRROR": ""})   # the variable would win over the config key
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "data_mirror file://evilhost/x: a file:// address names a folder" in out, out
    assert "Traceback" not in out and "InputFunctionException" not in out, out


def test_the_dataset_rule_passes_a_mirror_only_from_the_config_key(tmp_path):
    """An empty `--mirror` is an error: with no mirror the rule passes none; the environment's mirror is inherited,
    never written into the command line (a user:password in it would be printed); the config key's is passed."""
    proj = fresh_copy(tmp_path / "project")
    target = "resources/processed/a8a.json"
    runs = {"none": ({"REPRO_DPADMM_DATA_MIRROR": ""}, []),
            "env": ({"REPRO_DPADMM_DATA_MIRROR": "https://u:secret@example.org/m"}, []),
            "config": ({"REPRO_DPADMM_DATA_MIRROR": ""}, ["--config", "data_mirror=/srv/mirror"])}
    for name, (env, extra) in runs.items():
        proc = snakemake(["-n", "-p", "--cores", "1", target, *extra], proj, env=env)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        line = next(x for x in out.splitlines() if "repro-dpadmm data build a8a" in x)
        assert ("--mirror=/srv/mirror" in line) if name == "config" else ("--mirror" not in line), (name, line)
        assert "secret" not in out
