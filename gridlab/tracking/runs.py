"""MLflow runs of a grid: one experiment per grid, one parent run per launch, one child run per cell.

    >>> tracker = Tracker("sqlite:///runs/mlflow.db", "quick", artifact_root=Path("runs/mlartifacts"))
    >>> parent = tracker.start_launch(pending=4)
    >>> run_id = tracker.cell_run(cell_id, flat_config, tags, parent)
    >>> tracker.log_epoch(run_id, 1, {"dev_accuracy": 0.8})
    >>> tracker.finish_cell(run_id, {"test_accuracy": 0.81}, folder)

Every resolved config key is a param (`params.encoder`, `params.train.lr`) and the axes are tags, so runs
filter in the UI and in `mlflow.search_runs`, e.g. `params.encoder = 'lstm' and metrics.test_accuracy > 0.8`.
A cell has exactly one run however often it is launched: a relaunch finds it by its `cell_id` tag and
continues it. The client is created lazily and not pickled, so a Tune callback holding a Tracker can be
saved with the experiment and restored after a driver crash.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from gridlab.store.layout import CellFiles

KIND_TAG = "gridlab.kind"
EXPERIMENT_KIND_TAG, MODEL_TRAINING = "mlflow.experimentKind", "custom_model_development"  # MLflow 3's UI
BATCH = 100  # MLflow's log_batch limit on params per call


class Tracker:
    def __init__(self, tracking_uri: str, experiment: str, artifact_root: Path | None = None):
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.artifact_root = artifact_root
        self._client = None
        self._experiment_id: str | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None}

    @property
    def client(self):
        if self._client is None:
            os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
            from mlflow.tracking import MlflowClient

            logging.getLogger("mlflow").setLevel(logging.WARNING)  # after import: mlflow sets its own level

            self._client = MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    @property
    def experiment_id(self) -> str:
        if self._experiment_id is None:
            found = self.client.get_experiment_by_name(self.experiment)
            if found is not None:
                self._experiment_id = found.experiment_id
            else:
                location = (self.artifact_root / self.experiment).resolve().as_uri() if self.artifact_root else None
                self._experiment_id = self.client.create_experiment(self.experiment, artifact_location=location)
            if (found.tags if found is not None else {}).get(EXPERIMENT_KIND_TAG) != MODEL_TRAINING:
                # the UI opens it as model training, not in its GenAI view
                self.client.set_experiment_tag(self._experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING)
        return self._experiment_id

    def start_launch(self, pending: int) -> str:
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"launch {time.strftime('%Y-%m-%d %H:%M:%S')}",
            tags={KIND_TAG: "launch", "grid": self.experiment},
        )
        self.client.log_metric(run.info.run_id, "cells_pending", pending)
        return run.info.run_id

    def end_launch(self, run_id: str, trained: int, failed: int) -> None:
        self.client.log_metric(run_id, "cells_trained", trained)
        self.client.log_metric(run_id, "cells_failed", failed)
        self.client.set_terminated(run_id, "FAILED" if failed else "FINISHED")

    def find_cell_run(self, cell_id: str) -> str | None:
        runs = self.client.search_runs(
            [self.experiment_id], f"tags.cell_id = '{cell_id}' and tags.`{KIND_TAG}` = 'cell'", max_results=1
        )
        return runs[0].info.run_id if runs else None

    def supersede(self, cell_id: str) -> None:
        """The cell is retrained (`--force`): its old run is kept, tagged `superseded`, and the retrain gets a
        run of its own, so the two trainings' metrics never mix."""
        old = self.find_cell_run(cell_id)
        if old is not None:
            self.client.set_tag(old, KIND_TAG, "superseded")
            self.client.set_tag(old, "superseded_at", time.strftime("%Y-%m-%d %H:%M:%S"))

    def cell_run(self, cell_id: str, params: dict[str, Any], tags: dict[str, str], parent_run_id: str) -> str:
        """The cell's run, created with its params and tags on first use, marked running again on reuse."""
        from mlflow.entities import Param, RunStatus

        existing = self.find_cell_run(cell_id)
        if existing is not None:
            self.client.update_run(existing, status=RunStatus.to_string(RunStatus.RUNNING))
            return existing
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{tags.get('dataset')}-{tags.get('encoder')}-{tags.get('attention')}-{cell_id[:6]}",
            # the launch as a tag too: a UI filter hides runs nested under a parent, a tag filter finds them
            tags={
                **tags,
                "cell_id": cell_id,
                KIND_TAG: "cell",
                "mlflow.parentRunId": parent_run_id,
                "launch": parent_run_id,
            },
        )
        items = [Param(k, str(v)) for k, v in sorted(params.items())]
        for start in range(0, len(items), BATCH):
            self.client.log_batch(run.info.run_id, params=items[start : start + BATCH])
        return run.info.run_id

    def log_epoch(self, run_id: str, epoch: int, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(run_id, metrics=[Metric(k, float(v), now, epoch) for k, v in metrics.items()])

    def finish_cell(self, run_id: str, metrics: dict[str, float], folder: Path) -> None:
        """The final (test) metrics, logged at the epoch whose weights they measure, and the cell's files."""
        self.log_epoch(run_id, int(metrics.get("best_epoch", 0)), metrics)
        for name in (CellFiles.CONFIG, CellFiles.METRICS, CellFiles.HISTORY, CellFiles.DATA):
            if (folder / name).is_file():
                self.client.log_artifact(run_id, str(folder / name))
        self.client.set_terminated(run_id, "FINISHED")

    def fail_cell(self, run_id: str, reason: str) -> None:
        self.client.set_tag(run_id, "failure_reason", reason[:5000])
        self.client.set_terminated(run_id, "FAILED")


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'train': {'lr': 0.001}} -> {'train.lr': 0.001}; None becomes 'null' so every key is a param."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = "null" if value is None else value
    return flat
