"""`rationale_recovery` — beyond the papers (docs/analyses.md#rationale_recovery): on datasets whose rationale
is known (the synthetic planted-token task, `movies` with annotator rationales), how well does each importance
ranking recover it?

    >>> context = AnalysisContext(cell_id, model.eval(), device, RationaleRecoveryParams())
    >>> columns = rationale_recovery.run(context, forward_once(model, batch))
    >>> columns["auc_attention"]                # (B,) floats or None: ROC AUC of alpha against the rationale
    >>> columns["precision_at_k_gradient"]      # (B,) lists (one per k of params.ks) or None
    >>> rationale_recovery.summarize(rows)      # {"auc_attention_mean": ..., "precision_at_3_gradient_mean": ...}

Why: attention is often read as "what the model looked at". Where the tokens that decide the label are
known, that reading can be checked directly, and against the other importance measures: does alpha put the
rationale on top more often than the gradient or leave-one-out does?

Scores, per item of the final attention layer (`shared.encoded.mask`), higher = more important: those of
`importance.scores` (attention, gradient, grad_x_attention, leave_one_out, norm_attention, integrated
gradients, attention rollout and flow, random). Rankings not in `params.rankings`, and rollout and flow on
cells without a Transformer encoder, are not computed and their columns are null (the schema is fixed).

The rationale is `batch.rationale` (tokens, aligned with `batch.ids`). For hierarchical (HAN) models the
items are sentences, and a sentence is in the rationale when any of its words is.

Columns, per ranking R, over the instance's T items of which P are in the rationale:
- `auc_R`: ROC AUC of the scores against the rationale flags, the Mann-Whitney statistic: the share of
  (rationale, other) item pairs where the rationale item scores higher, ties counting 1/2. 0.5 is chance,
  1 puts every rationale item above every other. Null when P = 0 or P = T (no pair to compare).
- `precision_at_k_R`: for each k of `params.ks`, the share of rationale items among the top min(k, T) items
  (so a short instance is scored on all its items). Ties are broken by position, the earlier item first (a
  stable sort), so rows are deterministic. Null when P = 0.
Both are null for R as well when a score of the instance is not finite (as importance_correlation does).
- `ks`: `params.ks`, the nominal k of each precision entry (the number of items used is min(k, `length`)).
- `rationale_tokens`: P, the rationale items the metrics are scored against (sentences for HAN).

Scores are ranked by the tie rule of `gridlab.analyses.ranking` before either metric: values within 1e-5 of the
instance's largest |score| of each other tie (leave-one-out TVDs also within 2e-6 of 1 - y); a tied pair
counts 1/2 in the AUC and top-k takes the earlier item, so float noise, which differs with the batch and the
thread count, cannot order mathematically equal scores.

`run` is batched: each ranking's scores once per batch, one stable sort per ranking over the whole batch
(descending scores, masked items last) gives both the top-k (its first columns; a sort rather than `topk`,
whose order among ties is unspecified while ties are common: uniform attention, repeated tokens under
order-free encoders) and the average descending ranks for the AUC (`searchsorted` on the sorted keys: no
loop over tokens). `reference` computes the gradient and leave-one-out importances one instance at a time
(`importance.reference_*`) and the metrics per instance with `scipy.stats.rankdata` and `sorted()`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy.stats import rankdata

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, measured
from gridlab.analyses.importance import reference_gradient_importance, reference_leave_one_out
from gridlab.analyses.importance.scores import applicable, ranking_scores
from gridlab.analyses.ranking import tie_ranks, tvd_floor
from gridlab.analyses.rationale_recovery import INFO, SCHEMA, RationaleRecoveryParams
from gridlab.catalog.analyses import RANKINGS
from gridlab.models.classifier import AttentionClassifier

ID = "rationale_recovery"
VERSION = 1

_NEEDS_GRADIENT = frozenset({"gradient", "grad_x_attention"})


@dataclass(frozen=True)
class RecoveryMetrics:
    """One ranking's metrics for a batch; values where the `*_defined` flag is False are meaningless."""

    auc: torch.Tensor  # (B,) float64
    auc_defined: torch.Tensor  # (B,) bool
    precision: torch.Tensor  # (B, K) float64, one column per k
    precision_defined: torch.Tensor  # (B,) bool


def run(context: AnalysisContext[RationaleRecoveryParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Each ranking's scores once per batch (`importance.scores`), one sort per ranking."""
    ks = list(context.params.ks)
    mask, rationale = shared.encoded.mask, item_rationale(shared)  # (B, T) each; raises before any work
    model = context.classifier
    rankings = applicable(model, context.params.rankings)
    scores = ranking_scores(model, context.cell_id, shared, rankings, ID, context.params.ig_steps)
    columns: dict[str, list] = {}
    for name in rankings:
        metrics = recovery_metrics(scores.values[name], mask, rationale, ks, scores.floors[name])
        columns[f"auc_{name}"] = _nullable(metrics.auc.tolist(), metrics.auc_defined.tolist())
        columns[f"precision_at_k_{name}"] = _nullable(metrics.precision.tolist(), metrics.precision_defined.tolist())
    return _columns(columns, ks, rationale.sum(-1))


def reference(context: AnalysisContext[RationaleRecoveryParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """The gradient and leave-one-out importances one instance at a time (the other rankings' scores as the
    batch computes them: they have their own oracles), then the metrics per instance in numpy / plain Python."""
    ks = list(context.params.ks)
    mask, rationale = shared.encoded.mask, item_rationale(shared)  # (B, T) each
    model = context.classifier
    rankings = applicable(model, context.params.rankings)
    others = [r for r in rankings if r not in _REFERENCED]
    scores = ranking_scores(model, context.cell_id, shared, others, ID, context.params.ig_steps)
    values, floors = {**scores.values, **_reference_scores(model, shared, rankings)}, scores.floors
    columns: dict[str, list] = {}
    for name in rankings:
        floor = floors.get(name, tvd_floor(shared.probs, shared.pred) if name == "leave_one_out" else 0.0)
        per_floor = torch.as_tensor(floor, dtype=torch.float64).expand(len(mask)).tolist()  # (B,)
        per_instance = [
            reference_recovery_metrics(row[present], flags[present], ks, instance_floor)
            for row, flags, present, instance_floor in zip(
                values[name].detach().double().cpu().numpy(), rationale.cpu().numpy(), mask.cpu().numpy(), per_floor
            )
        ]
        columns[f"auc_{name}"] = [auc for auc, _ in per_instance]
        columns[f"precision_at_k_{name}"] = [precision for _, precision in per_instance]
    return _columns(columns, ks, rationale.sum(-1))


# ---- scores and rationale -------------------------------------------------------------------------------

_REFERENCED = frozenset({"attention", "gradient", "grad_x_attention", "leave_one_out"})


def _reference_scores(model: AttentionClassifier, shared: SharedPass, rankings: list[str]) -> dict[str, torch.Tensor]:
    """The (B, T) scores of the requested rankings among attention, gradient, grad_x_attention and
    leave-one-out, from the per-instance reference importances."""
    scores: dict[str, torch.Tensor] = {}
    if "attention" in rankings:
        scores["attention"] = shared.alpha
    if _NEEDS_GRADIENT & set(rankings):
        g = reference_gradient_importance(model, shared)
        scores.update({"gradient": g, "grad_x_attention": g * shared.alpha})
    if "leave_one_out" in rankings:
        scores["leave_one_out"] = reference_leave_one_out(model, shared)
    return {name: values for name, values in scores.items() if name in rankings}


def item_rationale(shared: SharedPass) -> torch.Tensor:
    """(B, T) bool: the items of `shared.encoded.mask` in the rationale (tokens; for HAN, the sentences with
    at least one rationale word). Raises ValueError when the batch has no rationale."""
    batch = shared.batch
    if batch.rationale is None:
        raise ValueError(
            f"{ID} needs rationale annotations, but the batch has none "
            "(the dataset has no rationales, or its split table lacks the `rationale` column)"
        )
    if batch.sentences is None:
        return batch.rationale & shared.encoded.mask
    # The sentences' words are the document's tokens in order (collate splits `ids` at sentence_starts), so
    # the real words of (B, S, W) row-major and the masked tokens of (B, T) row-major pair up one to one.
    words = torch.zeros_like(batch.sentences.mask)  # (B, S, W)
    words[batch.sentences.mask] = batch.rationale[batch.mask]
    return words.any(-1) & shared.encoded.mask  # (B, S)


# ---- metrics, batched -----------------------------------------------------------------------------------


def recovery_metrics(
    scores: torch.Tensor,
    mask: torch.Tensor,
    rationale: torch.Tensor,
    ks: list[int],
    floor: torch.Tensor | float = 0.0,
) -> RecoveryMetrics:
    """AUC and precision@k of scores (B, T) against rationale (B, T) over the items of mask (B, T).

    The scores are replaced by their `ranking.tie_ranks` s (with `floor`, (B,) or a number). One stable
    ascending sort of -s (masked items +inf, so last) orders every row by descending score, ties by position.
    Average descending ranks come from where each key falls in its sorted row:
    r'_t = (#{s > s_t} + #{s >= s_t} + 1) / 2 over the row's items. With ascending ranks r = T + 1 - r',
    AUC = (sum_rationale r - P (P + 1) / 2) / (P (T - P)).
    """
    positive = rationale & mask  # (B, T)
    ranks = tie_ranks(scores, mask, floor)  # (B, T) NaN for padding and non-finite scores
    finite = (ranks.isfinite() | ~mask).all(-1)  # (B,)
    key = torch.where(mask, -ranks.nan_to_num(0.0), torch.inf)  # (B, T); non-finite rows are nulled
    sorted_keys, order = torch.sort(key, dim=-1, stable=True)  # (B, T) each
    above = torch.searchsorted(sorted_keys, key, right=False)  # (B, T) items scoring strictly higher
    at_or_above = torch.searchsorted(sorted_keys, key, right=True)  # (B, T) items scoring higher or equal
    descending_rank = (above + at_or_above + 1).double() / 2  # (B, T)

    items = mask.sum(-1).double()  # (B,) T
    p = positive.sum(-1).double()  # (B,) P
    ascending_sum = p * (items + 1) - (descending_rank * positive).sum(-1)  # (B,) sum of ascending ranks
    auc = (ascending_sum - p * (p + 1) / 2) / (p * (items - p)).clamp_min(1)  # (B,)

    width = min(max(ks), key.shape[-1])
    hits = positive.gather(1, order[:, :width]).double().cumsum(-1)  # (B, width) rationale items in the top j
    used = torch.stack([items.clamp(1, k) for k in ks], dim=-1)  # (B, K) min(k, T), at least 1
    precision = hits.gather(1, used.long() - 1) / used  # (B, K)
    return RecoveryMetrics(auc, finite & (p > 0) & (p < items), precision, finite & (p > 0))


# ---- metrics, one instance (the oracle) -----------------------------------------------------------------


def reference_recovery_metrics(
    scores: np.ndarray, flags: np.ndarray, ks: list[int], floor: float = 0.0
) -> tuple[float | None, list[float] | None]:
    """(AUC, [precision@k for k in ks]) of one instance's item scores (T,) against its flags (T,) bool, the
    scores tie-ranked (`ranking.tie_ranks` with `floor`) first."""
    items, p = len(scores), int(flags.sum())
    if p == 0 or not np.isfinite(scores).all():
        return None, None
    ranks = tie_ranks(torch.from_numpy(scores)[None], torch.ones(1, items, dtype=torch.bool), floor)[0].numpy()
    order = sorted(range(items), key=lambda i: -ranks[i])  # stable: ties keep position order
    precision = [sum(bool(flags[i]) for i in order[: min(k, items)]) / min(k, items) for k in ks]
    if p == items:
        return None, precision
    ascending = rankdata(ranks)  # ties averaged
    return float((ascending[flags].sum() - p * (p + 1) / 2) / (p * (items - p))), precision


# ---- columns and summary --------------------------------------------------------------------------------


def _nullable(values: list, defined: list[bool]) -> list:
    return [value if ok else None for value, ok in zip(values, defined)]


def _columns(computed: dict[str, list], ks: list[int], rationale_items: torch.Tensor) -> dict[str, np.ndarray]:
    """The SCHEMA columns as (B,) arrays: object arrays of floats, lists and None; rankings absent from
    `computed` are all null."""
    size = len(rationale_items)
    columns = {}
    for field in SCHEMA:
        if field.name == "ks":
            columns["ks"] = _objects([list(ks)] * size)
        elif field.name == "rationale_tokens":
            columns["rationale_tokens"] = rationale_items.cpu().numpy().astype(np.int64)
        else:
            columns[field.name] = _objects(computed.get(field.name, [None] * size))
    return columns


def _objects(values: list) -> np.ndarray:
    """A (B,) object array of the values as they are (np.array would turn equal-length lists into 2-D)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model and ranking: the mean AUC and the mean precision@k for each k (nulls ignored; no entry
    when every value is null, e.g. a ranking that was not requested)."""
    summary: dict[str, float] = {}
    ks = sorted({int(k) for row_ks in rows["ks"] for k in row_ks})  # never null
    for name in RANKINGS:
        auc = rows[f"auc_{name}"].dropna().astype(float)
        summary[f"auc_{name}_mean"] = auc.mean()
        by_k: dict[int, list[float]] = defaultdict(list)
        for row_ks, values in zip(rows["ks"], rows[f"precision_at_k_{name}"]):
            if not _missing(values):
                for k, value in zip(row_ks, values):
                    by_k[int(k)].append(float(value))
        for k in ks:
            summary[f"precision_at_{k}_{name}_mean"] = float(np.mean(by_k[k])) if by_k[k] else float("nan")
    return measured(summary)


def _missing(value: object) -> bool:
    """A null list cell as pandas may hold it: None, or a float NaN."""
    return value is None or (isinstance(value, float) and np.isnan(value))


class RationaleRecovery(InstanceAnalysis[RationaleRecoveryParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
