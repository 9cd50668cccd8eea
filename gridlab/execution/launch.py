"""`gridlab launch`: train every cell of a grid that is not trained yet, as one Ray Tune trial each, and run
the grid's analyses on every trained cell (`plan`, `actors`): a model's shards are queued as soon as it is
trained, those of the cells trained earlier once the first trial has started, and they run in the CPUs and GPUs
that the trials still running or waiting leave free (training first), then on the whole cluster.

    >>> report = launch(expanded, force=[], address=None, emit=print)
    >>> report = launch(expanded, [], None, emit=print, status=board.status)   # live rows on a terminal

Cells already in the model store are skipped, so adding values to an axis trains only the new cells; a cell
that another grid of the same results folder has trained (the same id: the same resolved config and seed) is
copied from it rather than trained again (`adopt_trained`), so an ablation grid reuses a paper grid's models,
with the analysis parts that grid computed as this one would (`adopt_parts`). Each launch is one Tune
experiment under `results_dir/<grid>/tune/launch-NNN`; a marker file says whether it finished. A driver killed
mid-grid leaves an unfinished experiment, which the next launch restores first (`Tuner.restore`, unfinished
trials continue from their last epoch checkpoint) before it starts a new experiment for whatever is still
untrained. Restoring unpickles Tune's saved state, so an experiment is restored only when its files match the
seal this user's gridlab wrote as Tune saved them (`seal`, docs/security.md): one without a seal (killed before
the first) is left and its cells train in a new experiment; one whose files changed since is refused
(UntrustedExperiment); `trust_results` restores either.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyarrow import fs as pafs
from ray import tune
from ray.exceptions import RayError
from ray.tune import PlacementGroupFactory
from ray.tune.experiment import Trial

from gridlab.catalog.analyses import ANALYSES
from gridlab.data.catalog import DATASETS
from gridlab.data.prepare import verify_release
from gridlab.errors import BadInput, Interrupted, ResourceFault, UntrustedExperiment, WorkerLost
from gridlab.execution.actors import AnalysisDispatcher, AnalysisReport, run_analyses, summarize
from gridlab.execution.codebase import Codebase
from gridlab.execution.plan import grid_peers, mark_shard_order, plan_jobs, reusable_parts
from gridlab.execution.progress import GridProgress, Status, cell_params, cell_tags
from gridlab.execution.ray_session import ray_session
from gridlab.execution.seal import OVERRIDE, SealState, Verdict, check
from gridlab.execution.trainable import cell_id_of, train_cell, trial_params
from gridlab.grid.expand import Cell, ExpandedGrid
from gridlab.grid.suggest import unknown
from gridlab.results.parts import copy_part, drop_cell_parts
from gridlab.store.atomic import write_json
from gridlab.store.layout import LAUNCH_MARKER, CellFiles, GridWorkspace
from gridlab.store.lock import exclusive
from gridlab.store.models import CellFolder, ModelStore, trained_elsewhere
from gridlab.text import counted
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker, final_metrics


@dataclass(frozen=True)
class LaunchReport:
    trained: list[str]
    failed: dict[str, str]
    skipped: int
    analyses: AnalysisReport | None = None


def tracking_uri(grid: ExpandedGrid) -> str:
    return grid.tracking_uri


def tracker_for(grid: ExpandedGrid) -> Tracker:
    artifact_root = None if grid.spec.tracking_uri else grid.results.artifacts
    return Tracker(tracking_uri(grid), grid.spec.name, TrackingJournal(grid.workspace.tracking), artifact_root)


def cells_to_train(grid: ExpandedGrid, force: list[str]) -> list[Cell]:
    ids = {c.id for c in grid.cells}
    for cell_id in force:
        if cell_id not in ids:
            raise BadInput(unknown("cell id", cell_id, sorted(ids)) + " (see `gridlab plan`)")
    store = ModelStore(grid.workspace.models)
    return [c for c in grid.cells if c.id in force or store.cell(c.id).state() != "trained"]


def launch(
    grid: ExpandedGrid,
    force: list[str],
    address: str | None,
    emit: Callable[[str], None],
    status: Status | None = None,
    only: list[str] | None = None,
    trust_results: bool = False,
) -> LaunchReport:
    """Train what is untrained and run (or resume) the analyses of every trained cell (`only` those; none for
    an empty list), each model's as soon as it is trained. A forced cell's old rows (and its peers' rows of the
    grid-scope analyses that compared them with it) are dropped first. Its start and end go to the grid's
    launch log (a study's wall time, `gridlab fidelity`). `trust_results`: restore an interrupted experiment
    without its seal."""
    with exclusive(grid.workspace, "launch"), _timed(grid) as record:
        report = _launch(grid, force, address, emit, status, only, trust_results)
        record.update(trained=len(report.trained), failed=len(report.failed))
    return report


@contextmanager
def _timed(grid: ExpandedGrid) -> Iterator[dict]:
    """Appends a start line, then an end line with the seconds between, whether the launch returned
    (`completed`) or raised; a launch killed outright leaves its start line alone."""
    launch_id, started = uuid.uuid4().hex[:12], time.time()
    _log_launch(grid, {"event": "start", "launch": launch_id, "at": started})
    record: dict = {}
    completed = False
    try:
        yield record
        completed = True
    finally:
        ended = time.time()
        _log_launch(
            grid,
            {"event": "end", "launch": launch_id, "at": ended, "seconds": ended - started, "completed": completed}
            | record,
        )


def _log_launch(grid: ExpandedGrid, line: dict) -> None:
    grid.results_dir.mkdir(parents=True, exist_ok=True)
    with open(grid.workspace.launch_log, "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")


def _launch(
    grid: ExpandedGrid,
    force: list[str],
    address: str | None,
    emit: Callable[[str], None],
    status: Status | None,
    only: list[str] | None,
    trust_results: bool,
) -> LaunchReport:
    pending = cells_to_train(grid, force)
    _drop_stale_rows(grid, force, emit)
    tracker = tracker_for(grid)
    tracker.deliver()  # what an earlier launch could not send goes first
    pending = adopt_trained(grid, pending, force, tracker, emit)
    with ray_session(address if address is not None else grid.spec.ray.address):
        dispatcher = AnalysisDispatcher(grid, emit, status, only) if grid.analyses and only != [] else None
        try:
            report = _train(grid, pending, force, emit, dispatcher, tracker, status, trust_results)
            tracker.finish_published(_published(grid))
            if dispatcher is not None:
                analyses = run_analyses(grid, emit, dispatcher=dispatcher)
                summarize(grid, tracker, emit)
                report = dataclasses.replace(report, analyses=analyses)
        finally:
            if dispatcher is not None:
                dispatcher.close()
    waiting = tracker.deliver()
    if waiting:
        emit(f"tracking: {counted(waiting, 'record')} not sent yet; `gridlab track {grid.file}` sends them")
    return report


def adopt_trained(
    grid: ExpandedGrid, pending: list[Cell], force: list[str], tracker: Tracker, emit: Callable[[str], None]
) -> list[Cell]:
    """Copy into this grid the pending cells another grid of its results folder has trained
    (`trained_elsewhere`), each with a tracking run of its own in this grid's experiment, under one launch run;
    a forced cell is trained. Returns the cells still to train."""
    sources: dict[str, CellFolder] = {}
    for cell in pending:
        source = None if cell.id in force else trained_elsewhere(grid.results, grid.spec.name, cell.id)
        if source is not None:
            sources[cell.id] = source
    if not sources:
        return pending
    key = tracker.start_launch(len(sources))
    store = ModelStore(grid.workspace.models)
    for cell in pending:
        if cell.id not in sources:
            continue
        config = cell.config.model_dump(mode="json")
        tracker.cell_run(cell.id, cell_params(cell.id, config), cell_tags(grid.spec.name, config), key)
        tracking = {"mlflow_run_id": tracker.run_id(cell.id), "tracking_uri": tracker.tracking_uri}
        folder = store.publish(cell.id, sources[cell.id].path, {CellFiles.TRACKING: tracking})
        tracker.finish_cell(cell.id, final_metrics(folder.read(CellFiles.METRICS)), folder.path)
        parts = adopt_parts(grid, cell, grid.results.grid(sources[cell.id].grid))
        emit(
            f"{cell.id}: trained by grid {sources[cell.id].grid}, copied (same config and seed)"
            + (f" with {counted(parts, 'analysis part')} computed as here" if parts else "")
        )
    tracker.end_launch(key, len(sources), 0)
    return [c for c in pending if c.id not in sources]


def adopt_parts(grid: ExpandedGrid, cell: Cell, source: GridWorkspace) -> int:
    """Copy the analysis parts of an adopted cell that its source grid computed exactly as this grid would
    (`reusable_parts`), under this grid's name, so an ablation's baseline cell is not analysed twice."""
    parts = reusable_parts(grid, cell, source)
    if parts:
        mark_shard_order(grid.workspace)
    for part in parts:
        copy_part(part.source, part.target, grid.spec.name)
    return len(parts)


def _drop_stale_rows(grid: ExpandedGrid, force: list[str], emit: Callable[[str], None]) -> None:
    configs = {c.id: c.config.model_dump(mode="json") for c in grid.cells}
    peers = grid_peers(
        list(ANALYSES), configs
    )  # every grid-scope analysis: rows of one the grid no longer asks for too
    for cell_id in force:
        removed = drop_cell_parts(grid.workspace, cell_id)
        for analysis, peers_by_cell in peers.items():
            for peer in peers_by_cell.get(cell_id, []):
                removed += drop_cell_parts(grid.workspace, peer, [analysis])
        if removed:
            emit(f"{cell_id}: retraining, so {removed} folders of its analysis rows were removed")


class AnalyseWhenTrained(tune.Callback):
    """Queues a model's analysis shards the moment its trial is published (GridProgress runs first), and keeps
    the dispatcher's actors fed at every step of Tune's loop, in what the trials that run or wait leave of the
    cluster (`training_demand`). The cells trained before this experiment (`trained_before`) are queued once its
    first trial has started, so their shards take the CPUs its trials leave free instead of waiting for the last
    trial to end. Not saved with the experiment: a restored launch analyses its cells after training instead."""

    def __init__(self, grid: ExpandedGrid, dispatcher: AnalysisDispatcher | None, trained_before: set[str]):
        self.grid = grid
        self.dispatcher = dispatcher
        self.trained_before = trained_before

    def __getstate__(self) -> dict:
        return {"grid": None, "dispatcher": None, "trained_before": set()}

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        if self.dispatcher is not None and self.trained_before:
            self.dispatcher.submit(plan_jobs(self.grid, cell_ids=self.trained_before)[0])
            self.trained_before = set()

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        if self.dispatcher is not None:
            self.dispatcher.submit(plan_jobs(self.grid, cell_ids={cell_id_of(trial)})[0])

    def on_step_end(self, iteration, trials, **info) -> None:
        if self.dispatcher is not None:
            self.dispatcher.leave_to_training(*training_demand(trials))
            self.dispatcher.pump()


def training_demand(trials: list) -> tuple[float, float]:
    """CPUs and GPUs the trials that run or wait their turn ask for (their own `trial_params`)."""
    unfinished = [t.config["trial"] for t in trials if t.status in (Trial.PENDING, Trial.RUNNING, Trial.PAUSED)]
    return float(sum(t["cpus"] for t in unfinished)), float(sum(t["gpus"] for t in unfinished))


def _train(
    grid: ExpandedGrid,
    pending: list[Cell],
    force: list[str],
    emit: Callable[[str], None],
    dispatcher: AnalysisDispatcher | None,
    tracker: Tracker,
    status: Status | None = None,
    trust_results: bool = False,
) -> LaunchReport:
    if not pending:
        emit(f"nothing to train: all {counted(len(grid.cells), 'cell')} of {grid.spec.name} are trained")
        return LaunchReport([], {}, len(grid.cells))
    emit(
        f"{grid.spec.name}: {len(pending)} of {counted(len(grid.cells), 'cell')} to train; "
        f"results in {grid.results_dir}/, MLflow at {tracking_uri(grid)}"
    )
    _verify_data(grid, pending)
    grid.results_dir.mkdir(parents=True, exist_ok=True)
    store = ModelStore(grid.workspace.models)
    forced_runs = {cell_id: store.cell(cell_id).mlflow_run_id() for cell_id in force}
    for resume in range(WORKER_LOSS_RESUMES + 1):
        # A forced cell retrained before the loss (its folder holds a new run) is not forced again.
        force = [c for c in force if store.cell(c).mlflow_run_id() == forced_runs[c]]
        try:
            _train_pending(grid, pending, force, emit, dispatcher, tracker, status, trust_results)
            break
        except WorkerLost as lost:
            if resume == WORKER_LOSS_RESUMES:
                raise WorkerLost(
                    f"{lost}, {counted(resume + 1, 'time')} in this launch; the cells trained so far are kept: "
                    f"`gridlab launch {grid.file}` resumes (lower the trials' memory, or their number at once)"
                ) from lost
            emit(f"warning: {lost}; resuming the launch ({resume + 1} of {WORKER_LOSS_RESUMES})")
    folders = {c.id: store.cell(c.id) for c in pending}
    return LaunchReport(
        trained=[i for i, s in folders.items() if s.state() == "trained"],
        failed={i: s.failure_reason() or "" for i, s in folders.items() if s.state() == "failed"},
        skipped=len(grid.cells) - len(pending),
    )


WORKER_LOSS_RESUMES = 2
"""How often one launch resumes its own experiment after Ray lost a trial's worker (`WorkerLost`): enough for a
passing memory peak, not a loop on a trial that cannot fit."""


def _train_pending(
    grid: ExpandedGrid,
    pending: list[Cell],
    force: list[str],
    emit: Callable[[str], None],
    dispatcher: AnalysisDispatcher | None,
    tracker: Tracker,
    status: Status | None,
    trust_results: bool,
) -> None:
    """Resume the grid's unfinished experiments, then train what is still untrained in a new one."""
    store = ModelStore(grid.workspace.models)
    for experiment in _unfinished(grid):
        path, filesystem = _tune_storage(grid, experiment)
        if not trust_results and not _trusted(grid, experiment, path, filesystem, tracker, emit):
            continue
        emit(f"resuming the interrupted launch {experiment.name}")
        signalled = _fit(
            tune.Tuner.restore(
                path,
                trainable=_trainable(),
                resume_unfinished=True,
                resume_errored=False,
                storage_filesystem=filesystem,
            )
        )
        if signalled:
            raise _interrupted(grid, _read_marker(experiment)["cells"])
        # Without a signal, the cells it left pending train in a new experiment below: a trial that a full disk
        # stopped ended terminated, and Tune does not rerun a terminated trial.
        _end_experiment(experiment, store, tracker)
    remaining = [c for c in pending if c.id in force or store.cell(c.id).state() != "trained"]
    for cell_id in force:
        tracker.supersede(cell_id)
    if remaining:
        already = len(grid.cells) - len(pending)
        _run(grid, remaining, tracker, emit, already=already, dispatcher=dispatcher, status=status)


def _trusted(
    grid: ExpandedGrid,
    experiment: Path,
    path: str,
    filesystem: pafs.FileSystem | None,
    tracker: Tracker,
    emit: Callable[[str], None],
) -> bool:
    """Whether the interrupted `experiment` may be restored: its files match this user's seal. One without a
    seal is left (marked so, its launch run ended, its unfinished cells' runs superseded: they train from
    scratch in a new experiment, and the two trainings' metrics must not mix); one whose files changed since
    gridlab sealed them stops the launch."""
    verdict, detail = check(path, filesystem)
    if verdict is Verdict.MATCHES:
        return True
    where = _trial_storage(grid, experiment)
    if verdict is Verdict.BROKEN:
        raise UntrustedExperiment(
            f"{where}: not restored: {detail} (changed since gridlab saved it), and restoring a Tune experiment "
            f"unpickles its files; check who can write {grid.results_dir}, or if you trust them, run the launch "
            f"again with {OVERRIDE}"
        )
    emit(
        f"{where}: not resumed: {detail} (killed before its first save, or sealed elsewhere), and resuming "
        f"unpickles its files: its unfinished cells train from scratch in a new experiment ({OVERRIDE} "
        "resumes such an experiment instead)"
    )
    store = ModelStore(grid.workspace.models)
    marker = _end_experiment(experiment, store, tracker, left=detail)
    for cell_id in marker["cells"]:
        if store.cell(cell_id).state() != "trained":
            tracker.supersede(cell_id)
    return False


def _end_experiment(experiment: Path, store: ModelStore, tracker: Tracker, left: str | None = None) -> dict:
    """Mark a restored (or `left`) experiment finished and end its launch run with what its cells became."""
    marker = _mark_finished(experiment, {"left": left} if left else {})
    states = [store.cell(c).state() for c in marker["cells"]]
    key = marker["launch_key"] if "launch_key" in marker else marker["parent_run"]  # earlier: the MLflow run id
    tracker.end_launch(key, states.count("trained"), states.count("failed"))
    return marker


def _published(grid: ExpandedGrid) -> dict[str, Path]:
    """The grid's trained cells and their model folders."""
    store = ModelStore(grid.workspace.models)
    folders = {c.id: store.cell(c.id) for c in grid.cells}
    return {cell_id: folder.path for cell_id, folder in folders.items() if folder.state() == "trained"}


def _verify_data(grid: ExpandedGrid, cells: list[Cell]) -> None:
    """Refuses, in one line and before any trial starts, a dataset file that is not its published release (a
    truncated download, an edited copy): a trial would otherwise fail on it, retried, with a traceback each
    time. Each file is hashed once per (path, size, mtime)."""
    for dataset in sorted({c.config.dataset for c in cells}):
        verify_release(DATASETS[dataset], grid.data_dir)


def _trainable():
    """`train_cell`, each trial asking Ray for what its own params say (`ExpandedGrid.train_resources`) and
    comparing the gridlab its worker imported with the driver's (`codebase`)."""
    return tune.with_resources(tune.with_parameters(train_cell, code=Codebase.here()), _trial_resources)


def _trial_resources(config: dict[str, Any]) -> PlacementGroupFactory:
    trial = config["trial"]
    return PlacementGroupFactory([{"CPU": trial["cpus"]} | ({"GPU": trial["gpus"]} if trial["gpus"] else {})])


def _run(
    grid: ExpandedGrid,
    cells: list[Cell],
    tracker: Tracker,
    emit: Callable[[str], None],
    already: int,
    dispatcher: AnalysisDispatcher | None,
    status: Status | None = None,
) -> None:
    cache_dir = grid.results.cache
    experiment = grid.workspace.next_tune_experiment().resolve()
    params = [
        trial_params(
            c.id,
            c.config,
            grid.data_dir,
            cache_dir,
            grid.spec.device,
            grid.train_resources(c.id).cpu,
            grid.train_resources(c.id).gpu,
            trial_dir=_trial_storage(grid, experiment / c.id),
        )
        for c in cells
    ]
    parent = tracker.start_launch(len(cells))
    progress = GridProgress(
        grid.spec.name,
        grid.workspace.models.resolve(),
        tracker,
        parent,
        {c.id: c.config.model_dump(mode="json") for c in cells},
        already,
        emit,
        status,
    )
    trained_before = set(_published(grid)) - {c.id for c in cells}  # a forced cell's old model is not analysed
    storage_path, storage_filesystem = _tune_storage(grid, experiment.parent)
    tuner = tune.Tuner(
        _trainable(),
        param_space={"trial": tune.grid_search(params)},
        tune_config=tune.TuneConfig(trial_name_creator=_trial_name, trial_dirname_creator=_trial_name),
        run_config=tune.RunConfig(
            name=experiment.name,
            storage_path=storage_path,
            storage_filesystem=storage_filesystem,
            callbacks=[progress, AnalyseWhenTrained(grid, dispatcher, trained_before), SealState()],
            verbose=0,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            failure_config=tune.FailureConfig(max_failures=2),  # a lost worker resumes from its checkpoint
        ),
    )
    experiment.mkdir(parents=True, exist_ok=True)
    _write_marker(experiment, {"finished": False, "cells": [c.id for c in cells], "launch_key": parent})
    signalled = _fit(tuner)
    if progress.fault is not None:  # the experiment stays unfinished: a relaunch resumes it
        raise ResourceFault(progress.fault)
    store = ModelStore(grid.workspace.models)
    if signalled or any(store.cell(c.id).state() == "pending" for c in cells):
        raise _interrupted(grid, [c.id for c in cells])
    _mark_finished(experiment)
    counts = progress.counts()
    tracker.end_launch(parent, counts["trained"] - already, counts["failed"])


def _fit(tuner: tune.Tuner) -> bool:
    """`tuner.fit()`; True when a stop signal (Ctrl-C, or SIGTERM raised as SIGINT) came during it. Tune
    installs its own SIGINT handler for the fit and puts the previous one back only when a signal arrives:
    after a fit that ends normally its handler would stay and swallow the next Ctrl-C (the analyses that
    follow could not be stopped), and a signal that arrives as the last trial ends stops nothing Tune can
    see. So the handler is put back here, and a handler already put back means the signal came."""
    handler = signal.getsignal(signal.SIGINT)
    tune_catches = threading.current_thread() is threading.main_thread() and not int(
        os.environ.get("TUNE_DISABLE_SIGINT_HANDLER", "0")
    )
    try:
        tuner.fit()
        return tune_catches and signal.getsignal(signal.SIGINT) is handler
    except RuntimeError as error:
        # Tune's actor manager handles an actor's death and a task's error; any other Ray error (a worker its
        # memory monitor killed as the trial started) it re-raises as a RuntimeError that ends the whole fit.
        if not isinstance(error.__cause__, RayError):
            raise
        cause = error.__cause__
        detail = (str(cause).strip().splitlines() or [""])[0][:200]
        raise WorkerLost(f"Ray lost a training trial's worker ({type(cause).__name__}: {detail})") from error
    finally:
        signal.signal(signal.SIGINT, handler)


def _interrupted(grid: ExpandedGrid, cell_ids: list[str]) -> Interrupted:
    """The stop of a launch whose Tune fit a signal ended (Tune returns from `fit` on Ctrl-C, with trials
    unfinished), or that left cells pending: its experiment stays unfinished, so the next launch resumes it,
    and the analyses are not started (also when every trial had finished as the signal came)."""
    store = ModelStore(grid.workspace.models)
    pending = sum(store.cell(c).state() == "pending" for c in cell_ids)
    trained = sum(store.cell(c.id).state() == "trained" for c in grid.cells)
    return Interrupted(
        f"interrupted: {trained} of {counted(len(grid.cells), 'cell')} trained, {pending} of this "
        f"launch's not finished; `gridlab launch {grid.file}` resumes them"
    )


def _trial_name(trial) -> str:
    return cell_id_of(trial)


def _tune_storage(grid: ExpandedGrid, local: Path) -> tuple[str, pafs.FileSystem | None]:
    """Where Tune keeps what `local` (a folder under the grid's tune/) stands for: that folder, or for results
    in object storage the same place in the store (so trials on any node checkpoint there) with its
    filesystem. The launch markers stay in the local folder, mirrored like every published file."""
    store = grid.store
    return (store.key(local), store.filesystem) if store.remote else (str(local), None)


def _trial_storage(grid: ExpandedGrid, local: Path) -> Path | str:
    """A trial's folder as its trainable finds it: the folder, or its URI in the object store."""
    return grid.store.where(local)


def _unfinished(grid: ExpandedGrid) -> list[Path]:
    return [
        p.resolve()
        for p in grid.workspace.tune_experiments()
        if (p / LAUNCH_MARKER).is_file()
        and not _read_marker(p)["finished"]
        and _restorable(*_tune_storage(grid, p.resolve()))
    ]


def _restorable(path: str, filesystem: pafs.FileSystem | None) -> bool:
    """Whether Tune can resume the experiment: it is there, and its saved state is whole (Tune writes it in
    place, so a full disk or a kill mid-write can cut it short; such an experiment is left, and its
    unfinished cells train in a new one)."""
    if not tune.Tuner.can_restore(path, storage_filesystem=filesystem):
        return False
    filesystem = filesystem or pafs.LocalFileSystem()
    states = filesystem.get_file_info(pafs.FileSelector(path))
    try:
        for state in (s for s in states if s.base_name.startswith("experiment_state") and s.extension == "json"):
            with filesystem.open_input_stream(state.path) as stream:
                json.loads(stream.read())
    except (ValueError, OSError):
        return False
    return True


def _write_marker(folder: Path, marker: dict) -> None:
    """What a launch's Tune experiment is for (its cells, its MLflow parent run) and whether it finished."""
    write_json(folder / LAUNCH_MARKER, marker, indent=None)


def _read_marker(folder: Path) -> dict:
    return json.loads((folder / LAUNCH_MARKER).read_text())


def _mark_finished(folder: Path, extra: dict | None = None) -> dict:
    marker = {**_read_marker(folder), "finished": True, **(extra or {})}
    _write_marker(folder, marker)
    return marker
