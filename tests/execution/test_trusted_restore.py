"""A relaunch restores only the Tune experiments this user's gridlab sealed (`execution.seal`): the seal is
written as Tune saves, an experiment whose pickle was altered is refused with exit 2 and one line, the
override restores it, and an experiment gridlab wrote is restored without being asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.execution.seal import OVERRIDE, check_sealed
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.store.layout import LAUNCH_MARKER, TUNE_SEAL
from gridlab.store.models import ModelStore

from .conftest import write_grid

pytestmark = pytest.mark.slow


def as_if_interrupted(experiment: Path, models: Path) -> None:
    """What a driver killed before its trial was published leaves: an unfinished experiment, a pending cell."""
    marker = json.loads((experiment / LAUNCH_MARKER).read_text())
    (experiment / LAUNCH_MARKER).write_text(json.dumps(marker | {"finished": False}))
    shutil.rmtree(models)


def test_only_a_sealed_experiment_is_restored_unless_trusted(tmp_path: Path, local_ray):
    grid = {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]}
    path = write_grid(tmp_path, grid=grid, train={"epochs": 1, "batch_size": 64, "max_train": 128})
    expanded = expand(load_grid_file(path), str(path), check_data=False)
    store = ModelStore(expanded.workspace.models)
    (cell,) = expanded.cells
    tune_dir = expanded.workspace.tune

    first = CliRunner().invoke(app, ["launch", str(path)])
    assert first.exit_code == 0, first.output
    assert (tune_dir / "launch-001" / TUNE_SEAL).is_file()
    check_sealed(str(tune_dir / "launch-001"), None, "launch-001")  # sealed as Tune saved its last state

    as_if_interrupted(tune_dir / "launch-001", expanded.workspace.models)
    tuner = tune_dir / "launch-001" / "tuner.pkl"
    tuner.write_bytes(tuner.read_bytes() + b"\n")  # unpickles as before, but not what gridlab wrote
    refused = CliRunner().invoke(app, ["launch", str(path)])
    assert refused.exit_code == 2, refused.output
    (line,) = [text for text in refused.output.splitlines() if "launch-001" in text]
    assert "tuner.pkl does not match its seal" in line and OVERRIDE in line
    assert "resuming" not in refused.output and store.cell(cell.id).state() == "pending"

    trusted = CliRunner().invoke(app, ["launch", str(path), OVERRIDE])
    assert trusted.exit_code == 0, trusted.output
    assert "resuming the interrupted launch launch-001" in trusted.output
    assert store.cell(cell.id).state() == "trained"

    as_if_interrupted(tune_dir / "launch-002", expanded.workspace.models)
    again = CliRunner().invoke(app, ["launch", str(path)])
    assert again.exit_code == 0, again.output
    assert "resuming the interrupted launch launch-002" in again.output
    assert store.cell(cell.id).state() == "trained"
