"""A study's wall time from what its launches leave behind: the launch log written by `gridlab launch` and
Ray Tune's per-report results of each trial."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from gridlab.store.layout import GridWorkspace
from gridlab.studies.walltime import WallTime, wall_time
from gridlab.text import duration


def write_trial(workspace: GridWorkspace, launch: str, cell: str, seconds: list[float]) -> None:
    """A Tune result.json: one line per epoch, then the final report (test evaluation)."""
    folder = workspace.tune / launch / cell
    folder.mkdir(parents=True)
    lines = [{"epoch": i + 1, "time_this_iter_s": s, "training_iteration": i + 1} for i, s in enumerate(seconds)]
    lines.append({"final": True, "epochs_trained": len(seconds), "time_this_iter_s": 0.5})
    (folder / "result.json").write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_nothing_recorded(tmp_path: Path):
    spent = wall_time(GridWorkspace(tmp_path / "missing"))
    assert spent == WallTime(0, 0.0, 0, 0, 0, 0.0)
    assert spent.describe() == "launch wall time not recorded; no training recorded"


def test_launches_and_trials_are_summed(tmp_path: Path):
    log = [
        {"event": "start", "launch": "a", "at": 0.0},
        {"event": "end", "launch": "a", "at": 100.0, "seconds": 100.0, "completed": True},
        {"event": "start", "launch": "b", "at": 200.0},
        {"event": "end", "launch": "b", "at": 230.0, "seconds": 30.0, "completed": False},  # raised
        {"event": "start", "launch": "c", "at": 300.0},  # killed: no end line
    ]
    workspace = GridWorkspace(tmp_path)
    workspace.launch_log.write_text("\n".join(json.dumps(line) for line in log) + "\n" + '{"event": "en')
    write_trial(workspace, "launch-001", "aaa", [10.0, 20.0])
    write_trial(workspace, "launch-002", "bbb", [5.0])
    spent = wall_time(workspace)
    assert spent == WallTime(launches=2, launch_seconds=130.0, unfinished=2, trials=2, epochs=3, train_seconds=36.0)
    assert spent.describe() == "2 launches, 2m10s wall (2 unfinished); 2 trials, 3 epochs, 36s of trial time"


def test_durations():
    assert [duration(s) for s in (12.4, 250, 3725)] == ["12s", "4m10s", "1h02m05s"]


def test_a_launch_writes_what_wall_time_reads(tmp_path: Path):
    launch = pytest.importorskip("gridlab.execution.launch")
    workspace = GridWorkspace(tmp_path / "runs" / "g")
    grid = SimpleNamespace(results_dir=workspace.path, workspace=workspace)
    with launch._timed(grid) as record:
        record.update(trained=3, failed=0)
    with pytest.raises(RuntimeError), launch._timed(grid):
        raise RuntimeError("a failed launch still records its end")
    spent = wall_time(workspace)
    assert (spent.launches, spent.unfinished) == (2, 1)
    lines = [json.loads(line) for line in workspace.launch_log.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["start", "end", "start", "end"]
    assert lines[1]["trained"] == 3 and lines[1]["completed"] and not lines[3]["completed"]


def test_grids_of_one_folder_count_its_times_once():
    from gridlab.studies.fidelity_doc import wall_time_frame

    def grid(name: str, file: str, cells: int) -> SimpleNamespace:
        return SimpleNamespace(spec=SimpleNamespace(name=name), file=file, cells=[None] * cells)

    grids = [grid("jw", "grids/jw.yaml", 4), grid("jw", "grids/ablations/a.yaml", 2), grid("ss", "grids/ss.yaml", 1)]
    times = [(WallTime(2, 120.0, 0, 6, 30, 300.0), "2026-11-26")] * 2 + [(WallTime(0, 0.0, 0, 1, 5, 50.0), None)]
    frame = wall_time_frame(grids, times)
    assert frame["launches"].tolist()[::2] == [2, 0] and frame["trials"].sum() == 7  # the shared folder once
    assert frame.loc[1, "measured"] == "in grids/jw.yaml's row (one results folder)"
    assert frame.loc[1, ["launches", "trials", "epochs"]].isna().all() and frame.loc[1, "cells"] == 2
    assert frame.loc[2, "measured"] == "–"
