r"""`data.strip_punctuation`: punctuation-only tokens are dropped at tokenisation (J&W's SST/IMDB/20News text
had none), words with punctuation inside and `qqq` stay, offsets and sentence starts follow the kept tokens,
and the prepared cache entry is a different one from the default's. `data.inword_punctuation`: words with
punctuation inside split as J&W's SST (`\W` -> space) and 20News (`(\W)+` -> ` \1 `) regexes split them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.tokenize import is_punctuation, pieces, rationale_mask, tokenize

TEXT = "Don't stop -- it's 2019! ... (Really?) $5 e-mail U.S. don't"


@pytest.mark.parametrize("token", [".", "--", "...", "?!", "$", "(", "«", "—", ":)", "'", "-lrb-", "-RRB-"])
def test_punctuation_and_symbols_only_are_punctuation(token: str):
    assert is_punctuation(token)


@pytest.mark.parametrize("token", ["don't", "n't", "'s", "qqq", "u.s.", "e-mail", "_", "a", "é"])
def test_tokens_with_a_word_character_are_not(token: str):
    assert not is_punctuation(token)


def test_strip_punctuation_drops_only_punctuation_tokens():
    [kept] = tokenize([TEXT])
    [stripped] = tokenize([TEXT], strip_punctuation=True)
    assert stripped.tokens == [t for t in kept.tokens if not is_punctuation(t)]
    assert {"do", "n't", "it", "'s", "qqq", "really", "u.s."} <= set(stripped.tokens)
    assert not {".", "--", "!", "...", "(", "?", ")", "$"} & set(stripped.tokens)
    assert {"--", "!", "..."} <= set(kept.tokens)  # the default is unchanged


def test_offsets_and_sentence_starts_follow_the_kept_tokens():
    text = "Great film. !!! Bad end."
    [t] = tokenize([text], strip_punctuation=True)
    assert t.tokens == ["great", "film", "bad", "end"]
    assert [text[a:b].lower() for a, b in t.offsets] == t.tokens
    assert t.sentence_starts == [0, 2]
    assert rationale_mask(t.offsets, [(16, 19)]) == [False, False, True, False]
    [empty] = tokenize(["?! ..."], strip_punctuation=True)
    assert empty.tokens == [] and empty.sentence_starts == [0]


def jw_20news(text: str) -> list[str]:
    """J&W's 20News cleaning (their preprocess/20News notebook's cleaner_20) of text already tokenised and
    joined by spaces, as their cleaner() leaves it."""
    text = re.sub(r"(\W)+", r" \1 ", text)
    return re.sub(r"\s+", " ", text).strip().split(" ")


@pytest.mark.parametrize(
    ("token", "split", "separate"),
    [
        ("n't", ["n", "t"], ["n", "'", "t"]),
        ("u.s", ["u", "s"], ["u", ".", "s"]),
        ("rock'n'roll", ["rock", "n", "roll"], ["rock", "'", "n", "'", "roll"]),
        ("a.-b", ["a", "b"], ["a", "-", "b"]),  # a run between words is its last character
        ("'tis", ["tis"], ["tis"]),  # a run at either end of the token goes with the space beside it
        ("word", ["word"], ["word"]),
        ("3.5", ["qqq"], ["qqq"]),  # qqq first, whole (J&W's cleaner() runs before the split)
        ("...", ["..."], ["..."]),  # punctuation only: strip_punctuation's business
    ],
)
def test_inword_punctuation_pieces(token: str, split: list[str], separate: list[str]):
    assert [p for p, _, _ in pieces(token, "split")] == split
    assert [p for p, _, _ in pieces(token, "separate")] == separate
    assert [p for p, _, _ in pieces(token, "keep")] == [token if token != "3.5" else "qqq"]
    for mode in ("split", "separate"):
        assert all(token[a:b].lower() == p for p, a, b in pieces(token, mode) if p != "qqq")


def test_separate_with_strip_is_jw_20news_cleaning():
    text = "I don't like e-mail from the U.S. -- really ... ok"
    [ours] = tokenize([text], strip_punctuation=True, inword_punctuation="separate")
    [spacy] = tokenize([text])
    assert ours.tokens == jw_20news(" ".join(spacy.tokens) + " end")[:-1]  # their text-final '.' aside
    assert [text[a:b].lower() for a, b in ours.offsets] == ours.tokens


@pytest.mark.slow
def test_prepared_sst_without_punctuation(shipped_sst: Path, tmp_path: Path):
    default = load_dataset("sst", shipped_sst, tmp_path, DataConfig())
    stripped = load_dataset("sst", shipped_sst, tmp_path, DataConfig(strip_punctuation=True))
    assert stripped.cache_key != default.cache_key
    tokens = {t for split in stripped.splits.values() for row in split.column("tokens").to_pylist() for t in row}
    assert not any(is_punctuation(t) for t in tokens) and not any(is_punctuation(t) for t in stripped.vocab.itos[4:])
    assert {".", ","} <= set(default.vocab.itos)
    assert {"qqq", "n't"} <= tokens and "-lrb-" in default.vocab.itos
    train = stripped.splits["train"]
    assert all(len(i) == len(t) for i, t in zip(train.column("ids").to_pylist(), train.column("tokens").to_pylist()))
