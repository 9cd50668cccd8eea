"""Attention propagated through a Transformer encoder's layers (Abnar & Zuidema 2020) as a score per
attention item: rollout and flow, and rollout of norm-based attention (docs/analyses.md#rankings).

    >>> encode_keeping_maps(model, batch)
    >>> maps = transformer_maps(model)          # that pass's [(B, H, T, T)] per layer, or None
    >>> attention_rollout(maps, mask, alpha)    # (B, T)
    >>> attention_flow(maps, mask, alpha)       # (B, T)
    >>> attention_rollout(transformer_maps(model, norms=True), mask, pooled_norms)   # norm_rollout

A layer's self-attention is only part of how information moves: the residual connection carries each
position's own vector past it. So each layer's attention, averaged over heads and its rows made to sum to 1
over the layer's real slots (those with any attention weight: tokens with their `<sos>`/`<eos>`; padding has
none), is mixed with the identity, A~ = 0.5 A + 0.5 I. The classifier's pooling attention alpha reads the
last layer, so it is one more layer on top, a single query, without a residual.
- **Rollout**: R = A~_L ... A~_1; the score of slot j is sum_i alpha_i R[i, j], the share of the pooled
  vector that traces back to input j along all paths, products of weights along each path.
- **Norm rollout**: rollout of Kobayashi et al.'s (2020) norm-based maps, alpha_hij ||f_h(x_j)|| with f_h
  the head's value and output projections (`TransformerEncoder.norm_maps`), read by the pooling's own
  norm-based weights alpha_t ||f(h_t)|| (`norm_attention`) made to sum to 1. A weight on a small vector
  moves little; rollout alone cannot see that. Heads are averaged as in rollout: with one head (Meister et
  al.'s setting) each layer's map is exactly Kobayashi's ||alpha_ij f(x_j)||; with several it is the mean of
  the heads' norms, not the norm of their sum (which would need a (B, T, T, m) tensor).
- **Flow**: the layers as a graph, an edge from (l - 1, j) to (l, i) with capacity A~_l[i, j] and from
  (L, i) to the output with capacity alpha_i; the score of slot j is the maximum flow from (0, j) to the
  output: paths share capacity, so mass is not counted twice. scipy's max-flow (Dinic) needs integer
  capacities: weights are scaled by FLOW_SCALE = 2^24 and rounded (a resolution of 6e-8 on flows of at most
  1). Cost: one max-flow per instance per real slot on a graph of L n^2 + n edges (n real slots), so its
  time grows with n^3 per instance; each instance's graph is built once, over its real slots only.
Only the items' scores (`mask`) are returned; `<sos>`/`<eos>` take part in the graph but are not items.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

from gridlab.data.batching import Batch
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.encoders import Transformer
from gridlab.models.pretrained import PretrainedEncoder

FLOW_SCALE = 1 << 24


def transformer_maps(model: AttentionClassifier, norms: bool = False) -> list[torch.Tensor] | None:
    """The self-attention maps [(B, H, T, T)] of the last `encode` (with `norms`, their norm-based form) when
    the encoder under the final attention layer is a Transformer, else None (these rankings do not apply). A
    pretrained encoder's maps are its layers 1..L-1 pooled to words (its last layer is the final attention)."""
    encoder = getattr(model, "encoder", None)  # a plug-in model may have none
    if isinstance(encoder, PretrainedEncoder):
        return encoder.norm_maps() if norms else encoder.attention_maps
    if not isinstance(encoder, Transformer):
        return None
    return encoder.encoder.norm_maps() if norms else encoder.encoder.attention_maps


def encode_keeping_maps(model: AttentionClassifier, batch: Batch) -> None:
    """Encode `batch` so that `transformer_maps` reads its maps: a pretrained encoder keeps them only when asked
    (they are large on long documents); a Transformer keeps them on every pass."""
    encoder = getattr(model, "encoder", None)
    if isinstance(encoder, PretrainedEncoder):
        with encoder.keeping_maps():
            model.encode(batch)
    else:
        model.encode(batch)


def residual_attention(maps: list[torch.Tensor]) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Per layer (B, T, T): heads averaged, rows made to sum to 1 over the real slots, then 0.5 A + 0.5 I; and
    the real slots (B, T) (keys with any weight in the first layer)."""
    real = maps[0].double().amax(dim=(1, 2)) > 0  # (B, T): a padded key gets no weight from any query
    pairs = real[:, :, None] & real[:, None, :]  # (B, T, T)
    eye = torch.eye(real.shape[1], dtype=torch.float64, device=real.device)
    tiny = torch.finfo(torch.float64).tiny
    layers = []
    for attention in maps:
        heads = attention.double().mean(1) * pairs  # (B, T, T)
        heads = heads / heads.sum(-1, keepdim=True).clamp_min(tiny)  # a norm-based map's rows sum to 1 too
        layers.append((0.5 * heads + 0.5 * eye) * pairs)  # a real query's row sums to 1, a padded one's to 0
    return layers, real


def attention_rollout(maps: list[torch.Tensor], mask: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """(B, T) sum_i alpha_i (A~_L ... A~_1)[i, j] at the items of `mask`, 0 elsewhere."""
    layers, _ = residual_attention(maps)
    rolled = layers[0]
    for layer in layers[1:]:
        rolled = layer @ rolled  # (B, T, T)
    scores = torch.einsum("bi,bij->bj", alpha.double(), rolled)  # (B, T)
    return (scores * mask).to(alpha.dtype)


def attention_flow(maps: list[torch.Tensor], mask: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """(B, T) the maximum flow from each item of `mask` through the layers into the pooling node."""
    layers, real = residual_attention(maps)
    capacities = [np.rint(layer.cpu().numpy() * FLOW_SCALE).astype(np.int32) for layer in layers]  # (B, T, T) each
    pooled = np.rint(alpha.double().cpu().numpy() * FLOW_SCALE).astype(np.int32)  # (B, T)
    real_np, mask_np = real.cpu().numpy(), mask.cpu().numpy()
    scores = np.zeros(mask.shape, dtype=np.float64)
    for b in range(len(mask_np)):
        slots = np.flatnonzero(real_np[b])  # (n,)
        graph = _layer_graph([c[b][np.ix_(slots, slots)] for c in capacities], pooled[b][slots])
        sink = graph.shape[0] - 1
        for local, slot in enumerate(slots):
            if mask_np[b, slot]:
                scores[b, slot] = maximum_flow(graph, local, sink).flow_value / FLOW_SCALE
    return torch.from_numpy(scores).to(device=alpha.device, dtype=alpha.dtype)


def _layer_graph(layers: list[np.ndarray], pooled: np.ndarray) -> csr_matrix:
    """The capacity matrix of one instance: node l n + i is slot i after layer l (layer 0: the inputs), the
    last node the pooling output. layers: [(n, n)] integer capacities (row: query i, column: key j)."""
    n = len(pooled)
    rows, cols, data = [], [], []
    for above, layer in enumerate(layers, start=1):
        query, key = np.nonzero(layer)
        rows.append((above - 1) * n + key)  # from slot j below ...
        cols.append(above * n + query)  # ... to slot i above
        data.append(layer[query, key])
    top = np.flatnonzero(pooled)
    rows.append(len(layers) * n + top)
    cols.append(np.full(len(top), (len(layers) + 1) * n))
    data.append(pooled[top])
    size = (len(layers) + 1) * n + 1
    return csr_matrix(
        (np.concatenate(data).astype(np.int32), (np.concatenate(rows), np.concatenate(cols))), shape=(size, size)
    )
