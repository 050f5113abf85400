"""Each paper's private step as an object that can be calibrated, run, audited and accounted (see `base`): one module
per paper (`huang2019`, `zhang2018`, `xu2020`, `hu2020`). Used by the equal-privacy frontier and both audits, which
find them with `all_mechanisms`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from .base import AUDIT, AUDIT_RUN, CAPABILITIES, CATALOGUE, FRONTIER, Mechanism

PAPER_MODULES = ("huang2019", "zhang2018", "xu2020", "hu2020")
__all__ = ["AUDIT", "AUDIT_RUN", "CAPABILITIES", "FRONTIER", "Mechanism", "all_mechanisms", "catalogue_view",
           "mechanism_class"]


def all_mechanisms(capability: str | None = None) -> dict[str, type[Mechanism]]:
    """{id: class} of every method in the catalogue (every Mechanism subclass that declares an id: the five papers'
    methods, in the order of their modules (PAPER_MODULES), then any defined elsewhere, e.g. a test's), or of those with
    `capability` (FRONTIER, AUDIT or AUDIT_RUN)."""
    from . import huang2019, zhang2018, xu2020, hu2020  # noqa: F401  (each registers its classes)

    if capability is not None and capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}; known: {CAPABILITIES}")
    def rank(item):  # the papers' modules in PAPER_MODULES order, each in definition order, then any other
        i, cls = item
        mod = cls.__module__
        leaf = mod.rpartition(".")[2] if mod.startswith(__name__ + ".") else None
        return (PAPER_MODULES.index(leaf) if leaf in PAPER_MODULES else len(PAPER_MODULES), i)

    ranked = sorted(enumerate(CATALOGUE.values()), key=rank)
    return {cls.id: cls for _, cls in ranked if capability is None or capability in cls.capabilities}


def mechanism_class(method: str, capability: str | None = None) -> type[Mechanism]:
    """The class of method id `method`, or a ValueError naming the known ids (with `capability`)."""
    found = all_mechanisms(capability)
    if method not in found:
        raise ValueError(f"unknown method {method!r}; known{'' if capability is None else ' for ' + capability}: "
                         f"{list(found)}")
    return found[method]


class catalogue_view(Mapping):
    """A read-only live mapping {id: value(class)} over the methods with `capability`: it follows the catalogue, so a
    method registered after the view was made is in it."""

    def __init__(self, capability: str, value: Callable[[type], object] = lambda cls: cls):
        self.capability, self.value = capability, value

    def __getitem__(self, key):
        if key not in self:
            raise KeyError(key)
        return self.value(mechanism_class(key, self.capability))

    def __contains__(self, key):
        return key in all_mechanisms(self.capability)

    def __iter__(self) -> Iterator[str]:
        return iter(all_mechanisms(self.capability))

    def __len__(self) -> int:
        return len(all_mechanisms(self.capability))
