"""Datasets: registry (files, URLs, checksums), fetch (cache, mirror, verify), preprocessing and partitions."""

from .processed import DatasetUnavailable, attempt, build, is_available, load, sidecar
from .registry import DATASETS, RAW_FILES, dataset

__all__ = ["DATASETS", "RAW_FILES", "DatasetUnavailable", "attempt", "build", "dataset", "is_available", "load",
           "sidecar"]
