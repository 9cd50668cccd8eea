"""The axes every analysis row carries, for tests that build rows by hand: by default one BiLSTM with additive
softmax attention on SST, the model most of the papers' tables are about."""

from __future__ import annotations

import math
from typing import Any

DEFAULT_AXES: dict[str, Any] = {
    "dataset": "sst",
    "encoder": "lstm",
    "attention": "additive",
    "projection": "softmax",
    "projection_lambda": math.nan,
    "architecture": "flat",
    "attention_mode": "learned",
}


def model_axes(seed: int | None = None, cell_id: str | None = None, **changes: Any) -> dict[str, Any]:
    """A row's axes: the default model with `changes`; with a seed, also the seed and a cell id (`c<seed>`
    unless one is given)."""
    axes = DEFAULT_AXES | changes
    if seed is not None:
        axes["seed"] = seed
        cell_id = cell_id or f"c{seed}"
    return axes if cell_id is None else {"cell_id": cell_id, **axes}
