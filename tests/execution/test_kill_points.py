"""The driver SIGKILLed at each point of a launch's life (between trials, after the first Parquet part, half
way through the analyses, after the last part, while the summaries go to MLflow): the relaunch ends with
rows identical to an undisturbed run's, no cell retrained, every MLflow run FINISHED with every epoch's
metrics once. (Mid-training, with a resume from the epoch checkpoint: test_driver_kill.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from .conftest import start_launch, write_grid

pytestmark = pytest.mark.slow

EPOCHS = 3
SETTINGS = dict(
    grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]},
    train={"epochs": EPOCHS, "batch_size": 64, "max_train": 256},
    resources={"train": {"cpu": 2}},  # one trial at a time: there is a "between trials"
    instances=96,
    shard_size=32,  # 3 parts per cell
    analyses={"permutation": {"n": 5000}},  # about a second per shard: time to kill between parts
)
PARTS = 6


def parts(results: Path) -> list[Path]:
    return sorted((results / "g" / "analyses" / "permutation").glob("cell=*/part-*.parquet"))


POINTS: dict[str, Callable[[Path], bool]] = {
    "between trials": lambda r: len(list((r / "g" / "models").glob("*/metrics.json"))) == 1,
    "after the first part": lambda r: len(parts(r)) >= 1,
    "half way through the analyses": lambda r: len(parts(r)) >= PARTS // 2,
    "after the last part": lambda r: len(parts(r)) == PARTS,
    "while the summaries go to MLflow": lambda r: (r / "g" / "summary.parquet").is_file(),
}


def rows(results: Path) -> pd.DataFrame:
    frame = pd.read_parquet(results / "g" / "analyses" / "permutation")
    return frame.sort_values(["cell", "instance_id"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> pd.DataFrame:
    folder = tmp_path_factory.mktemp("undisturbed")
    path = write_grid(folder, **SETTINGS)
    env = {**os.environ, "GRIDLAB_DATA": str(data_dir), "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run([sys.executable, "-m", "gridlab", "launch", str(path)], env=env, capture_output=True)
    assert done.returncode == 0, done.stdout.decode()[-3000:]
    return rows(folder / "runs")


@pytest.mark.parametrize("point", list(POINTS))
def test_a_driver_killed_at_any_point_loses_nothing(point: str, undisturbed, tmp_path: Path, data_dir: Path):
    path = write_grid(tmp_path, **SETTINGS)
    results = tmp_path / "runs"
    env = {**os.environ, "GRIDLAB_DATA": str(data_dir), "RAY_AUTH_MODE": "disabled"}
    driver = start_launch(path, env)
    deadline = time.monotonic() + 300
    while not POINTS[point](results):
        assert driver.poll() is None, f"the launch ended before the point: {driver.stdout.read()[-2000:]}"
        assert time.monotonic() < deadline, f"not at the point within 300 s ({point})"
        time.sleep(0.02)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    trained = [p.parent.name for p in (results / "g" / "models").glob("*/metrics.json")]

    relaunch = start_launch(path, env)
    output, _ = relaunch.communicate(timeout=600)
    assert relaunch.returncode == 0, output

    relaunched = rows(results)
    assert len(relaunched) == len(undisturbed), f"{len(relaunched)} rows, not {len(undisturbed)}: {output[-4000:]}"
    pd.testing.assert_frame_equal(relaunched, undisturbed, check_exact=True)
    for cell in trained:  # a cell trained before the kill runs no epoch again
        assert not [line for line in output.splitlines() if line.split()[1:2] == [cell] and "running: epoch" in line], (
            cell
        )
    client = mlflow.MlflowClient(f"sqlite:///{results / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("g")
    cells = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'cell'")
    assert len(cells) == 2 and {run.info.status for run in cells} == {"FINISHED"}
    for run in cells:  # every epoch's metrics, each once
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")]
        assert sorted(steps) == list(range(1, EPOCHS + 1)), (run.data.tags["cell_id"], steps)
    launches = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'launch'")
    assert {run.info.status for run in launches} == {"FINISHED"}
