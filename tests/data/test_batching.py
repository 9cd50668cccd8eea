"""Training batches: the default seeded shuffle is unchanged, and `bucketed` (J&W) gives batches of similar
lengths in a seeded order that cover every instance once, the same for a seed and different between seeds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from gridlab.data.batching import bucketed_batches, iterate_batches

N, BATCH = 1000, 32


@pytest.fixture(scope="module")
def table() -> pa.Table:
    """N rows of random lengths 1..200 (token ids are irrelevant here)."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 201, size=N)
    return pa.table(
        {
            "instance_id": pa.array(np.arange(N, dtype=np.int64)),
            "label": pa.array(rng.integers(0, 2, size=N)),
            "ids": pa.array([[4] * int(n) for n in lengths], pa.list_(pa.int32())),
        }
    )


def batch_ids(table: pa.Table, **kwargs) -> list[np.ndarray]:
    return [b.instance_ids.numpy() for b in iterate_batches(table, BATCH, **kwargs)]


def token_counts(table: pa.Table, batches: list[np.ndarray]) -> list[np.ndarray]:
    lengths = np.array([len(x) for x in table.column("ids").to_pylist()])
    return [lengths[ids] for ids in batches]


def test_shuffled_batches_are_the_seeded_permutation_as_before(table):
    """The default must stay bit for bit what training used before `bucketed` existed."""
    order = np.random.default_rng(11).permutation(N)
    expected = [order[s : s + BATCH] for s in range(0, N, BATCH)]
    got = batch_ids(table, shuffle=True, seed=11)
    assert len(got) == len(expected) and all(np.array_equal(a, b) for a, b in zip(got, expected))


def test_bucketed_batches_cover_every_instance_once(table):
    got = batch_ids(table, shuffle=True, seed=3, bucketed=True)
    assert np.array_equal(np.sort(np.concatenate(got)), np.arange(N))
    assert sorted(len(b) for b in got)[1:] == [BATCH] * (len(got) - 1)  # one short batch at most
    limited = batch_ids(table, seed=3, bucketed=True, limit=100)
    assert np.array_equal(np.sort(np.concatenate(limited)), np.arange(100))


def test_bucketed_batches_hold_similar_lengths_in_a_shuffled_order(table):
    bucketed = token_counts(table, batch_ids(table, seed=3, bucketed=True))
    shuffled = token_counts(table, batch_ids(table, shuffle=True, seed=3))
    spread = np.mean([b.max() - b.min() for b in bucketed])
    assert spread < 0.2 * np.mean([b.max() - b.min() for b in shuffled]), spread  # noise: +-10% of up to 202
    assert max(b.max() - b.min() for b in bucketed) <= 0.25 * 200  # lengths up to 200, noise +-10%
    medians = [np.median(b) for b in bucketed]
    assert medians != sorted(medians)  # the batch order is shuffled, not shortest first


def test_bucketed_batches_are_deterministic_per_seed_and_differ_between_seeds(table):
    first, again = batch_ids(table, seed=7, bucketed=True), batch_ids(table, seed=7, bucketed=True)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    other = batch_ids(table, seed=8, bucketed=True)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    assert set(map(tuple, first)) != set(map(tuple, other))  # different batches, not only reordered


def test_length_noise_follows_jain_wallace_range():
    """Equal lengths are tied before the noise: the noise alone orders them, within [floor(-0.1 L), ceil(0.1 L))."""
    lengths = np.full(10_000, 50)
    batches = bucketed_batches(lengths, 10_000, seed=0)
    assert len(batches) == 1 and np.array_equal(np.sort(batches[0]), np.arange(10_000))
    assert not np.array_equal(batches[0], np.arange(10_000))  # the noise reordered equal lengths
    short = bucketed_batches(np.array([3, 3, 3]), 1, seed=0)  # floor(-0.3) = -1, ceil(0.3) = 1: noise in {-1, 0}
    assert sorted(int(b[0]) for b in short) == [0, 1, 2]
    assert bucketed_batches(np.zeros(0, dtype=np.int64), 4, seed=0) == []
