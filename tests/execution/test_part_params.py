"""A part records the analysis parameters its rows were computed with and the test instances its shard covers,
and a relaunch whose grid gives other parameters, or cuts other shards, is refused (exit 2) rather than skipping
the old parts as if they were the new grid's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import BadInput
from gridlab.execution.estimate import estimate
from gridlab.execution.plan import check_part_params, check_part_shards, reusable_parts
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.results.parts import copy_part, part_params, part_shard, with_params, write_part
from gridlab.results.shards import Shard
from tests.execution.conftest import write_grid

SETTINGS = dict(grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]}, instances=32, shard_size=32)


def grid_with(tmp_path: Path, n: int):
    path = write_grid(tmp_path, analyses={"permutation": {"n": n}}, **SETTINGS)
    return path, expand(load_grid_file(path), str(path), check_data=False)


def test_parts_of_other_parameters_are_refused_and_the_rest_pass(tmp_path: Path):
    _, grid = grid_with(tmp_path, 5)
    [cell] = grid.cells
    check_part_params(grid)  # nothing written yet
    table = pa.table({"x": [1]})
    write_part(grid.workspace.part("permutation", cell.id, 0), with_params(table, {"n": 5}))
    write_part(grid.workspace.part("permutation", cell.id, 1), table)  # written before parts kept parameters
    write_part(grid.workspace.part("permutation", "0123456789ab", 0), with_params(table, {"n": 9}))  # not this grid's
    check_part_params(grid)
    assert part_params(grid.workspace.part("permutation", cell.id, 0)) == {"n": 5}

    _, changed = grid_with(tmp_path, 7)
    with pytest.raises(
        BadInput, match=r"g\.yaml: analyses\.permutation: the parts in .* were computed with \{'n': 5\}"
    ):
        check_part_params(changed)
    check_part_params(changed, only=["importance_correlation"])  # the other analyses' parts are not its concern


def test_a_parameter_a_part_does_not_record_counts_as_its_default(tmp_path: Path):
    """A part written before a parameter existed was computed as its default computes: a grid that keeps the
    default passes, one that sets another value (attention_ablation's beam search, greedy parts) is refused."""
    settings = dict(grid={"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]}, shard_size=32)
    greedy = {"modes": ["uniform"], "han_levels": "both"}  # what a part recorded before `beam_size` existed

    def grid_of(params: dict):
        path = write_grid(tmp_path, analyses={"attention_ablation": params}, **settings)
        return expand(load_grid_file(path), str(path), check_data=False)

    grid = grid_of({"modes": ["uniform"]})
    [cell] = grid.cells
    write_part(grid.workspace.part("attention_ablation", cell.id, 0), with_params(pa.table({"x": [1]}), greedy))
    check_part_params(grid)
    check_part_params(grid_of({"modes": ["uniform"], "beam_size": 1}))
    with pytest.raises(BadInput, match=r"computed with \{.*'beam_size': 1\}.*the grid now gives \{.*'beam_size': 5\}"):
        check_part_params(grid_of({"modes": ["uniform"], "beam_size": 5}))


def test_parts_cut_from_another_sample_are_refused(tmp_path: Path):
    """Another `instances` (a grid of the same name, or an edited one) cuts other test instances into shards:
    its parts must not stand beside the new cut's."""
    _, grid = grid_with(tmp_path, 5)  # instances 32 in shards of 32
    [cell] = grid.cells
    folder = grid.workspace.models / cell.id
    folder.mkdir(parents=True)
    for name, content in (("metrics.json", {}), ("model.pt", {}), ("data.json", {"rows": {"test": 100}})):
        (folder / name).write_text(json.dumps(content))
    part = grid.workspace.part("permutation", cell.id, 0)
    write_part(part, with_params(pa.table({"x": [1]}), {"n": 5}, {"start": 0, "stop": 32, "population": 32}))
    check_part_shards(grid)  # the same cut
    assert part_shard(part) == {"start": 0, "stop": 32, "population": 32}

    path = write_grid(tmp_path, analyses={"permutation": {"n": 5}}, **{**SETTINGS, "instances": 64})
    wider = expand(load_grid_file(path), str(path), check_data=False)
    with pytest.raises(BadInput, match=r"holds test instances 0-32 of a sample of 32; the grid now cuts 64 in shards"):
        check_part_shards(wider)
    check_part_shards(wider, only=["importance_correlation"])  # the other analyses' parts are not its concern


def test_a_copied_cell_reuses_the_parts_its_grid_computed_as_this_one_would(tmp_path: Path):
    """An ablation grid that copies a paper grid's cell takes the paper grid's parts computed with its own
    parameters over its own shards, under its own name; a part of another cut, other parameters or no record of
    either is computed again."""

    def grid_of(name: str, n: int, instances: int = 32):
        path = write_grid(
            tmp_path, name=name, analyses={"permutation": {"n": n}}, **{**SETTINGS, "instances": instances}
        )
        return expand(load_grid_file(path), str(path), check_data=False)

    paper = grid_of("paper", 5)
    [cell] = paper.cells
    folder = paper.workspace.models / cell.id
    folder.mkdir(parents=True)
    (folder / "data.json").write_text(json.dumps({"rows": {"test": 100}}))
    rows = pa.table({"grid": ["paper", "paper"], "x": [1, 2]})
    shards = [{"start": 0, "stop": 32, "population": 32}, {"start": 32, "stop": 64, "population": 100}]
    for index, shard in enumerate(shards):
        write_part(paper.workspace.part("permutation", cell.id, index), with_params(rows, {"n": 5}, shard))

    ablation = grid_of("ablation", 5)
    [part] = reusable_parts(ablation, cell, paper.workspace)  # shard 1 is of a sample of 100
    source, target = part.source, part.target
    assert source == paper.workspace.part("permutation", cell.id, 0)
    assert target == ablation.workspace.part("permutation", cell.id, 0)
    assert (part.analysis, part.shard) == ("permutation", Shard(0, 0, 32, 32))
    assert reusable_parts(grid_of("ablation", 7), cell, paper.workspace) == []
    assert reusable_parts(grid_of("ablation", 5, instances=64), cell, paper.workspace) == []
    write_part(source, rows)  # written before parts recorded how
    assert reusable_parts(ablation, cell, paper.workspace) == []

    write_part(source, with_params(rows, {"n": 5}, shards[0]))
    pending = {cell.id: "pending"}  # a launch copies the cell with its part: no test instance left to analyse
    assert estimate(ablation, pending, copied={cell.id: "paper"}).analysis_unknown == 0
    assert estimate(grid_of("ablation", 7), pending, copied={cell.id: "paper"}).analysis_unknown == 32
    copy_part(source, target, "ablation")
    assert pq.read_table(target).to_pydict() == {"grid": ["ablation", "ablation"], "x": [1, 2]}
    assert part_params(target) == {"n": 5} and part_shard(target) == shards[0]
    assert reusable_parts(ablation, cell, paper.workspace) == []  # already here


@pytest.mark.slow
def test_a_relaunch_with_other_parameters_exits_2_and_keeps_the_parts(
    tmp_path: Path, data_dir: Path, monkeypatch, local_ray
):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    path, grid = grid_with(tmp_path, 5)
    first = CliRunner().invoke(app, ["launch", str(path)])
    assert first.exit_code == 0, first.output
    [part] = grid.workspace.parts_of("permutation")
    assert part_params(part) == {"n": 5}
    assert part_shard(part) == {"start": 0, "stop": 32, "population": 32}
    written = part.stat().st_mtime_ns

    path, _ = grid_with(tmp_path, 7)
    refused = CliRunner().invoke(app, ["launch", str(path)])
    assert refused.exit_code == 2, refused.output
    assert "analyses.permutation" in refused.output and "move that folder aside" in refused.output
    assert part.stat().st_mtime_ns == written
