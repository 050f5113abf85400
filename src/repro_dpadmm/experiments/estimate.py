"""What an item will cost before it starts: peak memory and work, from its parameters alone.

Every item's estimate is BASE (the process: Python, numpy, scipy, numba, matplotlib and the notebook kernel) plus
terms, each the bytes of one family of arrays the run holds at once, with the config keys that size it: the dataset
arrays, the per-repeat copies of the data, the agents' state, the recorded traces, a graph's dense matrices, an
audit's chunk of trials. `work` is the number of inner-loop operations in the same terms (repeats x iterations x
rows x nonzeros, and so on), shown relative to the item's paper settings.

It is a coarse model of the dominant arrays, not a profile: it exists to refuse, before any work, a schema-valid run
that cannot fit in the machine's memory (`refuse_too_large`), naming the keys that make it large. At the paper
settings it lies between the measured peak and three times it (README cost table;
tests/experiments/test_estimate.py checks it). The machine's memory is psutil's total, or a cgroup's limit when
lower; `REPRO_DPADMM_MEMORY_GB` replaces it (a number of GiB; `off` disables the check).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..datasets.registry import DATASETS
from ..privacy.mechanisms import MIN_EPSILON

BASE = 360 * 2**20      # the process before any array of the item (the smallest measured item peaks at 264 MB)
F8 = 8                  # bytes of a float64
NNZ = {"adult_huang2019": 14, "adult_zhang2018": 14, "a9a": 14, "a8a": 14, "ijcnn1": 13, "gisette": 5000,
       "bio_train": 74}  # nonzeros per row (one-hot rows: one per categorical feature; gisette, bio_train: dense)
CSR = 12                # bytes per stored nonzero of a CSR matrix (value and column index)
MEMORY_ENV = "REPRO_DPADMM_MEMORY_GB"


class TooLarge(ValueError):
    """A run whose estimated memory exceeds the machine's; the message names the keys that make it large."""


@dataclass
class Term:
    what: str
    keys: tuple[str, ...]
    bytes: float


@dataclass
class Estimate:
    paper: str
    item: str
    terms: list[Term] = field(default_factory=list)
    work: float = 0.0

    def add(self, what: str, keys, nbytes: float) -> None:
        self.terms.append(Term(what, tuple([keys] if isinstance(keys, str) else keys), float(nbytes)))

    @property
    def bytes(self) -> float:
        return BASE + sum(t.bytes for t in self.terms)

    def largest(self) -> Term | None:
        return max(self.terms, key=lambda t: t.bytes, default=None)


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _shape(name: str) -> tuple[int, int]:
    """(rows, columns) of a dataset: every split together."""
    shapes = DATASETS[name].shapes
    rows = sum(s[0] for k, s in shapes.items() if k.startswith("X"))
    cols = next(s[1] for k, s in shapes.items() if k.startswith("X"))
    return rows, cols


def _datasets(e: Estimate, params: dict) -> list[str]:
    names = [n for n in params.get("datasets") or [] if n in DATASETS]
    for n in names:
        rows, cols = _shape(n)
        e.add(f"dataset {n} (loaded and a working copy)", "datasets", 2 * rows * cols * F8)
    return names


def _int(params: dict, key: str, default: int) -> int:
    value = params.get(key, default)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _len(params: dict, key: str) -> int:
    value = params.get(key)
    return len(value) if isinstance(value, (list, dict)) else 1


# ------------------------------------------------------------------------------------------------------ per paper

def _huang(e: Estimate, params: dict) -> None:
    R, T = _int(params, "repeats", 1), _int(params, "iterations", 100)
    n_train = _int(params, "n_train", 40_000)
    rows = n_train + (_int(params, "n_test", 0) or max(45_222 - n_train, 0))
    agents = params.get("agents", 100)
    n = max(agents) if isinstance(agents, list) and agents else _int(params, "agents", 100)
    d = 104
    settings = _len(params, "agents") if isinstance(agents, list) else \
        _len(params, "epsilons") + _len(params, "deltas")
    methods = 5 if "dpsgd" in params else 1
    if e.item == "table2":
        R, settings = 1, _len(params, "epsilons") * 4
    # the per-repeat train/test splits as block-diagonal CSR matrices (and their transposes)
    e.add("the data of every repeat (the split rows, their block-diagonal CSR and its transpose)",
          ("repeats", "n_train"), 3 * R * rows * NNZ["adult_huang2019"] * CSR)
    e.add("the agents' iterates, duals and gradients of every repeat", ("repeats", "agents"), 12 * R * n * d * F8)
    e.add("the traces of every repeat and setting", ("repeats", "iterations"),
          10 * R * (T + 1) * settings * methods * F8)
    e.work = R * T * n_train * NNZ["adult_huang2019"] * settings * methods * _int(params, "timing_rounds", 1)


def _hu(e: Estimate, params: dict) -> None:
    R = _int(params, "repeats", 1)
    names = [n for n in params.get("datasets") or [] if n in DATASETS] or ["a9a"]
    rows, d = max((_shape(n) for n in names), key=lambda s: s[0] * s[1])
    rows = min(rows, _int(params, "train_rows", rows) or rows)
    T = max(_int(params, "iterations", 100), _int(params, "noise_iterations", 0),
            max([_int(p, "iterations", 0) for p in (params.get("panels") or {}).values() if isinstance(p, dict)],
                default=0))
    sigmas = max(_len(params, "noise_sigmas"),
                 max([_len(p, "sigmas") + _len(p, "epsilons") for p in (params.get("panels") or {}).values()
                      if isinstance(p, dict)], default=1))
    parties = max(_len(params, "boundaries") - 1, 3)
    e.add("each party's block and shared values of every repeat", ("repeats", "train_rows"),
          6 * R * rows * parties * F8)
    e.add("the traces of every repeat and noise level", ("repeats", "iterations"), 12 * R * (T + 1) * sigmas * F8)
    sgd = params.get("sgd") if isinstance(params.get("sgd"), dict) else {}
    e.work = R * T * rows * d * sigmas + _int(sgd, "epochs", 0) * rows * d * (_len(sgd, "lr_grid") + 1)


def _zkl(e: Estimate, params: dict) -> None:
    R, T = _int(params, "repeats", 1), _int(params, "iterations", 100)
    T = max(T, _int(params, "freeze_iterations", 0))
    graph = params.get("graph") if isinstance(params.get("graph"), dict) else {}
    networks = params.get("networks") if isinstance(params.get("networks"), list) else []
    N = max([_int(graph, "nodes", 5)] + [_int(g, "nodes", 5) for g in networks if isinstance(g, dict)])
    rows = min(_int(params, "subsample", 45_222) or 45_222, 45_222)
    d = 105
    curves = max(_len(params, "curves"), _len(params, "q1_list"), _len(params, "gammas"), 4) * \
        max(_len(params, "alpha1"), _len(params, "alphas"), 1)
    e.add("the graph's dense adjacency and Laplacians", "graph.nodes", 6 * N * N * F8)
    e.add("the nodes' data, iterates and duals of every repeat", ("repeats", "graph.nodes"),
          2 * rows * d * F8 + 10 * R * N * d * F8)
    e.add("the per-node traces of every repeat and curve", ("repeats", "iterations", "graph.nodes"),
          4 * R * (T + 1) * N * curves * F8)
    e.work = R * T * rows * d * curves


def _xu(e: Estimate, params: dict) -> None:
    R, T = _int(params, "repeats", 1), _int(params, "iterations", 100)
    names = [n for n in params.get("datasets") or [] if n in DATASETS] or ["a9a"]
    rows, d = max((_shape(n) for n in names), key=lambda s: s[0] * s[1])
    edges = 5 * d
    variants = params.get("variants") if isinstance(params.get("variants"), dict) else {}
    T = max([T] + [_int({"t": t}, "t", 0) for t in variants.get("iterations") or []])
    settings = _len(params, "epsilons") + sum(_len(variants, k) for k in variants)
    ref = _int(params, "reference_iterations", 0)
    e.add("the graph (graphical lasso) and the edge variables of every repeat", "repeats",
          8 * d * d * F8 + 6 * R * edges * d * F8)
    e.add("the traces of every repeat and setting", ("repeats", "iterations"), 8 * R * (T + 1) * settings * 4 * F8)
    e.add("the reference runs' evaluated iterates", "reference_evaluations",
          _int(params, "reference_evaluations", 0) * d * 4 * F8)
    e.work = len(names) * (R * T * rows * d * settings * 4 + ref * rows * d) * max(_int(params, "timing_runs", 1), 1)


def _audit(e: Estimate, params: dict) -> None:
    trials = _int(params, "trials", 0) + _int(params, "calibration_trials", 0)
    chunk = min(_int(params, "chunk", 50_000), max(trials, 1))
    dim = 124   # the largest released vector: a9a's 123 features and a bias
    mechs = _len(params, "mechanisms")
    e.add("one chunk of trials: normals, releases and projections", "chunk", 6 * chunk * dim * F8)
    e.add("the scores of every trial, per mechanism and dataset", ("trials", "calibration_trials"),
          2 * 2 * trials * mechs * F8)
    e.work = 2 * trials * dim * dim * mechs


def _audit_run(e: Estimate, params: dict) -> None:
    T = _int(params, "iterations", 100)
    total = 0
    for name, d in (("huang2019", 104), ("xu2020", 104), ("hu2020", 123)):
        sub = params.get(name) if isinstance(params.get(name), dict) else {}
        rows = _int(sub, "rows", 0) or _int(sub, "agents", 0) * _int(sub, "rows_per_agent", 0)
        runs = _int(sub, "runs", 1)
        e.add(f"the {name} audit's runs (data, iterates)", (f"{name}.runs", f"{name}.rows"), 2 * runs * rows * d * F8)
        total += runs * rows * d * T * _len(params, "levels")
    e.work = total


def _frontier(e: Estimate, params: dict) -> None:
    R, T = _int(params, "repeats", 1), _int(params, "iterations", 100)
    n_train = _int(params, "n_train", 40_000)
    e.add("the splits of every repeat (shared by the methods)", ("repeats", "n_train"),
          4 * R * n_train * NNZ["adult_huang2019"] * CSR)
    # a tunable job runs its step multiples as lanes of one run (beyond_frontier.step_runs): the margins of every
    # multiple and training row at once, with sigma(-margins) and the kernel's input copy beside them
    e.add("the step lanes' margins (every step multiple at once)", ("repeats", "n_train", "step_grid"),
          3 * _len(params, "step_grid") * R * n_train * F8)
    e.add("the jobs' results (test errors, calibrations)", ("repeats", "levels"),
          R * _len(params, "levels") * _len(params, "methods") * 64 * F8)
    e.work = R * T * n_train * NNZ["adult_huang2019"] * _len(params, "levels") * _len(params, "methods")


MODELS = {"huang2019_dpadmm": _huang, "hu2020_sharing": _hu, "zhang2018_madmm": _zkl, "zhang2018_radmm": _zkl,
          "xu2020_dpaccadmm": _xu, ("beyond", "audit"): _audit, ("beyond", "audit_run"): _audit_run,
          ("beyond", "frontier"): _frontier}


def estimate(paper: str, item: str, params: dict) -> Estimate:
    """The item's peak-memory terms and work under `params` (its config entry, as the runner receives it)."""
    e = Estimate(paper, item)
    _datasets(e, params)
    model = MODELS.get((paper, item)) or MODELS.get(paper)
    if model is not None:
        model(e, params)
    else:   # an item without a model: its data, and traces sized by the keys every item may have
        R, T = _int(params, "repeats", 1), _int(params, "iterations", 1)
        e.add("traces of every repeat", ("repeats", "iterations"), 10 * R * (T + 1) * F8)
        e.work = R * T
    return e


# ------------------------------------------------------------------------------------------------ the machine

def machine_memory() -> tuple[float | None, str]:
    """(bytes the check allows, where that number comes from); (None, why) when the check is off."""
    value = os.environ.get(MEMORY_ENV, "").strip()
    if value:
        if value.lower() == "off":   # the one word for it (0 is a number, refused below like any below one byte)
            return None, f"{MEMORY_ENV}={value}"
        try:
            gib = float(value)
        except ValueError:
            gib = float("nan")
        if not (math.isfinite(gib) and gib > 0):
            raise TooLarge(f"{MEMORY_ENV} must be a positive number of GiB or 'off', got {value!r}")
        return gib * 2**30, f"{MEMORY_ENV}={value}"
    import psutil

    total, source = float(psutil.virtual_memory().total), "the machine's memory"
    limit = _cgroup_limit()
    if limit is not None and limit < total:
        total, source = limit, "this process's memory limit (cgroup)"
    return total, source


def _cgroup_limit() -> float | None:
    for path in (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return float(text)
    return None


def refuse_too_large(paper: str, item: str, params: dict) -> Estimate:
    """Raise TooLarge, naming the keys of the largest term, if the item's estimated peak memory exceeds the
    machine's (see machine_memory); return the estimate otherwise."""
    e = estimate(paper, item, params)
    allowed, source = machine_memory()
    if allowed is not None and e.bytes > allowed:
        top = e.largest()
        raise TooLarge(
            f"{paper}/{item}: these settings need about {_gib(e.bytes)} of memory, more than {source} "
            f"({_gib(allowed)}); the largest part is {top.what}, {_gib(top.bytes)}, sized by "
            + ", ".join(f"papers.{paper}.{item}.{k}" if k != "datasets" else f"papers.{paper}.{item}.datasets"
                        for k in top.keys)
            + f" (value{'s' if len(top.keys) > 1 else ''} "
            + ", ".join(_shown(params, k) for k in top.keys)
            + f"). Lower {'them' if len(top.keys) > 1 else 'it'}, or set {MEMORY_ENV} (GiB, or 'off') to run "
              "anyway")
    return e


def cannot_run(paper: str, item: str, params: dict) -> str:
    """Why schema-valid parameters cannot run at all ('' when they can), found before any work: ZKL's privacy bound
    (ICML Thm 4.1, Allerton Thm IV.1) needs C <= B_i at every node, and an even split of the dataset's rows over
    N nodes gives the smallest node floor(rows / N) rows (graphs.split_data); an uneven split needs min_size rows
    at each of the N nodes. (Without this, `nodes: 5000` failed at run time with C > B_i in a long traceback.)"""
    tiny = _tiny_epsilon(params)
    if tiny:
        key, value = tiny
        return (f"{paper}/{item}: papers.{paper}.{item}.{key} = {value!r} is too small to calibrate: the smallest "
                f"epsilon a calibration takes is {MIN_EPSILON:g} (below it the noise multiplier sqrt(2 ln(1.25/delta))"
                " / epsilon, or its square, can overflow a float); give an epsilon of at least that")
    if not paper.startswith("zhang2018") or "C" not in params:
        return ""
    shapes = [DATASETS[n].shapes.get("X") for n in params.get("datasets") or [] if n in DATASETS]
    rows = min((int(s[0]) for s in shapes if s), default=None)
    if rows is None:
        return ""
    if params.get("subsample"):
        rows = min(rows, int(params["subsample"]))
    C = float(params["C"])
    nets = {"graph": params.get("graph")}
    for group in ("extra_networks", "networks"):
        nets.update({f"{group}.{k}": v for k, v in (params.get(group) or {}).items()})
    for key, graph in nets.items():
        if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), int):
            continue
        nodes = graph["nodes"]
        if params.get("split", "even") == "uneven":
            need = int(params.get("min_size") or 1) * nodes
            if need > rows:
                return (f"{paper}/{item}: papers.{paper}.{item}.{key}.nodes = {nodes} nodes of at least min_size = "
                        f"{params.get('min_size')} rows need {need:,} rows; the dataset has {rows:,}")
        elif rows // nodes < C:
            return (f"{paper}/{item}: papers.{paper}.{item}.{key}.nodes = {nodes}: {rows:,} rows split evenly give "
                    f"a node {rows // nodes} rows, fewer than C = {params['C']:g} (papers.{paper}.{item}.C); the "
                    "privacy bound needs C <= B_i at every node: lower the nodes or C")
    return ""


_EPSILON_KEYS = re.compile(r"(?:.*_)?(?:epsilon|epsilons|eps|levels)")


def _tiny_epsilon(params: dict) -> tuple[str, float] | None:
    """(dotted key, value) of the first privacy budget below MIN_EPSILON among the parameters: a number, or a list of
    numbers, under a key named epsilon(s), eps or levels (frontier totals) at any depth; None if there is none."""
    stack = [("", params)]
    while stack:
        prefix, mapping = stack.pop()
        for key, value in mapping.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                stack.append((f"{name}.", value))
            elif _EPSILON_KEYS.fullmatch(str(key)):
                values = value if isinstance(value, list) else [value]
                for i, v in enumerate(values):
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < MIN_EPSILON:
                        return (f"{name}[{i}]" if isinstance(value, list) else name), float(v)
    return None


def _shown(params: dict, key: str) -> str:
    value = params
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def summary(e: Estimate, paper_params: dict | None = None) -> str:
    """One line for the item's log: the estimated peak memory and the work relative to the paper's settings."""
    line = f"{e.paper}/{e.item}: estimated peak memory {_gib(e.bytes)}"
    if paper_params is not None:
        ref = estimate(e.paper, e.item, paper_params).work
        if ref > 0 and e.work > 0:
            line += f", about {e.work / ref:.3g}x the work of the paper's settings"
    return line
