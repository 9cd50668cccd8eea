"""`importance_correlation` declared (docs/analyses.md#importance_correlation): Kendall tau of attention with gradient
and leave-one-out (J&W §4.1). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from gridlab.catalog.analyses import AnalysisInfo, NoParams, classifier_cells, computation

INFO = AnalysisInfo(
    "importance_correlation",
    "Kendall tau of attention with gradient and leave-one-out (J&W §4.1)",
    NoParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    heatmaps=True,
)

__getattr__ = computation(__name__)
