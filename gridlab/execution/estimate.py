"""How long the work a grid has left should take, from what its results folder has measured (`store.timings`):
a cell to train costs its epochs at the median epoch time of the trained cells most like it, and the test
instances still to analyse cost the seconds per instance of their cell's likes' shards, and a per-model
analysis (an adversary to train) the seconds the same analysis took on its cell's likes. "Like" is the same
dataset, encoder and architecture, else the same dataset and encoder, else the same dataset. Work with no
measured like is counted, not guessed.

    >>> estimate(expanded, states).describe()
    'training at most 1h10m05s of work for 12 cells (3 cells more with nothing measured like them), ...'
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.catalog.analyses import ANALYSES
from gridlab.config.schema import CellConfig
from gridlab.data.batching import iterate_batches, sample_rows, training_rows
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.execution.plan import ShardJob, plan_jobs, reusable_parts
from gridlab.execution.runner import analyse_batches
from gridlab.grid.expand import Cell, ExpandedGrid
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.factory import build_model
from gridlab.results.shards import Shard
from gridlab.runtime import set_torch_threads
from gridlab.store.timings import epoch_seconds, model_seconds, shard_seconds
from gridlab.text import counted, duration
from gridlab.training.loop import batch_loss, hierarchical, make_optimizer

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
    model_seconds: float = 0.0  # per-model analyses (an adversary, the diagnostic MLP) with a measured like
    model_analyses: int = 0  # how many (cell x analysis)
    model_unknown: int = 0  # per-model analyses with nothing measured like them

    def describe(self) -> str:
        """'training at most 1h10m05s of work for 12 cells (3 cells more with nothing measured like them),
        analyses about 25m00s of work for 8,000 test instances, per-model analyses about 40m00s of work for
        24 analyses'; 'nothing left to train or analyse'."""
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
            _part(
                "per-model analyses about",
                self.model_seconds,
                counted(self.model_analyses, "analysis", "analyses"),
                self.model_analyses,
                counted(self.model_unknown, "analysis", "analyses"),
                self.model_unknown,
            ),
        ]
        return ", ".join(p for p in parts if p) or "nothing left to train or analyse"


def _part(what: str, seconds: float, known: str, n_known: int, unknown: str, n_unknown: int) -> str:
    """Seconds are the work's own (trial time, shard time): trials and actors that run side by side share
    the wall clock."""
    if n_known and n_unknown:
        return f"{what} {duration(seconds)} of work for {known} ({unknown} more with nothing measured like them)"
    if n_known:
        return f"{what} {duration(seconds)} of work for {known}"
    if n_unknown:
        return f"{what.split()[0]}: {unknown}, nothing measured like them yet"
    return ""


@dataclass(frozen=True)
class Calibration:
    """Measured just now on one cell of each kind that the results folder has not measured yet: its seconds
    per training epoch and per analysed test instance (None where it has no per-instance analysis)."""

    epoch_seconds: dict[str, float]  # representative cell id -> seconds per epoch
    instance_seconds: dict[str, float]  # representative cell id -> seconds per analysed instance
    kinds: int


def estimate(
    grid: ExpandedGrid,
    states: Mapping[str, str],
    calibration: Calibration | None = None,
    copied: Mapping[str, str] | None = None,
) -> Estimate:
    """What is left, at the pace measured so far. `copied`: cells a launch copies from another grid of the
    results folder (`trained_elsewhere`), by that grid's name: not trained here, and analysed here but for the
    parts that come with them (`plan.reusable_parts`)."""
    copied = copied or {}
    by_id = {c.id: c for c in grid.cells}
    epochs = {c: statistics.median(s) for c, s in epoch_seconds(grid.workspace).items() if c in by_id and s}
    shards = {c: s / n for c, (n, s) in shard_seconds(grid.workspace).items() if c in by_id and n}
    model_times = {(c, a): t for (c, a), t in model_seconds(grid.workspace).items() if c in by_id}
    if calibration is not None:  # what was measured in earnest wins over a few batches
        epochs = {**calibration.epoch_seconds, **epochs}
        shards = {**calibration.instance_seconds, **shards}
    train_seconds, train_cells, train_unknown = 0.0, 0, 0
    for cell in grid.cells:
        if states[cell.id] == "trained" or cell.id in copied:
            continue
        per_epoch = _like(cell, epochs, by_id)
        if per_epoch is None:
            train_unknown += 1
        else:
            train_seconds, train_cells = train_seconds + per_epoch * cell.config.train.epochs, train_cells + 1
    jobs = plan_jobs(grid)[0] if any(grid.analyses) else []
    left = _instances_left(grid, states, copied, jobs)
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
    model_time, model_analyses, model_unknown = 0.0, 0, 0
    for cell, analysis in _models_left(grid, states, jobs):
        measured = {c: t for (c, a), t in model_times.items() if a == analysis}
        seconds = _like(cell, measured, by_id)
        if seconds is None:
            model_unknown += 1
        else:
            model_time, model_analyses = model_time + seconds, model_analyses + 1
    return Estimate(
        train_seconds,
        train_cells,
        train_unknown,
        analysis_seconds,
        analysis_instances,
        analysis_unknown,
        model_time,
        model_analyses,
        model_unknown,
    )


def _like(cell: Cell, measured: Mapping[str, float], by_id: Mapping[str, Cell]) -> float | None:
    """The median measurement of the cells most like `cell` (itself included), or None."""
    for key in LIKENESS:
        values = [v for c, v in measured.items() if key(by_id[c]) == key(cell)]
        if values:
            return statistics.median(values)
    return None


def _instances_left(
    grid: ExpandedGrid, states: Mapping[str, str], copied: Mapping[str, str], jobs: Sequence[ShardJob]
) -> dict[str, int]:
    """Test instances each cell still has to analyse: its shards with a missing per-instance part (trained
    cells, `jobs` planned), or `instances` less those whose parts a copy brings (cells still to train, when the
    grid sets it)."""
    left: dict[str, int] = {}
    if not any(grid.analyses):
        return left
    for job in jobs:
        if any(ANALYSES[a].scope != "model" for a in job.analyses):  # per-model work is not timed by instance
            left[job.cell_id] = left.get(job.cell_id, 0) + job.shard.stop - job.shard.start
    for cell in grid.cells:
        if states[cell.id] != "trained" and grid.spec.instances and _per_instance(grid, cell):
            left[cell.id] = grid.spec.instances - _instances_copied(grid, cell, copied.get(cell.id))
    return left


def _instances_copied(grid: ExpandedGrid, cell: Cell, source: str | None) -> int:
    """Test instances of a cell copied from grid `source` whose every per-instance analysis comes with the copy."""
    if source is None:
        return 0
    wanted = _per_instance(grid, cell)
    brought: dict[Shard, set[str]] = {}
    for part in reusable_parts(grid, cell, grid.results.grid(source)):
        if part.shard is not None:  # a per-instance part
            brought.setdefault(part.shard, set()).add(part.analysis)
    return sum(shard.stop - shard.start for shard, analyses in brought.items() if analyses >= wanted)


def _per_instance(grid: ExpandedGrid, cell: Cell) -> set[str]:
    """The grid's analyses that apply to the cell and are timed by instance (not per model)."""
    return {a for a in grid.analyses if ANALYSES[a].scope != "model" and ANALYSES[a].applies(cell.config)}


def _models_left(grid: ExpandedGrid, states: Mapping[str, str], jobs: Sequence[ShardJob]) -> list[tuple[Cell, str]]:
    """(cell, per-model analysis) still to run: those of the planned jobs (trained cells), and every one that
    applies to a cell still to train."""
    by_id = {c.id: c for c in grid.cells}
    planned = [(by_id[j.cell_id], a) for j in jobs for a in j.analyses if ANALYSES[a].scope == "model"]
    pending = [(c, a) for c in grid.cells if states[c.id] != "trained" for a in sorted(_per_model(grid, c))]
    return planned + pending


def _per_model(grid: ExpandedGrid, cell: Cell) -> set[str]:
    """The grid's analyses that apply to the cell and run once per model (not timed by instance)."""
    return {a for a in grid.analyses if ANALYSES[a].scope == "model" and ANALYSES[a].applies(cell.config)}


CALIBRATION_BATCHES = 4  # timed training batches per kind of cell, after one to warm up


def calibrate(grid: ExpandedGrid, states: Mapping[str, str]) -> Calibration:
    """Time a few training batches and one batch of the grid's per-instance analyses for one untrained cell of
    each kind (same dataset, encoder and architecture) that nothing in the results folder measured, on its
    real data with an untrained model. It reads (and prepares) those datasets, as a launch would."""
    by_id = {c.id: c for c in grid.cells}
    measured = {LIKENESS[0](by_id[c]) for c in epoch_seconds(grid.workspace) if c in by_id}
    kinds: dict[tuple, Cell] = {}
    for cell in grid.cells:
        if states[cell.id] != "trained" and LIKENESS[0](cell) not in measured:
            kinds.setdefault(LIKENESS[0](cell), cell)
    epochs, instances = {}, {}
    for cell in kinds.values():
        set_torch_threads(grid.train_resources(cell.id).cpu)  # as its trial would run
        config = cell.config
        data = load_dataset(config.dataset, grid.data_dir, grid.results.cache, config.data)
        torch.manual_seed(config.seed)
        model = build_model(config, data)
        epochs[cell.id] = _seconds_per_epoch(model, data, config)
        per_instance = _seconds_per_instance(grid, cell, model.eval(), data)
        if per_instance is not None:
            instances[cell.id] = per_instance
    return Calibration(epochs, instances, len(kinds))


def _seconds_per_epoch(model: torch.nn.Module, data: PreparedDataset, config: CellConfig) -> float:
    table = data.splits["train"]
    chosen = training_rows(table.num_rows, config.train.max_train, config.train.subset)
    rows = table.num_rows if chosen is None else len(chosen)
    optimizer = make_optimizer(model, config.train)
    model.train()
    batches = iterate_batches(
        table,
        config.train.batch_size,
        shuffle=True,
        seed=0,
        sentences=hierarchical(model),
        bucketed=config.train.batching == "bucketed",
    )
    times = []
    for _, batch in zip(range(CALIBRATION_BATCHES + 1), batches):
        started = time.perf_counter()
        loss = batch_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    per_batch = statistics.median(times[1:] or times)
    return per_batch * -(-rows // config.train.batch_size)


def _seconds_per_instance(
    grid: ExpandedGrid, cell: Cell, model: torch.nn.Module, data: PreparedDataset
) -> float | None:
    """One batch of the grid's per-instance analyses (seed-peer analyses left out) on a sample of test rows."""
    chosen = {
        a: IMPLEMENTATIONS[a]
        for a in grid.analyses
        if a in IMPLEMENTATIONS
        and issubclass(IMPLEMENTATIONS[a], InstanceAnalysis)
        and ANALYSES[a].applies(cell.config)
    }
    if not chosen or not isinstance(model, AttentionClassifier):
        return None
    device = torch.device("cpu")
    test = data.splits["test"]
    contexts = {
        a: AnalysisContext(
            cell.id, model, device, grid.analyses[a], cell.config, split_rows=test, label_names=data.label_names
        )
        for a in chosen
    }
    rows = test.take(pa.array(sample_rows(test.num_rows, grid.spec.analysis_batch_size)))
    started = time.perf_counter()
    batches = iterate_batches(rows, grid.spec.analysis_batch_size, sentences=hasattr(model, "word_attention"))
    analyse_batches(batches, model, chosen, contexts, [], (), device)
    return (time.perf_counter() - started) / rows.num_rows
