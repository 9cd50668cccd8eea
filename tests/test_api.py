"""`gridlab.open`: a grid's results for a notebook, from its grid file or its results folder, on disk or in S3.
Rows are written by hand on a grid expanded for real (`SyntheticGrid`): no training. What a notebook got from
`pd.read_parquet(folder)` is what these tests rule out: a column that only later parts have, dropped; a
categorical `cell` beside `cell_id`; rows of cells no longer in the grid; `mlflow.search_runs`' superseded runs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pyarrow import fs as pafs

import gridlab
from gridlab.errors import BadInput, GridlabError
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.runs import Tracker
from tests.object_store import ObjectStore
from tests.report.conftest import SyntheticGrid

SPEC = {
    "name": "notebook",
    "grid": {"dataset": ["synthetic"], "encoder": ["lstm", "average"], "seed": [0]},
    "analyses": {"permutation": {}},
}


def written(tmp_path: Path) -> SyntheticGrid:
    """Two cells, both trained. The lstm cell's two parts differ in schema (shard 1 adds `tvd_max`); the
    average cell has one part; a cell that an earlier version of the grid had left a part and a summary row."""
    grid = SyntheticGrid(tmp_path, SPEC)
    lstm, average = sorted(grid.expanded.cells, key=lambda c: c.config.encoder, reverse=True)
    grid.write_rows("permutation", lstm, [{"instance_id": 0, "tvd_median": 0.1}], shard=0)
    grid.write_rows("permutation", lstm, [{"instance_id": 1, "tvd_median": 0.2, "tvd_max": 0.9}], shard=1)
    grid.write_rows("permutation", average, [{"instance_id": 0, "tvd_median": 0.3}])
    for cell, accuracy in ((lstm, 0.8), (average, 0.7)):
        grid.write_trained(cell, test_accuracy=accuracy)
        config = grid.expanded.results_dir / "models" / cell.id / "config.json"
        config.write_text(json.dumps(cell.config.model_dump(mode="json")))
    old = grid.expanded.workspace.part("permutation", "0ldce11", 0)
    old.parent.mkdir(parents=True)
    pd.DataFrame({"cell_id": ["0ldce11"], "instance_id": [0], "tvd_median": [0.9]}).to_parquet(old)
    summary = pd.DataFrame({"cell_id": [lstm.id, average.id, "0ldce11"], "permutation.tvd_median_median": [1, 2, 3]})
    summary.to_parquet(grid.expanded.workspace.summary)
    return grid


def test_rows_unite_the_parts_schemas_by_name_for_the_current_cells_only(tmp_path: Path):
    grid = written(tmp_path)
    results = gridlab.open(grid.path)
    rows = results.rows("permutation").sort_values(["encoder", "instance_id"])
    assert "cell" not in rows.columns and "0ldce11" not in set(rows["cell_id"])
    assert list(zip(rows["encoder"], rows["tvd_median"])) == [("average", 0.3), ("lstm", 0.1), ("lstm", 0.2)]
    assert rows["tvd_max"].isna().tolist() == [True, True, False]  # null where a part lacks the column
    table = results.arrow("permutation").to_table()
    assert table.num_rows == 3 and "tvd_max" in table.schema.names
    assert pd.read_parquet(grid.expanded.workspace.analysis("permutation"))["cell"].dtype == "category"  # the trap


def test_a_column_whose_type_widened_is_promoted_and_a_conflict_is_one_line(tmp_path: Path):
    grid = SyntheticGrid(tmp_path, SPEC)
    lstm, average = grid.expanded.cells
    grid.write_rows("permutation", lstm, [{"instance_id": 0, "flipped": 1}])  # int64
    grid.write_rows("permutation", average, [{"instance_id": 0, "flipped": 0.5}])  # double
    grid.write_rows("erasure_single", lstm, [{"instance_id": 0, "frac": 0.5}])
    grid.write_rows("erasure_single", average, [{"instance_id": 0, "frac": "half"}])
    results = gridlab.open(grid.path)
    assert sorted(results.rows("permutation")["flipped"]) == [0.5, 1.0]
    with pytest.raises(GridlabError, match=r"the parts of 'erasure_single' disagree on a column: "):
        results.rows("erasure_single")


def test_cells_and_summary_are_the_grids(tmp_path: Path):
    grid = written(tmp_path)
    results = gridlab.open(grid.path)
    cells = results.cells().set_index("encoder")
    assert cells.loc["lstm", "state"] == "trained" and cells.loc["average", "test_accuracy"] == 0.7
    assert sorted(results.summary()["permutation.tvd_median_median"]) == [1, 2]


def test_a_results_folder_opens_with_the_cells_it_holds(tmp_path: Path):
    grid = written(tmp_path)
    from_folder = gridlab.open(grid.expanded.workspace.path)
    from_grid = gridlab.open(grid.path)
    assert sorted(from_folder.cells()["cell_id"]) == sorted(c.id for c in grid.expanded.cells)
    pd.testing.assert_frame_equal(from_folder.rows("permutation"), from_grid.rows("permutation"))
    with pytest.raises(BadInput, match=r"not a grid's results folder .*; the grids here: notebook$"):
        gridlab.open(grid.expanded.workspace.path.parent)


def test_an_analysis_without_rows_is_one_line_naming_those_with_rows(tmp_path: Path):
    results = gridlab.open(written(tmp_path).path)
    with pytest.raises(GridlabError, match=r"no rows of 'erasure_multi' .*\(analyses with rows here: permutation\)$"):
        results.rows("erasure_multi")


def test_runs_are_the_current_cells_current_runs(tmp_path: Path):
    """A cell retrained with --force has two runs, the first tagged superseded; a cell gone from the grid one."""
    grid = written(tmp_path)
    lstm, average = sorted(grid.expanded.cells, key=lambda c: c.config.encoder, reverse=True)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(uri, "notebook", TrackingJournal(grid.expanded.workspace.tracking))
    launch = tracker.start_launch(pending=3)
    for cell_id in (lstm.id, average.id, "0ldce11"):
        tracker.cell_run(cell_id, {}, {"dataset": "synthetic"}, launch)
    first = tracker.run_id(lstm.id)
    tracker.supersede(lstm.id)
    tracker.cell_run(lstm.id, {}, {"dataset": "synthetic"}, launch)
    assert tracker.deliver() == 0

    runs = gridlab.open(grid.path, tracking_uri=uri).runs()
    assert dict(zip(runs["tags.cell_id"], runs["run_id"])) == {
        lstm.id: tracker.run_id(lstm.id),
        average.id: tracker.run_id(average.id),
    }
    assert first not in set(runs["run_id"])


def test_runs_without_a_tracking_store_say_where_they_looked(tmp_path: Path):
    results = gridlab.open(written(tmp_path).path)
    with pytest.raises(GridlabError, match=r"no MLflow store at .*mlflow\.db .*pass tracking_uri="):
        results.runs()


def test_results_in_s3_read_where_they_are(tmp_path: Path, object_store: ObjectStore):  # noqa: F811
    grid = written(tmp_path)
    local = gridlab.open(grid.path)
    s3 = pafs.S3FileSystem(endpoint_override=object_store.endpoint.removeprefix("http://"), scheme="http")
    pafs.copy_files(
        str(grid.expanded.workspace.path),
        f"{object_store.bucket}/runs/notebook",
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=s3,
    )
    in_bucket = tmp_path / "in-bucket.yaml"
    in_bucket.write_text(yaml.safe_dump({**SPEC, "results_dir": object_store.uri("runs")}))
    for results in (gridlab.open(object_store.uri("runs/notebook")), gridlab.open(in_bucket)):
        pd.testing.assert_frame_equal(results.rows("permutation"), local.rows("permutation"))
        pd.testing.assert_frame_equal(results.cells(), local.cells())
        pd.testing.assert_frame_equal(results.summary(), local.summary())
        assert results.arrow("permutation").count_rows() == 3
    assert not (tmp_path / "mirror").exists()  # read in place, nothing mirrored
