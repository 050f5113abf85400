"""Privacy as data: what a private run spent, recorded by the algorithm, and one function from that record to totals.

A private algorithm returns, in its History, one `Spend` per setting: the dp-accounting `DpEvent` of everything it
released (composed over its iterations; Gaussian noise multipliers are the noise standard deviation divided by the
l2-sensitivity under the recorded neighbouring relation), the neighbouring relation itself, and which paper bound
claims it (a name in `PAPER_BOUNDS` with that bound's arguments). `totals(spend, delta)` turns a record into the
paper's own epsilon beside dp-accounting's RDP and PLD totals, so experiments never recompute the noise from
(epsilon, delta) on the side: they account what the run actually used.

Pure epsilon-DP steps (e.g. ZKL's and HUANG's DVP) are recorded as binary randomised response with the same epsilon:
its privacy loss distribution is the (eps, 0) dominating pair, so their PLD total is the optimal composition
(Kairouz, Oh, Viswanath 2015) of any eps-DP steps, whatever their noise; it is computed by
`accounting.pure_composed_epsilon` (tested against the exact binomial formula) because dp-accounting's PLD accountant
accepts randomised response only under its own replace-one convention.
"""

from __future__ import annotations

import importlib.util
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .accounting import LazyEvent, built, dp_accounting, pld_grid, pure_composed_epsilon

# The neighbouring relation a Spend's sensitivities are computed under. The events carry multipliers relative to
# that sensitivity, so the accountants run with dp-accounting's default relation: for mechanisms without
# subsampling the relation enters only through the sensitivity (dp-accounting's REPLACE_ONE would instead double a
# Gaussian event's sensitivity once more).
REPLACE_ONE = "replace-one"
ADD_OR_REMOVE_ONE = "add/remove-one"
RELATIONS = (REPLACE_ONE, ADD_OR_REMOVE_ONE)


class _BuiltOnRead:
    """Spend.event: stored as given (a DpEvent or a LazyEvent) and read as a DpEvent, a LazyEvent being built on the
    first read and kept. A data descriptor as the dataclass field's class attribute: the generated __init__ stores
    through `__set__`; `__get__` on the class raises AttributeError, so the field has no default. A pickle holds the
    stored value (instance __dict__), so old part files with built events read the same."""

    def __get__(self, obj, owner=None):
        if obj is None:
            raise AttributeError("event")
        event = obj.__dict__["event"]
        if isinstance(event, LazyEvent):
            event = obj.__dict__["event"] = event.build()
        return event

    def __set__(self, obj, value):
        obj.__dict__["event"] = value


@dataclass(frozen=True)
class Spend:
    """One private run's release: a dp-accounting event, the neighbouring relation it is private under, and the
    paper bound (a `PAPER_BOUNDS` name and its keyword arguments) that claims its privacy, if any. `event` may be
    given as a LazyEvent (what gaussian_steps and pure_steps return); it is always read as a DpEvent."""

    event: dp_accounting.DpEvent = _BuiltOnRead()
    neighbouring: str = REPLACE_ONE
    bound: str | None = None
    bound_args: dict = field(default_factory=dict)

    def __post_init__(self):
        event = self.__dict__["event"]  # as given: checking a LazyEvent does not build it
        if not isinstance(event, LazyEvent) and not isinstance(event, dp_accounting.DpEvent):
            raise TypeError(f"Spend.event must be a dp_accounting.DpEvent, got {type(event).__name__}")
        if self.neighbouring not in RELATIONS:
            raise ValueError(f"Spend.neighbouring must be one of {RELATIONS}, got {self.neighbouring!r}")
        if self.bound is not None and _find_bound(self.bound) is None:
            raise ValueError(f"Spend.bound {self.bound!r} is not a paper bound; known: {sorted(_all_bounds())}")


# The builders of the LazyEvents below (module functions, so that a pickled Spend refers to them by name).
def _self_composed_gaussian(z: float, steps: int):
    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), steps)


def _composed_gaussian(multipliers: list, counts: list):
    return dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), k)
                                          for z, k in zip(multipliers, counts)])


def _composed_pure(noise_parameters: list, counts: list):
    return dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(
        dp_accounting.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2), k)
        for p, k in zip(noise_parameters, counts)])


def gaussian_steps(noise_multipliers: Sequence[float] | float, steps: int | None = None) -> LazyEvent:
    """Composed full-batch Gaussian steps: one multiplier repeated `steps` times, or one multiplier per step
    (equal multipliers self-composed, so the PLD accountant convolves once per distinct value). Checked now, built
    as a DpEvent where it is read (LazyEvent)."""
    if np.ndim(noise_multipliers) == 0:
        z = float(noise_multipliers)
        if not (z > 0 and np.isfinite(z)) or steps is None or steps < 1:
            raise ValueError(f"need a noise multiplier > 0 and steps >= 1, got {z!r}, {steps!r}")
        return LazyEvent(_self_composed_gaussian, (z, int(steps)))
    zs = np.asarray(noise_multipliers, dtype=float).ravel()
    if zs.size == 0 or not np.all(np.isfinite(zs)) or zs.min() <= 0:
        raise ValueError("noise multipliers must be finite and > 0")
    values, counts = np.unique(zs, return_counts=True)
    return LazyEvent(_composed_gaussian, ([float(z) for z in values], [int(k) for k in counts]))


def pure_steps(epsilons: Sequence[float]) -> LazyEvent:
    """Composed pure eps_t-DP steps, each as binary randomised response with epsilon eps_t (its PLD is the (eps_t, 0)
    dominating pair): noise parameter p = 2 / (1 + e^eps_t). Checked now, built where it is read (LazyEvent)."""
    eps = np.asarray(epsilons, dtype=float).ravel()
    if eps.size == 0 or not np.all(np.isfinite(eps)) or eps.min() <= 0:
        raise ValueError("per-step epsilons must be finite and > 0")
    values, counts = np.unique(eps, return_counts=True)
    return LazyEvent(_composed_pure, ([float(2.0 / (1.0 + np.exp(e))) for e in values], [int(k) for k in counts]))


def pure_epsilons(event) -> np.ndarray | None:
    """The per-step epsilons of an event made only of `pure_steps`, else None. A LazyEvent of `pure_steps` is read
    off its recipe, not built: the same numbers (the same expression of the same noise parameters, in the same
    order), without importing dp-accounting where only the paper's or the basic total is wanted."""
    if isinstance(event, LazyEvent) and event.make is _composed_pure:
        return np.concatenate([np.repeat(np.array([np.log((2.0 - p) / p)]), k) for p, k in zip(*event.args)])
    event = built(event)
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent) and event.num_buckets == 2:
        return np.array([np.log((2.0 - event.noise_parameter) / event.noise_parameter)])
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = pure_epsilons(event.event)
        return None if inner is None else np.repeat(inner, event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [pure_epsilons(e) for e in event.events]
        return None if any(p is None for p in parts) else np.concatenate(parts)
    return None


# name -> function(**bound_args) giving the paper's total epsilon; filled by privacy.bounds.<paper> modules through
# `paper_bound` below when they are imported. A bound's name is "<module>.<bound>": `bound_function` imports
# privacy.bounds.<module> on the first lookup of one of its names, so this module never imports the bounds modules
# (which import it) by name, and a new paper's bounds module is found without being listed anywhere.
PAPER_BOUNDS: dict[str, Callable[..., float]] = {}
BOUNDS_PACKAGE = f"{__package__}.bounds"


def paper_bound(name: str):
    """Decorator registering a paper's own total-epsilon bound under `name` (used by privacy.bounds.<paper>)."""
    def register(fn):
        PAPER_BOUNDS[name] = fn
        return fn
    return register


def _find_bound(name: str) -> Callable[..., float] | None:
    """The bound registered as `name`, importing its module privacy.bounds.<module> first if need be; else None."""
    if name not in PAPER_BOUNDS:
        module = name.split(".", 1)[0]
        if module.isidentifier() and importlib.util.find_spec(f"{BOUNDS_PACKAGE}.{module}") is not None:
            importlib.import_module(f"{BOUNDS_PACKAGE}.{module}")
    return PAPER_BOUNDS.get(name)


def _all_bounds() -> dict[str, Callable[..., float]]:
    """Every paper bound, after importing every module of privacy.bounds (for listing what is known)."""
    bounds = importlib.import_module(BOUNDS_PACKAGE)
    for info in pkgutil.iter_modules(bounds.__path__):
        importlib.import_module(f"{BOUNDS_PACKAGE}.{info.name}")
    return PAPER_BOUNDS


def bound_function(name: str) -> Callable[..., float]:
    """The paper bound registered as `name` ("<module>.<bound>", e.g. "huang2019.eps_bar")."""
    fn = _find_bound(name)
    if fn is None:
        raise ValueError(f"{name!r} is not a paper bound; known: {sorted(_all_bounds())}")
    return fn


def totals(spend: Spend, delta: float, *, pld: bool = True, discretization: float | None = None) -> dict:
    """{"paper_eps", "rdp_eps", "pld_eps", "delta", "neighbouring"} of a recorded Spend at total `delta`: the paper's
    own bound (None without one), dp-accounting's RDP and PLD totals (PLD skipped when `pld=False`; None where an
    accountant does not support the event)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    out = {"delta": float(delta), "neighbouring": spend.neighbouring,
           "paper_eps": float(bound_function(spend.bound)(**spend.bound_args)) if spend.bound else None}
    pure = pure_epsilons(vars(spend)["event"])  # as recorded: a pure LazyEvent is read without building it
    if pure is not None:  # pure DP: the optimal composition (PLD of the dominating pairs); RDP adds nothing here
        out.update(rdp_eps=None, pld_eps=pure_composed_epsilon(pure, delta) if pld else None,
                   basic_eps=float(pure.sum()))
        return out
    rdp = dp_accounting.rdp.RdpAccountant()
    out["rdp_eps"] = float(rdp.compose(spend.event).get_epsilon(delta)) if rdp.supports(spend.event) else None
    out["pld_eps"] = None
    if pld:
        grid = discretization or (pld_grid(out["rdp_eps"]) if out["rdp_eps"] else 1e-4)
        acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=grid)
        if acc.supports(spend.event):
            out["pld_eps"] = float(acc.compose(spend.event).get_epsilon(delta))
    return out
