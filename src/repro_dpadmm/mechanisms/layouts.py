"""The data layouts a frontier method runs on: how the common problem's records are held (a mechanism's `layout`).

The equal-privacy frontier (experiments.beyond_frontier) gives every method the same records (one train/test split
per repeat); a layout turns them into what the method's `run` takes, and names the block of the frontier's config
that holds the constants every method of that layout shares (`constants`; a method's own constants are its class's
`parameters`). The block's name is also the label of the layout's random streams (the agents' split), so a method
added on a layout draws the same split as the methods already on it.

* `STAR`: HUANG's star network, `agents` agents with an even share of the training rows each (consensus.StarData,
  all repeats at once); constants rho and the problem's lambda/n.
* `GRAPH`: ZKL's network (`graph`), the training rows split near-evenly over its nodes (decentralized.NodeData, one
  per repeat); constants the network A, the samples per node B, floor_share and newton_tol.
* `CURATOR`: XU's single curator holding every training row (problems.l2_logistic.L2Logistic, one per repeat);
  constants n, rho, gamma, mu, c and the step-size rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import graphs
from ..algorithms import consensus
from ..algorithms import decentralized as dz
from ..datasets import partition
from ..problems.l2_logistic import L2Logistic


@dataclass(frozen=True)
class Layout:
    """A data layout: `name` (what it is), `block` (its config block of the frontier, and its random streams'
    label)."""

    name: str
    block: str

    def check(self, params: dict) -> None:
        """Raise a ValueError naming the key if the frontier config cannot be laid out this way."""

    def constants(self, params: dict, *, n_train: int, lam: float, dataset: str) -> dict:
        """The mechanism fields every method of this layout takes from the frontier config."""
        raise NotImplementedError

    def data(self, X, y, splits, params: dict, agent_rngs, *, lam: float, train: list):
        """The records of every repeat as the method's `run` takes them (`train`: each repeat's training rows as
        CSR)."""
        raise NotImplementedError


class _Star(Layout):
    def check(self, params):
        n_train, n_agents = int(params["n_train"]), int(params[self.block]["agents"])
        if n_train % n_agents:
            raise ValueError(f"HUANG's even split needs {self.block}.agents to divide n_train: {n_train} samples over "
                             f"{n_agents} agents leaves {n_train % n_agents}")

    def constants(self, params, *, n_train, lam, dataset):
        return {"rho": float(params[self.block]["rho"]), "lam_n": lam}

    def data(self, X, y, splits, params, agent_rngs, *, lam, train):
        return star_from_splits(X, y, splits, int(params[self.block]["agents"]), agent_rngs)


class _Graph(Layout):
    def network(self, params) -> tuple[np.ndarray, np.ndarray]:
        """(A, B): the network and the samples per node of a near-even split of n_train."""
        A = graphs.make_graph(params[self.block]["graph"])
        B = np.array([len(p) for p in np.array_split(np.arange(int(params["n_train"])), A.shape[0])], dtype=float)
        return A, B

    def check(self, params):
        self.network(params)

    def constants(self, params, *, n_train, lam, dataset):
        A, B = self.network(params)
        z = params[self.block]
        return {"A": A, "B": B, "lam": lam, "floor_share": float(z["floor_share"]),
                "newton_tol": float(z.get("newton_tol", 1e-6))}

    def data(self, X, y, splits, params, agent_rngs, *, lam, train):
        N = graphs.make_graph(params[self.block]["graph"]).shape[0]
        return (dz.node_data(X[tr], y[tr], graphs.split_data(len(tr), N, g)) for (tr, _), g in zip(splits, agent_rngs))


class _Curator(Layout):
    def constants(self, params, *, n_train, lam, dataset):
        x = params[self.block]
        return {"n": n_train, "lam": lam, "rho": float(x["rho"]), "gamma": float(x["gamma"]), "mu": float(x["mu"]),
                "c": float(x["c"]), "eta": x.get("eta", "auto"), "eta_rule": x.get("eta_rule", "paper"),
                "dataset": dataset}

    def data(self, X, y, splits, params, agent_rngs, *, lam, train):
        return (L2Logistic(X=Xtr, y=y[tr], lam=lam) for Xtr, (tr, _) in zip(train, splits))


STAR = _Star("star", "huang")
GRAPH = _Graph("graph", "zhang")
CURATOR = _Curator("curator", "xu")
LAYOUTS = (STAR, GRAPH, CURATOR)


def star_from_splits(X, y, splits, n_agents: int, agent_rngs) -> consensus.StarData:
    """HUANG's StarData (one data draw per repeat) from the frontier's shared splits, each repeat's training rows
    partitioned evenly over n_agents by its own generator. (consensus.split_star draws its own split; this is the
    same construction from given indices.)"""
    rows = [tr[partition.even(len(tr), n_agents, g)] for (tr, _), g in zip(splits, agent_rngs)]
    return consensus.star_from_rows(X, y, np.stack(rows), np.stack([te for _, te in splits]))
