"""A driver killed with SIGKILL mid-grid: the next launch resumes the interrupted trials from their last
epoch checkpoint, trains the rest, never retrains a finished cell, and keeps one MLflow run per cell."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import mlflow
import pytest

from gridlab.execution.trainable import checkpoint_epoch
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file

from .conftest import start_launch, write_grid

pytestmark = pytest.mark.slow


def resumable(experiment: Path) -> set[str]:
    """Cell ids with a whole epoch checkpoint in their trial folder, by the rule the resume applies: killing the
    driver's process group can cut a checkpoint's copy short, and a cell whose only one was cut starts over."""
    trials = experiment.iterdir() if experiment.is_dir() else []
    return {t.name for t in trials if any(1 <= checkpoint_epoch(f) < float("inf") for f in t.glob("checkpoint_*"))}


def test_relaunch_after_sigkill_resumes_without_retraining(tmp_path: Path, shipped_sst: Path, monkeypatch):
    monkeypatch.setenv("GRIDLAB_DATA", str(shipped_sst))  # SST is read in other processes: the shipped release
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    path = write_grid(
        tmp_path,
        grid={"dataset": ["sst"], "encoder": ["lstm", "gru"], "seed": [0, 1]},
        train={"epochs": 6, "batch_size": 32, "max_train": 1200},
        model={"embedding_dim": 32, "hidden_size": 32, "attention_size": 32},
    )
    cells = expand(load_grid_file(path), str(path)).cells
    models = tmp_path / "runs" / "g" / "models"
    experiment = tmp_path / "runs" / "g" / "tune" / "launch-001"

    driver = start_launch(path, env)
    deadline = time.monotonic() + 300
    while not resumable(experiment):
        assert driver.poll() is None, driver.stdout.read()
        assert time.monotonic() < deadline, "no epoch checkpoint within 300 s"
        time.sleep(0.5)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    checkpointed = resumable(experiment)  # read after the kill: what the relaunch can continue from
    trained_before = {
        c.id: (models / c.id / "model.pt").stat().st_mtime_ns
        for c in cells
        if (models / c.id / "metrics.json").is_file()
    }
    assert len(trained_before) < len(cells), "the driver was killed too late to test anything"

    relaunch = start_launch(path, env)
    output, _ = relaunch.communicate(timeout=600)
    assert relaunch.returncode == 0, output
    assert "resuming the interrupted launch launch-001" in output

    resumed = 0
    for cell in cells:
        metrics = json.loads((models / cell.id / "metrics.json").read_text())
        resumed += metrics["resumed_from_epoch"] >= 1
        if cell.id in trained_before:
            assert (models / cell.id / "model.pt").stat().st_mtime_ns == trained_before[cell.id]
        elif cell.id in checkpointed:
            assert metrics["resumed_from_epoch"] >= 1, (cell.id, metrics)  # continued, not from scratch
        history = json.loads((models / cell.id / "history.json").read_text())
        assert [h["epoch"] for h in history] == list(range(1, len(history) + 1))

    assert resumed >= 1, "no trial was resumed from a checkpoint"

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    cell_runs = mlflow.search_runs(experiment_names=["g"], filter_string="tags.`gridlab.kind` = 'cell'")
    assert sorted(cell_runs["tags.cell_id"]) == sorted(c.id for c in cells)
    assert set(cell_runs["status"]) == {"FINISHED"}
    launches = mlflow.search_runs(experiment_names=["g"], filter_string="tags.`gridlab.kind` = 'launch'")
    assert set(launches["status"]) == {"FINISHED"}  # the interrupted launch's run is closed by its resumption
