"""The interface every per-instance analysis implements (docs/analyses.md#conventions), pure torch, no Ray.

    >>> context = AnalysisContext(cell_id, model.eval(), torch.device("cpu"), PermutationParams())
    >>> columns = permutation.run(context, forward_once(model, batch))   # {"tvd_median": array (B,), ...}

`run` is the batched implementation used in production; `reference` is a straightforward per-instance loop
of the same math, kept as the oracle for tests and the baseline for `bench/analyses.py`. Both return one
value per instance for each column of the module's `SCHEMA`; random draws come from
`instance_generator(cell_id, <analysis id>, instance_id)`, so rows do not depend on batching or sharding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from gridlab.catalog.analyses import Params
from gridlab.config.schema import CellConfig
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.seq2seq import Seq2Seq

P = TypeVar("P", bound=Params)


@dataclass(frozen=True)
class AnalysisContext(Generic[P]):
    """What an analysis gets besides the batch. `AnalysisContext[AdversarialParams]` is the context of an
    analysis whose params are `AdversarialParams` (the runner builds each from the analysis's own class)."""

    cell_id: str
    # in eval mode; a translation cell's `Seq2Seq` reaches the analyses that apply to every cell
    # (attention_ablation), the others are given classifiers only (`gridlab.catalog.analyses.ANALYSES[...].applies`)
    model: AttentionClassifier | Seq2Seq
    device: torch.device
    params: P
    config: CellConfig | None = None  # the cell's resolved config: per-model analyses that train need it
    # the cell's starting embedding matrix (pretrained vectors), for analyses that train a fresh model
    initial_embeddings: Callable[[], torch.Tensor | None] = lambda: None

    @property
    def classifier(self) -> AttentionClassifier:
        """`model`, for the analyses the registry applies to classifiers only."""
        if not isinstance(self.model, AttentionClassifier):
            raise TypeError(f"cell {self.cell_id}: this analysis needs a classifier, not {type(self.model).__name__}")
        return self.model

    @property
    def cell_config(self) -> CellConfig:
        """`config`, for the per-model analyses that train a model (they need the cell's settings)."""
        if self.config is None:
            raise ValueError(f"cell {self.cell_id}: this analysis trains a model and needs the cell's config")
        return self.config
