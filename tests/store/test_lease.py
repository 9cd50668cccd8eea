"""One writer per grid across machines where results live in S3: the lease in the bucket, against a real
S3-compatible server on 127.0.0.1 (conditional writes)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import GridlabError
from gridlab.store.lease import LEASE, LeaseTaken, held
from tests.execution.conftest import write_grid
from tests.object_store import ObjectStore


def lease_of(store: ObjectStore, grid: str = "g") -> dict | None:
    client = boto3.client("s3")
    try:
        body = client.get_object(Bucket=store.bucket, Key=f"runs/{grid}/{LEASE}")["Body"].read()
    except client.exceptions.NoSuchKey:
        return None
    return json.loads(body)


def test_a_second_holder_is_refused_naming_the_first_until_it_lets_go(object_store: ObjectStore):
    uri = object_store.uri("runs")
    with held(uri, "g", "launch"):
        assert lease_of(object_store)["command"] == "launch"
        with pytest.raises(LeaseTaken) as busy:
            with held(uri, "g", "analyze"):
                pass
        assert "`gridlab launch` (pid" in str(busy.value) and "\n" not in str(busy.value)
        with held(uri, "other-grid", "launch"):  # other grids are free
            pass
    assert lease_of(object_store) is None  # let go
    with held(uri, "g", "analyze"):
        pass


def test_a_dead_holders_lease_expires_and_is_taken_over(object_store: ObjectStore):
    stale = {"host": "gone", "pid": 1, "command": "launch", "since": time.time() - 120, "expires": time.time() - 1}
    boto3.client("s3").put_object(Bucket=object_store.bucket, Key=f"runs/g/{LEASE}", Body=json.dumps(stale).encode())
    with held(object_store.uri("runs"), "g", "launch"):
        assert lease_of(object_store)["host"] != "gone"


def test_the_holder_renews_its_lease(object_store: ObjectStore):
    with held(object_store.uri("runs"), "g", "launch", ttl_s=1.5):
        first = lease_of(object_store)["expires"]
        time.sleep(1.2)
        assert lease_of(object_store)["expires"] > first


def test_a_command_on_a_grid_another_machine_holds_is_refused_in_one_line(object_store: ObjectStore, tmp_path: Path):
    path = write_grid(tmp_path, results_dir=object_store.uri("runs"))
    with held(object_store.uri("runs"), "g", "launch"):
        result = CliRunner().invoke(app, ["track", str(path)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "holds this grid's lease" in lines[0], result.output


def test_a_lease_whose_holder_died_on_this_machine_is_taken_at_once(object_store: ObjectStore):
    import socket
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    dead = {"host": socket.gethostname(), "pid": gone.pid, "command": "launch", "since": time.time(), "expires": 1e12}
    boto3.client("s3").put_object(Bucket=object_store.bucket, Key=f"runs/g/{LEASE}", Body=json.dumps(dead).encode())
    with held(object_store.uri("runs"), "g", "launch"):
        assert lease_of(object_store)["pid"] != gone.pid
    alive = {**dead, "host": "another-machine"}  # on another machine, a live-looking lease holds
    boto3.client("s3").put_object(Bucket=object_store.bucket, Key=f"runs/g/{LEASE}", Body=json.dumps(alive).encode())
    with pytest.raises(LeaseTaken):
        with held(object_store.uri("runs"), "g", "launch"):
            pass


def test_s3_results_without_boto3_stop_with_one_line(monkeypatch: pytest.MonkeyPatch):
    """No lease, no launch: two machines would otherwise write one grid's results unguarded."""
    monkeypatch.setitem(sys.modules, "boto3", None)  # `import boto3` raises ImportError
    with pytest.raises(GridlabError, match=r"^s3://bucket/runs: .*needs boto3.*pip install 'gridlab\[s3\]'$"):
        with held("s3://bucket/runs", "g", "launch"):
            pass
