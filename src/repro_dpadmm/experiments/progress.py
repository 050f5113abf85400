"""Progress of long sweeps: one line per setting with its time, the time elapsed and an estimate of what is left, so
that an item's log (which papermill streams as the notebook runs) shows where a long item is and how long it will
take.

The estimate extrapolates the settings done so far (the mean time per setting times the settings left). Where the
README's cost table knows the whole item's wall time at paper settings, the runner passes it in the environment
(`REPRO_DPADMM_EXPECTED_S`, only for a run at the paper settings) and each line quotes it beside the estimate.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")
COST_ENV = "REPRO_DPADMM_EXPECTED_S"


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"


def expected_cost() -> float | None:
    """The item's paper-scale wall time from the cost table, when the runner passed it (else None)."""
    try:
        value = float(os.environ.get(COST_ENV, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def progress(settings: Iterable[T], label: str, *, name: Callable[[T], str] = str, stream: TextIO | None = None,
             clock: Callable[[], float] = time.perf_counter, expected: float | None = None) -> Iterator[T]:
    """Yield each setting; once the loop body for it has finished, print
    `<label>: <k>/<n> <name(setting)> done in <s> (<total> elapsed, about <left> left)` and flush; with the item's
    cost from the table (`expected`, default from the environment) the line adds `; cost table: <t> for the item`.
    """
    settings = list(settings)
    out = stream or sys.stdout
    cost = expected if expected is not None else expected_cost()
    start = clock()
    for k, setting in enumerate(settings, 1):
        t0 = clock()
        yield setting
        now = clock()
        elapsed = now - start
        left = elapsed / k * (len(settings) - k)
        tail = f"; cost table: {_secs(cost)} for the item at paper settings" if cost else ""
        print(f"{label}: {k}/{len(settings)} {name(setting)} done in {_secs(now - t0)} ({_secs(elapsed)} elapsed, "
              f"about {_secs(left)} left{tail})", file=out, flush=True)
