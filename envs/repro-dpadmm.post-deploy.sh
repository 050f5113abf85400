#!/usr/bin/env bash
# Snakemake runs this once after creating the conda env of envs/repro-dpadmm.yaml, inside that env, from the
# workflow's working directory (the project root: the rules' relative paths need it), with the script itself copied
# to .snakemake/conda/<hash>.post-deploy.sh. So the project is found from the working directory, never from the
# script's own location. REPRO_DPADMM_ROOT, if set, names the project root explicitly.
set -euo pipefail
root="${REPRO_DPADMM_ROOT:-$PWD}"
if ! grep -qs '^name = "repro-dpadmm"' "$root/pyproject.toml"; then
  echo "repro-dpadmm post-deploy: no repro-dpadmm pyproject.toml in $root; run Snakemake from the project root" \
       "or set REPRO_DPADMM_ROOT" >&2
  exit 1
fi
# The env file provides every dependency (conda packages must not be replaced by pip copies): --no-deps. Editable,
# like the pip install of `make venv`, so that the jobs run the project's current source.
python -m pip install --no-deps --no-build-isolation -e "$root"
