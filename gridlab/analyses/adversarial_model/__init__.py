"""`adversarial_model` declared (docs/analyses.md#adversarial_model): an adversary model with diverging attention
(W&P). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from gridlab.catalog.analyses import AnalysisInfo, Params, classifier_cells, computation, unique

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


INFO = AnalysisInfo(
    "adversarial_model",
    "an adversary model with diverging attention (W&P)",
    AdversarialModelParams,
    "model",
    applies=classifier_cells,
    needs="a classifier",
)

__getattr__ = computation(__name__)
