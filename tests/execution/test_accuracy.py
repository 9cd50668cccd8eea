"""The headline sanity check: with Jain & Wallace's settings (grids/jain_wallace.yaml: GloVe 6B 50d, their
training choices), a BiLSTM with additive attention trained through `gridlab launch` on real SST reaches
their accuracy (0.81 reported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_sst_bilstm_with_jain_wallace_settings(tmp_path: Path, shipped_sst: Path, monkeypatch, local_ray):
    monkeypatch.setenv("GRIDLAB_DATA", str(shipped_sst))  # the whole SST release, read in Ray's workers
    grid = yaml.safe_load((REPO / "grids" / "jain_wallace.yaml").read_text())
    grid.update(
        name="jw-sst",
        results_dir=str(tmp_path / "runs"),
        grid={
            "dataset": ["sst"],
            "architecture": ["flat"],
            "encoder": ["lstm"],
            "attention": ["additive"],
            "seed": [0],
        },
        resources={"train": {"cpu": 2}},
        analyses={},  # accuracy only: the analyses have their own tests
    )
    path = tmp_path / "jw.yaml"
    path.write_text(yaml.safe_dump(grid))
    result = CliRunner().invoke(app, ["launch", str(path)])
    assert result.exit_code == 0, result.output
    [cell] = expand(load_grid_file(path), str(path)).cells
    model, train = cell.config.model, cell.config.train
    assert model.embeddings == "glove.6B.50d" and model.embedding_dim == 50 and train.epochs == 8
    assert train.selection_metric == "roc_auc" and train.batching == "bucketed" and train.clip_norm is None
    metrics = json.loads((tmp_path / "runs" / "jw-sst" / "models" / cell.id / "metrics.json").read_text())
    assert metrics["test_accuracy"] >= 0.78, metrics
