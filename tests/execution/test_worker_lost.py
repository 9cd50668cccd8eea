"""A trial worker that Ray loses in a way Tune does not retry (its memory monitor kills the worker as the trial
starts: Tune's actor manager re-raises the `OutOfMemoryError` as a RuntimeError that ends the whole fit) costs
a warning and a resume of the launch's own experiment, not the launch; after `WORKER_LOSS_RESUMES` such losses
the launch stops in one line (exit 1) with what was trained kept, and a relaunch finishes the grid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from ray.air.execution._internal.actor_manager import RayActorManager
from ray.exceptions import OutOfMemoryError
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import WorkerLost
from gridlab.execution.launch import WORKER_LOSS_RESUMES, _fit

from .conftest import write_grid

SETTINGS = dict(
    grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]},
    train={"epochs": 2, "batch_size": 64, "max_train": 128},
    analyses={"permutation": {"n": 5}},
    instances=32,
    shard_size=32,
)


def _lost_worker() -> RuntimeError:
    """What Tune's actor manager raises for a worker Ray's memory monitor killed (its message, its cause)."""
    cause = OutOfMemoryError("Task was killed due to the node running low on memory.\nMemory on the node ...")
    try:
        raise RuntimeError(f"Caught unexpected exception: {cause}") from cause
    except RuntimeError as error:
        return error


class _Tuner:
    def __init__(self, error: Exception):
        self.error = error

    def fit(self) -> None:
        raise self.error


def test_a_lost_worker_is_named_in_one_line_and_other_errors_keep_their_traceback():
    with pytest.raises(WorkerLost) as lost:
        _fit(_Tuner(_lost_worker()))  # type: ignore[arg-type]
    assert str(lost.value) == (
        "Ray lost a training trial's worker (OutOfMemoryError: Task was killed due to the node running low on memory.)"
    )
    assert isinstance(lost.value.__cause__, RuntimeError)
    unrelated = RuntimeError("a bug in a callback")
    with pytest.raises(RuntimeError) as raised:
        _fit(_Tuner(unrelated))  # type: ignore[arg-type]
    assert raised.value is unrelated


def _lose_a_worker(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """Make the first `times` trial results of the launch reach Tune's actor manager as a worker Ray's memory
    monitor killed, mid-training (after an epoch's checkpoint): Ray's own code then ends Tune's loop."""
    losses: list[int] = []
    resolved = RayActorManager._actor_task_resolved

    def lose(self, tracked_actor_task, result) -> None:
        if len(losses) < times and isinstance(result, dict) and "training_iteration" in result:
            losses.append(result["training_iteration"])
            self._actor_task_failed(tracked_actor_task, _lost_worker().__cause__)
        resolved(self, tracked_actor_task, result)

    monkeypatch.setattr(RayActorManager, "_actor_task_resolved", lose)
    return losses


def _rows(folder: Path) -> pd.DataFrame:
    frame = pd.read_parquet(folder / "runs" / "g" / "analyses" / "permutation")
    return frame.sort_values(["cell", "instance_id"]).reset_index(drop=True)


@pytest.mark.slow
def test_a_launch_resumes_past_a_lost_worker_and_stops_in_one_line_when_it_recurs(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, local_ray
):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    clean_folder = tmp_path / "clean"
    clean_folder.mkdir()
    assert CliRunner().invoke(app, ["launch", str(write_grid(clean_folder, **SETTINGS))]).exit_code == 0

    once = tmp_path / "once"
    once.mkdir()
    losses = _lose_a_worker(monkeypatch, times=1)
    resumed = CliRunner().invoke(app, ["launch", str(write_grid(once, **SETTINGS))])
    assert resumed.exit_code == 0, resumed.output
    assert losses, "the loss was never raised"
    warnings = [line for line in resumed.output.splitlines() if line.startswith("warning: Ray lost")]
    assert warnings == [
        "warning: Ray lost a training trial's worker (OutOfMemoryError: Task was killed due to the node running "
        f"low on memory.); resuming the launch (1 of {WORKER_LOSS_RESUMES})"
    ], resumed.output
    assert "resuming the interrupted launch launch-001" in resumed.output  # from its last epoch checkpoint
    assert "2 trained, 0 failed, 0 pending" in CliRunner().invoke(app, ["status", str(once / "g.yaml")]).output
    pd.testing.assert_frame_equal(_rows(once), _rows(clean_folder), check_exact=True)

    always = tmp_path / "always"
    always.mkdir()
    _lose_a_worker(monkeypatch, times=10**6)
    stopped = CliRunner().invoke(app, ["launch", str(write_grid(always, **SETTINGS))])
    assert stopped.exit_code == 1, stopped.output
    assert "Traceback" not in stopped.output
    assert f"{WORKER_LOSS_RESUMES + 1} times in this launch" in stopped.output
    assert stopped.output.count("warning: Ray lost") == WORKER_LOSS_RESUMES
    monkeypatch.undo()
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    relaunched = CliRunner().invoke(app, ["launch", str(always / "g.yaml")])
    assert relaunched.exit_code == 0, relaunched.output
    pd.testing.assert_frame_equal(_rows(always), _rows(clean_folder), check_exact=True)
