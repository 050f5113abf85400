# The workflow lives in workflow/Snakefile (Snakemake catalog layout); this file keeps `snakemake` in the project
# root working as before and marks the root for repro_dpadmm.paths.project_root.
include: "workflow/Snakefile"


# An included file's default target does not carry over to the including one: name it here.
rule default:
    default_target: True
    input:
        rules.all.input,
