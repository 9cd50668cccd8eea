"""`ranking_agreement` declared (docs/analyses.md#ranking_agreement): Kendall tau and top-k overlap between every pair
of rankings (the disagreement problem). Torch-free: validation, planning and reports read it; `compute.py` computes
it."""

from __future__ import annotations

import itertools

import pyarrow as pa
from pydantic import Field

from gridlab.catalog.analyses import (
    FAITHFULNESS_RANKINGS,
    RANKINGS,
    AnalysisInfo,
    RankedParams,
    Ranking,
    classifier_cells,
    computation,
)


class RankingAgreementParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(FAITHFULNESS_RANKINGS), min_length=2)
    k: int = Field(5, ge=1, description="top-k overlap: the shared share of each pair's top min(k, T) items")


PAIRS = tuple(itertools.combinations(RANKINGS, 2))
SCHEMA = pa.schema(
    [
        field
        for first, second in PAIRS
        for field in (
            pa.field(f"tau__{first}__{second}", pa.float64()),
            pa.field(f"overlap__{first}__{second}", pa.float64()),
        )
    ]
)


INFO = AnalysisInfo(
    "ranking_agreement",
    "Kendall tau and top-k overlap between every pair of rankings (the disagreement problem)",
    RankingAgreementParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    rows=SCHEMA,
    summary_columns=tuple(f"{name}_mean" for name in SCHEMA.names),
)

__getattr__ = computation(__name__)
