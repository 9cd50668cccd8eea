"""`Vocab`: token <-> id, built from the train split only (no peeking at dev or test), except for an encoder
that reads words by their spelling (`data.vocabulary: all`, the pretrained one): it gets every split's words.

Ids 0-3 are fixed so every model and analysis can rely on them: `<pad>` = 0 (masked out), `<unk>` = 1,
`<sos>` = 2 and `<eos>` = 3 (added around each sequence when batching and kept out of attention, as J&W did).
Tokens are ordered by descending count, then alphabetically, so the same corpus gives the same ids anywhere.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

PAD, UNK, SOS, EOS = "<pad>", "<unk>", "<sos>", "<eos>"
SPECIALS = (PAD, UNK, SOS, EOS)
PAD_ID, UNK_ID, SOS_ID, EOS_ID = range(len(SPECIALS))


@dataclass(frozen=True)
class Vocab:
    itos: tuple[str, ...]
    stoi: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.itos[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        object.__setattr__(self, "stoi", {token: i for i, token in enumerate(self.itos)})

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]], min_count: int) -> Vocab:
        counts = Counter(token for sequence in sequences for token in sequence)
        for special in SPECIALS:
            counts.pop(special, None)
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        return cls(SPECIALS + tuple(kept))

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Token ids (int32), unknown tokens -> UNK_ID; no SOS/EOS (batching adds them)."""
        get = self.stoi.get
        return np.fromiter((get(t, UNK_ID) for t in tokens), dtype=np.int32, count=len(tokens))

    def digest(self) -> str:
        """sha256 of the token list: the identity of a vocabulary across processes and machines."""
        return hashlib.sha256("\n".join(self.itos).encode()).hexdigest()

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[i] for i in ids]
