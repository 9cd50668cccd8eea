"""Which checkpoint a resumed trial continues from: the furthest complete one, also when it is later than
the one Tune's saved experiment state knows (the driver died before recording it), on disk or in object
storage; a copy that a kill cut short is passed over. The trainer resumes bit for bit from any of them
(tests/training/test_resume.py)."""

from __future__ import annotations

from pathlib import Path

import torch
from ray import tune

from gridlab.execution import trainable
from gridlab.execution.trainable import TRAINER_STATE, _resume_point


def checkpoint(folder: Path, epoch: int) -> Path:
    folder.mkdir(parents=True)
    torch.save({"epoch": epoch}, folder / TRAINER_STATE)
    return folder


def test_the_furthest_checkpoint_wins_over_the_one_tune_recorded(tmp_path: Path, monkeypatch):
    trial = tmp_path / "trial"
    recorded = checkpoint(trial / "checkpoint_000001", 1)
    checkpoint(trial / "checkpoint_000002", 2)
    (trial / "checkpoint_000003").mkdir()
    (trial / "checkpoint_000003" / TRAINER_STATE).write_bytes(b"cut short")  # a kill mid-copy
    monkeypatch.setattr(trainable.tune, "get_checkpoint", lambda: tune.Checkpoint.from_directory(str(recorded)))
    with _resume_point(str(trial)) as chosen:
        assert chosen == trial / "checkpoint_000002"


def test_without_any_checkpoint_a_trial_starts_from_scratch(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(trainable.tune, "get_checkpoint", lambda: None)
    with _resume_point(str(tmp_path / "never-written")) as chosen:
        assert chosen is None
