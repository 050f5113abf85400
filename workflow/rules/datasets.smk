# Download, verify and preprocess every dataset. A dataset that cannot be had (no network, no mirror copy) still
# gets its sidecar `resources/processed/<name>.json` with "available": false and the reason; the items that need it
# then report "not run: dataset unavailable" and the rest of the DAG proceeds.


rule dataset:
    output:
        "resources/processed/{name}.json",
    params:
        mirror=lambda w: config.get("data_mirror") or "",
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
        "repro-dpadmm data build {wildcards.name} --mirror={params.mirror:q} "
        "--options {params.options:q} > {log} 2>&1"


rule datasets:
    input:
        expand("resources/processed/{name}.json", name=config["datasets"]),
