# huang2019_dpadmm: one named target per item (the work is done by rule item_notebook in common.smk).
# Rerun one item: snakemake --cores all huang2019_dpadmm_<item>  (add --forcerun item_notebook to recompute it).


rule huang2019_dpadmm:
    input:
        paper_outputs("huang2019_dpadmm"),
