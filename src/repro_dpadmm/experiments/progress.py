"""Progress of long sweeps: one line per setting with its time and the time elapsed, so that an item's log (which
papermill streams as the notebook runs) shows where a long item is and how fast it goes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")


def progress(settings: Iterable[T], label: str, *, name: Callable[[T], str] = str, stream: TextIO | None = None,
             clock: Callable[[], float] = time.perf_counter) -> Iterator[T]:
    """Yield each setting; once the loop body for it has finished, print
    `<label>: <k>/<n> <name(setting)> done in <s> s (<total> s elapsed)` and flush."""
    settings = list(settings)
    out = stream or sys.stdout
    start = clock()
    for k, setting in enumerate(settings, 1):
        t0 = clock()
        yield setting
        now = clock()
        print(f"{label}: {k}/{len(settings)} {name(setting)} done in {now - t0:.1f} s ({now - start:.1f} s elapsed)",
              file=out, flush=True)
