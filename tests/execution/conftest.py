"""Ray for the launch tests: one local Ray on loopback for the module, started by the tests themselves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # cluster_utils nodes stay on 127.0.0.1

TINY_MODEL = {"embedding_dim": 16, "hidden_size": 16, "attention_size": 16}


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.2",
        logging_level="warning",
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
        log_to_driver=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


def write_grid(folder: Path, name: str = "g", **settings) -> Path:
    grid = {
        "name": name,
        "results_dir": str(folder / "runs"),
        "grid": {"dataset": ["sst", "synthetic"], "encoder": ["average", "lstm"], "seed": [0]},
        "model": TINY_MODEL,
        "train": {"epochs": 2, "batch_size": 64, "max_train": 256},
    }
    grid.update(settings)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def start_launch(path: Path, env: dict, sigint_ignored: bool = False) -> subprocess.Popen:
    """`gridlab launch` in its own process group (so a test can SIGKILL the driver and its Ray at once), its
    output (stdout and stderr) in one pipe; `sigint_ignored`: started as a shell starts `gridlab launch ... &`."""
    return subprocess.Popen(
        [sys.executable, "-m", "gridlab", "launch", str(path)],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
    )
