"""MLflow runs of a grid: one experiment per grid, one parent run per launch, one child run per cell; every
record written to the grid's tracking journal first and sent from there, so that a tracking server that is
down or slow costs a warning line, never the grid.

    >>> tracker = Tracker("sqlite:///runs/mlflow.db", "quick", TrackingJournal(workspace.tracking))
    >>> launch = tracker.start_launch(pending=4)            # a launch key; its MLflow run is made on sending
    >>> tracker.cell_run(cell_id, flat_config, tags, launch)
    >>> tracker.log_epoch(cell_id, 1, {"dev_accuracy": 0.8})
    >>> tracker.finish_cell(cell_id, {"test_accuracy": 0.81}, folder)
    >>> tracker.deliver()                                    # records still unsent (0 once the server took all)

Every resolved config key is a param (`params.encoder`, `params.train.lr`) and the axes are tags, so runs
filter in the UI and in `mlflow.search_runs`, e.g. `params.encoder = 'lstm' and metrics.test_accuracy > 0.8`.
A cell has exactly one run however often it is launched: a relaunch finds it by its `cell_id` tag and
continues it. Records name cells and launches, not MLflow run ids, so they can be written while the server
is unreachable and sent later (`gridlab track`); a metric keeps the time it was measured, not sent.

A server that fails is tried again at most every `RETRY_SECONDS`, with short HTTP timeouts and few retries
(`HTTP_SETTINGS`, each overridable by its environment variable). The client is created lazily and not
pickled, so a Tune callback holding a Tracker can be saved with the experiment and restored after a crash.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
import uuid
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from gridlab.store.layout import CellFiles
from gridlab.store.store import Store
from gridlab.tracking.journal import TrackingJournal

KIND_TAG = "gridlab.kind"
LAUNCH_KEY_TAG = "gridlab.launch_key"
STORE_TAG = "gridlab.store"  # on the grid's experiment: the id the journal counts this store's records by
EXPERIMENT_KIND_TAG, MODEL_TRAINING = "mlflow.experimentKind", "custom_model_development"  # MLflow 3's UI
BATCH = 100  # MLflow's log_batch limit on params per call
RETRY_SECONDS = 60.0
# MLflow's defaults wait minutes on a dead server (7 retries, 120 s timeout); a record can wait on disk instead
HTTP_SETTINGS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}


def final_metrics(result: dict[str, Any]) -> dict[str, float]:
    """What a finished cell's run gets at its best epoch: test and best-epoch metrics, epochs trained, and
    the epoch training resumed from (a trial's last result, or the metrics.json it published)."""
    return {
        k: v
        for k, v in result.items()
        if k.startswith(("test_", "best_")) or k in ("epochs_trained", "resumed_from_epoch")
    }


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Tracker:
    def __init__(
        self,
        tracking_uri: str,
        experiment: str,
        journal: TrackingJournal,
        artifact_root: Path | None = None,
        warn: Callable[[str], None] = _stderr,
    ):
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.journal = journal
        self.artifact_root = artifact_root
        self.warn = warn
        self._client = None
        self._experiment_id: str | None = None
        self._runs: dict[str, str] = {}  # cell id or launch key -> MLflow run id, as sent
        self._failed_at: float | None = None  # when sending last failed (monotonic); None while it works
        self._store: str | None = None  # the store's id (`STORE_TAG`) once asked

    def __getstate__(self) -> dict:  # saved with a Tune experiment: locations in `portable` form
        return {
            **self.__dict__,
            "_client": None,
            "_failed_at": None,
            "tracking_uri": Store.portable_tracking_uri(self.tracking_uri),
            "artifact_root": None if self.artifact_root is None else Store.portable(self.artifact_root),
        }

    def __setstate__(self, state: dict) -> None:
        artifacts = state.get("artifact_root")
        self.__dict__.update(
            {
                **state,
                # restored, maybe on another machine with a store of its own: nothing of a store is assumed
                "_store": None,
                "_runs": {},
                "_experiment_id": None,
                "tracking_uri": Store.resolved_tracking_uri(state["tracking_uri"]),
                "artifact_root": None if artifacts is None else Store.resolved(artifacts),
            }
        )

    # Records: written to the journal, then sent ----------------------------------------------------------
    def start_launch(self, pending: int) -> str:
        key = uuid.uuid4().hex[:12]
        self._record(op="launch", key=key, pending=pending, name=f"launch {time.strftime('%Y-%m-%d %H:%M:%S')}")
        return key

    def end_launch(self, key: str, trained: int, failed: int) -> None:
        self._record(op="end_launch", key=key, trained=trained, failed=failed)

    def supersede(self, cell_id: str) -> None:
        """The cell is retrained (`--force`): its old run is kept, tagged `superseded`, and the retrain gets a
        run of its own, so the two trainings' metrics never mix."""
        self._record(op="supersede", cell_id=cell_id, at=time.strftime("%Y-%m-%d %H:%M:%S"))

    def cell_run(self, cell_id: str, params: dict[str, Any], tags: dict[str, str], launch: str) -> None:
        """The cell's run: created with its params and tags when first sent, marked running again on reuse."""
        self._record(
            op="cell", cell_id=cell_id, params={k: str(v) for k, v in params.items()}, tags=tags, launch=launch
        )

    def log_epoch(self, cell_id: str, step: int, metrics: dict[str, float]) -> None:
        """NaN values are left out: MLflow's SQL store keeps a NaN as 0 with a flag, which a search such as
        `metrics.flipped < 0.1` matches, and the journal's JSON could not hold it as standard JSON."""
        measured = {name: value for name, value in metrics.items() if not math.isnan(float(value))}
        if measured:
            self._record(op="metrics", cell_id=cell_id, step=step, metrics=measured, at=int(time.time() * 1000))

    def finish_cell(self, cell_id: str, metrics: dict[str, float], folder: Path) -> None:
        """The final (test) metrics, logged at the epoch whose weights they measure, and the cell's files."""
        self.log_epoch(cell_id, int(metrics.get("best_epoch", 0)), metrics)
        # sent, maybe, from another machine or after the results folder moved: the folder also relative to the grid's
        where = (
            {"in_grid": folder.relative_to(self.grid_folder).as_posix()}
            if folder.is_relative_to(self.grid_folder)
            else {}
        )
        self._record(op="finish", cell_id=cell_id, folder=Store.portable(folder), **where)

    def finish_published(self, published: dict[str, Path]) -> list[str]:
        """Finish the runs of published cells (cell id -> its model folder) whose finish was never recorded:
        a driver killed after publishing a cell and before recording its finish leaves the cell trained,
        which no later launch trains again, and its run open. Their final metrics come from the folder's
        metrics.json. Returns the cells finished here."""
        open_cells: set[str] = set()
        for _, record in self.journal.written():
            if record["op"] == "cell":
                open_cells.add(record["cell_id"])
            elif record["op"] in ("finish", "fail", "supersede"):
                open_cells.discard(record["cell_id"])
        finished = sorted(open_cells & published.keys())
        for cell_id in finished:
            folder = published[cell_id]
            self.finish_cell(cell_id, final_metrics(json.loads((folder / CellFiles.METRICS).read_text())), folder)
        return finished

    def fail_cell(self, cell_id: str, reason: str) -> None:
        self._record(op="fail", cell_id=cell_id, reason=reason[:5000])

    @property
    def grid_folder(self) -> Path:
        """The grid's results folder, wherever it is now: the one that holds the journal."""
        return self.journal.folder.parent

    def run_id(self, cell_id: str) -> str | None:
        """The cell's MLflow run id once its run was sent, else None."""
        return self._runs.get(cell_id)

    def _record(self, **record: Any) -> None:
        self.journal.append(record)
        self._send_unsent(retry=False)

    # Sending ------------------------------------------------------------------------------------------------
    def deliver(self) -> int:
        """Send every unsent record now, in order; returns how many still wait (0 once the server took all)."""
        self._send_unsent(retry=True)
        return self.backlog()

    def backlog(self) -> int:
        """Records the store has not taken: counted against the store itself where it answers, else against
        the store last sent to at this URI (every record when there was none)."""
        return self.journal.backlog(self._known_store())

    def skipped(self) -> int:
        """Records the store could not take (they name a run that no record created)."""
        store = self._known_store()
        return len(self.journal.skipped(store)) if store is not None else 0

    def written_since(self, count: int) -> int:
        """Of the records after the first `count`, how many the store has taken (skipped ones not counted)."""
        store = self._known_store()
        if store is None:
            return 0
        skipped = sum(1 for index in self.journal.skipped(store) if index >= count)
        return max(0, self.journal.sent(store) - count) - skipped

    def _known_store(self) -> str | None:
        if self._store is None and (self._failed_at is None or time.monotonic() - self._failed_at >= RETRY_SECONDS):
            try:
                return self.store
            except Exception:  # noqa: BLE001  the store does not answer: the count it last had, if any
                self._failed_at = time.monotonic()
        return self._store or self.journal.store_at(Store.portable_tracking_uri(self.tracking_uri))

    def _send_unsent(self, retry: bool) -> None:
        """Send the journal's unsent records in order. After a failure, sending is tried again only
        `RETRY_SECONDS` later (or on `retry`), so a dead server costs no time per record. A record that can
        never be sent (it names a run that no record created) is skipped with a warning, not retried."""
        if self._failed_at is not None and not retry and time.monotonic() - self._failed_at < RETRY_SECONDS:
            return
        try:
            store, uri = self.store, Store.portable_tracking_uri(self.tracking_uri)
            for position, (index, record) in enumerate(self.journal.unsent(store)):
                skipped = False
                try:
                    self._send(record, maybe_sent=position == 0)
                except LookupError as error:
                    self.warn(f"tracking: record {index + 1} of {self.journal.records} skipped: {error}")
                    skipped = True
                self.journal.mark_sent(store, (index, record), uri, skipped)
        except Exception as error:  # noqa: BLE001  whatever the server or its client raise, the grid goes on
            if self._failed_at is None:
                self.warn(
                    f"tracking: {self.tracking_uri} failed ({_last_line(error)}); the grid goes on, its records "
                    f"wait in {self.journal.records} and `gridlab track` sends them"
                )
            self._failed_at = time.monotonic()
            return
        if self._failed_at is not None:
            self.warn(f"tracking: {self.tracking_uri} is back; every record waiting was sent")
            self._failed_at = None

    def _send(self, record: dict[str, Any], maybe_sent: bool = False) -> None:
        """Send one record. With `maybe_sent` (the first of a pass: the store may have taken it just before a
        crash or a failed count), metrics the run already has at that step and time are not logged again;
        every other record is idempotent."""
        op = record["op"]
        if op == "launch":
            self._send_launch(record)
        elif op == "end_launch":
            run = self._launch_run(record["key"])
            self.client.log_metric(run, "cells_trained", record["trained"])
            self.client.log_metric(run, "cells_failed", record["failed"])
            self.client.set_terminated(run, "FAILED" if record["failed"] else "FINISHED")
        elif op == "supersede":
            old = self.find_cell_run(record["cell_id"])
            if old is not None:
                self.client.set_tag(old, KIND_TAG, "superseded")
                self.client.set_tag(old, "superseded_at", record["at"])
            self._runs.pop(record["cell_id"], None)
        elif op == "cell":
            self._runs[record["cell_id"]] = self._send_cell(record)
        elif op == "metrics":
            from mlflow.entities import Metric

            run = self._cell_run(record["cell_id"])
            metrics = [Metric(k, float(v), record["at"], record["step"]) for k, v in record["metrics"].items()]
            if maybe_sent:
                metrics = [m for m in metrics if not self._has_metric(run, m)]
            if metrics:
                self.client.log_batch(run, metrics=metrics)
        elif op == "finish":
            run = self._cell_run(record["cell_id"])
            folder = self.grid_folder / record["in_grid"] if "in_grid" in record else Store.resolved(record["folder"])
            self._backfill(run, folder / CellFiles.HISTORY)
            for name in (CellFiles.CONFIG, CellFiles.METRICS, CellFiles.HISTORY, CellFiles.DATA):
                if (folder / name).is_file():
                    self.client.log_artifact(run, str(folder / name))
            self.client.set_terminated(run, "FINISHED")
        elif op == "fail":
            run = self._cell_run(record["cell_id"])
            self.client.set_tag(run, "failure_reason", record["reason"])
            self.client.set_terminated(run, "FAILED")
        else:
            raise ValueError(f"{self.journal.records}: unknown record {op!r}")

    def _has_metric(self, run: str, metric) -> bool:
        return any(
            (m.step, m.timestamp) == (metric.step, metric.timestamp)
            for m in self.client.get_metric_history(run, metric.key)
        )

    def _backfill(self, run: str, history: Path) -> None:
        """Log the epochs the cell's history has and its run lacks: a trial that reported an epoch while its
        driver was being killed resumes after that epoch, and no record of it was ever written."""
        from mlflow.entities import Metric

        if not history.is_file():
            return
        logged = {m.step for m in self.client.get_metric_history(run, "train_loss")}
        now = int(time.time() * 1000)
        metrics = [
            Metric(key if key == "train_loss" else f"dev_{key}", float(value), now, epoch["epoch"])
            for epoch in json.loads(history.read_text())
            if epoch["epoch"] not in logged
            for key, value in epoch.items()
            if key != "epoch" and value is not None
        ]
        if metrics:
            self.client.log_batch(run, metrics=metrics)

    def _send_launch(self, record: dict[str, Any]) -> None:
        if self._find_launch(record["key"]) is None:
            run = self.client.create_run(
                self.experiment_id,
                run_name=record["name"],
                tags={KIND_TAG: "launch", "grid": self.experiment, LAUNCH_KEY_TAG: record["key"]},
            ).info.run_id
            if record["pending"] is not None:
                self.client.log_metric(run, "cells_pending", record["pending"])
            self._runs[record["key"]] = run

    def _send_cell(self, record: dict[str, Any]) -> str:
        from mlflow.entities import Param, RunStatus

        cell_id, tags = record["cell_id"], record["tags"]
        existing = self.find_cell_run(cell_id)
        if existing is not None:
            self.client.update_run(existing, status=RunStatus.to_string(RunStatus.RUNNING))
            return existing
        parent = self._launch_run(record["launch"])
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{tags.get('dataset')}-{tags.get('encoder')}-{tags.get('attention')}-{cell_id[:6]}",
            # the launch as a tag too: a UI filter hides runs nested under a parent, a tag filter finds them
            tags={**tags, "cell_id": cell_id, KIND_TAG: "cell", "mlflow.parentRunId": parent, "launch": parent},
        ).info.run_id
        items = [Param(k, v) for k, v in sorted(record["params"].items())]
        for start in range(0, len(items), BATCH):
            self.client.log_batch(run, params=items[start : start + BATCH])
        return run

    def _cell_run(self, cell_id: str) -> str:
        if cell_id not in self._runs:
            found = self.find_cell_run(cell_id)
            if found is None:
                raise LookupError(f"no MLflow run for cell {cell_id} (its 'cell' record was not sent)")
            self._runs[cell_id] = found
        return self._runs[cell_id]

    def _launch_run(self, key: str) -> str:
        """The launch's run, created here if the store lacks it: a launch begun on another machine (its start
        journaled there, with a store of its own) and resumed on this one ends in this machine's store."""
        found = self._find_launch(key)
        if found is None:
            self._send_launch({"key": key, "name": f"launch {key} (begun elsewhere)", "pending": None})
            found = self._runs[key]
        return found

    def _find_launch(self, key: str) -> str | None:
        """The launch's run: tagged with its key, or (launches begun by a gridlab without a journal) the
        run whose id the key is."""
        if key not in self._runs:
            runs = self.client.search_runs([self.experiment_id], f"tags.`{LAUNCH_KEY_TAG}` = '{key}'", max_results=1)
            if runs:
                self._runs[key] = runs[0].info.run_id
            elif len(key) == 32 and self._run_exists(key):
                self._runs[key] = key
            else:
                return None
        return self._runs[key]

    def _run_exists(self, run_id: str) -> bool:
        from mlflow.exceptions import MlflowException

        try:
            self.client.get_run(run_id)
        except MlflowException:
            return False
        return True

    # The MLflow side ----------------------------------------------------------------------------------------
    @property
    def client(self):
        if self._client is None:
            os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
            if self.tracking_uri.startswith(("http://", "https://")):
                for name, value in HTTP_SETTINGS.items():
                    os.environ.setdefault(name, value)
            from mlflow.tracking import MlflowClient

            logging.getLogger("mlflow").setLevel(logging.ERROR)  # after import: mlflow sets its own level
            logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings: one line of ours instead

            self._client = MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    @property
    def store(self) -> str:
        """The store's id, kept on the grid's experiment (`STORE_TAG`); given on first use. An experiment that
        was there before stores were named was sent the journal's records as they were counted then."""
        if self._store is None:
            store = self.client.get_experiment(self.experiment_id).tags.get(STORE_TAG)
            if store is None:
                store = uuid.uuid4().hex
                self.client.set_experiment_tag(self.experiment_id, STORE_TAG, store)
                self.journal.adopt(store, Store.portable_tracking_uri(self.tracking_uri))
            self._store = store
        return self._store

    @property
    def experiment_id(self) -> str:
        if self._experiment_id is None:
            location = (self.artifact_root / self.experiment).resolve().as_uri() if self.artifact_root else None
            found = self.client.get_experiment_by_name(self.experiment)
            if found is not None:
                experiment_id = found.experiment_id
                db = sqlite_path(self.tracking_uri)
                if location is not None and db is not None and moved(found.artifact_location, location):
                    relocate(db, experiment_id, found.artifact_location, location)
            else:
                experiment_id = self.client.create_experiment(self.experiment, artifact_location=location)
            if (found.tags if found is not None else {}).get(EXPERIMENT_KIND_TAG) != MODEL_TRAINING:
                # the UI opens it as model training, not in its GenAI view
                self.client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING)
            self._experiment_id = experiment_id
        return self._experiment_id

    def find_cell_run(self, cell_id: str) -> str | None:
        runs = self.client.search_runs(
            [self.experiment_id], f"tags.cell_id = '{cell_id}' and tags.`{KIND_TAG}` = 'cell'", max_results=1
        )
        return runs[0].info.run_id if runs else None


def cell_runs(tracking_uri: str, experiment: str, cell_ids: Collection[str]) -> list[dict[str, Any]]:
    """The current run of each of these cells, one record each in `mlflow.search_runs`'s shape (`run_id`,
    `status`, `start_time`, `end_time`, `metrics.*`, `params.*`, `tags.*`): a retrained cell's earlier runs are
    tagged `superseded` (`Tracker.supersede`) and left out, as are launches' runs and cells outside `cell_ids`.
    A grid never tracked in this store (no experiment of its name) has none."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    wanted, records, token = set(cell_ids), [], None
    while True:
        page = client.search_runs([found.experiment_id], f"tags.`{KIND_TAG}` = 'cell'", page_token=token)
        for run in page:
            if run.data.tags.get("cell_id") in wanted:
                records.append(
                    {
                        "run_id": run.info.run_id,
                        "status": run.info.status,
                        "start_time": run.info.start_time,
                        "end_time": run.info.end_time,
                        **{f"metrics.{k}": v for k, v in run.data.metrics.items()},
                        **{f"params.{k}": v for k, v in run.data.params.items()},
                        **{f"tags.{k}": v for k, v in run.data.tags.items()},
                    }
                )
        token = page.token
        if not token:
            return records


def sqlite_path(tracking_uri: str) -> Path | None:
    prefix = "sqlite:///"
    return Path(tracking_uri[len(prefix) :]) if tracking_uri.startswith(prefix) else None


def moved(old: str, new: str) -> bool:
    """Whether `old` is the grid's artifact folder of another place of the results folder: another path that
    ends as `new` does (`mlartifacts/<grid>`). A location of another layout (an experiment created by hand or
    by an older gridlab, its artifacts elsewhere) is left as it is."""
    return old != new and old.startswith("file:") and old.rsplit("/", 2)[-2:] == new.rsplit("/", 2)[-2:]


def relocate(db: Path, experiment_id: str, old: str, new: str) -> None:
    """Point the experiment and its runs at the artifact folder beside the store now, `new`, where they named
    `old`: a store in the results folder that was copied or moved (to a bigger disk) keeps the absolute
    location MLflow resolved when it created the experiment, and would go on writing to the old folder.
    MLflow has no call that changes a location, so its tables are updated here (`experiments.artifact_location`,
    `runs.artifact_uri`, unchanged in MLflow's schema since 1.x); the artifacts themselves moved with the folder."""
    import sqlite3

    with sqlite3.connect(db) as connection:
        connection.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?", (new, int(experiment_id))
        )
        connection.execute(
            "UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) WHERE experiment_id = ? "
            "AND substr(artifact_uri, 1, ?) = ?",
            (new, len(old) + 1, int(experiment_id), len(old), old),
        )
    connection.close()


def _last_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1][:300] if lines else type(error).__name__


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'train': {'lr': 0.001}} -> {'train.lr': 0.001}; None becomes 'null' so every key is a param."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = "null" if value is None else value
    return flat
