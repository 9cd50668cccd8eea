"""`eraser` (docs/analyses.md#eraser): comprehensiveness and sufficiency of a bag-of-words model in closed
form, the bin sizes, `run` == `reference` on small real models (flat, HAN, Transformer with rollout),
batching invariance, the written schema and `summarize`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.eraser import EraserParams
from gridlab.analyses.eraser import compute as eraser
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.data.vocab import PAD_ID
from gridlab.models.factory import build_model
from gridlab.results.parts import common_columns, rows_table

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
BINS = [0.01, 0.05, 0.1, 0.2, 0.5]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("eraser")
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=10, min_length=3, max_length=14))
    return load_dataset("synthetic", tmp, tmp / "cache", config)


@pytest.fixture(scope="module")
def rows(synthetic) -> dict:
    rows = synthetic.splits["test"].select(["ids", "label", "instance_id", "sentence_starts"]).to_pydict()
    rows["ids"][0] = rows["ids"][0][:1]  # T = 1: every bin removes or keeps the whole input
    rows["sentence_starts"][0] = [0]
    return rows


def model_of(synthetic, encoder: str, **settings):
    config = CellConfig(dataset="synthetic", encoder=encoder, model=TINY, **settings)
    torch.manual_seed(0)
    model = build_model(config, synthetic).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():  # untrained outputs sit near 1/2: spread them so the drops are visible
        for parameter in model.parameters():
            parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    return model


def context(model, **params) -> AnalysisContext:
    return AnalysisContext(CELL, model, torch.device("cpu"), EraserParams(**params))


def test_bin_sizes_take_at_least_one_item_and_never_more_than_t():
    sizes = eraser.bin_sizes(torch.tensor([1, 7, 20, 200]), BINS)
    assert sizes.tolist() == [  # ceil(q T), capped at T
        [1, 1, 1, 2],
        [1, 1, 1, 10],
        [1, 1, 2, 20],
        [1, 2, 4, 40],
        [1, 4, 10, 100],
    ]


def test_a_bag_of_words_model_gives_the_closed_form(synthetic, rows):
    """No encoder and uniform attention: p(y | x) = softmax(W mean_t e_t + b)_y over the tokens left. All
    weights tie, so the attention ranking is position order: bin q removes (comprehensiveness) or keeps
    (sufficiency) the first k = ceil(q T) tokens. With nothing left the context is 0 and p = softmax(b)."""
    model = model_of(synthetic, "noenc", attention_mode="uniform")
    batch = collate(rows)
    columns = eraser.run(context(model, rankings=["attention"], bins=BINS), forward_once(model, batch))
    e = model.embedding.weight.detach().double().numpy()
    w, bias = model.classifier.weight.detach().double().numpy(), model.classifier.bias.detach().double().numpy()

    def p(tokens: list[int], y: int) -> float:
        context_vector = e[tokens].mean(0) if tokens else np.zeros(e.shape[1])
        logits = w @ context_vector + bias
        return float(np.exp(logits[y]) / np.exp(logits).sum())

    for b, tokens in enumerate(rows["ids"]):
        y = int(np.argmax([p(tokens, c) for c in range(len(bias))]))
        ks = [min(len(tokens), math.ceil(q * len(tokens))) for q in BINS]
        comprehensiveness = [p(tokens, y) - p(tokens[k:], y) for k in ks]
        sufficiency = [p(tokens, y) - p(tokens[:k], y) for k in ks]
        np.testing.assert_allclose(columns["comprehensiveness_attention"][b], comprehensiveness, atol=2e-6)
        np.testing.assert_allclose(columns["sufficiency_attention"][b], sufficiency, atol=2e-6)
        assert columns["aopc_comprehensiveness_attention"][b] == pytest.approx(np.mean(comprehensiveness), abs=2e-6)
        assert columns["aopc_sufficiency_attention"][b] == pytest.approx(np.mean(sufficiency), abs=2e-6)
    assert all(v is None for v in columns["comprehensiveness_gradient"])  # not asked for: null
    assert all(v is None for v in columns["integrated_gradients_gap"])


CASES = [
    ("lstm", {}, ["attention", "random", "gradient", "leave_one_out", "norm_attention", "integrated_gradients"]),
    ("cnn", {}, ["attention", "grad_x_attention", "leave_one_out"]),
    ("transformer", {}, ["attention", "attention_rollout", "attention_flow", "norm_attention", "norm_rollout"]),
    ("lstm", {"architecture": "han"}, ["attention", "gradient", "leave_one_out", "integrated_gradients"]),
]


@pytest.mark.parametrize(("encoder", "settings", "rankings"), CASES, ids=["lstm", "cnn", "transformer", "han"])
def test_run_equals_the_per_instance_reference(synthetic, rows, encoder, settings, rankings):
    model = model_of(synthetic, encoder, **settings)
    hierarchical = settings.get("architecture") == "han"
    batch = collate(_sentences(rows) if hierarchical else rows, sentences=hierarchical)
    ctx = context(model, rankings=rankings, ig_steps=16)
    run = eraser.run(ctx, forward_once(model, batch))
    reference = eraser.reference(ctx, forward_once(model, batch))
    assert set(run) == set(reference) == set(eraser.INFO.rows.names)
    for name in eraser.INFO.rows.names:
        for a, b in zip(run[name], reference[name]):
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), atol=2e-6, err_msg=name)
    assert all(run[f"aopc_comprehensiveness_{name}"][1] is not None for name in rankings)


def test_rollout_and_flow_are_skipped_without_a_transformer(synthetic, rows):
    model = model_of(synthetic, "lstm")
    columns = eraser.run(
        context(model, rankings=["attention", "attention_rollout"]), forward_once(model, collate(rows))
    )
    assert all(v is None for v in columns["aopc_comprehensiveness_attention_rollout"])
    assert all(v is not None for v in columns["aopc_comprehensiveness_attention"])


def test_rows_do_not_depend_on_the_batch(synthetic, rows):
    model = model_of(synthetic, "lstm")
    ctx = context(model, rankings=["attention", "random", "leave_one_out"])
    whole = eraser.run(ctx, forward_once(model, collate(rows)))
    halves = [
        eraser.run(ctx, forward_once(model, collate({k: v[part] for k, v in rows.items()})))
        for part in (slice(0, 4), slice(4, None))
    ]
    for name in eraser.INFO.rows.names:
        joined = [*halves[0][name], *halves[1][name]]
        for a, b in zip(whole[name], joined):
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), atol=2e-6, err_msg=name)


def test_the_rows_write_and_summarize(synthetic, rows, tmp_path: Path):
    model = model_of(synthetic, "lstm")
    batch = collate(rows)
    shared = forward_once(model, batch)
    columns = eraser.run(context(model, rankings=["attention", "integrated_gradients"], ig_steps=8), shared)
    common = common_columns(
        "g",
        CELL,
        CellConfig(dataset="synthetic", model=TINY),
        "test",
        eraser.VERSION,
        instance_id=batch.instance_ids.numpy(),
        length=shared.lengths.numpy(),
        label=batch.labels.numpy(),
        pred=shared.pred.numpy(),
        max_attention=shared.alpha.max(-1).values.numpy(),
    )
    table = rows_table(common, columns, eraser.INFO.rows)
    assert isinstance(table, pa.Table) and table.num_rows == len(rows["ids"])
    frame = table.to_pandas()
    summary = eraser.summarize(frame)
    expected = np.mean([v for v in columns["aopc_comprehensiveness_attention"]])
    assert summary["aopc_comprehensiveness_attention_mean"] == pytest.approx(expected)
    assert "aopc_sufficiency_gradient_mean" not in summary  # not requested: no entry, not a number
    assert 0 <= summary["integrated_gradients_gap_mean"] <= summary["integrated_gradients_gap_max"]
    assert isinstance(frame, pd.DataFrame)


def _sentences(rows: dict) -> dict:
    """Each instance split into sentences of 3 tokens."""
    return {**rows, "sentence_starts": [list(range(0, max(len(ids), 1), 3)) for ids in rows["ids"]]}


def test_without_items_keeps_the_markers_and_packs_the_rest(rows):
    from gridlab.analyses.importance.deletion import without_items

    batch = collate({k: v[1:3] for k, v in rows.items()})
    removed = batch.mask.clone()
    removed[:, 2:] = False  # remove the first item of each row only
    smaller = without_items(batch, torch.arange(2), removed)
    for b in range(2):
        tokens = rows["ids"][1 + b]
        assert smaller.ids[b][smaller.ids[b] != PAD_ID].tolist()[1:-1] == tokens[1:]
        assert int(smaller.lengths[b]) == len(tokens) + 1  # <sos>, the tokens left, <eos>
