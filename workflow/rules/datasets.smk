# Download, verify and preprocess every dataset. A dataset that cannot be had (no network, no mirror copy, a copy
# that fails verification) still gets its sidecar `resources/processed/<name>.json` with "available": false and the
# reason; the items that need it then report "not run: dataset unavailable" and the rest of the DAG proceeds.
#
# A failure does not stick: params.attempt (repro_dpadmm.datasets.attempt) is the source state in force for a
# dataset that is unavailable or damaged, and the state recorded at its build for one that is intact. So a fixed
# mirror folder, a newly set mirror (REPRO_DPADMM_DATA_MIRROR, the config key data_mirror), a file placed in
# resources/raw/ or a damaged npz re-runs the rule (a params change), an intact dataset never re-runs, and a network
# failure is retried after an hour. To retry at once: snakemake --forcerun resources/processed/<name>.json


rule dataset:
    output:
        "resources/processed/{name}.json",
    params:
        mirror=lambda w: dataset_mirror_arg(),
        attempt=lambda w: json.dumps(dataset_attempt(w.name), sort_keys=True),
        options=lambda w: json.dumps(config["datasets"].get(w.name, {})),
    log:
        "logs/datasets/{name}.log",
    benchmark:
        "logs/benchmarks/datasets/{name}.tsv"
    wildcard_constraints:
        name="|".join(config["datasets"]),
    conda:
        "../../envs/repro-dpadmm.yaml"
    shell:
        "repro-dpadmm data build {wildcards.name} {params.mirror} "
        "--options {params.options:q} --attempt {params.attempt:q} > {log} 2>&1"


rule datasets:
    input:
        expand("resources/processed/{name}.json", name=config["datasets"]),
