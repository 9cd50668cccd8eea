"""How a trained cell's analysed test instances are cut into shards: `instances` of the test split (all when
it has fewer), in runs of `shard_size`. Each per-instance analysis writes one Parquet part per shard, a
per-model analysis one part (as shard 0), so this also says how many parts make a cell's analysis complete.

    >>> plan_shards(test_rows=100, instances=70, shard_size=32)   # shards 0-31, 32-63, 64-69
    >>> parts_expected(workspace, cell_id, per_model=False, instances=500, shard_size=256)   # 2
"""

from __future__ import annotations

from dataclasses import dataclass

from gridlab.store.layout import CellFiles, GridWorkspace
from gridlab.store.models import ModelStore

SPLIT = "test"


@dataclass(frozen=True)
class Shard:
    index: int
    start: int  # first position (inclusive) in the length order of the analysed test rows
    stop: int  # last position (exclusive)
    population: int  # how many test rows are analysed in all (`instances`, at most the split's rows)

    def extent(self) -> dict[str, int]:
        """What a per-instance part records of its shard (`results.parts.with_params`)."""
        return {"start": self.start, "stop": self.stop, "population": self.population}


def plan_shards(test_rows: int, instances: int | None, shard_size: int) -> list[Shard]:
    total = test_rows if instances is None else min(instances, test_rows)
    starts = range(0, total, shard_size)
    return [Shard(i, start, min(start + shard_size, total), total) for i, start in enumerate(starts)]


def rows_in_test_split(workspace: GridWorkspace, cell_id: str) -> int:
    """Rows of the cell's test split, as recorded when it was trained."""
    return ModelStore(workspace.models).cell(cell_id).read(CellFiles.DATA)["rows"][SPLIT]


def parts_expected(
    workspace: GridWorkspace, cell_id: str, per_model: bool, instances: int | None, shard_size: int
) -> int:
    """How many parts a complete analysis of this trained cell has."""
    if per_model:
        return 1
    return len(plan_shards(rows_in_test_split(workspace, cell_id), instances, shard_size))
