"""`model.query_embedding`: a pair model's query reads the premise's embedding matrix (gridlab's default) or a
matrix of its own with the same start (J&W's code: one nn.Embedding per encoder)."""

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


def pair(query_embedding: str, seed: int = 0) -> CellConfig:
    model = ModelConfig(**TINY, query_embedding=query_embedding)
    return CellConfig(dataset="sick", architecture="pair", seed=seed, model=model)


def test_a_separate_query_embedding_leaves_every_other_parameter_as_the_shared_model_draws_it(sick):
    shared = build_model(pair("shared"), sick).state_dict()
    separate = build_model(pair("separate"), sick).state_dict()
    assert set(separate) - set(shared) == {"query_embedding.weight"}  # a shared model's checkpoints still load
    assert all(torch.equal(shared[k], separate[k]) for k in shared)
    assert not torch.equal(separate["query_embedding.weight"], separate["embedding.weight"])  # its own N(0, std^2)


def test_pretrained_vectors_start_both_matrices(sick):
    vectors = torch.randn(len(sick.vocab), TINY["embedding_dim"])
    model = build_model(pair("separate"), sick, vectors)
    assert torch.equal(model.embedding.weight, vectors) and torch.equal(model.query_embedding.weight, vectors)
    assert model.query_embedding.weight.data_ptr() != model.embedding.weight.data_ptr()


def test_the_query_trains_only_its_own_matrix(sick):
    model = build_model(pair("separate"), sick)
    batch = collate(sick.splits["test"].slice(0, 4).to_pydict())
    model(batch).sum().backward()
    premise_rows = batch.ids.unique()
    query_only = sorted(set(batch.query_ids.unique().tolist()) - set(premise_rows.tolist()) - {0})
    assert query_only, "the test needs a query word absent from the premises"
    assert model.query_embedding.weight.grad[query_only].abs().sum() > 0
    assert model.embedding.weight.grad[query_only].abs().sum() == 0  # the premise matrix never sees them


def test_the_option_needs_a_pair_model_and_its_default_keeps_ids():
    flat = CellConfig(dataset="sst", model=ModelConfig(query_embedding="separate"))
    assert [where for where, _ in incompatibilities(flat)] == ["model.query_embedding"]
    unset = CellConfig(dataset="sick", architecture="pair", model=ModelConfig(**TINY))
    assert cell_id(pair("shared")) == cell_id(unset)
    assert cell_id(pair("separate")) != cell_id(pair("shared"))
