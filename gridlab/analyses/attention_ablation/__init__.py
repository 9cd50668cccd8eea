"""`attention_ablation` declared (docs/analyses.md#attention_ablation): accuracy with uniform, random, permuted
attention (Vashishth §4.1). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field, field_validator

from gridlab.catalog.analyses import AnalysisInfo, Params, computation, unique

AblationMode = Literal["uniform", "random", "permute"]


_ABLATION_MODES: tuple[AblationMode, ...] = ("uniform", "random", "permute")


class AttentionAblationParams(Params):
    modes: list[AblationMode] = Field(default_factory=lambda: list(_ABLATION_MODES), min_length=1)
    han_levels: Literal["both", "sentence"] = Field(
        "both",
        description="a HAN's attention replaced at both levels (Vashishth §3.1 attends at both), or at the "
        "sentence level only, its word weights kept",
    )
    beam_size: int = Field(
        1,
        ge=1,
        description="translation: hypotheses kept per decoding step; 1 is greedy decoding (as training's dev BLEU)",
    )

    _modes_unique = field_validator("modes")(unique)


SCHEMA = pa.schema(
    [
        ("mode", pa.string()),
        ("metric", pa.string()),
        ("value", pa.float64()),
        ("delta", pa.float64()),  # value - the learned attention's value
        ("instances", pa.int64()),
    ]
)


INFO = AnalysisInfo(
    "attention_ablation",
    "accuracy with uniform, random, permuted attention (Vashishth §4.1)",
    AttentionAblationParams,
    "model",
    rows=SCHEMA,
    summary_columns=tuple(
        f"{mode}_{metric}" for mode in ("learned", *_ABLATION_MODES) for metric in ("accuracy", "bleu")
    ),
)

__getattr__ = computation(__name__)
