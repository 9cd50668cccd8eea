"""A tracking server that is unreachable or goes away costs one warning line, never the grid: records wait
in the grid's journal and `gridlab track` (or the next launch) sends them once the server is back, each
once, so that every run ends complete and FINISHED."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlflow
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker
from tests.execution.conftest import write_grid

pytestmark = pytest.mark.slow


# Bounds for a loaded 2-core machine. Starting: `mlflow server` imports mlflow and creates the sqlite tables
# (5 s idle). Stopping: what the tests need is the port closed, not every process gone; SIGTERM closes
# uvicorn's listening socket first, and a server still listening after SERVER_STOP_S is killed (SIGKILL, which
# no load delays for long) and must have let the port go SERVER_KILL_S later.
SERVER_START_S = 120
SERVER_STOP_S = 60
SERVER_KILL_S = 30


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_closed(port: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while listening(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@contextmanager
def mlflow_server(port: int, folder: Path) -> Iterator[str]:
    """`mlflow server` on 127.0.0.1:port with a sqlite store in `folder`, until the block ends.

    Two processes (the mlflow CLI and one uvicorn worker, no job runner) instead of the default 15, in a
    process group of their own so that stopping reaches both."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    command += ["--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}", "--artifacts-destination", str(folder)]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError(f"mlflow server did not answer within {SERVER_START_S} s") from None
                time.sleep(0.5)
        yield uri
    finally:
        stop_server(process, port)


def stop_server(process: subprocess.Popen, port: int) -> None:
    """SIGTERM to the server's group; wait for its port to close, not for its processes to exit; then SIGKILL
    whatever of the group is left, so that no server outlives the test, and reap the CLI process."""
    signal_group(process, signal.SIGTERM)
    closed = wait_closed(port, SERVER_STOP_S)
    signal_group(process, signal.SIGKILL)
    assert closed or wait_closed(port, SERVER_KILL_S), f"127.0.0.1:{port} still listens after SIGKILL"
    process.wait(timeout=SERVER_KILL_S)  # killed: only the kernel's bookkeeping is left


def signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)  # start_new_session: the group's id is the CLI process's pid
    except ProcessLookupError:
        pass  # the whole group has exited


def test_records_wait_while_the_server_is_down_and_are_sent_once_when_it_is_back(tmp_path: Path):
    port, warnings = free_port(), []
    uri = f"http://127.0.0.1:{port}"
    tracker = Tracker(uri, "g", TrackingJournal(tmp_path / "tracking"), warn=warnings.append)
    started = time.monotonic()
    launch = tracker.start_launch(pending=1)
    tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    for epoch in (1, 2, 3):
        tracker.log_epoch("abc123", epoch, {"train_loss": 1.0 / epoch})
    tracker.finish_cell("abc123", {"test_accuracy": 0.8, "best_epoch": 3}, tmp_path)
    tracker.end_launch(launch, 1, 0)
    assert time.monotonic() - started < 30  # one short failed attempt, then records only go to disk
    assert len(warnings) == 1 and uri in warnings[0] and "gridlab track" in warnings[0]
    assert tracker.backlog() == 8

    with mlflow_server(port, tmp_path / "server"):
        assert tracker.deliver() == 0
        assert "is back" in warnings[-1]
        client = mlflow.MlflowClient(uri)
        run = client.get_run(tracker.run_id("abc123"))
        assert run.info.status == "FINISHED"
        assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "train_loss")] == [
            (1, 1.0),
            (2, 0.5),
            (3, pytest.approx(1 / 3)),
        ]
        assert tracker.deliver() == 0  # nothing sent twice
        assert len(client.get_metric_history(run.info.run_id, "train_loss")) == 3


def test_a_launch_without_its_tracking_server_finishes_and_track_fills_the_runs(
    tmp_path: Path, data_dir: Path, monkeypatch, local_ray
):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    grid = {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]}
    path = write_grid(tmp_path, grid=grid, tracking_uri=uri, analyses={"permutation": {"n": 5}}, instances=20)
    started = time.monotonic()
    launched = CliRunner().invoke(app, ["launch", str(path)])
    assert launched.exit_code == 0, launched.output
    failures = [line for line in launched.output.splitlines() if line.startswith("tracking:") and "failed" in line]
    assert len(failures) == 1, launched.output
    assert "2 trained" in launched.output and "`gridlab track" in launched.output
    assert "running: epoch 2/2, dev accuracy" in launched.output  # a line per epoch, without MLflow
    assert time.monotonic() - started < 240

    with mlflow_server(port, tmp_path / "server"):
        tracked = CliRunner().invoke(app, ["track", str(path)])
        assert tracked.exit_code == 0, tracked.output
        assert ", 0 waiting" in tracked.output
        client = mlflow.MlflowClient(uri)
        experiment = client.get_experiment_by_name("g")
        cells = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'cell'")
        assert len(cells) == 2 and {r.info.status for r in cells} == {"FINISHED"}
        for run in cells:
            steps = [m.step for m in client.get_metric_history(run.info.run_id, "dev_accuracy")]
            assert steps == [1, 2]  # every epoch, once
            assert "permutation.tvd_median_median" in run.data.metrics  # the summaries too
        launches = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'launch'")
        assert [r.info.status for r in launches] == ["FINISHED"]
        again = CliRunner().invoke(app, ["track", str(path)])
        assert "0 records sent" in again.output and again.exit_code == 0
