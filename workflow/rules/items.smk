# The one rule that runs an item's notebook (papermill, then nbconvert to HTML), and the named targets: one per item
# of the config (`<paper>_<item>`) and one per paper of the registry (`<paper>`, every item of it in the config).


rule item_notebook:
    input:
        notebook=item_notebook_file,
        datasets=item_dataset_records,
        extra=item_extra_inputs,
    output:
        html=report(
            "results/{paper}/{item}/{item}.html",
            caption="../report/item.rst",
            category="{paper}",
            subcategory="{item}",
            labels={"paper": "{paper}", "item": "{item}"},
        ),
        metrics="results/{paper}/{item}/metrics.json",
    params:
        item=item_params_json,
        out_dir=subpath(output.metrics, parent=True),
    # Snakemake's progress names the item; its log says, per setting, the time spent and an estimate of what is left
    message:
        "{wildcards.paper}/{wildcards.item}: running its notebook; progress in {log}"
    log:
        "logs/{paper}/{item}.log",
    benchmark:
        "logs/benchmarks/{paper}/{item}.tsv"
    # One core per item: the items' work is sparse products and small dense ones that a second BLAS thread does not
    # speed up, so `--cores N` runs N items side by side (Snakemake sets OMP/OpenBLAS/MKL threads to this).
    threads: 1
    wildcard_constraints:
        paper="|".join(config["papers"]),
        item=r"[A-Za-z0-9_]+",
    conda:
        "../../envs/repro-dpadmm.yaml"
    shell:
        "repro-dpadmm run {wildcards.paper} {wildcards.item} --params {params.item:q} "
        "--out-dir {params.out_dir} > {log} 2>&1"


# One part of an item split into parts (repro_dpadmm.experiments.parts), e.g. one curve at one alpha(1) of ZKL-ICML
# Fig. 2: the item's settings run side by side (and on a cluster, in parallel); the item's notebook combines them.
rule item_part:
    input:
        datasets=item_dataset_records,
    output:
        "results/{paper}/{item}/parts/{part}.pkl",
    params:
        item=item_params_json,
    message:
        "{wildcards.paper}/{wildcards.item}: part {wildcards.part}; log in {log}"
    log:
        "logs/{paper}/{item}/{part}.log",
    benchmark:
        "logs/benchmarks/{paper}/{item}/{part}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    wildcard_constraints:
        paper="|".join(config["papers"]),
        item=r"[A-Za-z0-9_]+",
        part=r"[A-Za-z0-9_.=+-]+",
    conda:
        "../../envs/repro-dpadmm.yaml"
    shell:
        "repro-dpadmm part {wildcards.paper} {wildcards.item} {wildcards.part} --params {params.item:q} "
        "--out {output} > {log} 2>&1"


# One named target per item, e.g. `snakemake --cores all huang2019_dpadmm_fig3`.
for _paper, _items in config["papers"].items():
    for _item in _items:

        rule:
            name:
                registry.Item(_paper, _item).target
            input:
                item_outputs(_paper, _item),


# One named target per paper, e.g. `snakemake --cores all huang2019_dpadmm` (every item of it).
for _paper in registry.paper_ids():

    rule:
        name:
            _paper
        input:
            paper_outputs(_paper),
