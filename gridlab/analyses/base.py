"""The interface every per-instance analysis implements (SPEC §3), pure torch, no Ray.

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

import torch

from gridlab.analyses.registry import Params
from gridlab.grid.schema import CellConfig
from gridlab.models.classifier import AttentionClassifier


@dataclass(frozen=True)
class AnalysisContext:
    cell_id: str
    model: AttentionClassifier  # in eval mode
    device: torch.device
    params: Params
    config: CellConfig | None = None  # the cell's resolved config: per-model analyses that train need it
    # the cell's starting embedding matrix (pretrained vectors), for analyses that train a fresh model
    initial_embeddings: Callable[[], torch.Tensor | None] = lambda: None
