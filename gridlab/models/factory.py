"""One resolved cell config + its prepared dataset -> the model, seeded so the same cell gives bitwise
identical parameters.

    >>> model = build_model(cell.config, data, initial_embeddings(cell.config, data, data_dir, cache_dir))
    >>> logits = model(batch)
"""

from __future__ import annotations

import torch
from torch import nn

from gridlab.catalog.compatibility import incompatibilities
from gridlab.config.schema import CellConfig
from gridlab.data.prepare import PreparedDataset
from gridlab.data.pretrained import pretrained_folder
from gridlab.data.vocab import PAD_ID
from gridlab.models.attention import AttentionSpec
from gridlab.models.classifier import (
    AttentionClassifier,
    FlatClassifier,
    HierarchicalClassifier,
    PairClassifier,
    Sizes,
)
from gridlab.models.encoders import build_encoder
from gridlab.models.pretrained import PretrainedClassifier, pretrained_classifier
from gridlab.models.seq2seq import Seq2Seq


def attention_spec(config: CellConfig) -> AttentionSpec:
    return AttentionSpec(config.attention, config.projection, config.projection_lambda, config.attention_mode)


def build_model(
    config: CellConfig, data: PreparedDataset, embeddings: torch.Tensor | None = None
) -> AttentionClassifier | Seq2Seq:
    """Embeddings start at N(0, model.embedding_init_std^2), 0.1 by default: the scale of pretrained word
    vectors. PyTorch's N(0, 1) on 300 dimensions overfits SST within two epochs and lands near 0.78
    instead of J&W's 0.81 (measured: seeds 0/1 0.779/0.792 at std 1, 0.811/0.818 at std 0.1)."""
    problems = incompatibilities(config)
    if problems:
        raise ValueError("; ".join(f"{where}: {what}" for where, what in problems))
    torch.manual_seed(config.seed)
    if config.encoder == "pretrained":  # its weights are the pretrained model's; only the output layer is drawn
        return _pretrained(config, data)
    model = _architecture(config, data)
    m = config.model
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Embedding):  # source and (translation) target embeddings
                nn.init.normal_(module.weight, std=m.embedding_init_std)
                module.weight[PAD_ID] = 0.0
        if embeddings is not None:  # pretrained or word2vec vectors (`initial_embeddings`)
            model.embedding.weight.copy_(embeddings)
            if isinstance(model, PairClassifier) and model.query_embedding is not None:
                model.query_embedding.weight.copy_(embeddings)  # J&W: both encoders start from the vectors
    return model


def _pretrained(config: CellConfig, data: PreparedDataset) -> PretrainedClassifier:
    m = config.model
    if m.pretrained is None:  # `incompatibilities` reports it; this keeps mypy's None check
        raise ValueError("encoder pretrained needs model.pretrained")
    folder = pretrained_folder(m.pretrained)
    classes = len(data.label_names)
    return pretrained_classifier(folder, data.vocab, classes, attention_spec(config), m.dropout, m.max_pieces)


def _architecture(config: CellConfig, data: PreparedDataset) -> AttentionClassifier | Seq2Seq:
    m = config.model
    spec = attention_spec(config)
    if config.architecture == "seq2seq":
        if data.target_vocab is None:
            raise ValueError(
                f"architecture seq2seq needs a translation dataset (with a target vocabulary), not {data.id}"
            )
        return Seq2Seq(
            len(data.vocab), len(data.target_vocab), m.embedding_dim, m.hidden_size, spec, m.attention_size, m.dropout
        )

    def encoder(input_dim: int):
        return build_encoder(
            config.encoder,
            input_dim,
            m.hidden_size,
            m.cnn_variant,
            m.transformer_layers,
            m.transformer_heads,
            m.average_activation,
        )

    sizes = Sizes(len(data.vocab), m.embedding_dim, len(data.label_names), m.attention_size, m.dropout)
    if config.architecture == "flat":
        return FlatClassifier(sizes, encoder(m.embedding_dim), spec)
    if config.architecture == "pair":
        separate, query_in_output = m.query_embedding == "separate", m.pair_output == "context_and_query"
        return PairClassifier(
            sizes, encoder(m.embedding_dim), encoder(m.embedding_dim), spec, separate, query_in_output
        )
    words = encoder(m.embedding_dim)
    word_mode = config.attention_mode if m.word_attention_mode == "as_cell" else "learned"
    return HierarchicalClassifier(sizes, words, encoder(words.output_dim), spec, word_mode)
