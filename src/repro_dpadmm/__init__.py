"""repro-dpadmm: reproducing five papers on differentially private ADMM-based distributed learning.

The library is pure (arrays in, arrays out); I/O lives at the edges: `datasets.fetch`, the notebooks,
the Snakemake rules and the `repro-dpadmm` command. The papers and their items are listed once, in
`repro_dpadmm.registry`.
"""

import sys
from importlib.metadata import PackageNotFoundError, version

# The floor of pyproject's requires-python, said plainly when the package is run from a source tree on an older
# interpreter (pip refuses to install it there). Results bundles are unpacked by repro_dpadmm.bundle itself, not by
# tarfile's extraction filters, so no tarfile fix of a later 3.11 release is needed.
MIN_PYTHON = (3, 11)
if sys.version_info < MIN_PYTHON:
    raise ImportError(f"repro-dpadmm needs Python >= {'.'.join(map(str, MIN_PYTHON))}; this is Python "
                      f"{sys.version.split()[0]} ({sys.executable})")

try:
    __version__ = version("repro-dpadmm")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"
