"""`model.pair_output`: J&W's pair models read the query in their output layer, W tanh(W_c c + W_q q);
Vashishth et al.'s (§3.2) feed the attention's context alone to a dense layer, so the query reaches the
prediction only through the attention weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gridlab.catalog.compatibility import incompatibilities
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.grid.expand import cell_id
from gridlab.models.factory import build_model

TINY = {"embedding_dim": 12, "hidden_size": 8, "attention_size": 8}


@pytest.fixture(scope="module")
def sick(data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    return load_dataset("sick", data_dir, tmp_path_factory.mktemp("cache"), DataConfig())


def pair(output: str) -> CellConfig:
    return CellConfig(dataset="sick", architecture="pair", model=ModelConfig(**TINY, pair_output=output))


def test_the_context_alone_is_a_dense_layer_on_c(sick):
    model = build_model(pair("context"), sick).eval()
    assert model.context_layer is None and model.query_layer is None
    batch = collate(sick.splits["test"].slice(0, 4).to_pydict())
    encoded = model.encode(batch)
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    context = torch.einsum("bt,btm->bm", alpha, encoded.h)
    torch.testing.assert_close(model(batch), context @ model.classifier.weight.T + model.classifier.bias)
    # with alpha fixed, another query changes nothing: the query acts through attention only
    other = encoded.query.roll(1, dims=0)
    torch.testing.assert_close(model.decode(encoded.h, alpha, other), model.decode(encoded.h, alpha, encoded.query))


def test_jw_output_reads_the_query(sick):
    model = build_model(pair("context_and_query"), sick).eval()
    batch = collate(sick.splits["test"].slice(0, 4).to_pydict())
    encoded = model.encode(batch)
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    other = encoded.query.roll(1, dims=0)
    assert not torch.allclose(model.decode(encoded.h, alpha, other), model.decode(encoded.h, alpha, encoded.query))


def test_the_option_needs_a_pair_model_and_its_default_keeps_ids():
    flat = CellConfig(dataset="sst", model=ModelConfig(pair_output="context"))
    assert [where for where, _ in incompatibilities(flat)] == ["model.pair_output"]
    unset = CellConfig(dataset="sick", architecture="pair", model=ModelConfig(**TINY))
    assert cell_id(pair("context_and_query")) == cell_id(unset)
    assert cell_id(pair("context")) != cell_id(unset)
