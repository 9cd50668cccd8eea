"""A grid whose flat, learned-attention cell holds a tiny 'trained' model, published without Ray, with its
`token_scores` rows (what the export reads), beside a uniform-attention cell (trained: never annotated) and a
learned cell that is not trained."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml

from gridlab.data.batching import iterate_batches
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.execution.plan import ShardJob
from gridlab.execution.runner import ShardRunner
from gridlab.grid.expand import Cell, ExpandedGrid, expand
from gridlab.grid.load import load_grid_file
from gridlab.models.factory import build_model
from gridlab.results.shards import Shard
from gridlab.store.models import ModelStore, data_reference

GRID = {
    "name": "h",
    "grid": {"dataset": ["synthetic"], "encoder": ["lstm"], "attention_mode": ["learned", "uniform"], "seed": [0, 1]},
    "exclude": [{"attention_mode": "uniform", "seed": 1}],
    "model": {"embedding_dim": 12, "hidden_size": 8, "attention_size": 8},
    # lengths from 3: instances of TOP_K tokens or fewer exist, and must never be sampled
    "data": {"synthetic": {"n_train": 60, "n_dev": 10, "n_test": 40, "min_length": 3, "max_length": 12}},
    "analyses": {"token_scores": {}},
    "instances": None,
}


@dataclass(frozen=True)
class AnnotatedGrid:
    path: Path
    expanded: ExpandedGrid
    learned: Cell  # trained: the only cell to annotate
    data: PreparedDataset
    model: torch.nn.Module


def publish(expanded: ExpandedGrid, cell: Cell) -> tuple[PreparedDataset, torch.nn.Module]:
    """Random weights, sharpened as in tests/analyses: peaked attention, decisions near the boundary."""
    data = load_dataset(cell.config.dataset, expanded.data_dir, expanded.spec.results_dir / "cache", cell.config.data)
    torch.manual_seed(0)
    model = build_model(cell.config, data).eval()
    with torch.no_grad():
        for p in model.attention.parameters():
            p.mul_(40.0)
        model.classifier.weight.mul_(200.0)
        batch = next(iterate_batches(data.splits["test"], 64))
        model.classifier.bias.sub_(model(batch).mean(0))
    ModelStore(expanded.workspace.models).publish_trained(
        cell.id,
        config=cell.config.model_dump(mode="json"),
        weights=model.state_dict(),
        data_json=data_reference(data),
        metrics={"test_accuracy": 0.0},
        history=[],
    )
    return data, model


@pytest.fixture(scope="package")
def annotated_grid(tmp_path_factory: pytest.TempPathFactory) -> AnnotatedGrid:
    root = tmp_path_factory.mktemp("annotate")
    (root / "data").mkdir()
    path = root / "h.yaml"
    path.write_text(yaml.safe_dump({**GRID, "results_dir": str(root / "runs"), "data_dir": str(root / "data")}))
    expanded = expand(load_grid_file(path), str(path))
    cells = {(c.config.attention_mode, c.config.seed): c for c in expanded.cells}
    learned = cells[("learned", 0)]
    data, model = publish(expanded, learned)
    publish(expanded, cells[("uniform", 0)])
    runner = ShardRunner(expanded.results_dir, expanded.data_dir, expanded.results.cache, torch.device("cpu"))
    runner.run(
        ShardJob(
            "h",
            learned.id,
            Shard(0, 0, data.splits["test"].num_rows, data.splits["test"].num_rows),
            {"token_scores": {}},
            8,
        )
    )
    return AnnotatedGrid(path, expanded, learned, data, model)
