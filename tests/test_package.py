"""Packaging: citation, licence, declared dependencies, the lock file, the conda env's post-deploy install, the CLI."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from repro_dpadmm.cli import build_parser, main

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# conda-forge names of pip distributions where they differ (the env file uses the lighter split packages)
CONDA_NAMES = {"matplotlib": "matplotlib-base", "snakemake": "snakemake-minimal", "nbconvert": "nbconvert-core",
               "pyyaml": "pyyaml", "jupyter-client": "jupyter_client"}


def requirements(extras=("test", "cluster")) -> list[Requirement]:
    reqs = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]]
    return reqs + [Requirement(r) for r in PYPROJECT["dependency-groups"]["build"]]


def test_licence_and_citation_agree_with_pyproject():
    assert PYPROJECT["project"]["license"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    build = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    setuptools = next(r for r in build if r.name == "setuptools")
    assert not setuptools.specifier.contains("76.9"), "license = 'MIT' (SPDX) needs setuptools >= 77"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert cff["version"] == PYPROJECT["project"]["version"]


def test_citation_lists_the_papers_the_report_names():
    from repro_dpadmm.registry import PAPERS

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    titles = {r["title"].lower() for r in cff["references"]}
    papers = [p for p in PAPERS if not p.beyond]
    assert len(cff["references"]) == len(papers)
    for p in papers:
        assert p.title.lower() in titles, p.title
    for ref in cff["references"]:
        assert ref["authors"] and isinstance(ref["year"], int) and ref["year"] >= 2018, ref["title"]
    # the links each paper's report page gives are the citation file's DOI and preprint, and the other way round
    by_title = {r["title"].lower(): r for r in cff["references"]}
    for p in papers:
        ref = by_title[p.title.lower()]
        wanted = {f"https://doi.org/{ref['doi']}"} if ref.get("doi") else set()
        wanted |= {ref["url"]} if ref.get("url", "").startswith("https://arxiv.org/") else set()
        assert {url for _, url in p.links} == wanted, p.id


IMPORT_NAMES = {"sklearn": "scikit-learn", "yaml": "pyyaml", "dp_accounting": "dp-accounting",
                "privacy_estimates": "privacy-estimates", "IPython": "ipython"}
# Declared but never imported, on purpose: what runs the code rather than being called by it.
RUNTIME_ONLY = {"ipykernel": "the kernel the notebooks run on", "nbclient": "papermill's notebook executor",
                "snakemake": "runs the workflow"}


def imported_distributions() -> set[str]:
    """Distribution names of the third-party modules the package, its notebooks and its rules import."""
    sources = [p.read_text() for p in (ROOT / "src").rglob("*.py")]
    for nb in (ROOT / "notebooks").rglob("*.ipynb"):
        cells = json.loads(nb.read_text())["cells"]
        sources += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    found = set()
    for text in sources:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add(node.module.split(".")[0])
    stdlib = set(sys.stdlib_module_names) | {"repro_dpadmm"}
    return {canonicalize_name(IMPORT_NAMES.get(n, n)) for n in found - stdlib}


def test_every_third_party_import_is_declared():
    """Modules imported by the package and its notebooks are direct dependencies (not merely transitive)."""
    declared = {canonicalize_name(r.name) for r in requirements(extras=())}
    missing = sorted(imported_distributions() - declared)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_every_declared_dependency_is_used():
    """A dependency nothing imports any more (tqdm once) is dropped from pyproject.toml, the conda env and the lock."""
    declared = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    unused = sorted(declared - imported_distributions() - set(RUNTIME_ONLY))
    assert not unused, f"declared in pyproject.toml but imported nowhere: {unused}"


def lock_pins() -> dict[str, list[tuple[str, str, int]]]:
    """{name: [(version, marker, number of hashes)]} of requirements.lock."""
    pins: dict[str, list] = {}
    text = (ROOT / "requirements.lock").read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        m = re.match(r"([A-Za-z0-9_.\-]+)==([^\s;\\]+)\s*(?:;\s*([^\\\n]+))?", block)
        if m:
            pins.setdefault(canonicalize_name(m[1]), []).append(
                (m[2], (m[3] or "").strip(), block.count("--hash=sha256:")))
    return pins


def test_lock_pins_every_declared_dependency_with_hashes():
    """The lock `make` installs from (pip --require-hashes) covers pyproject: every dependency, extra used by
    `make venv` and the build backend, at a version the specifier allows, each with at least one hash."""
    pins = lock_pins()
    assert pins, "requirements.lock is empty"
    assert all(n >= 1 for entries in pins.values() for _, _, n in entries), "a pin without --hash"
    for req in requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in requirements.lock (run `make lock`)"
        for pinned, _, _ in pins[name]:
            assert req.specifier.contains(pinned, prereleases=True), f"lock pins {name}=={pinned}, pyproject {req}"


def test_makefile_installs_from_the_lock_with_hashes():
    make = (ROOT / "Makefile").read_text()
    assert "--require-hashes --no-deps -r requirements.lock" in make
    assert re.search(r"^\$\(STAMP\): pyproject.toml requirements.lock$", make, flags=re.M)


def test_conda_env_lists_every_dependency_and_no_relative_install():
    env = yaml.safe_load((ROOT / "envs/repro-dpadmm.yaml").read_text())
    conda = {re.split(r"[<>=!]", d)[0].strip() for d in env["dependencies"] if isinstance(d, str)}
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    pip_names = {canonicalize_name(re.split(r"[<>=!]", d)[0]) for d in pip}
    for req in requirements(extras=()):
        name = canonicalize_name(req.name)
        assert CONDA_NAMES.get(name, name) in conda or name in pip_names, f"{req} missing from the conda env"
    # Snakemake deploys the env file under .snakemake/conda/: a relative path there points nowhere
    assert not [d for d in pip if d.startswith(("-e", ".", "/"))], pip


def test_conda_post_deploy_installs_the_package_from_the_deployed_location(tmp_path):
    """Simulates `snakemake --sdm conda`: the post-deploy script is copied to .snakemake/conda/<hash>.post-deploy.sh
    and run inside the new env (its bin/ first on PATH) from the workflow's working directory. The env here is a
    venv that sees this environment's packages (no conda channel is reachable in the tests)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "Snakefile"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copytree(ROOT / "envs", project / "envs")
    deployed = project / ".snakemake" / "conda" / "0123abcd"
    deployed.parent.mkdir(parents=True)
    shutil.copy2(project / "envs/repro-dpadmm.yaml", f"{deployed}.yaml")
    shutil.copy2(project / "envs/repro-dpadmm.post-deploy.sh", f"{deployed}.post-deploy.sh")

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(deployed)], check=True)
    site = next((deployed / "lib").glob("python3*/site-packages"))
    import setuptools  # the env file provides setuptools >= 77 (--no-build-isolation); this env's copy stands in

    here = [p for p in sys.path if p.endswith("site-packages")]
    (site / "outer.pth").write_text("\n".join(here) + "\n")
    assert int(setuptools.__version__.split(".")[0]) >= 77
    env = {**os.environ, "PATH": f"{deployed / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("REPRO_DPADMM_ROOT", None)
    env.pop("PYTHONPATH", None)
    interpreter = (project / "envs/repro-dpadmm.post-deploy.sh").read_text().splitlines()[0][2:].split()
    # --without-pip: pip comes from the outer environment through outer.pth, run as `python -m pip`
    proc = subprocess.run([*interpreter, f"{deployed}.post-deploy.sh"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    probe = subprocess.run([str(deployed / "bin/python"), "-c",
                            "import repro_dpadmm, importlib.metadata as m; "
                            "print(repro_dpadmm.__file__); print(m.version('repro-dpadmm'))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    module, installed = probe.stdout.split()
    assert Path(module).resolve().is_relative_to(project / "src"), module
    assert installed == PYPROJECT["project"]["version"]


def test_post_deploy_refuses_a_directory_that_is_not_the_project(tmp_path):
    proc = subprocess.run(["bash", str(ROOT / "envs/repro-dpadmm.post-deploy.sh")], cwd=tmp_path,
                          env={**os.environ, "REPRO_DPADMM_ROOT": ""}, capture_output=True, text=True)
    assert proc.returncode != 0 and "run Snakemake from the project root" in proc.stderr


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"repro-dpadmm {version('repro-dpadmm')}"


def _parsers(parser):
    yield parser
    for action in parser._actions:
        for sub in getattr(action, "choices", None).values() if isinstance(action.choices, dict) else ():
            yield from _parsers(sub)


def test_every_argument_has_help_and_help_shows_examples(capsys):
    parser = build_parser()
    undocumented = [f"{p.prog} {a.dest}" for p in _parsers(parser) for a in p._actions
                    if not a.help and a.dest != "help" and not isinstance(a.choices, dict)]
    assert not undocumented, undocumented
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "repro-dpadmm report --results" in out and "bundle" in out


def test_ci_config_is_the_smoke_config_and_valid():
    """.test/config/config.yaml (the catalog's CI config) is config/smoke.yaml, so the two cannot drift apart."""
    from repro_dpadmm import config

    ci = ROOT / ".test/config/config.yaml"
    assert ci.resolve() == (ROOT / "config/smoke.yaml").resolve()
    merged = config.load(ci, root=ROOT)
    assert merged["papers"]["huang2019_dpadmm"]["fig1"]["iterations"] < 100


def test_report_templates_ship_with_the_package():
    """The report's templates and style sheet are package data (a wheel without them renders no report)."""
    from fnmatch import fnmatch

    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["repro_dpadmm.report"]
    folder = ROOT / "src/repro_dpadmm/report"
    shipped = [p.relative_to(folder).as_posix() for p in (folder / "templates").iterdir()]
    assert {"templates/index.html.j2", "templates/report.css", "templates/report.js"} <= set(shipped)
    assert all(any(fnmatch(rel, g) for g in globs) for rel in shipped), (shipped, globs)
    # the rendered notebooks' offline nbconvert template too
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["repro_dpadmm"]
    folder = ROOT / "src/repro_dpadmm"
    shipped = [p.relative_to(folder).as_posix() for p in (folder / "notebook_html").rglob("*") if p.is_file()]
    assert "notebook_html/offline/index.html.j2" in shipped
    assert all(any(fnmatch(rel, g) for g in globs) for rel in shipped), (shipped, globs)
