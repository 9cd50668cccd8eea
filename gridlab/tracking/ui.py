"""The MLflow UI on a grid's tracking store, opened on the grid's experiment in the model-training view.

    >>> with LocalUi("sqlite:////abs/runs/mlflow.db", port=free_port(), artifacts=results.artifacts) as ui:
    ...     base = ui.wait_until_up()                    # http://127.0.0.1:5000, once /health answers
    ...     print(experiment_url(base, experiment_id(base, "quick")))
    ...     ui.wait()                                    # until the server stops, or Ctrl-C

MLflow 3's UI opens an experiment in its GenAI view (traces, token usage) unless the page's URL asks for the
other one: the experiment page's `workflowType` query parameter, `#/experiments/<id>?workflowType=
machine_learning`, the form the UI's own view switch navigates to (MLflow 3.17's server/js bundle). The
experiment's `mlflow.experimentKind` tag alone is not enough: the switch remembers the last view in the
browser's storage, and GenAI is its default.

The server is `mlflow server` in a child process, bound to 127.0.0.1 only, with one worker, no job runner
and no telemetry: two processes instead of the fifteen MLflow's defaults start. On two cores shared with
other work (load 5-6) it answered 17-25 s after `gridlab ui` started, most of it the server's own start.
The experiment is found over the server's REST API, so this module needs no mlflow import. A tracking URI
that is a server already (http, https) is not served again: its URL is given.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

from gridlab.errors import BadInput, GridlabError

HOST = "127.0.0.1"
DEFAULT_PORT = 5000
PORTS_TRIED = 100  # the default port and the next 99: the first free one is taken
START_TIMEOUT_S = 180.0  # two busy cores: about 20 s; a cold disk and a more loaded machine take longer
STOP_TIMEOUT_S = 15.0
SERVER_ENVIRONMENT = {
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no job runner processes: a UI needs none
    "MLFLOW_DISABLE_TELEMETRY": "true",
}
ML_VIEW = "workflowType=machine_learning"
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 never goes through a proxy


def is_server(tracking_uri: str) -> bool:
    """A tracking URI that is an MLflow server already (its UI is there), not a store a UI must be started on."""
    return urllib.parse.urlparse(tracking_uri).scheme in ("http", "https")


def store_path(tracking_uri: str) -> Path | None:
    """The file of a sqlite store (`sqlite:////abs/mlflow.db`); None for any other kind of store."""
    prefix = "sqlite:///"
    return Path(tracking_uri[len(prefix) :]) if tracking_uri.startswith(prefix) else None


def experiment_url(base: str, experiment_id: str) -> str:
    """The experiment's page in the UI at `base`, in the model-training view (runs, metrics, charts)."""
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}?{ML_VIEW}"


def experiment_id(base: str, name: str, timeout: float = 10.0) -> str | None:
    """The id of the experiment named `name` on the server at `base`; None when it has none of that name."""
    query = urllib.parse.urlencode({"experiment_name": name})
    url = f"{base.rstrip('/')}/api/2.0/mlflow/experiments/get-by-name?{query}"
    opener = _LOCAL if urllib.parse.urlparse(base).hostname == HOST else urllib.request.build_opener()
    try:
        with opener.open(url, timeout=timeout) as response:
            return str(json.load(response)["experiment"]["experiment_id"])
    except urllib.error.HTTPError as error:
        if error.code == 404:  # RESOURCE_DOES_NOT_EXIST
            return None
        raise GridlabError(f"{base}: the tracking server answered {error.code} {error.reason} to {url}") from None
    except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
        raise GridlabError(f"{base}: no answer from the tracking server ({getattr(error, 'reason', error)})") from None


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:port now. SO_REUSEADDR, as the server itself binds: the
    connections of a UI stopped a moment ago (TIME_WAIT) do not hold the port, a listening socket does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port(start: int = DEFAULT_PORT) -> int:
    """The first port from `start` on that nothing on 127.0.0.1 listens on."""
    for port in range(start, start + PORTS_TRIED):
        if port_free(port):
            return port
    raise GridlabError(f"ports {start} to {start + PORTS_TRIED - 1} of {HOST} are all taken: pass --port")


def answers(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((HOST, port)) == 0


class LocalUi:
    """`mlflow server` on 127.0.0.1:port over a tracking store, stopped (with its worker) on leaving."""

    def __init__(self, tracking_uri: str, port: int, artifacts: Path | None = None):
        if not port_free(port):
            raise BadInput(f"port {port} of {HOST} is taken: pass another --port, or leave it out for a free one")
        self.port = port
        self.base = f"http://{HOST}:{port}"
        command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", tracking_uri]
        command += ["--host", HOST, "--port", str(port), "--workers", "1"]
        if artifacts is not None:  # what the server would otherwise create as ./mlartifacts in the current folder
            command += ["--artifacts-destination", str(artifacts.absolute())]
        self.log: IO[bytes] = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **SERVER_ENVIRONMENT},
        )

    def __enter__(self) -> LocalUi:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None):
        self.stop()

    def wait_until_up(self, timeout: float = START_TIMEOUT_S) -> str:
        """The server's base URL once its /health answers; a GridlabError with its last lines if it stopped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise GridlabError(f"the MLflow server stopped before it was up: {self.last_line()}")
            try:
                with _LOCAL.open(f"{self.base}/health", timeout=2.0) as response:
                    if response.status == 200:
                        return self.base
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise GridlabError(f"the MLflow server on {self.base} did not answer within {timeout:.0f} s")

    def wait(self) -> int:
        """Until the server stops by itself (its exit code); Ctrl-C raises KeyboardInterrupt here."""
        return self.process.wait()

    def stop(self) -> None:
        """SIGTERM to the server, which ends its worker; SIGKILL if it has not stopped in STOP_TIMEOUT_S."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def last_line(self) -> str:
        """The server's last line of output that says something (its error, when it failed)."""
        self.log.seek(0)
        lines = [line.strip() for line in self.log.read().decode(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else f"exit code {self.process.returncode}, no output"
