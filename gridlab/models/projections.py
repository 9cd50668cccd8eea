"""Projections of attention scores onto the simplex over the unmasked positions (docs/models.md#projections).

    >>> alpha = project(scores, mask, "sparsegen", lam=0.5)   # (B, T), exact zeros outside the support

softmax; sparsemax and 1.5-entmax from the `entmax` package; sparsegen-lin as sparsemax(s / (1 - lambda))
(Laha et al.; Meister et al. Eq. 4), whose support shrinks as lambda grows towards 1. Masked positions get
a score far below every real one instead of -inf, which sparsemax/entmax turn into NaN; relative to the
row's maximum, so the projection of the real scores is exactly what it would be without the padding.
"""

from __future__ import annotations

from typing import Literal

import torch
from entmax import entmax15, sparsemax

Projection = Literal["softmax", "sparsemax", "entmax15", "sparsegen"]
MASKED_GAP = 1e6  # below the row maximum: far outside any sparse support, exp() underflows to 0


def project(scores: torch.Tensor, mask: torch.Tensor, projection: str, lam: float | None = None) -> torch.Tensor:
    """(B, T) scores and mask -> (B, T) attention weights summing to 1 over `mask`, 0 elsewhere."""
    if projection == "sparsegen":
        scores = scores / (1.0 - (lam or 0.0))
    top = scores.masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True).detach()  # (B, 1)
    shifted = (scores - top).masked_fill(~mask, -MASKED_GAP)
    if projection == "softmax":
        alpha = torch.softmax(shifted, dim=-1)
    elif projection in ("sparsemax", "sparsegen"):
        alpha = sparsemax(shifted, dim=-1)
    elif projection == "entmax15":
        alpha = entmax15(shifted, dim=-1)
    else:
        raise ValueError(f"unknown projection '{projection}'")
    return alpha * mask  # exact zeros on padding, whatever the projection's rounding


def uniform(mask: torch.Tensor) -> torch.Tensor:
    """alpha_t = 1/T over the unmasked positions."""
    weights = mask.float()
    return weights / weights.sum(dim=-1, keepdim=True)


def random_weights(mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """alpha_t ~ U(0, 1) over the unmasked positions, normalised (Vashishth §4.1)."""
    draws = torch.rand(mask.shape, generator=generator, device=mask.device) * mask
    return draws / draws.sum(dim=-1, keepdim=True)
