# zhang2018_radmm: one named target per item (the work is done by rule item_notebook in common.smk).
# Rerun one item: snakemake --cores all zhang2018_radmm_<item>  (add --forcerun item_notebook to recompute it).


rule zhang2018_radmm:
    input:
        paper_outputs("zhang2018_radmm"),
