# hu2020_sharing: one named target per item (the work is done by rule item_notebook in common.smk).
# Rerun one item: snakemake --cores all hu2020_sharing_<item>  (add --forcerun item_notebook to recompute it).


rule hu2020_sharing:
    input:
        paper_outputs("hu2020_sharing"),
