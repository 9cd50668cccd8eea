"""word2vec trained on a corpus of datasets' train text (S&S's embeddings), cached per corpus and vocabulary.

    >>> corpus = Corpus.of(data, extra=[imdb])                  # the cell's train text, plus IMDB's train text
    >>> found = word2vec_vectors(corpus, data.vocab, dim=300, seed=0, cache_dir=cache)

Only train splits go into the corpus, so no test text of any dataset shapes the vectors. gensim runs with one
worker and a hash that is stable across processes, so the same corpus and seed give the same vectors on any
machine (gensim seeds each word's start vector with `hash(word)`, and Python's str hash changes per process).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gridlab.data.prepare import PreparedDataset
from gridlab.data.vectors import VocabularyVectors, write_npz
from gridlab.data.vocab import Vocab
from gridlab.store.layout import CacheFiles

EPOCHS = 5
CACHE_VERSION = 1


@dataclass(frozen=True)
class Corpus:
    """Tokenised train text and the identity of where it came from (dataset ids and their cache keys)."""

    sentences: list[list[str]]
    sources: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, data: PreparedDataset, extra: Sequence[PreparedDataset] = ()) -> Corpus:
        sentences: list[list[str]] = []
        for dataset in (data, *extra):
            train = dataset.splits["train"]
            sentences += train.column("tokens").to_pylist()
            if "query_tokens" in train.column_names:
                sentences += [q for q in train.column("query_tokens").to_pylist() if q]
        return cls(sentences, tuple((d.id, d.cache_key) for d in (data, *extra)))


def word2vec_vectors(corpus: Corpus, vocab: Vocab, dim: int, seed: int, cache_dir: Path) -> VocabularyVectors:
    payload = {"sources": corpus.sources, "vocab": vocab.digest(), "dim": dim, "seed": seed, "v": CACHE_VERSION}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]
    path = cache_dir / CacheFiles.vectors(f"word2vec-{key}")
    if path.is_file():
        with np.load(path) as stored:
            return VocabularyVectors(stored["vectors"], stored["covered"])
    found = _train(corpus.sentences, list(vocab.itos), dim, seed)
    write_npz(path, vectors=found.vectors, covered=found.covered)
    return found


def _stable_hash(text: str) -> int:
    return zlib.crc32(text.encode())


def _train(sentences: list[list[str]], words: list[str], dim: int, seed: int) -> VocabularyVectors:
    from gensim.models import Word2Vec  # imported here: only grids that ask for word2vec pay for gensim

    model = Word2Vec(
        sentences=sentences, vector_size=dim, min_count=1, seed=seed, workers=1, hashfxn=_stable_hash, epochs=EPOCHS
    )
    covered = np.asarray([word in model.wv.key_to_index for word in words], dtype=bool)
    vectors = np.zeros((len(words), dim), dtype=np.float32)
    vectors[covered] = model.wv[[w for w, c in zip(words, covered) if c]]
    return VocabularyVectors(vectors, covered)
