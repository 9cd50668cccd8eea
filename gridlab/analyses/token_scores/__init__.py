"""`token_scores` declared (docs/analyses.md#token_scores): per-item attention, gradient, leave-one-out and a permuted
attention, for heatmaps and annotation. Torch-free: validation, planning and reports read it; `compute.py` computes
it."""

from __future__ import annotations

from gridlab.catalog.analyses import AnalysisInfo, NoParams, classifier_cells, computation

INFO = AnalysisInfo(
    "token_scores",
    "per-item attention, gradient, leave-one-out and a permuted attention, for heatmaps and annotation",
    NoParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
)

__getattr__ = computation(__name__)
