"""Results bundles: one archive of a finished run that anyone can verify and re-judge without recomputing anything.

`make_bundle()` packs, in the project's own layout,

* `results/<paper>/<item>/`: every item's metrics.json, executed notebook, rendered HTML, figures (and job files);
* `results/report/`: the report as judged at run time (index.html, claims.json, summary.json; not its `items/`
  copies, which duplicate the item folders);
* `resources/processed/*.json`: the dataset sidecars (availability, shapes, the raw files' sha256), never the data;
* `logs/`: each job's log and its Snakemake benchmark TSV (time and memory);
* `config/`: the configuration and claims files as they were when the bundle was made;
* `provenance.json`: every installed package with its version, Python, platform, git commit, and the datasets'
  checksums (raw sources from the sidecars, processed arrays hashed here);
* `MANIFEST.sha256`: the sha256 of every other file (`sha256sum -c MANIFEST.sha256` checks it too).

`rejudge()` verifies the manifest, then rebuilds the report from the bundle's measurements with the *current* claims
files (`report.build_report`, the same function the workflow uses), and says which verdicts changed since the bundle
was judged and which items ran with parameters that differ from the current config.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tarfile
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, distributions, version
from pathlib import Path

import pooch

from .paths import project_root

FORMAT = 1
MANIFEST = "MANIFEST.sha256"
PROVENANCE = "provenance.json"
REPORT_DIR = "results/report"
# The packages whose versions the re-judged report shows for the bundle's run (provenance.json has them all).
KEY_PACKAGES = ("numpy", "scipy", "scikit-learn", "dp-accounting", "privacy-estimates", "snakemake", "papermill")
# Paths (relative to the project root) a bundle takes, as (folder, glob); results/report/items/ is left out.
CONTENT = (("results", "**/*"), ("resources/processed", "*.json"), ("logs", "**/*"), ("config", "*.yaml"),
           ("config/claims", "*.yaml"))


class BundleError(ValueError):
    """A bundle cannot be made, opened or trusted (the message says which file and why)."""


def sha256_file(path: Path) -> str:
    return pooch.file_hash(str(path), alg="sha256")


def _member_files(root: Path) -> list[str]:
    """The project files a bundle holds, as sorted POSIX paths relative to `root`."""
    out = set()
    for folder, pattern in CONTENT:
        base = root / folder
        for path in base.glob(pattern) if base.is_dir() else []:
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not rel.startswith(f"{REPORT_DIR}/items/") and "/." not in f"/{rel}":
                out.add(rel)
    return sorted(out)


def installed_packages() -> dict[str, str]:
    """{distribution name: version} of every package installed in the running environment."""
    out = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower().replace("_", "-")] = dist.version
    return dict(sorted(out.items()))


def dataset_checksums(processed: Path) -> dict[str, dict]:
    """Per dataset: available or not, the raw sources' sha256 (from its sidecar) and the processed arrays' sha256."""
    out = {}
    for sidecar in sorted(processed.glob("*.json")) if processed.is_dir() else []:
        try:
            side = json.loads(sidecar.read_text())
        except (OSError, ValueError) as exc:
            out[sidecar.stem] = {"available": False, "reason": f"unreadable sidecar: {exc}"}
            continue
        sources = {rel: (info.get("sha256") if isinstance(info, dict) else info)
                   for rel, info in (side.get("sources") or {}).items()}
        arrays = processed / f"{sidecar.stem}.npz"
        out[sidecar.stem] = {"available": bool(side.get("available")), "sources_sha256": sources,
                             "processed_sha256": sha256_file(arrays) if arrays.is_file() else None}
    return out


def provenance(root: Path) -> dict:
    from .provenance import git_state

    try:
        own = version("repro-dpadmm")
    except PackageNotFoundError:
        own = None
    return {"format": FORMAT, "created": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "repro_dpadmm": own, "git": git_state(root), "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.machine()}", "packages": installed_packages(),
            "datasets": dataset_checksums(root / "resources" / "processed")}


def write_manifest(folder: Path) -> Path:
    """MANIFEST.sha256 listing every file under `folder` (but itself), in `sha256sum` format."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    lines = [f"{sha256_file(folder / rel)}  {rel}" for rel in files if rel != MANIFEST]
    path = folder / MANIFEST
    path.write_text("\n".join(lines) + "\n")
    return path


def verify(folder: str | Path) -> list[str]:
    """Problems of an unpacked bundle against its manifest: modified, missing or unlisted files (empty if intact)."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return [f"no {MANIFEST} in {folder}: not a results bundle"]
    listed, problems = {}, []
    for n, line in enumerate(manifest.read_text().splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64:
            problems.append(f"{MANIFEST} line {n} is malformed: {line!r}")
            continue
        listed[rel] = digest
    for rel, digest in listed.items():
        path = folder / rel
        if not path.is_file():
            problems.append(f"missing: {rel}")
        elif sha256_file(path) != digest:
            problems.append(f"modified: {rel} (sha256 differs from {MANIFEST})")
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    problems += [f"not in {MANIFEST}: {rel}" for rel in sorted(present - set(listed) - {MANIFEST})]
    return problems


def default_name(prov: dict) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    commit = (prov.get("git") or {}).get("commit")
    return f"repro-dpadmm-results-{stamp}" + (f"-{commit[:8]}" if commit else "")


def make_bundle(out: str | Path | None = None, *, root: Path | None = None) -> Path:
    """Pack the finished run under `root` into `out` (default `bundles/<name>.tar.gz`); return the archive path.

    The run must be finished: the report (`results/report/claims.json`) exists and is newer than every item's
    metrics.json, so that the bundled verdicts are the ones of the bundled numbers.
    """
    root = Path(root) if root else project_root()
    claims = root / REPORT_DIR / "claims.json"
    if not claims.is_file():
        raise BundleError(f"no {REPORT_DIR}/claims.json under {root}: finish the run first "
                          "(`snakemake --cores all`, or `repro-dpadmm report` after the items)")
    stale = [p.relative_to(root).as_posix() for p in (root / "results").glob("*/*/metrics.json")
             if p.stat().st_mtime > claims.stat().st_mtime]
    if stale:
        raise BundleError(f"the report is older than {', '.join(sorted(stale)[:5])}"
                          f"{' ...' if len(stale) > 5 else ''}: rebuild it (`snakemake --cores all report`) first")
    prov = provenance(root)
    out = Path(out) if out else root / "bundles" / f"{default_name(prov)}.tar.gz"
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise BundleError(f"bundle name {out.name!r} must end in .tar.gz or .tgz")
    top = out.name.removesuffix(".tar.gz").removesuffix(".tgz")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".bundle-") as tmp:
        stage = Path(tmp) / top
        for rel in _member_files(root):
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, stage / rel)
        (stage / PROVENANCE).write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n")
        write_manifest(stage)
        partial = Path(tmp) / out.name
        with tarfile.open(partial, "w:gz") as tar:
            tar.add(stage, arcname=top, filter=_normalise)
        os.replace(partial, out)  # atomic: a half-written bundle never appears under its name
    return out


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


@contextmanager
def opened(source: str | Path):
    """The folder of a bundle (an archive is unpacked into a temporary folder for the duration), verified against
    its manifest; raises BundleError naming every modified, missing or unlisted file."""
    source = Path(source)
    if source.is_dir():
        problems = verify(source)
        if problems:
            raise BundleError(f"{source} does not match its manifest:\n  " + "\n  ".join(problems))
        yield source
        return
    if not source.is_file():
        raise BundleError(f"no bundle at {source}")
    with tempfile.TemporaryDirectory(prefix="repro-dpadmm-bundle-") as tmp:
        try:
            with tarfile.open(source, "r:*") as tar:
                tar.extractall(tmp, filter="data")  # refuses absolute paths, links out of the folder, devices
        except (tarfile.TarError, OSError) as exc:
            raise BundleError(f"cannot unpack {source}: {exc}") from exc
        tops = [p for p in Path(tmp).iterdir()]
        folder = tops[0] if len(tops) == 1 and tops[0].is_dir() else Path(tmp)
        problems = verify(folder)
        if problems:
            raise BundleError(f"{source} does not match its manifest:\n  " + "\n  ".join(problems))
        yield folder


def param_differences(results: Path, root: Path) -> dict[str, list[str]]:
    """{"<paper>/<item>": ["key: run value vs current config value", ...]} for every bundled item whose executed
    parameters (papermill's record in its notebook) differ from what the current config would pass it."""
    from .provenance import executed_params, load_config

    current = load_config(root)  # config/config.yaml as the report reads it
    if not current:
        return {"<config>": [f"no readable config/config.yaml under {root}"]}
    out = {}
    for item_dir in sorted(p for p in results.glob("*/*") if p.is_dir() and p.parent.name != "report"):
        paper, item = item_dir.parent.name, item_dir.name
        ran = executed_params(item_dir, item)
        if ran is None:
            continue
        cfg = (current.get("papers") or {}).get(paper, {}).get(item)
        if cfg is None:
            out[f"{paper}/{item}"] = ["not in the current config"]
            continue
        now = {**cfg, "seed": current.get("seed")}
        diffs = [f"{k}: {_short(ran.get(k, '(unset)'))} in the run vs {_short(now.get(k, '(unset)'))} now"
                 for k in sorted(set(ran) | set(now)) if ran.get(k, "(unset)") != now.get(k, "(unset)")]
        if diffs:
            out[f"{paper}/{item}"] = diffs
    return out


def claims_differences(folder: Path, root: Path) -> list[str]:
    """The claims files of the checkout at `root` that differ from (or are absent in) the bundle's own copy: the
    re-judge always uses the checkout's files and their rules, so these are what may change a verdict."""
    here, there = root / "config" / "claims", folder / "config" / "claims"
    names = sorted({p.name for p in here.glob("*.yaml")} | {p.name for p in there.glob("*.yaml")})
    return [n for n in names if not (here / n).is_file() or not (there / n).is_file()
            or (here / n).read_bytes() != (there / n).read_bytes()]


def _short(value, n: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= n else text[: n - 3] + "..."


def verdict_changes(before: Path, after: Path) -> list[dict]:
    """Claims whose verdict differs between two claims.json files (new and removed claims included)."""
    def load(path):
        try:
            return {r["id"]: r.get("verdict") for r in json.loads(path.read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            return {}
    old, new = load(before), load(after)
    return [{"id": cid, "before": old.get(cid), "after": new.get(cid)}
            for cid in sorted(set(old) | set(new)) if old.get(cid) != new.get(cid)]


@dataclass
class Rejudged:
    source: str
    out_dir: Path
    provenance: dict
    files: int
    params_differ: dict[str, list[str]] = field(default_factory=dict)
    changes: list[dict] = field(default_factory=list)
    report: object = None
    claims_differ: list[str] = field(default_factory=list)   # checkout claims files that differ from the bundle's

    def record(self) -> dict:
        prov = self.provenance
        return {"bundle": self.source, "manifest_files": self.files,
                "bundle_made": prov.get("created"), "bundle_git": (prov.get("git") or {}).get("describe"),
                "bundle_repro_dpadmm": prov.get("repro_dpadmm"),
                "verdict_changes": self.changes, "params_differ_from_current_config": self.params_differ,
                "claims_files_differ_from_bundle": self.claims_differ}

    def summary(self) -> str:
        prov = self.provenance
        lines = [f"bundle {self.source}: manifest ok ({self.files} files); made {prov.get('created')} at "
                 f"{(prov.get('git') or {}).get('describe', 'unknown commit')}, repro-dpadmm "
                 f"{prov.get('repro_dpadmm')}, Python {prov.get('python')}"]
        if self.claims_differ:
            lines.append("judged with this checkout's claims files and rules, not the bundle's; these differ from the "
                         f"bundle's copy ({len(self.claims_differ)}): {', '.join(self.claims_differ)} (the bundle's "
                         "own judgement is its results/report/claims.json)")
        changed = [c for c in self.changes if c["before"] and c["after"]]
        if changed:
            lines.append(f"verdicts changed since the bundle was judged ({len(changed)}):")
            lines += [f"  {c['id']}: {c['before']} -> {c['after']}" for c in changed]
        else:
            lines.append("no verdict changed since the bundle was judged")
        for side, what in (("before", "new claims, not in the bundle's judgement"),
                           ("after", "claims of the bundle's judgement that no longer exist")):
            ids = [c["id"] for c in self.changes if not c[side]]
            if ids:
                lines.append(f"{len(ids)} {what}: " + ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else ""))
        if self.params_differ:
            lines.append(f"items whose parameters differ from the current config ({len(self.params_differ)}):")
            for name, diffs in self.params_differ.items():
                lines.append(f"  {name}: " + "; ".join(diffs))
        else:
            lines.append("every bundled item ran with the current config's parameters")
        return "\n".join(lines)


def rejudge(source: str | Path, out_dir: str | Path, *, root: Path | None = None) -> Rejudged:
    """Rebuild the report and every verdict from a bundle (archive or unpacked folder) with the current claims files
    of the project at `root`, into `out_dir`; nothing is recomputed. Also writes `out_dir/rejudged.json`."""
    from .report import build_report

    root = Path(root) if root else project_root()
    out_dir = Path(out_dir).resolve()
    with opened(source) as folder:
        prov_path = folder / PROVENANCE
        prov = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
        origin = {"name": Path(source).name, "created": prov.get("created"),
                  "git": (prov.get("git") or {}).get("describe"), "repro_dpadmm": prov.get("repro_dpadmm"),
                  "python": prov.get("python"), "platform": prov.get("platform"),
                  "packages": {k: v for k, v in (prov.get("packages") or {}).items() if k in KEY_PACKAGES}}
        report = build_report(out_dir, root=root, results=folder / "results", claims_dir=root / "config" / "claims",
                              processed=folder / "resources" / "processed", bundle=origin)
        files = sum(1 for _ in (folder / MANIFEST).read_text().splitlines())
        result = Rejudged(str(source), out_dir, prov, files, param_differences(folder / "results", root),
                          verdict_changes(folder / REPORT_DIR / "claims.json", out_dir / "claims.json"), report,
                          claims_differences(folder, root))
    (out_dir / "rejudged.json").write_text(json.dumps(result.record(), indent=2) + "\n")
    return result
