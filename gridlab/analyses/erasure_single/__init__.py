"""`erasure_single` declared (docs/analyses.md#erasure_single): erasing the top vs a random attention weight (S&S §4).
Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa

from gridlab.catalog.analyses import AnalysisInfo, NoParams, classifier_cells, computation

SCHEMA = pa.schema(
    [
        ("js_top", pa.float64()),
        ("js_rand", pa.float64()),
        ("delta_js", pa.float64()),
        ("delta_alpha", pa.float64()),
        ("flip_top", pa.bool_()),
        ("flip_rand", pa.bool_()),
        ("top_index", pa.int64()),
        ("rand_index", pa.int64()),
    ]
)


INFO = AnalysisInfo(
    "erasure_single",
    "erasing the top vs a random attention weight (S&S §4)",
    NoParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=("flip_top_only", "flip_rand_only", "flip_both", "flip_neither", "delta_js_negative"),
)

__getattr__ = computation(__name__)
