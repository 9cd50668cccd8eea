"""The attention translation model of Vashishth's generation rows (§3.3, Table 3), split along the contract
that every analysis relies on (docs/models.md#contract), with one attention distribution per decoder step:

    >>> encoded = model.encode(batch)                                  # h (B, T, m), mask (B, T)
    >>> state = model.initial_state(encoded.h, batch)                  # (B, hidden)
    >>> for t in range(batch.target_ids.shape[1] - 1):                 # teacher forcing
    ...     alpha = model.attend(encoded.h, encoded.mask, state)       # (B, T), query = decoder state
    ...     logits, state = model.decode_step(encoded.h, alpha, state, batch.target_ids[:, t])  # (B, V)
    >>> model(batch)                                                   # the same logits, stacked (B, U-1, V)
    >>> model.loss(batch)                                              # the training loss, padded steps skipped
    >>> model.greedy(batch, max_len=50)                                # [[target id, ...], ...]
    >>> model.beam(batch, beam_size=5, max_len=50)                     # the same, by beam search
    >>> bleu(model, data.splits["test"], data.target_vocab)            # corpus BLEU of the greedy outputs

Bahdanau et al. (2015), as Vashishth write it (`c_t = f(c_{t-1}, y_{t-1}, h^alpha_t)`): a BiGRU encoder; a
GRU decoder that starts from `tanh(W [final forward state; final backward state])`; at step t the previous
decoder state s_{t-1} is the attention query (additive `v^T tanh(W1 h_i + W2 s_{t-1})` or scaled dot
product, any projection), the context `c_t = sum_i alpha_ti h_i` and the previous target token's embedding
are the GRU's input, `s_t = GRU(s_{t-1}, [e(y_{t-1}); c_t])`, and `W [s_t; c_t]` gives the logits. Attending
with s_{t-1}, not s_t, is what makes `decode_step` a function of alpha alone: one step is the decoding of
its context, as `decode` is for the classifiers.

Interventions at inference: `model.attention.mode = "uniform"` / `"random"` replaces every step's weights
(Vashishth's Infer rows); `model.alpha_override = permute_within_mask` (any `(alpha, mask) -> alpha`) acts on
every step's weights inside `forward` and `greedy`, while `attend` stays the un-intervened weights. The
weights each step actually used are in `model.last_alphas`. `<sos>`/`<eos>` and padding are outside the
mask, the encoder is packed, so padding a batch never changes an instance's logits or translation.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import sacrebleu
import torch
from torch import nn

from gridlab.data.batching import Batch, iterate_batches
from gridlab.data.vocab import EOS_ID, PAD_ID, SOS_ID, Vocab
from gridlab.models.attention import Attention, AttentionSpec
from gridlab.models.classifier import Encoded
from gridlab.models.encoders import build_encoder

AlphaOverride = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
NEVER_GENERATED = (PAD_ID, SOS_ID)  # never a training target, so greedy never emits them


class Seq2Seq(nn.Module):
    def __init__(
        self,
        source_vocab: int,
        target_vocab: int,
        embedding_dim: int,
        hidden: int,
        attention: AttentionSpec,
        attention_size: int,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.embedding = nn.Embedding(source_vocab, embedding_dim, padding_idx=PAD_ID)  # the factory's pretrained slot
        self.target_embedding = nn.Embedding(target_vocab, embedding_dim, padding_idx=PAD_ID)
        self.encoder = build_encoder("gru", embedding_dim, hidden)
        m = self.encoder.output_dim
        self.bridge = nn.Linear(m, hidden)
        self.attention = Attention(attention, m, hidden, attention_size)
        self.decoder = nn.GRUCell(embedding_dim + m, hidden)
        self.output = nn.Linear(hidden + m, target_vocab)
        self.dropout = nn.Dropout(dropout)
        self.alpha_override: AlphaOverride | None = None
        self.last_alphas: torch.Tensor | None = None  # (B, steps, T) weights used by the last forward/greedy

    def embed(self, batch: Batch) -> torch.Tensor:
        return self.embedding(batch.ids)  # (B, T, d)

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        """Source states to attend over; `embedded` replaces `embed(batch)` (for input gradients)."""
        x = self.dropout(self.embed(batch) if embedded is None else embedded)
        h = self.encoder(x, batch.lengths, batch.ids != PAD_ID)  # (B, T, m), zeros on padding
        return Encoded(h, batch.mask)

    def initial_state(self, h: torch.Tensor, batch: Batch) -> torch.Tensor:
        """s_0 = tanh(W [last forward state; first backward state]) (B, hidden)."""
        return torch.tanh(self.bridge(self.encoder.summary(h, batch.lengths, batch.ids != PAD_ID)))

    def attend(self, h: torch.Tensor, mask: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """One step's weights (B, T) with the previous decoder state (B, hidden) as the query."""
        return self.attention(h, mask, query)

    def decode_step(
        self, h: torch.Tensor, alpha: torch.Tensor, state: torch.Tensor, prev_token: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Context from alpha, then one GRU step fed [e(y_{t-1}); c_t] -> (logits (B, V), new state (B, hidden))."""
        readout_input, state = self._advance(h, alpha, state, self.dropout(self.target_embedding(prev_token)))
        return self._readout(readout_input), state

    def forward(self, batch: Batch, embedded: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher forcing: logits (B, U-1, V) predicting target_ids[:, 1:] from target_ids[:, :-1]."""
        return self._readout(self._teacher_forced(batch, embedded))

    def loss(self, batch: Batch) -> torch.Tensor:
        """`sequence_loss(model(batch), batch.target_ids)`, read out only where a target token is: the
        vocabulary-sized layer never sees a padded step."""
        readout_inputs = self._teacher_forced(batch)  # (B, U-1, hidden + m)
        gold = _target_ids(batch)[:, 1:]  # (B, U-1)
        real = gold != PAD_ID
        return nn.functional.cross_entropy(self._readout(readout_inputs[real]), gold[real])

    @torch.no_grad()
    def greedy(self, batch: Batch, max_len: int = 50) -> list[list[int]]:
        """Argmax decoding of the whole batch in lockstep; each output stops before its first `<eos>`.

        Call it in eval mode (dropout off); `bleu` does. `last_alphas` then has one row per step taken, and an
        instance's rows after its `<eos>` belong to no output.
        """
        if max_len < 1:
            raise ValueError(f"max_len must be at least 1, not {max_len}")
        encoded = self.encode(batch)
        state = self.initial_state(encoded.h, batch)
        token = torch.full((batch.size,), SOS_ID, dtype=torch.long, device=batch.ids.device)
        done = torch.zeros(batch.size, dtype=torch.bool, device=batch.ids.device)
        barred = torch.tensor(NEVER_GENERATED, device=batch.ids.device)
        tokens, alphas = [], []
        for _ in range(max_len):
            alpha = self._used_alpha(encoded, state)
            logits, state = self.decode_step(encoded.h, alpha, state, token)
            token = logits.index_fill(-1, barred, float("-inf")).argmax(-1)  # (B,)
            tokens.append(token)
            alphas.append(alpha)
            done |= token == EOS_ID
            if bool(done.all()):
                break
        self.last_alphas = torch.stack(alphas, dim=1)  # (B, S, T)
        generated = torch.stack(tokens, dim=1)  # (B, S)
        kept = ((generated == EOS_ID).cumsum(dim=1) == 0).sum(dim=1)  # (B,) tokens before the first <eos>
        return [row[:n] for row, n in zip(generated.tolist(), kept.tolist())]

    @torch.no_grad()
    def beam(self, batch: Batch, beam_size: int, max_len: int = 50) -> list[list[int]]:
        """Beam search, the whole batch in lockstep: each instance keeps the `beam_size` partial translations
        of highest summed log-probability. A hypothesis ended by `<eos>` stays in the beam at its score (it
        continues with `<eos>` at no cost); the output is the hypothesis of highest log-probability per
        generated token, `<eos>` counted (so long translations are not penalised for their length). Ties go to
        the lower (hypothesis, token) index, by a stable sort. `beam_size` 1 is `greedy`.

        As `greedy`: eval mode, `last_alphas` (B, S, T) the weights the chosen hypothesis used at each step,
        and an attention intervention (`attention.mode`, `alpha_override`) acts on every hypothesis's steps.
        """
        if beam_size == 1:
            return self.greedy(batch, max_len)
        if beam_size < 1 or max_len < 1:
            raise ValueError(f"beam_size and max_len must be at least 1, not {beam_size} and {max_len}")
        b, k, device = batch.size, beam_size, batch.ids.device
        encoded = self.encode(batch)
        expanded = Encoded(encoded.h.repeat_interleave(k, dim=0), encoded.mask.repeat_interleave(k, dim=0))
        state = self.initial_state(encoded.h, batch).repeat_interleave(k, dim=0)  # (B*K, hidden)
        scores = torch.full((b, k), float("-inf"), device=device)
        scores[:, 0] = 0.0  # one live hypothesis per instance at the start
        lengths = torch.zeros(b, k, device=device)
        finished = torch.zeros(b, k, dtype=torch.bool, device=device)
        token = torch.full((b * k,), SOS_ID, dtype=torch.long, device=device)
        barred = torch.tensor(NEVER_GENERATED, device=device)
        first_row = torch.arange(b, device=device).unsqueeze(1) * k  # (B, 1)
        tokens, parents, alphas = [], [], []
        for _ in range(max_len):
            alpha = self._used_alpha(expanded, state)  # (B*K, T)
            logits, state = self.decode_step(expanded.h, alpha, state, token)
            log_probs = torch.log_softmax(logits.index_fill(-1, barred, float("-inf")), dim=-1).view(b, k, -1)
            ended = torch.full_like(log_probs, float("-inf")).index_fill(-1, torch.tensor([EOS_ID], device=device), 0.0)
            log_probs = torch.where(finished.unsqueeze(-1), ended, log_probs)
            candidates = (scores.unsqueeze(-1) + log_probs).flatten(1)  # (B, K*V)
            chosen = torch.sort(candidates, dim=-1, descending=True, stable=True).indices[:, :k]  # (B, K)
            vocab = log_probs.shape[-1]
            parent, token_of = chosen // vocab, chosen % vocab  # (B, K)
            scores = candidates.gather(1, chosen)
            lengths = lengths.gather(1, parent) + (~finished.gather(1, parent)).float()
            finished = finished.gather(1, parent) | (token_of == EOS_ID)
            state = state[(first_row + parent).flatten()]
            token = token_of.flatten()
            tokens.append(token_of)
            parents.append(parent)
            alphas.append(alpha.view(b, k, -1))
            if bool(finished.all()):
                break
        best = (scores / lengths.clamp(min=1)).argmax(dim=-1)  # (B,) the first of equal maxima
        return self._backtrack(best, tokens, parents, alphas)

    def _backtrack(
        self, best: torch.Tensor, tokens: list[torch.Tensor], parents: list[torch.Tensor], alphas: list[torch.Tensor]
    ) -> list[list[int]]:
        """The chosen hypotheses' tokens, cut before their first `<eos>`, and their weights into `last_alphas`."""
        rows = torch.arange(best.shape[0], device=best.device)
        hypothesis, chosen_tokens, chosen_alphas = best, [], []
        for step in reversed(range(len(tokens))):
            chosen_tokens.append(tokens[step][rows, hypothesis])
            hypothesis = parents[step][rows, hypothesis]  # the hypothesis this step extended, whose weights it used
            chosen_alphas.append(alphas[step][rows, hypothesis])
        self.last_alphas = torch.stack(chosen_alphas[::-1], dim=1)  # (B, S, T)
        generated = torch.stack(chosen_tokens[::-1], dim=1)  # (B, S)
        kept = ((generated == EOS_ID).cumsum(dim=1) == 0).sum(dim=1)
        return [row[:n] for row, n in zip(generated.tolist(), kept.tolist())]

    def attention_parameter_names(self) -> set[str]:
        """Parameters of the attention layer (J&W: exempt from weight decay)."""
        return {f"attention.{name}" for name, _ in self.attention.named_parameters()}

    def _teacher_forced(self, batch: Batch, embedded: torch.Tensor | None = None) -> torch.Tensor:
        """Every step's readout input [s_t; c_t] (B, U-1, hidden + m) fed the gold previous tokens; the target
        embeddings are looked up once (one gradient for the table, not one a step)."""
        previous = self.dropout(self.target_embedding(_target_ids(batch)[:, :-1]))  # (B, U-1, d)
        encoded = self.encode(batch, embedded)
        state = self.initial_state(encoded.h, batch)
        readout_inputs, alphas = [], []
        for t in range(previous.shape[1]):
            alpha = self._used_alpha(encoded, state)
            readout_input, state = self._advance(encoded.h, alpha, state, previous[:, t])
            readout_inputs.append(readout_input)
            alphas.append(alpha)
        self.last_alphas = torch.stack(alphas, dim=1)  # (B, U-1, T)
        return torch.stack(readout_inputs, dim=1)

    def _advance(
        self, h: torch.Tensor, alpha: torch.Tensor, state: torch.Tensor, previous: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One recurrent step from the previous token's embedding (B, d): ([s_t; c_t] (B, hidden + m), s_t)."""
        context = torch.einsum("bt,btm->bm", alpha.to(h.dtype), h)  # (B, m)
        state = self.decoder(torch.cat([previous, context], dim=-1), state)
        return torch.cat([state, context], dim=-1), state

    def _readout(self, readout_input: torch.Tensor) -> torch.Tensor:
        """Logits W [s_t; c_t] (..., V). Teacher forcing reads out every step in one product after the loop:
        the vocabulary-sized layer is most of a step's work, and one product with one weight gradient beats a
        product and a gradient a step (with `loss` skipping padded steps: an epoch 1.9x faster, bench/seq2seq.py)."""
        return self.output(self.dropout(readout_input))

    def _used_alpha(self, encoded: Encoded, state: torch.Tensor) -> torch.Tensor:
        alpha = self.attend(encoded.h, encoded.mask, state)
        return alpha if self.alpha_override is None else self.alpha_override(alpha, encoded.mask)


def _target_ids(batch: Batch) -> torch.Tensor:
    if batch.target_ids is None:
        raise ValueError("teacher forcing needs batches with targets (target_ids)")
    return batch.target_ids


def permute_within_mask(
    alpha: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Each row's weights shuffled among its own unmasked positions (B, T); padding stays 0, sums stay 1."""
    draws = torch.rand(mask.shape, generator=generator, device=mask.device)
    source = torch.where(mask, draws, 2.0).argsort(dim=-1)  # (B, T) real positions in random order, then padding
    slots = (~mask).to(torch.int8).argsort(dim=-1, stable=True)  # (B, T) real positions in order, then padding
    return torch.zeros_like(alpha).scatter(-1, slots, alpha.gather(-1, source))


def sequence_loss(logits: torch.Tensor, target_ids: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the predicted target tokens (`<eos>` included), `<pad>` ignored."""
    gold = target_ids[:, 1:]  # (B, U-1) what each step predicts
    return nn.functional.cross_entropy(logits.flatten(0, 1), gold.flatten(), ignore_index=PAD_ID)


def bleu(
    model: Seq2Seq,
    table: pa.Table,
    target_vocab: Vocab,
    batch_size: int = 64,
    max_len: int = 50,
    limit: int | None = None,
    beam_size: int = 1,
) -> float:
    """Corpus BLEU (sacrebleu, 13a tokenisation) of greedy (`beam_size` 1) or beam-search translations of a
    split's first `limit` rows against its `target_tokens`, space-joined; computed in eval mode, the model's
    mode restored afterwards."""
    training = model.training
    device = next(model.parameters()).device
    model.eval()
    try:
        hypotheses = [
            " ".join(target_vocab.decode(ids))
            for batch in iterate_batches(table, batch_size, limit=limit)
            for ids in model.beam(batch.to(device), beam_size, max_len)
        ]
    finally:
        model.train(training)
    references = [" ".join(tokens) for tokens in table.column("target_tokens").slice(0, len(hypotheses)).to_pylist()]
    return float(sacrebleu.corpus_bleu(hypotheses, [references]).score)
