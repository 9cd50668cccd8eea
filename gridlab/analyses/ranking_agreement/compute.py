"""`ranking_agreement` (docs/analyses.md#ranking_agreement): do the explanations agree with each other? The
"disagreement problem": attention, gradients, leave-one-out, integrated gradients and the rest often rank
the same input's items differently, and a reader who trusts one trusts an arbitrary choice.

    >>> columns = ranking_agreement.run(context, forward_once(model, batch))
    >>> columns["tau__attention__gradient"]       # (B,) Kendall tau-b between the two rankings, or None
    >>> columns["overlap__attention__gradient"]   # (B,) shared share of their top min(k, T) items

For every pair (R, S) of rankings (`importance.scores`, in the order of `RANKINGS`), per instance over its
T items:
- `tau__R__S`: Kendall tau-b between the two scores after the tie rule of `gridlab.analyses.ranking`
  (equal values within float noise tie). Null where tau-b is undefined: T < 2, a constant ranking, a
  non-finite score.
- `overlap__R__S`: |top_k(R) & top_k(S)| / min(k, T), k = `params.k`, each top taken by
  `ranking.descending_order` (ties by position). Null for T = 0 only.
Pairs involving a ranking not asked for (or not applicable to the cell) are null; the schema is fixed.

`run` takes tau-b for all instances of a pair at once from the signs of all item pairs (a (B, T, T) product,
chunked over instances); `reference` calls scipy per instance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, column_means, object_column
from gridlab.analyses.importance.scores import RankingScores, applicable, ranking_scores
from gridlab.analyses.importance_correlation.compute import kendall
from gridlab.analyses.ranking import order_of_ranks, tie_ranks
from gridlab.analyses.ranking_agreement import INFO, PAIRS, SCHEMA, RankingAgreementParams

ID = "ranking_agreement"
VERSION = 1

_PAIRS_PER_CALL = 1 << 22  # instances x T x T sign products held at once


def run(context: AnalysisContext[RankingAgreementParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Tie ranks once per ranking; tau-b and the overlap batched over instances, per pair."""
    mask, k = shared.encoded.mask, context.params.k
    ranks = _ranks(_scores(context, shared), mask)
    tops = {name: _top(r, mask, k) for name, r in ranks.items()}  # (B, T) bool each
    columns: dict[str, np.ndarray] = {}
    for first, second in PAIRS:
        if first in ranks and second in ranks:
            tau = batched_tau_b(ranks[first], ranks[second], mask)
            shared_top = (tops[first] & tops[second]).sum(-1).double()
            overlap = shared_top / mask.sum(-1).clamp(max=k).double()
            columns[f"tau__{first}__{second}"] = _nullable(tau)
            columns[f"overlap__{first}__{second}"] = _nullable(overlap)
        else:
            columns[f"tau__{first}__{second}"] = object_column([None] * len(mask))
            columns[f"overlap__{first}__{second}"] = object_column([None] * len(mask))
    return columns


def reference(context: AnalysisContext[RankingAgreementParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """scipy's Kendall tau-b and Python's sorted() per instance, on the same tie ranks."""
    mask, k = shared.encoded.mask, context.params.k
    ranks = {name: r.cpu().numpy() for name, r in _ranks(_scores(context, shared), mask).items()}
    present = mask.cpu().numpy()
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for b in range(len(present)):
        for first, second in PAIRS:
            tau, overlap = None, None
            if first in ranks and second in ranks:
                a, c = ranks[first][b][present[b]], ranks[second][b][present[b]]
                tau = kendall(a, c)[0]
                top = min(k, len(a))
                if top:
                    overlap = len(set(_first_items(a, top)) & set(_first_items(c, top))) / top
            columns[f"tau__{first}__{second}"].append(tau)
            columns[f"overlap__{first}__{second}"].append(overlap)
    return {name: object_column(values) for name, values in columns.items()}


def _first_items(ranks: np.ndarray, top: int) -> list[int]:
    """The `top` highest-ranked items, ties by position, unranked (NaN) items last."""
    return sorted(range(len(ranks)), key=lambda t: -ranks[t] if np.isfinite(ranks[t]) else 1.0)[:top]


def batched_tau_b(first: torch.Tensor, second: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B,) Kendall tau-b of two rank vectors (B, T) over each instance's items, NaN where undefined:
    sum_{i<j} s_ij t_ij / sqrt(sum_{i<j} |s_ij| sum_{i<j} |t_ij|), s and t the signs of the pairwise
    differences (0 for ties and for pairs with padding)."""
    out = torch.empty(len(first), dtype=torch.float64, device=first.device)
    width = first.shape[1]
    per_call = max(1, _PAIRS_PER_CALL // max(width * width, 1))
    for start in range(0, len(first), per_call):
        rows = slice(start, start + per_call)
        pairs = mask[rows, :, None] & mask[rows, None, :]  # (b, T, T)
        s = _signs(first[rows], pairs)
        t = _signs(second[rows], pairs)
        concordance = (s * t).sum((-1, -2)) / 2  # every unordered pair counted twice
        untied = (s.abs().sum((-1, -2)) / 2) * (t.abs().sum((-1, -2)) / 2)
        out[rows] = concordance / untied.sqrt()  # 0 / 0 is NaN: a constant ranking
    finite = ((first.isfinite() & second.isfinite()) | ~mask).all(-1)
    return out.masked_fill(~finite | (mask.sum(-1) < 2), torch.nan)


def _signs(ranks: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """(b, T, T) sign(r_i - r_j) over the item pairs, 0 elsewhere (NaN ranks give 0; the caller nulls them)."""
    return torch.sign(ranks[:, :, None] - ranks[:, None, :]).nan_to_num(0.0) * pairs


def _scores(context: AnalysisContext[RankingAgreementParams], shared: SharedPass) -> RankingScores:
    params = context.params
    rankings = applicable(context.classifier, params.rankings)
    return ranking_scores(context.classifier, context.cell_id, shared, rankings, ID, params.ig_steps)


def _ranks(scores: RankingScores, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """(B, T) float64 tie ranks of each ranking's scores, NaN at padding and for non-finite scores."""
    return {name: tie_ranks(values, mask, scores.floors[name]) for name, values in scores.values.items()}


def _top(ranks: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    """(B, T) bool: the first min(k, T) items of the descending order (ties by position)."""
    order = order_of_ranks(ranks, mask)[:, :k]  # (B, min(k, width))
    top = torch.zeros_like(mask).scatter_(1, order, True)
    return top & mask


def _nullable(values: torch.Tensor) -> np.ndarray:
    return object_column([None if np.isnan(v) else v for v in values.tolist()])


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model and pair: the mean tau-b and the mean top-k overlap (no entry for a pair not computed)."""
    return column_means(rows, SCHEMA.names)


class RankingAgreement(InstanceAnalysis[RankingAgreementParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
