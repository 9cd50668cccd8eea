"""Training comes first: while a launch's trials run or wait, the analysis actors take only the CPUs they leave
(on 2 cores an adversary job would hold one for tens of minutes while trials queue behind it), an actor that
finishes a shard then gives its CPU back, and once training is over the whole cluster is the analyses'."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridlab.execution import actors
from gridlab.execution.actors import AnalysisDispatcher
from gridlab.execution.launch import training_demand
from gridlab.execution.plan import ShardJob
from gridlab.execution.runner import ShardOutcome
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.results.shards import Shard
from tests.execution.conftest import write_grid


class FakeActor:
    """Records the shards it is given; each call returns a token standing for Ray's object ref."""

    def __init__(self, started: list[FakeActor]):
        started.append(self)
        self.jobs: list[ShardJob] = []
        self.run = self

    def remote(self, job: ShardJob) -> tuple[FakeActor, int]:
        self.jobs.append(job)
        return (self, len(self.jobs))


class FakeRay:
    """A 2-CPU cluster whose finished shards are those the test names in `ready`."""

    def __init__(self):
        self.ready: list = []
        self.killed: list[FakeActor] = []

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def wait(self, refs: list, num_returns: int, timeout: float) -> tuple[list, list]:
        ready = [r for r in refs if r in self.ready][:num_returns]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref) -> ShardOutcome:
        self.ready.remove(ref)
        return ShardOutcome([])

    def kill(self, actor: FakeActor) -> None:
        self.killed.append(actor)


@pytest.fixture
def dispatcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[AnalysisDispatcher, FakeRay, list]:
    path = write_grid(tmp_path, grid={"dataset": ["synthetic"], "encoder": ["average"]}, analyses={"permutation": {}})
    grid = expand(load_grid_file(path), str(path), check_data=False)
    fake, started = FakeRay(), []
    monkeypatch.setattr(actors, "ray", fake)
    monkeypatch.setattr(AnalysisDispatcher, "_new_actor", lambda self: FakeActor(started))
    return AnalysisDispatcher(grid, emit=lambda line: None), fake, started


def shard_jobs(count: int) -> list[ShardJob]:
    return [ShardJob("g", "cell", Shard(i, 32 * i, 32 * i + 32, 32 * count), {"permutation": {}}) for i in range(count)]


def test_no_actor_starts_in_the_cpus_kept_for_trials(dispatcher):
    analyses, _, started = dispatcher
    analyses.leave_to_training(2.0, 0.0)  # two 1-CPU trials run or wait on 2 CPUs
    analyses.submit(shard_jobs(3))
    assert started == []
    analyses.leave_to_training(1.0, 0.0)  # one trial left
    analyses.pump()
    assert len(started) == 1
    analyses.leave_to_training(0.0, 0.0)
    analyses.pump()
    assert len(started) == 2 and sum(len(a.jobs) for a in started) == 2


def test_an_actor_that_finishes_while_trials_wait_gives_its_cpu_back(dispatcher):
    analyses, fake, started = dispatcher
    analyses.submit(shard_jobs(3))
    assert [len(a.jobs) for a in started] == [1, 1]
    analyses.leave_to_training(1.0, 0.0)  # a trial now waits for a CPU
    fake.ready.append((started[0], 1))
    analyses.pump()
    assert fake.killed == [started[0]] and len(started[0].jobs) == 1  # released, not given the third shard
    analyses.leave_to_training(0.0, 0.0)
    analyses.pump()
    assert len(started) == 3 and len(started[2].jobs) == 1


def test_once_nothing_is_kept_one_actor_runs_even_on_a_cluster_smaller_than_it_asks(dispatcher):
    analyses, fake, started = dispatcher
    fake.cluster_resources = lambda: {"CPU": 0.5}
    analyses.submit(shard_jobs(2))
    assert len(started) == 1


class FakeTrial:
    def __init__(self, status: str, cpus: float, gpus: float = 0.0):
        self.status = status
        self.config = {"trial": {"cell_id": "c", "cpus": cpus, "gpus": gpus}}


def test_trials_that_run_wait_or_pause_keep_their_resources_and_finished_ones_none():
    trials = [
        FakeTrial("RUNNING", 1.0, 0.5),
        FakeTrial("PENDING", 2.0),
        FakeTrial("PAUSED", 1.0),
        FakeTrial("TERMINATED", 4.0, 1.0),
        FakeTrial("ERROR", 4.0),
    ]
    assert training_demand(trials) == (4.0, 0.5)
    assert training_demand([]) == (0.0, 0.0)
