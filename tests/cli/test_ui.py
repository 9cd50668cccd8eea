"""`gridlab ui`: the MLflow UI on a grid's tracking store, and the URL of the grid's experiment in the
model-training view. The server runs for real (a child process on 127.0.0.1); a tracking server is a stub."""

from __future__ import annotations

import http.server
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.cli.ui_commands import grid_tracking_uri
from gridlab.grid.expand import ExpandedGrid, expand
from gridlab.grid.load import load_grid_file
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker
from gridlab.tracking.ui import answers, free_port, port_free

REPO = Path(__file__).resolve().parents[2]
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def grid_file(folder: Path, **settings) -> Path:
    path = folder / "g.yaml"
    spec = {"name": "g", "results_dir": str(folder / "runs"), "grid": {"dataset": ["synthetic"]}, **settings}
    path.write_text(yaml.safe_dump(spec))
    return path


def expanded(path: Path) -> ExpandedGrid:
    return expand(load_grid_file(path), str(path), check_data=False)


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A grid whose launch was tracked (its experiment and a launch run, as a launch leaves them) and the
    experiment's id."""
    path = grid_file(tmp_path_factory.mktemp("tracked"))
    grid = expanded(path)
    journal = TrackingJournal(grid.workspace.tracking)
    tracker = Tracker(grid_tracking_uri(grid), "g", journal, grid.results.artifacts)
    tracker.start_launch(pending=1)
    assert tracker.deliver() == 0 and tracker.experiment_id is not None
    return path, tracker.experiment_id


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def lines_of(stream) -> queue.Queue:
    """The stream's lines as they come, read by a thread (a blocking read cannot time out)."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


@pytest.mark.slow
def test_ui_serves_the_grid_experiment_until_ctrl_c(tracked: tuple[Path, str], tmp_path: Path):
    path, experiment_id = tracked
    port = unused_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gridlab", "ui", str(path), "--port", str(port)],
        cwd=tmp_path,  # the store is found from the grid file, not the current folder
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = lines_of(process.stdout)
        shown = []
        while not (shown and shown[-1].startswith("http")):
            shown.append(lines.get(timeout=240).strip())  # two busy cores: about 20 s
        url = shown[-1]
        assert url == f"http://127.0.0.1:{port}/#/experiments/{experiment_id}?workflowType=machine_learning", shown
        assert f"experiment 'g' (id {experiment_id}) in the model-training view" in shown[-2]
        base = url.split("/#/")[0]
        with LOCAL.open(base + "/", timeout=30) as page:  # the UI itself: the page the URL's fragment routes in
            assert page.status == 200 and "<html" in page.read().decode().lower()
        query = urllib.parse.urlencode({"experiment_id": experiment_id})
        with LOCAL.open(f"{base}/api/2.0/mlflow/experiments/get?{query}", timeout=30) as response:
            experiment = json.load(response)["experiment"]
        assert experiment["name"] == "g" and str(path.parent / "runs") in experiment["artifact_location"]
        assert not (tmp_path / "mlartifacts").exists() and not (tmp_path / "mlruns").exists()
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=60) == 130
        assert "stopped the MLflow UI" in process.stderr.read()
        assert not answers(port)  # the server and its worker are gone with it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@contextmanager
def tracking_server(experiments: dict[str, str]) -> Iterator[str]:
    """A stub MLflow server on 127.0.0.1 that knows `experiments` (name -> id) by name; yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (http.server's spelling)
            url = urllib.parse.urlparse(self.path)
            name = urllib.parse.parse_qs(url.query).get("experiment_name", [""])[0]
            known = url.path == "/api/2.0/mlflow/experiments/get-by-name" and name in experiments
            body = json.dumps({"experiment": {"experiment_id": experiments[name], "name": name}} if known else {})
            self.send_response(200 if known else 404)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_grid_tracking_to_a_server_gets_that_server_s_url(tmp_path: Path):
    with tracking_server({"g": "7"}) as url:
        result = CliRunner().invoke(app, ["ui", str(grid_file(tmp_path, tracking_uri=url))])
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1] == f"{url}/#/experiments/7?workflowType=machine_learning"
        other = tmp_path / "other"
        other.mkdir()
        path = grid_file(other, tracking_uri=url, name="never-launched")
        missing = CliRunner().invoke(app, ["ui", str(path)])
    assert missing.exit_code == 1 and f"{url} has no experiment 'never-launched' yet" in missing.stderr
    gone = CliRunner().invoke(app, ["ui", str(path)])  # the server is down now
    assert gone.exit_code == 1 and "no answer from the tracking server" in gone.stderr
    assert not (tmp_path / "runs" / "mlflow.db").exists()  # nothing was started or created


def test_a_grid_never_tracked_has_no_store_to_show(tmp_path: Path):
    result = CliRunner().invoke(app, ["ui", str(grid_file(tmp_path))])
    assert result.exit_code == 1
    assert f"no tracking store at {tmp_path / 'runs' / 'mlflow.db'}: nothing of g was tracked yet" in result.stderr
    assert not (tmp_path / "runs" / "mlflow.db").exists()


def test_a_taken_port_is_refused_and_the_default_moves_on(tracked: tuple[Path, str]):
    path, _ = tracked
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["ui", str(path), "--port", str(port)])
        assert result.exit_code == 2 and f"port {port} of 127.0.0.1 is taken" in result.stderr
        assert free_port(port) > port


def test_the_store_is_the_one_a_launch_tracks_to(tmp_path: Path):
    from gridlab.execution.launch import tracking_uri  # Ray: only here, to compare

    for settings in ({}, {"tracking_uri": "sqlite:////elsewhere/mlflow.db"}):
        grid = expanded(grid_file(tmp_path, **settings))
        assert grid_tracking_uri(grid) == tracking_uri(grid)


def test_a_port_a_stopped_server_left_is_free_again():
    """The connections a stopped UI served wait in TIME_WAIT for a minute: they must not make `gridlab ui`
    refuse its port (or move the default to another) when it starts again."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn, MLflow's server, binds
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    served, _ = listener.accept()
    served.close()  # the server's end closes first, as a server that stops does: it waits in TIME_WAIT
    client.close()
    listener.close()
    assert port_free(port) and free_port(port) == port
