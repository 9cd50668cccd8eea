"""`erasure_multi` declared (docs/analyses.md#erasure_multi): weights erased until the decision flips, per ranking (S&S
§5). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa
from pydantic import Field

from gridlab.catalog.analyses import (
    ERASURE_RANKINGS,
    RANKINGS,
    AnalysisInfo,
    RankedParams,
    Ranking,
    classifier_cells,
    computation,
)


class ErasureMultiParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(ERASURE_RANKINGS), min_length=1)
    exact_max_len: int = Field(14, ge=0, description="exact minimal flipping set up to this length; 0 disables")


SCHEMA = pa.schema(
    [
        field
        for name in (*RANKINGS, "exact")
        for field in (pa.field(f"removed_{name}", pa.int64()), pa.field(f"frac_{name}", pa.float64()))
    ]
    + [pa.field("measured", pa.list_(pa.string()))]  # the rankings (and `exact`) tried on this instance
)


INFO = AnalysisInfo(
    "erasure_multi",
    "weights erased until the decision flips, per ranking (S&S §5)",
    ErasureMultiParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=tuple(
        f"{stat}_{name}{end}" for name in (*RANKINGS, "exact") for stat, end in (("flipped", ""), ("frac", "_median"))
    ),
)

__getattr__ = computation(__name__)
