"""`gridlab plan`'s estimate of the work left, from what the results folder measured: a cell to train costs
its epochs at the median epoch time of its likes (same dataset, encoder and architecture first), and work
with nothing measured like it is counted, never guessed."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gridlab.execution.estimate import Estimate, estimate
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.store.timings import record_model, record_shard


def test_a_cell_to_train_costs_its_epochs_at_its_likes_pace(tmp_path: Path):
    spec = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["sst", "synthetic"], "encoder": ["lstm"], "seed": [0, 1]},
        "train": {"epochs": 10},
    }
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(spec))
    grid = expand(load_grid_file(tmp_path / "g.yaml"), str(tmp_path / "g.yaml"), check_data=False)
    trained = next(c for c in grid.cells if c.config.dataset == "sst" and c.config.seed == 0)
    trial = grid.workspace.tune / "launch-001" / trained.id
    trial.mkdir(parents=True)
    reports = [{"epoch": e, "time_this_iter_s": t} for e, t in ((1, 30.0), (2, 10.0), (3, 12.0))]
    trial.joinpath("result.json").write_text("\n".join(json.dumps(r) for r in [*reports, {"final": True}]))
    states = {c.id: "trained" if c.id == trained.id else "pending" for c in grid.cells}
    left = estimate(grid, states)
    # the other sst cell: 10 epochs at the median 12 s; the synthetic cells have no measured like
    assert left == Estimate(120.0, 1, 2, 0.0, 0, 0)
    assert left.describe() == "training at most 2m00s of work for 1 cell (2 cells more with nothing measured like them)"
    assert estimate(grid, dict.fromkeys(states, "trained")).describe() == "nothing left to train or analyse"
    # a cell another grid trained is copied, not trained: no training time left for it
    synthetic = {c.id: "paper" for c in grid.cells if c.config.dataset == "synthetic"}
    assert estimate(grid, states, copied=synthetic) == Estimate(120.0, 1, 0, 0.0, 0, 0)


def test_per_model_analyses_are_priced_whole_by_what_the_same_analysis_took_on_like_cells(tmp_path: Path):
    spec = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["sst"], "encoder": ["lstm"], "seed": [0, 1, 2]},
        "analyses": {"adversarial_model": {}, "diagnostic_mlp": {}},
        "instances": 500,
    }
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(spec))
    grid = expand(load_grid_file(tmp_path / "g.yaml"), str(tmp_path / "g.yaml"), check_data=False)
    pending = {c.id: "pending" for c in grid.cells}
    nothing = estimate(grid, pending)
    assert (nothing.analysis_instances, nothing.analysis_unknown) == (0, 0)  # no test instances: whole models
    assert (nothing.model_analyses, nothing.model_unknown) == (0, 6)
    assert nothing.describe().endswith("per-model: 6 analyses, nothing measured like them yet")
    first, second, _ = grid.cells
    record_model(grid.workspace, first.id, "adversarial_model", 100.0)
    record_model(grid.workspace, second.id, "adversarial_model", 140.0)
    record_shard(grid.workspace, first.id, 0, 256, 30.0)  # a shard line: not a per-model time
    left = estimate(grid, pending)
    # three adversaries at the median 120 s; the MLP was never measured
    assert (left.model_seconds, left.model_analyses, left.model_unknown) == (360.0, 3, 3)
    assert "per-model analyses about 6m00s of work for 3 analyses (3 analyses more with nothing" in left.describe()


def test_plan_calibrates_what_nothing_measured_on_request(tmp_path: Path, shipped_sst: Path, monkeypatch):
    from typer.testing import CliRunner

    from gridlab.cli import app

    monkeypatch.setenv("GRIDLAB_DATA", str(shipped_sst))
    spec = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0, 1]},
        "model": {"embedding_dim": 8, "hidden_size": 8, "attention_size": 8},
        "train": {"epochs": 2, "batch_size": 32, "max_train": 256},
        "analyses": {"permutation": {"n": 5}},
        "instances": 64,
    }
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(spec))
    plain = CliRunner().invoke(app, ["plan", str(tmp_path / "g.yaml")])
    assert "training: 2 cells, nothing measured like them yet" in plain.output
    assert "--calibrate` times a few batches of each kind not measured yet" in plain.output
    calibrated = CliRunner().invoke(app, ["plan", str(tmp_path / "g.yaml"), "--calibrate"])
    assert calibrated.exit_code == 0, calibrated.output
    line = next(line for line in calibrated.output.splitlines() if line.startswith("left, at"))
    assert "calibrated just now on 1 kind of cell: training at most " in line and " of work for 2 cells" in line
    assert "analyses about " in line and "for 128 test instances" in line and "nothing measured" not in line
