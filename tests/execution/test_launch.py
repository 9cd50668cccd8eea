"""`gridlab launch` end to end on a local Ray (2 CPUs): real SST plus synthetic, checkpoints and metrics per
cell, one MLflow run per cell that filters by params and metrics, relaunch trains nothing, a new seed
trains only the new cells, a cell forced to NaN is reported failed while the others finish."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.data.batching import sample_rows
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file

from .conftest import write_grid

pytestmark = pytest.mark.slow

ANALYSES = {"permutation": {"n": 20}, "erasure_single": {}, "erasure_multi": {"exact_max_len": 8}}
TAGS = ("grid", "cell_id", "dataset", "encoder", "attention", "projection", "architecture", "attention_mode", "seed")


def launch(path: Path):
    result = CliRunner().invoke(app, ["launch", str(path)])
    return result


def cells(path: Path):
    return expand(load_grid_file(path), str(path)).cells


def runs(folder: Path, name: str, query: str = ""):
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'runs' / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=[name], filter_string=query, output_format="pandas")


def test_launch_trains_tracks_and_resumes_by_cell(tmp_path: Path, shipped_sst: Path, monkeypatch, local_ray):
    monkeypatch.setenv("GRIDLAB_DATA", str(shipped_sst))  # SST is read in Ray's workers: the shipped release
    path = write_grid(tmp_path, analyses=ANALYSES, instances=60, shard_size=25, analysis_batch_size=5)
    first = launch(path)
    assert first.exit_code == 0, first.output
    grid_cells = cells(path)
    assert len(grid_cells) == 4
    models = tmp_path / "runs" / "g" / "models"
    for cell in grid_cells:
        folder = models / cell.id
        assert (folder / "model.pt").is_file(), first.output
        metrics = json.loads((folder / "metrics.json").read_text())
        assert 0.0 <= metrics["test_accuracy"] <= 1.0 and metrics["best_epoch"] in (1, 2)
        assert json.loads((folder / "config.json").read_text())["cell_id"] == cell.id
        history = json.loads((folder / "history.json").read_text())
        assert [h["epoch"] for h in history] == [1, 2]
        data = json.loads((folder / "data.json").read_text())
        assert data["dataset"] == cell.config.dataset and data["vocab_size"] > 4
    assert "4 trained, 0 running, 0 failed, 0 pending" in first.output

    cell_runs = runs(tmp_path, "g", "tags.`gridlab.kind` = 'cell'")
    assert sorted(cell_runs["tags.cell_id"]) == sorted(c.id for c in grid_cells)
    assert set(cell_runs["status"]) == {"FINISHED"}
    for tag in TAGS:
        assert cell_runs[f"tags.{tag}"].notna().all(), tag
    for key in ("params.encoder", "params.train.lr", "params.model.hidden_size", "params.data.min_count"):
        assert cell_runs[key].notna().all(), key
    lstm = runs(tmp_path, "g", "params.encoder = 'lstm' and metrics.test_accuracy >= 0")
    assert sorted(lstm["tags.cell_id"]) == sorted(c.id for c in grid_cells if c.config.encoder == "lstm")
    one = cell_runs.iloc[0]
    history = mlflow.MlflowClient().get_metric_history(one["run_id"], "dev_accuracy")
    assert [m.step for m in history] == [1, 2]

    parts = sorted((tmp_path / "runs" / "g" / "analyses").rglob("*.parquet"))
    assert len(parts) == len(ANALYSES) * 4 * 3  # every analysis, every cell, shards of 25 + 25 + 10 (batches of 5)
    for analysis in ANALYSES:
        frame = pd.read_parquet(tmp_path / "runs" / "g" / "analyses" / analysis)
        assert len(frame) == 4 * 60 and set(frame["cell_id"]) == {c.id for c in grid_cells}
        for cell in grid_cells:  # a fixed sample of 60 test rows (synthetic's and SST's splits are larger)
            rows = json.loads((models / cell.id / "data.json").read_text())["rows"]["test"]
            analysed = frame[frame["cell_id"] == cell.id]["instance_id"]
            assert sorted(analysed) == sample_rows(rows, 60).tolist()
    written = {p: p.stat().st_mtime_ns for p in parts}
    summary = pd.read_parquet(tmp_path / "runs" / "g" / "summary.parquet")
    assert sorted(summary["cell_id"]) == sorted(c.id for c in grid_cells)
    for cell_id, rows in pd.read_parquet(tmp_path / "runs" / "g" / "analyses" / "permutation").groupby("cell_id"):
        recorded = summary.set_index("cell_id").loc[cell_id, "permutation.tvd_median_median"]
        assert recorded == pytest.approx(rows["tvd_median"].median())  # recomputed from the rows
    logged = runs(tmp_path, "g", "tags.`gridlab.kind` = 'cell'")
    assert logged["metrics.permutation.tvd_median_median"].notna().all()

    again = launch(path)
    assert again.exit_code == 0
    assert "nothing to train: all 4 cells of g are trained" in again.output
    assert "analyses: nothing to do (36 parts already written)" in again.output
    assert {p: p.stat().st_mtime_ns for p in parts} == written

    deleted = parts[5]
    content = pq.read_table(deleted)
    deleted.unlink()
    rewritten = launch(path)
    assert "analyses: 1 shards to run (35 parts already written)" in rewritten.output, rewritten.output
    assert pq.read_table(deleted).equals(content)  # the same rows, bit for bit
    assert {p: p.stat().st_mtime_ns for p in parts if p != deleted} == {
        p: t for p, t in written.items() if p != deleted
    }
    mtimes = {c.id: (models / c.id / "model.pt").stat().st_mtime_ns for c in grid_cells}

    # a new seed and a cell forced to produce NaN (Adam with lr 1e30 overflows in two steps)
    grid = yaml.safe_load(path.read_text())
    grid["grid"]["seed"] = [0, 1]
    grid["overrides"] = [
        {
            "when": {"dataset": "synthetic", "encoder": "average", "seed": 1},
            "set": {"train.lr": 1.0e30, "train.clip_norm": None},
        }
    ]
    path.write_text(yaml.safe_dump(grid))
    planned = CliRunner().invoke(app, ["plan", str(path)])  # the seed-1 cells: like the measured seed-0 ones
    assert "training at most " in planned.output and " of work for 4 cells" in planned.output, planned.output
    assert "analyses about " in planned.output and "for 240 test instances" in planned.output
    third = launch(path)
    assert third.exit_code == 1, third.output  # a failed cell makes the launch fail, after the others finished
    assert "8 of 8" not in third.output and "4 of 8 cells to train" in third.output
    new_cells = [c for c in cells(path) if c.config.seed == 1]
    nan_cell = next(c for c in new_cells if c.config.dataset == "synthetic" and c.config.encoder == "average")
    status = CliRunner().invoke(app, ["status", str(path)]).output
    for cell in new_cells:
        expected = "failed" if cell is nan_cell else "trained"
        assert f"│ {cell.id} " in status
        line = next(line for line in status.splitlines() if cell.id in line)
        assert f" {expected} " in line, line
    nan_line = next(line for line in status.splitlines() if nan_cell.id in line)
    assert "training loss became" in nan_line
    assert "7 trained, 1 failed, 0 pending" in status
    assert {c.id: (models / c.id / "model.pt").stat().st_mtime_ns for c in grid_cells} == mtimes  # untouched
    failed_run = runs(tmp_path, "g", f"tags.cell_id = '{nan_cell.id}'")
    assert list(failed_run["status"]) == ["FAILED"]
    assert "training loss became" in failed_run["tags.failure_reason"].iloc[0]
    assert len(runs(tmp_path, "g", "tags.`gridlab.kind` = 'cell'")) == 8


def test_a_cell_matching_a_resources_override_trains_with_its_resources(
    tmp_path: Path, data_dir: Path, monkeypatch, local_ray
):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["average", "noenc"]},
        resources={"train": {"cpu": 1}, "overrides": [{"when": {"encoder": "noenc"}, "train": {"cpu": 2}}]},
    )
    result = launch(path)
    assert result.exit_code == 0, result.output
    given = {}
    for cell in cells(path):
        metrics = json.loads((tmp_path / "runs" / "g" / "models" / cell.id / "metrics.json").read_text())
        given[cell.config.encoder] = (metrics["cpus"], metrics["gpus"])
    assert given == {"average": (1.0, 0.0), "noenc": (2.0, 0.0)}  # as Ray assigned them to each trial


def test_force_retrains_only_the_chosen_cell(tmp_path: Path, data_dir: Path, monkeypatch, local_ray):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["average", "noenc"]},
        analyses={"permutation": {"n": 5}},
        instances=32,
        shard_size=32,
    )
    assert launch(path).exit_code == 0
    first, second = cells(path)
    models = tmp_path / "runs" / "g" / "models"
    before = {c.id: (models / c.id / "model.pt").stat().st_mtime_ns for c in (first, second)}
    part = {
        c.id: tmp_path / "runs" / "g" / "analyses" / "permutation" / f"cell={c.id}" / "part-00000.parquet"
        for c in (first, second)
    }
    rows_before = {i: (p.stat().st_mtime_ns, p.read_bytes()) for i, p in part.items()}
    forced = CliRunner().invoke(app, ["launch", str(path), "--force", first.id])
    assert forced.exit_code == 0, forced.output
    assert "1 of 2 cells to train" in forced.output
    assert (models / first.id / "model.pt").stat().st_mtime_ns != before[first.id]
    assert (models / second.id / "model.pt").stat().st_mtime_ns == before[second.id]
    # the retrained model's rows are recomputed from it; the other cell's rows are left alone
    assert "folders of its analysis rows were removed" in forced.output
    assert part[first.id].stat().st_mtime_ns != rows_before[first.id][0]
    assert (part[second.id].stat().st_mtime_ns, part[second.id].read_bytes()) == rows_before[second.id]
    assert len(runs(tmp_path, "g", "tags.`gridlab.kind` = 'cell'")) == 2  # one current run per cell
    old = runs(tmp_path, "g", "tags.`gridlab.kind` = 'superseded'")  # the forced cell's first training
    new = runs(tmp_path, "g", f"tags.`gridlab.kind` = 'cell' and tags.cell_id = '{first.id}'")
    assert list(old["tags.cell_id"]) == [first.id] and old["run_id"].iloc[0] != new["run_id"].iloc[0]
    client = mlflow.MlflowClient()
    epochs = [m.step for m in client.get_metric_history(new["run_id"].iloc[0], "train_loss")]
    assert epochs == sorted(set(epochs))  # the retrain logged its own epochs, not on top of the old ones
    best = int(new["metrics.best_epoch"].iloc[0])
    assert [m.step for m in client.get_metric_history(new["run_id"].iloc[0], "test_accuracy")] == [best]
    unknown = CliRunner().invoke(app, ["launch", str(path), "--force", "abc"])
    assert unknown.exit_code == 2 and "unknown cell id 'abc'" in unknown.stderr


def test_an_analysis_chosen_at_launch_runs_alone_and_the_next_launch_adds_the_rest(
    tmp_path: Path, data_dir: Path, monkeypatch, local_ray
):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["average"]},
        analyses={"permutation": {"n": 5}, "erasure_single": {}},
        instances=32,
        shard_size=32,
    )
    analyses = tmp_path / "runs" / "g" / "analyses"
    first = CliRunner().invoke(app, ["launch", str(path), "--analysis", "permutation"])
    assert first.exit_code == 0, first.output
    assert sorted(p.name for p in analyses.iterdir() if p.is_dir()) == ["permutation"]
    (cell,) = cells(path)
    trained = (tmp_path / "runs" / "g" / "models" / cell.id / "model.pt").stat().st_mtime_ns
    rest = launch(path)
    assert rest.exit_code == 0, rest.output
    assert "nothing to train" in rest.output and "analyses: 1 shards to run (1 parts already written)" in rest.output
    assert sorted(p.name for p in analyses.iterdir() if p.is_dir()) == ["erasure_single", "permutation"]
    assert (tmp_path / "runs" / "g" / "models" / cell.id / "model.pt").stat().st_mtime_ns == trained
    summary = pd.read_parquet(tmp_path / "runs" / "g" / "summary.parquet")
    prefixes = {column.split(".")[0] for column in summary.columns if "." in column}
    assert {"permutation", "erasure_single"} <= prefixes  # the summary has both analyses
    typo = CliRunner().invoke(app, ["launch", str(path), "--analysis", "permutatoin"])
    assert typo.exit_code == 2 and "did you mean 'permutation'?" in typo.output


def test_train_only_trains_and_leaves_every_analysis_for_later(tmp_path: Path, data_dir: Path, monkeypatch, local_ray):
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["average"]},
        analyses={"permutation": {"n": 5}},
        instances=32,
        shard_size=32,
    )
    both = CliRunner().invoke(app, ["launch", str(path), "--train-only", "--analysis", "permutation"])
    assert both.exit_code == 2 and "--train-only runs no analysis" in both.output
    trained = CliRunner().invoke(app, ["launch", str(path), "--train-only"])
    assert trained.exit_code == 0, trained.output
    (cell,) = cells(path)
    assert (tmp_path / "runs" / "g" / "models" / cell.id / "model.pt").is_file()
    assert not (tmp_path / "runs" / "g" / "analyses" / "permutation").exists()
    rest = launch(path)
    assert rest.exit_code == 0, rest.output
    assert "nothing to train" in rest.output and "analyses: 1 shards to run (0 parts already written)" in rest.output


def test_a_cell_another_grid_trained_is_copied_not_trained_again(
    tmp_path: Path, data_dir: Path, monkeypatch, local_ray
):
    """Two grids of one results folder share a cell (same resolved config and seed, so the same id): the second
    copies the first's model folder and the analysis parts computed as it computes them, gets a tracking run of
    its own for it, and trains only its other cell."""
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    shared = {"dataset": ["synthetic"], "encoder": ["average"]}
    analysed = {"analyses": {"permutation": {"n": 20}}, "instances": 30}
    paper = write_grid(tmp_path, name="paper", grid={**shared, "seed": [0]}, **analysed)
    assert launch(paper).exit_code == 0
    [cell] = cells(paper)
    ablation = write_grid(tmp_path, name="ablation", grid={**shared, "seed": [0, 1]}, **analysed)
    planned = CliRunner().invoke(app, ["plan", str(ablation)])
    assert "1 of them trained by paper in this results folder: a launch copies them" in planned.output
    assert "copy from paper with 1 analysis part" in planned.output
    as_json = [
        json.loads(line) for line in CliRunner().invoke(app, ["plan", str(ablation), "--json"]).stdout.splitlines()
    ]
    assert {row["id"]: row["trained_by"] for row in as_json} == {
        c.id: "paper" if c.id == cell.id else None for c in cells(ablation)
    }

    result = launch(ablation)
    assert result.exit_code == 0, result.output
    copied = f"{cell.id}: trained by grid paper, copied (same config and seed) with 1 analysis part computed as here"
    assert copied in result.output
    assert "1 of 2 cells to train" in result.output  # the other seed only
    source, copy = (tmp_path / "runs" / name / "models" / cell.id for name in ("paper", "ablation"))
    for name in ("model.pt", "config.json", "data.json", "history.json", "metrics.json"):
        assert (copy / name).read_bytes() == (source / name).read_bytes(), name
    rows = {
        name: pd.read_parquet(tmp_path / "runs" / name / "analyses" / "permutation" / f"cell={cell.id}")
        for name in ("paper", "ablation")
    }
    assert set(rows["ablation"]["grid"]) == {"ablation"} and len(rows["ablation"]) == 30
    pd.testing.assert_frame_equal(rows["ablation"].drop(columns="grid"), rows["paper"].drop(columns="grid"))
    copied_run = runs(tmp_path, "ablation", f"tags.cell_id = '{cell.id}'")
    assert list(copied_run["status"]) == ["FINISHED"] and list(copied_run["tags.grid"]) == ["ablation"]
    assert (
        copied_run["metrics.test_accuracy"].iloc[0]
        == json.loads((source / "metrics.json").read_text())["test_accuracy"]
    )
    assert json.loads((copy / "tracking.json").read_text())["mlflow_run_id"] == copied_run["run_id"].iloc[0]
    assert copied_run["run_id"].iloc[0] != runs(tmp_path, "paper", f"tags.cell_id = '{cell.id}'")["run_id"].iloc[0]
