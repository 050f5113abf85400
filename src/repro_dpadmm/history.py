"""The result of one algorithm run over a batch of repeats."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class History:
    """Per-iteration traces with a leading `repeat` axis.

    `traces[name]` has shape (repeats, iterations[+1]); `meta` holds scalars and settings (noise levels, wall
    time). `spends` is what a private run released, as `repro_dpadmm.privacy.spend.Spend` records (dp-accounting
    events with their neighbouring relation and the paper bound that claims them); `privacy.spend.totals` turns
    each into the paper's, RDP and PLD totals. Algorithms return one History per setting; experiments reduce them.
    """

    traces: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    spends: list = field(default_factory=list)

    def mean(self, name: str) -> np.ndarray:
        return self.traces[name].mean(axis=0)

    def spread(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) over repeats."""
        t = self.traces[name]
        return t.min(axis=0), t.max(axis=0)

    def final(self, name: str) -> np.ndarray:
        """Last value of a trace, one per repeat."""
        return self.traces[name][:, -1]
