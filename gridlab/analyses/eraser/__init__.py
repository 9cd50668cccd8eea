"""`eraser` declared (docs/analyses.md#eraser): comprehensiveness, sufficiency and their AOPC per ranking (DeYoung et
al. 2020). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa
from pydantic import Field, field_validator

from gridlab.catalog.analyses import (
    FAITHFULNESS_RANKINGS,
    RANKINGS,
    AnalysisInfo,
    RankedParams,
    Ranking,
    classifier_cells,
    computation,
    unique,
)


class EraserParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(FAITHFULNESS_RANKINGS), min_length=1)
    bins: list[float] = Field(
        default_factory=lambda: [0.01, 0.05, 0.1, 0.2, 0.5],
        min_length=1,
        description="shares of the items removed (comprehensiveness) or kept (sufficiency), DeYoung et al.'s bins",
    )

    @field_validator("bins")
    @classmethod
    def _shares(cls, bins: list[float]) -> list[float]:
        if any(not 0 < b <= 1 for b in bins):
            raise ValueError(f"bins are shares of the items, each in (0, 1] (got {bins})")
        return unique(bins)


KINDS = ("comprehensiveness", "sufficiency")
SCHEMA = pa.schema(
    [
        *(
            field
            for name in RANKINGS
            for kind in KINDS
            for field in (
                pa.field(f"{kind}_{name}", pa.list_(pa.float64())),
                pa.field(f"aopc_{kind}_{name}", pa.float64()),
            )
        ),
        pa.field("bins", pa.list_(pa.float64())),
        pa.field("integrated_gradients_gap", pa.float64()),
    ]
)


INFO = AnalysisInfo(
    "eraser",
    "comprehensiveness, sufficiency and their AOPC per ranking (DeYoung et al. 2020)",
    EraserParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    rows=SCHEMA,
    summary_columns=(
        *(f"aopc_{kind}_{name}_mean" for name in RANKINGS for kind in KINDS),
        "integrated_gradients_gap_mean",
        "integrated_gradients_gap_max",
    ),
)

__getattr__ = computation(__name__)
