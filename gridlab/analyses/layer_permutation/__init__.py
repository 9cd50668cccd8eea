"""`layer_permutation` declared (docs/analyses.md#layer_permutation): accuracy with self-attention layers 1..k permuted
(Vashishth §4.3). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from gridlab.catalog.analyses import AnalysisInfo, NoParams, computation

INFO = AnalysisInfo(
    "layer_permutation",
    "accuracy with self-attention layers 1..k permuted (Vashishth §4.3)",
    NoParams,
    "model",
    applies=lambda cell: cell.encoder == "transformer",
    needs="encoder transformer",
)

__getattr__ = computation(__name__)
