"""`erasure_single` declared (docs/analyses.md#erasure_single): erasing the top vs a random attention weight (S&S §4).
Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from gridlab.catalog.analyses import AnalysisInfo, NoParams, classifier_cells, computation

INFO = AnalysisInfo(
    "erasure_single",
    "erasing the top vs a random attention weight (S&S §4)",
    NoParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    heatmaps=True,
)

__getattr__ = computation(__name__)
