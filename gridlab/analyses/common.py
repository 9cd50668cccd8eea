"""What every analysis shares: one forward pass per batch, batched decoding of many alphas, the distances of
docs/analyses.md#distances, and random draws seeded per (cell, instance) so rows never depend on sharding or
actor count.

    >>> shared = forward_once(model, batch)                       # h, mask, alpha, probs, pred: computed once
    >>> probs = decode_many(model, shared, alphas)                 # alphas (B, K, T) -> probs (B, K, C), one call
    >>> tvd(probs, shared.probs.unsqueeze(1))                      # (B, K)
    >>> g = instance_generator(cell_id, "permutation", instance_id)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.bilstm import BiLstmPass, premise_bilstm
from gridlab.data.batching import Batch
from gridlab.models.classifier import (
    AttentionClassifier,
    Encoded,
    FlatClassifier,
    HierarchicalClassifier,
    PairClassifier,
)
from gridlab.models.transformer import TransformerEncoder

LN2 = math.log(2.0)
EPS = 1e-12


@dataclass(frozen=True)
class SharedPass:
    """One encode + attend + decode of a batch (no gradients), reused by every analysis of a shard."""

    batch: Batch
    encoded: Encoded  # h (B, T, m), mask (B, T), query (B, q) | None
    alpha: torch.Tensor  # (B, T)
    logits: torch.Tensor  # (B, C)
    probs: torch.Tensor  # (B, C)
    pred: torch.Tensor  # (B,)
    # what the shard's analyses derive from this pass and share, e.g. a ranking's scores (importance.scores)
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    # a BiLSTM premise encoder's every gate and cell where the pass was its written-out scan (`bilstm.py`)
    lstm: BiLstmPass | None = field(default=None, compare=False, repr=False)

    @property
    def lengths(self) -> torch.Tensor:
        """T of each instance: the positions attention may use."""
        return self.encoded.mask.sum(-1)


@torch.no_grad()
def forward_once(model: AttentionClassifier, batch: Batch, scan: bool | None = None) -> SharedPass:
    """The batch's shared pass. A BiLSTM premise encoder runs as the written-out scan where `scan` (by default
    on a CPU), keeping its gates for the gradient and leave-one-out (`bilstm.py`); on an accelerator
    `nn.LSTM`'s fused kernel is the faster pass, and they rebuild the gates from its states."""
    lstm = None
    if premise_bilstm(model) is not None and (model.embedding.weight.device.type == "cpu" if scan is None else scan):
        assert isinstance(model, (FlatClassifier, PairClassifier))
        lstm = BiLstmPass.scan(model, batch)
        encoded = model.encode(batch, premise=lstm.h())
    else:
        encoded = model.encode(batch)
    return pass_from(model, batch, encoded, lstm)


def pass_from(model: AttentionClassifier, batch: Batch, encoded: Encoded, lstm: BiLstmPass | None = None) -> SharedPass:
    """The shared pass of a batch whose encoding is given: attend and decode."""
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    logits = model.decode(encoded.h, alpha, encoded.query)
    probs = torch.softmax(logits, dim=-1)
    return SharedPass(batch, encoded, alpha, logits, probs, probs.argmax(-1), lstm=lstm)


def shared_lstm(model: AttentionClassifier, shared: SharedPass) -> BiLstmPass:
    """The shared pass's BiLSTM states: the scan's where `forward_once` ran it, else rebuilt once per pass."""
    if shared.lstm is not None:
        return shared.lstm
    if "bilstm" not in shared.memo:
        shared.memo["bilstm"] = BiLstmPass.rebuild(model, shared.batch, shared.encoded.h)
    return shared.memo["bilstm"]


def self_attention(model: torch.nn.Module) -> TransformerEncoder:
    """The self-attention stack under a Transformer cell's final attention layer."""
    outer = getattr(model, "encoder", None)
    encoder = getattr(outer, "encoder", None)
    if not isinstance(encoder, TransformerEncoder):
        raise ValueError(
            f"this analysis needs a transformer encoder (encoder: transformer), not {type(outer).__name__}"
        )
    return encoder


def object_column(values: list) -> np.ndarray:
    """(B,) numpy object array of B per-instance values (lists for a list column, None for a null)."""
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def columns_of(rows: list[dict], schema: pa.Schema) -> dict[str, list]:
    """The schema's columns of `rows` (one dict per row, e.g. one per variant), in the schema's order."""
    return {name: [row[name] for row in rows] for name in schema.names}


def column_means(rows: pd.DataFrame, columns: Iterable[str]) -> dict[str, float]:
    """`<column>_mean` per column: its mean over the rows where it is defined; no entry where it is nowhere
    (a ranking or pair not requested, no rows at all)."""
    means = {}
    for column in columns:
        values = rows[column].dropna().astype(float)
        if len(values):
            means[f"{column}_mean"] = float(values.mean())
    return means


def measured(summary: Mapping[str, float]) -> dict[str, float]:
    """`summary` without the numbers nothing was measured for (NaN: the mean of no values, a share of no
    instances): a summary has no entry for them, so summary.parquet holds a null, MLflow no metric and a
    report a blank, never a 0 or a NaN that reads as a result."""
    return {name: float(value) for name, value in summary.items() if not math.isnan(value)}


def decode_many(model: AttentionClassifier, shared: SharedPass, alphas: torch.Tensor) -> torch.Tensor:
    """Output distributions for K alternative attention vectors per instance, in one decoder call.

    alphas (B, K, T) -> probs (B, K, C). A zero alpha row gives the zero context (S&S's "arbitrary vector").
    """
    b, k, _ = alphas.shape
    h, query = shared.encoded.h, shared.encoded.query
    linear = linear_output(model)
    if linear is not None:  # logits = sum_t alpha_t (W h_t) + b: the K weightings multiply C columns, not m
        weight, bias = linear
        return torch.softmax(torch.bmm(alphas.to(h.dtype), h @ weight.t()) + bias, dim=-1)  # (B, K, C)
    context = torch.einsum("bkt,btm->bkm", alphas.to(h.dtype), h).reshape(b * k, -1)  # (B*K, m)
    q = None if query is None else query.repeat_interleave(k, dim=0)  # (B*K, q)
    return torch.softmax(model.output(context, q), dim=-1).reshape(b, k, -1)  # (B, K, C)


def tokens_per_call(device: torch.device) -> int:
    """Rows x slots of one model call over many variants of a batch (integrated gradients' path, ERASER's
    deletions): it bounds memory on long documents, and on a CPU it keeps a call's activations in cache: with
    the bench's BiLSTM, 2k tokens a call ran integrated gradients 1.9x (T = 20) and 1.35x (T = 180) faster
    than 64k, ERASER's deletions 1.6x at T = 180. An accelerator wants large calls."""
    return 1 << 11 if device.type == "cpu" else 1 << 16


def linear_output(model: AttentionClassifier) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(W, b) when `model.output(context, query)` is `classifier(dropout(context))` with dropout inactive: the
    output is then linear in the context, so many weightings of one h can be decoded through W h (C columns)."""
    if type(model).output not in (FlatClassifier.output, HierarchicalClassifier.output):
        return None
    if model.training and model.dropout.p > 0:
        return None
    return model.classifier.weight, model.classifier.bias


def tvd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Total variation distance over the last axis: 1/2 sum |p - q|, in [0, 1]."""
    return 0.5 * (p - q).abs().sum(-1)


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence over the last axis, natural log, in [0, ln 2] (not scipy's square root)."""
    m = 0.5 * (p + q)
    return (0.5 * (_kl(p, m) + _kl(q, m))).clamp(0.0, LN2)


def _kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return torch.where(p > 0, p * (torch.log(p.clamp_min(EPS)) - torch.log(q.clamp_min(EPS))), 0.0).sum(-1)


def instance_seed(cell_id: str, analysis_id: str, instance_id: int) -> int:
    """A 63-bit seed from (cell, analysis, instance): the same draws whatever shard or actor runs them."""
    digest = hashlib.sha256(f"{cell_id}/{analysis_id}/{instance_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def instance_generator(cell_id: str, analysis_id: str, instance_id: int, device: torch.device | str = "cpu"):
    return torch.Generator(device=device).manual_seed(instance_seed(cell_id, analysis_id, instance_id))
