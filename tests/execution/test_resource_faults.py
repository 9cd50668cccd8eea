"""A results folder on a full disk: `launch` stops with one line naming the place (exit 1), leaves nothing
half-written, and a relaunch once there is room finishes the grid."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gridlab.errors import resource_fault
from tests.conftest import truncated_sst_copy

from .conftest import write_grid


def test_disk_errors_are_found_in_an_exception_chain():
    try:
        try:
            raise OSError(28, "No space left on device", "/results/g/models/c1/model.pt")
        except OSError as cause:
            raise RuntimeError("trial failed") from cause
    except RuntimeError as error:
        fault = resource_fault(error)
    assert fault is not None and str(fault).startswith("/results/g/models/c1/model.pt: no space left on its device")
    wrapped = OSError("[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device")
    assert str(resource_fault(wrapped, where="/results")).startswith("/results: no space left")
    assert resource_fault(OSError(2, "No such file or directory")) is None
    assert resource_fault(ValueError("no")) is None


def _tmpfs(folder: Path, options: str):
    """A tmpfs mounted at `folder` for the test (skipped where mounting needs a permission it lacks)."""
    folder.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("needs permission to mount a tmpfs (root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1.2 MB tmpfs (too small for a grid's prepared data and tracking store), grown on request."""
    yield from _tmpfs(tmp_path / "disk", "size=1200k")


@pytest.fixture
def read_only_cache(tmp_path: Path):
    """The results' data cache on a read-only tmpfs (made writable on request), the rest writable: the trials
    stop on it while Tune saves its experiment whole, so the relaunch restores the experiment."""
    yield from _tmpfs(tmp_path / "runs" / "cache", "size=64m,ro")


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_a_relaunch_finishes(small_disk: Path, tmp_path: Path, data_dir: Path):
    path = write_grid(
        tmp_path,
        results_dir=str(small_disk / "runs"),
        grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]},
        instances=64,
    )
    env = {**os.environ, "GRIDLAB_DATA": str(data_dir), "RAY_AUTH_MODE": "disabled"}
    command = [sys.executable, "-m", "gridlab", "launch", str(path)]
    full = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert full.returncode == 1, full.stdout + full.stderr
    errors = [line for line in full.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "no space left on its device" in errors[0], full.stderr
    assert "Traceback" not in full.stdout + full.stderr
    half_written = [p for p in small_disk.rglob("*") if p.name.startswith(".") and ".tmp" in p.name]
    assert half_written == []
    models = small_disk / "runs" / "g" / "models"
    for folder in models.iterdir() if models.is_dir() else []:  # a cell folder is complete or absent
        assert (folder / "metrics.json").is_file() and (folder / "model.pt").is_file(), folder

    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    relaunch = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert relaunch.returncode == 0, relaunch.stdout + relaunch.stderr
    assert len(list(models.glob("*/metrics.json"))) == 2


@pytest.mark.slow
def test_a_relaunch_trains_the_cells_a_restored_experiment_left_stopped(
    read_only_cache: Path, tmp_path: Path, data_dir: Path
):
    """Tune does not rerun a trial that ended (a disk fault ends it as reported, not as an error): the cells
    its restored experiment leaves pending train in a new one, and the relaunch finishes the grid."""
    path = write_grid(tmp_path, grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]}, instances=64)
    env = {**os.environ, "GRIDLAB_DATA": str(data_dir), "RAY_AUTH_MODE": "disabled"}
    command = [sys.executable, "-m", "gridlab", "launch", str(path)]
    stopped = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert stopped.returncode == 1 and "read-only file system" in stopped.stderr, stopped.stdout + stopped.stderr

    subprocess.run(["mount", "-o", "remount,rw", str(read_only_cache)], check=True)
    relaunch = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert relaunch.returncode == 0, relaunch.stdout + relaunch.stderr
    assert "resuming the interrupted launch launch-001" in relaunch.stdout
    assert len(list((tmp_path / "runs" / "g" / "models").glob("*/metrics.json"))) == 2


@pytest.mark.slow
def test_a_truncated_dataset_file_is_refused_in_one_line_before_any_trial(tmp_path: Path, shipped_sst: Path):
    copy = tmp_path / "data"
    train = truncated_sst_copy(shipped_sst, copy)
    path = write_grid(tmp_path, grid={"dataset": ["sst"], "encoder": ["average"], "seed": [0]})
    env = {**os.environ, "GRIDLAB_DATA": str(copy), "RAY_AUTH_MODE": "disabled"}
    refused = subprocess.run(
        [sys.executable, "-m", "gridlab", "launch", str(path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert refused.returncode == 1
    errors = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and str(train) in errors[0] and "gridlab data check sst" in errors[0], refused.stderr
    assert "running" not in refused.stdout  # no trial started
    assert not (tmp_path / "runs" / "g" / "models").exists()
