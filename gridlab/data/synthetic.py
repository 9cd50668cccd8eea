"""`synthetic`: a planted-rationale classification task that needs no files.

Each instance is a sequence of filler words with `planted` signal words of its class at random positions
and up to `distractors` signal words of other classes elsewhere (always fewer than `planted`). The label is
the class with the most signal words, so the planted positions are exactly the rationale: they alone
decide the label, and every other token could be anything. That makes it ground truth for rationale
recovery (docs/analyses.md#rationale_recovery) and the embedded default grid that always runs.

Words are letters only (`fab`, `sbac`) so the J&W tokenizer keeps them as they are (digits become `qqq`).
"""

from __future__ import annotations

from pathlib import Path
from string import ascii_lowercase

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridlab.data.examples import RawExample

SPLIT_SEEDS = {"train": 0, "dev": 1, "test": 2}


class SyntheticConfig(BaseModel):
    """Knobs of the synthetic task; all are part of a cell's resolved config."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    n_train: int = Field(2000, ge=1)
    n_dev: int = Field(500, ge=1)
    n_test: int = Field(500, ge=1)
    n_classes: int = Field(2, ge=2, le=26)
    filler_words: int = Field(200, ge=1, le=26**3)
    signal_words: int = Field(4, ge=1, le=26**2, description="distinct signal words per class")
    planted: int = Field(2, ge=1, description="signal words of the label's class in every instance")
    distractors: int = Field(1, ge=0, description="at most this many signal words of other classes")
    min_length: int = Field(8, ge=1)
    max_length: int = Field(24, ge=1)
    seed: int = Field(0, ge=0, description="the data's seed, independent of the model's")

    @model_validator(mode="after")
    def _consistent(self) -> SyntheticConfig:
        if self.distractors >= self.planted:
            raise ValueError("distractors must be fewer than planted, or the label would be ambiguous")
        if self.max_length < self.min_length:
            raise ValueError("max_length must be at least min_length")
        if self.min_length < self.planted + self.distractors:
            raise ValueError("min_length must leave room for planted + distractors signal words")
        return self


def _word(prefix: str, index: int, width: int) -> str:
    letters = []
    for _ in range(width):
        index, digit = divmod(index, 26)
        letters.append(ascii_lowercase[digit])
    return prefix + "".join(reversed(letters))


def filler_word(i: int) -> str:
    return _word("f", i, 3)


def signal_word(cls: int, j: int) -> str:
    return _word("s" + ascii_lowercase[cls], j, 2)


def class_of_word(word: str) -> int | None:
    """The class a signal word stands for, or None for filler."""
    return ascii_lowercase.index(word[1]) if len(word) == 4 and word[0] == "s" else None


def decide_label(words: list[str], n_classes: int) -> int | None:
    """The task's rule: the class with strictly the most signal words (None on a tie)."""
    counts = np.zeros(n_classes, dtype=int)
    for word in words:
        cls = class_of_word(word)
        if cls is not None:
            counts[cls] += 1
    best = int(counts.argmax())
    return best if (counts == counts[best]).sum() == 1 else None


class SyntheticReader:
    """Generates each split from (config.seed, split) alone, so splits never depend on each other."""

    def __init__(self, config: SyntheticConfig):
        self.config = config

    def splits_present(self, folder: Path) -> dict[str, bool]:
        return {split: True for split in SPLIT_SEEDS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        c = self.config
        rng = np.random.default_rng([c.seed, SPLIT_SEEDS[split]])
        n = {"train": c.n_train, "dev": c.n_dev, "test": c.n_test}[split]
        return [self._instance(rng, f"synthetic:{split}:{i}") for i in range(n)]

    def _instance(self, rng: np.random.Generator, source_id: str) -> RawExample:
        c = self.config
        length = int(rng.integers(c.min_length, c.max_length + 1))
        label = int(rng.integers(c.n_classes))
        words = [filler_word(int(i)) for i in rng.integers(c.filler_words, size=length)]
        n_distract = int(rng.integers(0, c.distractors + 1))
        positions = rng.choice(length, size=c.planted + n_distract, replace=False)
        planted, distracting = np.sort(positions[: c.planted]), positions[c.planted :]
        for pos in planted:
            words[pos] = signal_word(label, int(rng.integers(c.signal_words)))
        others = [k for k in range(c.n_classes) if k != label]
        for pos in distracting:
            words[pos] = signal_word(int(rng.choice(others)), int(rng.integers(c.signal_words)))
        text, spans = _join_with_spans(words, set(planted.tolist()))
        return RawExample(text=text, label=str(label), rationale=spans, source_id=source_id)


def _join_with_spans(words: list[str], marked: set[int]) -> tuple[str, tuple[tuple[int, int], ...]]:
    spans, cursor = [], 0
    for i, word in enumerate(words):
        if i in marked:
            spans.append((cursor, cursor + len(word)))
        cursor += len(word) + 1
    return " ".join(words), tuple(spans)
