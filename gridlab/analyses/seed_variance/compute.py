"""`seed_variance` — Wiegreffe & Pinter §3.2 (docs/analyses.md#seed_variance): how far the attention of
models that differ only in their seed lies apart on the same instance. It is the baseline an adversary's JSD must beat:
J&W's adversarial attention is only remarkable if it is further from the model's than another seed's is.

    >>> columns = seed_variance.run(context, shared, [forward_once(peer, batch) for peer in peers])
    >>> columns["jsd_seed_max"]       # (B,) the largest JSD to any other seed's attention

Grid scope: a cell's "peers" are the trained cells of its grid whose resolved config equals its own but
for `seed` (`peers_of`). Each row compares this cell's attention and output with every peer's on the same
test instance: JSD of the attention (docs/analyses.md#distances, natural log), TVD of the outputs. Peers see
exactly the same batch (same vocabulary, same padding), so the rows need no random draws. The rows are computed once the
whole seed group is trained (or failed); `other_seeds` and `peer_cells` record whom they were compared with.
"""

from __future__ import annotations

import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, GridAnalysis
from gridlab.analyses.common import SharedPass, jsd, measured, tvd
from gridlab.analyses.seed_variance import INFO, SCHEMA
from gridlab.catalog.analyses import NoParams

ID = "seed_variance"
VERSION = 1


def run(context: AnalysisContext, shared: SharedPass, peers: list[SharedPass], peer_cells: list[str]) -> dict:
    """Columns for a batch, given the same batch's shared pass through each peer model."""
    alphas = torch.stack([p.alpha for p in peers], dim=1)  # (B, S, T)
    probs = torch.stack([p.probs for p in peers], dim=1)  # (B, S, C)
    divergence = jsd(alphas.double(), shared.alpha.double().unsqueeze(1))  # (B, S)
    moved = tvd(probs.double(), shared.probs.double().unsqueeze(1))  # (B, S)
    b = shared.alpha.shape[0]
    return {
        "other_seeds": torch.full((b,), len(peers), dtype=torch.int64).numpy(),
        "peer_cells": [",".join(peer_cells)] * b,
        "jsd_seed_mean": divergence.mean(-1).cpu().numpy(),
        "jsd_seed_max": divergence.max(-1).values.cpu().numpy(),
        "tvd_seed_mean": moved.mean(-1).cpu().numpy(),
    }


def reference(context: AnalysisContext, shared: SharedPass, peers: list[SharedPass], peer_cells: list[str]) -> dict:
    """One instance and one peer at a time, on the unmasked positions only: the oracle for `run`."""
    columns: dict[str, list] = {f.name: [] for f in SCHEMA}
    mask = shared.encoded.mask
    for row in range(mask.shape[0]):
        keep = mask[row]
        divergences, moves = [], []
        for peer in peers:
            p, q = shared.alpha[row][keep].double(), peer.alpha[row][keep].double()
            m = (p + q) / 2
            kl = lambda a, b: float(sum(x * torch.log(x / y) for x, y in zip(a, b) if x > 0))  # noqa: E731
            divergences.append(0.5 * kl(p, m) + 0.5 * kl(q, m))
            moves.append(0.5 * float((shared.probs[row].double() - peer.probs[row].double()).abs().sum()))
        columns["other_seeds"].append(len(peers))
        columns["peer_cells"].append(",".join(peer_cells))
        columns["jsd_seed_mean"].append(sum(divergences) / len(divergences))
        columns["jsd_seed_max"].append(max(divergences))
        columns["tvd_seed_mean"].append(sum(moves) / len(moves))
    return columns


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model: the typical and the largest attention distance to another seed (W&P's Table 3 baseline)."""
    return measured(
        {
            "jsd_seed_mean_mean": rows["jsd_seed_mean"].astype(float).mean(),
            "jsd_seed_max_median": rows["jsd_seed_max"].astype(float).median(),
            "tvd_seed_mean_mean": rows["tvd_seed_mean"].astype(float).mean(),
        }
    )


class SeedVariance(GridAnalysis[NoParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
