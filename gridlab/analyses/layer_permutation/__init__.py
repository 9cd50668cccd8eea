"""`layer_permutation` declared (docs/analyses.md#layer_permutation): accuracy with self-attention layers 1..k permuted
(Vashishth §4.3). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa

from gridlab.catalog.analyses import AnalysisInfo, NoParams, computation

SCHEMA = pa.schema(
    [
        ("layers_permuted", pa.int64()),
        ("accuracy", pa.float64()),
        ("delta", pa.float64()),  # accuracy - the unpermuted model's
        ("instances", pa.int64()),
    ]
)


INFO = AnalysisInfo(
    "layer_permutation",
    "accuracy with self-attention layers 1..k permuted (Vashishth §4.3)",
    NoParams,
    "model",
    applies=lambda cell: cell.encoder == "transformer",
    needs="encoder transformer",
    rows=SCHEMA,
    summary_columns=("accuracy_{layers}_layers",),  # 0 to the encoder's depth,
)

__getattr__ = computation(__name__)
