"""An analysis actor killed mid-shard costs only that shard: Ray restarts the actor, retries the shard, and
the parts written are the same as those of an undisturbed run."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.execution.actors import AnalysisDispatcher
from gridlab.execution.plan import plan_jobs
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from tests.execution.conftest import write_grid

pytestmark = pytest.mark.slow
SLOW_SHARD = {"permutation": {"n": 20000}}  # a few seconds per shard: time to kill its actor mid-way


def descends_from_this_test(pid: int) -> bool:
    """Whether the process was started (through Ray's raylet) by this test's own Ray: another Ray on the
    machine, a grid running beside the tests, has analysis actors too, and they are not this test's to kill."""
    while pid > 1:
        if pid == os.getpid():
            return True
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # the parent's pid
    return False


def running_shard_pid(deadline: float) -> int:
    """The pid of this test's analysis actor while it runs a shard (Ray titles the process after the method)."""
    while time.monotonic() < deadline:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if b"AnalysisActor.run" in cmdline.read_bytes() and descends_from_this_test(int(cmdline.parent.name)):
                    return int(cmdline.parent.name)
            except OSError:  # the process ended while we looked
                continue
        time.sleep(0.05)
    raise AssertionError("no analysis actor of this test started a shard")


def alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "State:\tZ" not in status.read_text()
    except OSError:
        return False


def test_a_killed_actor_costs_only_its_shard(tmp_path: Path, data_dir: Path, monkeypatch, local_ray):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    settings = dict(grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]}, instances=64, shard_size=32)
    path = write_grid(tmp_path, **settings)
    trained = CliRunner().invoke(app, ["launch", str(path)])
    assert trained.exit_code == 0, trained.output
    path = write_grid(tmp_path, analyses=SLOW_SHARD, **settings)
    grid = expand(load_grid_file(path), str(path))
    parts = grid.results_dir / "analyses" / "permutation"

    dispatcher = AnalysisDispatcher(grid, emit=print)
    dispatcher.submit(plan_jobs(grid)[0])
    victim = running_shard_pid(time.monotonic() + 120)
    os.kill(victim, signal.SIGKILL)
    report = dispatcher.drain()
    dispatcher.close()
    assert not alive(victim)
    assert report.failed == [] and report.written == 2
    killed_run = pd.read_parquet(parts).sort_values("instance_id").reset_index(drop=True)

    shutil.rmtree(parts)
    undisturbed = AnalysisDispatcher(grid, emit=print)
    undisturbed.submit(plan_jobs(grid)[0])
    assert undisturbed.drain().written == 2
    undisturbed.close()
    clean_run = pd.read_parquet(parts).sort_values("instance_id").reset_index(drop=True)
    assert len(killed_run) == 64
    pd.testing.assert_frame_equal(killed_run, clean_run, check_exact=True)
