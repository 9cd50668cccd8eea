"""Ctrl-C on `gridlab launch` (SIGINT to the command, as a terminal sends it) or SIGTERM (`kill`): exit 130
and one line saying how far it got and that a launch resumes, never "done" with cells pending, and no cell
published half-trained."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.store.layout import LAUNCH_MARKER
from gridlab.store.models import ModelStore
from tests.execution.conftest import start_launch

pytestmark = pytest.mark.slow


def _interrupt_when_training(path: Path, stop: signal.Signals, env: dict) -> tuple[int, str]:
    """Launch the grid, send `stop` once a trial trains, return the exit code and the whole output."""
    process = start_launch(path, env)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:  # wait until a trial trains
        lines.append(line)
        if "running: started" in line:
            break
    time.sleep(3)
    process.send_signal(stop)
    try:
        rest, _ = process.communicate(timeout=180)
    finally:
        process.kill()
    return process.returncode, "".join(lines) + rest


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_exits_130_also_while_resuming(tmp_path: Path, stop: signal.Signals):
    """Interrupted twice: in a new launch, then in the relaunch while it resumes the first launch's Tune
    experiment (a path of its own: it once went on into a new experiment and marked the first one finished)."""
    grid = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]},
        "model": {"embedding_dim": 8, "hidden_size": 8, "attention_size": 8},
        "train": {"epochs": 400, "patience": 400, "batch_size": 64, "max_train": 256},
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(grid))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    expanded = expand(load_grid_file(path), str(path), check_data=False)
    store = ModelStore(expanded.workspace.models)

    for attempt in ("first", "resuming"):
        code, output = _interrupt_when_training(path, stop, env)
        assert code == 130, output
        assert "done:" not in output
        assert "interrupted: 0 of 2 cells trained" in output and f"`gridlab launch {path}` resumes" in output
        assert "Failed to fetch metrics" not in output and "Tuner.restore" not in output
        assert "Stop signal received" not in output  # Tune's notice: gridlab's line says it
        assert ("resuming the interrupted launch launch-001" in output) == (attempt == "resuming")
        assert all(store.cell(c.id).state() == "pending" for c in expanded.cells)
        experiments = expanded.workspace.tune_experiments()
        assert [e.name for e in experiments] == ["launch-001"], attempt
        assert not json.loads((experiments[0] / LAUNCH_MARKER).read_text())["finished"]


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "started-with-sigint-ignored"])
def test_an_interrupt_during_the_analyses_after_training_exits_130(tmp_path: Path, background: bool):
    """After a Tune fit that ends normally Tune's SIGINT handler stayed installed, so the first Ctrl-C (or
    SIGTERM) during the analyses that follow was swallowed and the launch ran on to the end. Started as a
    shell starts a background command (SIGINT ignored), the SIGTERM was swallowed there too."""
    grid = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        "model": {"embedding_dim": 8, "hidden_size": 8, "attention_size": 8},
        "train": {"epochs": 1, "batch_size": 64, "max_train": 256},
        # about a minute of analyses if nothing stops them, so that the signal lands while they run
        "analyses": {"adversarial": {"k": 5, "steps": 25000, "stop_window": 0}},
        "instances": 992,
        "shard_size": 992,
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(grid))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    process = start_launch(path, env, sigint_ignored=background)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if "trained: " in line:  # the analyses of the trained cell start now
            break
    time.sleep(2)
    process.send_signal(signal.SIGTERM)
    try:
        rest, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    output = "".join(lines) + rest
    assert process.returncode == 130, output
    assert "interrupted" in output and "done:" not in output
