"""Consistency of the claims files with a results folder: every claim names an item that exists and metric keys
that item writes (its trivial references included), and every key an item writes is documented, with its evidence
kind (run it on the results of the smoke DAG).

`python -m repro_dpadmm.report.audit [results_dir]` prints the problems and exits 1 if there are any.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import safeload
from ..claims import cited, flatten, load_all
from ..registry import listed

ALWAYS_PRESENT = frozenset({"status", "reason", "note", "wall_time_s", "repeats"})


def base_key(key: str) -> str:
    """The documented key behind a derived one: `<key>@<variant>` and `<key>.se` (and `<key>.se@<variant>`)."""
    key = key.split("@", 1)[0]
    return key[:-3] if key.endswith(".se") else key


@dataclass
class Audit:
    problems: list[str] = field(default_factory=list)   # a claim that cannot be checked on these results
    notes: list[str] = field(default_factory=list)      # skipped items, variants without results
    checked: int = 0                                    # claims whose keys were all found

    @property
    def ok(self) -> bool:
        return not self.problems


def _available(name: str, processed: str | Path | None) -> bool:
    """Whether the processed sidecar of `name` says the dataset was built (False when there is no sidecar)."""
    path = Path(processed) / f"{name}.json" if processed else None
    return bool(path and path.is_file() and safeload.load_json(path, expect=dict).get("available"))


def _cited_present(key: str, results: Path) -> bool:
    """A key of another item (`<paper>/<item>:<key>`) that the cited item's metrics.json holds."""
    where = cited(key)
    if where is None:
        return False
    path = results / where[0] / where[1] / "metrics.json"
    return path.is_file() and where[2] in safeload.load_json(path, expect=dict)


def audit(claims_dir: str | Path, results: str | Path, processed: str | Path | None = None) -> Audit:
    """Check every claim of `claims_dir` against the metrics in `results` (and dataset claims against sidecars)."""
    from ..datasets import DATASETS

    claims_dir, results = Path(claims_dir), Path(results)
    out = Audit()
    files = load_all(claims_dir)
    for cf in files:
        out.problems += cf.problems
        out.notes += cf.warnings
    for cf in files:
        for claim in cf.claims:
            if claim.source:
                name = claim.dataset
                if name not in DATASETS:
                    out.problems.append(f"{claim.id}: source names an unknown dataset {name!r}")
                    continue
                side_path = Path(processed) / f"{name}.json" if processed else None
                if side_path is None or not side_path.is_file():
                    out.notes.append(f"{claim.id}: dataset {name} not built; keys not checked")
                    continue
                side = safeload.load_json(side_path, expect=dict)
                if not side.get("available"):
                    out.notes.append(f"{claim.id}: dataset {name} unavailable; keys not checked")
                    continue
                missing = [k for k in _keys_read(claim) if k not in flatten(side)]
                if missing:
                    out.problems.append(f"{claim.id}: the {name} sidecar has no key(s) {', '.join(missing)}")
                else:
                    out.checked += 1
                continue
            if claim.item is None:
                continue  # malformed; already a problem of the file
            item_dir = results / claim.paper / claim.item
            if not listed(claim.paper, claim.item) and not item_dir.is_dir():
                out.problems.append(f"{claim.id}: item {claim.paper}/{claim.item} is neither in the registry nor in "
                                    "the results")
                continue
            if claim.not_checkable:
                continue
            metrics_path = item_dir / "metrics.json"
            if not metrics_path.is_file():
                out.problems.append(f"{claim.id}: no {claim.paper}/{claim.item}/metrics.json in {results}")
                continue
            metrics = safeload.load_json(metrics_path, expect=dict)
            if metrics.get("status") == "not run":
                out.notes.append(f"{claim.id}: item not run ({metrics.get('reason')}); keys not checked")
                continue
            lacking = [d for d in claim.datasets if not _available(d, processed)]
            if lacking:
                out.notes.append(f"{claim.id}: dataset(s) {', '.join(lacking)} unavailable; keys not checked")
                continue
            missing = [k for k in _keys_read(claim) if k not in metrics and not _cited_present(k, results)]
            # a check may read one variant's value directly (`<key>@<variant>`): where the results hold no key of
            # that variant at all, the variant was not run (a note, as for a claim's variants), not a missing key
            unrun = [k for k in missing if "@" in k and not any(m.endswith("@" + k.rsplit("@", 1)[1]) for m in metrics)]
            if unrun:
                out.notes.append(f"{claim.id}: variant value(s) {', '.join(unrun)} not in the results (not run)")
                missing = [k for k in missing if k not in unrun]
            if missing:
                out.problems.append(f"{claim.id}: {claim.paper}/{claim.item}/metrics.json has no key(s) "
                                    f"{', '.join(missing)}")
            else:
                out.checked += 1
            for name in claim.variants:
                if not any(f"{k}@{name}" in metrics for k in claim.metric_keys()):
                    out.notes.append(f"{claim.id}: variant {name} has no <key>@{name} in the results "
                                     "(its verdict is 'not run')")
    # The reserved `repeats` entry: per-repeat values of flat keys (their mean), never of a key that is not written.
    for path in sorted(results.glob("*/*/metrics.json")) if results.is_dir() else []:
        metrics = safeload.load_json(path, expect=dict)
        reps = metrics.get("repeats", {})
        where = f"{path.parent.parent.name}/{path.parent.name}"
        if not isinstance(reps, dict):
            # tolerated for now (the engine ignores it), but the name is reserved: the item should rename its count
            out.notes.append(f"{where}: 'repeats' is reserved for per-repeat values (a mapping); the item writes "
                             f"{reps!r} there: rename that metric (e.g. n_repeats)")
            continue
        for key, values in reps.items():
            if key not in metrics:
                out.problems.append(f"{where}: repeats[{key!r}] has no flat key {key!r} (its mean)")
            elif not isinstance(values, list):
                out.problems.append(f"{where}: repeats[{key!r}] must be a list of per-repeat values")
    # Written keys that the claims file does not document: a problem, since a key's documentation carries its
    # evidence kind (measured, derived, given), which decides what a claim on it can be.
    for cf in files:
        for item, docs in cf.metrics.items():
            path = results / cf.name / item / "metrics.json"
            if path.is_file():
                written = {base_key(k) for k in safeload.load_json(path, expect=dict)} - ALWAYS_PRESENT
                undocumented = sorted(written - set(docs))
                if undocumented:
                    out.problems.append(f"{cf.name}/{item}: undocumented metric key(s) (each needs a meaning under "
                                        f"metrics.{item} and an evidence kind): {', '.join(undocumented[:8])}"
                                        + (f" ... ({len(undocumented)} in all)" if len(undocumented) > 8 else ""))
    return out


def _keys_read(claim) -> list[str]:
    """The metric keys a claim's checks read, and the trivial references of those that have one."""
    return list(dict.fromkeys(claim.metric_keys() + [ref for ref, _ in claim.references.values()]))


def main(argv=None) -> int:
    from ..paths import project_root

    argv = sys.argv[1:] if argv is None else argv
    root = project_root()
    results = Path(argv[0]) if argv else root / "results"
    result = audit(root / "config" / "claims", results, root / "resources" / "processed")
    for note in result.notes:
        print(f"note: {note}")
    for problem in result.problems:
        print(f"PROBLEM: {problem}")
    print(f"{result.checked} claims have all their metric keys; {len(result.problems)} problems")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
