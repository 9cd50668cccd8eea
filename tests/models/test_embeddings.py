"""Embedding initialisation from a word-vector file (GloVe / fastText text format) and word2vec on train."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gridlab.data.vocab import Vocab
from gridlab.models.embeddings import EmbeddingsError, initial_embeddings

VOCAB = Vocab.build([["good", "film", "bad", "plot"]], min_count=1)
TRAIN = [["good", "film"], ["bad", "plot"], ["good", "plot"]] * 20


def test_vectors_file_sets_known_words(tmp_path: Path):
    path = tmp_path / "vectors.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("3 4\n")  # fastText header
        handle.write("good 1 2 3 4\nfilm 0.5 0.5 0.5 0.5\nunused 9 9 9 9\n")
    weights = initial_embeddings(str(path), VOCAB, 4, TRAIN, seed=0)
    assert torch.equal(weights[VOCAB.stoi["good"]], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert torch.equal(weights[VOCAB.stoi["film"]], torch.full((4,), 0.5))
    assert torch.equal(weights[0], torch.zeros(4))  # <pad>
    other = initial_embeddings(str(path), VOCAB, 4, TRAIN, seed=0)
    assert torch.equal(weights, other)  # words without vectors: N(0, 1) from the seed


def test_wrong_dimension_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "v.txt"
    path.write_text("good 1 2 3\n")
    with pytest.raises(EmbeddingsError, match=r"v.txt: line 1: 3 values, expected model.embedding_dim = 4"):
        initial_embeddings(str(path), VOCAB, 4, TRAIN, seed=0)


def test_word2vec_is_deterministic_across_processes():
    code = (
        "from gridlab.models.embeddings import initial_embeddings; from gridlab.data.vocab import Vocab;"
        "v = Vocab.build([['good','film','bad','plot']], 1);"
        "w = initial_embeddings('word2vec', v, 8, [['good','film'],['bad','plot'],['good','plot']]*20, seed=1);"
        "print(w.sum().item(), w[4].tolist())"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(outputs) == 1
