"""`sparsity_importance` declared (docs/analyses.md#sparsity_importance): entropy and tau of normalised importance
(Meister §3-4). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field, model_validator

from gridlab.catalog.analyses import AnalysisInfo, Params, classifier_cells, computation


class SparsityParams(Params):
    gh_x_positions: int | None = Field(
        None,
        ge=1,
        description="positions p over which entropy_gh_x averages: every item (null, Meister et al.) or at most "
        "this many, evenly spaced over the instance's items (a backward each: O(T^2) becomes O(T * this))",
    )
    representation_layer: int | None = Field(
        None,
        ge=0,
        description="what h is in g_y(h), g_h(x) and D_y(h): the input of the final attention layer (null), "
        "or, for a Transformer encoder, the input of its self-attention layer k (0: the projected embeddings "
        "plus positions), h_i erased by deleting item i from layer k on",
    )
    representation_erasure: Literal["renormalise", "zero"] = Field(
        "renormalise",
        description="how D_y(h) erases h_i at the final attention layer: alpha_i set to 0 and the rest "
        "renormalised, or h_i replaced by the zero vector and attention recomputed over every item",
    )

    @model_validator(mode="after")
    def _one_erasure(self) -> SparsityParams:
        if self.representation_layer is not None and self.representation_erasure != "renormalise":
            raise ValueError(
                "representation_erasure applies at the final attention layer; with representation_layer set, "
                "h_i is deleted from that layer on (expected one of the two)"
            )
        return self


MEASURES = ("gy_x", "dy_x", "gy_h", "dy_h")
SCHEMA = pa.schema(
    [(f"entropy_{m}", pa.float64()) for m in (*MEASURES, "gh_x")] + [(f"tau_{m}", pa.float64()) for m in MEASURES]
)


INFO = AnalysisInfo(
    "sparsity_importance",
    "entropy and tau of normalised importance (Meister §3-4)",
    SparsityParams,
    "instance",
    applies=lambda cell: classifier_cells(cell) and cell.encoder != "pretrained",
    needs="a classifier whose attention has one score per item (not encoder pretrained)",
    heatmaps=True,
    rows=SCHEMA,
    summary_columns=tuple(f"{name}_mean" for name in SCHEMA.names),
)

__getattr__ = computation(__name__)
