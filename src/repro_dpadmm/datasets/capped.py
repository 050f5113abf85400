"""Byte-capped reading and copying of raw dataset files (registry.py: size caps; README.md#size-caps).

A hostile or broken mirror can serve a small file that decompresses to tens of gigabytes (bz2 and gzip streams may
be concatenated without end), or a sparse file of gigabytes. Every read of a raw file's content goes through
`open_content`, which stops with `SizeCapError` (naming the file and the cap) once more than the cap has been read;
every copy goes through `copy_capped`, which does the same for the bytes written.
"""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

from .registry import SizeCapError

CHUNK = 2**20


class CappedReader:
    """A binary file-like object (read, readline, line iteration) that raises SizeCapError past `cap` bytes.

    Never asks the underlying file for more than one byte beyond the cap, so a line without an end is cut too."""

    def __init__(self, fh, cap: int, what: str):
        self._fh, self.cap, self.what, self.count = fh, int(cap), what, 0

    def _left(self, n: int | None) -> int:
        left = self.cap - self.count + 1
        return left if n is None or n < 0 else min(n, left)

    def _take(self, data: bytes) -> bytes:
        self.count += len(data)
        if self.count > self.cap:
            raise SizeCapError(f"{self.what}: more than {self.cap:,} bytes, the cap for this file "
                               "(README.md#size-caps); not read further")
        return data

    def read(self, n: int | None = -1) -> bytes:
        return self._take(self._fh.read(self._left(n)))

    def readline(self, n: int | None = -1) -> bytes:
        return self._take(self._fh.readline(self._left(n)))

    def __iter__(self):
        while line := self.readline():
            yield line

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_content(path: Path, cap: int, what: str | None = None) -> CappedReader:
    """The content of `path`, decompressed by its name as scikit-learn and tarfile would (`.bz2`, `.gz`/`.tgz`),
    capped at `cap` bytes of content."""
    path = Path(path)
    name = path.name
    if name.endswith(".bz2"):
        fh = bz2.open(path, "rb")
    elif name.endswith((".gz", ".tgz")):
        fh = gzip.open(path, "rb")
    else:
        fh = open(path, "rb")
    compressed = name.endswith((".bz2", ".gz", ".tgz"))
    return CappedReader(fh, cap, what or (f"{name} (decompressed)" if compressed else name))


def copy_capped(src, dst, cap: int, what: str) -> int:
    """Copy binary file object `src` into `dst`, at most `cap` bytes; SizeCapError (nothing more written) if `src`
    holds more. Returns the bytes copied."""
    reader = CappedReader(src, cap, what)
    total = 0
    while chunk := reader.read(CHUNK):
        dst.write(chunk)
        total += len(chunk)
    return total
