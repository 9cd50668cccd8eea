"""The model contract (docs/models.md#contract) for every encoder x alignment x projection x architecture the
grid accepts: forward == decode(attend(encode)), alpha on the simplex over the mask, padding never changes an
instance's logits, finite gradients with respect to alpha and the embeddings, fixed attention modes ignore scores."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model
from gridlab.models.projections import project

ENCODERS = ["lstm", "gru", "cnn", "average", "noenc", "transformer"]
ALIGNMENTS = ["additive", "dot"]
PROJECTIONS = [("softmax", None), ("sparsemax", None), ("entmax15", None), ("sparsegen", 0.3)]
ARCHITECTURES = {"flat": "synthetic", "pair": "sick", "han": "20news"}
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)


@pytest.fixture(scope="module")
def datasets(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    cache = tmp_path_factory.mktemp("cache")
    synthetic = DataConfig(synthetic=SyntheticConfig(n_train=200, n_dev=20, n_test=20))
    return {
        "synthetic": load_dataset("synthetic", data_dir, cache, synthetic),
        "sick": load_dataset("sick", data_dir, cache, DataConfig()),
        "20news": load_dataset("20news", data_dir, cache, DataConfig(max_length=80)),
    }


def rows(data, count: int = 4) -> dict:
    return data.splits["test"].slice(0, count).to_pydict()


def batch_of(data, architecture: str, picked: dict):
    return collate(picked, sentences=architecture == "han")


def one(picked: dict, i: int) -> dict:
    return {k: v[i : i + 1] for k, v in picked.items()}


CASES = [
    pytest.param(arch, enc, align, proj, lam, id=f"{arch}-{enc}-{align}-{proj}")
    for arch, enc, align, (proj, lam) in itertools.product(ARCHITECTURES, ENCODERS, ALIGNMENTS, PROJECTIONS)
]


def build(datasets, arch, enc, align, proj, lam, mode="learned", seed=0):
    dataset = ARCHITECTURES[arch]
    config = CellConfig(
        dataset=dataset,
        encoder=enc,
        attention=align,
        projection=proj,
        projection_lambda=lam,
        architecture=arch,
        attention_mode=mode,
        seed=seed,
        model=TINY,
    )
    model = build_model(config, datasets[dataset]).eval()
    return model, datasets[dataset]


@pytest.mark.parametrize(("arch", "enc", "align", "proj", "lam"), CASES)
def test_contract(datasets, arch, enc, align, proj, lam):
    model, data = build(datasets, arch, enc, align, proj, lam)
    check_contract(model, data, arch)


def test_contract_pretrained(datasets, tiny_bert):
    """The pretrained encoder (a tiny random BERT) in the one combination the grid accepts for it."""
    config = CellConfig(
        dataset="synthetic", encoder="pretrained", attention="dot", model=ModelConfig(pretrained=str(tiny_bert))
    )
    check_contract(build_model(config, datasets["synthetic"]).eval(), datasets["synthetic"], "flat")


def check_contract(model, data, arch: str) -> None:
    picked = rows(data)
    batch = batch_of(data, arch, picked)

    encoded = model.encode(batch)
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    assert torch.equal(model.decode(encoded.h, alpha, encoded.query), model(batch))

    # alpha is a distribution over the unmasked positions, exactly 0 elsewhere
    torch.testing.assert_close(alpha.sum(-1), torch.ones(batch.size), atol=1e-5, rtol=0)
    assert (alpha[~encoded.mask] == 0).all() and (alpha >= 0).all()

    # padding never changes an instance's logits: alone == inside a padded batch
    logits = model(batch)
    for i in range(batch.size):
        alone = model(batch_of(data, arch, one(picked, i)))
        torch.testing.assert_close(alone[0], logits[i], atol=1e-5, rtol=1e-5)

    # gradients with respect to alpha and to the embeddings exist and are finite
    attended = alpha.detach().requires_grad_()
    model.decode(
        encoded.h.detach(), attended, None if encoded.query is None else encoded.query.detach()
    ).sum().backward()
    assert attended.grad is not None and torch.isfinite(attended.grad).all()
    embedded = model.embed(batch).detach().requires_grad_()
    again = model.encode(batch, embedded=embedded)
    model.decode(again.h, model.attend(again.h, again.mask, again.query), again.query).max(-1).values.sum().backward()
    assert embedded.grad is not None and torch.isfinite(embedded.grad).all() and embedded.grad.abs().sum() > 0


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
@pytest.mark.parametrize("mode", ["uniform", "random"])
def test_fixed_modes_ignore_learned_scores(datasets, arch, mode):
    model, data = build(datasets, arch, "lstm", "additive", "softmax", None, mode=mode)
    batch = batch_of(data, arch, rows(data))
    encoded = model.encode(batch)
    torch.manual_seed(1)
    before = model.attend(encoded.h, encoded.mask, encoded.query)
    with torch.no_grad():
        for p in model.attention.parameters():
            p.add_(torch.randn_like(p))  # scores change completely ...
    torch.manual_seed(1)
    after = model.attend(encoded.h * 3 + 1, encoded.mask, encoded.query)
    assert torch.equal(before, after)  # ... the weights do not
    if mode == "uniform":
        expected = encoded.mask.float() / encoded.mask.sum(-1, keepdim=True)
        assert torch.equal(before, expected)
    else:
        assert not torch.equal(model.attend(encoded.h, encoded.mask, encoded.query), before)  # resampled
    torch.manual_seed(2)
    forward = model(batch)
    torch.manual_seed(2)
    assert torch.equal(
        forward, model.decode(encoded.h, model.attend(encoded.h, encoded.mask, encoded.query), encoded.query)
    )


def test_sparse_projections_give_exact_zeros_and_sparsegen_support_shrinks():
    scores = torch.tensor([[2.0, 1.5, 0.2, -0.4, 1.9, 0.0, 0.7, -3.0]])
    mask = torch.tensor([[True] * 7 + [False]])
    for projection in ("sparsemax", "entmax15", "sparsegen"):
        alpha = project(scores, mask, projection, lam=0.0)
        assert (alpha == 0).sum() > 1 and alpha[0, -1] == 0
    supports = [int((project(scores, mask, "sparsegen", lam) > 0).sum()) for lam in (-5.0, -2.0, 0.0, 0.5, 0.95)]
    assert supports == sorted(supports, reverse=True) and supports[0] > supports[-1] == 1
    # sparsegen with lambda 0 is sparsemax; softmax has no zeros on the mask
    assert torch.equal(project(scores, mask, "sparsegen", 0.0), project(scores, mask, "sparsemax"))
    assert (project(scores, mask, "softmax")[mask] > 0).all()


def test_same_seed_gives_bitwise_identical_models(datasets):
    a, data = build(datasets, "flat", "lstm", "additive", "softmax", None, seed=3)
    b, _ = build(datasets, "flat", "lstm", "additive", "softmax", None, seed=3)
    c, _ = build(datasets, "flat", "lstm", "additive", "softmax", None, seed=4)
    pairs = list(zip(a.state_dict().values(), b.state_dict().values()))
    assert all(torch.equal(x, y) for x, y in pairs)
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values()))
    batch = batch_of(data, "flat", rows(data))
    assert torch.equal(a(batch), b(batch))


def one_pass(model, x, words):
    """What the word level computed before it took the rows longest first in chunks: the block at once."""
    return model.word_encoder(x, words.sum(-1), words)


@pytest.mark.parametrize("enc", ENCODERS)
def test_a_hierarchical_models_word_level_in_chunks_computes_what_one_pass_does(datasets, enc, monkeypatch):
    model, data = build(datasets, "han", enc, "additive", "softmax", None)
    picked = rows(data, count=12)
    batch = batch_of(data, "han", picked)
    assert not batch.sentences.doc_mask.all()  # documents of different sentence counts: padding sentences
    batch.sentences.mask[-1] = False  # and a document with no words left (as a leave-one-out can make)
    monkeypatch.setattr("gridlab.models.classifier.WORD_CHUNK_ROWS", 5)  # several chunks of a few sentences
    embedded = model.embed(batch).detach().requires_grad_()
    chunked = model(batch)
    (grad,) = torch.autograd.grad(model.decode(*_encoded(model, batch, embedded)).sum(), embedded)
    monkeypatch.setattr(type(model), "_encode_words", one_pass)
    reference = model(batch)
    (expected,) = torch.autograd.grad(model.decode(*_encoded(model, batch, embedded)).sum(), embedded)
    if enc == "lstm":  # a row's LSTM states do not depend on its batch: the very same logits
        assert torch.equal(chunked, reference)
    torch.testing.assert_close(chunked, reference, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(grad, expected, atol=1e-6, rtol=1e-5)


def _encoded(model, batch, embedded):
    encoded = model.encode(batch, embedded=embedded)
    return encoded.h, model.attend(encoded.h, encoded.mask, encoded.query), encoded.query
