# repro-dpadmm: reproduce five papers on differentially private ADMM.
# Rerun one item: snakemake --cores all <paper>_<item>   (e.g. huang2019_dpadmm_fig3)
import os
import sys

from snakemake.utils import min_version, validate

min_version("9.0")


envvars:
    "PATH",


# Shell rules call `repro-dpadmm`, installed beside the Python running Snakemake: make it findable when Snakemake is
# started as `.venv/bin/snakemake` without activating the venv. (With --sdm conda the rule's env comes first.)
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/items.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/huang2019_dpadmm.smk"
include: "workflow/rules/hu2020_sharing.smk"
include: "workflow/rules/zhang2018_madmm.smk"
include: "workflow/rules/zhang2018_radmm.smk"
include: "workflow/rules/xu2020_dpaccadmm.smk"
include: "workflow/rules/beyond.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "results/report/index.html",
