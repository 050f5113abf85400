import numpy as np
import pytest

from repro_dpadmm.datasets import partition


def test_even_split_partitions_all_samples():
    parts = partition.even(40000, 100, np.random.default_rng(0))
    assert parts.shape == (100, 400)
    assert np.array_equal(np.sort(parts.ravel()), np.arange(40000))


def test_even_split_rejects_non_dividing_n():
    with pytest.raises(ValueError, match="divide"):
        partition.even(40000, 300, np.random.default_rng(0))


def test_uneven_split_respects_minimum_and_covers_everything():
    parts = partition.uneven(45222, 100, 100, np.random.default_rng(3))
    sizes = np.array([len(p) for p in parts])
    assert sizes.min() >= 100 and sizes.sum() == 45222 and sizes.std() > 10
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(45222))
    with pytest.raises(ValueError, match="need"):
        partition.uneven(500, 10, 100, np.random.default_rng(0))


def test_near_even_and_train_test():
    parts = partition.near_even(45222, 100, np.random.default_rng(0))
    assert {len(p) for p in parts} == {452, 453}
    tr, te = partition.train_test(45222, 40000, np.random.default_rng(0))
    assert len(tr) == 40000 and len(te) == 5222 and not set(tr) & set(te)


def test_vertical_split():
    blocks = partition.vertical(123, [0, 66, 123])
    assert [len(b) for b in blocks] == [66, 57]
    with pytest.raises(ValueError, match="cover"):
        partition.vertical(123, [0, 66, 120])
    with pytest.raises(ValueError, match="at least one feature"):
        partition.vertical(123, [0, 66, 66, 123])


def test_same_seed_same_split():
    a = partition.even(1000, 10, np.random.default_rng(5))
    b = partition.even(1000, 10, np.random.default_rng(5))
    assert np.array_equal(a, b)
