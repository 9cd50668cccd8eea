"""`ray up` for real: Ray's own launcher brings up a cluster on this machine from a cluster file that runs
cluster.yaml's setup and start commands (tests.cluster.local_nodes: its nodes are folders and processes here),
`ray job submit -- gridlab launch ...` runs a tiny grid on it with results in an S3-compatible server on
127.0.0.1, the rows come back equal to a local run's, the head's MLflow server holds the finished runs, and
`ray down` leaves no process of the cluster behind.

Needs what cluster.yaml's commands need: CI's Python (3.11.7, which they pin), the package index (the head's
`pip install -c requirements.lock ".[cluster]"` adds Ray's dashboard and job server; cluster.yaml's uv), and
the ports they fix (6379, 8076, 8265, 5000). `ray up`'s `ray stop` and `ray down` stop every Ray process this
user may signal, so the test skips where this user already runs Ray: it never stops a Ray it did not start.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import psutil
import pytest
import yaml
from ray.autoscaler.tags import NODE_KIND_HEAD, TAG_RAY_NODE_KIND

from gridlab.store.store import Store
from tests.cluster.local_nodes import end_processes
from tests.execution.conftest import write_grid
from tests.object_store import ObjectStore
from tests.test_cluster_config import cluster_config

REPO = Path(__file__).resolve().parents[2]
# cluster.yaml's commands, all of them, run unchanged on the test's head but for the one value that names a
# bucket of the reader's own (REPLACE): the MLflow server's artifact destination, here the test's bucket.
COMMANDS = (
    "initialization_commands",
    "setup_commands",
    "head_setup_commands",
    "worker_setup_commands",
    "head_start_ray_commands",
    "worker_start_ray_commands",
)
PLACEHOLDER_BUCKET = "s3://REPLACE-your-bucket/"
FIXED_PORTS = (6379, 8076, 8265, 5000)  # cluster.yaml's: the head's GCS, object manager, dashboard, MLflow
RAY_PROCESSES = ("raylet", "gcs_server")
RAY = str(Path(sys.executable).parent / "ray")  # the test environment's Ray CLI: the locks' Ray


def local_cluster_file(config_yaml: Path, state_dir: Path, token: Path, bucket: str) -> dict:
    """A head-only cluster of `LocalNodeProvider` with cluster.yaml's commands, rsync options and file mounts
    of the checkout and Ray's token (not ./data: the test grid reads tests/excerpts)."""
    config = yaml.safe_load(config_yaml.read_text())
    commands = {key: [c.replace(PLACEHOLDER_BUCKET, f"s3://{bucket}/") for c in config[key]] for key in COMMANDS}
    return {
        "cluster_name": "gridlab-test",
        "max_workers": 0,
        "upscaling_speed": config["upscaling_speed"],
        "idle_timeout_minutes": config["idle_timeout_minutes"],
        "provider": {
            "type": "external",
            "module": "tests.cluster.local_nodes.LocalNodeProvider",
            "state_dir": str(state_dir),
            "image_python": sys.prefix,
        },
        "auth": {"ssh_user": os.environ.get("USER", "ray")},
        "available_node_types": {"head": {"resources": {"CPU": 2}, "node_config": {}, "max_workers": 0}},
        "head_node_type": "head",
        "file_mounts": {"~/gridlab": str(REPO), "~/.ray/auth_token": str(token)},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": config["rsync_exclude"],
        "rsync_filter": config["rsync_filter"],
        **commands,
    }


def test_the_test_cluster_runs_cluster_yamls_commands(tmp_path: Path):
    config, _ = cluster_config()
    derived = local_cluster_file(REPO / "cluster.yaml", tmp_path / "nodes", tmp_path / "token", "b")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(derived))
    _, prepared = cluster_config(path)  # Ray's own preparation and validation accept it
    for key in COMMANDS:
        assert [c.replace("s3://b/", PLACEHOLDER_BUCKET) for c in derived[key]] == config[key], key
    assert any("s3://b/gridlab/mlflow-artifacts" in c for c in derived["head_start_ray_commands"])
    assert prepared["head_setup_commands"] == config["setup_commands"] + config["head_setup_commands"]


def _other_rays() -> list[str]:
    """Ray processes this user could signal that this test did not start."""
    found = []
    for process in psutil.process_iter(["name", "uids", "pid"]):
        if process.info["name"] in RAY_PROCESSES and process.info["uids"].real == os.getuid():
            found.append(f"{process.info['name']} (pid {process.info['pid']})")
    return found


def _busy(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _run(args: list[str], env: dict[str, str], timeout: int, cwd: Path = REPO) -> str:
    """A command's output (stdout and stderr together); a failure shows its end."""
    started = time.monotonic()
    result = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = result.stdout + result.stderr
    print(f"{' '.join(args[:3])}: {time.monotonic() - started:.0f} s")  # shown by pytest -rP
    assert result.returncode == 0, f"{' '.join(args[:3])} exited {result.returncode}:\n{output[-4000:]}"
    return output


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ray_up_runs_a_grid_against_s3_and_ray_down_ends_it(object_store: ObjectStore, tmp_path, data_dir):
    if sys.version_info[:3] != (3, 11, 7):
        pytest.skip(f"cluster.yaml pins Python 3.11.7 (CI's); this is {sys.version.split()[0]}")
    if others := _other_rays():
        pytest.skip(f"this user already runs Ray ({', '.join(others)}), which `ray up` and `ray down` would stop")
    if busy := [p for p in FIXED_PORTS if _busy(p)]:
        pytest.skip(f"cluster.yaml's fixed ports are in use on 127.0.0.1: {busy}")

    settings = dict(
        grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        data_dir=str(data_dir),
        instances=32,
        shard_size=32,
        analyses={"permutation": {"n": 200}},
    )
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    (tmp_path / "local").mkdir()
    _run([sys.executable, "-m", "gridlab", "launch", str(write_grid(tmp_path / "local", **settings))], env, 900)
    local_rows = pd.read_parquet(tmp_path / "local" / "runs" / "g" / "analyses" / "permutation")

    token = tmp_path / "auth_token"
    token.write_text(secrets.token_hex(32))  # what `ray get-auth-token --generate` writes
    token.chmod(0o600)
    cluster = tmp_path / "cluster.yaml"
    nodes = tmp_path / "nodes"
    cluster.write_text(yaml.safe_dump(local_cluster_file(REPO / "cluster.yaml", nodes, token, object_store.bucket)))
    job = tmp_path / "job"  # the job's working dir: only the grid (the head runs the checkout it installed)
    job.mkdir()
    grid = write_grid(job, results_dir=object_store.uri("runs"), tracking_uri="http://127.0.0.1:5000", **settings)
    # `ray up`, `ray down` and the head's autoscaler (the nodes inherit it) import the provider from tests/
    launcher = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    client = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    try:
        _run([RAY, "up", "-y", "--no-config-cache", str(cluster)], launcher, 900)
        head = json.loads((nodes / "nodes.json").read_text())
        assert [tags[TAG_RAY_NODE_KIND] for tags in head.values()] == [NODE_KIND_HEAD]
        home = nodes / next(iter(head))
        # cluster.yaml's setup ran: the login shell activates ~/gridlab-env, which holds gridlab from the node's copy
        assert "source ~/gridlab-env/bin/activate" in (home / ".bashrc").read_text()
        assert list(home.glob("gridlab-env/lib/python3.11/site-packages/gridlab-*.dist-info"))
        submitted = [
            RAY, "job", "submit", "--address", "http://127.0.0.1:8265", "--working-dir", ".",
            "--", "gridlab", "launch", grid.name, "--address", "auto",
        ]  # fmt: skip
        output = _run(submitted, client, 900, cwd=job)
        assert "succeeded" in output, output[-4000:]

        filesystem = Store.of(object_store.uri("runs")).filesystem
        rows = pd.read_parquet(f"{object_store.bucket}/runs/g/analyses/permutation", filesystem=filesystem)
        assert len(rows) == 32
        pd.testing.assert_frame_equal(
            rows.sort_values("instance_id").reset_index(drop=True),
            local_rows.sort_values("instance_id").reset_index(drop=True),
            check_exact=True,
            check_categorical=False,
        )
        tracked = mlflow.MlflowClient("http://127.0.0.1:5000").search_runs(
            [e.experiment_id for e in mlflow.MlflowClient("http://127.0.0.1:5000").search_experiments()]
        )
        assert tracked and {r.info.status for r in tracked} == {"FINISHED"}, [r.info for r in tracked]
    finally:
        down = subprocess.run(
            [RAY, "down", "-y", str(cluster)], env=launcher, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        left = sum(end_processes(node) for node in (p.name for p in nodes.glob("node-*")))
    assert down.returncode == 0, down.stdout + down.stderr
    assert left == 0, f"{left} processes of the cluster outlived `ray down`"
    assert json.loads((nodes / "nodes.json").read_text()) == {}
    assert not _busy(8265) and not _busy(5000)
