"""`rationale_recovery` declared (docs/analyses.md#rationale_recovery): precision@k and AUC of rankings against true
rationales. Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa
from pydantic import Field, field_validator

from gridlab.catalog.analyses import RANKINGS, AnalysisInfo, RankedParams, Ranking, computation, unique
from gridlab.data.catalog import DATASETS

RECOVERY_RANKINGS: tuple[Ranking, ...] = ("attention", "gradient", "grad_x_attention", "leave_one_out")


class RationaleRecoveryParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(RECOVERY_RANKINGS), min_length=1)
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5], min_length=1)

    _ks_unique = field_validator("ks")(unique)


SCHEMA = pa.schema(
    [
        *(
            field
            for name in RANKINGS
            for field in (
                pa.field(f"auc_{name}", pa.float64()),
                pa.field(f"precision_at_k_{name}", pa.list_(pa.float64())),
            )
        ),
        pa.field("ks", pa.list_(pa.int64())),
        pa.field("rationale_tokens", pa.int64()),
    ]
)


INFO = AnalysisInfo(
    "rationale_recovery",
    "precision@k and AUC of rankings against true rationales",
    RationaleRecoveryParams,
    "instance",
    applies=lambda cell: DATASETS[cell.dataset].has_rationales,
    needs="a dataset with rationales",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=tuple(
        column for name in RANKINGS for column in (f"auc_{name}_mean", f"precision_at_{{k}}_{name}_mean")
    ),  # k: each of the parameter ks,
)

__getattr__ = computation(__name__)
