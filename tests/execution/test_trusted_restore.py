"""A relaunch restores only the Tune experiments this user's gridlab sealed (`execution.seal`), on a real local
Ray: one whose pickle changed is refused in one line (exit 1) without unpickling it, `--trust-results` restores
it, a sealed interrupted one resumes unasked, and one without a seal (a driver killed before the first) is left
while its cells train in a new experiment, with the rows of a clean run."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.execution.seal import OVERRIDE, Verdict, check
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.store.layout import LAUNCH_MARKER, TUNE_SEAL
from gridlab.store.models import ModelStore

from .conftest import start_launch, write_grid

pytestmark = pytest.mark.slow

SETTINGS = dict(
    grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
    train={"epochs": 1, "batch_size": 64, "max_train": 128},
    analyses={"permutation": {"n": 5}},
    instances=32,
    shard_size=32,
)


class Planted:
    """A pickle whose unpickling creates a file: proof that something was, or was not, unpickled."""

    def __init__(self, proof: Path):
        self.proof = proof

    def __reduce__(self):
        return open, (str(self.proof), "w")


def rows(folder: Path) -> pd.DataFrame:
    frame = pd.read_parquet(folder / "runs" / "g" / "analyses" / "permutation")
    return frame.sort_values(["cell", "instance_id"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, local_ray) -> pd.DataFrame:
    folder = tmp_path_factory.mktemp("clean")
    launched = CliRunner().invoke(app, ["launch", str(write_grid(folder, **SETTINGS))])
    assert launched.exit_code == 0, launched.output
    return rows(folder)


def as_if_interrupted(experiment: Path) -> None:
    """What a driver killed before its trial was published leaves: an unfinished experiment, a pending cell
    without rows."""
    marker = json.loads((experiment / LAUNCH_MARKER).read_text())
    (experiment / LAUNCH_MARKER).write_text(json.dumps(marker | {"finished": False}))
    grid = experiment.parent.parent
    shutil.rmtree(grid / "models")
    shutil.rmtree(grid / "analyses")


def test_a_changed_experiment_is_refused_unless_trusted_and_a_sealed_one_resumes(
    tmp_path: Path, clean: pd.DataFrame, local_ray
):
    path = write_grid(tmp_path, **SETTINGS)
    (cell,) = expand(load_grid_file(path), str(path)).cells
    store = ModelStore(tmp_path / "runs" / "g" / "models")
    tune_dir = tmp_path / "runs" / "g" / "tune"

    first = CliRunner().invoke(app, ["launch", str(path)])
    assert first.exit_code == 0, first.output
    assert check(str(tune_dir / "launch-001"), None)[0] is Verdict.MATCHES  # sealed as Tune saved its last state

    as_if_interrupted(tune_dir / "launch-001")
    tuner = tune_dir / "launch-001" / "tuner.pkl"
    written = tuner.read_bytes()
    proof = tmp_path / "unpickled"
    tuner.write_bytes(pickle.dumps(Planted(proof)))
    refused = CliRunner().invoke(app, ["launch", str(path)])
    assert refused.exit_code == 1, refused.output
    (line,) = [text for text in refused.output.splitlines() if "launch-001" in text]
    assert line.startswith(f"{tune_dir / 'launch-001'}: not restored: tuner.pkl does not match its seal"), line
    assert OVERRIDE in line
    assert not proof.exists() and "resuming" not in refused.output and store.cell(cell.id).state() == "pending"

    tuner.write_bytes(written + b"\n")  # unpickles as before, but not what gridlab wrote
    assert CliRunner().invoke(app, ["launch", str(path)]).exit_code == 1
    trusted = CliRunner().invoke(app, ["launch", str(path), OVERRIDE])
    assert trusted.exit_code == 0, trusted.output
    assert "resuming the interrupted launch launch-001" in trusted.output
    pd.testing.assert_frame_equal(rows(tmp_path), clean, check_exact=True)

    as_if_interrupted(tune_dir / "launch-002")  # sealed by this gridlab: resumed without being asked
    again = CliRunner().invoke(app, ["launch", str(path)])
    assert again.exit_code == 0, again.output
    assert "resuming the interrupted launch launch-002" in again.output and "not resumed" not in again.output
    pd.testing.assert_frame_equal(rows(tmp_path), clean, check_exact=True)


def test_an_unsealed_experiment_is_left_and_its_cells_train_anew(tmp_path: Path, clean: pd.DataFrame, local_ray):
    path = write_grid(tmp_path, **SETTINGS)
    tune_dir = tmp_path / "runs" / "g" / "tune"
    first = CliRunner().invoke(app, ["launch", str(path)])
    assert first.exit_code == 0, first.output
    as_if_interrupted(tune_dir / "launch-001")
    (tune_dir / "launch-001" / TUNE_SEAL).unlink()  # as if killed before the first seal
    proof = tmp_path / "unpickled"
    (tune_dir / "launch-001" / "tuner.pkl").write_bytes(pickle.dumps(Planted(proof)))

    relaunch = CliRunner().invoke(app, ["launch", str(path)])
    assert relaunch.exit_code == 0, relaunch.output
    (line,) = [text for text in relaunch.output.splitlines() if "launch-001" in text]
    assert f"launch-001: not resumed: it has no {TUNE_SEAL} made with your key" in line and OVERRIDE in line
    assert not proof.exists() and "resuming the interrupted" not in relaunch.output
    assert json.loads((tune_dir / "launch-001" / LAUNCH_MARKER).read_text())["finished"]
    assert (tune_dir / "launch-002" / TUNE_SEAL).is_file()
    pd.testing.assert_frame_equal(rows(tmp_path), clean, check_exact=True)

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("g")
    cells = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'cell'")
    assert len(cells) == 1 and cells[0].info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(cells[0].info.run_id, "train_loss")]
    assert steps == [1]  # the new training's epoch, once
    launches = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'launch'")
    assert {run.info.status for run in launches} == {"FINISHED"}


def test_a_driver_killed_as_its_fit_begins_leaves_a_grid_that_finishes(tmp_path: Path, clean: pd.DataFrame):
    """The trap of the first seal: Tune's first save goes up before any seal can. Killed then, the relaunch
    either resumes the sealed experiment or leaves the unsealed one; it is never refused."""
    path = write_grid(tmp_path, **SETTINGS)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    experiment = tmp_path / "runs" / "g" / "tune" / "launch-001"
    driver = start_launch(path, env)
    deadline = time.monotonic() + 300
    # Tune writes tuner.pkl as the Tuner is made, a moment before gridlab's marker makes the folder a launch (a
    # folder without one is no launch: a relaunch trains in a new one); the fit, and its first save, come after.
    while not ((experiment / "tuner.pkl").is_file() and (experiment / LAUNCH_MARKER).is_file()):
        assert driver.poll() is None, driver.stdout.read()
        assert time.monotonic() < deadline, "no Tune experiment within 300 s"
        time.sleep(0.005)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()

    relaunch = start_launch(path, env)
    output, _ = relaunch.communicate(timeout=600)
    assert relaunch.returncode == 0, output
    assert ("resuming the interrupted launch launch-001" in output) != ("launch-001: not resumed" in output), output
    pd.testing.assert_frame_equal(rows(tmp_path), clean, check_exact=True)
