"""diagnostic_mlp (W&P §4.4): a non-contextual MLP pooled by uniform, its own, the model's frozen attention or a
model-consistent adversary's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
import torch

from gridlab.analyses.adversarial_model import AdversarialModelParams
from gridlab.analyses.adversarial_model import compute as adversarial_model
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once, jsd
from gridlab.analyses.diagnostic_mlp import DiagnosticMlpParams
from gridlab.analyses.diagnostic_mlp import compute as diagnostic_mlp
from gridlab.catalog.analyses import ANALYSES
from gridlab.config.schema import CellConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.synthetic import SyntheticConfig

from .conftest import fitted_synthetic

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    synthetic = SyntheticConfig(n_train=480, n_dev=80, n_test=80, min_length=16, max_length=32)
    return fitted_synthetic(tmp_path_factory.mktemp("d"), synthetic)


def context(trained, **params) -> AnalysisContext:
    model, _, config = trained
    return AnalysisContext("cell", model, CPU, DiagnosticMlpParams(**params), config)


@pytest.fixture(scope="module")
def rows(trained) -> dict[str, list]:
    return diagnostic_mlp.run_model(context(trained, hidden=16, epochs=3), trained[1])


def test_imposed_weights_cover_exactly_the_models_positions(trained):
    model, data, _ = trained
    batch = next(iterate_batches(data.splits["test"], 16))
    for variant, guide in (("uniform", None), ("base", model)):
        alpha = diagnostic_mlp.imposed_alpha(variant, guide, batch)
        assert alpha.shape == batch.ids.shape  # the MLP reads every position of `ids`, <sos>/<eos> included
        assert (alpha[~batch.mask] == 0).all() and torch.allclose(alpha.sum(-1), torch.ones(16))
    assert torch.equal(diagnostic_mlp.imposed_alpha("base", model, batch), forward_once(model, batch).alpha)
    assert diagnostic_mlp.imposed_alpha("learned", None, batch) is None
    assert diagnostic_mlp.guide_of(context(trained), data, "base") is model
    assert diagnostic_mlp.guide_of(context(trained), data, "uniform") is None


def test_pooling_is_the_alpha_weighted_mean_of_token_vectors():
    torch.manual_seed(0)
    mlp = diagnostic_mlp.DiagnosticMlp(vocab=10, embedding_dim=4, hidden=5, classes=3, init_std=0.5, learned=False)
    ids = torch.tensor([[2, 7, 4, 3, 0]])  # <sos> x1 x2 <eos> <pad>
    mask = torch.tensor([[False, True, True, False, False]])
    one_hot = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0]])
    token = mlp.mlp(mlp.embedding(torch.tensor([4])))  # (1, hidden): x2 alone
    assert torch.allclose(mlp(ids, mask, one_hot), mlp.classifier(token))
    both = mlp.mlp(mlp.embedding(torch.tensor([7, 4]))).mean(0, keepdim=True)
    assert torch.allclose(mlp(ids, mask, torch.tensor([[0.0, 0.5, 0.5, 0.0, 0.0]])), mlp.classifier(both))
    assert (mlp.embedding.weight[0] == 0).all()  # <pad> embeds to zero


def test_macro_f1_by_hand():
    labels, predictions = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
    # class 0: tp 1, fp 0, fn 1 -> 2/3; class 1: tp 2, fp 1, fn 0 -> 4/5
    assert diagnostic_mlp.f1_macro(labels, predictions) == pytest.approx((2 / 3 + 4 / 5) / 2)
    # a class only predicted counts (F1 0), a class in neither does not
    assert diagnostic_mlp.f1_macro(np.array([0, 0]), np.array([0, 2])) == pytest.approx((2 / 3 + 0) / 2)


def test_rows_follow_the_schema_and_bounds(rows, trained):
    table = pa.Table.from_pydict(rows, schema=diagnostic_mlp.INFO.rows)
    assert table.column_names == diagnostic_mlp.INFO.rows.names
    assert rows["variant"] == ["uniform", "learned", "base", "adversary"] and rows["instances"] == [80] * 4
    for column in ("accuracy", "f1_macro", "dev_accuracy"):
        assert all(0.0 <= v <= 1.0 for v in rows[column])
    assert all(1 <= e <= 3 for e in rows["best_epoch"])
    summary = diagnostic_mlp.summarize(table.to_pandas())
    assert summary["base_accuracy"] == rows["accuracy"][2] and "adversary_f1_macro" in summary


def test_same_rows_for_the_same_cell(rows, trained):
    assert diagnostic_mlp.run_model(context(trained, hidden=16, epochs=3), trained[1]) == rows


def test_the_models_attention_guides_the_mlp_beyond_uniform(rows, trained):
    """The planted task's label rests on a few signal words. Pooled uniformly, their vectors are diluted by
    filler; pooled by a model whose attention sits on them, the MLP sees almost only them."""
    model, data, _ = trained
    batch = next(iterate_batches(data.splits["test"], 80))
    on_rationale = (forward_once(model, batch).alpha * batch.rationale).sum(-1).mean().item()
    assert on_rationale > 0.5  # the premise: the base model attends to the planted tokens
    uniform, base = rows["accuracy"][0], rows["accuracy"][2]
    assert base > 0.9 and base > uniform + 0.1  # measured: 1.0 vs 0.79-0.86 over five cell ids


def test_an_adversarys_attention_guides_the_mlp_less_than_the_models(rows, trained):
    """W&P's headline (§4.4, Table 4): an adversary that gives the model's predictions with attention moved
    away from the model's does not carry what the model's attention carries."""
    accuracy = dict(zip(rows["variant"], rows["accuracy"], strict=True))
    # measured over five cell ids: adversary 0.475-0.500 (chance: its attention left the signal words), base 1.0
    assert accuracy["adversary"] < accuracy["base"] - 0.3


def test_the_adversary_is_adversarial_models_unfrozen_one(trained):
    """Same function, same seeds: the attention the MLP is given is that of the adversary whose JSD from the
    model `adversarial_model` reports, so the two analyses describe one adversary."""
    model, data, config = trained
    adversary = diagnostic_mlp.trained_adversary(context(trained), data)
    params = AdversarialModelParams(variants=["unfrozen"])
    reported = adversarial_model.run_model(AnalysisContext("cell", model, CPU, params, config), data)
    batch = next(iterate_batches(data.splits["test"], 80))
    moved = jsd(forward_once(adversary, batch).alpha.double(), forward_once(model, batch).alpha.double())
    assert moved.mean().item() == pytest.approx(reported["jsd_mean"][0], abs=1e-6)


def test_selection_never_reads_the_test_split(trained):
    model, data, _ = trained
    no_test = dataclasses.replace(data, splits={k: v for k, v in data.splits.items() if k != "test"})
    small = context(trained, hidden=8, epochs=1)
    mlp, dev_accuracy, best_epoch = diagnostic_mlp.fit_mlp(small, no_test, ("base", model))
    assert best_epoch == 1 and 0.0 <= dev_accuracy <= 1.0 and not mlp.training


def test_an_empty_test_split_is_not_measured(trained):
    """No test instances: null accuracy and F1 (nothing measured), never 0."""
    _, data, _ = trained
    empty = dataclasses.replace(data, splits={**data.splits, "test": data.splits["test"].slice(0, 0)})
    rows = diagnostic_mlp.run_model(context(trained, hidden=8, epochs=1, variants=["uniform"]), empty)
    assert rows["accuracy"] == [None] and rows["f1_macro"] == [None] and rows["instances"] == [0]


def test_registered_for_flat_models_only():
    applies = ANALYSES["diagnostic_mlp"].applies
    assert applies(CellConfig(dataset="synthetic", architecture="flat"))
    assert not applies(CellConfig(dataset="synthetic", architecture="han"))
    assert not applies(CellConfig(dataset="snli", architecture="pair"))
