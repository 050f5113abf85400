# The reproduction report: reads every item's metrics.json, config/claims/*.yaml and the dataset sidecars, and writes
# results/report/ (index.html and the pages it links: one per paper, privacy, provenance, claims/ with the claims
# files; claims.json, summary.json; items/ with copies of the rendered notebooks, figures and their data).
from pathlib import Path


rule report:
    input:
        metrics=all_item_outputs(),
        datasets=expand("resources/processed/{name}.json", name=config["datasets"]),
        claims=sorted(str(p) for p in Path("config/claims").glob("*.yaml")),
    output:
        html=report(
            "results/report/index.html",
            caption="../report/report.rst",
            category="Reproduction report",
            labels={"file": "index.html"},
        ),
        claims=report(
            "results/report/claims.json",
            caption="../report/claims.rst",
            category="Reproduction report",
            labels={"file": "claims.json"},
        ),
        summary="results/report/summary.json",
        copies=directory("results/report/items"),
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv"
    conda:
        "../../envs/repro-dpadmm.yaml"
    shell:
        "repro-dpadmm report --out-dir results/report > {log} 2>&1"
