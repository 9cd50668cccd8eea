"""Initial word embeddings: trained from scratch (default), read from a word-vector file in the usual text
format (GloVe / fastText `.vec`, optionally gzip'd), or word2vec trained on the train split (S&S).

    >>> weights = initial_embeddings("glove.6B.300d.txt", vocab, 300, train_tokens, seed=0)

Words the vectors do not cover are drawn from N(0, std^2) (J&W used std 1 beside fastText vectors; gridlab's
default std is 0.1, the scale of such vectors); `<pad>` is the zero vector.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import torch

from gridlab.data.vocab import PAD_ID, Vocab
from gridlab.errors import GridlabError

WORD2VEC = "word2vec"


class EmbeddingsError(GridlabError):
    """A word-vector file that cannot be used."""


def initial_embeddings(
    source: str, vocab: Vocab, dim: int, train_tokens: Iterable[Sequence[str]], seed: int, std: float = 1.0
) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    weights = (rng.standard_normal((len(vocab), dim)) * std).astype(np.float32)
    vectors = _word2vec(train_tokens, dim, seed) if source == WORD2VEC else _read_vectors(Path(source), vocab, dim)
    for word, vector in vectors.items():
        index = vocab.stoi.get(word)
        if index is not None:
            weights[index] = vector
    weights[PAD_ID] = 0.0
    return torch.from_numpy(weights)


def _read_vectors(path: Path, vocab: Vocab, dim: int) -> dict[str, np.ndarray]:
    """Vectors of the vocabulary's words only (a GloVe file holds far more than a dataset uses)."""
    opener = gzip.open if path.suffix == ".gz" else open
    found: dict[str, np.ndarray] = {}
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                parts = line.rstrip().split(" ")
                if number == 1 and len(parts) == 2:
                    continue  # fastText's "count dim" header
                word = parts[0]
                if word not in vocab.stoi or word in found:
                    continue
                if len(parts) - 1 != dim:
                    raise EmbeddingsError(
                        f"{path}: line {number}: {len(parts) - 1} values, expected model.embedding_dim = {dim}"
                    )
                found[word] = np.asarray(parts[1:], dtype=np.float32)
    except OSError as error:
        raise EmbeddingsError(f"{path}: cannot read word vectors ({error.strerror or error})") from None
    return found


def _stable_hash(text: str) -> int:
    """gensim seeds each word's initial vector with hash(word); Python's str hash changes per process."""
    return zlib.crc32(text.encode())


def _word2vec(train_tokens: Iterable[Sequence[str]], dim: int, seed: int) -> dict[str, np.ndarray]:
    from gensim.models import Word2Vec  # imported here: only grids that ask for word2vec pay for gensim

    sentences = [list(tokens) for tokens in train_tokens]
    model = Word2Vec(
        sentences=sentences, vector_size=dim, min_count=1, seed=seed, workers=1, hashfxn=_stable_hash, epochs=5
    )
    return {word: model.wv[word] for word in model.wv.index_to_key}
