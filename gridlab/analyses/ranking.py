"""The one tie rule every analysis applies before it ranks importances: Kendall tau (`importance_correlation`,
`sparsity_importance`), the erasure order (`erasure_multi`), the top weight (`erasure_single`) and the top-k
and AUC of `rationale_recovery`, in the batched `run` and the per-instance `reference` alike; also the
highlighted top tokens of the human evaluation sheet (`gridlab.annotate.export`).

    >>> values = torch.tensor([[0.3, 0.1, 0.3 + 1e-9, 9.0]])   # the last slot is padding
    >>> mask = torch.tensor([[True, True, True, False]])
    >>> tie_ranks(values, mask)                                # [[1., 0., 1., nan]] float64: 0.3 ties 0.3 + 1e-9
    >>> descending_order(values, mask)                         # [[0, 2, 1, 3]]: ties by position, padding last
    >>> tie_ranks(d, mask, tvd_floor(shared.probs, shared.pred))   # a TVD importance (leave-one-out, erasure)

**The rule.** Per instance, over its items only (`mask`), sort the values; two neighbours in that order tie
when they differ by at most

    tol = max(RTOL * max_t |v_t|, floor),    RTOL = 1e-5,

and ties chain (a, b, c tie when a ties b and b ties c). The scale max_t |v_t| runs over the instance's finite
items. `floor` is 0 for attention weights and gradients; for an importance that is a TVD between output
distributions (leave-one-out, erasure of a representation) it is `tvd_floor`: PROBABILITY_RTOL * (1 - y), 2e-6
of the probability mass beside the predicted class (about 17 float32 epsilons of the probabilities the TVD is
a difference of). `tie_ranks` gives each item the index of its tie group in ascending order (dense ranks 0, 1,
...): rank statistics see exactly the tied values (Kendall tau-b and its p-value, average ranks for an AUC).
Where a strict order is needed (the erasure order, top-k, the top weight) `descending_order` puts the highest
group first and breaks ties by position, the earlier item first. Padding neither sets the scale nor joins a
group, so an instance gets the same ranks in any batch and in the per-instance reference. A non-finite value
has no rank (NaN): its row's tau and AUC are null, and in a strict order it comes after the finite items.

**Why.** Mathematically equal importances do not come out equal in float32: deleting either copy of a
repeated token under the order-free `average`/`noenc` encoders, or erasing either copy's representation,
gives outputs that differ by summation order, and that order changes with the batch, the thread count and the
BLAS. Ranked as computed (J&W's code), such a pair flips between runs (tau_dy_h 0.1972 in one batch, 0.2 in
another). Measured between batchings and thread counts, on the tiny test models and on models trained on SST
and IMDB: attention and gradients move by under 3e-6 of the vector's largest |value| (and equal ones come
out exactly equal), so RTOL = 1e-5, about 80 float32 epsilons, covers them; values closer than that are below
what float32 resolves against the largest one. A TVD is a difference of nearly equal probabilities: its
rounding is set by those probabilities, not by the TVD, so relative to the largest TVD it can be large (the
copies of a repeated token in IMDB documents differed by up to 1.6e-4 of it; 1e-5 split 39% of them) while
relative to 1 - y it stays small (at most 1.4e-6 over 9,842 repeated-token groups of a small model; 0.4% of
the groups of a diverged, saturated default-size model exceed 2e-6): hence the floor. It is relative to
1 - y, not absolute, because a confident prediction's TVDs are legitimately tiny (`tvd_beside` keeps them
exact where y rounds to 1); gradients get no floor, being as tiny there. A vector of zeros ties exactly.

**Why chained neighbours and not a grid.** Snapping values to multiples of the tolerance puts a cell
boundary between two copies 1e-8 apart with a chance of their distance over the cell size: the flip this
rule exists to remove. Neighbours within the tolerance are never separated. The cost: a dense run of values,
each within the tolerance of the next, ties as a whole. On trained models (SST at small and default sizes,
IMDB small) the rule moved per-instance taus by under 1.3e-3 on average and at most 0.035; on a diverged,
saturated IMDB model, whose importances crowd within a few tolerances of zero, by 0.03 on average (at most
0.12).

**What it cannot do.** Distinct values whose gap is itself near the tolerance can tie in one computation
and not in another. That is rare where values are well apart (over 1,600 SST instances, one tau differed
between batchings, against six without the rule), but the single-token TVDs of long documents have tails
that sit at float32 noise: for 15-40% of IMDB documents tau_loo / tau_dy_h still differ between batchings,
as they did without the rule, by up to 0.008 (0.03 on the diverged model, where a link that flips joins or
splits a long chain). No tolerance that leaves genuine ranks alone fixes that.
"""

from __future__ import annotations

import torch

RTOL = 1e-5  # values closer than RTOL * (the instance's largest |value|) tie
PROBABILITY_RTOL = 2e-6  # TVDs closer than this much of 1 - y tie (about 17 float32 epsilons)


def tie_ranks(values: torch.Tensor, mask: torch.Tensor, floor: torch.Tensor | float = 0.0) -> torch.Tensor:
    """values (B, T), mask (B, T) bool, floor (B,) or a number -> (B, T) float64: the ascending index of each
    item's tie group, NaN for padding and for non-finite values. One sort, one cumulative sum, one scatter."""
    v = values.detach().double()  # the difference of two float32 values is exact in float64
    usable = mask & v.isfinite()  # (B, T)
    scale = torch.where(usable, v.abs(), 0.0).amax(-1)  # (B,) largest |value| of the instance
    if isinstance(floor, torch.Tensor):
        tol = torch.maximum(RTOL * scale, floor.to(torch.float64))[:, None]  # (B, 1)
    else:
        tol = (RTOL * scale).clamp_min(floor)[:, None]
    ordered, order = torch.sort(v.masked_fill(~usable, torch.inf), dim=-1, stable=True)  # (B, T) unusable last
    joined = ordered.diff(dim=-1) <= tol  # (B, T - 1) sorted item j + 1 ties item j (inf - inf is NaN: never)
    opens = torch.cat([joined.new_zeros(len(v), 1), ~joined], dim=-1)  # (B, T) a new group starts here
    group = opens.cumsum(-1).double()  # (B, T) group index in sorted order
    ranks = torch.empty_like(group).scatter_(-1, order, group)  # (B, T) back to the slots
    return ranks.masked_fill(~usable, torch.nan)


def tvd_floor(probs: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """(B,) the `tie_ranks` floor of TVD importances: PROBABILITY_RTOL * (1 - y), with 1 - y summed from the
    other classes' probabilities (exact where y rounds to 1). probs (B, C), pred (B,)."""
    chosen = torch.nn.functional.one_hot(pred, probs.shape[-1]).bool()  # (B, C)
    return PROBABILITY_RTOL * probs.detach().double().masked_fill(chosen, 0.0).sum(-1)


def descending_order(values: torch.Tensor, mask: torch.Tensor, floor: torch.Tensor | float = 0.0) -> torch.Tensor:
    """(B, T) slots: the highest tie group first, ties by position (the earlier slot first), then the items
    without a rank (non-finite), then padding."""
    return order_of_ranks(tie_ranks(values, mask, floor), mask)


def order_of_ranks(ranks: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`descending_order` from ranks already taken: (B, T) slots (a stable sort keeps position order)."""
    key = torch.where(mask, ranks.nan_to_num(-1.0), -2.0)  # (B, T) unranked items, then padding, last
    return torch.sort(key, dim=-1, descending=True, stable=True).indices
