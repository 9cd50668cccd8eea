"""A cell's starting embedding matrix: pretrained vectors (a named set or a file), word2vec trained on train
text, or None (trained from scratch, started at N(0, embedding_init_std^2) by `build_model`).

    >>> weights = initial_embeddings(config, data, data_dir, cache_dir)   # (V, d) tensor, or None

Words the vectors do not cover (the special tokens, rare words) start at N(0, std^2) drawn from the cell's
seed (`model.oov_init: normal`; J&W drew them from N(0, 1) beside fastText vectors, gridlab's default std is
0.1, the scale of such vectors) or at zero (`oov_init: zeros`); `<pad>` is the zero vector.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gridlab.config.schema import CellConfig
from gridlab.data.config import DataConfig
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.data.vectors import EmbeddingsError, VocabularyVectors, vector_source, vocabulary_vectors
from gridlab.data.vocab import PAD_ID
from gridlab.data.word2vec import Corpus, word2vec_vectors

WORD2VEC = "word2vec"


def initial_embeddings(
    config: CellConfig, data: PreparedDataset, data_dir: Path, cache_dir: Path
) -> torch.Tensor | None:
    m = config.model
    if m.embeddings is None:
        return None
    if m.embeddings == WORD2VEC:
        extra = [load_dataset(d, data_dir, cache_dir, DataConfig()) for d in m.word2vec_extra]
        found = word2vec_vectors(Corpus.of(data, extra), data.vocab, m.embedding_dim, config.seed, cache_dir)
    else:
        found = vocabulary_vectors(vector_source(m.embeddings, data_dir), data.vocab, cache_dir)
    if found.vectors.shape[1] != m.embedding_dim:
        raise EmbeddingsError(
            f"model.embedding_dim is {m.embedding_dim}, but '{m.embeddings}' has {found.vectors.shape[1]} dimensions"
        )
    return embedding_matrix(found, config.seed, m.embedding_init_std, m.oov_init or "normal")


def embedding_matrix(found: VocabularyVectors, seed: int, std: float, oov_init: str) -> torch.Tensor:
    """Covered rows from the vectors, the others drawn from the seed (or zero), `<pad>` zero."""
    rng = np.random.default_rng(seed)
    vocab_size, dim = found.vectors.shape
    start = rng.standard_normal((vocab_size, dim)) * std if oov_init == "normal" else np.zeros((vocab_size, dim))
    weights = np.where(found.covered[:, None], found.vectors, start).astype(np.float32)
    weights[PAD_ID] = 0.0
    return torch.from_numpy(weights)
