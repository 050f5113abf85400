"""repro-dpadmm: reproducing five papers on differentially private ADMM-based distributed learning.

The library is pure (arrays in, arrays out); I/O lives at the edges: `datasets.fetch`, the notebooks,
the Snakemake rules and the `repro-dpadmm` command. The papers and their items are listed once, in
`repro_dpadmm.registry`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("repro-dpadmm")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"
