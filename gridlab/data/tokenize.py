r"""Tokenisation as Jain & Wallace did it: spaCy's English tokenizer, lower case, numbers -> `qqq`.

    >>> [t.tokens for t in tokenize(["It's 2019. Great film!"])]
    [["it", "'s", "qqq", ".", "great", "film", "!"]]

A blank spaCy pipeline (no model download) plus the rule-based sentencizer gives tokens, their character
offsets (to align annotator rationales) and sentence starts (for hierarchical models) in one pass.
`strip_punctuation` also drops tokens without a letter, digit or underscore ("." "--" "?!" "$"): J&W's
SST, IMDB and 20News text reached their models without such tokens (SST by `re.sub(r"\W", " ", text)`,
IMDB by the Keras release, 20News by a regex that deletes space-delimited punctuation), their AG News and
SNLI text kept them. Tokens with a word character inside ("n't", "u.s.", "e-mail") are kept whole by default;
`inword_punctuation` splits them as J&W's regexes did, `split` as SST's `\W` -> space ("n t", "e mail") and
`separate` as 20News's `(\W)+` -> ` \1 ` ("n ' t", "e - mail": a run between word characters becomes its
last character, a run at either end of the token is dropped). A token with a digit is `qqq` first, whole.
SST's bracket escapes (`-lrb-`) count as punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

NUMBER_TOKEN = "qqq"
_HAS_DIGIT = re.compile(r"\d")
_NO_WORD_CHARACTER = re.compile(r"\W+")  # what J&W's `\W` removes as a whole token: punctuation and symbols
_WORD_CHARACTERS = re.compile(r"\w+")
InwordPunctuation = Literal["keep", "split", "separate"]
# Penn Treebank escapes of brackets, as in SST's text ("-lrb- sci-fi -rrb-"): punctuation spelt with letters
PTB_BRACKETS = frozenset({"-lrb-", "-rrb-", "-lsb-", "-rsb-", "-lcb-", "-rcb-"})


@dataclass(frozen=True, slots=True)
class TokenizedText:
    """Normalised tokens of one text, with where each starts in the text and where sentences start."""

    tokens: list[str]
    offsets: list[tuple[int, int]]  # character span [start, end) of each token in the text
    sentence_starts: list[int]  # token index of each sentence's first token; [0] for a one-sentence text


def normalise(token: str) -> str:
    """Lower case; any token with a digit becomes `qqq` (J&W appendix: 'all words with numeric characters')."""
    return NUMBER_TOKEN if _HAS_DIGIT.search(token) else token.lower()


@lru_cache(maxsize=4)
def _pipeline(lang: str):  # -> spacy.language.Language; imported lazily: spaCy costs a second to import
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    return nlp


def is_punctuation(token: str) -> bool:
    r"""True for a token made only of punctuation or symbols (no letter, digit or underscore), or a Penn
    Treebank bracket escape (J&W deleted SST's `-LRB-`/`-RRB-` before their `\W` regex)."""
    return _NO_WORD_CHARACTER.fullmatch(token) is not None or token.lower() in PTB_BRACKETS


def pieces(token: str, inword_punctuation: InwordPunctuation) -> list[tuple[str, int, int]]:
    """The normalised tokens one spaCy token becomes, each with its [start, end) within the token."""
    if inword_punctuation == "keep" or _HAS_DIGIT.search(token) or not _WORD_CHARACTERS.search(token):
        return [(normalise(token), 0, len(token))]
    words = list(_WORD_CHARACTERS.finditer(token))
    out = [(words[0].group().lower(), words[0].start(), words[0].end())]
    for word in words[1:]:
        if inword_punctuation == "separate":  # the run before this word, as its last character
            out.append((token[word.start() - 1], word.start() - 1, word.start()))
        out.append((word.group().lower(), word.start(), word.end()))
    return out


def tokenize(
    texts: Iterable[str],
    lang: str = "en",
    batch_size: int = 512,
    strip_punctuation: bool = False,
    inword_punctuation: InwordPunctuation = "keep",
) -> Iterator[TokenizedText]:
    """Tokenise many texts in spaCy batches; whitespace tokens are dropped, and with `strip_punctuation`
    punctuation-only tokens too (offsets and sentence starts follow the kept tokens); `inword_punctuation`
    splits tokens with punctuation inside (`pieces`). `lang` picks spaCy's rule-based tokenizer for that
    language (German for Multi30k targets); no model is downloaded."""
    for doc in _pipeline(lang).pipe(texts, batch_size=batch_size):
        tokens: list[str] = []
        offsets: list[tuple[int, int]] = []
        starts: list[int] = []
        sentence_pending = True  # a sentence start that fell on a dropped whitespace token moves forward
        for token in doc:
            sentence_pending = sentence_pending or bool(token.is_sent_start)
            if token.is_space or (strip_punctuation and is_punctuation(token.text)):
                continue
            if sentence_pending:
                starts.append(len(tokens))
                sentence_pending = False
            for piece, start, end in pieces(token.text, inword_punctuation):
                tokens.append(piece)
                offsets.append((token.idx + start, token.idx + end))
        yield TokenizedText(tokens, offsets, starts or [0])


def rationale_mask(offsets: list[tuple[int, int]], spans: Iterable[tuple[int, int]]) -> list[bool]:
    """Per-token flags: True where a token overlaps any annotated character span."""
    bounds = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)  # (T, 2)
    mask = np.zeros(len(bounds), dtype=bool)
    for span_start, span_end in spans:
        mask |= (bounds[:, 0] < span_end) & (span_start < bounds[:, 1])
    return mask.tolist()
