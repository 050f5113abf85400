"""The registry knows every file the papers use, with its canonical URL and checksum, laid out like the mirror."""

import csv
from pathlib import Path

from repro_dpadmm.datasets.registry import BASES, DATASETS, RAW_FILES

def test_every_raw_file_has_url_and_checksum_or_documented_absence():
    no_checksum = {"libsvm/binary/gisette_scale.t.bz2", "kddcup2004/data_kddcup04.tar.gz"}
    for rel, raw in RAW_FILES.items():
        assert raw.url.startswith("https://"), rel
        if rel in no_checksum:
            assert raw.known_hash is None
        else:
            alg, digest = raw.known_hash.split(":")
            assert alg in {"sha256", "md5"} and len(digest) == {"sha256": 64, "md5": 32}[alg], rel


def test_every_dataset_names_registered_files():
    for name, ds in DATASETS.items():
        assert ds.raw and all(r in RAW_FILES for r in ds.raw), name
        assert ds.shapes, name


def test_mirror_layout_equals_canonical_relative_paths(mirror):
    manifest = Path(mirror) / "MANIFEST.tsv"
    rows = list(csv.DictReader(manifest.open(), delimiter="\t"))
    assert rows
    for row in rows:
        raw = RAW_FILES[row["relative_path"]]
        assert raw.url == row["canonical_url"]
        assert raw.known_hash == "sha256:" + row["sha256"]
        assert raw.size == int(row["bytes"])
        assert (Path(mirror) / row["relative_path"]).is_file()


def test_missing_files_are_registered_with_their_canonical_urls(mirror):
    missing = Path(mirror) / "MISSING.tsv"
    for row in csv.DictReader(missing.open(), delimiter="\t"):
        rel = row["relative_path"]
        if rel.startswith("libsvm/"):
            assert RAW_FILES[rel].url == row["canonical_url"]
        else:  # bio_train.dat ships inside the KDD Cup 2004 archive
            assert rel.endswith("bio_train.dat")
            assert any(r.startswith("kddcup2004/") for r in DATASETS["bio_train"].raw)
    assert set(BASES) == {"uci/", "libsvm/", "kddcup2004/"}
