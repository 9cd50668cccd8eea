"""'did you mean …?' for misspelt keys and values."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_LISTED = 12


def did_you_mean(word: str, options: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown(kind: str, word: object, options: Iterable[str]) -> str:
    """`unknown key 'trian' (expected one of: train, …); did you mean 'train'?`"""
    options = list(options)
    listed = ", ".join(options[:MAX_LISTED]) + (", …" if len(options) > MAX_LISTED else "")
    message = f"unknown {kind} '{word}' (expected one of: {listed})"
    guess = did_you_mean(str(word), options)
    return f"{message}; did you mean '{guess}'?" if guess else message
