"""When a launch queues analysis shards during training: a model's own when its trial completes, and those of the
cells trained before the experiment once its first trial has started (so they use the CPUs the trials leave
free), each only once, and nothing from a callback restored with an experiment (it has no dispatcher)."""

from __future__ import annotations

import pickle

from gridlab.execution import launch as launch_module
from gridlab.execution.launch import AnalyseWhenTrained


class RecordingDispatcher:
    def __init__(self):
        self.submitted: list[list[str]] = []
        self.pumps = 0

    def submit(self, jobs: list[str]) -> int:
        self.submitted.append(jobs)
        return len(jobs)

    def pump(self) -> None:
        self.pumps += 1


class Trial:
    def __init__(self, cell_id: str):
        self.config = {"trial": {"cell_id": cell_id}}


def planned_for(monkeypatch) -> list[set[str]]:
    """Replaces `plan_jobs` by one that names the cells it was asked for, and records each request."""
    asked: list[set[str]] = []

    def plan_jobs(grid, only=None, cell_ids=None):
        asked.append(set(cell_ids))
        return sorted(cell_ids), 0

    monkeypatch.setattr(launch_module, "plan_jobs", plan_jobs)
    return asked


def test_the_cells_trained_before_are_queued_once_when_the_first_trial_starts(monkeypatch):
    asked = planned_for(monkeypatch)
    dispatcher = RecordingDispatcher()
    callback = AnalyseWhenTrained(grid=object(), dispatcher=dispatcher, trained_before={"old-a", "old-b"})

    callback.on_trial_start(0, [], Trial("new-1"))
    callback.on_trial_start(1, [], Trial("new-2"))

    assert asked == [{"old-a", "old-b"}]
    assert dispatcher.submitted == [["old-a", "old-b"]]


def test_a_completed_trial_queues_its_own_cell(monkeypatch):
    asked = planned_for(monkeypatch)
    monkeypatch.setattr(launch_module, "cell_id_of", lambda trial: trial.config["trial"]["cell_id"])
    dispatcher = RecordingDispatcher()
    callback = AnalyseWhenTrained(grid=object(), dispatcher=dispatcher, trained_before=set())

    callback.on_trial_start(0, [], Trial("new-1"))
    callback.on_trial_complete(3, [], Trial("new-1"))

    assert asked == [{"new-1"}]
    assert dispatcher.submitted == [["new-1"]]


def test_a_restored_callback_queues_nothing(monkeypatch):
    asked = planned_for(monkeypatch)
    callback = AnalyseWhenTrained(grid=object(), dispatcher=RecordingDispatcher(), trained_before={"old-a"})

    restored = pickle.loads(pickle.dumps(callback))
    restored.on_trial_start(0, [], Trial("new-1"))
    restored.on_trial_complete(1, [], Trial("new-1"))
    restored.on_step_end(2, [])

    assert asked == []
    assert restored.dispatcher is None and restored.trained_before == set()
