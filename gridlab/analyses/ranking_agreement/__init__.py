"""`ranking_agreement` declared (docs/analyses.md#ranking_agreement): Kendall tau and top-k overlap between every pair
of rankings (the disagreement problem). Torch-free: validation, planning and reports read it; `compute.py` computes
it."""

from __future__ import annotations

from pydantic import Field

from gridlab.catalog.analyses import (
    FAITHFULNESS_RANKINGS,
    AnalysisInfo,
    RankedParams,
    Ranking,
    classifier_cells,
    computation,
)


class RankingAgreementParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(FAITHFULNESS_RANKINGS), min_length=2)
    k: int = Field(5, ge=1, description="top-k overlap: the shared share of each pair's top min(k, T) items")


INFO = AnalysisInfo(
    "ranking_agreement",
    "Kendall tau and top-k overlap between every pair of rankings (the disagreement problem)",
    RankingAgreementParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
)

__getattr__ = computation(__name__)
