"""repro-dpadmm: reproducing five papers on differentially private ADMM-based distributed learning.

The library is pure (arrays in, arrays out); I/O lives at the edges: `datasets.fetch`, the notebooks,
the Snakemake rules and the `repro-dpadmm` command.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("repro-dpadmm")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

PAPERS = (
    "huang2019_dpadmm",
    "hu2020_sharing",
    "zhang2018_madmm",
    "zhang2018_radmm",
    "xu2020_dpaccadmm",
)
