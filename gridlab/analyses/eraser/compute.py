"""`eraser` (docs/analyses.md#eraser, DeYoung et al. 2020): is a ranking faithful, judged by the model
itself? Delete the items a ranking puts on top and the prediction should weaken (comprehensiveness); keep
only those and it should hold (sufficiency).

    >>> context = AnalysisContext(cell_id, model.eval(), torch.device("cpu"), EraserParams())
    >>> columns = eraser.run(context, forward_once(model, batch))
    >>> columns["aopc_comprehensiveness_attention"]    # (B,) floats
    >>> columns["sufficiency_leave_one_out"]           # (B,) lists, one value per bin

For an instance with T items (tokens; a HAN document's sentences), prediction y-hat and its probability
p(y-hat | x), each ranking R (`importance.scores`, ties by `gridlab.analyses.ranking`, then position) and
each bin q of `params.bins` (shares of the items, DeYoung et al.'s 1, 5, 10, 20, 50 %), the top
k = min(T, ceil(q T)) items of R form r:
- comprehensiveness_q = p(y-hat | x) - p(y-hat | x without r): high when the ranking found what the model uses;
- sufficiency_q = p(y-hat | x) - p(y-hat | r only): low when those items alone carry the prediction.
Items are deleted from the input (the sequence shortens, as leave-one-out deletes), not masked: the encoder
never sees them. An input with no item left (comprehensiveness at k = T) gets the output of the zero
context, the model's answer to nothing (as `erasure_multi` at k = T).
`aopc_comprehensiveness_R` and `aopc_sufficiency_R` are the means over the bins (DeYoung et al.'s AOPC, the
area over the perturbation curve, with every bin weighted alike). `integrated_gradients_gap` is the
completeness gap of the integrated gradients behind that ranking, when it was computed.

Every ranking has its columns (the schema is fixed); rankings not asked for, and rollout and flow on cells
without a Transformer encoder, are null. `run` builds every deletion of the batch at once, per bin and
kind, packed to its longest row (`importance.deletion.without_items`); `reference` rebuilds each instance
with `collate`, one forward per ranking, bin and kind.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, column_means, object_column, tokens_per_call
from gridlab.analyses.eraser import INFO, KINDS, EraserParams
from gridlab.analyses.importance.deletion import without_items
from gridlab.analyses.importance.reference import instance_rows
from gridlab.analyses.importance.scores import RankingScores, applicable, ranking_scores
from gridlab.analyses.ranking import descending_order, tie_ranks
from gridlab.catalog.analyses import RANKINGS
from gridlab.data.batching import collate
from gridlab.models.classifier import AttentionClassifier

ID = "eraser"
VERSION = 1


def run(context: AnalysisContext[EraserParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Every (ranking, bin, kind) deletion of the batch through the model in a few packed forwards."""
    model, params = context.classifier, context.params
    scores = _scores(context, shared)
    mask, pred = shared.encoded.mask, shared.pred
    sizes = bin_sizes(shared.lengths, params.bins)  # (Q, B)
    full = shared.probs.detach().gather(1, pred[:, None])[:, 0]  # (B,)
    drops: dict[str, dict[str, torch.Tensor]] = {kind: {} for kind in KINDS}
    for name, values in scores.values.items():
        order = descending_order(values, mask, scores.floors[name])  # (B, T)
        slots = torch.arange(order.shape[1], device=order.device).expand_as(order)
        place = torch.empty_like(order).scatter_(1, order, slots)  # (B, T) where each item stands in R
        top = (place[None] < sizes[:, :, None]) & mask[None]  # (Q, B, T) the top k of each bin
        for kind, removed in zip(KINDS, (top, mask[None] & ~top)):
            drops[kind][name] = full[:, None] - _probs_without(model, shared, removed)  # (B, Q)
    return _columns(drops, params.bins, scores.ig_gap, len(mask))


def reference(context: AnalysisContext[EraserParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Per instance: its ranking sorted in Python from its own tie ranks, each deletion rebuilt with
    `collate` and run alone (the rankings' scores are the batch's: they have their own oracles)."""
    model, params = context.classifier, context.params
    scores = _scores(context, shared)
    mask = shared.encoded.mask
    device = shared.probs.device
    drops: dict[str, dict[str, torch.Tensor]] = {kind: {} for kind in KINDS}
    for name, values in scores.values.items():
        for kind in KINDS:
            drops[kind][name] = torch.zeros(len(mask), len(params.bins), dtype=shared.probs.dtype, device=device)
        floors = torch.as_tensor(scores.floors[name], dtype=torch.float64).expand(len(mask))
        for b in range(len(mask)):
            items = int(mask[b].sum())
            ranks = tie_ranks(values[b : b + 1], mask[b : b + 1], floors[b : b + 1])[0][mask[b]].tolist()
            order = sorted(range(items), key=lambda t: -ranks[t])  # stable: ties keep position order
            y = int(shared.pred[b])
            full = float(shared.probs[b, y])
            for q, share in enumerate(params.bins):
                top = set(order[: min(items, math.ceil(share * items))])
                for kind, drop in zip(KINDS, (top, set(range(items)) - top)):
                    left = [t for t in range(items) if t not in drop]
                    drops[kind][name][b, q] = full - _reference_prob(model, shared, b, left, y)
    return _columns(drops, params.bins, scores.ig_gap, len(mask))


def bin_sizes(lengths: torch.Tensor, bins: list[float]) -> torch.Tensor:
    """(Q, B) k = min(T, ceil(q T)) for each bin q and instance length T: at least one item per bin."""
    shares = torch.tensor(bins, dtype=torch.float64, device=lengths.device)[:, None]  # (Q, 1)
    return torch.minimum(torch.ceil(shares * lengths[None].double()).long(), lengths[None])


def _scores(context: AnalysisContext[EraserParams], shared: SharedPass) -> RankingScores:
    params = context.params
    rankings = applicable(context.classifier, params.rankings)
    return ranking_scores(context.classifier, context.cell_id, shared, rankings, ID, params.ig_steps)


@torch.no_grad()
def _probs_without(model: AttentionClassifier, shared: SharedPass, removed: torch.Tensor) -> torch.Tensor:
    """removed (Q, B, T) -> (B, Q) the probability of the predicted class with those items deleted. Rows are
    run longest first in chunks of about `tokens_per_call` slots, each packed to its longest row."""
    q, b, _ = removed.shape
    flat = removed.reshape(q * b, -1)  # (Q*B, T) row j is instance j % B
    rows = torch.arange(q * b, device=flat.device) % b
    left = (shared.encoded.mask[rows] & ~flat).sum(-1)  # (Q*B,) items left
    order = torch.argsort(left, descending=True, stable=True)
    probs = torch.empty(q * b, dtype=shared.probs.dtype, device=flat.device)
    width = shared.batch.ids.shape[1]
    per_call = max(1, tokens_per_call(flat.device) // width)
    for start in range(0, len(order), per_call):
        chunk = order[start : start + per_call]
        probs[chunk] = _predicted_probs(model, shared, rows[chunk], flat[chunk], left[chunk])
    return probs.reshape(q, b).T


def _predicted_probs(
    model: AttentionClassifier, shared: SharedPass, rows: torch.Tensor, removed: torch.Tensor, left: torch.Tensor
) -> torch.Tensor:
    """(n,) p(y-hat) of instances `rows` with items `removed` (n, T) deleted; rows with no item `left` get the
    zero context's output."""
    pred = shared.pred[rows]
    query = None if shared.encoded.query is None else shared.encoded.query[rows]
    empty = torch.softmax(model.output(torch.zeros_like(shared.encoded.h[rows, 0]), query), dim=-1)  # (n, C)
    probs = empty.gather(1, pred[:, None])[:, 0]
    some = left > 0
    if some.any():
        smaller = without_items(shared.batch, rows[some], removed[some])
        probs[some] = torch.softmax(model(smaller), dim=-1).gather(1, pred[some, None])[:, 0]
    return probs


@torch.no_grad()
def _reference_prob(model: AttentionClassifier, shared: SharedPass, b: int, left: list[int], y: int) -> float:
    """p(y) of instance b rebuilt with only its items `left` (indices among its items)."""
    if not left:
        query = None if shared.encoded.query is None else shared.encoded.query[b : b + 1]
        zero = torch.zeros_like(shared.encoded.h[b : b + 1, 0])
        return float(torch.softmax(model.output(zero, query), dim=-1)[0, y])
    rows = instance_rows(shared.batch, b)
    hierarchical = "sentence_starts" in rows
    if hierarchical:
        starts = [*rows["sentence_starts"][0], len(rows["ids"][0])]
        sentences = [rows["ids"][0][starts[t] : starts[t + 1]] for t in left]
        rows = {**rows, "ids": [[w for s in sentences for w in s]], "sentence_starts": [_starts(sentences)]}
    else:
        rows = {**rows, "ids": [[rows["ids"][0][t] for t in left]]}
    alone = collate(rows, sentences=hierarchical).to(shared.probs.device)
    return float(torch.softmax(model(alone), dim=-1)[0, y])


def _starts(sentences: list[list[int]]) -> list[int]:
    return [sum(len(s) for s in sentences[:i]) for i in range(len(sentences))]


def _columns(
    drops: dict[str, dict[str, torch.Tensor]], bins: list[float], gap: torch.Tensor | None, size: int
) -> dict[str, np.ndarray]:
    """The SCHEMA columns: per computed ranking and kind the (B, Q) drops as lists and their means; the
    rest null."""
    columns: dict[str, np.ndarray] = {}
    for kind in KINDS:
        for name in RANKINGS:
            values = drops[kind].get(name)
            if values is None:
                columns[f"{kind}_{name}"] = object_column([None] * size)
                columns[f"aopc_{kind}_{name}"] = object_column([None] * size)
            else:
                columns[f"{kind}_{name}"] = object_column(values.detach().double().cpu().tolist())
                columns[f"aopc_{kind}_{name}"] = values.detach().double().mean(-1).cpu().numpy()
    columns["bins"] = object_column([list(bins)] * size)
    columns["integrated_gradients_gap"] = object_column([None] * size) if gap is None else gap.double().cpu().numpy()
    return columns


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model and ranking: the mean AOPC of comprehensiveness and of sufficiency (no entry for a ranking
    not computed), and the mean and largest completeness gap of the integrated gradients (if computed)."""
    summary = column_means(
        rows, [*(f"aopc_{kind}_{name}" for name in RANKINGS for kind in KINDS), "integrated_gradients_gap"]
    )
    gap = rows["integrated_gradients_gap"].dropna().astype(float)
    if len(gap):
        summary["integrated_gradients_gap_max"] = float(gap.max())
    return summary


class Eraser(InstanceAnalysis[EraserParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
