"""Attention = alignment scores A(h, q) + projection phi onto the simplex + a training/inference mode.

    >>> attention = Attention(AttentionSpec("additive", "softmax"), hidden=256, query_dim=None, size=128)
    >>> alpha = attention(h, mask)                      # (B, T)

Alignments (docs/models.md#attention): additive `v^T tanh(W1 h_t + W2 q + b)`, with a learned context
vector in place of the query for single sequences (`c^T tanh(W h_t + b)`); scaled dot product
`h_t . q / sqrt(m)`, with a learned query for single sequences and a linear map when q's size differs from
h's. Modes (Vashishth §4.1, W&P): `learned`, `uniform` (1/T) and `random` (U(0,1), normalised, drawn anew
every forward pass); the fixed modes never look at the scores. `mode` can be switched on a trained model to
substitute attention at inference only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from gridlab.models.projections import project, random_weights, uniform


@dataclass(frozen=True)
class AttentionSpec:
    alignment: str  # additive | dot
    projection: str  # softmax | sparsemax | entmax15 | sparsegen
    lam: float | None = None  # sparsegen lambda
    mode: str = "learned"  # learned | uniform | random


class Attention(nn.Module):
    def __init__(self, spec: AttentionSpec, hidden: int, query_dim: int | None, size: int):
        super().__init__()
        self.spec = spec
        self.mode = spec.mode
        self.hidden = hidden
        if spec.alignment == "additive":
            self.key = nn.Linear(hidden, size)
            self.query = nn.Linear(query_dim, size, bias=False) if query_dim else None
            self.context = nn.Linear(size, 1, bias=False)
        elif spec.alignment == "dot":
            self.learned_query = None if query_dim else nn.Parameter(torch.randn(hidden) / math.sqrt(hidden))
            self.query = nn.Linear(query_dim, hidden, bias=False) if query_dim and query_dim != hidden else None
        else:
            raise ValueError(f"unknown alignment '{spec.alignment}'")

    def scores(self, h: torch.Tensor, query: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, m) representations [and (B, q) query] -> (B, T) unnormalised scores."""
        if self.spec.alignment == "additive":
            keys = self.key(h)  # (B, T, size)
            if self.query is not None:
                keys = keys + self.query(query).unsqueeze(1)
            return self.context(torch.tanh(keys)).squeeze(-1)
        q = self.learned_query.expand(h.shape[0], -1) if self.learned_query is not None else query
        if self.query is not None:
            q = self.query(q)
        return torch.einsum("btm,bm->bt", h, q) / math.sqrt(self.hidden)

    def forward(self, h: torch.Tensor, mask: torch.Tensor, query: torch.Tensor | None = None) -> torch.Tensor:
        if self.mode == "uniform":
            return uniform(mask)
        if self.mode == "random":
            return random_weights(mask)
        return self.from_scores(self.scores(h, query), mask)

    def from_scores(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T) weights of learned attention from its `scores`: a caller that knows most of the scores
        already (leave-one-out reuses the full pass's) computes only the rest."""
        return project(scores, mask, self.spec.projection, self.spec.lam)
