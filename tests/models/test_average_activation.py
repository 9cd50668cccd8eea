"""`model.average_activation`: J&W's paper gives the average encoder a ReLU (A.3), their code a tanh."""

from __future__ import annotations

import torch

from gridlab.catalog.compatibility import incompatibilities
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.grid.expand import cell_id
from gridlab.models.encoders import build_encoder

TINY = {"embedding_dim": 12, "hidden_size": 8, "attention_size": 8}


def average(activation: str, **cell) -> CellConfig:
    return CellConfig(
        dataset="sst", encoder="average", model=ModelConfig(**TINY, average_activation=activation), **cell
    )


def test_tanh_changes_the_activation_and_nothing_that_is_drawn():
    torch.manual_seed(0)
    relu = build_encoder("average", 12, 8)
    torch.manual_seed(0)
    tanh = build_encoder("average", 12, 8, average_activation="tanh")
    assert all(torch.equal(a, b) for a, b in zip(relu.state_dict().values(), tanh.state_dict().values()))
    x = torch.randn(3, 5, 12)
    lengths, tokens = torch.full((3,), 5), torch.ones(3, 5, dtype=torch.bool)
    projected = relu.projection(x)
    torch.testing.assert_close(relu(x, lengths, tokens), projected.clamp_min(0))
    torch.testing.assert_close(tanh(x, lengths, tokens), torch.tanh(projected))


def test_the_option_needs_the_average_encoder_and_its_default_keeps_ids():
    lstm = CellConfig(dataset="sst", model=ModelConfig(average_activation="tanh"))
    assert [where for where, _ in incompatibilities(lstm)] == ["model.average_activation"]
    assert incompatibilities(average("tanh")) == []
    unset = CellConfig(dataset="sst", encoder="average", model=ModelConfig(**TINY))
    assert cell_id(average("relu")) == cell_id(unset)
    assert cell_id(average("tanh")) != cell_id(average("relu"))
