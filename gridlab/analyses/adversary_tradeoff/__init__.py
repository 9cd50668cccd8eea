"""`adversary_tradeoff` declared (docs/analyses.md#adversary_tradeoff): W&P's model-consistent adversary trained at
several weights `lam` of its attention term, the price in output change (TVD) of each step in attention distance
(JSD). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field, NonNegativeFloat, field_validator

from gridlab.analyses.adversarial_model import SCORES, TRAINING
from gridlab.catalog.analyses import AnalysisInfo, Params, computation, learned_attention_cells, unique


class AdversaryTradeoffParams(Params):
    lams: list[NonNegativeFloat] = Field(
        default_factory=lambda: [0.0001, 0.001, 0.01, 0.1, 1.0],
        min_length=1,
        description="the weights of the attention term, one unfrozen adversary each (adversarial_model's lam)",
    )
    epochs: int = Field(8, ge=1)
    lr: float | None = Field(None, gt=0, description="the adversaries' learning rate; null: the cell's train.lr")
    divergence: Literal["kl", "jsd"] = Field("kl", description="the attention term (adversarial_model's)")

    _lams_unique = field_validator("lams")(unique)


SCHEMA = pa.schema([("lam", pa.float64()), *SCORES, *TRAINING])  # adversarial_model's columns, per lam


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
