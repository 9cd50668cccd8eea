"""Every ranking of the attention items by name (docs/analyses.md#rankings): the scores whose descending,
tie-ranked order (`gridlab.analyses.ranking`) is the ranking, for the analyses that compare rankings
(`eraser`, `ranking_agreement`, `rationale_recovery`, and `erasure_multi` beyond S&S's own four).

    >>> scores = ranking_scores(context, shared, ["attention", "leave_one_out"], analysis_id="eraser")
    >>> scores.values["leave_one_out"]        # (B, T), higher = more important, 0 outside the mask
    >>> scores.floors["leave_one_out"]        # (B,) its tie floor (TVDs); 0.0 for the others

Scores, per item of the final attention layer (`shared.encoded.mask`):
- `attention`: alpha_t.
- `random`: a permutation drawn per (cell, analysis, instance), as distinct descending keys.
- `gradient`: |grad_{e_t} y . e_t| with alpha held constant (J&W; `importance.gradient_importance`).
- `grad_x_attention`: that gradient times alpha_t.
- `leave_one_out`: TVD(y(x_-t), y(x)) (`importance.leave_one_out`); tied with the TVD floor.
- `norm_attention`: alpha_t ||f(h_t)||, f the linear map the output applies to the context
  (`AttentionClassifier.value_map`; Kobayashi et al. 2020): the size of what item t adds to the context as
  the output reads it, not only its weight.
- `integrated_gradients`: the signed Integrated Gradients attribution of the item's embeddings (Captum),
  `params.ig_steps` steps; its completeness gap is returned beside it (`ig_gap`).
- `attention_rollout`, `attention_flow`: the pooling weights carried through a Transformer encoder's
  residual-augmented self-attention layers by matrix products or by max-flow (Abnar & Zuidema 2020;
  `importance.propagated_attention`); `norm_rollout`, the same rollout of the layers' norm-based maps
  (alpha_hij ||f_h(x_j)||, per head) read by the `norm_attention` weights. Only for Transformer encoders:
  `applicable` drops them for other cells.

A pass's scores are kept on it (`SharedPass.memo`), so the analyses of one shard compute each ranking once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from gridlab.analyses.common import SharedPass, instance_generator
from gridlab.analyses.importance.gradient import gradient_importance
from gridlab.analyses.importance.integrated_gradients import integrated_gradients
from gridlab.analyses.importance.leave_one_out import leave_one_out
from gridlab.analyses.importance.propagated_attention import (
    attention_flow,
    attention_rollout,
    encode_keeping_maps,
    transformer_maps,
)
from gridlab.analyses.ranking import tvd_floor
from gridlab.catalog.analyses import TRANSFORMER_RANKINGS
from gridlab.models.classifier import AttentionClassifier


@dataclass(frozen=True)
class RankingScores:
    values: dict[str, torch.Tensor]  # ranking -> (B, T) scores, higher = more important
    floors: dict[str, torch.Tensor | float]  # ranking -> its `tie_ranks` floor: (B,) or 0.0
    ig_gap: torch.Tensor | None  # (B,) the integrated gradients' completeness gap, when they were computed


def applicable(model: AttentionClassifier, rankings: Sequence[str]) -> list[str]:
    """The rankings that can be computed for this model, in their order (rollout and flow need a Transformer)."""
    has_layers = transformer_maps(model) is not None
    return [r for r in rankings if has_layers or r not in TRANSFORMER_RANKINGS]


def ranking_scores(
    model: AttentionClassifier,
    cell_id: str,
    shared: SharedPass,
    rankings: Sequence[str],
    analysis_id: str,
    ig_steps: int = 50,
) -> RankingScores:
    """The scores of each of `rankings` (all must be `applicable`); `analysis_id` seeds the random ranking."""
    values = {name: _score(model, cell_id, shared, name, analysis_id, ig_steps) for name in rankings}
    floors: dict[str, torch.Tensor | float] = {
        name: tvd_floor(shared.probs, shared.pred) if name == "leave_one_out" else 0.0 for name in rankings
    }
    gap = shared.memo.get(("integrated_gradients_gap", ig_steps)) if "integrated_gradients" in rankings else None
    return RankingScores(values, floors, gap)


def _score(
    model: AttentionClassifier, cell_id: str, shared: SharedPass, name: str, analysis_id: str, ig_steps: int
) -> torch.Tensor:
    key = (name, analysis_id if name == "random" else None, ig_steps if name == "integrated_gradients" else None)
    if key not in shared.memo:
        shared.memo[key] = _compute(model, cell_id, shared, name, analysis_id, ig_steps)
    return shared.memo[key]


def _compute(
    model: AttentionClassifier, cell_id: str, shared: SharedPass, name: str, analysis_id: str, ig_steps: int
) -> torch.Tensor:
    batch, mask, alpha = shared.batch, shared.encoded.mask, shared.alpha
    if name == "attention":
        return alpha
    if name == "random":
        return random_keys(cell_id, analysis_id, shared)
    if name == "gradient":
        return gradient_importance(model, batch, shared)
    if name == "grad_x_attention":
        return _score(model, cell_id, shared, "gradient", analysis_id, ig_steps) * alpha
    if name == "leave_one_out":
        return leave_one_out(model, batch, shared)
    if name == "norm_attention":
        return alpha * model.value_map(shared.encoded.h).norm(dim=-1) * mask
    if name == "integrated_gradients":
        scores, gap = integrated_gradients(model, batch, shared, ig_steps)
        shared.memo[("integrated_gradients_gap", ig_steps)] = gap
        return scores
    if name in TRANSFORMER_RANKINGS:
        encode_keeping_maps(model, batch)  # the maps of this batch (other analyses' passes overwrite them)
        maps = transformer_maps(model, norms=name == "norm_rollout")
        if maps is None:
            raise ValueError(f"the {name} ranking needs a Transformer encoder")
        if name == "norm_rollout":
            pooled = _score(model, cell_id, shared, "norm_attention", analysis_id, ig_steps)
            return attention_rollout(maps, mask, pooled / pooled.sum(-1, keepdim=True))
        ranked = attention_rollout if name == "attention_rollout" else attention_flow
        return ranked(maps, mask, alpha)
    raise ValueError(f"unknown ranking {name!r}")


def random_order(cell_id: str, analysis_id: str, instance_id: int, length: int) -> torch.Tensor:
    """The random ranking of one instance: indices into its `length` unmasked positions, first ranked first.
    Drawn on the CPU so the same cell and instance give the same order on any device."""
    return torch.randperm(length, generator=instance_generator(cell_id, analysis_id, instance_id))


def random_keys(cell_id: str, analysis_id: str, shared: SharedPass) -> torch.Tensor:
    """(B, T) float64 keys that sort each instance's positions into its `random_order`, descending (distinct
    integers T, T - 1, ..., 1 on the items; padding 0)."""
    mask = shared.encoded.mask
    draws = []
    for instance_id, length in zip(shared.batch.instance_ids.tolist(), shared.lengths.tolist()):
        local = torch.empty(length, dtype=torch.float64)
        local[random_order(cell_id, analysis_id, instance_id, length)] = torch.arange(
            length, 0, -1, dtype=torch.float64
        )
        draws.append(local)
    keys = torch.zeros(mask.shape, dtype=torch.float64)
    keys[mask.cpu()] = torch.cat(draws)  # boolean indexing is row-major: each instance's positions in order
    return keys.to(mask.device)
