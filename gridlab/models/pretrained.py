"""A pretrained BERT fine-tuned as a classifier whose attention items are the dataset's words
(docs/models.md#pretrained-encoder).

    >>> model = pretrained_classifier(folder, vocab, classes=2, spec=AttentionSpec("dot", "softmax"), ...)
    >>> encoded = model.encode(batch)              # h (B, T, m) word states, query (B, m) the [CLS] state
    >>> alpha = model.attend(encoded.h, encoded.mask, encoded.query)    # (B, T) [CLS] attention over words
    >>> with model.encoder.keeping_maps():
    ...     model.encode(batch)
    >>> model.encoder.attention_maps                # [(B, H, T, T)] layers 1..L-1, pooled to words

The batch holds gridlab's word ids (`<sos> words <eos>`); a table built once from the vocabulary maps every
word to its word pieces (`<sos>` -> [CLS], `<eos>` -> [SEP], `<unk>` -> [UNK], at most `WORD_PIECES` pieces
a word), so `embed(batch)` is (B, T, K, d): each word's pieces' embeddings in its own slot. `encode` packs the
pieces into (B, P) sequences with one gather (a (B, P) piece -> word index kept beside them), runs the
embedding sums and the first L - 1 layers over the pieces, and pools the pieces' states to their words by
their mean: h, the input of the last layer, one vector per word.

The last layer is where the [CLS] token reads the sentence: its query attends over the words (never [CLS]
or [SEP] themselves), each head with its own softmax, and the heads' weights are averaged into one
distribution alpha, which every head then uses: c = sum_t alpha_t h_t, and the [CLS] output of the last
layer is LN(FFN(LN(q + W_O (W_V c + b_V)))), q the [CLS] state, then dropout and a linear layer. So
`decode(h, alpha, q)` is exactly the model, and permuting, erasing or replacing alpha (uniform, random at
inference) acts on the last layer's [CLS] attention. Only the [CLS] row of the last layer feeds the output,
so the other rows are not computed. Layers 1..L-1 are BERT's own (eager attention, written out here so each
layer's maps are tensors an analysis reads, as in `gridlab.models.transformer`); their maps are pooled to
words for rollout and flow: a word as a key gets the sum of its pieces' weights (attention mass), a word as a
query the mean of its pieces' rows, so each row still sums to 1.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from gridlab.data.batching import Batch
from gridlab.data.vocab import EOS_ID, PAD_ID, SOS_ID, UNK_ID, Vocab
from gridlab.models.attention import Attention, AttentionSpec
from gridlab.models.classifier import AttentionClassifier, Encoded
from gridlab.models.encoders import Encoder
from gridlab.models.projections import project

WORD_PIECES = 8  # pieces kept per word: the rest of a longer word (a URL, a rare compound) is dropped
NO_PIECE = -1


def load_bert(folder: Path) -> tuple[Any, Any]:
    """(BertModel, tokenizer) from a local Hugging Face folder, never from the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig, AutoModel, AutoTokenizer  # the only importer of transformers
    from transformers.utils import logging

    logging.disable_progress_bar()  # no bar per model load in a trial's log, and no report of the unused
    logging.set_verbosity_error()  # pooler weights (a sentence-transformers folder ships BERT's pooler)

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    if config.model_type != "bert":
        raise ValueError(f"{folder}: a {config.model_type} model; the pretrained encoder reads BERT models")
    model = AutoModel.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager", add_pooling_layer=False
    )
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return model, tokenizer


def piece_table(vocab: Vocab, tokenizer: Any) -> torch.Tensor:
    """(V, K) the word-piece ids of every vocabulary word (NO_PIECE after its last), K <= WORD_PIECES."""
    words = list(vocab.itos)
    pieces = tokenizer(words, add_special_tokens=False)["input_ids"]  # one batched call over the vocabulary
    specials = {
        PAD_ID: [],
        UNK_ID: [tokenizer.unk_token_id],
        SOS_ID: [tokenizer.cls_token_id],
        EOS_ID: [tokenizer.sep_token_id],
    }
    rows = [specials.get(i, p[:WORD_PIECES] or [tokenizer.unk_token_id]) for i, p in enumerate(pieces)]
    table = torch.full((len(rows), max(len(r) for r in rows)), NO_PIECE, dtype=torch.long)
    for i, row in enumerate(rows):
        table[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return table


class Packed:
    """A batch's word pieces packed into (B, P) sequences, and the one-hot map of pieces to words."""

    def __init__(self, valid: torch.Tensor, max_pieces: int):
        """valid (B, T, K): slot k of word t holds a piece. The first `max_pieces` - 1 pieces of a row are kept
        and its last one ([SEP]), so a long row loses the end of its text, never its [CLS] or [SEP]."""
        b, t, k = valid.shape
        flat = valid.reshape(b, t * k)  # (B, T*K) in reading order
        rank = flat.long().cumsum(-1)  # (B, T*K) 1-based position of each piece
        keep = flat & ((rank < max_pieces) | (rank == rank[:, -1:]))
        p = int(keep.sum(-1).max())
        self.order = torch.argsort((~keep).long(), dim=-1, stable=True)[:, :p]  # (B, P) slots of the kept pieces
        self.pieces = keep.gather(1, self.order)  # (B, P) real pieces
        word_of = torch.where(self.pieces, self.order // k, -1)  # (B, P) word index, -1 on padding
        self.onehot = (word_of[:, None, :] == torch.arange(t, device=valid.device)[None, :, None]).float()  # (B,T,P)
        self.counts = self.onehot.sum(-1)  # (B, T) pieces kept per word
        self.mean = self.onehot / self.counts.clamp_min(1)[..., None]  # (B, T, P) rows average a word's pieces

    def gather(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, K, d) per word slot -> (B, P, d) packed."""
        b, t, k, d = x.shape
        return x.reshape(b, t * k, d).gather(1, self.order[..., None].expand(-1, -1, d))

    def words(self, states: torch.Tensor) -> torch.Tensor:
        """(B, P, m) piece states -> (B, T, m) each word's mean."""
        return torch.bmm(self.mean.to(states.dtype), states)

    def word_map(self, maps: torch.Tensor) -> torch.Tensor:
        """(B, H, P, P) attention between pieces -> (B, H, T, T): keys summed, queries averaged."""
        return torch.einsum("btp,bhpq,bsq->bhts", self.mean.to(maps.dtype), maps, self.onehot.to(maps.dtype))


class PretrainedEncoder(Encoder):
    """BERT's embeddings and its first L - 1 layers over a batch's word pieces -> (B, T, m) word states."""

    def __init__(self, bert: Any, max_pieces: int):
        super().__init__()
        config = bert.config
        self.embeddings = bert.embeddings
        self.layers = nn.ModuleList(bert.encoder.layer[:-1])
        self.heads = config.num_attention_heads
        self.output_dim = config.hidden_size
        self.max_pieces = min(max_pieces, config.max_position_embeddings)
        self.attention_dropout = nn.Dropout(config.attention_probs_dropout_prob)
        # Every layer's maps are kept only for a pass that reads them (`keeping_maps`): on 512-piece documents
        # they are (B, H, P, P) per layer, and pooled to T words (T^2) more, in every forward of training,
        # leave-one-out, erasure and integrated gradients, which never read them.
        self.keep_maps = False
        self.attention_maps: list[torch.Tensor] = []  # (B, H, T, T) per layer, pooled to words
        self.packed: Packed | None = None
        self._values: list[torch.Tensor] = []  # (B, H, P, m/H) per layer, for `norm_maps`
        self._piece_maps: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """x (B, T, K, d) the word-piece embeddings of each word slot, tokens (B, T, K) real pieces -> h
        (B, T, m), the mean of each word's pieces after layer L - 1 (0 for a word cut by `max_pieces`)."""
        packed = Packed(tokens, self.max_pieces)
        pieces = packed.gather(x)  # (B, P, d)
        p = pieces.shape[1]
        e = self.embeddings
        positions = e.position_embeddings(torch.arange(p, device=x.device))[None]  # (1, P, d)
        types = e.token_type_embeddings(torch.zeros(p, dtype=torch.long, device=x.device))[None]
        states = e.dropout(e.LayerNorm(pieces + positions + types))  # (B, P, m)
        self.packed, self._values, self._piece_maps = packed, [], []
        for layer in self.layers:
            states = self._layer(layer, states, packed.pieces)
        self.attention_maps = [packed.word_map(a) for a in self._piece_maps]
        return packed.words(states)

    @contextmanager
    def keeping_maps(self) -> Iterator[None]:
        """Keep every layer's attention maps (and values, for `norm_maps`) of the passes inside."""
        self.keep_maps = True
        try:
            yield
        finally:
            self.keep_maps = False

    def _layer(self, layer: Any, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """One BERT layer (post-norm) over x (B, P, m) with the real `keys` (B, P)."""
        b, p, m = x.shape
        own = layer.attention.self
        q, k, v = (f(x).view(b, p, self.heads, -1).transpose(1, 2) for f in (own.query, own.key, own.value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(m // self.heads)  # (B, H, P, P)
        attention = torch.softmax(scores.masked_fill(~keys[:, None, None, :], float("-inf")), dim=-1)
        if self.keep_maps:
            self._piece_maps.append(attention.detach())
            self._values.append(v.detach())
        mixed = (self.attention_dropout(attention) @ v).transpose(1, 2).reshape(b, p, m)  # (B, P, m)
        x = layer.attention.output(mixed, x)  # LN(x + dropout(W_O mixed))
        return layer.output(layer.intermediate(x), x)  # LN(x + dropout(FFN(x)))

    def norm_maps(self) -> list[torch.Tensor]:
        """[(B, H, T, T)] per layer of the last pass: alpha_hij ||f_h(x_j)|| (Kobayashi et al. 2020) between
        pieces, f_h the head's value and output projections, pooled to words as `attention_maps`."""
        if self.packed is None:
            return []
        packed = self.packed
        with torch.no_grad():
            maps = []
            for layer, attention, values in zip(self.layers, self._piece_maps, self._values):
                out = cast(nn.Linear, cast(Any, layer).attention.output.dense)
                per_head = out.weight.view(out.out_features, self.heads, -1)  # (m, H, m/H)
                norms = torch.einsum("bhpd,mhd->bhpm", values, per_head).norm(dim=-1)  # (B, H, P)
                maps.append(packed.word_map(attention * norms[:, :, None, :]))
            return maps


class ClsAttention(Attention):
    """The last layer's [CLS] attention over the words: per head softmax(q W_Q^h . h_t W_K^h / sqrt(d_h)),
    then the mean over heads. The uniform and random modes are `Attention`'s."""

    def __init__(self, spec: AttentionSpec, query: nn.Linear, key: nn.Linear, heads: int):
        nn.Module.__init__(self)
        self.spec, self.mode, self.hidden = spec, spec.mode, query.out_features
        self.query_map, self.key_map, self.heads = query, key, heads  # W_Q, W_K of the last layer
        self.head_alpha: torch.Tensor | None = None  # (B, H, T) of the last learned pass, for per-head readings

    def head_scores(self, h: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """h (B, T, m), query (B, m) -> (B, H, T) each head's scores."""
        b, t, m = h.shape
        q = self.query_map(query).view(b, self.heads, -1)  # (B, H, m/H)
        k = self.key_map(h).view(b, t, self.heads, -1)  # (B, T, H, m/H)
        return torch.einsum("bhd,bthd->bht", q, k) / math.sqrt(m // self.heads)

    def scores(self, h: torch.Tensor, query: torch.Tensor | None = None) -> torch.Tensor:
        raise ValueError("the [CLS] attention has one score per head, not one per item: use head_scores")

    def forward(self, h: torch.Tensor, mask: torch.Tensor, query: torch.Tensor | None = None) -> torch.Tensor:
        if self.mode != "learned":
            return super().forward(h, mask, query)
        if query is None:
            raise ValueError("the [CLS] attention needs the [CLS] state as its query")
        scores = self.head_scores(h, query)  # (B, H, T)
        b, heads, t = scores.shape
        per_head = project(scores.reshape(b * heads, t), mask.repeat_interleave(heads, 0), "softmax", None)
        self.head_alpha = per_head.reshape(b, heads, t).detach()
        return per_head.reshape(b, heads, t).mean(1)  # (B, T)


class PretrainedClassifier(AttentionClassifier):
    pieces: torch.Tensor  # (V, K) buffer

    def __init__(
        self, bert: Any, pieces: torch.Tensor, classes: int, spec: AttentionSpec, dropout: float, max_pieces: int
    ):
        super().__init__()
        last = bert.encoder.layer[-1]
        self.encoder = PretrainedEncoder(bert, max_pieces)
        self.embedding = bert.embeddings.word_embeddings
        self.register_buffer("pieces", pieces, persistent=False)  # (V, K) rebuilt from the vocabulary
        self.attention = ClsAttention(spec, last.attention.self.query, last.attention.self.key, self.encoder.heads)
        self.value = last.attention.self.value
        self.attention_output = last.attention.output  # W_O, dropout, LayerNorm
        self.intermediate, self.feed_forward = last.intermediate, last.output
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(self.encoder.output_dim, classes)

    def embed(self, batch: Batch) -> torch.Tensor:
        """(B, T, K, d): the embeddings of each word's pieces, 0 in the unused slots."""
        pieces = self.pieces[batch.ids]  # (B, T, K)
        return self.embedding(pieces.clamp_min(0)) * (pieces != NO_PIECE)[..., None]

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        x = self.embed(batch) if embedded is None else embedded
        h = self.encoder(x, batch.lengths, self.pieces[batch.ids] != NO_PIECE)  # (B, T, m)
        packed = cast(Packed, self.encoder.packed)
        return Encoded(h, batch.mask & (packed.counts > 0), h[:, 0])  # the [CLS] state queries the words

    def output(self, context: torch.Tensor, query: torch.Tensor | None) -> torch.Tensor:
        """(B, m) context, (B, m) [CLS] state -> (B, C): the rest of the last layer's [CLS] row, then the head."""
        if query is None:
            raise ValueError("the pretrained classifier's output needs the [CLS] state")
        x = self.attention_output(self.value(context), query)  # LN(q + dropout(W_O (W_V c + b_V)))
        x = self.feed_forward(self.intermediate(x), x)
        return self.classifier(self.dropout(x))

    def value_map(self, h: torch.Tensor) -> torch.Tensor:
        """W_O W_V h: the linear part of what the last layer adds to [CLS] for each word (Kobayashi et al.)."""
        return h @ self.value.weight.T @ self.attention_output.dense.weight.T


def pretrained_classifier(
    folder: Path, vocab: Vocab, classes: int, spec: AttentionSpec, dropout: float, max_pieces: int
) -> PretrainedClassifier:
    bert, tokenizer = load_bert(folder)
    return PretrainedClassifier(bert, piece_table(vocab, tokenizer), classes, spec, dropout, max_pieces)
