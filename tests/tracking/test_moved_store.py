"""Tracking follows the results folder: a folder copied to another disk (the first one full) keeps sending its
waiting records to the store that moved with it, whose artifact locations then name the new folder, not the
old one; and a store that never saw the journal (another machine's own) is sent every record from the first."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker, moved
from tests.execution.conftest import write_grid


def tracker_in(results: Path) -> Tracker:
    """The tracker a launch makes for grid 'g' of the results folder `results` (`execution.launch.tracker_for`)."""
    journal = TrackingJournal(results / "g" / "tracking")
    return Tracker(f"sqlite:///{results / 'mlflow.db'}", "g", journal, results / "mlartifacts", warn=print)


def trained_cell(results: Path) -> Path:
    folder = results / "g" / "models" / "abc123"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"test_accuracy": 0.8, "best_epoch": 2}))
    (folder / "history.json").write_text(json.dumps([{"epoch": e, "train_loss": 1.0 / e} for e in (1, 2)]))
    return folder


def locations(db: Path) -> list[str]:
    """Every artifact location the store holds for grid 'g': its experiment's and its runs'."""
    with sqlite3.connect(db) as connection:
        found = [row[0] for row in connection.execute("SELECT artifact_location FROM experiments WHERE name = 'g'")]
        found += [row[0] for row in connection.execute("SELECT artifact_uri FROM runs")]
    connection.close()
    return found


def test_a_results_folder_copied_to_another_disk_tracks_there(tmp_path: Path):
    old, new = tmp_path / "full-disk" / "runs", tmp_path / "bigger-disk" / "runs"
    tracker = tracker_in(old)
    launch = tracker.start_launch(pending=1)
    tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    tracker.log_epoch("abc123", 1, {"train_loss": 1.0})
    assert tracker.backlog() == 0
    # the disk fills up: the artifacts' folder can no longer be written (a file where a folder must go)
    (old / "mlartifacts").mkdir(parents=True, exist_ok=True)
    (old / "mlartifacts" / "g").write_text("no space left")
    tracker.log_epoch("abc123", 2, {"train_loss": 0.5})
    tracker.finish_cell("abc123", {"test_accuracy": 0.8, "best_epoch": 2}, trained_cell(old))
    tracker.end_launch(launch, 1, 0)
    stuck = tracker.backlog()
    assert stuck == 2  # the finish and the launch's end
    run = tracker.run_id("abc123")
    assert tracker.client.get_run(run).info.status == "RUNNING"

    shutil.copytree(old.parent, new.parent)
    (new / "mlartifacts" / "g").unlink()  # the new disk has room
    shutil.rmtree(old.parent)  # nothing may go to the old disk any more

    # a later process on the new disk: the same store (it moved with the folder), so the same records wait
    sent = subprocess.run(
        [sys.executable, "-m", "gridlab", "track", str(write_grid(new.parent))], capture_output=True, text=True
    )
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert f"tracking: {stuck} records sent to sqlite:///{new / 'mlflow.db'}, 0 waiting" in sent.stdout, sent.stdout
    moved = tracker_in(new)
    assert moved.backlog() == 0
    client = moved.client
    assert client.get_run(run).info.status == "FINISHED"
    assert [(m.step, m.value) for m in client.get_metric_history(run, "train_loss")] == [(1, 1.0), (2, 0.5)]
    assert {a.path for a in client.list_artifacts(run)} == {"metrics.json", "history.json"}
    assert (new / "mlartifacts" / "g" / run / "artifacts" / "metrics.json").is_file()
    assert all(location.startswith(new.as_uri()) for location in locations(new / "mlflow.db")), locations(
        new / "mlflow.db"
    )
    assert not old.parent.exists()
    launches = client.search_runs([moved.experiment_id], "tags.`gridlab.kind` = 'launch'")
    assert [r.info.status for r in launches] == ["FINISHED"]


def test_a_store_that_never_saw_the_journal_gets_every_record(tmp_path: Path):
    """The results folder in object storage, relaunched on a machine whose own sqlite store is empty: the
    journal's count belongs to the first machine's store, so the new one is sent everything."""
    first = tracker_in(tmp_path / "runs")
    launch = first.start_launch(pending=1)
    first.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    first.log_epoch("abc123", 1, {"train_loss": 1.0})
    trained_cell(tmp_path / "second-machine" / "runs")  # the model, which the second machine pulls
    first.finish_cell("abc123", {"test_accuracy": 0.8, "best_epoch": 2}, trained_cell(tmp_path / "runs"))
    first.end_launch(launch, 1, 0)
    assert first.deliver() == 0

    # the second machine's mirror: the grid's folder as the object store holds it, and no store of its own
    second_mirror = tmp_path / "second-machine" / "runs"
    shutil.copytree(tmp_path / "runs" / "g" / "tracking", second_mirror / "g" / "tracking")
    second = tracker_in(second_mirror)
    assert second.backlog() == 6  # launch, cell, 2 x metrics, finish, end: not "0 waiting"
    before = second.journal.count()
    second.log_epoch("abc123", 3, {"summary.x": 1.0})  # as `summarize` logs a cell's summary
    assert second.written_since(before) == 1
    assert second.deliver() == 0 and second.skipped() == 0
    run = second.client.search_runs([second.experiment_id], "tags.cell_id = 'abc123'")[0]
    assert run.info.status == "FINISHED" and run.info.run_id != first.run_id("abc123")
    assert run.data.metrics["test_accuracy"] == 0.8 and run.data.params == {"encoder": "lstm"}
    history = second.client.get_metric_history(run.info.run_id, "train_loss")
    assert sorted((m.step, m.value) for m in history) == [(1, 1.0), (2, 0.5)]  # epoch 2 from the history


def test_a_count_that_meets_another_journal_skips_none_of_it(tmp_path: Path):
    """Object storage holds sent.json as soon as it is written and the journal only once a command ends: after
    a killed launch, a second machine tracking to the same server meets the first one's count beside a
    journal of its own, none of whose records the server has seen."""
    shared = f"sqlite:///{tmp_path / 'server.db'}"  # a tracking server both machines reach
    first = Tracker(shared, "g", TrackingJournal(tmp_path / "first" / "g" / "tracking"), warn=print)
    launch = first.start_launch(pending=1)
    first.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    first.log_epoch("abc123", 1, {"train_loss": 1.0})
    assert first.deliver() == 0
    (tmp_path / "second" / "g" / "tracking").mkdir(parents=True)
    shutil.copy(first.journal.sent_file, tmp_path / "second" / "g" / "tracking")  # the count, not the journal

    second = Tracker(shared, "g", TrackingJournal(tmp_path / "second" / "g" / "tracking"), warn=print)
    launch = second.start_launch(pending=1)
    second.cell_run("def456", {"encoder": "gru"}, {"dataset": "sst"}, launch)
    second.log_epoch("def456", 1, {"train_loss": 0.9})
    assert second.deliver() == 0 and second.skipped() == 0
    run = second.client.search_runs([second.experiment_id], "tags.cell_id = 'def456'")[0]
    assert run.data.metrics == {"train_loss": 0.9} and run.data.params == {"encoder": "gru"}


def test_only_a_moved_results_folder_is_re_rooted():
    new = "file:///big/runs/mlartifacts/g"
    assert moved("file:///full/runs/mlartifacts/g", new)
    assert not moved(new, new)
    assert not moved("file:///home/me/mlruns/1", new)  # an experiment whose artifacts live elsewhere
    assert not moved("s3://bucket/mlartifacts/g", new)
