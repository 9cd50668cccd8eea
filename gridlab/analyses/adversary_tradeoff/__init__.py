"""`adversary_tradeoff` declared (docs/analyses.md#adversary_tradeoff): W&P's model-consistent adversary trained at
several weights `lam` of its attention term, the price in output change (TVD) of each step in attention distance
(JSD). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field, field_validator

from gridlab.catalog.analyses import AnalysisInfo, Params, computation, learned_attention_cells, unique


class AdversaryTradeoffParams(Params):
    lams: list[float] = Field(
        default_factory=lambda: [0.0001, 0.001, 0.01, 0.1, 1.0],
        min_length=1,
        description="the weights of the attention term, one unfrozen adversary each (adversarial_model's lam)",
    )
    epochs: int = Field(8, ge=1)
    lr: float | None = Field(None, gt=0, description="the adversaries' learning rate; null: the cell's train.lr")
    divergence: Literal["kl", "jsd"] = Field("kl", description="the attention term (adversarial_model's)")

    _lams_unique = field_validator("lams")(unique)

    @field_validator("lams")
    @classmethod
    def _non_negative(cls, lams: list[float]) -> list[float]:
        if any(lam < 0 for lam in lams):
            raise ValueError(f"every lam must be >= 0, got {lams}")
        return lams


SCHEMA = pa.schema(
    [
        ("lam", pa.float64()),
        ("jsd_mean", pa.float64()),  # mean over test instances of JSD(alpha_adv, alpha_base), nats
        ("jsd_median", pa.float64()),
        ("tvd_mean", pa.float64()),  # mean TVD(y_adv, y_base) over test instances
        ("accuracy", pa.float64()),  # the adversary's test accuracy
        ("base_accuracy", pa.float64()),
        ("epochs_trained", pa.int64()),
        ("best_epoch", pa.int64()),  # selected on dev
        ("instances", pa.int64()),
    ]
)


INFO = AnalysisInfo(
    "adversary_tradeoff",
    "attention distance against output change of W&P's adversary, per weight lam",
    AdversaryTradeoffParams,
    "model",
    applies=learned_attention_cells,
    needs="a classifier with learned attention",
    rows=SCHEMA,
    summary_columns=("lams", "jsd_mean_min", "jsd_mean_max", "tvd_mean_min", "tvd_mean_max"),  # the span swept
)

__getattr__ = computation(__name__)
