"""`python -m repro_dpadmm.report.validate [FILE...]`: validate claims files (default: config/claims/*.yaml) against
config/claims/claims.schema.yaml and the rules that span fields; every problem is printed with its file and line."""

from __future__ import annotations

import sys
from pathlib import Path

from ..paths import project_root
from ..claims import ClaimsError, claims_paths, validate_claims_file


def main(argv=None) -> int:
    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    paths = paths or claims_paths(project_root() / "config" / "claims")
    failed = 0
    for path in paths:
        try:
            cf = validate_claims_file(path)
            print(f"ok      {path} ({len(cf.claims)} claims)")
        except ClaimsError as exc:
            failed += 1
            print(f"INVALID {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
