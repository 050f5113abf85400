"""KDD Cup 2004 protein homology `bio_train.dat` (XU's bio_train; docs/choices.md#libsvm-and-kdd-data).

Layout per line, whitespace-separated: BLOCK-ID, EXAMPLE-ID, label (1/0), then 74 features. [D] The two IDs are
dropped, labels map 1 -> +1 and 0 -> -1, and the rows are split 50/50 at random with a fixed seed (the paper gives
no rule; its 72,876 / 72,875 split of the 145,751 rows is matched by putting the odd row in the training part).
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np

from .capped import open_content
from .registry import KDD_MAX_BYTES, KDD_MAX_MEMBERS, SizeCapError

N_FEATURES = 74
MEMBER = "bio_train.dat"
# bio_train.dat is 60,024,646 bytes; a copy from a mirror larger than this is refused before it is read (a 14 MB
# archive can hold a 1.5 GB member, which np.loadtxt would take as 6 GB).
MAX_BYTES = 128 * 2**20


def parse(text_or_file) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from the contents of bio_train.dat."""
    data = np.loadtxt(text_or_file, dtype=np.float64, ndmin=2)
    if data.shape[1] != N_FEATURES + 3:
        raise ValueError(f"bio_train.dat: expected {N_FEATURES + 3} columns (block id, example id, label, "
                         f"{N_FEATURES} features), got {data.shape[1]}")
    labels = data[:, 2]
    if not set(np.unique(labels).tolist()) <= {0.0, 1.0}:
        raise ValueError("bio_train.dat: labels (third column) must be 0 or 1")
    return data[:, 3:], np.where(labels == 1.0, 1.0, -1.0)


def read_archive(path: Path, *, max_bytes: int = KDD_MAX_BYTES,
                 max_members: int = KDD_MAX_MEMBERS) -> tuple[np.ndarray, np.ndarray]:
    """Read bio_train.dat from the KDD Cup 2004 archive (or a plain bio_train.dat file).

    The archive is streamed (each header read once, in order, stopping at the member) through a cap of `max_bytes`
    of decompressed tar stream (registry.KDD_MAX_BYTES) and at most `max_members` members: a member that would
    take the stream past the cap is refused from its header, before it is skipped; SizeCapError names the archive."""
    path = Path(path)
    if path.name.endswith((".tar.gz", ".tgz", ".tar")):
        with open_content(path, max_bytes, f"{path.name} (decompressed tar stream)") as fh, \
                tarfile.open(fileobj=fh, mode="r|", tarinfo=_HeaderCapped) as tar:
            return _find_member(path, tar, fh, max_bytes, max_members)
    _check_size(path.stat().st_size, path.name)
    return parse(path)


# The largest pax or GNU long-name header read: tarfile reads one whole into memory (in stream mode through a buffer
# the capped reader below cannot bound), so a 1 GiB header in a 4 MB archive took gigabytes. A real one is a few
# hundred bytes.
MAX_HEADER = 1 << 20


class _HeaderCapped(tarfile.TarInfo):
    """TarInfo whose pax and GNU long-name headers are refused above MAX_HEADER before they are read (tarfile's own
    hooks for those headers; it has no option for this)."""

    def _proc_pax(self, tarfile_):
        self._check_header(tarfile_)
        return super()._proc_pax(tarfile_)

    def _proc_gnulong(self, tarfile_):
        self._check_header(tarfile_)
        return super()._proc_gnulong(tarfile_)

    def _check_header(self, tarfile_) -> None:
        if self.size > MAX_HEADER:
            raise SizeCapError(f"a tar header of {self.size:,} bytes "
                               f"(pax or GNU long name; at most {MAX_HEADER:,}): a malformed or hostile archive")


def _find_member(path: Path, tar, fh, max_bytes: int, max_members: int) -> tuple[np.ndarray, np.ndarray]:
    """bio_train.dat parsed from a streamed archive, the bytes and members before it bounded."""
    for count, member in enumerate(tar, start=1):
        if len(member.name) > 1024:
            raise ValueError(f"{path.name}: a member name of {len(member.name):,} characters")
        if Path(member.name).name == MEMBER and member.isfile():
            _check_size(member.size, f"{path.name}: {member.name}")
            data = tar.extractfile(member).read(member.size)   # at most MAX_BYTES
            return parse(io.TextIOWrapper(io.BytesIO(data)))
        if count >= max_members:
            raise SizeCapError(f"{path.name}: no {MEMBER} among its first {max_members:,} members, the cap for "
                               "this archive; not read further")
        if fh.count + member.size > max_bytes:
            raise SizeCapError(f"{path.name}: member {member.name[:200]!r} of {member.size:,} bytes would take the "
                               f"decompressed tar stream past {max_bytes:,} bytes, the cap for this archive, "
                               f"before {MEMBER} is found; not read further")
    raise ValueError(f"{path}: no {MEMBER} inside the archive")


def _check_size(size: int, what: str) -> None:
    if size > MAX_BYTES:
        raise ValueError(f"{what} has {size:,} bytes, more than the {MAX_BYTES:,} a copy of {MEMBER} may have "
                         f"(the real one has 60,024,646)")


def split(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    perm = rng.permutation(len(y))
    n_train = (len(y) + 1) // 2
    tr, te = perm[:n_train], perm[n_train:]
    return {"X_train": X[tr], "y_train": y[tr], "X_test": X[te], "y_test": y[te]}
