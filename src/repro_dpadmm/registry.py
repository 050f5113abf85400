"""The papers this project reproduces and their items: the one list of them.

Every paper has an id (used in paths, rule names, notebook folders and the report), a short name, its title and
citation, and its items (tables and figures) in the order the report shows them. Each item has one notebook,
`notebooks/<paper>/<item>.ipynb`, and one Snakemake target, `<paper>_<item>` (the paper's id alone builds all of its
items). "Beyond the papers" is listed like a paper, marked `beyond`: its items are this project's own experiments.

Who reads it: the Snakemake rules (the named per-paper and per-item targets, each item's notebook), the report (the
items it expects, how it names and cites the papers), the `repro-dpadmm` command (paper and item choices) and the
config validation (`repro_dpadmm.config.errors`: a config item that is not registered, or whose notebook is missing,
is an error naming it). `tests/test_registry.py` checks that the config files, the notebooks on disk, the config
schema's per-paper keys and the claims files list exactly these items.

To add an item: add it to its paper's `items` here, write its text `notebooks/<paper>/<item>.md` and generate its
notebook with `python -m repro_dpadmm.notebooks`, give it parameters in `config/config.yaml` and `config/smoke.yaml`
(and a schema entry in `workflow/schemas/config.schema.yaml`), and its claims in `config/claims/<paper>.yaml`
(README.md, "Adding a paper").
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path


def notebook_path(paper: str, item: str) -> str:
    """An item's notebook, relative to the project root (the rules, the runner and the checks use this)."""
    return f"notebooks/{paper}/{item}.ipynb"


@dataclass(frozen=True)
class Item:
    paper: str
    id: str

    @property
    def notebook(self) -> str:
        return notebook_path(self.paper, self.id)

    @property
    def target(self) -> str:
        """The Snakemake target that builds this item."""
        return f"{self.paper}_{self.id}"


@dataclass(frozen=True)
class Paper:
    id: str
    short: str            # how the report names it in tables
    title: str
    citation: str
    item_ids: tuple[str, ...]   # in the order the report shows them
    beyond: bool = False  # this project's own experiments, shown under "Beyond the papers"
    links: tuple[tuple[str, str], ...] = ()   # (label, url): the paper's DOI and preprint, where they exist

    @property
    def items(self) -> tuple[Item, ...]:
        return tuple(Item(self.id, i) for i in self.item_ids)


PAPERS: tuple[Paper, ...] = (
    Paper("huang2019_dpadmm", "Huang et al. 2019 (DP-ADMM)",
          "DP-ADMM: ADMM-Based Distributed Learning With Differential Privacy",
          "Z. Huang, R. Hu, Y. Guo, E. Chan-Tin, Y. Gong. IEEE Trans. Inf. Forensics Security 15:1002-1012, 2019.",
          ("fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table2"),
          links=(("doi:10.1109/TIFS.2019.2931068", "https://doi.org/10.1109/TIFS.2019.2931068"),
                 ("arXiv:1808.10101", "https://arxiv.org/abs/1808.10101"))),
    Paper("hu2020_sharing", "Hu et al. 2020 (ADMM sharing)",
          "Learning Privately over Distributed Features: An ADMM Sharing Approach",
          "Y. Hu, P. Liu, K. Ge, L. Kong, B. Jiang, D. Niu. 2020.",
          ("fig1", "fig2", "fig3", "eps_sweep"),
          links=(("arXiv:1907.07735", "https://arxiv.org/abs/1907.07735"),)),
    Paper("zhang2018_madmm", "Zhang, Khalili, Liu 2018 (M-ADMM)",
          "Improving the Privacy and Accuracy of ADMM-Based Distributed Algorithms",
          "X. Zhang, M. M. Khalili, M. Liu. ICML 2018.",
          ("fig1", "fig2", "fig3", "fig4"),
          links=(("arXiv:1806.02246", "https://arxiv.org/abs/1806.02246"),)),
    Paper("zhang2018_radmm", "Zhang, Khalili, Liu 2018 (R-ADMM)",
          "Recycled ADMM: Improve Privacy and Accuracy with Less Computation in Distributed Algorithms",
          "X. Zhang, M. M. Khalili, M. Liu. Allerton 2018, pp. 959-965.",
          ("fig1", "fig2", "fig3"),
          links=(("doi:10.1109/ALLERTON.2018.8635916", "https://doi.org/10.1109/ALLERTON.2018.8635916"),
                 ("arXiv:1810.03197", "https://arxiv.org/abs/1810.03197"))),
    Paper("xu2020_dpaccadmm", "Xu et al. 2020 (DP-AccADMM)",
          "Differentially Private ADMM Algorithms for Machine Learning",
          "T. Xu, F. Shang, Y. Liu, H. Liu, L. Shen, M. Gong. Manuscript, 2020.",
          ("table1", "fig1", "fig2")),
    Paper("beyond", "Beyond the papers",
          "Beyond the papers: an equal-privacy frontier and an empirical privacy audit",
          "Not from any of the five papers: additional experiments of this project.",
          ("frontier", "audit", "audit_run"), beyond=True),
)

PAPER_BY_ID: dict[str, Paper] = {p.id: p for p in PAPERS}


def paper_ids() -> tuple[str, ...]:
    return tuple(p.id for p in PAPERS)


def items() -> tuple[Item, ...]:
    """Every item of every paper, in report order."""
    return tuple(it for p in PAPERS for it in p.items)


def listed(paper: str, item: str) -> bool:
    return paper in PAPER_BY_ID and item in PAPER_BY_ID[paper].item_ids


def did_you_mean(word: str, choices, cutoff: float = 0.8) -> str:
    """" (did you mean 'x'?)" when `word` is close to one of `choices` (a misspelt key, paper or item), else "".
    Item ids differ by one character (fig1, fig2), hence the strict default; a config key passes a looser one."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=2, cutoff=cutoff)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def problem(paper: str, item: str, root: Path) -> str | None:
    """Why `paper`/`item` cannot run in the project at `root`, naming what is allowed; None when it can. A registered
    paper runs only its registered items, each with its notebook on disk. A paper the registry does not know runs
    only where it has a notebook: a scratch project's own test item, which its own schema allowed (the project's
    schema rejects unknown papers)."""
    reg = PAPER_BY_ID.get(paper)
    nb = notebook_path(paper, item)
    if reg is None:
        if (root / nb).is_file():
            return None
        return (f"no such item{did_you_mean(paper, paper_ids())} (no paper {paper!r} in repro_dpadmm.registry and "
                f"no notebook {nb}; allowed papers: {', '.join(paper_ids())})")
    if item not in reg.item_ids:
        return (f"no such item{did_you_mean(item, reg.item_ids)} (not in repro_dpadmm.registry; allowed: "
                f"{', '.join(reg.item_ids)})")
    if not (root / nb).is_file():
        return f"no notebook {nb} for this registered item"
    return None


def config_errors(papers: dict, root: Path) -> list[str]:
    """`problem` of every item of a config's `papers:` mapping, each message starting with the item's key."""
    return [f"papers.{paper}.{item}: {why}"
            for paper, its in (papers if isinstance(papers, dict) else {}).items()
            for item in (its if isinstance(its, dict) else ())
            if (why := problem(paper, item, root)) is not None]
