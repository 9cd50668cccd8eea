"""Per-model summaries of the analysis rows: one row per cell in `results_dir/<grid>/summary.parquet`
(the cell's axes, then `<analysis>.<metric>` columns), and the same numbers as metrics on the cell's
MLflow run. Each analysis module's `summarize(rows)` defines its own numbers (medians, flip shares, ...), under
the names its declaration lists (`AnalysisInfo.summary_columns`); a name it does not list is refused.

    >>> frame = write_summary(expanded)          # reads the Parquet parts, writes summary.parquet
"""

from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa

from gridlab.analyses.base import Analysis
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.catalog.analyses import ANALYSES
from gridlab.errors import BadInput
from gridlab.grid.expand import ExpandedGrid
from gridlab.results.parts import AXES, read_parts, write_part
from gridlab.store.models import ModelStore


def summarize_grid(grid: ExpandedGrid) -> pd.DataFrame:
    """One row per trained cell with rows in any analysis; empty when no analysis has run."""
    by_cell: dict[str, dict[str, object]] = {}
    for analysis_id, analysis in IMPLEMENTATIONS.items():
        parts = grid.workspace.parts_of(analysis_id)
        if analysis_id not in grid.analyses or not parts:
            continue
        rows = read_parts(parts, analysis.schema)
        for cell_id, cell_rows in rows.groupby("cell_id"):
            summary = by_cell.setdefault(cell_id, {})
            summary[f"{analysis_id}.instances"] = float(len(cell_rows))
            summary.update({f"{analysis_id}.{k}": v for k, v in declared_summary(analysis, cell_rows).items()})
    configs = {c.id: c.config for c in grid.cells}
    records = [
        {
            "grid": grid.spec.name,
            "cell_id": cell_id,
            **{axis: getattr(configs[cell_id], axis) for axis in AXES},
            **metrics,
        }
        for cell_id, metrics in sorted(by_cell.items())
        if cell_id in configs
    ]
    return pd.DataFrame.from_records(records)


def declared_summary(analysis: type[Analysis], rows: pd.DataFrame) -> dict[str, float]:
    """`analysis.summarize(rows)`, checked against its declaration, the one place that says what a summary
    holds: a name it does not list is a computation out of step with its declaration, stopped where it is
    written rather than found missing by whoever reads summary.parquet."""
    summary = analysis.summarize(rows)
    undeclared = sorted(name for name in summary if not analysis.info.summarised(name))
    if undeclared:
        folder = ANALYSES.package(analysis.info.id).replace(".", "/")
        raise BadInput(
            f"{folder}/__init__.py: summary_columns: expected every name {analysis.info.id}'s summary has, "
            f"missing {', '.join(undeclared)}"
        )
    return summary


def write_summary(grid: ExpandedGrid) -> pd.DataFrame:
    """Rewrites the rows of the grid's cells; rows of cells outside it (a launch restricted with --where
    shares the results folder with the whole grid) are kept as they are. Returns the grid's own rows."""
    frame = summarize_grid(grid)
    if frame.empty:
        return frame
    path = grid.workspace.summary
    merged = frame
    if path.is_file():
        previous = pd.read_parquet(path)
        others = previous[~previous["cell_id"].isin({c.id for c in grid.cells})]
        merged = pd.concat([others, frame], ignore_index=True).sort_values("cell_id", kind="stable")
    write_part(path, pa.Table.from_pandas(merged, preserve_index=False))
    return frame


def log_summaries(grid: ExpandedGrid, frame: pd.DataFrame, tracker) -> int:
    """Log each trained cell's summary as metrics on its MLflow run; returns how many cells were logged."""
    store = ModelStore(grid.workspace.models)
    updated = 0
    for record in frame.to_dict("records"):
        if store.cell(record["cell_id"]).state() != "trained":
            continue
        metrics = {
            k: float(v)
            for k, v in record.items()
            if "." in k and isinstance(v, (int, float)) and not math.isnan(float(v))
        }
        tracker.log_epoch(record["cell_id"], 0, metrics)
        updated += 1
    return updated
