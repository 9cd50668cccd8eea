"""A worker node lost mid-analysis costs time, not a shard: on a head and a worker of a
`ray.cluster_utils.Cluster` on loopback, the worker's raylet is killed while its analysis actor runs a shard;
the launch requeues that shard on a live node, exits 0 with every row (the same rows as an undisturbed run),
and tells the user in one line, without Ray's dumps of the dead raylet."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from .conftest import write_grid
from .test_analysis_faults import SLOW_SHARD

pytestmark = pytest.mark.slow


def descendants(root: int) -> set[int]:
    """The pids of every process under `root` (the raylet starts the node's workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):  # the process ended while we looked
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def runs_a_shard(pids: set[int]) -> bool:
    for pid in pids:
        try:
            if b"AnalysisActor.run" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def launch(path: Path, address: str, env: dict, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gridlab", "launch", str(path), "--address", address],
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def test_a_lost_node_costs_time_not_a_shard(tmp_path: Path):
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    settings = dict(grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]}, instances=128, shard_size=32)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1}, connect=False)
    worker = cluster.add_node(num_cpus=1)
    try:
        cluster.wait_for_nodes()
        trained = launch(write_grid(tmp_path, **settings), cluster.address, env)
        assert trained.returncode == 0, trained.stdout + trained.stderr
        path = write_grid(tmp_path, analyses=SLOW_SHARD, **settings)
        parts = tmp_path / "runs" / "g" / "analyses" / "permutation"

        driver = subprocess.Popen(
            [sys.executable, "-m", "gridlab", "launch", str(path), "--address", cluster.address],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        raylet = worker.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
        deadline = time.monotonic() + 180
        while not runs_a_shard(descendants(raylet)):
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "no shard started on the worker node within 180 s"
            time.sleep(0.1)
        started = time.monotonic()
        for pid in [raylet, *descendants(raylet)]:  # the machine gone: its raylet and the workers it started
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = driver.communicate(timeout=400)
        seconds = time.monotonic() - started
        output = stdout + stderr
        assert driver.returncode == 0, output
        lost = [line for line in output.splitlines() if "lost node" in line]
        assert len(lost) == 1, output  # from the shard it cost or the cluster, whichever told first
        assert "requeued: its node" in output, output
        assert "Last 20 lines" not in output and "(raylet)" not in output and "Traceback" not in output, output
        assert len(output.splitlines()) < 30, output  # gridlab's own lines, not Ray's dumps
        after_loss = pd.read_parquet(parts).sort_values(["instance_id"]).reset_index(drop=True)
        assert len(after_loss) == 128
        print(output, f"finished {seconds:.0f} s after the node was lost", sep="\n")  # shown with -s

        shutil.rmtree(parts)
        clean = launch(path, cluster.address, env)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        undisturbed = pd.read_parquet(parts).sort_values(["instance_id"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(after_loss, undisturbed, check_exact=True)
    finally:
        cluster.shutdown()
