"""Results in object storage, against a real S3-compatible server on 127.0.0.1: the mirror's uploads and
downloads, and a grid launched into s3:// whose driver is killed mid-analyses (or mid-training), relaunched
from a machine with no local copy, and read back with pandas equal to a local run's rows (and tracked in the
second machine's own MLflow store)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from pyarrow import fs as pafs

from gridlab.store import atomic
from gridlab.store.layout import LAUNCH_MARKER
from gridlab.store.remote import Mirror, activate
from tests.execution.conftest import start_launch, write_grid
from tests.object_store import ObjectStore


def objects(mirror: Mirror) -> dict[str, int]:
    infos = mirror.filesystem.get_file_info(pafs.FileSelector(mirror.root, recursive=True, allow_not_found=True))
    return {i.path[len(mirror.root) + 1 :]: i.size for i in infos if i.type == pafs.FileType.File}


def test_what_is_published_is_uploaded_and_comes_back_elsewhere(object_store: ObjectStore, tmp_path: Path):
    mirror = Mirror.of(object_store.uri("runs"))
    assert mirror.local == tmp_path / "mirror" / "s3" / object_store.bucket / "runs"
    activate(mirror)
    atomic.write_text(mirror.local / "g" / "summary.txt", "one")
    staging = atomic.staging_folder(mirror.local / "g" / "models" / "c1")
    (staging / "model.pt").write_bytes(b"weights")
    (staging / "metrics.json").write_text("{}")
    atomic.publish_folder(staging, mirror.local / "g" / "models" / "c1")
    (mirror.local / "g" / ".hidden.tmp").write_text("never")
    assert objects(mirror) == {"g/summary.txt": 3, "g/models/c1/model.pt": 7, "g/models/c1/metrics.json": 2}

    (mirror.local / "g" / "launches.jsonl").write_text("{}\n")  # appended to, not published: not yet there
    assert mirror.push_missing("g") == 1 and "g/launches.jsonl" in objects(mirror)
    assert mirror.push_missing("g") == 0

    elsewhere = Mirror(tmp_path / "other-machine", mirror.uri)
    assert elsewhere.pull("g") == 4
    assert (elsewhere.local / "g" / "models" / "c1" / "model.pt").read_bytes() == b"weights"
    assert not (elsewhere.local / "g" / ".hidden.tmp").exists()
    assert elsewhere.pull("g") == 0  # what it has is not fetched again


def test_tunes_state_stays_in_the_store(object_store: ObjectStore, tmp_path: Path):
    """Tune and the seal write an experiment's state in the store during a launch: a copy pulled at the start
    would go back over the newer one at the end. Only gridlab's marker and the trials' results travel."""
    mirror = Mirror.of(object_store.uri("runs"))
    experiment = f"{mirror.root}/g/tune/launch-001"
    for name in ("tuner.pkl", "experiment_state-x.json", "gridlab-seal.hmac", LAUNCH_MARKER, "c1/result.json"):
        with mirror.filesystem.open_output_stream(f"{experiment}/{name}") as stream:
            stream.write(b"first")
    assert mirror.pull("g") == 2
    local = mirror.local / "g" / "tune" / "launch-001"
    assert sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()) == [
        "c1/result.json",
        LAUNCH_MARKER,
    ]
    (local / "experiment_state-x.json").write_text("a stale copy, of another size")
    assert mirror.push_missing("g") == 0
    with mirror.filesystem.open_input_stream(f"{experiment}/experiment_state-x.json") as stream:
        assert stream.read() == b"first"


def test_an_unreachable_store_is_one_line(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from gridlab.cli import app

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("GRIDLAB_MIRROR_DIR", str(tmp_path / "mirror"))
    path = write_grid(tmp_path, results_dir="s3://nowhere/runs")
    result = CliRunner().invoke(app, ["status", str(path)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("results_dir s3://nowhere/runs: "), result.output


@pytest.mark.slow
def test_a_grid_in_s3_survives_a_driver_kill_and_a_lost_machine(object_store: ObjectStore, tmp_path, data_dir):
    settings = dict(
        grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        instances=96,
        shard_size=32,
        analyses={"permutation": {"n": 20000}},  # seconds per shard: time to kill the driver between parts
    )
    env = {**os.environ, "GRIDLAB_DATA": str(data_dir), "RAY_AUTH_MODE": "disabled"}
    (tmp_path / "local").mkdir()
    local = write_grid(tmp_path / "local", **settings)
    reference = subprocess.run([sys.executable, "-m", "gridlab", "launch", str(local)], env=env, capture_output=True)
    assert reference.returncode == 0, reference.stdout.decode()[-2000:]
    local_rows = pd.read_parquet(tmp_path / "local" / "runs" / "g" / "analyses" / "permutation")

    path = write_grid(tmp_path, results_dir=object_store.uri("runs"), **settings)
    mirror = Mirror.of(object_store.uri("runs"))
    driver = start_launch(path, env)
    deadline = time.monotonic() + 300
    while not any(k.startswith("g/analyses/permutation/") for k in objects(mirror)):
        assert driver.poll() is None, driver.stdout.read()
        assert time.monotonic() < deadline, "no part uploaded within 300 s"
        time.sleep(0.2)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    uploaded = [k for k in objects(mirror) if k.startswith("g/analyses/permutation/")]
    assert 0 < len(uploaded) < 3, "the driver was killed too late to test anything"

    # another machine: no local mirror at all, only the object store
    env["GRIDLAB_MIRROR_DIR"] = str(tmp_path / "second-machine")
    relaunch = start_launch(path, env)
    output, _ = relaunch.communicate(timeout=600)
    assert relaunch.returncode == 0, output
    assert "nothing to train" in output  # the trained model came back from the store

    rows = pd.read_parquet(f"{object_store.bucket}/runs/g/analyses/permutation", filesystem=mirror.filesystem)
    assert len(rows) == 96
    pd.testing.assert_frame_equal(
        rows.sort_values("instance_id").reset_index(drop=True),
        local_rows.sort_values("instance_id").reset_index(drop=True),
        check_exact=True,
        check_categorical=False,
    )
    status = subprocess.run(
        [sys.executable, "-m", "gridlab", "status", str(path), "--json"], env=env, capture_output=True, text=True
    )
    assert status.returncode == 0 and '"state": "trained"' in status.stdout, status.stdout + status.stderr


@pytest.mark.slow
def test_training_in_s3_resumes_from_tunes_checkpoints_in_the_store(object_store: ObjectStore, tmp_path, shipped_sst):
    """...and its tracking follows it to the second machine's own store (issue 47): every cell's run is made
    there, complete and FINISHED, though the first machine's journal and store stayed behind."""
    settings = dict(
        grid={"dataset": ["sst"], "encoder": ["lstm"], "seed": [0, 1]},
        train={"epochs": 5, "batch_size": 32, "max_train": 1200},
        model={"embedding_dim": 32, "hidden_size": 32, "attention_size": 32},
        analyses={"permutation": {"n": 5}},
        instances=32,
        shard_size=32,
    )
    env = {**os.environ, "GRIDLAB_DATA": str(shipped_sst), "RAY_AUTH_MODE": "disabled"}  # SST, read in workers
    (tmp_path / "local").mkdir()
    local = write_grid(tmp_path / "local", **settings)
    reference = subprocess.run([sys.executable, "-m", "gridlab", "launch", str(local)], env=env, capture_output=True)
    assert reference.returncode == 0, reference.stdout.decode()[-2000:]

    path = write_grid(tmp_path, results_dir=object_store.uri("runs"), **settings)
    mirror = Mirror.of(object_store.uri("runs"))
    driver = start_launch(path, env)
    deadline = time.monotonic() + 300

    def restorable() -> bool:  # an epoch checkpoint and Tune's experiment state, both in the store
        keys = objects(mirror)
        return any(k.endswith("/trainer.pt") for k in keys) and any("experiment_state" in k for k in keys)

    while not restorable():
        assert driver.poll() is None, driver.stdout.read()
        assert time.monotonic() < deadline, "no checkpoint in the store within 300 s"
        time.sleep(0.2)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert not any(k.endswith("/metrics.json") and "/models/" in k for k in objects(mirror)), "killed too late"

    env["GRIDLAB_MIRROR_DIR"] = str(tmp_path / "second-machine")
    relaunch = start_launch(path, env)
    output, _ = relaunch.communicate(timeout=600)
    assert relaunch.returncode == 0, output
    assert "resuming the interrupted launch launch-001" in output

    import json

    def metrics(root: Path) -> dict[str, dict]:
        return {p.parent.name: json.loads(p.read_text()) for p in root.glob("g/models/*/metrics.json")}

    resumed = metrics(tmp_path / "second-machine" / "s3" / object_store.bucket / "runs")
    clean = metrics(tmp_path / "local" / "runs")
    assert resumed.keys() == clean.keys() and len(clean) == 2
    assert any(m["resumed_from_epoch"] > 0 for m in resumed.values()), output
    for cell, values in clean.items():  # resumed from the store's checkpoint, bit for bit the clean run
        assert resumed[cell]["test_loss"] == values["test_loss"], cell

    second_store = tmp_path / "second-machine" / "s3" / object_store.bucket / "runs"
    assert "logged to 2 MLflow runs" in output
    client = mlflow.MlflowClient(f"sqlite:///{second_store / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("g")
    assert experiment.artifact_location.startswith(second_store.as_uri())
    cells = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'cell'")
    assert sorted(r.data.tags["cell_id"] for r in cells) == sorted(clean)
    for run in cells:
        assert run.info.status == "FINISHED" and run.info.artifact_uri.startswith(second_store.as_uri())
        assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss")) == [1, 2, 3, 4, 5]
        assert {"test_accuracy", "permutation.tvd_median_median"} <= run.data.metrics.keys()
        assert run.data.params["encoder"] == "lstm"
        assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"metrics.json", "history.json"}
    launches = client.search_runs([experiment.experiment_id], "tags.`gridlab.kind` = 'launch'")
    assert launches and {r.info.status for r in launches} == {"FINISHED"}
    tracked = subprocess.run([sys.executable, "-m", "gridlab", "track", str(path)], env=env, capture_output=True)
    assert tracked.returncode == 0 and b", 0 waiting" in tracked.stdout, tracked.stdout + tracked.stderr
