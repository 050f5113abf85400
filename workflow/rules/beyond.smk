# Beyond the papers: equal-privacy frontier, empirical privacy audit (one step) and the one-run audit of whole runs
# (item audit_run, issue 22: a single notebook job, target beyond_audit_run).
#
# The frontier grid's jobs are one per (method, level), per method's noiseless run (its optimiser floor: per level
# where the noise-free run depends on it) and one for the non-private floor; each writes its own JSON file, so that a
# cluster runs them in parallel (workflow/profiles/README.md), and the item's notebook (rule item_notebook) only
# aggregates the job files, which item_extra_inputs (common.smk) adds to its inputs (frontier_job_files, also in
# common.smk). A HUANG or XU method's jobs run `jobs_per_run` to a process, one after another on the data loaded
# once (rules frontier_jobs_<k>, one per list of job levels, for the methods that have it as a group: their start and
# the data's load were a large share of each job); ZKL's methods run each level's job and its noise-free twin as
# lanes of one run, one job per method and group of `lane_levels` levels (rules frontier_job_lanes_<k>, each writing
# its levels' two job files). Either way the numbers are those of the jobs run alone, bit for bit: `lane_levels` =
# 1 and `jobs_per_run` = 4 keep every job under 90 s at paper settings.


for _group, (_levels, _methods) in enumerate(frontier_job_groups(), start=1):

    rule:
        name:
            f"frontier_jobs_{_group}"
        input:
            datasets=lambda w: [
                f"resources/processed/{d}.json"
                for d in item_config("beyond", "frontier").get("datasets", [])
            ],
        output:
            expand("results/beyond/frontier/jobs/{{method}}/{level}.json", level=_levels),
        params:
            item=frontier_group_params(_levels),
            levels=_levels,
        log:
            "logs/beyond/frontier/{method}/" + "+".join(_levels) + ".log",
        benchmark:
            "logs/benchmarks/beyond/frontier/{method}/" + "+".join(_levels) + ".tsv"
        # no resources of its own: a cluster profile's default-resources apply
        threads: 1
        wildcard_constraints:
            method="|".join(_methods),
        conda:
            "../../envs/repro-dpadmm.yaml"
        shell:
            "repro-dpadmm frontier-job {wildcards.method} {params.levels} --params {params.item:q} "
            "--out {output} > {log} 2>&1"


for _group, _levels in enumerate(frontier_lane_groups(), start=1):

    rule:
        name:
            f"frontier_job_lanes_{_group}"
        input:
            datasets=lambda w: [
                f"resources/processed/{d}.json"
                for d in item_config("beyond", "frontier").get("datasets", [])
            ],
        output:
            noisy=expand(
                "results/beyond/frontier/jobs/{{method}}/{level}.json", level=_levels
            ),
            floor=expand(
                "results/beyond/frontier/jobs/{{method}}/{level}-noiseless.json",
                level=_levels,
            ),
        params:
            item=frontier_group_params(_levels),
            levels=_levels,
        log:
            "logs/beyond/frontier/{method}/" + "+".join(_levels) + ".log",
        benchmark:
            "logs/benchmarks/beyond/frontier/{method}/" + "+".join(_levels) + ".tsv"
        # no resources of its own: a cluster profile's default-resources apply
        threads: 1
        wildcard_constraints:
            method=frontier_paired_methods(),
        conda:
            "../../envs/repro-dpadmm.yaml"
        shell:
            "repro-dpadmm frontier-job {wildcards.method} {params.levels} --params {params.item:q} "
            "--out {output.noisy} --floor-out {output.floor} > {log} 2>&1"
