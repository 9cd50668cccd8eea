"""MLflow runs as a user meets them in the UI: the experiment opens as model training, a cell's run is found
by a tag filter (not only nested under its launch), a forced retrain gets a run of its own, and the final
metrics sit at the best epoch. Records go through the grid's journal: each is sent once."""

from __future__ import annotations

import json
import math
from pathlib import Path

from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker


def test_runs_as_the_ui_shows_them(tmp_path: Path):
    journal = TrackingJournal(tmp_path / "tracking")
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", journal, artifact_root=tmp_path / "artifacts")
    client = tracker.client
    launch = tracker.start_launch(pending=1)
    assert client.get_experiment(tracker.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"

    tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst", "encoder": "lstm"}, launch)
    run = tracker.run_id("abc123")
    parent = client.search_runs([tracker.experiment_id], "tags.`gridlab.kind` = 'launch'")[0].info.run_id
    found = client.search_runs([tracker.experiment_id], f"tags.launch = '{parent}' and tags.cell_id = 'abc123'")
    assert [r.info.run_id for r in found] == [run]
    tracker.log_epoch("abc123", 1, {"train_loss": 0.5})
    tracker.log_epoch("abc123", 2, {"train_loss": 0.4})
    folder = tmp_path / "cell"
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"test_accuracy": 0.8}))
    history = [{"epoch": e, "train_loss": 1.0 / e, "accuracy": 0.5 + e / 10} for e in (1, 2, 3)]
    (folder / "history.json").write_text(json.dumps(history))
    tracker.finish_cell("abc123", {"test_accuracy": 0.8, "best_epoch": 2}, folder)
    assert [m.step for m in client.get_metric_history(run, "test_accuracy")] == [2]
    # epoch 3 was reported while no driver logged it: the history on disk fills it in, nothing twice
    assert [(m.step, m.value) for m in client.get_metric_history(run, "train_loss")] == [(1, 0.5), (2, 0.4), (3, 1 / 3)]
    assert [m.step for m in client.get_metric_history(run, "dev_accuracy")] == [3]
    assert client.get_run(run).info.status == "FINISHED"
    assert tracker.backlog() == 0 and journal.sent(tracker.store) == 6  # launch, cell, 3 x metrics, finish

    tracker.supersede("abc123")
    tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    retrain = tracker.run_id("abc123")
    assert retrain != run and client.get_run(run).data.tags["gridlab.kind"] == "superseded"
    assert client.get_metric_history(retrain, "train_loss") == []  # nothing of the first training
    assert tracker.deliver() == 0
    assert [m.value for m in client.get_metric_history(run, "train_loss")] == [0.5, 0.4, 1 / 3]  # sent once each


def test_a_record_naming_an_unknown_cell_is_skipped_not_retried(tmp_path: Path):
    """A cell's run needs the cell's record (its params); a launch's run is made where it is missing (a launch
    begun on another machine, whose start went to that machine's store, ends in this one)."""
    warnings: list[str] = []
    journal = TrackingJournal(tmp_path / "tracking")
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", journal, warn=warnings.append)
    tracker.log_epoch("never-opened", 1, {"train_loss": 0.5})
    tracker.end_launch("begun-elsewhere", 1, 0)
    assert tracker.deliver() == 0 and tracker.skipped() == 1
    assert len(warnings) == 1 and "skipped" in warnings[0] and "never-opened" in warnings[0]
    launch = tracker.client.search_runs([tracker.experiment_id], "tags.`gridlab.launch_key` = 'begun-elsewhere'")
    assert [run.info.status for run in launch] == ["FINISHED"]


def test_a_launch_begun_before_the_journal_resumes_with_it(tmp_path: Path):
    """A Tune experiment saved by a gridlab that sent records at once holds a GridProgress with a tracker
    without a journal and a launch named by its MLflow run id; restored, it journals and ends that run."""
    from types import SimpleNamespace

    from gridlab.execution.progress import GridProgress

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = Tracker(uri, "g", TrackingJournal(tmp_path / "unused")).client
    experiment = client.create_experiment("g")
    parent = client.create_run(experiment, tags={"gridlab.kind": "launch"}).info.run_id
    old_tracker = SimpleNamespace(tracking_uri=uri, experiment="g", artifact_root=None, _client=None)
    models = tmp_path / "runs" / "g" / "models"
    state = {
        "grid": "g",
        "models": models,
        "tracker": old_tracker,
        "parent_run": parent,
        "cells": {},
        "already_trained": 0,
        "emit": print,
        "status": {},
        "runs": {"abc123": "0" * 32},
        "started": 0.0,
    }
    progress = GridProgress.__new__(GridProgress)
    progress.__setstate__(state)
    # no cell counts as opened: each is recorded again, and finds its run by its tag in whichever store it meets
    assert progress.launch_key == parent and progress.opened == set()
    assert progress.tracker.journal.folder == tmp_path / "runs" / "g" / "tracking"
    progress.tracker.end_launch(progress.launch_key, 1, 0)
    assert progress.tracker.deliver() == 0
    assert client.get_run(parent).info.status == "FINISHED"


def test_a_cell_published_without_its_finish_is_finished_by_the_next_launch(tmp_path: Path):
    # A driver killed after publishing a cell and before recording its finish leaves the cell trained (no
    # launch trains it again) and its run open: `finish_published` closes it from the folder's metrics.json.
    journal = TrackingJournal(tmp_path / "tracking")
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", journal, artifact_root=tmp_path / "artifacts")
    launch = tracker.start_launch(pending=3)
    folders = {}
    for cell_id in ("lost", "finished", "unpublished"):
        tracker.cell_run(cell_id, {}, {}, launch)
        folders[cell_id] = tmp_path / cell_id
        folders[cell_id].mkdir()
        metrics = {"test_accuracy": 0.8, "best_epoch": 2, "epochs_trained": 3, "device": "cpu", "final": True}
        (folders[cell_id] / "metrics.json").write_text(json.dumps(metrics))
    tracker.finish_cell("finished", {"test_accuracy": 0.7, "best_epoch": 1}, folders["finished"])
    published = {cell_id: folders[cell_id] for cell_id in ("lost", "finished")}

    assert tracker.finish_published(published) == ["lost"]
    status = {c: tracker.client.get_run(tracker.run_id(c)).info.status for c in folders}
    assert status == {"lost": "FINISHED", "finished": "FINISHED", "unpublished": "RUNNING"}
    lost = tracker.client.get_run(tracker.run_id("lost")).data.metrics
    assert lost == {"test_accuracy": 0.8, "best_epoch": 2, "epochs_trained": 3}
    assert [m.value for m in tracker.client.get_metric_history(tracker.run_id("finished"), "test_accuracy")] == [0.7]
    assert tracker.finish_published(published) == []  # once


def test_a_restored_launch_counts_the_cells_published_since_it_was_saved(tmp_path: Path):
    # Tune saves the callback with its experiment now and then: a cell published after the last save was
    # restored as pending, and a resumed launch printed "0 trained ... 2 pending" for cells long trained.
    from gridlab.execution.progress import GridProgress
    from gridlab.store.layout import CellFiles

    journal = TrackingJournal(tmp_path / "tracking")
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", journal, artifact_root=tmp_path / "artifacts")
    models = tmp_path / "models"
    cells = {cell_id: {} for cell_id in ("published", "running", "failed")}
    progress = GridProgress("g", models, tracker, tracker.start_launch(pending=3), cells, 0, print)
    progress.status.update(running="running", failed="failed")
    state = progress.__getstate__()
    for name in (CellFiles.MODEL, CellFiles.METRICS):  # published after the save
        (models / "published").mkdir(parents=True, exist_ok=True)
        (models / "published" / name).write_text("{}")
    restored = GridProgress.__new__(GridProgress)
    restored.__setstate__(state)
    assert restored.status == {"published": "trained", "running": "running", "failed": "failed"}


def test_a_nan_metric_is_left_out(tmp_path: Path):
    """A number nothing measured is no metric: MLflow's SQL store would keep a NaN as 0 with a flag."""
    journal = TrackingJournal(tmp_path / "tracking")
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", journal, artifact_root=tmp_path / "artifacts")
    launch = tracker.start_launch(pending=1)
    tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    tracker.log_epoch("abc123", 0, {"erasure_multi.flipped_attention": 0.0, "erasure_multi.flipped_exact": math.nan})
    tracker.log_epoch("abc123", 0, {"erasure_multi.frac_exact_median": math.nan})  # nothing to record
    assert tracker.deliver() == 0 and journal.sent(tracker.store) == 3  # launch, cell, one metrics record
    metrics = tracker.client.get_run(tracker.run_id("abc123")).data.metrics
    assert metrics == {"erasure_multi.flipped_attention": 0.0}
