"""`permutation` — Jain & Wallace §4.2.1, Algorithm 2 (docs/analyses.md#permutation): how far the output
moves when the attention weights are shuffled while the representations h stay fixed.

    >>> context = AnalysisContext(cell_id, model.eval(), device, PermutationParams(n=100))
    >>> columns = permutation.run(context, forward_once(model, batch))
    >>> columns["tvd_median"]            # (B,) float64; J&W Fig. 3 plots it against max attention

Each instance gets `n` permutations of alpha over its own unmasked positions (padding keeps weight 0):
permutation p is the stable argsort of row p of an (n, T_b) block of uniform float64 draws from
`instance_generator(cell_id, "permutation", instance_id)`, with T_b the instance's own length, so the
draws never depend on the batch it is padded into. The identity may be drawn, as with J&W's
`np.random.permutation`. All permuted vectors of a batch are decoded with `decode_many` (chunked over the
n permutations to bound memory), and each output is compared with the original by TVD (docs/analyses.md#distances).
`tvd_median` interpolates between the two middle values for even n (numpy's median), not torch.median's
lower middle value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, decode_many, instance_generator, measured, tvd
from gridlab.analyses.permutation import INFO, PermutationParams

ID = "permutation"
VERSION = 1

# Elements of the permuted alphas plus their contexts in one decoder call: bounds memory for long documents
# (B = 32, n = 100, T = 2500 would otherwise be 8M alphas at once) while short batches decode in one call.
CHUNK_ELEMENTS = 1 << 22
PADDING_NOISE = 2.0  # above every uniform draw in [0, 1): padding slots sort last and stay in place


def uniforms(cell_id: str, instance_id: int, n: int, length: int) -> torch.Tensor:
    """(n, length) float64 draws for one instance; row p's stable argsort is its permutation p.
    float64 so that ties, which a stable sort would break towards the identity, practically never occur."""
    generator = instance_generator(cell_id, ID, instance_id)
    return torch.rand(n, length, generator=generator, dtype=torch.float64)


def unmasked_first(mask: torch.Tensor) -> torch.Tensor:
    """(B, T) positions: each row's unmasked positions in order, then its masked ones."""
    return (~mask).to(torch.int8).argsort(dim=-1, stable=True)


def batch_noise(shared: SharedPass, cell_id: str, n: int) -> torch.Tensor:
    """(B, n, T) draws in compact coordinates: slot j < T_b stands for the b-th instance's j-th unmasked
    position, slots from T_b on are padding."""
    b, t = shared.encoded.mask.shape
    noise = torch.full((b, n, t), PADDING_NOISE, dtype=torch.float64)  # (B, n, T)
    lengths = shared.lengths.tolist()
    for row, (instance_id, length) in enumerate(zip(shared.batch.instance_ids.tolist(), lengths)):
        noise[row, :, :length] = uniforms(cell_id, instance_id, n, length)
    return noise.to(shared.alpha.device)


def permute(alpha: torch.Tensor, mask: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """alpha (B, T) permuted within each row's unmasked positions by the argsort of `noise` (B, k, T)
    -> (B, k, T). Masked positions keep their weight (0)."""
    b, k, t = noise.shape
    positions = unmasked_first(mask)  # (B, T)
    compact = alpha.gather(-1, positions)  # (B, T): the unmasked weights first, then the padding zeros
    order = noise.argsort(dim=-1, stable=True)  # (B, k, T): a permutation of slots < T_b, identity after
    shuffled = compact.unsqueeze(1).expand(b, k, t).gather(-1, order)  # (B, k, T) compact coordinates
    return torch.zeros_like(shuffled).scatter_(-1, positions.unsqueeze(1).expand(b, k, t), shuffled)  # (B, k, T)


def permuted_alphas(shared: SharedPass, cell_id: str, n: int) -> torch.Tensor:
    """All n permutations of each instance's alpha: (B, n, T)."""
    return permute(shared.alpha, shared.encoded.mask, batch_noise(shared, cell_id, n))


def permutation_tvds(context: AnalysisContext[PermutationParams], shared: SharedPass) -> torch.Tensor:
    """(B, n) float64: TVD between the output under each permuted alpha and the original output."""
    model = context.classifier
    noise = batch_noise(shared, context.cell_id, context.params.n)  # (B, n, T)
    b, n, t = noise.shape
    step = max(1, CHUNK_ELEMENTS // (b * (t + shared.encoded.h.shape[-1])))
    original = shared.probs.unsqueeze(1)  # (B, 1, C)
    chunks = []
    for start in range(0, n, step):
        alphas = permute(shared.alpha, shared.encoded.mask, noise[:, start : start + step])  # (B, k, T)
        chunks.append(tvd(decode_many(model, shared, alphas), original))  # (B, k)
    return torch.cat(chunks, dim=1).double()  # (B, n)


def _columns(tvds: torch.Tensor) -> dict[str, np.ndarray]:
    """(B, n) TVDs -> the SCHEMA columns."""
    return {
        "tvd_median": torch.quantile(tvds, 0.5, dim=-1).cpu().numpy(),  # linear: numpy's median
        "tvd_mean": tvds.mean(-1).cpu().numpy(),
        "tvd_max": tvds.amax(-1).cpu().numpy(),
    }


@torch.no_grad()
def run(context: AnalysisContext[PermutationParams], shared: SharedPass) -> dict[str, np.ndarray]:
    return _columns(permutation_tvds(context, shared))


@torch.no_grad()
def reference(context: AnalysisContext[PermutationParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Algorithm 2 as written: per instance, per permutation, one decode."""
    model = context.classifier
    h, mask, query = shared.encoded.h, shared.encoded.mask, shared.encoded.query
    n = context.params.n
    rows = []
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        unmasked = mask[b]
        weights = shared.alpha[b, unmasked]  # (T_b,)
        orders = uniforms(context.cell_id, instance_id, n, len(weights)).argsort(dim=-1, stable=True)  # (n, T_b)
        distances = []
        for order in orders:
            permuted = torch.zeros_like(shared.alpha[b])
            permuted[unmasked] = weights[order.to(weights.device)]
            logits = model.decode(h[b : b + 1], permuted[None], None if query is None else query[b : b + 1])
            distances.append(float(tvd(torch.softmax(logits, -1)[0], shared.probs[b])))
        rows.append(distances)
    tvds = np.asarray(rows, dtype=np.float64)  # (B, n)
    return {"tvd_median": np.median(tvds, axis=-1), "tvd_mean": tvds.mean(-1), "tvd_max": tvds.max(-1)}


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model: J&W Fig. 3's quantity (median TVD under permutation), its spread and worst case."""
    return measured(
        {
            "tvd_median_median": rows["tvd_median"].astype(float).median(),
            "tvd_median_mean": rows["tvd_median"].astype(float).mean(),
            "tvd_max_max": rows["tvd_max"].astype(float).max(),
        }
    )


class Permutation(InstanceAnalysis[PermutationParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
