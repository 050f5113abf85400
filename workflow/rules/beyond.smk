# Beyond the papers: equal-privacy frontier, empirical privacy audit (one step) and the one-run audit of whole runs
# (item audit_run, issue 22: a single notebook job, target beyond_audit_run).
#
# The frontier grid runs as one job per (method, level), per method's noiseless run (its optimiser floor: per level
# where the noise-free run depends on it) and one for the non-private floor, so that a cluster runs
# it in parallel (workflow/profiles/README.md); the item's notebook (rule item_notebook) only aggregates the job
# files, which item_extra_inputs (common.smk) adds to its inputs (frontier_job_files, also in common.smk).
# ZKL's methods run each level's job and its noise-free twin as lanes of one run, one job per method and group of
# `lane_levels` levels (rules frontier_job_lanes_<k>, each writing its levels' two job files; the numbers are those
# of the jobs run alone, bit for bit): `lane_levels` = 2 keeps every such job under 90 s at paper settings.


rule frontier_job:
    input:
        datasets=lambda w: [
            f"resources/processed/{d}.json"
            for d in item_config("beyond", "frontier").get("datasets", [])
        ],
    output:
        "results/beyond/frontier/jobs/{method}/{level}.json",
    params:
        item=frontier_job_params,
    log:
        "logs/beyond/frontier/{method}/{level}.log",
    benchmark:
        "logs/benchmarks/beyond/frontier/{method}/{level}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    wildcard_constraints:
        method=frontier_unpaired_methods(),
        level=r"eps[0-9.e+-]+|eps[0-9.e+-]+-noiseless|noiseless|nonprivate",
    conda:
        "../../envs/repro-dpadmm.yaml"
    shell:
        "repro-dpadmm frontier-job {wildcards.method} {wildcards.level} --params {params.item:q} "
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
            item=frontier_lanes_params(_levels),
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
