"""Integrated gradients (`importance.integrated_gradients`, Captum): a bag-of-words model in closed form,
completeness on real architectures (flat BiLSTM, Transformer, HAN), shrinking with the steps, zeros at
padding, the batch not mattering, and no gradients left on the parameters."""

from __future__ import annotations

import pytest
import torch

from gridlab.analyses.common import forward_once
from gridlab.analyses.importance.integrated_gradients import integrated_gradients
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model

TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("ig")
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=6, min_length=3, max_length=12))
    return load_dataset("synthetic", tmp, tmp / "cache", config)


@pytest.fixture(scope="module")
def rows(synthetic) -> dict:
    rows = synthetic.splits["test"].select(["ids", "label", "instance_id"]).to_pydict()
    return {**rows, "sentence_starts": [list(range(0, len(ids), 4)) for ids in rows["ids"]]}


def model_of(synthetic, encoder: str, **settings):
    torch.manual_seed(0)
    model = build_model(CellConfig(dataset="synthetic", encoder=encoder, model=TINY, **settings), synthetic).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    return model


def test_a_bag_of_words_model_in_closed_form(synthetic, rows):
    """No encoder, uniform attention, two classes: F(t) = sigmoid(c + t S) along the path t e, with
    s_i = (w_y - w_o) . e_i / T the token's share of the logit margin, S = sum_i s_i and c = b_y - b_o. Then
    IG_i = s_i int_0^1 sigmoid'(c + t S) dt = (s_i / S) (F(x) - F(0)): each token gets its share of the
    margin times the change in probability."""
    model = model_of(synthetic, "noenc", attention_mode="uniform")
    batch = collate(rows)
    shared = forward_once(model, batch)
    scores, gap = integrated_gradients(model, batch, shared, steps=64)
    w, b = model.classifier.weight.detach().double(), model.classifier.bias.detach().double()
    e = model.embedding.weight.detach().double()
    for i, tokens in enumerate(rows["ids"]):
        y = int(shared.pred[i])
        margin = (w[y] - w[1 - y]) @ e[tokens].T / len(tokens)  # (T,) s_i
        total, c = margin.sum(), b[y] - b[1 - y]
        change = torch.sigmoid(c + total) - torch.sigmoid(c)
        expected = margin / total * change
        got = scores[i][shared.encoded.mask[i]].double()
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    assert gap.max() < 1e-6


@pytest.mark.parametrize(
    ("encoder", "settings"), [("lstm", {}), ("transformer", {}), ("lstm", {"architecture": "han"})], ids=str
)
def test_completeness_on_real_architectures(synthetic, rows, encoder, settings):
    model = model_of(synthetic, encoder, **settings)
    batch = collate(rows, sentences=settings.get("architecture") == "han")
    shared = forward_once(model, batch)
    gaps = [integrated_gradients(model, batch, shared, steps)[1].max().item() for steps in (2, 8, 64)]
    assert gaps[2] < 1e-3 and gaps[2] < gaps[0]
    scores, _ = integrated_gradients(model, batch, shared, steps=16)
    assert (scores[~shared.encoded.mask] == 0).all()
    assert all(p.grad is None for p in model.parameters())


def test_rows_do_not_depend_on_the_batch(synthetic, rows):
    model = model_of(synthetic, "lstm")
    whole_batch = collate(rows)
    whole, whole_gap = integrated_gradients(model, whole_batch, forward_once(model, whole_batch), steps=16)
    for i in range(len(rows["ids"])):
        alone_batch = collate({k: v[i : i + 1] for k, v in rows.items()})
        shared = forward_once(model, alone_batch)
        alone, alone_gap = integrated_gradients(model, alone_batch, shared, steps=16)
        items = shared.encoded.mask[0]
        torch.testing.assert_close(whole[i][whole_batch.mask[i]], alone[0][items], atol=1e-6, rtol=0)
        assert whole_gap[i].item() == pytest.approx(alone_gap[0].item(), abs=1e-6)


def test_random_attention_is_held_at_the_shared_draw(synthetic, rows):
    """Random attention is drawn anew at every forward; along the path it is the shared pass's draw, so IG
    explains the model as it ran: complete, and the same on a second call."""
    model = model_of(synthetic, "lstm", attention_mode="random")
    batch = collate(rows)
    shared = forward_once(model, batch)
    first, gap = integrated_gradients(model, batch, shared, steps=64)
    second, _ = integrated_gradients(model, batch, shared, steps=64)
    assert gap.max() < 1e-3
    torch.testing.assert_close(first, second, atol=0, rtol=0)
