"""On a terminal `gridlab launch` keeps a live row per running trial (its epoch, dev metric, time per epoch)
and one for the analyses, redrawn in place, with the usual lines above; driven here under a pseudo-terminal,
as a person at a terminal runs it."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def test_a_terminal_shows_each_running_trials_epochs(tmp_path: Path, data_dir: Path):
    grid = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        "model": {"embedding_dim": 8, "hidden_size": 8, "attention_size": 8},
        "train": {"epochs": 3, "patience": 3, "batch_size": 64, "max_train": 256},
        "analyses": {"permutation": {"n": 5}},
        "instances": 64,
        "shard_size": 32,
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(grid))
    env = {
        **os.environ,
        "GRIDLAB_DATA": str(data_dir),
        "RAY_USAGE_STATS_ENABLED": "0",
        "TERM": "xterm",
        "COLUMNS": "160",
    }
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "gridlab", "launch", str(path)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    chunks, deadline = [], time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    seen = ANSI.sub("", b"".join(chunks).decode(errors="replace"))
    assert process.returncode == 0, seen
    assert re.search(r"synthetic/average/additive/seed 0: epoch 3/3, dev accuracy [0-9.]+", seen), seen
    assert "1 trained, 0 running, 0 failed, 0 pending" in seen
    assert "analyses: 2/2 shards" in seen
