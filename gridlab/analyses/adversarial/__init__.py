"""`adversarial` declared (docs/analyses.md#adversarial): maximally different attention with the same output (J&W
§4.2.2). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import pyarrow as pa
from pydantic import Field

from gridlab.catalog.analyses import AnalysisInfo, Params, computation, learned_attention_cells


class AdversarialParams(Params):
    k: int = Field(5, ge=1, description="adversarial distributions per instance")
    steps: int = Field(500, ge=1)
    lr: float = Field(0.01, gt=0)
    eps: float | None = Field(None, gt=0, description="TVD budget; default 0.01 (classification), 0.05 (QA)")
    lam: float = Field(500.0, ge=0, description="weight of the TVD penalty (J&W: 500)")
    init_scale: float = Field(3.0, ge=0, description="logits start at log(uniform) + init_scale * N(0, 1)")
    stop_window: int = Field(
        50,
        ge=0,
        description="early stopping: objective window means compared every "
        "stop_window steps; 0 runs every instance for all steps",
    )
    stop_rtol: float = Field(1e-3, gt=0, description="an instance stops when its window mean moves by <= stop_rtol")


SCHEMA = pa.schema(
    [
        ("jsd_eps_max", pa.float64()),
        ("tvd_at_jsd", pa.float64()),
        ("steps_run", pa.int64()),
        ("n_within_eps", pa.int64()),
        ("candidate_jsd", pa.list_(pa.float64())),
        ("candidate_tvd", pa.list_(pa.float64())),
        ("alpha_eps_max", pa.list_(pa.float64())),  # that candidate's weights over the items; null if none
    ]
)


INFO = AnalysisInfo(
    "adversarial",
    "maximally different attention with the same output (J&W §4.2.2)",
    AdversarialParams,
    "instance",
    applies=learned_attention_cells,
    needs="a classifier with learned attention",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=("jsd_eps_max_mean", "jsd_eps_max_median", "jsd_above_half", "steps_run_mean"),
)

__getattr__ = computation(__name__)
