"""The pretrained encoder on a tiny random BERT (tests/models/conftest.py): words map to their pieces and back,
[CLS]/[SEP] are never items, its layers' maps pool to words by the documented rule, a long text loses its end
but never its markers, the attention is the heads' mean of the last layer's [CLS] attention, and every
ranking is computed on word items (docs/models.md#pretrained-encoder)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gridlab.analyses.common import forward_once
from gridlab.analyses.importance.deletion import deleted_batch, shift_index
from gridlab.analyses.importance.propagated_attention import attention_rollout
from gridlab.analyses.importance.scores import ranking_scores
from gridlab.catalog.analyses import RANKINGS
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.data.vocab import SPECIALS, Vocab
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from gridlab.models.factory import build_model
from gridlab.models.pretrained import NO_PIECE, Packed, load_bert, piece_table


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("data")
    config = DataConfig(synthetic=SyntheticConfig(n_train=40, n_dev=5, n_test=12, min_length=3, max_length=10))
    return load_dataset("synthetic", root, root / "cache", config)


def model_of(data, folder: Path, **model):
    config = CellConfig(
        dataset="synthetic", encoder="pretrained", attention="dot", model=ModelConfig(pretrained=str(folder), **model)
    )
    return build_model(config, data).eval()


def batch_of(data, count: int = 6):
    return collate(data.splits["test"].slice(0, count).to_pydict())


def test_words_map_to_their_pieces_and_the_markers_to_cls_and_sep(tiny_bert: Path):
    _, tokenizer = load_bert(tiny_bert)
    table = piece_table(Vocab(SPECIALS + ("f001", "the", "ab")), tokenizer)
    vocab = tokenizer.get_vocab()
    assert (table[0] == NO_PIECE).all()  # <pad>: no piece
    assert table[1, 0] == tokenizer.unk_token_id and table[2, 0] == tokenizer.cls_token_id
    assert table[3, 0] == tokenizer.sep_token_id
    assert table[4].tolist() == [vocab["f"], vocab["##0"], vocab["##0"], vocab["##1"]]
    assert table[5].tolist() == [vocab["the"]] + [NO_PIECE] * 3 and table[6, :2].tolist() == [vocab["a"], vocab["##b"]]


def test_a_test_word_absent_from_train_keeps_its_real_pieces(tmp_path: Path, tiny_bert: Path):
    """A tokenizer is no label information: the pretrained cell's vocabulary holds every split's words, so a
    word seen only in test reaches the model as its word pieces, not as [UNK] (issue 46's missing accuracy)."""
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\ngrid: {dataset: [synthetic], encoder: [pretrained], attention: [dot]}\n"
        f"model: {{pretrained: {tiny_bert}}}\n"
        "data: {synthetic: {n_train: 40, n_dev: 5, n_test: 12, min_length: 3, max_length: 10}}\n"
    )
    (cell,) = expand(load_grid_file(grid), str(grid), check_data=False).cells
    data = load_dataset("synthetic", tmp_path, tmp_path / "cache", cell.config.data)
    seen = {word for row in data.splits["train"].column("tokens").to_pylist() for word in row}
    test = batch_of(data, count=12)
    texts = data.splits["test"].column("tokens").to_pylist()
    unseen = [(b, t, word) for b, row in enumerate(texts) for t, word in enumerate(row) if word not in seen]
    assert unseen  # the case at hand: test words train never had
    _, tokenizer = load_bert(tiny_bert)
    pieces = build_model(cell.config, data).pieces[test.ids]  # (B, T, K) what the model reads
    for b, t, word in unseen:
        expected = tokenizer(word, add_special_tokens=False)["input_ids"]
        assert tokenizer.unk_token_id not in expected
        assert pieces[b, t + 1, : len(expected)].tolist() == expected, word  # t + 1: after <sos>


def test_pieces_pool_to_words_keys_summed_queries_averaged():
    valid = torch.tensor([[[True, False], [True, True], [True, False]]])  # (1, T=3, K=2): word 1 has two pieces
    packed = Packed(valid, max_pieces=8)
    assert packed.counts.tolist() == [[1.0, 2.0, 1.0]]
    states = torch.arange(8.0).reshape(1, 4, 2)  # (1, P=4, m=2)
    torch.testing.assert_close(packed.words(states)[0, 1], states[0, 1:3].mean(0))
    maps = torch.softmax(torch.randn(1, 2, 4, 4), -1)  # (1, H=2, P, P)
    pooled = packed.word_map(maps)  # (1, 2, 3, 3)
    torch.testing.assert_close(pooled[0, :, 0, 1], maps[0, :, 0, 1] + maps[0, :, 0, 2])  # mass of both pieces
    torch.testing.assert_close(pooled[0, :, 1, 0], (maps[0, :, 1, 0] + maps[0, :, 2, 0]) / 2)  # mean of rows
    torch.testing.assert_close(pooled.sum(-1), torch.ones(1, 2, 3))


def test_a_long_text_loses_its_last_words_never_cls_or_sep(data, tiny_bert: Path):
    model = model_of(data, tiny_bert, max_pieces=9)  # [CLS], 7 pieces, [SEP]: fewer than any row has
    batch = batch_of(data)
    encoded = model.encode(batch)
    counts = model.encoder.packed.counts
    ends = batch.lengths - 1  # the <eos> slot of each row
    assert (counts[:, 0] == 1).all() and (counts.gather(1, ends[:, None]) == 1).all()
    pieces = model.pieces[batch.ids].ne(NO_PIECE).sum((1, 2))  # (B,) every piece of each row
    assert torch.equal(counts.sum(-1), pieces.clamp_max(9).float())
    assert torch.equal(encoded.mask, batch.mask & (counts > 0))  # a cut word is no item, a shortened one is
    assert (encoded.mask.sum(-1) < batch.mask.sum(-1)).all()
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    assert (alpha[~encoded.mask] == 0).all()
    torch.testing.assert_close(alpha.sum(-1), torch.ones(batch.size))


def test_the_attention_is_the_heads_mean_of_the_last_layers_cls_attention(data, tiny_bert: Path):
    model = model_of(data, tiny_bert)
    batch = batch_of(data)
    encoded = model.encode(batch)
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    heads = model.attention.head_alpha  # (B, H, T)
    assert heads.shape == (batch.size, 4, batch.ids.shape[1])
    torch.testing.assert_close(heads.sum(-1), torch.ones(batch.size, 4))
    torch.testing.assert_close(alpha, heads.mean(1))
    assert not encoded.mask[:, 0].any() and not encoded.mask.gather(1, (batch.lengths - 1)[:, None]).any()
    model.attention.mode = "uniform"  # substituted at inference (attention_ablation)
    uniform = model.attend(encoded.h, encoded.mask, encoded.query)
    torch.testing.assert_close(uniform, encoded.mask.float() / encoded.mask.sum(-1, keepdim=True))


def test_deleting_a_word_deletes_all_of_its_pieces(data, tiny_bert: Path):
    model = model_of(data, tiny_bert)
    batch = batch_of(data, count=2)
    model.encode(batch)
    before = model.encoder.packed.pieces.sum(-1)
    rows, positions = torch.tensor([0, 1]), torch.tensor([1, 2])
    model.encode(deleted_batch(batch, rows, shift_index(positions, int(batch.lengths.max()))))
    lost = model.pieces[batch.ids[rows, positions]].ne(NO_PIECE).sum(-1)  # the deleted words' pieces
    assert (lost > 1).all()
    assert torch.equal(model.encoder.packed.pieces.sum(-1), before - lost)


def test_every_ranking_scores_words_and_never_the_markers(data, tiny_bert: Path):
    model = model_of(data, tiny_bert)
    batch = batch_of(data)
    shared = forward_once(model, batch)
    scores = ranking_scores(model, "cell", shared, list(RANKINGS), "eraser", ig_steps=64)
    mask = shared.encoded.mask
    for name, values in scores.values.items():
        assert values.shape == mask.shape and torch.isfinite(values).all(), name
        assert (values[~mask] == 0).all(), name  # [CLS], [SEP] and padding are never ranked
        assert (values[mask] != 0).any(), name
    for name in ("attention_rollout", "attention_flow"):  # every word reaches the pooled vector, at most all of it
        assert (scores.values[name] > 0)[mask].all() and (scores.values[name] <= 1 + 1e-6).all()
    assert (scores.values["attention_rollout"].sum(-1) <= 1 + 1e-6).all()  # shares of one unit, markers' excluded
    assert scores.ig_gap is not None and (scores.ig_gap < 0.05).all()  # completeness over whole words


def test_only_a_pass_that_reads_the_layers_maps_keeps_them(data, tiny_bert: Path):
    """On 512-piece documents the maps of every layer, pooled to words, took gigabytes in every chunk of
    leave-one-out, erasure and integrated gradients, which never read them."""
    model = model_of(data, tiny_bert)
    batch = batch_of(data)
    shared = forward_once(model, batch)
    assert model.encoder.attention_maps == [] and model.encoder.norm_maps() == []
    with model.encoder.keeping_maps():
        model.encode(batch)
    maps = model.encoder.attention_maps
    assert len(maps) == 1 and maps[0].shape == (batch.size, 4, batch.ids.shape[1], batch.ids.shape[1])
    real = batch.mask
    torch.testing.assert_close(maps[0].sum(-1)[real[:, None, :].expand(-1, 4, -1)], torch.ones(4 * int(real.sum())))
    kept = attention_rollout(maps, shared.encoded.mask, shared.alpha)
    model.encode(batch)  # a pass outside drops them
    assert model.encoder.attention_maps == [] and not model.encoder.keep_maps
    scores = ranking_scores(model, "cell", shared, ["attention_rollout"], "eraser")
    torch.testing.assert_close(scores.values["attention_rollout"], kept)


def test_the_cls_query_is_no_pair_task_for_the_adversarial_budget(data, tiny_bert: Path):
    from gridlab.analyses.adversarial import AdversarialParams
    from gridlab.analyses.adversarial import compute as adversarial

    shared = forward_once(model_of(data, tiny_bert), batch_of(data))
    assert shared.encoded.query is not None  # the [CLS] state queries the words ...
    assert adversarial.epsilon(AdversarialParams(), shared) == adversarial.EPS_CLASSIFICATION  # ... of one text
