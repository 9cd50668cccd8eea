"""`adversarial_model` declared (docs/analyses.md#adversarial_model): an adversary model with diverging attention
(W&P). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field, field_validator

from gridlab.catalog.analyses import AnalysisInfo, Params, computation, learned_attention_cells, unique

AdversaryVariant = Literal["frozen", "unfrozen"]


_ADVERSARY_VARIANTS: tuple[AdversaryVariant, ...] = ("frozen", "unfrozen")


class AdversarialModelParams(Params):
    variants: list[AdversaryVariant] = Field(default_factory=lambda: list(_ADVERSARY_VARIANTS), min_length=1)
    lam: float = Field(1.0, ge=0, description="weight of the attention KL term (W&P)")
    epochs: int = Field(8, ge=1)
    lr: float | None = Field(None, gt=0, description="the adversaries' learning rate; null: the cell's train.lr")
    divergence: Literal["kl", "jsd"] = Field(
        "kl", description="the attention term: W&P's KL(alpha_adv || alpha_base), or the bounded JSD"
    )

    _variants_unique = field_validator("variants")(unique)


# summarised per variant: `<variant>_<metric>`
SUMMARY_METRICS = ("jsd_mean", "jsd_median", "tvd_mean", "accuracy", "accuracy_delta")
# an adversary scored on the test split (`compute.compare_on_test`), and how it was trained (`fit_adversary`):
# adversary_tradeoff's rows carry the same columns
SCORES = [
    ("jsd_mean", pa.float64()),  # mean over test instances of JSD(alpha_adv, alpha_base), nats
    ("jsd_median", pa.float64()),
    ("tvd_mean", pa.float64()),  # mean TVD(y_adv, y_base) over test instances
    ("accuracy", pa.float64()),  # the adversary's test accuracy
    ("base_accuracy", pa.float64()),
]
TRAINING = [
    ("epochs_trained", pa.int64()),
    ("best_epoch", pa.int64()),  # selected on dev
    ("instances", pa.int64()),
]
SCHEMA = pa.schema(
    [("variant", pa.string()), *SCORES, ("accuracy_delta", pa.float64()), *TRAINING]  # delta: accuracy - base's
)


INFO = AnalysisInfo(
    "adversarial_model",
    "an adversary model with diverging attention (W&P)",
    AdversarialModelParams,
    "model",
    applies=learned_attention_cells,
    needs="a classifier with learned attention",
    rows=SCHEMA,
    summary_columns=tuple(f"{variant}_{metric}" for variant in _ADVERSARY_VARIANTS for metric in SUMMARY_METRICS),
)

__getattr__ = computation(__name__)
