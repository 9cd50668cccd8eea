"""Tokenisation as Jain & Wallace did it: spaCy's English tokenizer, lower case, numbers -> `qqq`.

    >>> [t.tokens for t in tokenize(["It's 2019. Great film!"])]
    [["it", "'s", "qqq", ".", "great", "film", "!"]]

A blank spaCy pipeline (no model download) plus the rule-based sentencizer gives tokens, their character
offsets (to align annotator rationales) and sentence starts (for hierarchical models) in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

NUMBER_TOKEN = "qqq"
_HAS_DIGIT = re.compile(r"\d")


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


def tokenize(texts: Iterable[str], lang: str = "en", batch_size: int = 512) -> Iterator[TokenizedText]:
    """Tokenise many texts in spaCy batches; whitespace tokens are dropped. `lang` picks spaCy's
    rule-based tokenizer for that language (German for Multi30k targets); no model is downloaded."""
    for doc in _pipeline(lang).pipe(texts, batch_size=batch_size):
        tokens: list[str] = []
        offsets: list[tuple[int, int]] = []
        starts: list[int] = []
        sentence_pending = True  # a sentence start that fell on a dropped whitespace token moves forward
        for token in doc:
            sentence_pending = sentence_pending or bool(token.is_sent_start)
            if token.is_space:
                continue
            if sentence_pending:
                starts.append(len(tokens))
                sentence_pending = False
            tokens.append(normalise(token.text))
            offsets.append((token.idx, token.idx + len(token.text)))
        yield TokenizedText(tokens, offsets, starts or [0])


def rationale_mask(offsets: list[tuple[int, int]], spans: Iterable[tuple[int, int]]) -> list[bool]:
    """Per-token flags: True where a token overlaps any annotated character span."""
    bounds = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)  # (T, 2)
    mask = np.zeros(len(bounds), dtype=bool)
    for span_start, span_end in spans:
        mask |= (bounds[:, 0] < span_end) & (span_start < bounds[:, 1])
    return mask.tolist()
