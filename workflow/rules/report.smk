# The reproduction report: reads every item's metrics.json, config/claims/*.yaml and the dataset sidecars.


rule report:
    input:
        metrics=all_item_outputs(),
        datasets=expand("resources/processed/{name}.json", name=config["datasets"]),
    output:
        html="results/report/index.html",
        claims="results/report/claims.json",
    log:
        "logs/report.log",
    conda:
        "../../envs/repro-dpadmm.yaml"
    shell:
        "repro-dpadmm report --out-dir results/report > {log} 2>&1"
