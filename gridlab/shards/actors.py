"""Analyses on Ray: a pool of actors (resources from `resources.analysis`), each loading a model once per
cell and writing one Parquet part per analysis and shard. Parts that exist are skipped, so a relaunch
writes nothing new and a deleted part is rewritten alone. An actor that dies is restarted and its shard
retried (`max_restarts`, `max_task_retries`): a crash costs only the shard in flight.

    >>> report = run_analyses(expanded, emit=print)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.util import ActorPool

from gridlab.analyses.implementations import IMPLEMENTATIONS
from gridlab.analyses.registry import ANALYSES
from gridlab.checkpoints import ModelStore
from gridlab.grid.expand import Cell, ExpandedGrid
from gridlab.results.parts import part_path
from gridlab.results.summary import log_summaries, summary_path, write_summary
from gridlab.runtime import pick_device, quiet_environment, set_torch_threads
from gridlab.shards.plan import Shard, plan_shards
from gridlab.shards.runner import ShardJob, ShardRunner, rows_in_test_split


@ray.remote(max_restarts=2, max_task_retries=2)
class AnalysisActor:
    def __init__(self, grid_results: str, data_dir: str, cache_dir: str, device: str, cpus: float, gpus: float):
        quiet_environment(local_ray=False)
        set_torch_threads(cpus)
        self.runner = ShardRunner(Path(grid_results), Path(data_dir), Path(cache_dir), pick_device(device, gpus))

    def run(self, job: ShardJob) -> list[str]:
        return [str(p) for p in self.runner.run(job)]


@dataclass(frozen=True)
class AnalysisReport:
    written: int
    skipped: int
    not_implemented: list[str]


def plan_jobs(grid: ExpandedGrid, only: list[str] | None = None) -> tuple[list[ShardJob], int]:
    """Jobs with at least one missing part, for every trained cell; and how many parts already exist."""
    store = ModelStore(grid.results_dir)
    jobs, existing = [], 0
    for cell in grid.cells:
        if store.cell(cell.id).state() != "trained":
            continue
        analyses = _applicable(grid, cell, only)
        if not analyses:
            continue
        rows = rows_in_test_split(grid.results_dir, cell.id)
        per_model = {a: p for a, p in analyses.items() if ANALYSES[a].scope == "model"}
        per_instance = {a: p for a, p in analyses.items() if a not in per_model}
        units = [(shard, per_instance) for shard in plan_shards(rows, grid.spec.instances, grid.spec.shard_size)]
        if per_model:  # one unit over the whole test split, as shard 0
            units.append((Shard(0, 0, rows), per_model))
        for shard, wanted in units:
            missing = {a: p for a, p in wanted.items()
                       if not part_path(grid.results_dir, a, cell.id, shard.index).exists()}
            existing += len(wanted) - len(missing)
            if missing:
                jobs.append(ShardJob(grid.spec.name, cell.id, shard, missing, grid.spec.analysis_batch_size))
    return jobs, existing


def _applicable(grid: ExpandedGrid, cell: Cell, only: list[str] | None) -> dict[str, dict]:
    config = cell.config.model_dump()
    return {a: params.model_dump(mode="json") for a, params in grid.analyses.items()
            if a in IMPLEMENTATIONS and (only is None or a in only) and ANALYSES[a].applies(config)}


def run_analyses(grid: ExpandedGrid, emit: Callable[[str], None], only: list[str] | None = None) -> AnalysisReport:
    """Run (or resume) the grid's implemented per-instance analyses on every trained cell. Ray must be up."""
    not_implemented = [a for a in grid.analyses if a not in IMPLEMENTATIONS and (only is None or a in only)]
    if not_implemented:
        emit(f"analyses not implemented yet (validated, not run): {', '.join(not_implemented)}")
    jobs, existing = plan_jobs(grid, only)
    if not jobs:
        emit(f"analyses: nothing to do ({existing} parts already written)")
        return AnalysisReport(0, existing, not_implemented)
    resources = grid.spec.resources.analysis
    slots = max(1, int(ray.available_resources().get("CPU", 1) // resources.cpu))
    actors = [AnalysisActor.options(num_cpus=resources.cpu, num_gpus=resources.gpu).remote(
        str(grid.results_dir.resolve()), str(grid.data_dir.resolve()), str((grid.spec.results_dir / "cache").resolve()),
        grid.spec.device, resources.cpu, resources.gpu) for _ in range(min(slots, len(jobs)))]
    emit(f"analyses: {len(jobs)} shards on {len(actors)} actors ({existing} parts already written)")
    started, written = time.monotonic(), 0
    for done, paths in enumerate(ActorPool(actors).map_unordered(lambda actor, job: actor.run.remote(job), jobs), 1):
        written += len(paths)
        emit(f"[{_clock(started)}] analyses: {done}/{len(jobs)} shards, {written} parts written")
    for actor in actors:
        ray.kill(actor)
    return AnalysisReport(written, existing, not_implemented)


def summarize(grid: ExpandedGrid, tracker, emit: Callable[[str], None]) -> None:
    """summary.parquet from every part written so far, and the numbers on each cell's MLflow run."""
    frame = write_summary(grid)
    if frame.empty:
        return
    updated = log_summaries(grid, frame, tracker)
    emit(f"summaries: {len(frame)} cells in {summary_path(grid.results_dir)}, logged to {updated} MLflow runs")


def _clock(started: float) -> str:
    elapsed = int(time.monotonic() - started)
    return f"{elapsed // 60:02d}:{elapsed % 60:02d}"
