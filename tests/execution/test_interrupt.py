"""Ctrl-C on `gridlab launch` (SIGINT to the command, as a terminal sends it) or SIGTERM (`kill`): exit 130
and one line saying how far it got and that a launch resumes, never "done" with cells pending, and no cell
published half-trained."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.store.models import ModelStore

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_exits_130_and_the_relaunch_resumes(tmp_path: Path, stop: signal.Signals):
    grid = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]},
        "model": {"embedding_dim": 8, "hidden_size": 8, "attention_size": 8},
        "train": {"epochs": 400, "patience": 400, "batch_size": 64, "max_train": 256},
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(grid))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "GRIDLAB_RAY_NODE_IP": "127.0.0.2"}
    launch = [sys.executable, "-m", "gridlab", "launch", str(path)]
    process = subprocess.Popen(launch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
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
    output = "".join(lines) + rest
    assert process.returncode == 130, output
    assert "done:" not in output
    assert "interrupted: 0 of 2 cells trained" in output and f"`gridlab launch {path}` resumes" in output

    expanded = expand(load_grid_file(path), str(path), check_data=False)
    store = ModelStore(expanded.workspace.models)
    assert all(store.cell(c.id).state() == "pending" for c in expanded.cells)
