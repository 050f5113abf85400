# Shared helpers for the rules: which items exist, their parameters, their inputs and outputs. The papers, their
# items and each item's notebook come from the registry (repro_dpadmm.registry); the config gives their parameters.
import functools
import json
from pathlib import Path

from repro_dpadmm import registry


def items_of(paper):
    """Item ids of a paper, in config order."""
    return list(config["papers"].get(paper, {}))


def item_config(paper, item):
    return config["papers"][paper][item]


def item_notebook_file(wildcards):
    return registry.notebook_path(wildcards.paper, wildcards.item)


def item_outputs(paper, item):
    return [f"results/{paper}/{item}/{item}.html", f"results/{paper}/{item}/metrics.json"]


def paper_outputs(paper):
    return [out for item in items_of(paper) for out in item_outputs(paper, item)]


def all_item_outputs():
    return [out for paper in config["papers"] for out in paper_outputs(paper)]


@functools.cache
def dataset_attempt(name):
    """The source state that decides whether rule dataset runs again (see datasets.smk and
    repro_dpadmm.datasets.attempt); the mirror in force is REPRO_DPADMM_DATA_MIRROR, else the config key."""
    from repro_dpadmm.datasets import attempt
    from repro_dpadmm.datasets.fetch import resolve_mirror

    return attempt(name, resolve_mirror(None, config.get("data_mirror")), root=Path.cwd())


def dataset_mirror_arg():
    """`--mirror=...` for `repro-dpadmm data build` when the mirror in force is the config key's; nothing when it is
    REPRO_DPADMM_DATA_MIRROR's (the job inherits the variable, so a mirror's user:password never appears in a
    command line Snakemake prints) or there is none (an empty `--mirror` is an error)."""
    import os
    import shlex

    from repro_dpadmm.datasets.fetch import MIRROR_ENV

    if os.environ.get(MIRROR_ENV) or not config.get("data_mirror"):
        return ""
    return f"--mirror={shlex.quote(str(config['data_mirror']))}"


def item_dataset_records(wildcards):
    names = item_config(wildcards.paper, wildcards.item).get("datasets", [])
    return [f"resources/processed/{name}.json" for name in names]


# beyond/frontier runs a method's jobs several to a process (rules frontier_jobs_<k> in beyond.smk, `jobs_per_run`;
# ZKL's methods as one job per group of `lane_levels` levels, each level with its noise-free run, as lanes of one run:
# the rules frontier_job_lanes_<k>).
def frontier_jobs():
    """(method, level) of every job of beyond/frontier; levels named as repro_dpadmm's level_key (0.1 -> eps0.1)."""
    if "frontier" not in config["papers"].get("beyond", {}):
        return []
    from repro_dpadmm.experiments.beyond_frontier import jobs_of  # the grid, noiseless runs and floor, as the item reads them

    return jobs_of(item_config("beyond", "frontier"))


def frontier_lane_groups():
    """The frontier's levels in the groups a ZKL method's lanes jobs run, `lane_levels` of them per job: dealt out
    from the lowest level to the highest, back and forth over the groups, so that each group holds cheap and dear
    levels alike (a run's cost grows with its level: at paper settings DVP's eps1 and eps3 together took 89 s, eps0.1
    with eps3 79 s)."""
    from repro_dpadmm.experiments.beyond_frontier import level_key

    values = sorted(float(v) for v in item_config("beyond", "frontier").get("levels", []))
    k = int(item_config("beyond", "frontier").get("lane_levels", 1))
    groups = [[] for _ in range(-(-len(values) // k))]
    for i, v in enumerate(values):
        turn, place = divmod(i, len(groups))
        groups[place if turn % 2 == 0 else len(groups) - 1 - place].append(level_key(v))
    return groups


def _paired_methods():
    from repro_dpadmm.experiments.beyond_frontier import METHODS, pairs_with_floor

    return [m for m in METHODS if pairs_with_floor(m, "eps1")]


def frontier_paired_methods():
    """A wildcard pattern of the frontier's methods whose level jobs run together with their noise-free twins
    (ZKL's, as repro_dpadmm.experiments.beyond_frontier.pairs_with_floor says; the lanes rules of beyond.smk), or
    one that matches nothing."""
    return "|".join(_paired_methods()) or "(?!x)x"


def frontier_job_groups():
    """The frontier's other jobs (HUANG's, XU's, the floor) as the rules frontier_jobs_<k> run them, several to a
    process (repro_dpadmm.experiments.beyond_frontier.job_groups, `jobs_per_run`): [(job levels, methods)], one rule
    per distinct list of job levels, for the methods that have it as a group."""
    if "frontier" not in config["papers"].get("beyond", {}):
        return []
    from repro_dpadmm.experiments.beyond_frontier import job_groups

    rules = {}
    for method, levels in job_groups(item_config("beyond", "frontier")):
        rules.setdefault(tuple(levels), []).append(method)
    return list(rules.items())


def frontier_group_params(levels):
    """The frontier config as a job of `levels` (job levels: eps0.1, eps0.1-noiseless, noiseless, nonprivate) sees
    it: its own method only (the floor: none) and the levels those jobs are at (all of them for a noiseless run that
    does not depend on the level, and for the floor), without datasets and how jobs are grouped, so that adding a
    level or a method re-runs only the groups it changes (params changes trigger re-runs)."""

    def params(wildcards):
        from repro_dpadmm.experiments.beyond_frontier import level_key

        p = {**item_config("beyond", "frontier"), "seed": config["seed"]}
        for key in ("datasets", "lane_levels", "jobs_per_run"):   # no job's parameter
            p.pop(key, None)
        p["methods"] = [] if wildcards.method == "floor" else [wildcards.method]
        bases = {lv.removesuffix("-noiseless") for lv in levels}
        if not bases & {"noiseless", "nonprivate"}:
            p["levels"] = [v for v in p["levels"] if level_key(v) in bases]
        return json.dumps(p, sort_keys=True)

    return params


def frontier_job_files():
    return [f"results/beyond/frontier/jobs/{m}/{lev}.json" for m, lev in frontier_jobs()]


def item_params(paper, item):
    """An item's parameters as its jobs get them: its config entry and the global seed."""
    return {**item_config(paper, item), "seed": config["seed"]}


def item_params_json(wildcards):
    return json.dumps(item_params(wildcards.paper, wildcards.item), sort_keys=True)


# Items split into parts (repro_dpadmm.experiments.parts: the experiment module defines parts_<item> and part_<item>)
# run each part as a job of rule item_part; the item's notebook then combines the part files.
def item_part_files(paper, item):
    from repro_dpadmm.experiments.parts import part_keys

    return [f"results/{paper}/{item}/parts/{key}.pkl" for key in part_keys(paper, item, item_params(paper, item))]


# Extra inputs of an item beyond its notebook and datasets: (paper, item) -> function returning files. An item whose
# work is split into separate jobs of its own rule registers the job files here; split items get their part files.
ITEM_EXTRA_INPUTS = {("beyond", "frontier"): frontier_job_files}


def item_extra_inputs(wildcards):
    hook = ITEM_EXTRA_INPUTS.get((wildcards.paper, wildcards.item))
    return hook() if hook else item_part_files(wildcards.paper, wildcards.item)
