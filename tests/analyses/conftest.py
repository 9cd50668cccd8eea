"""Shared test data for the analyses: tiny synthetic test rows, with the short cases T = 1 and T = 2
(docs/analyses.md), and a small model trained on the planted task for the analyses that train (adversaries,
the diagnostic MLP)."""

from __future__ import annotations

from pathlib import Path

import torch

from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.config import DataConfig
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.factory import build_model
from gridlab.training.loop import fit


def short_synthetic_rows(root: Path, n_test: int, rationale: bool = False) -> dict:
    """`n_test` synthetic test rows of lengths 3-14, the first cut to T = 1 and the second to T = 2 (with their
    token rationale flags, cut alike, when `rationale`)."""
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=n_test, min_length=3, max_length=14))
    data = load_dataset("synthetic", root, root / "cache", config)
    columns = ["ids", "label", "instance_id", *(["rationale"] if rationale else [])]
    rows = data.splits["test"].select(columns).to_pydict()
    for key in {"ids", "rationale"} & set(rows):
        rows[key][0], rows[key][1] = rows[key][0][:1], rows[key][1][:2]
    return {"data": data, "rows": rows}


TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)


def perturbed_model(data, encoder: str, alignment: str, projection: str = "softmax", seed: int = 0):
    """A tiny untrained model with noise added to its weights (more outside attention), so outputs move with
    attention and decisions can flip."""
    config = CellConfig(
        dataset="synthetic",
        encoder=encoder,
        attention=alignment,
        projection=projection,
        architecture="flat",
        seed=seed,
        model=TINY,
    )
    model = build_model(config, data).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            scale = 0.1 if name.startswith("attention") else 0.5
            parameter.add_(scale * torch.randn(parameter.shape, generator=generator))
    return model


SMALL = ModelConfig(embedding_dim=16, hidden_size=16, attention_size=16)


def fitted_synthetic(root: Path, synthetic: SyntheticConfig) -> tuple[AttentionClassifier, PreparedDataset, CellConfig]:
    """An average-encoder classifier trained 4 epochs on the planted synthetic task (in eval mode), its data and
    config: the base model of the tests of analyses that train against one."""
    data = load_dataset("synthetic", root, root / "c", DataConfig(synthetic=synthetic))
    config = CellConfig(dataset="synthetic", encoder="average", model=SMALL, train=TrainConfig(epochs=4, lr=0.01))
    model = build_model(config, data)
    fit(model, data, config, torch.device("cpu"))
    return model.eval(), data, config
