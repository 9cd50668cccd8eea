"""Cutting a model's test instances into shards: the first `instances` of the test split, in order, in
runs of `shard_size`. A shard is named by its index, so its part file is the same whoever runs it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    index: int
    start: int  # first row of the test split (inclusive)
    stop: int  # last row (exclusive)


def plan_shards(test_rows: int, instances: int | None, shard_size: int) -> list[Shard]:
    total = test_rows if instances is None else min(instances, test_rows)
    return [Shard(i, start, min(start + shard_size, total)) for i, start in enumerate(range(0, total, shard_size))]
