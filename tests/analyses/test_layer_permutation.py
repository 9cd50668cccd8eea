"""layer_permutation (Vashishth §4.3): accuracy with self-attention layers 1..k permuted at inference."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.layer_permutation import compute as layer_permutation
from gridlab.catalog.analyses import NoParams
from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model
from gridlab.training.loop import evaluate, fit

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("d")
    data = load_dataset("synthetic", root, root / "c", DataConfig(synthetic=SyntheticConfig(n_test=60)))
    config = CellConfig(
        dataset="synthetic",
        encoder="transformer",
        seed=1,
        model=ModelConfig(embedding_dim=16, hidden_size=16, attention_size=16),
        train=TrainConfig(epochs=3, lr=0.003),
    )
    model = build_model(config, data)
    fit(model, data, config, CPU)
    return model.eval(), data


def test_rows_per_depth_match_the_oracle_and_the_plain_model(trained):
    model, data = trained
    context = AnalysisContext("cell", model, CPU, NoParams())
    rows = layer_permutation.run_model(context, data)
    assert rows["layers_permuted"] == [0, 1, 2]
    assert rows["accuracy"][0] == pytest.approx(evaluate(model, data.splits["test"], CPU)["accuracy"])
    for k, accuracy in zip(rows["layers_permuted"], rows["accuracy"]):
        assert accuracy == pytest.approx(layer_permutation.reference_accuracy(context, data, k))  # padding-free
    assert rows["delta"][0] == 0.0 and rows == layer_permutation.run_model(context, data)
    assert layer_permutation.self_attention(model).override is None  # restored
    summary = layer_permutation.summarize(pd.DataFrame(rows))  # one declared name per depth
    assert {layer_permutation.INFO.summary_column(name) for name in summary} == {"accuracy_{layers}_layers"}
    assert sorted(summary) == ["accuracy_0_layers", "accuracy_1_layers", "accuracy_2_layers"]


def test_permuted_attention_stays_on_the_real_keys(trained):
    model, data = trained
    batch = next(iterate_batches(data.splits["test"], 8))
    with layer_permutation.permuted_layers(model, "cell", batch, layers=2):
        model(batch)
        maps = layer_permutation.self_attention(model).attention_maps
    keys = batch.ids != 0
    for attention in maps:  # (B, H, T, T)
        assert torch.all(attention[~keys[:, None, None, :].expand_as(attention)] == 0)
        rows = attention[keys[:, None, :, None].expand_as(attention)].reshape(-1, attention.shape[-1])
        torch.testing.assert_close(rows.sum(-1), torch.ones(rows.shape[0]))
    model(batch)
    unpermuted = layer_permutation.self_attention(model).attention_maps[0]
    assert not torch.equal(unpermuted, maps[0])


def test_a_transformer_copies_after_a_forward_with_gradients(trained):
    # adversarial_model deep-copies the base model; kept attention maps must not carry its autograd graph
    model, data = trained
    model(next(iterate_batches(data.splits["test"], 8))).sum().backward()
    assert not any(m.requires_grad for m in layer_permutation.self_attention(model).attention_maps)
    copy.deepcopy(model)


def test_non_transformer_models_are_refused(trained):
    _, data = trained
    lstm = build_model(
        CellConfig(dataset="synthetic", encoder="lstm", model=ModelConfig(embedding_dim=8, hidden_size=4)), data
    )
    with pytest.raises(ValueError, match="needs a transformer encoder"):
        layer_permutation.run_model(AnalysisContext("cell", lstm, CPU, NoParams()), data)
