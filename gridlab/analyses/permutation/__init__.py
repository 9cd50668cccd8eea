"""`permutation` declared (docs/analyses.md#permutation): output change under permuted attention (J&W §4.2.1). Torch-
free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa
from pydantic import Field

from gridlab.catalog.analyses import AnalysisInfo, Params, classifier_cells, computation


class PermutationParams(Params):
    n: int = Field(100, ge=1, description="random permutations of alpha per instance (J&W: 100)")


SCHEMA = pa.schema(
    [
        ("tvd_median", pa.float64()),
        ("tvd_mean", pa.float64()),
        ("tvd_max", pa.float64()),
    ]
)


INFO = AnalysisInfo(
    "permutation",
    "output change under permuted attention (J&W §4.2.1)",
    PermutationParams,
    "instance",
    applies=classifier_cells,
    needs="a classifier",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=("tvd_median_median", "tvd_median_mean", "tvd_max_max"),
)

__getattr__ = computation(__name__)
