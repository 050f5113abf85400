"""Every dataset file the five papers use: canonical URL, checksum, and the layout of a data mirror.

The relative path of a file is its path below the canonical base URL with the base replaced by a short prefix
(`uci/`, `libsvm/`, `kddcup2004/`). A data mirror (a local folder or a URL base) holds files at exactly these
relative paths, and the local cache `resources/raw/` uses the same layout, so a cache can serve as a mirror.

Checksums are the sha256 of the bytes as served (from the offline mirror's MANIFEST.tsv). Where none is published
(gisette_scale.t.bz2, the KDD Cup 2004 archive) the file is verified by its parsed shape instead, and the sha256 seen
is recorded in the processed sidecar (trust on first use); gisette_scale.bz2 has a published md5.

Size caps (a hostile or broken mirror must not hang a fetch or fill the disk; README.md#size-caps): a file whose
size is known must have exactly that size before a byte of it is copied, and no copy (mirror folder or URL) is
allowed more than `served_cap` bytes. Reading a file's content (bz2/gzip decompressed; for the KDD Cup archive, the
whole decompressed tar stream) stops with `SizeCapError` after `content_cap` bytes: CAP_FACTOR times the real
content's size where it is known, else a maximum derived from the dataset's shape (gisette) or from the archive's
known members (KDD Cup 2004).
"""

from __future__ import annotations

from dataclasses import dataclass, field

CAP_FACTOR = 4            # a file's content may be at most this many times the real content's size
UNLISTED_MAX_BYTES = 2**30  # content cap of a file the registry gives no size or maximum for (1 GiB)
# gisette_scale (dense, scaled to [-1, 1]): every one of the 5,000 features of a row is written, each at most as
# `5000:-0.123456 ` (15 characters); 20 per feature plus 8 per row for the label is an upper bound for any copy.
GISETTE_BYTES_PER_FEATURE, GISETTE_BYTES_PER_ROW = 20, 8
# The KDD Cup 2004 archive: bio_train.dat is 60,024,646 bytes; the canonical archive's other members (bio_test.dat
# and the physics task's phy_train.dat / phy_test.dat) are of the same order, so 1 GiB of decompressed tar stream is
# several times the whole archive; at most KDD_MAX_MEMBERS members are looked at before bio_train.dat.
KDD_MAX_BYTES = 2**30
KDD_MAX_MEMBERS = 64


class SizeCapError(ValueError):
    """A dataset file, or its decompressed content, is not of a size the registry allows."""

BASES = {
    "uci/": "https://archive.ics.uci.edu/ml/machine-learning-databases/",
    "libsvm/": "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/",
    "kddcup2004/": "https://kdd.org/cupfiles/KDDCupData/2004/",
}


@dataclass(frozen=True)
class RawFile:
    relpath: str
    size: int | None
    known_hash: str | None  # "sha256:<hex>" or "md5:<hex>", None when no checksum is published
    content: int | None = None    # bytes of the real content (decompressed) where known
    max_content: int | None = None  # documented maximum of the content where its real size is unknown

    @property
    def content_cap(self) -> int:
        """The most bytes a copy's content may have: CAP_FACTOR x the real content, else the declared maximum."""
        if self.max_content is not None:
            return self.max_content
        real = self.content if self.content is not None else self.size
        return CAP_FACTOR * real if real is not None else UNLISTED_MAX_BYTES

    @property
    def served_cap(self) -> int:
        """The most bytes a copy as served may have: its exact size where known, else its content cap (bz2 and
        gzip never make real data much larger; the real files compress several times)."""
        return self.size if self.size is not None else self.content_cap

    @property
    def url(self) -> str:
        for prefix, base in BASES.items():
            if self.relpath.startswith(prefix):
                return base + self.relpath[len(prefix):]
        raise KeyError(f"no canonical base URL for {self.relpath}")


def _f(relpath: str, size: int | None, known_hash: str | None, content: int | None = None,
       max_content: int | None = None) -> RawFile:
    return RawFile(relpath, size, known_hash, content if content is not None else
                   (size if not relpath.endswith((".bz2", ".gz")) else None), max_content)


def _gisette_max(rows: int, features: int = 5000) -> int:
    return rows * (features * GISETTE_BYTES_PER_FEATURE + GISETTE_BYTES_PER_ROW)


RAW_FILES: dict[str, RawFile] = {
    f.relpath: f
    for f in [
        _f("uci/adult/adult.data", 3974305,
           "sha256:5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
        _f("uci/adult/adult.test", 2003153,
           "sha256:a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
        _f("uci/adult/adult.names", 5229,
           "sha256:c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a"),
        _f("libsvm/binary/a9a", 2329875,
           "sha256:f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906"),
        _f("libsvm/binary/a9a.t", 1164628,
           "sha256:1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9"),
        _f("libsvm/binary/a8a", 1624166,
           "sha256:d08a37b3fadd4bd3c8b3fc30bdc93b54d7c0f371265c90cbfb931a7efe97cd28"),
        _f("libsvm/binary/a8a.t", 705709,
           "sha256:fc16c3580048add99056ee4d14105c93f0af63fb8ff6a78f3d66bf5d87c13cd3"),
        _f("libsvm/binary/ijcnn1.bz2", 1398220,
           "sha256:450dee8470b168e47b9fae1fc160396b8a809c675737837fce3acd51dcdc0481", content=7744897),
        _f("libsvm/binary/ijcnn1.t.bz2", 2597597,
           "sha256:acd1db430684fdd3f0c768ecc49aa8e749d0004fc117611220c2aa576a7b6a24", content=14213968),
        _f("libsvm/binary/gisette_scale.bz2", None, "md5:8a8caa1628c98dafec8d5d7bfa67c20b",
           max_content=_gisette_max(6000)),
        _f("libsvm/binary/gisette_scale.t.bz2", None, None, max_content=_gisette_max(1000)),
        _f("kddcup2004/data_kddcup04.tar.gz", None, None, max_content=KDD_MAX_BYTES),
    ]
}


@dataclass(frozen=True)
class Dataset:
    """A processed dataset: which raw files it needs and the shapes it must have."""

    name: str
    raw: tuple[str, ...]
    description: str
    papers: tuple[str, ...]
    shapes: dict = field(default_factory=dict)  # array name -> expected shape


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in [
        Dataset("adult_huang2019", ("uci/adult/adult.data", "uci/adult/adult.test"),
                "UCI Adult, complete cases, one-hot on observed levels, column-max then row-l2 normalised "
                "(docs/choices.md#adult-preprocessing)", ("huang2019_dpadmm",), {"X": (45222, 104), "y": (45222,)}),
        Dataset("adult_zhang2018", ("uci/adult/adult.data", "uci/adult/adult.test", "uci/adult/adult.names"),
                "UCI Adult as adult_huang2019 plus the all-zero workclass=Never-worked column from adult.names "
                "(docs/choices.md#adult-zkl-columns, d = 105)", ("zhang2018_madmm", "zhang2018_radmm"),
                {"X": (45222, 105), "y": (45222,)}),
        Dataset("a9a", ("libsvm/binary/a9a", "libsvm/binary/a9a.t"), "LIBSVM a9a (Adult, binarised)",
                ("hu2020_sharing", "xu2020_dpaccadmm"),
                {"X_train": (32561, 123), "X_test": (16281, 123)}),
        Dataset("a8a", ("libsvm/binary/a8a", "libsvm/binary/a8a.t"), "LIBSVM a8a (Adult subset, binarised)",
                ("xu2020_dpaccadmm",), {"X_train": (22696, 123), "X_test": (9865, 123)}),
        Dataset("ijcnn1", ("libsvm/binary/ijcnn1.bz2", "libsvm/binary/ijcnn1.t.bz2"), "LIBSVM ijcnn1",
                ("xu2020_dpaccadmm",), {"X_train": (49990, 22), "X_test": (91701, 22)}),
        Dataset("gisette", ("libsvm/binary/gisette_scale.bz2", "libsvm/binary/gisette_scale.t.bz2"),
                "LIBSVM gisette_scale (dense, features in [-1, 1])", ("hu2020_sharing",),
                {"X_train": (6000, 5000), "X_test": (1000, 5000)}),
        Dataset("bio_train", ("kddcup2004/data_kddcup04.tar.gz",),
                "KDD Cup 2004 protein homology bio_train.dat, IDs dropped, random 50/50 split (docs/choices.md#bio-train-split)",
                ("xu2020_dpaccadmm",), {"X_train": (72876, 74), "X_test": (72875, 74)}),
    ]
}


def dataset(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}") from None
