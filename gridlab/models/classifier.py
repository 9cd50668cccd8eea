"""Attention classifiers built around the contract every analysis relies on (docs/models.md#contract):

    >>> encoded = model.encode(batch)                    # h (B, T, m), mask (B, T), query (B, q) | None
    >>> alpha = model.attend(encoded.h, encoded.mask, encoded.query)          # (B, T)
    >>> logits = model.decode(encoded.h, alpha, encoded.query)                # (B, C)
    >>> torch.equal(logits, model(batch))
    True

An analysis intervenes between the parts: it permutes or erases `alpha`, or feeds `encode` its own
embeddings (`model.embed(batch)` with `requires_grad`) to take gradients with respect to the input.

- `FlatClassifier` (FLAN / J&W): one attention layer over the tokens.
- `PairClassifier` (J&W's NLI/QA models, Vashishth §3.2): premise and query encoded separately (from one
  embedding matrix, or one each as in J&W's code); attention over the premise is conditioned on the
  query's summary q; output `W tanh(W_c c + W_q q)` (J&W), or `W c` with `model.pair_output: context` (Vashishth).
- `HierarchicalClassifier` (HAN, S&S): word attention builds sentence vectors, a sentence encoder and the
  final attention layer build the document vector. `encode` returns the sentence level (the layer the
  analyses act on); the word-level weights of the last pass are in `encoded.word_alpha`. The attention
  mode (uniform, random) applies to the final layer, and to the word level with `word_mode`. `encode` is
  `encode_words` then `encode_sentences`, so an analysis can weigh one word pass's states several ways.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from torch import nn

from gridlab.data.batching import Batch, Sentences
from gridlab.data.vocab import PAD_ID
from gridlab.models.attention import Attention, AttentionSpec
from gridlab.models.encoders import Encoder

# Sentences per word-encoder call in a hierarchical model: longest first, each call padded to its own longest
WORD_CHUNK_ROWS = 64


@dataclass(frozen=True)
class Encoded:
    h: torch.Tensor  # (B, T, m) what attention weighs
    mask: torch.Tensor  # (B, T) where attention may go
    query: torch.Tensor | None = None  # (B, q) pair tasks
    word_alpha: torch.Tensor | None = None  # (B, S, W) hierarchical models


@dataclass(frozen=True)
class WordStates:
    """A hierarchical model's word level over a batch: what its sentence level reads."""

    h: torch.Tensor  # (B*S, W, m_w) the word encoder's states, sentence by sentence
    alpha: torch.Tensor  # (B, S, W) word attention; a padding sentence's falls on its first slot
    mask: torch.Tensor  # (B, S, W) real words


@dataclass(frozen=True)
class Sizes:
    vocab: int
    embedding: int
    classes: int
    attention: int
    dropout: float


class AttentionClassifier(nn.Module, ABC):
    """The shared attend/decode/forward; subclasses define `embed`, `encode` and `output`."""

    embedding: nn.Embedding
    encoder: Encoder  # under the final attention layer (the sentence encoder of HAN models)
    attention: Attention
    dropout: nn.Dropout
    classifier: nn.Linear

    def embed(self, batch: Batch) -> torch.Tensor:
        return self.embedding(batch.ids)  # (B, T, d)

    @abstractmethod
    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        """Representations to attend over; `embedded` replaces `embed(batch)` (for input gradients)."""

    @abstractmethod
    def output(self, context: torch.Tensor, query: torch.Tensor | None) -> torch.Tensor:
        """(B, m) context [and (B, q) query] -> (B, C) logits."""

    def _premise(self, batch: Batch, embedded: torch.Tensor | None) -> torch.Tensor:
        """(B, T, m) the encoder over the (given or looked-up) embeddings of a flat token sequence."""
        x = self.dropout(self.embed(batch) if embedded is None else embedded)
        return self.encoder(x, batch.lengths, batch.ids != PAD_ID)

    def attend(self, h: torch.Tensor, mask: torch.Tensor, query: torch.Tensor | None = None) -> torch.Tensor:
        return self.attention(h, mask, query)

    def decode(self, h: torch.Tensor, alpha: torch.Tensor, query: torch.Tensor | None = None) -> torch.Tensor:
        """Context c = sum_t alpha_t h_t, then the classifier. A zero alpha gives the zero context."""
        context = torch.einsum("bt,btm->bm", alpha.to(h.dtype), h)  # (B, m)
        return self.output(context, query)

    def value_map(self, h: torch.Tensor) -> torch.Tensor:
        """(B, T, m) -> (B, T, k): the linear map `output` applies first to the context, applied to each item
        (no bias): c = sum_t alpha_t h_t reaches the output as sum_t alpha_t value_map(h)_t, the vectors whose
        weighted norms Kobayashi et al. (2020) rank."""
        return h @ self.classifier.weight.T

    def forward(self, batch: Batch) -> torch.Tensor:
        encoded = self.encode(batch)
        return self.decode(encoded.h, self.attend(encoded.h, encoded.mask, encoded.query), encoded.query)

    def attention_parameter_names(self) -> set[str]:
        """Parameters of attention layers (J&W: exempt from weight decay)."""
        return {
            f"{prefix}.{name}"
            for prefix, module in self.named_modules()
            if isinstance(module, Attention)
            for name, _ in module.named_parameters()
        }


def _embedding(sizes: Sizes) -> nn.Embedding:
    return nn.Embedding(sizes.vocab, sizes.embedding, padding_idx=PAD_ID)


class FlatClassifier(AttentionClassifier):
    def __init__(self, sizes: Sizes, encoder: Encoder, attention: AttentionSpec):
        super().__init__()
        self.embedding = _embedding(sizes)
        self.encoder = encoder
        self.attention = Attention(attention, encoder.output_dim, None, sizes.attention)
        self.dropout = nn.Dropout(sizes.dropout)
        self.classifier = nn.Linear(encoder.output_dim, sizes.classes)

    def encode(
        self, batch: Batch, embedded: torch.Tensor | None = None, premise: torch.Tensor | None = None
    ) -> Encoded:
        """`premise` (B, T, m) stands for the encoder's output where it was computed elsewhere (the analyses'
        written-out BiLSTM, `analyses/bilstm.py`)."""
        h = premise if premise is not None else self._premise(batch, embedded)
        return Encoded(h, batch.mask)

    def output(self, context, query):
        return self.classifier(self.dropout(context))


class PairClassifier(AttentionClassifier):
    def __init__(
        self,
        sizes: Sizes,
        premise_encoder: Encoder,
        query_encoder: Encoder,
        attention: AttentionSpec,
        separate_query_embedding: bool = False,
        query_in_output: bool = True,
    ):
        super().__init__()
        self.embedding = _embedding(sizes)
        self.encoder = premise_encoder
        self.query_encoder = query_encoder
        self.attention = Attention(attention, premise_encoder.output_dim, query_encoder.output_dim, sizes.attention)
        self.dropout = nn.Dropout(sizes.dropout)
        self.context_layer: nn.Linear | None = None
        self.query_layer: nn.Linear | None = None
        if query_in_output:  # J&W's AttnDecoderQA: W tanh(W_c c + W_q q)
            self.context_layer = nn.Linear(premise_encoder.output_dim, sizes.attention)
            self.query_layer = nn.Linear(query_encoder.output_dim, sizes.attention, bias=False)
            self.classifier = nn.Linear(sizes.attention, sizes.classes)
        else:  # Vashishth et al. §3.2: the context alone to a dense layer, the query reaching it only through alpha
            self.classifier = nn.Linear(premise_encoder.output_dim, sizes.classes)
        self.query_embedding: nn.Embedding | None = None
        if separate_query_embedding:  # built without a draw and registered last: `build_model` draws its start
            # after every other parameter's, so the two models differ in this matrix alone
            empty = torch.zeros(sizes.vocab, sizes.embedding)
            self.query_embedding = nn.Embedding(sizes.vocab, sizes.embedding, padding_idx=PAD_ID, _weight=empty)

    def encode(
        self, batch: Batch, embedded: torch.Tensor | None = None, premise: torch.Tensor | None = None
    ) -> Encoded:
        """`premise` as `FlatClassifier.encode`'s."""
        h = premise if premise is not None else self._premise(batch, embedded)
        if batch.query_ids is None or batch.query_lengths is None:
            raise ValueError("a pair model needs batches with a query (query_ids, query_lengths)")
        query_tokens = batch.query_ids != PAD_ID
        embedding = self.embedding if self.query_embedding is None else self.query_embedding
        xq = self.dropout(embedding(batch.query_ids))
        hq = self.query_encoder(xq, batch.query_lengths, query_tokens)
        return Encoded(h, batch.mask, self.query_encoder.summary(hq, batch.query_lengths, query_tokens))

    def output(self, context, query):
        if self.context_layer is None or self.query_layer is None:
            return self.classifier(self.dropout(context))
        hidden = torch.tanh(self.context_layer(self.dropout(context)) + self.query_layer(query))
        return self.classifier(hidden)

    def value_map(self, h: torch.Tensor) -> torch.Tensor:
        if self.context_layer is None:
            return super().value_map(h)
        return h @ self.context_layer.weight.T  # the context's linear part before the query joins it


class HierarchicalClassifier(AttentionClassifier):
    def __init__(
        self,
        sizes: Sizes,
        word_encoder: Encoder,
        sentence_encoder: Encoder,
        attention: AttentionSpec,
        word_mode: str = "learned",
    ):
        super().__init__()
        self.embedding = _embedding(sizes)
        self.word_encoder = word_encoder
        word_spec = AttentionSpec(attention.alignment, attention.projection, attention.lam, word_mode)
        self.word_attention = Attention(word_spec, word_encoder.output_dim, None, sizes.attention)
        self.encoder = sentence_encoder
        self.attention = Attention(attention, sentence_encoder.output_dim, None, sizes.attention)
        self.dropout = nn.Dropout(sizes.dropout)
        self.classifier = nn.Linear(sentence_encoder.output_dim, sizes.classes)

    def embed(self, batch: Batch) -> torch.Tensor:
        return self.embedding(_sentences(batch).ids)  # (B, S, W, d)

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        words = self.encode_words(batch, embedded)
        return self.encode_sentences(batch, words, words.alpha)

    def encode_words(self, batch: Batch, embedded: torch.Tensor | None = None) -> WordStates:
        """The word level, most of the model's work: an analysis that tries other word weights
        (attention_ablation) runs it once and `encode_sentences` once per set of weights."""
        sentences = _sentences(batch)
        x = self.dropout(self.embed(batch) if embedded is None else embedded)
        b, s, w, d = x.shape
        words = sentences.mask.reshape(b * s, w).clone()  # (B*S, W)
        words[:, 0] |= ~words.any(-1)  # a padding sentence attends to its (zero) first slot, never to nothing
        hw = self._encode_words(x.reshape(b * s, w, d), words)  # (B*S, W, m_w)
        return WordStates(hw, self.word_attention(hw, words).reshape(b, s, w), sentences.mask)

    def encode_sentences(self, batch: Batch, words: WordStates, word_alpha: torch.Tensor) -> Encoded:
        """The sentence level over each sentence's word states weighted by `word_alpha` (B, S, W)."""
        b, s, w = word_alpha.shape
        vectors = torch.einsum("nw,nwm->nm", word_alpha.reshape(b * s, w), words.h).reshape(b, s, -1)  # (B, S, m_w)
        doc = _sentences(batch).doc_mask
        h = self.encoder(self.dropout(vectors), doc.sum(-1), doc)  # (B, S, m)
        return Encoded(h, doc, word_alpha=word_alpha * words.mask)

    def output(self, context, query):
        return self.classifier(self.dropout(context))

    def _encode_words(self, x: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        """The word encoder's states (N, W, m_w) of sentences x (N, W, d) with words (N, W), longest first in
        chunks padded to their own longest: a batch of documents pads every sentence to the batch's longest and
        every document to the most sentences, so the whole block is about 10% words on IMDB, and a padding
        sentence (one zero word) costs one step here. A row's states do not depend on its batch
        (tests/models), so this computes what one pass over the block would."""
        lengths = words.sum(-1)
        order = torch.argsort(lengths, descending=True, stable=True)
        pieces = []
        for chunk in order.split(WORD_CHUNK_ROWS):
            n = int(lengths[chunk[0]])
            states = self.word_encoder(x[chunk, :n], lengths[chunk], words[chunk, :n])
            pieces.append(nn.functional.pad(states, (0, 0, 0, x.shape[1] - n)))
        hw = x.new_zeros(*words.shape, self.word_encoder.output_dim)
        return hw.index_copy(0, order, torch.cat(pieces))


def _sentences(batch: Batch) -> Sentences:
    if batch.sentences is None:
        raise ValueError("a hierarchical model needs batches of documents split into sentences")
    return batch.sentences
