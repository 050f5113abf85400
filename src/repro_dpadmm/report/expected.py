"""The items the report expects, per paper, and how the papers are cited. The one list of expected items.

An item that is expected but has no `metrics.json` is shown as "missing"; an item that ran but is not listed here is
still shown (as an extra item), so this list never hides a result.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    id: str
    short: str          # how the report names it in tables
    title: str
    citation: str
    items: tuple[str, ...]
    beyond: bool = False  # shown under "Beyond the papers" rather than as a reproduced paper


PAPERS: tuple[Paper, ...] = (
    Paper("huang2019_dpadmm", "Huang et al. 2019 (DP-ADMM)",
          "DP-ADMM: ADMM-Based Distributed Learning With Differential Privacy",
          "Z. Huang, R. Hu, Y. Guo, E. Chan-Tin, Y. Gong. IEEE Trans. Inf. Forensics Security 15:1002-1012, 2019.",
          ("fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table2")),
    Paper("hu2020_sharing", "Hu et al. 2020 (ADMM sharing)",
          "Learning Privately over Distributed Features: An ADMM Sharing Approach",
          "Y. Hu, P. Liu, K. Ge, L. Kong, B. Jiang, D. Niu. 2020.",
          ("fig1", "fig2", "fig3", "eps_sweep")),
    Paper("zhang2018_madmm", "Zhang, Khalili, Liu 2018 (M-ADMM)",
          "Improving the Privacy and Accuracy of ADMM-Based Distributed Algorithms",
          "X. Zhang, M. M. Khalili, M. Liu. ICML 2018.",
          ("fig1", "fig2", "fig3", "fig4")),
    Paper("zhang2018_radmm", "Zhang, Khalili, Liu 2018 (R-ADMM)",
          "Recycled ADMM: Improve Privacy and Accuracy with Less Computation in Distributed Algorithms",
          "X. Zhang, M. M. Khalili, M. Liu. Allerton 2018, pp. 959-965.",
          ("fig1", "fig2", "fig3")),
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

# The expected items, per paper, in the order the report shows them.
EXPECTED_ITEMS: dict[str, tuple[str, ...]] = {p.id: p.items for p in PAPERS}


def paper(paper_id: str) -> Paper:
    """The paper record; unknown ids (e.g. a new paper) get a neutral record rather than an error."""
    return PAPER_BY_ID.get(paper_id) or Paper(paper_id, paper_id, paper_id, "", ())
