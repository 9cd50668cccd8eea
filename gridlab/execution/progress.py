"""The driver's side of training: publish finished cells to the model store and MLflow, record failures,
and print progress a person can follow (cells done / running / failed / pending, elapsed time)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray import tune

from gridlab.execution.trainable import RESOURCE_FAULT, cell_id_of, final_checkpoint
from gridlab.store.layout import CellFiles, GridWorkspace
from gridlab.store.models import ModelStore
from gridlab.store.store import Store
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker, final_metrics, flatten

# The live status of a running trial or of the analyses, by key (a cell id, "analyses"); None drops it. A
# terminal shows these as rows redrawn in place (`cli.output.LiveBoard`); without one, lines are printed.
Status = Callable[[str, str | None], None]
TAG_KEYS = ("dataset", "encoder", "attention", "projection", "architecture", "attention_mode", "seed")


def cell_params(cell_id: str, config: dict[str, Any]) -> dict[str, Any]:
    """A cell run's MLflow params: its id and every resolved config key."""
    return {"cell_id": cell_id, **flatten(config)}


def cell_tags(grid: str, config: dict[str, Any]) -> dict[str, str]:
    """A cell run's MLflow tags: its grid and axes."""
    return {"grid": grid, **{k: str(config[k]) for k in TAG_KEYS}}


class GridProgress(tune.Callback):
    """A Tune callback; it is saved with the experiment, so it holds only plain data and a Tracker."""

    def __init__(
        self,
        grid: str,
        models: Path,
        tracker: Tracker,
        launch_key: str,
        cells: dict[str, dict[str, Any]],
        already_trained: int,
        emit: Callable[[str], None],
        status: Status | None = None,
    ):
        self.grid = grid
        self.models = models  # GridWorkspace.models: where finished trials are published
        self.tracker = tracker
        self.launch_key = launch_key  # the tracker's key of this launch
        self.cells = cells  # cell id -> resolved config (JSON)
        self.already_trained = already_trained
        self.emit = emit
        self.show = status  # a live row per running trial (a terminal), else None: a line per epoch
        self.status = {cell_id: "pending" for cell_id in cells}
        self.opened: set[str] = set()  # cells whose tracking run this launch has opened
        self.started = time.monotonic()
        self.fault: str | None = None  # a full or unwritable disk stopped a trial: the launch stops with this

    def __getstate__(self) -> dict:
        """Tune saves the callback with its experiment: a live display is not saved, and the model store is
        saved as a `portable` location, so that a launch resumed on another machine publishes to its own
        mirror of results kept in object storage."""
        return {**self.__dict__, "show": None, "models": Store.portable(self.models)}

    def __setstate__(self, state: dict) -> None:  # a restored experiment counts time from its restart
        if "runs" in state:  # saved by a gridlab whose tracker sent at once, without a journal
            state = _journaled(state)
        self.__dict__.update({"show": None, **state, "models": Store.resolved(state["models"])})
        self.started = time.monotonic()
        # the cells' runs are opened again: the launch may resume on another machine, tracking to another store
        # (its own sqlite file), where only the records written from here on arrive
        self.opened = set()
        # the experiment may have been saved before some of its cells were published: the store says which are
        store = ModelStore(self.models)
        for cell_id, status in self.status.items():
            if status != "trained" and store.cell(cell_id).state() == "trained":
                self.status[cell_id] = "trained"

    # Tune hooks ------------------------------------------------------------------------------------
    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        cell_id = cell_id_of(trial)
        self._open(cell_id)
        self._set(cell_id, "running", "started")

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        cell_id = cell_id_of(trial)
        if RESOURCE_FAULT in result:
            self.fault = result[RESOURCE_FAULT]
            return
        if result.get("final") or result.get("failed") or "epoch" not in result:
            return
        metrics = {k: v for k, v in result.items() if k in ("train_loss",) or k.startswith("dev_")}
        self._open(cell_id)
        self.tracker.log_epoch(cell_id, int(result["epoch"]), metrics)
        if self.show is not None:
            self.show(cell_id, f"{self._what(cell_id)}: {epoch_line(self.cells[cell_id], result)}")
        else:
            self._say(cell_id, "running", epoch_line(self.cells[cell_id], result))

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        cell_id = cell_id_of(trial)
        result = trial.last_result or {}
        if RESOURCE_FAULT in result:  # not the cell's failure: it stays pending, and the launch stops
            self.status[cell_id] = "pending"
            return
        if result.get("failed"):
            self._fail(cell_id, result["failure_reason"])
            return
        with trial.checkpoint.as_directory() as folder:
            self._finish(cell_id, Path(folder), result)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        """A trial error fails the cell, unless the trial had finished: a restored experiment's saved state
        can predate a trial's last epochs and name a checkpoint that `num_to_keep` deleted since, so Tune
        cannot restore a trial whose final checkpoint (and often published cell) is already there. Without
        this check its error would replace a trained cell with a failure."""
        cell_id = cell_id_of(trial)
        with final_checkpoint(trial.config["trial"]["trial_dir"]) as folder:
            if folder is not None:
                self._finish(cell_id, folder, json.loads((folder / CellFiles.METRICS).read_text()))
                return
        self._fail(cell_id, _last_error_line(trial))

    # ------------------------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        values = list(self.status.values())
        return {
            "trained": self.already_trained + values.count("trained"),
            "running": values.count("running"),
            "failed": values.count("failed"),
            "pending": values.count("pending"),
        }

    def _open(self, cell_id: str) -> None:
        """The cell's tracking run, opened (created, or marked running again) once per launch."""
        if cell_id not in self.opened:
            config = self.cells[cell_id]
            self.tracker.cell_run(cell_id, cell_params(cell_id, config), cell_tags(self.grid, config), self.launch_key)
            self.opened.add(cell_id)

    def _finish(self, cell_id: str, folder: Path, result: dict[str, Any]) -> None:
        """Publish a finished trial's final checkpoint and finish the cell's run with its final metrics."""
        published = self._publish(cell_id, folder)
        final = final_metrics(result)
        self.tracker.finish_cell(cell_id, final, published)
        summary = ", ".join(f"{k} {v:.4g}" for k, v in final.items() if k.startswith("test_"))
        self._set(cell_id, "trained", f"{summary} (best epoch {result.get('best_epoch')})")

    def _publish(self, cell_id: str, folder: Path) -> Path:
        return ModelStore(self.models).publish(cell_id, folder, {CellFiles.TRACKING: self._tracking(cell_id)}).path

    def _tracking(self, cell_id: str) -> dict[str, str | None]:
        """The cell's MLflow run id (None while the tracking server has not taken its records)."""
        self._open(cell_id)
        return {"mlflow_run_id": self.tracker.run_id(cell_id), "tracking_uri": self.tracker.tracking_uri}

    def _fail(self, cell_id: str, reason: str) -> None:
        ModelStore(self.models).write_failure(cell_id, reason, self.cells[cell_id], self._tracking(cell_id))
        self.tracker.fail_cell(cell_id, reason)
        self._set(cell_id, "failed", reason)

    def _set(self, cell_id: str, status: str, detail: str) -> None:
        self.status[cell_id] = status
        if self.show is not None and status != "running":
            self.show(cell_id, None)
        self._say(cell_id, status, detail)

    def _what(self, cell_id: str) -> str:
        config = self.cells[cell_id]
        return f"{config['dataset']}/{config['encoder']}/{config['attention']}/seed {config['seed']}"

    def _say(self, cell_id: str, status: str, detail: str) -> None:
        what = self._what(cell_id)
        c = self.counts()
        elapsed = time.monotonic() - self.started
        self.emit(
            f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] {cell_id} {what}: {status}: {detail} | "
            f"{c['trained']} trained, {c['running']} running, {c['failed']} failed, {c['pending']} pending"
        )


def epoch_line(config: dict[str, Any], result: dict[str, Any]) -> str:
    """'epoch 3/8, dev accuracy 0.812, 41 s/epoch': a trial's progress, its selection metric on dev."""
    metric = "bleu" if "dev_bleu" in result else config["train"].get("selection_metric") or "accuracy"
    value = result.get(f"dev_{metric}")
    shown = f", dev {metric} {value:.4g}" if isinstance(value, (int, float)) else ""
    seconds = result.get("time_this_iter_s")
    timing = f", {seconds:.0f} s/epoch" if isinstance(seconds, (int, float)) else ""
    return f"epoch {result['epoch']}/{config['train']['epochs']}{shown}{timing}"


def _journaled(state: dict) -> dict:
    """The state of a GridProgress saved before tracking was journaled, brought to today's: its tracker
    writes to the grid's journal, and its launch is named by the MLflow run id it already has."""
    old = state["tracker"].__dict__
    journal = TrackingJournal(GridWorkspace(Path(state["models"]).parent).tracking)
    tracker = Tracker(old["tracking_uri"], old["experiment"], journal, old.get("artifact_root"))
    rest = {k: v for k, v in state.items() if k not in ("runs", "parent_run")}
    return {**rest, "tracker": tracker, "launch_key": state["parent_run"], "opened": set(state["runs"])}


def _last_error_line(trial) -> str:
    """The exception line of the trial's error file (the traceback stays in the file)."""
    path = getattr(trial, "error_file", None)
    if path and Path(path).is_file():
        lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
        if lines:
            return lines[-1].strip()
    return "the trial failed without an error message (see the Tune experiment folder)"
