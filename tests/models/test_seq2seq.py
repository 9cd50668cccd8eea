"""The translation model: its steps recompose `forward`, attention stays on the source tokens whatever the
mode or override, padding never changes an instance, it learns a small task, and BLEU runs on Multi30k."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

from gridlab.data.batching import Batch, collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.vocab import EOS_ID, PAD_ID, SOS_ID, SPECIALS, Vocab
from gridlab.models.attention import AttentionSpec
from gridlab.models.seq2seq import Seq2Seq, bleu, permute_within_mask, sequence_loss

SOURCE_VOCAB, TARGET_VOCAB = 20, 24
# (source, target) pairs of different lengths on both sides, so a batch of them is padded on both sides
PAIRS = [
    ([4, 5, 6], [7, 8, 9, 10, 11]),
    ([12, 13, 14, 15, 16, 17, 18], [19, 20]),
    ([9], [21, 22, 23]),
    ([7, 7, 8, 19, 5], [4, 5, 6, 7, 8, 9, 10]),
]
ALIGNMENTS = ["additive", "dot"]
PROJECTIONS = ["softmax", "sparsemax", "entmax15", "sparsegen"]


def make_batch(pairs: list[tuple[list[int], list[int]]]) -> Batch:
    return collate(
        {
            "instance_id": list(range(len(pairs))),
            "label": [-1] * len(pairs),
            "ids": [source for source, _ in pairs],
            "target_ids": [target for _, target in pairs],
        }
    )


def make_model(alignment: str = "additive", projection: str = "softmax", seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    model = Seq2Seq(
        SOURCE_VOCAB,
        TARGET_VOCAB,
        embedding_dim=8,
        hidden=16,
        attention=AttentionSpec(alignment, projection, 0.3 if projection == "sparsegen" else None),
        attention_size=12,
    )
    return model.eval()


def assert_on_simplex_over_mask(alphas: torch.Tensor, mask: torch.Tensor) -> None:
    """(B, steps, T) weights: each step sums to 1 over the source tokens, exactly 0 elsewhere."""
    outside = ~mask.unsqueeze(1).expand_as(alphas)  # (B, steps, T)
    assert torch.all(alphas[outside] == 0)
    assert torch.all(alphas >= 0)
    torch.testing.assert_close(alphas.sum(-1), torch.ones(alphas.shape[:2]))


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_forward_is_encode_attend_decode_step_with_teacher_forcing(alignment: str):
    model, batch = make_model(alignment), make_batch(PAIRS)
    logits = model(batch)
    u = batch.target_ids.shape[1]
    assert logits.shape == (len(PAIRS), u - 1, TARGET_VOCAB)
    assert model.last_alphas.shape == (len(PAIRS), u - 1, batch.ids.shape[1])

    encoded = model.encode(batch)
    assert encoded.query is None and torch.equal(encoded.mask, batch.mask)
    state = model.initial_state(encoded.h, batch)
    manual, alphas = [], []
    for t in range(u - 1):
        alpha = model.attend(encoded.h, encoded.mask, state)
        step_logits, state = model.decode_step(encoded.h, alpha, state, batch.target_ids[:, t])
        manual.append(step_logits)
        alphas.append(alpha)
    assert torch.equal(logits, torch.stack(manual, dim=1))
    assert torch.equal(model.last_alphas, torch.stack(alphas, dim=1))


def test_training_loss_reads_out_only_target_tokens_and_equals_the_padded_loss():
    """`loss` skips the padded steps; its value and gradients are those of the loss over every step's logits."""
    model, batch = make_model(), make_batch(PAIRS)
    padded = sequence_loss(model(batch), batch.target_ids)
    expected = torch.autograd.grad(padded, list(model.parameters()), allow_unused=True)
    loss = model.loss(batch)
    got = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    torch.testing.assert_close(loss, padded)
    for want, have in zip(expected, got, strict=True):
        assert (want is None) == (have is None)
        if want is not None:
            torch.testing.assert_close(have, want)


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_every_step_attends_only_to_source_tokens(alignment: str, projection: str):
    model, batch = make_model(alignment, projection), make_batch(PAIRS)
    model(batch)
    assert_on_simplex_over_mask(model.last_alphas, batch.mask)
    model.greedy(batch, max_len=6)
    assert_on_simplex_over_mask(model.last_alphas, batch.mask)


def test_uniform_mode_at_inference_gives_one_over_t_at_every_step():
    model, batch = make_model(), make_batch(PAIRS)
    learned = model(batch)
    model.attention.mode = "uniform"
    logits = model(batch)
    expected = (batch.mask / batch.mask.sum(-1, keepdim=True)).unsqueeze(1).expand_as(model.last_alphas)
    assert torch.equal(model.last_alphas, expected)
    assert not torch.allclose(logits, learned)


def test_permute_within_mask_shuffles_each_rows_weights_among_its_tokens():
    batch = make_batch(PAIRS)
    alpha = torch.rand(batch.mask.shape) * batch.mask
    alpha = alpha / alpha.sum(-1, keepdim=True)
    generator = torch.Generator().manual_seed(0)
    draws = [permute_within_mask(alpha, batch.mask, generator) for _ in range(20)]
    for permuted in draws:
        assert torch.all(permuted[~batch.mask] == 0)
        for row in range(len(PAIRS)):
            real = batch.mask[row]
            assert torch.equal(permuted[row, real].sort().values, alpha[row, real].sort().values)
    assert any(not torch.equal(permuted, alpha) for permuted in draws)


def test_permuting_override_changes_outputs_but_keeps_weights_on_the_simplex():
    model, batch = make_model(), make_batch(PAIRS)
    learned = model(batch)
    learned_alphas = model.last_alphas
    generator = torch.Generator().manual_seed(0)
    model.alpha_override = lambda alpha, mask: permute_within_mask(alpha, mask, generator)
    permuted = model(batch)
    assert not torch.allclose(permuted, learned)
    assert_on_simplex_over_mask(model.last_alphas, batch.mask)
    # the first step's query is the same either way, so its weights are a reordering of the learned ones
    torch.testing.assert_close(model.last_alphas[:, 0].sort(-1).values, learned_alphas[:, 0].sort(-1).values)
    model.greedy(batch, max_len=6)
    assert_on_simplex_over_mask(model.last_alphas, batch.mask)

    model.alpha_override = None
    assert torch.equal(model(batch), learned)


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_padding_never_changes_an_instance(alignment: str, projection: str):
    model, batch = make_model(alignment, projection), make_batch(PAIRS)
    logits, alphas = model(batch), model.last_alphas
    translations = model.greedy(batch, max_len=8)
    for i, pair in enumerate(PAIRS):
        alone = make_batch([pair])
        steps, t = alone.target_ids.shape[1] - 1, alone.ids.shape[1]
        torch.testing.assert_close(model(alone)[0], logits[i, :steps], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model.last_alphas[0], alphas[i, :steps, :t], rtol=1e-5, atol=1e-5)
        assert torch.all(alphas[i, :steps, t:] == 0)
        assert model.greedy(alone, max_len=8) == [translations[i]]


def test_greedy_stops_at_eos_and_never_emits_pad_or_sos():
    model, batch = make_model(), make_batch(PAIRS)
    with torch.no_grad():
        model.output.bias.zero_()
        model.output.bias[[PAD_ID, SOS_ID, 5]] = torch.tensor([1e4, 1e4, 1e3])  # 5 wins once PAD/SOS are barred
        assert model.greedy(batch, max_len=4) == [[5] * 4] * len(PAIRS)
        assert model.last_alphas.shape[1] == 4
        model.output.bias[EOS_ID] = 1e3 + 1
        assert model.greedy(batch, max_len=4) == [[]] * len(PAIRS)
        assert model.last_alphas.shape[1] == 1  # every instance ended at the first step: no more steps


def sharpened(seed: int) -> Seq2Seq:
    """A model whose untrained output is peaked enough that beam search and greedy decoding disagree."""
    model = make_model(seed=seed)
    with torch.no_grad():
        model.output.weight.mul_(4.0)
        model.output.bias[EOS_ID] += 1.0  # some translations end early
    return model


def log_prob_per_token(model: Seq2Seq, source: list[int], output: list[int], max_len: int) -> float:
    """log p(output) per generated token, by teacher forcing over the tokens `beam` may emit: a translation
    shorter than `max_len` ends with `<eos>` (counted), one of `max_len` tokens was cut there."""
    batch = make_batch([(source, output)])  # targets come as <sos> output <eos>
    with torch.no_grad():
        logits = model(batch)[0].index_fill(-1, torch.tensor([PAD_ID, SOS_ID]), float("-inf"))
    steps = torch.log_softmax(logits, dim=-1).gather(-1, batch.target_ids[0, 1:].unsqueeze(-1)).squeeze(-1)
    generated = len(output) + 1 if len(output) < max_len else max_len
    return float(steps[:generated].sum()) / generated


def test_beam_of_one_is_greedy_and_a_wide_beam_finds_the_best_translation():
    """With `max_len` 2 a beam of 32 keeps every one-token prefix (22 emittable tokens), so it must return the
    translation of highest log-probability per token among all of them: found here by enumeration."""
    model, batch = sharpened(seed=1), make_batch(PAIRS)
    greedy = model.greedy(batch, max_len=2)
    assert model.beam(batch, beam_size=1, max_len=2) == greedy
    emittable = [t for t in range(TARGET_VOCAB) if t not in (PAD_ID, SOS_ID, EOS_ID)]
    outputs = [[], *([a] for a in emittable), *([a, b] for a in emittable for b in emittable)]
    found = model.beam(batch, beam_size=32, max_len=2)
    for (source, _), translation in zip(PAIRS, found):
        best = max(log_prob_per_token(model, source, output, 2) for output in outputs)
        assert log_prob_per_token(model, source, translation, 2) == pytest.approx(best, abs=1e-5)
    assert found != greedy  # the search is not greedy decoding under another name


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_beam_search_of_an_instance_does_not_depend_on_its_batch(alignment: str):
    model, batch = make_model(alignment, seed=2), make_batch(PAIRS)
    with torch.no_grad():
        model.output.weight.mul_(6.0)
    translations = model.beam(batch, beam_size=4, max_len=8)
    alphas = model.last_alphas
    assert_on_simplex_over_mask(alphas, batch.mask)
    for i, pair in enumerate(PAIRS):
        alone = make_batch([pair])
        assert model.beam(alone, beam_size=4, max_len=8) == [translations[i]]
        steps, t = model.last_alphas.shape[1], alone.ids.shape[1]
        torch.testing.assert_close(model.last_alphas[0, : len(translations[i])], alphas[i, : len(translations[i]), :t])
        assert steps >= len(translations[i])


def test_beam_search_translates_under_uniform_attention():
    model, batch = make_model(seed=1), make_batch(PAIRS)
    model.attention.mode = "uniform"
    model.beam(batch, beam_size=3, max_len=5)
    expected = (batch.mask / batch.mask.sum(-1, keepdim=True)).unsqueeze(1).expand_as(model.last_alphas)
    assert torch.equal(model.last_alphas, expected)


def test_gradient_reaches_the_source_embeddings():
    model, batch = make_model(), make_batch(PAIRS)
    embedded = model.embed(batch).detach().requires_grad_()
    sequence_loss(model(batch, embedded=embedded), batch.target_ids).backward()
    grad = embedded.grad
    assert grad is not None and torch.isfinite(grad).all()
    tokens = batch.ids != PAD_ID
    assert torch.all(grad.norm(dim=-1)[tokens] > 0)


def test_sequence_loss_is_the_mean_over_real_target_tokens():
    batch = make_batch(PAIRS)
    logits = torch.randn(len(PAIRS), batch.target_ids.shape[1] - 1, TARGET_VOCAB)
    gold = batch.target_ids[:, 1:]
    real = gold != PAD_ID
    nll = -torch.log_softmax(logits, -1).gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (B, U-1)
    torch.testing.assert_close(sequence_loss(logits, batch.target_ids), nll[real].mean())
    assert int(real.sum()) == sum(len(target) + 1 for _, target in PAIRS)  # every token and its <eos>


def reversal_table(rng: np.random.Generator, n: int, vocab: Vocab) -> pa.Table:
    """Target = source reversed, over 8 symbols, lengths 3-6."""
    sources = [rng.integers(len(SPECIALS), len(vocab), size=rng.integers(3, 7)).tolist() for _ in range(n)]
    targets = [source[::-1] for source in sources]
    return pa.table(
        {
            "instance_id": np.arange(n),
            "label": np.full(n, -1),
            "ids": sources,
            "target_ids": targets,
            "target_tokens": [vocab.decode(t) for t in targets],
        }
    )


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_learns_to_reverse_a_sequence(alignment: str):
    vocab = Vocab(SPECIALS + tuple("abcdefgh"))
    rng = np.random.default_rng(0)
    train, test = reversal_table(rng, 400, vocab), reversal_table(rng, 100, vocab)
    torch.manual_seed(0)
    model = Seq2Seq(len(vocab), len(vocab), 16, 32, AttentionSpec(alignment, "softmax"), 32)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(250):
        batch = collate(train.take(rng.choice(train.num_rows, 32, replace=False)).to_pydict())
        loss = sequence_loss(model(batch), batch.target_ids)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    model.eval()
    translations = model.greedy(collate(test.to_pydict()), max_len=10)
    targets = test.column("target_ids").to_pylist()
    correct = sum(a == b for out, gold in zip(translations, targets) for a, b in zip(out, gold))
    assert correct / sum(map(len, targets)) > 0.9  # chance is 1/8 per token
    assert np.mean([out == gold for out, gold in zip(translations, targets)]) > 0.7
    assert bleu(model, test, vocab, batch_size=32, max_len=10) > 70
    assert not model.training
    model.train()
    bleu(model, test, vocab, limit=10)
    assert model.training  # bleu decodes in eval mode and gives the model back in the mode it found it


def test_same_seed_gives_identical_parameters_and_outputs():
    first, second = make_model(seed=3), make_model(seed=3)
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items()):
        assert torch.equal(a, b), name
    batch = make_batch(PAIRS)
    assert torch.equal(first(batch), second(batch))
    assert first.greedy(batch) == second.greedy(batch)
    assert not torch.equal(make_model(seed=4).output.weight, first.output.weight)


def test_greedy_and_bleu_on_multi30k(data_dir: Path, tmp_path: Path):
    data = load_dataset("multi30k", data_dir, tmp_path, DataConfig())  # the excerpt: 40 pairs per split
    test = data.splits["test"]
    torch.manual_seed(0)
    model = Seq2Seq(len(data.vocab), len(data.target_vocab), 32, 32, AttentionSpec("additive", "softmax"), 32).eval()
    batch = collate(test.slice(0, 64).to_pydict())
    translations = model.greedy(batch, max_len=20)
    assert len(translations) == test.num_rows == 40
    assert all(len(ids) <= 20 for ids in translations)
    assert not {PAD_ID, SOS_ID, EOS_ID} & {i for ids in translations for i in ids}
    assert all(0 <= i < len(data.target_vocab) for ids in translations for i in ids)
    score = bleu(model, test, data.target_vocab, batch_size=32, max_len=20, limit=64)
    assert isinstance(score, float) and 0.0 <= score <= 100.0
