"""The one results object: a folder here and a bucket are held the same way, and only the bucket's store moves
anything (its local copy comes down at a command's start and what was appended goes up at its end)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from pyarrow import fs as pafs

from gridlab.store import atomic
from gridlab.store.layout import TUNE_CHECKPOINT
from gridlab.store.store import Store
from tests.object_store import ObjectStore
from tests.test_imports import import_graph


def test_no_package_outside_the_store_reaches_the_mirror_behind_it():
    graph = import_graph()
    assert "gridlab.store.remote" in graph["gridlab.store.store"]  # so the check below reads the right name
    outside = sorted(m for m, names in graph.items() if "gridlab.store.remote" in names and ".store." not in m)
    assert outside == []


def test_a_folder_is_its_own_copy_and_nothing_moves(tmp_path: Path):
    store = Store.of(tmp_path / "runs")
    assert not store.remote and store.local == tmp_path / "runs" and store.uri is None
    assert store.grid("g").summary == tmp_path / "runs/g/summary.parquet"
    store.sync("g")
    store.upload_pending("g")
    store.activate()
    assert not (tmp_path / "runs").exists()  # nothing was brought down or created
    path = store.grid("g").models / "c1"
    assert store.where(path) == path and store.key(path) == str(path)
    assert Store.portable(path) == str(path) and Store.resolved(str(path)) == path
    filesystem, workspace = store.in_place("g")
    assert isinstance(filesystem, pafs.LocalFileSystem) and workspace.path == (tmp_path / "runs/g").resolve()


def test_local_subfolders_by_prefix(tmp_path: Path):
    for name in (f"{TUNE_CHECKPOINT}000002", f"{TUNE_CHECKPOINT}000001", "params.json"):
        (tmp_path / name).mkdir()
    with Store.subfolders(tmp_path, TUNE_CHECKPOINT) as folders:
        assert [f.name for f in folders] == [f"{TUNE_CHECKPOINT}000001", f"{TUNE_CHECKPOINT}000002"]
    with Store.subfolders(tmp_path / "absent", TUNE_CHECKPOINT) as folders:
        assert folders == []


def test_a_bucket_is_synced_through_its_local_copy(object_store: ObjectStore, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("GRIDLAB_MIRRORS", "{}")  # restored after the test: `sync` activates the copy
    uri = object_store.uri("runs")
    store = Store.of(uri)
    assert store.remote and store.uri == uri
    assert store.local == Path(os.environ["GRIDLAB_MIRROR_DIR"]) / "s3" / object_store.bucket / "runs"
    assert pickle.loads(pickle.dumps(store)) == store  # what an analysis actor is given

    store.sync("g")  # activates the copy: what is published there is uploaded
    atomic.write_text(store.grid("g").summary, "rows")
    store.grid("g").launch_log.write_text("{}\n")  # appended to, not published
    trial = store.grid("g").next_tune_experiment() / "c1"
    atomic.write_text(trial / f"{TUNE_CHECKPOINT}000001" / "state", "epoch 1")  # Tune's own, left in the bucket
    store.upload_pending("g")
    filesystem, workspace = store.in_place("g")
    assert filesystem.get_file_info(workspace.summary.as_posix()).size == 4
    assert store.where(store.grid("g").summary) == f"{uri}/g/summary.parquet"
    assert Store.portable(store.grid("g").summary) == f"{uri}/g/summary.parquet"
    assert Store.resolved(uri) == store.local
    assert Store.portable_tracking_uri(f"sqlite:///{store.local}/mlflow.db") == f"sqlite:///{uri}/mlflow.db"

    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("GRIDLAB_MIRROR_DIR", str(elsewhere))
    other = Store.of(uri)
    assert other.local.is_relative_to(elsewhere)
    other.sync("g")
    assert other.grid("g").summary.read_text() == "rows"
    assert other.grid("g").launch_log.read_text() == "{}\n"
    assert not other.grid("g").tune_results() and not any(other.grid("g").tune.rglob("state"))
    with Store.subfolders(store.where(trial), TUNE_CHECKPOINT) as folders:
        assert [(f / "state").read_text() for f in folders] == ["epoch 1"]  # a temporary copy, for the block
