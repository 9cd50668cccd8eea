"""How long the work a grid has left should take, from what its results folder has measured (`store.timings`):
a cell to train costs its epochs at the median epoch time of the trained cells most like it, and the test
instances still to analyse cost the seconds per instance of their cell's likes' shards. "Like" is the same
dataset, encoder and architecture, else the same dataset and encoder, else the same dataset. Work with no
measured like is counted, not guessed.

    >>> estimate(expanded, states).describe()
    'training at most 1h10m05s for 12 cells (3 cells more with nothing measured like them), analyses about ...'
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gridlab.catalog.analyses import ANALYSES
from gridlab.execution.plan import plan_jobs
from gridlab.grid.expand import Cell, ExpandedGrid
from gridlab.store.timings import epoch_seconds, shard_seconds
from gridlab.text import counted, duration

LIKENESS: tuple[Callable[[Cell], tuple], ...] = (
    lambda c: (c.config.dataset, c.config.encoder, c.config.architecture),
    lambda c: (c.config.dataset, c.config.encoder),
    lambda c: (c.config.dataset,),
)


@dataclass(frozen=True)
class Estimate:
    train_seconds: float  # the cells to train with a measured like, at their full epochs (early stopping may cut)
    train_cells: int
    train_unknown: int  # cells to train with nothing measured like them
    analysis_seconds: float
    analysis_instances: int
    analysis_unknown: int  # instances whose cell has no measured like

    def describe(self) -> str:
        """'training at most 1h10m05s for 12 cells (3 more with nothing measured like them), analyses about
        25m00s for 8,000 test instances'; 'nothing left to train or analyse'."""
        parts = [
            _part(
                "training at most",
                self.train_seconds,
                counted(self.train_cells, "cell"),
                self.train_cells,
                counted(self.train_unknown, "cell"),
                self.train_unknown,
            ),
            _part(
                "analyses about",
                self.analysis_seconds,
                f"{self.analysis_instances:,} test instances",
                self.analysis_instances,
                f"{self.analysis_unknown:,} test instances",
                self.analysis_unknown,
            ),
        ]
        return ", ".join(p for p in parts if p) or "nothing left to train or analyse"


def _part(what: str, seconds: float, known: str, n_known: int, unknown: str, n_unknown: int) -> str:
    if n_known and n_unknown:
        return f"{what} {duration(seconds)} for {known} ({unknown} more with nothing measured like them)"
    if n_known:
        return f"{what} {duration(seconds)} for {known}"
    if n_unknown:
        return f"{what.split()[0]}: {unknown}, nothing measured like them yet"
    return ""


def estimate(grid: ExpandedGrid, states: Mapping[str, str]) -> Estimate:
    by_id = {c.id: c for c in grid.cells}
    epochs = {c: statistics.median(s) for c, s in epoch_seconds(grid.workspace).items() if c in by_id and s}
    shards = {c: s / n for c, (n, s) in shard_seconds(grid.workspace).items() if c in by_id and n}
    train_seconds, train_cells, train_unknown = 0.0, 0, 0
    for cell in grid.cells:
        if states[cell.id] == "trained":
            continue
        per_epoch = _like(cell, epochs, by_id)
        if per_epoch is None:
            train_unknown += 1
        else:
            train_seconds, train_cells = train_seconds + per_epoch * cell.config.train.epochs, train_cells + 1
    left = _instances_left(grid, states)
    analysis_seconds, analysis_instances, analysis_unknown = 0.0, 0, 0
    for cell_id, instances in left.items():
        per_instance = _like(by_id[cell_id], shards, by_id)
        if per_instance is None:
            analysis_unknown += instances
        else:
            analysis_seconds, analysis_instances = (
                analysis_seconds + per_instance * instances,
                analysis_instances + instances,
            )
    return Estimate(train_seconds, train_cells, train_unknown, analysis_seconds, analysis_instances, analysis_unknown)


def _like(cell: Cell, measured: Mapping[str, float], by_id: Mapping[str, Cell]) -> float | None:
    """The median measurement of the cells most like `cell` (itself included), or None."""
    for key in LIKENESS:
        values = [v for c, v in measured.items() if key(by_id[c]) == key(cell)]
        if values:
            return statistics.median(values)
    return None


def _instances_left(grid: ExpandedGrid, states: Mapping[str, str]) -> dict[str, int]:
    """Test instances each cell still has to analyse: its shards with a missing per-instance part (trained
    cells), or `instances` (cells still to train, when the grid sets it)."""
    left: dict[str, int] = {}
    if not any(grid.analyses):
        return left
    jobs, _ = plan_jobs(grid)
    for job in jobs:
        if any(ANALYSES[a].scope != "model" for a in job.analyses):  # per-model work is not timed by instance
            left[job.cell_id] = left.get(job.cell_id, 0) + job.shard.stop - job.shard.start
    for cell in grid.cells:
        if states[cell.id] != "trained" and grid.spec.instances:
            left[cell.id] = grid.spec.instances
    return left
