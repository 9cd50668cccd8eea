"""MLflow runs as a user meets them in the UI: the experiment opens as model training, a cell's run is found
by a tag filter (not only nested under its launch), a forced retrain gets a run of its own, and the final
metrics sit at the best epoch."""

from __future__ import annotations

import json
from pathlib import Path

from gridlab.tracking.runs import Tracker


def test_runs_as_the_ui_shows_them(tmp_path: Path):
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "g", artifact_root=tmp_path / "artifacts")
    client = tracker.client
    launch = tracker.start_launch(pending=1)
    assert client.get_experiment(tracker.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"

    run = tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst", "encoder": "lstm"}, launch)
    found = client.search_runs([tracker.experiment_id], f"tags.launch = '{launch}' and tags.cell_id = 'abc123'")
    assert [r.info.run_id for r in found] == [run]
    tracker.log_epoch(run, 1, {"train_loss": 0.5})
    tracker.log_epoch(run, 2, {"train_loss": 0.4})
    folder = tmp_path / "cell"
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"test_accuracy": 0.8}))
    tracker.finish_cell(run, {"test_accuracy": 0.8, "best_epoch": 2}, folder)
    assert [m.step for m in client.get_metric_history(run, "test_accuracy")] == [2]

    tracker.supersede("abc123")
    retrain = tracker.cell_run("abc123", {"encoder": "lstm"}, {"dataset": "sst"}, launch)
    assert retrain != run and client.get_run(run).data.tags["gridlab.kind"] == "superseded"
    assert client.get_metric_history(retrain, "train_loss") == []  # nothing of the first training
