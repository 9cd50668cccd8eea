"""`diagnostic_mlp` declared (docs/analyses.md#diagnostic_mlp): an MLP guided by the model's frozen attention vs
uniform, its own learned attention and a model-consistent adversary's (W&P). Torch-free: validation, planning and
reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field, field_validator

from gridlab.catalog.analyses import AnalysisInfo, Params, computation, learned_attention_cells, unique

MlpVariant = Literal["uniform", "learned", "base", "adversary"]


_MLP_VARIANTS: tuple[MlpVariant, ...] = ("uniform", "learned", "base", "adversary")


class DiagnosticMlpParams(Params):
    variants: list[MlpVariant] = Field(
        default_factory=lambda: list(_MLP_VARIANTS),
        min_length=1,
        description="how the MLP weighs its tokens: uniformly, by its own trained attention, by the model's frozen "
        "one, by the frozen attention of an adversary trained to match the model's outputs with other attention",
    )
    hidden: int = Field(64, ge=1, description="hidden size of W&P's diagnostic MLP")
    epochs: int = Field(8, ge=1)
    adversary_lam: float = Field(
        1.0, ge=0, description="the `adversary` variant's weight of the attention KL term (adversarial_model's lam)"
    )

    _variants_unique = field_validator("variants")(unique)


# summarised per variant: `<variant>_<metric>`
SUMMARY_METRICS = ("accuracy", "f1_macro")
SCHEMA = pa.schema(
    [
        ("variant", pa.string()),
        ("accuracy", pa.float64()),  # test, at the best dev epoch
        ("f1_macro", pa.float64()),  # test
        ("dev_accuracy", pa.float64()),  # the selected epoch's
        ("best_epoch", pa.int64()),
        ("instances", pa.int64()),  # test rows
    ]
)


INFO = AnalysisInfo(
    "diagnostic_mlp",
    "an MLP guided by the model's frozen attention vs uniform/learned/adversary's (W&P)",
    DiagnosticMlpParams,
    "model",
    applies=lambda cell: cell.architecture == "flat" and learned_attention_cells(cell),
    needs="architecture flat, learned attention",
    rows=SCHEMA,
    summary_columns=tuple(f"{variant}_{metric}" for variant in _MLP_VARIANTS for metric in SUMMARY_METRICS),
)

__getattr__ = computation(__name__)
