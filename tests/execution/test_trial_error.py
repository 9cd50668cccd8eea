"""A trial error on a trial that had finished: a restored experiment's saved state can predate a trial's last
epochs and name a checkpoint deleted since (Tune keeps one), so Tune fails to restore a trial whose final
checkpoint is there. The driver publishes that checkpoint instead of replacing the trained cell with a
failure (found by test_kill_points.py's "between trials", about one run in five). A trial with no final
checkpoint still fails its cell."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gridlab.execution.progress import GridProgress
from gridlab.execution.trainable import TRAINER_STATE, final_checkpoint
from gridlab.store.layout import CellFiles
from gridlab.store.models import ModelStore, write_trained
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker

CONFIG = {"dataset": "synthetic", "encoder": "average", "attention": "additive", "projection": "softmax"} | {
    "architecture": "flat",
    "attention_mode": "learned",
    "seed": 0,
    "train": {"epochs": 3},
}
METRICS = {"final": True, "best_epoch": 2, "epochs_trained": 3, "test_accuracy": 0.75}


def final(folder: Path) -> Path:
    folder.mkdir(parents=True)
    write_trained(folder, "c1", CONFIG, {"w": torch.ones(2)}, {"rows": {"test": 4}}, METRICS, [{"epoch": 1}])
    return folder


def epoch_state(folder: Path, epoch: int) -> Path:
    folder.mkdir(parents=True)
    torch.save({"epoch": epoch}, folder / TRAINER_STATE)
    return folder


@pytest.fixture
def progress(tmp_path: Path) -> GridProgress:
    journal = TrackingJournal(tmp_path / "tracking")
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", journal, artifact_root=tmp_path / "artifacts")
    lines: list[str] = []
    progress = GridProgress("g", tmp_path / "models", tracker, tracker.start_launch(1), {"c1": CONFIG}, 0, lines.append)
    progress.lines = lines  # type: ignore[attr-defined]
    return progress


def errored_trial(trial_dir: Path, error: str = "ValueError: Could not recover from checkpoint") -> SimpleNamespace:
    error_file = trial_dir.parent / "error.txt"
    error_file.parent.mkdir(parents=True, exist_ok=True)
    error_file.write_text(f"Traceback ...\n{error}\n")
    return SimpleNamespace(config={"trial": {"cell_id": "c1", "trial_dir": str(trial_dir)}}, error_file=str(error_file))


def test_an_error_of_a_finished_trial_publishes_its_final_checkpoint(progress: GridProgress, tmp_path: Path):
    trial_dir = tmp_path / "tune" / "launch-001" / "c1"
    epoch_state(trial_dir / "checkpoint_000002", 2)
    final(trial_dir / "checkpoint_000003")
    progress.on_trial_error(0, [], errored_trial(trial_dir))
    cell = ModelStore(tmp_path / "models").cell("c1")
    assert cell.state() == "trained" and cell.read(CellFiles.METRICS) == METRICS
    assert progress.status == {"c1": "trained"}
    assert "c1 synthetic/average/additive/seed 0: trained: test_accuracy 0.75 (best epoch 2)" in progress.lines[-1]
    finishes = [r for _, r in progress.tracker.journal.written() if r["op"] in ("finish", "fail")]
    assert [r["op"] for r in finishes] == ["finish"]


def test_an_error_of_an_unfinished_trial_fails_its_cell(progress: GridProgress, tmp_path: Path):
    trial_dir = tmp_path / "tune" / "launch-001" / "c1"
    epoch_state(trial_dir / "checkpoint_000002", 2)
    progress.on_trial_error(0, [], errored_trial(trial_dir, "RuntimeError: out of cheese"))
    cell = ModelStore(tmp_path / "models").cell("c1")
    assert cell.state() == "failed" and cell.failure_reason() == "RuntimeError: out of cheese"


def test_a_final_checkpoint_cut_short_is_not_final(tmp_path: Path):
    trial_dir = tmp_path / "c1"
    (final(trial_dir / "checkpoint_000003") / CellFiles.MODEL).unlink()  # a kill mid-copy
    with final_checkpoint(str(trial_dir)) as folder:
        assert folder is None
    with final_checkpoint(str(tmp_path / "never-written")) as folder:
        assert folder is None
    assert json.loads((trial_dir / "checkpoint_000003" / CellFiles.METRICS).read_text()) == METRICS
