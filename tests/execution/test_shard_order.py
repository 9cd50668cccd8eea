"""Shards are cut from the analysed test rows in length order, so batches pad little: the order and its tie
rule, which rows a shard holds, the padding and encoder-pass figures a shard reports, and the refusal of a
workspace whose parts were cut in test-file order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from gridlab.data.batching import analysis_order, sample_rows, sequence_lengths
from gridlab.data.prepare import load_dataset
from gridlab.errors import GridlabError
from gridlab.execution.actors import shard_cost
from gridlab.execution.plan import ShardJob, check_shard_order, mark_shard_order
from gridlab.execution.runner import ShardOutcome, ShardRunner
from gridlab.results.shards import SPLIT, Shard, plan_shards
from gridlab.store.layout import GridWorkspace
from tests.analyses.test_registry_contract import INSTANCES, trained_store  # noqa: F401  (a module fixture)


def test_the_order_is_by_length_with_ties_by_position():
    assert analysis_order(np.array([3, 1, 3, 2, 1])).tolist() == [1, 4, 3, 0, 2]


def test_shards_carry_the_population_they_are_cut_from():
    assert plan_shards(100, 70, 32) == [Shard(0, 0, 32, 70), Shard(1, 32, 64, 70), Shard(2, 64, 70, 70)]


def test_a_shard_holds_the_shortest_instances_first_and_reports_its_padding(trained_store, tmp_path: Path):  # noqa: F811
    root, cache, identifier, _ = trained_store
    (tmp_path / "models").symlink_to(root / "models")
    runner = ShardRunner(tmp_path, root, cache, torch.device("cpu"))
    first = plan_shards(INSTANCES, None, 6)[0]
    outcome = runner.run(ShardJob("g", identifier, first, {"importance_correlation": {}}, 3))

    config = runner.load(identifier).config
    lengths = sequence_lengths(load_dataset("synthetic", root, cache, config.data).splits[SPLIT])
    shortest = analysis_order(lengths)[:6]
    rows = pd.read_parquet(outcome.paths[0])
    assert rows["instance_id"].tolist() == shortest.tolist()
    with_markers = lengths[shortest] + 2  # <sos> and <eos> are real tokens of the encoder's input
    padded = sum(3 * with_markers[i : i + 3].max() for i in (0, 3))
    assert (outcome.real_tokens, outcome.padded_tokens) == (with_markers.sum(), padded)
    assert 0 < outcome.encoder_seconds <= outcome.seconds
    assert GridWorkspace(tmp_path).shard_order.is_file()


def test_the_progress_line_gives_the_shards_cost():
    job = ShardJob("g", "1ae91328ef63", Shard(2, 64, 96, 100), {"permutation": {}})
    outcome = ShardOutcome([Path("p")], real_tokens=940, padded_tokens=1000, seconds=41.2, encoder_seconds=15.5)
    assert shard_cost(job, outcome) == (
        "; shard 2 of 1ae91328ef63: 32 instances in 41 s, padding efficiency 0.94, encoder pass 38%"
    )
    assert shard_cost(job, None) == "" and shard_cost(job, ShardOutcome([])) == ""


def test_parts_cut_in_file_order_are_refused(tmp_path: Path):
    workspace = GridWorkspace(tmp_path / "g")
    check_shard_order(workspace)  # nothing written yet: fine
    part = workspace.part("permutation", "1ae91328ef63", 0)
    part.parent.mkdir(parents=True)
    part.write_bytes(b"")
    with pytest.raises(GridlabError, match=r"analyses: these parts were cut from other test rows .* move that folder"):
        check_shard_order(workspace)
    mark_shard_order(workspace)
    check_shard_order(workspace)
    workspace.shard_order.write_text(json.dumps({"order": "length", "of": "the first `instances` rows"}))
    with pytest.raises(GridlabError, match="cut from other test rows"):
        check_shard_order(workspace)  # a mark of another layout (the split's head) is refused too


def test_the_analysed_rows_are_a_fixed_sample_of_a_larger_split(trained_store, tmp_path: Path):  # noqa: F811
    root, cache, identifier, _ = trained_store
    (tmp_path / "models").symlink_to(root / "models")
    runner = ShardRunner(tmp_path, root, cache, torch.device("cpu"))
    shard = Shard(0, 0, 5, 5)  # 5 of the split's INSTANCES rows
    outcome = runner.run(ShardJob("g", identifier, shard, {"importance_correlation": {}}, 5))
    rows = pd.read_parquet(outcome.paths[0])
    assert sorted(rows["instance_id"]) == sample_rows(INSTANCES, 5).tolist() != list(range(5))
