"""`importance_correlation` declared (docs/analyses.md#importance_correlation): Kendall tau of attention with gradient
and leave-one-out (J&W §4.1). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa

from gridlab.catalog.analyses import AnalysisInfo, NoParams, classifier_cells, computation

SCHEMA = pa.schema(
    [
        ("tau_g", pa.float64()),
        ("p_g", pa.float64()),
        ("tau_loo", pa.float64()),
        ("p_loo", pa.float64()),
    ]
)


INFO = AnalysisInfo(
    "importance_correlation",
    "Kendall tau of attention with gradient and leave-one-out (J&W §4.1)",
    NoParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=tuple(
        f"{stat}_{measure}{end}{per_class}"
        for per_class in ("", "_class{k}")  # all instances, then those of one predicted class
        for measure in ("g", "loo")
        for stat, end in (("tau", "_mean"), ("tau", "_std"), ("sig", ""))
    ),
)

__getattr__ = computation(__name__)
