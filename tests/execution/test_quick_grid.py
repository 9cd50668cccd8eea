"""The README's main job: `gridlab launch grids/quick.yaml` trains all of its cells on a local Ray."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_quick_grid_trains_every_cell(tmp_path: Path, monkeypatch, local_ray):
    """As README command 1 on a user's machine: no $GRIDLAB_DATA, no ./data, no ../shared (the SST files
    shipped with gridlab are read)."""
    monkeypatch.delenv("GRIDLAB_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    grid = yaml.safe_load((REPO / "grids" / "quick.yaml").read_text())
    grid["results_dir"] = str(tmp_path / "runs")
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(grid))
    result = CliRunner().invoke(app, ["launch", str(path)])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "data").exists() and "GRIDLAB_DATA" not in os.environ
    for cell in expand(load_grid_file(path), str(path)).cells:
        metrics = json.loads((tmp_path / "runs" / "quick" / "models" / cell.id / "metrics.json").read_text())
        floor = 0.9 if cell.config.dataset == "synthetic" else 0.6  # far above chance (0.5) on both
        assert metrics["test_accuracy"] > floor, (cell.config.dataset, cell.config.encoder, metrics)
