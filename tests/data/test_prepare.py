"""Preprocessing on real files: J&W tokenisation, vocabulary from train, the Parquet cache, derived
splits, rationale masks, and the synthetic task whose planted tokens decide its labels.

SST is the copy shipped in the package (the whole release); the other datasets are the excerpts
(tests/excerpts), and the tests marked `release` read the whole releases from $GRIDLAB_DATA."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig, class_of_word, decide_label, filler_word
from gridlab.data.tokenize import normalise, tokenize
from gridlab.data.vocab import EOS_ID, PAD_ID, SOS_ID, UNK_ID, Vocab
from gridlab.errors import DataError, DatasetMissingError
from tests.conftest import truncated_sst_copy


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def sst(shipped_sst: Path, cache: Path):
    return load_dataset("sst", shipped_sst, cache, DataConfig())


def row(table, source_id: str) -> dict:
    rows = [r for r in table.to_pylist() if r["source_id"] == source_id]
    assert len(rows) == 1, source_id
    return rows[0]


def test_tokenizer_lowercases_splits_clitics_and_maps_numbers_to_qqq():
    [text] = tokenize(["The Rock's 2nd film cost $100 million. Awful!"])
    assert text.tokens == ["the", "rock", "'s", "qqq", "film", "cost", "$", "qqq", "million", ".", "awful", "!"]
    assert text.sentence_starts == [0, 10]
    assert normalise("1930s") == "qqq" and normalise("B-Grade") == "b-grade"


def test_sst_numbers_become_qqq(sst):
    test = sst.splits["test"]
    line = row(test, "stsa.binary.test:51")  # "... tv 's defunct cleopatra 2525 ."
    assert line["tokens"][-3:] == ["cleopatra", "qqq", "."]
    assert line["label"] == 0
    tokens = {t for seq in sst.splits["train"].column("tokens").to_pylist() for t in seq}
    assert "qqq" in tokens and not any(ch.isdigit() for t in tokens for ch in t)


def test_sst_first_train_row_and_length_filter(sst):
    first = row(sst.splits["train"], "stsa.binary.train:1")
    assert first["tokens"][:6] == ["a", "stirring", ",", "funny", "and", "finally"]
    assert first["label"] == 1
    assert first["ids"] == sst.vocab.encode(first["tokens"]).tolist()
    lengths = [len(t) for t in sst.splits["train"].column("tokens").to_pylist()]
    assert min(lengths) >= 5  # J&W: SST sentences shorter than 5 tokens are dropped
    assert sst.splits["train"].num_rows < 6920


def test_vocabulary_is_built_from_train_only(sst, shipped_sst: Path, cache: Path):
    assert sst.vocab.itos[:4] == ("<pad>", "<unk>", "<sos>", "<eos>")
    assert (PAD_ID, UNK_ID, SOS_ID, EOS_ID) == (0, 1, 2, 3)
    train_tokens = {t for seq in sst.splits["train"].column("tokens").to_pylist() for t in seq}
    assert set(sst.vocab.itos[4:]) == train_tokens  # min_count 1 for SST
    test = sst.splits["test"].to_pylist()
    unseen = [(r, i) for r in test for i, t in enumerate(r["tokens"]) if t not in train_tokens]
    assert unseen, "SST test has words that train lacks"
    assert all(r["ids"][i] == UNK_ID for r, i in unseen)

    counted = load_dataset("sst", shipped_sst, cache, DataConfig(min_count=3))
    counts: dict[str, int] = {}
    for seq in counted.splits["train"].column("tokens").to_pylist():
        for t in seq:
            counts[t] = counts.get(t, 0) + 1
    assert set(counted.vocab.itos[4:]) == {t for t, c in counts.items() if c >= 3}
    assert len(counted.vocab) < len(sst.vocab)


def test_vocabulary_all_holds_every_splits_words_and_keeps_the_train_entries_key(sst, shipped_sst: Path, cache: Path):
    everything = load_dataset("sst", shipped_sst, cache, DataConfig(vocabulary="all", min_count=3))
    words = {t for split in everything.splits.values() for seq in split.column("tokens").to_pylist() for t in seq}
    assert set(everything.vocab.itos[4:]) == words  # dev and test words too, and no minimum count
    test = everything.splits["test"].to_pylist()
    assert all(everything.vocab.itos[i] == t for r in test for i, t in zip(r["ids"], r["tokens"]))
    assert sst.cache_key == load_dataset("sst", shipped_sst, cache, DataConfig(vocabulary="train")).cache_key
    assert everything.cache_key != load_dataset("sst", shipped_sst, cache, DataConfig(min_count=3)).cache_key


def test_vocab_order_is_count_then_alphabetical():
    vocab = Vocab.build([["b", "a", "c", "a"], ["c", "d"]], min_count=1)
    assert vocab.itos[4:] == ("a", "c", "b", "d")
    assert vocab.encode(["d", "zzz"]).tolist() == [7, UNK_ID]


def test_cache_hit_reads_nothing_and_changed_parameter_rebuilds(shipped_sst: Path, tmp_path: Path, monkeypatch):
    data_dir = shipped_sst
    first = load_dataset("sst", data_dir, tmp_path, DataConfig())
    reader = type(DATASETS["sst"].reader)

    def refuse(*args, **kwargs):
        raise AssertionError("a cache hit must not read the source files")

    monkeypatch.setattr(reader, "read", refuse)
    again = load_dataset("sst", data_dir, tmp_path, DataConfig())
    assert again.cache_key == first.cache_key
    assert again.splits["test"].equals(first.splits["test"])
    assert again.vocab == first.vocab
    with pytest.raises(AssertionError, match="must not read"):
        load_dataset("sst", data_dir, tmp_path, DataConfig(min_length=3))
    monkeypatch.undo()
    rebuilt = load_dataset("sst", data_dir, tmp_path, DataConfig(min_length=3))
    assert rebuilt.cache_key != first.cache_key
    assert rebuilt.splits["train"].num_rows > first.splits["train"].num_rows
    assert len(list((tmp_path / "sst").iterdir())) == 2


def test_a_changed_source_file_is_verified_again_not_served_from_the_cache(data_dir: Path, tmp_path: Path):
    """On the excerpt: the copy is accepted as the excerpt it is, then refused once a line is added."""
    copy = tmp_path / "data"
    shutil.copytree(data_dir / "sst", copy / "sst")
    load_dataset("sst", copy, tmp_path / "cache", DataConfig())
    train = copy / "sst" / "stsa.binary.train"
    train.write_text(train.read_text() + "1 an extra sentence added by the user .\n")
    with pytest.raises(DataError, match="stsa.binary.train is not the published release"):
        load_dataset("sst", copy, tmp_path / "cache", DataConfig())


def test_pair_fields_are_tokenised_separately(data_dir: Path, cache: Path):
    sick = load_dataset("sick", data_dir, cache, DataConfig())
    assert sick.label_names == ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
    first = row(sick.splits["train"], "1")
    assert first["tokens"][:5] == ["a", "group", "of", "kids", "is"]
    assert first["query_tokens"][:5] == ["a", "group", "of", "boys", "in"]
    assert first["label"] == 1  # NEUTRAL
    assert first["query_ids"] == sick.vocab.encode(first["query_tokens"]).tolist()


def test_babi_classes_are_the_answers_or_every_word_read_in_train(data_dir: Path, cache: Path):
    answers = load_dataset("babi1", data_dir, cache, DataConfig(babi_size="1k"))
    words = load_dataset("babi1", data_dir, cache, DataConfig(babi_size="1k", babi_labels="vocabulary"))
    assert answers.label_names == ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
    read = {
        t
        for split in ("tokens", "query_tokens")
        for seq in words.splits["train"].column(split).to_pylist()
        for t in seq
    }
    assert set(words.label_names) == read and {"john", "where", "moved"} <= read
    for split in ("train", "test"):  # the same answers, under the larger label set's indices
        named = [answers.label_names[i] for i in answers.splits[split].column("label").to_pylist()]
        assert named == [words.label_names[i] for i in words.splits[split].column("label").to_pylist()]


@pytest.mark.parametrize(
    ("where", "sizes"),
    [
        ("excerpts", {"train": 16, "dev": 2, "test": 2}),
        pytest.param("release", {"train": 3040, "dev": 380, "test": 380}, marks=pytest.mark.release),
    ],
)
def test_partial_dataset_needs_derive_splits(where: str, sizes: dict[str, int], request, cache: Path):
    data_dir = request.getfixturevalue("data_dir" if where == "excerpts" else "release_dir")
    with pytest.raises(DataError, match=r"partial: no train split.*derive_splits"):
        load_dataset("agnews", data_dir, cache, DataConfig())
    derived = load_dataset("agnews", data_dir, cache / where, DataConfig(derive_splits=True))
    assert derived.derived_splits
    assert {s: t.num_rows for s, t in derived.splits.items()} == sizes
    ids = [set(t.column("source_id").to_pylist()) for t in derived.splits.values()]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert derived.label_names == ("World", "Business")


def test_missing_dataset_names_the_fetch_command(tmp_path: Path):
    with pytest.raises(DatasetMissingError, match="gridlab data fetch imdb"):
        load_dataset("imdb", tmp_path, tmp_path / "cache", DataConfig())
    assert not (tmp_path / "cache").exists()


def test_dev_is_carved_from_train_with_a_fixed_seed(data_dir: Path, cache: Path):
    news = load_dataset("20news", data_dir, cache, DataConfig())
    again = load_dataset("20news", data_dir, cache / "other", DataConfig())
    assert news.splits["dev"].column("source_id").equals(again.splits["dev"].column("source_id"))
    train_ids = set(news.splits["train"].column("source_id").to_pylist())
    assert not train_ids & set(news.splits["dev"].column("source_id").to_pylist())
    reseeded = load_dataset("20news", data_dir, cache, DataConfig(split_seed=1))
    assert reseeded.splits["dev"].column("source_id") != news.splits["dev"].column("source_id")
    lengths = [len(t) for s in news.splits.values() for t in s.column("tokens").to_pylist()]
    assert 6 <= min(lengths) and max(lengths) <= 500  # J&W's 20News length filter


def test_test_fraction_pools_the_official_splits_and_carves_them_anew(data_dir: Path, cache: Path):
    config = DataConfig(test_fraction=0.2, dev_fraction=0.2)  # J&W's 20News: 80/20, then 80/20 of train
    news = load_dataset("20news", data_dir, cache, config)
    ids = {s: set(t.column("source_id").to_pylist()) for s, t in news.splits.items()}
    assert not (ids["train"] & ids["dev"]) and not (ids["train"] & ids["test"]) and not (ids["dev"] & ids["test"])
    total = sum(len(v) for v in ids.values())
    assert abs(len(ids["test"]) / total - 0.2) < 0.03 and abs(len(ids["dev"]) / total - 0.16) < 0.03
    by_date = load_dataset("20news", data_dir, cache, DataConfig())
    official_test = set(by_date.splits["test"].column("source_id").to_pylist())
    assert ids["test"] & official_test and ids["test"] - official_test  # drawn from both by-date splits
    assert ids["train"] | ids["dev"] | ids["test"] == official_test | {
        i for s in ("train", "dev") for i in by_date.splits[s].column("source_id").to_pylist()
    }


def test_movie_rationales_align_with_tokens(data_dir: Path, cache: Path):
    movies = load_dataset("movies", data_dir, cache, DataConfig())
    raw = {e.source_id: e for e in DATASETS["movies"].reader.read(data_dir / "movie_rationales", "test")}
    test = movies.splits["test"].to_pylist()
    assert all(any(r["rationale"]) for r in test)  # fold 8: every review is annotated
    sample = test[0]
    example = raw[sample["source_id"]]
    marked = [t for t, m in zip(sample["tokens"], sample["rationale"]) if m]
    expected = [t.tokens for t in tokenize(example.text[s:e] for s, e in example.rationale)]
    assert marked == [t for tokens in expected for t in tokens]
    assert "rationale" not in load_dataset("sst", data_dir, cache, DataConfig()).splits["test"].column_names


def test_sentence_starts_split_documents(data_dir: Path, cache: Path):
    news = load_dataset("20news", data_dir, cache, DataConfig())
    starts = news.splits["train"].column("sentence_starts").to_pylist()
    assert all(s[0] == 0 and s == sorted(set(s)) for s in starts)
    assert np.mean([len(s) for s in starts]) > 3


def test_synthetic_rationale_decides_the_label(tmp_path: Path):
    config = DataConfig(synthetic=SyntheticConfig(n_classes=3, planted=3, distractors=2, n_train=300))
    data = load_dataset("synthetic", tmp_path, tmp_path / "cache", config)
    assert data.label_names == ("0", "1", "2")
    rng = np.random.default_rng(0)
    for table in data.splits.values():
        for r in table.to_pylist():
            tokens, mask, label = r["tokens"], r["rationale"], r["label"]
            assert sum(mask) == 3
            rationale = [t for t, m in zip(tokens, mask) if m]
            assert all(class_of_word(t) == label for t in rationale)
            assert decide_label(tokens, 3) == label
            # everything outside the rationale can change without changing the label ...
            scrambled = [t if m else filler_word(int(rng.integers(200))) for t, m in zip(tokens, mask)]
            assert decide_label(scrambled, 3) == label
            # ... while replacing the rationale with another class's signal words changes it
            other = (label + 1) % 3
            swapped = [f"s{'abc'[other]}aa" if m else t for t, m in zip(tokens, mask)]
            assert decide_label(swapped, 3) != label
    counts = np.bincount(data.splits["train"].column("label").to_numpy(), minlength=3)
    assert counts.min() > 60  # classes are balanced in expectation


def test_synthetic_is_deterministic_by_its_seed(tmp_path: Path):
    a = load_dataset("synthetic", tmp_path, tmp_path / "a", DataConfig())
    b = load_dataset("synthetic", tmp_path, tmp_path / "b", DataConfig())
    c = load_dataset("synthetic", tmp_path, tmp_path / "c", DataConfig(synthetic=SyntheticConfig(seed=1)))
    assert a.splits["train"].equals(b.splits["train"])
    assert not a.splits["train"].column("tokens").equals(c.splits["train"].column("tokens"))


def test_a_file_that_is_not_the_release_is_refused_before_anything_is_built(shipped_sst: Path, tmp_path: Path):
    """A truncated training file would otherwise be prepared, cached and trained on under the same cell id."""
    copy = tmp_path / "data"
    train = truncated_sst_copy(shipped_sst, copy)
    with pytest.raises(DataError) as refused:
        load_dataset("sst", copy, tmp_path / "cache", DataConfig())
    (line,) = refused.value.lines()
    assert str(train) in line and "not the published release" in line and "gridlab data check sst" in line
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("meta.json"))


def test_the_shipped_sst_is_read_when_no_data_folder_is_given(tmp_path: Path, monkeypatch, data_dir: Path):
    """Where the tests find their data is no concern of the product's: GRIDLAB_DATA, ./data, else the package."""
    from gridlab.data.embedded import EMBEDDED_DATA
    from gridlab.data.files import verify_files
    from gridlab.grid.expand import resolve_data_dir

    monkeypatch.delenv("GRIDLAB_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    assert resolve_data_dir(None) == EMBEDDED_DATA
    assert resolve_data_dir(None, shipped=False) == Path("data")  # `data fetch` never writes into the package
    assert [c.verdict for c in verify_files(DATASETS["sst"], EMBEDDED_DATA)] == ["ok", "ok", "ok"]
    (tmp_path / "data").mkdir()
    assert resolve_data_dir(None) == Path("data")  # a local data folder wins
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    assert resolve_data_dir(None) == data_dir


@pytest.mark.release
def test_the_shipped_sst_prepares_as_the_release_does(shipped_sst: Path, release_dir: Path, tmp_path: Path):
    shipped = load_dataset("sst", shipped_sst, tmp_path / "cache", DataConfig())
    shared = load_dataset("sst", release_dir, tmp_path / "cache", DataConfig())
    assert shipped.vocab.digest() == shared.vocab.digest()  # the same files: a model trained on one reads the other
    for split in ("train", "dev", "test"):
        assert shipped.splits[split].equals(shared.splits[split])


def _premises(table) -> set[tuple[str, ...]]:
    return {tuple(tokens) for tokens in table.column("tokens").to_pylist()}


def test_derived_pair_splits_share_no_premise(data_dir: Path, cache: Path):
    """SNLI writes about three hypotheses per premise, one per label, and its own splits share no premise. Carved
    pair by pair, a test premise would sit in train with its other labels: a model that learns the premise is
    pushed to a wrong label, and one that reads the premise alone scores below chance."""
    snli = load_dataset("snli", data_dir, cache, DataConfig(derive_splits=True))
    premises = {split: _premises(table) for split, table in snli.splits.items()}
    assert all(premises.values())
    assert not premises["train"] & premises["test"] and not premises["train"] & premises["dev"]
    assert not premises["dev"] & premises["test"]
    pairs = load_dataset("snli", data_dir, cache, DataConfig(derive_splits=True, carve_unit="instance"))
    shared = _premises(pairs.splits["train"]) & _premises(pairs.splits["test"])
    assert shared  # the excerpt's premises repeat: carving pair by pair splits them
    assert sum(t.num_rows for t in snli.splits.values()) == sum(t.num_rows for t in pairs.splits.values())
