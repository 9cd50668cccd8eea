"""One Parquet part per (analysis, cell, shard), written atomically, under a hive-partitioned layout:

    results_dir/<grid>/analyses/<analysis>/cell=<cell id>/part-<shard>.parquet

so `pandas.read_parquet(results_dir/<grid>/analyses/<analysis>)` reads every part of every cell. A part is
written to a hidden temporary file in its folder and renamed into place: a killed worker leaves either the
whole part or nothing, and a relaunch skips exactly the parts that exist.

Every row carries the common columns of docs/analyses.md#common-columns (grid, cell_id, the cell's axes,
split, instance_id, length, label, pred, max_attention, analysis_version) and `derived_splits`, so results
on carved splits can never pass for results on official ones.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from gridlab.config.schema import CellConfig
from gridlab.store.atomic import replaced
from gridlab.store.layout import GridWorkspace

AXES = ("dataset", "encoder", "attention", "projection", "projection_lambda", "architecture", "attention_mode", "seed")

COMMON_SCHEMA = pa.schema(
    [
        ("grid", pa.string()),
        ("cell_id", pa.string()),
        ("dataset", pa.string()),
        ("encoder", pa.string()),
        ("attention", pa.string()),
        ("projection", pa.string()),
        ("projection_lambda", pa.float64()),
        ("architecture", pa.string()),
        ("attention_mode", pa.string()),
        ("seed", pa.int64()),
        ("derived_splits", pa.bool_()),
        ("split", pa.string()),
        ("instance_id", pa.int64()),
        ("length", pa.int64()),
        ("label", pa.int64()),
        ("pred", pa.int64()),
        ("max_attention", pa.float64()),
        ("analysis_version", pa.int64()),
    ]
)


MODEL_COMMON_SCHEMA = pa.schema(
    [f for f in COMMON_SCHEMA if f.name not in ("instance_id", "length", "label", "pred", "max_attention")]
)


def common_columns(
    grid: str,
    cell_id: str,
    config: CellConfig,
    split: str,
    version: int,
    instance_id: np.ndarray,
    length: np.ndarray,
    label: np.ndarray,
    pred: np.ndarray,
    max_attention: np.ndarray,
) -> dict[str, pa.Array]:
    """The common columns (docs/analyses.md#common-columns) for n rows of one cell."""
    n = len(instance_id)
    constants = _cell_constants(grid, cell_id, config, split, version)
    columns = {name: pa.array([value] * n, COMMON_SCHEMA.field(name).type) for name, value in constants.items()}
    for name, values in (
        ("instance_id", instance_id),
        ("length", length),
        ("label", label),
        ("pred", pred),
        ("max_attention", max_attention),
    ):
        columns[name] = pa.array(np.asarray(values), COMMON_SCHEMA.field(name).type)
    return {field.name: columns[field.name] for field in COMMON_SCHEMA}


def _cell_constants(grid: str, cell_id: str, config: CellConfig, split: str, version: int) -> dict[str, object]:
    """The common columns that are the same on every row of a cell's part."""
    return {
        "grid": grid,
        "cell_id": cell_id,
        **{axis: getattr(config, axis) for axis in AXES},
        "derived_splits": config.data.derive_splits,
        "split": split,
        "analysis_version": version,
    }


def model_common_columns(
    grid: str, cell_id: str, config: CellConfig, split: str, version: int, rows: int
) -> dict[str, pa.Array]:
    """The common columns of a per-model analysis (no per-instance ones), for `rows` rows."""
    constants = _cell_constants(grid, cell_id, config, split, version)
    return {f.name: pa.array([constants[f.name]] * rows, f.type) for f in MODEL_COMMON_SCHEMA}


def rows_table(common: dict[str, pa.Array], specific: Mapping[str, object], schema: pa.Schema) -> pa.Table:
    """Common columns followed by the analysis's own, typed by its schema (NaN stays NaN, None is null)."""
    arrays = dict(common)
    for field in schema:
        arrays[field.name] = pa.array(specific[field.name], field.type, from_pandas=False)
    common_schema = COMMON_SCHEMA if "instance_id" in common else MODEL_COMMON_SCHEMA
    return pa.table(arrays, schema=pa.unify_schemas([common_schema, schema]))


def read_parts(paths: list[Path], schema: pa.Schema) -> pd.DataFrame:
    """The rows of some parts of one analysis, with every column of its `schema`: a column added to an analysis
    (a new ranking) is null in the parts written before it, rather than missing from the frame."""
    frame = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    absent = [field.name for field in schema if field.name not in frame.columns]
    return frame.assign(**{name: None for name in absent}) if absent else frame


PARAMS_KEY = b"gridlab.params"  # a part's schema metadata: the analysis parameters its rows were computed with
SHARD_KEY = b"gridlab.shard"  # and for a per-instance part, the test instances its shard covers


def write_part(path: Path, table: pa.Table) -> None:
    with replaced(path) as partial:
        pq.write_table(table, partial)


def with_params(table: pa.Table, params: Mapping[str, object], shard: Mapping[str, int] | None = None) -> pa.Table:
    """A part's rows with the analysis parameters they were computed with (JSON) in the schema metadata, and
    for a per-instance part which test instances its shard covers (`start`, `stop` of `population`)."""
    metadata = {**(table.schema.metadata or {}), PARAMS_KEY: json.dumps(params, sort_keys=True).encode()}
    if shard is not None:
        metadata[SHARD_KEY] = json.dumps(dict(shard), sort_keys=True).encode()
    return table.replace_schema_metadata(metadata)


def part_params(path: Path) -> dict | None:
    """The analysis parameters a part was computed with; None for a part written before parts recorded them."""
    raw = (pq.read_schema(path).metadata or {}).get(PARAMS_KEY)
    return None if raw is None else json.loads(raw)


def part_shard(path: Path) -> dict | None:
    """The shard a per-instance part covers ({start, stop, population}); None for a per-model part, or one
    written before parts recorded it."""
    raw = (pq.read_schema(path).metadata or {}).get(SHARD_KEY)
    return None if raw is None else json.loads(raw)


def copy_part(source: Path, target: Path, grid: str) -> None:
    """Write another grid's part as this `grid`'s: the same rows and metadata, under this grid's name."""
    table = pq.read_table(source)
    column = table.schema.get_field_index("grid")
    field = table.schema.field(column)
    renamed = table.set_column(column, field, pa.array([grid] * table.num_rows, field.type))
    write_part(target, renamed.replace_schema_metadata(table.schema.metadata))


def drop_cell_parts(workspace: GridWorkspace, cell_id: str, analyses: list[str] | None = None) -> int:
    """Delete a cell's parts (of every analysis, or of `analyses`): rows of a model that is retrained would
    otherwise pass for rows of the new one. Returns how many partition folders were removed."""
    folders = (
        [workspace.cell_parts(a, cell_id) for a in analyses]
        if analyses is not None
        else workspace.cell_partitions(cell_id)
    )
    removed = 0
    for folder in folders:
        if folder.is_dir():
            shutil.rmtree(folder)
            removed += 1
    return removed
