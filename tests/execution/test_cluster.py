"""Trials go to the worker nodes of a multi-node Ray cluster (head + 2 workers on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.store.provenance import gridlab_commit

from .conftest import write_grid

pytestmark = pytest.mark.slow


def test_trials_run_on_the_workers(tmp_path: Path, data_dir: Path, monkeypatch):
    import ray
    from ray.cluster_utils import Cluster

    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})  # the head takes no trial
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    try:
        ray.init(address=cluster.address, logging_level="warning", log_to_driver=False)
        cluster.wait_for_nodes()
        path = write_grid(tmp_path, grid={"dataset": ["synthetic"], "encoder": ["average", "noenc"], "seed": [0, 1]})
        result = CliRunner().invoke(app, ["launch", str(path)])
        assert result.exit_code == 0, result.output
        nodes = set()
        for cell in expand(load_grid_file(path), str(path)).cells:
            metrics = json.loads((tmp_path / "runs" / "g" / "models" / cell.id / "metrics.json").read_text())
            nodes.add(metrics["node_id"])
            assert metrics["gridlab_commit"] == gridlab_commit()  # workers trained with the driver's code
        assert nodes == {w.node_id for w in workers}  # all on workers, and both were used
        assert cluster.head_node.node_id not in nodes
    finally:
        ray.shutdown()
        cluster.shutdown()
