# xu2020_dpaccadmm: one named target per item (the work is done by rule item_notebook in common.smk).
# Rerun one item: snakemake --cores all xu2020_dpaccadmm_<item>  (add --forcerun item_notebook to recompute it).


rule xu2020_dpaccadmm:
    input:
        paper_outputs("xu2020_dpaccadmm"),
