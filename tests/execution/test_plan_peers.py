"""A grid-scope analysis is planned through its declaration's `peers` rule, never by name: a cell's rows wait
until each of its peers has finished training, compare it with the trained ones only, and analyses with
other peers go in jobs of their own. Each per-model analysis is a job of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridlab.execution import plan
from gridlab.grid.expand import ExpandedGrid, expand
from gridlab.grid.load import load_grid_file
from tests.execution.conftest import write_grid

SEEDS = [0, 1, 2]


def seeded_grid(tmp_path: Path) -> ExpandedGrid:
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": SEEDS},
        analyses={"permutation": {"n": 5}, "seed_variance": {}},
        instances=64,
        shard_size=32,
    )
    return expand(load_grid_file(path), str(path), check_data=False)


def with_states(monkeypatch: pytest.MonkeyPatch, states: dict[str, str]) -> None:
    """Cells in the given training states (no models on disk), each with 64 test rows."""

    class Folder:
        def __init__(self, cell_id: str):
            self.cell_id = cell_id

        def state(self) -> str:
            return states[self.cell_id]

    class Store:
        def __init__(self, root: Path):
            pass

        def cell(self, cell_id: str) -> Folder:
            return Folder(cell_id)

    monkeypatch.setattr(plan, "ModelStore", Store)
    monkeypatch.setattr(plan, "rows_in_test_split", lambda workspace, cell_id: 64)


def test_a_grid_scope_analysis_waits_for_its_peers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    grid = seeded_grid(tmp_path)
    first, second, third = (c.id for c in sorted(grid.cells, key=lambda c: c.config.seed))
    with_states(monkeypatch, {first: "trained", second: "trained", third: "pending"})
    jobs, _ = plan.plan_jobs(grid)
    assert {(j.cell_id, tuple(j.analyses), j.peers) for j in jobs} == {
        (first, ("permutation",), ()),
        (second, ("permutation",), ()),
    }

    with_states(monkeypatch, {first: "trained", second: "trained", third: "failed"})
    jobs, _ = plan.plan_jobs(grid)
    assert len(jobs) == 4  # two cells, two shards each: one job holds both analyses
    assert {(j.cell_id, tuple(j.analyses), j.peers) for j in jobs} == {
        (first, ("permutation", "seed_variance"), (second,)),
        (second, ("permutation", "seed_variance"), (first,)),
    }


def test_analyses_with_other_peers_get_jobs_of_their_own():
    analyses = {"plain": {}, "by_seed": {}, "by_encoder": {"k": 1}}
    peers = {"by_seed": ("b",), "by_encoder": ("c", "d")}
    assert plan._by_peers(analyses, peers) == [
        (("b",), {"plain": {}, "by_seed": {}}),
        (("c", "d"), {"by_encoder": {"k": 1}}),
    ]
    assert plan._by_peers({"plain": {}}, {}) == [((), {"plain": {}})]


def test_each_per_model_analysis_is_a_job_of_its_own_ahead_of_the_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Adversaries trained in one job would run one after another on one actor, and a kill would cost them all."""
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        analyses={"permutation": {"n": 5}, "attention_ablation": {}, "adversarial_model": {"epochs": 1}},
        instances=64,
        shard_size=32,
    )
    grid = expand(load_grid_file(path), str(path), check_data=False)
    (cell,) = grid.cells
    with_states(monkeypatch, {cell.id: "trained"})
    jobs, existing = plan.plan_jobs(grid)
    assert [(tuple(j.analyses), j.shard.index) for j in jobs] == [
        (("attention_ablation",), 0),
        (("adversarial_model",), 0),
        (("permutation",), 0),
        (("permutation",), 1),
    ]
    assert existing == 0
