"""The registry of papers and items (repro_dpadmm.registry) is the one list: the configs, the notebooks on disk, the
config schema and the claims files agree with it, and config validation names an item it does not list."""

from __future__ import annotations

import yaml
from conftest import ROOT

from repro_dpadmm import config, registry
from repro_dpadmm.claims.expand import expand
from repro_dpadmm.safeload import load_yaml


def _yaml(rel: str):
    return yaml.safe_load((ROOT / rel).read_text())


def mismatches() -> list[str]:
    """Every place that lists papers or items and disagrees with the registry, named with what differs."""
    reg = {p.id: list(p.item_ids) for p in registry.PAPERS}
    out = []

    def compare(where: str, found: dict[str, list[str]]) -> None:
        for paper in sorted(set(found) - set(reg)):
            out.append(f"{where}: paper {paper} is not in the registry")
        for paper in sorted(set(reg) - set(found)):
            out.append(f"{where}: registry paper {paper} is missing")
        for paper in sorted(set(found) & set(reg)):
            extra, missing = set(found[paper]) - set(reg[paper]), set(reg[paper]) - set(found[paper])
            if extra:
                out.append(f"{where}: {paper} has items the registry does not list: {sorted(extra)}")
            if missing:
                out.append(f"{where}: {paper} lacks registry items {sorted(missing)}")

    for rel in ("config/config.yaml", "config/smoke.yaml"):
        compare(rel, {p: list(items) for p, items in _yaml(rel)["papers"].items()})

    nbs = {d.name: [f.stem for f in d.glob("*.ipynb")] for d in (ROOT / "notebooks").iterdir() if d.is_dir()}
    compare("notebooks/", nbs)
    out += [f"registry: {it.paper}/{it.id} names notebook {it.notebook}, which does not exist"
            for it in registry.items() if not (ROOT / it.notebook).is_file()]

    schema = config.schema()
    papers = schema["properties"]["papers"]["properties"]
    per_item = {}
    for paper, ref in papers.items():
        node = schema["$defs"][ref["$ref"].split("/")[-1]]
        per_item[paper] = list(node.get("properties", {}))
    compare("workflow/schemas/config.schema.yaml (papers.<paper>.<item>)", per_item)

    claims_files = {f.stem: expand(load_yaml(f)).data for f in (ROOT / "config/claims").glob("*.yaml")
                    if f.stem not in ("claims.schema", "datasets")}
    for section in ("items", "metrics"):
        compare(f"config/claims/<paper>.yaml `{section}:`",
                {p: list(cf.get(section) or {}) for p, cf in claims_files.items()})
    for paper, cf in claims_files.items():
        for claim in cf.get("claims") or []:
            if claim.get("item") is not None and not registry.listed(paper, claim["item"]):
                out.append(f"config/claims/{paper}.yaml: claim {claim.get('id')} names item {claim['item']}, "
                           "not in the registry")
    for claim in expand(load_yaml(ROOT / "config/claims/datasets.yaml")).data["claims"]:
        if claim["id"].split(".")[0] not in reg:
            out.append(f"config/claims/datasets.yaml: claim {claim['id']} belongs to no registry paper")
    return out


def test_configs_notebooks_schema_and_claims_list_the_registry_items():
    problems = mismatches()
    assert not problems, "\n".join(problems)


def test_the_check_names_what_disagrees(monkeypatch):
    """The agreement check is not vacuous: an item added to the registry alone is named in every place it lacks."""
    extra = registry.Paper("beyond", "b", "b", "", (*registry.PAPER_BY_ID["beyond"].item_ids, "fig9"), beyond=True)
    monkeypatch.setattr(registry, "PAPERS", tuple(extra if p.id == "beyond" else p for p in registry.PAPERS))
    monkeypatch.setitem(registry.PAPER_BY_ID, "beyond", extra)
    problems = "\n".join(mismatches())
    for place in ("config/config.yaml", "config/smoke.yaml", "notebooks/", "config.schema.yaml",
                  "`items:`", "`metrics:`"):
        assert f"{place}" in problems and "fig9" in problems, place
    assert "names notebook notebooks/beyond/fig9.ipynb, which does not exist" in problems


def test_config_validation_names_an_unregistered_item_or_a_missing_notebook(tmp_path):
    (tmp_path / "notebooks/huang2019_dpadmm").mkdir(parents=True)
    (tmp_path / "notebooks/huang2019_dpadmm/fig1.ipynb").write_text("{}")
    (tmp_path / "notebooks/demo").mkdir()
    (tmp_path / "notebooks/demo/item.ipynb").write_text("{}")
    papers = {"huang2019_dpadmm": {"fig1": {}, "fig2": {}, "fig9": {}}, "demo": {"item": {}, "other": {}}}
    assert registry.config_errors(papers, tmp_path) == [
        "papers.huang2019_dpadmm.fig2: no notebook notebooks/huang2019_dpadmm/fig2.ipynb for this registered item",
        "papers.huang2019_dpadmm.fig9: no such item (not in repro_dpadmm.registry; allowed: fig1, fig2, fig3, fig4, "
        "fig5, fig6, table2)",
        # a paper the registry does not know (a scratch project's) runs only items that have a notebook
        "papers.demo.other: no such item (no paper 'demo' in repro_dpadmm.registry and no notebook "
        "notebooks/demo/other.ipynb; allowed papers: " + ", ".join(registry.paper_ids()) + ")",
    ]


def test_items_know_their_notebook_and_target():
    it = registry.PAPER_BY_ID["huang2019_dpadmm"].items[2]
    assert (it.paper, it.id, it.notebook, it.target) == ("huang2019_dpadmm", "fig3",
                                                         "notebooks/huang2019_dpadmm/fig3.ipynb", "huang2019_dpadmm_fig3")
    assert [p.id for p in registry.PAPERS if p.beyond] == ["beyond"]
    targets = [it.target for it in registry.items()]
    assert len(targets) == sum(len(p.item_ids) for p in registry.PAPERS) == len(set(targets))
