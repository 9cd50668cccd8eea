"""`token_scores` declared (docs/analyses.md#token_scores): per-item attention, gradient, leave-one-out and a permuted
attention, for heatmaps and annotation. Torch-free: validation, planning and reports read it; `compute.py` computes
it."""

from __future__ import annotations

import pyarrow as pa

from gridlab.catalog.analyses import AnalysisInfo, NoParams, classifier_cells, computation

SCHEMA = pa.schema(
    [
        ("items", pa.list_(pa.string())),
        ("query", pa.string()),
        ("label_name", pa.string()),
        ("pred_name", pa.string()),
        ("confidence", pa.float64()),
        ("alpha", pa.list_(pa.float64())),
        ("gradient", pa.list_(pa.float64())),
        ("leave_one_out", pa.list_(pa.float64())),
        ("permuted_alpha", pa.list_(pa.float64())),
        ("permuted_pred", pa.int64()),
        ("alpha_order", pa.list_(pa.int64())),  # item indices by descending alpha, by the project's tie rule
        ("permuted_order", pa.list_(pa.int64())),  # the same for permuted_alpha
    ]
)


INFO = AnalysisInfo(
    "token_scores",
    "per-item attention, gradient, leave-one-out and a permuted attention, for heatmaps and annotation",
    NoParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    rows=SCHEMA,
    summary_columns=("permuted_pred_unchanged",),
)

__getattr__ = computation(__name__)
