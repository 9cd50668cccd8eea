"""`layer_permutation` (Vashishth et al. §4.3, Fig. 4; docs/analyses.md#layer_permutation): the test
accuracy of a self-attention encoder with the attention weights of its layers 1..k permuted at inference,
cumulatively, for k = 0..L (k = 0 is the model as trained). Per model, one row per k.

    >>> rows = run_model(context, data)     # {"layers_permuted": [0, 1, 2], "accuracy": [...], "delta": [...]}

Each query's weights are shuffled among the real keys of its sequence (padding keeps its zero weight), with
draws seeded per (cell, layer, instance). It acts on `model.encoder`, the encoder under the final attention
layer (the sentence encoder for HAN models).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, ModelAnalysis
from gridlab.analyses.common import instance_generator, measured, self_attention
from gridlab.analyses.layer_permutation import INFO
from gridlab.analyses.permutation.compute import permute
from gridlab.catalog.analyses import NoParams
from gridlab.data.batching import Batch, iterate_batches
from gridlab.data.prepare import PreparedDataset

ID = "layer_permutation"
VERSION = 1
BATCH_SIZE = 64


def _noise(cell_id: str, layer: int, batch: Batch, heads: int, width: int) -> torch.Tensor:
    """(B, H, T, T) uniforms per (instance, layer) over the instance's own queries and keys, so padding
    changes nothing; padding keys sort last (noise 2), padding queries keep their order."""
    tokens = batch.ids != 0
    noise = torch.full((batch.size, heads, width, width), 2.0, dtype=torch.float64)
    for row, (instance_id, length) in enumerate(zip(batch.instance_ids.tolist(), tokens.sum(-1).tolist())):
        generator = instance_generator(cell_id, f"{ID}/{layer}", instance_id)
        noise[row, :, :length, :length] = torch.rand((heads, length, length), generator=generator, dtype=torch.float64)
    return noise


@contextmanager
def permuted_layers(model, cell_id: str, batch: Batch, layers: int) -> Iterator[None]:
    """Within the block, the encoder's layers < `layers` use permuted attention for this batch."""
    encoder = self_attention(model)
    keys = batch.ids != 0  # (B, T) real keys, <sos>/<eos> included: they are tokens to self-attention

    def override(index: int, attention: torch.Tensor) -> torch.Tensor:
        if index >= layers:
            return attention
        b, h, t, _ = attention.shape
        noise = _noise(cell_id, index, batch, h, t).to(attention.device)  # (B, H, T, T)
        rows_mask = keys[:, None, None, :].expand(b, h, t, t).reshape(-1, t)  # (B*H*T, T)
        shuffled = permute(attention.reshape(-1, t), rows_mask, noise.reshape(-1, 1, t))[:, 0]  # (B*H*T, T)
        return shuffled.reshape(b, h, t, t)

    encoder.override = override
    try:
        yield
    finally:
        encoder.override = None


@torch.no_grad()
def _accuracy(context: AnalysisContext, data: PreparedDataset, layers: int, batch_size: int) -> float:
    correct = total = 0
    for batch in iterate_batches(data.splits["test"], batch_size):
        batch = batch.to(context.device)
        with permuted_layers(context.model, context.cell_id, batch, layers):
            correct += (context.model(batch).argmax(-1) == batch.labels).sum().item()
        total += batch.size
    return correct / max(total, 1)


def run_model(context: AnalysisContext, data: PreparedDataset) -> dict[str, list]:
    depth = len(self_attention(context.model).layers)
    accuracies = [_accuracy(context, data, k, BATCH_SIZE) for k in range(depth + 1)]
    return {
        "layers_permuted": list(range(depth + 1)),
        "accuracy": accuracies,
        "delta": [a - accuracies[0] for a in accuracies],
        "instances": [data.splits["test"].num_rows] * (depth + 1),
    }


def reference_accuracy(context: AnalysisContext, data: PreparedDataset, layers: int) -> float:
    """One instance per batch (no padding): the oracle for the batched accuracies."""
    return _accuracy(context, data, layers, batch_size=1)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    return measured(
        {f"accuracy_{int(row['layers_permuted'])}_layers": float(row["accuracy"]) for row in rows.to_dict("records")}
    )


class LayerPermutation(ModelAnalysis[NoParams]):
    info = INFO
    version = VERSION
    run_model, summarize = staticmethod(run_model), staticmethod(summarize)
