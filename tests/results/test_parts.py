"""Parquet parts: common columns, atomic writes, and the hive layout pandas reads back whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from gridlab.config.schema import CellConfig
from gridlab.results.parts import COMMON_SCHEMA, common_columns, drop_cell_parts, rows_table, write_part
from gridlab.store.layout import GridWorkspace

SPECIFIC = pa.schema([("tvd_median", pa.float64()), ("removed_exact", pa.int64())])


def table_for(cell_id: str, ids: list[int]) -> pa.Table:
    config = CellConfig(dataset="sst", encoder="cnn", seed=2)
    n = len(ids)
    common = common_columns(
        "g",
        cell_id,
        config,
        "test",
        3,
        np.array(ids),
        np.full(n, 7),
        np.zeros(n, int),
        np.ones(n, int),
        np.full(n, 0.5),
    )
    return rows_table(common, {"tvd_median": [0.1] * n, "removed_exact": [None] + [2] * (n - 1)}, SPECIFIC)


def test_rows_carry_the_common_columns_then_the_analysis_columns():
    table = table_for("abc", [0, 1, 2])
    assert table.schema.names == COMMON_SCHEMA.names + ["tvd_median", "removed_exact"]
    row = table.to_pylist()[0]
    assert row["cell_id"] == "abc" and row["encoder"] == "cnn" and row["seed"] == 2
    assert row["projection_lambda"] is None and row["derived_splits"] is False
    assert row["analysis_version"] == 3 and row["removed_exact"] is None


def test_parts_read_back_as_one_frame(tmp_path: Path):
    write_part(GridWorkspace(tmp_path).part("permutation", "abc", 0), table_for("abc", [0, 1]))
    write_part(GridWorkspace(tmp_path).part("permutation", "abc", 1), table_for("abc", [2]))
    write_part(GridWorkspace(tmp_path).part("permutation", "def", 0), table_for("def", [0, 1]))
    frame = pd.read_parquet(tmp_path / "analyses" / "permutation")
    assert len(frame) == 5
    assert sorted(frame.groupby("cell_id").size().to_dict().items()) == [("abc", 3), ("def", 2)]
    assert not list((tmp_path / "analyses").rglob("*.tmp"))


def test_a_failed_write_leaves_no_part(tmp_path: Path, monkeypatch):
    import gridlab.results.parts as parts

    def broken(table, where):
        Path(where).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(parts.pq, "write_table", broken)
    target = GridWorkspace(tmp_path).part("permutation", "abc", 0)
    with pytest.raises(OSError, match="disk full"):
        write_part(target, table_for("abc", [0]))
    assert not target.exists() and not list(target.parent.iterdir())


def test_dropping_a_cells_parts_leaves_the_other_cells(tmp_path: Path):
    for analysis in ("permutation", "seed_variance"):
        for cell in ("abc", "def"):
            write_part(GridWorkspace(tmp_path).part(analysis, cell, 0), table_for(cell, [0, 1]))
    assert drop_cell_parts(GridWorkspace(tmp_path), "def", ["seed_variance"]) == 1
    assert drop_cell_parts(GridWorkspace(tmp_path), "abc") == 2
    left = sorted(p.relative_to(tmp_path / "analyses").as_posix() for p in (tmp_path / "analyses").rglob("*.parquet"))
    assert left == ["permutation/cell=def/part-00000.parquet"]
    assert drop_cell_parts(GridWorkspace(tmp_path), "abc") == 0
