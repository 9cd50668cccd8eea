"""Leave-one-out for local premise encoders: the scores reused, the outputs next to the gap recomputed.

Local encoders (`average`, `noenc`: position-wise; `cnn`: outputs within the widest kernel's half-width r of
the gap change) with learned attention (`_local_probs`): an alignment score depends only on its own h (and
the query, which never sees the premise), so a shortened row's scores are the full pass's shifted past the
gap with the 2r window's recomputed; the projection runs on them and the context is one bmm of the mapped
weights with the full pass's h plus the window's correction. For every gap at once, without rebuilding any
row; a CNN's window outputs are sums of per-tap partial sums formed once."""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from gridlab.analyses.common import SharedPass
from gridlab.data.batching import Batch
from gridlab.data.vocab import PAD_ID
from gridlab.models.attention import Attention
from gridlab.models.classifier import (
    AttentionClassifier,
    FlatClassifier,
    PairClassifier,
)
from gridlab.models.encoders import Average, Convolutional, Identity
from gridlab.models.projections import project


def _is_local(model: AttentionClassifier) -> bool:
    """A flat/pair model with learned attention (`Attention` as it is) and a premise encoder whose output at
    a slot depends only on the tokens within a fixed radius: `average`/`noenc` (radius 0), or a CNN of odd,
    same-padded, stride-1 kernels. Uniform and random weights take the generic path, which calls `attend`."""
    if type(model) not in (FlatClassifier, PairClassifier) or type(model.attention) is not Attention:
        return False
    if model.attention.mode != "learned" or (model.training and model.dropout.p > 0):
        return False
    encoder = model.encoder
    if isinstance(encoder, (Average, Identity)):
        return True
    return isinstance(encoder, Convolutional) and all(
        conv.kernel_size[0] % 2 == 1
        and conv.padding == (conv.kernel_size[0] // 2,)
        and conv.stride == (1,)
        and conv.dilation == (1,)
        and conv.groups == 1
        for conv in _convs(encoder)
    )


def _convs(encoder: Convolutional) -> list[nn.Conv1d]:
    """The encoder's kernels, typed: iterating an `nn.ModuleList` gives plain modules."""
    return [cast(nn.Conv1d, conv) for conv in encoder.convs]  # `Convolutional` builds nn.Conv1d only


def _local_probs(
    model: AttentionClassifier,
    batch: Batch,
    shared: SharedPass,
    todo: torch.Tensor,
    chunk_elements: int,
    out: torch.Tensor,
) -> None:
    """Fill out (B, T, C) at the deletions `todo` (B, T) with their outputs for a local premise encoder, every
    gap of a row at once: tensors (b, T, W) over rows, gaps and shortened slots. Rows go in groups of at most
    `chunk_elements` activations (b * T times the widest of W, m and a CNN kernel's k + 1 partial sums).

    Deleting slot t shifts every later slot left by one; only the 2r outputs whose receptive field spans the
    gap change (r = 0 for `average`/`noenc`, the widest kernel's half-width for a CNN). Everywhere else the
    shortened row's h and alignment scores are the full pass's, shifted (a score is a function of its own h
    and of the query, which never sees the premise). So: the scores shifted past the gap, the 2r window
    slots' rescored from their recomputed h, the projection as `Attention.forward` runs it, and the context
    sum_j alpha_j h_j as one bmm of alpha (mapped back to the original slots, 0 at the gap) with the full
    pass's h, plus alpha_j (h'_j - h_j) over the window."""
    encoded = shared.encoded
    rows, positions = todo.nonzero(as_tuple=True)  # (N,) each
    tw = encoded.mask.shape[1]
    sums = [(conv.kernel_size[0] + 1) * conv.out_channels for conv in getattr(model.encoder, "convs", [])]
    group = max(1, chunk_elements // (tw * max(tw, encoded.h.shape[-1], *sums)))
    for first in range(0, encoded.mask.shape[0], group):
        part = slice(first, first + group)
        context = _local_contexts(
            model,
            batch.ids[part],
            encoded.h[part],
            encoded.mask[part],
            None if encoded.query is None else encoded.query[part],
        )  # (b, T, m)
        chosen = (rows >= first) & (rows < first + group)
        r, t = rows[chosen], positions[chosen]
        query = None if encoded.query is None else encoded.query[r]
        out[r, t] = torch.softmax(model.output(context[r - first, t], query), dim=-1).to(out.dtype)


def _local_contexts(
    model: AttentionClassifier, ids: torch.Tensor, h: torch.Tensor, mask: torch.Tensor, query: torch.Tensor | None
) -> torch.Tensor:
    """(b, T, m) the context vector after deleting slot t of row b, for every t (only the masked ones are
    meaningful): h (b, T, m) and mask (b, T) of the full pass."""
    attention, (b, tw) = model.attention, mask.shape
    width = tw - 1  # shortened rows
    gap = torch.arange(tw, device=mask.device)[:, None]  # (T, 1) the deleted slot
    slot = torch.arange(width, device=mask.device)[None, :]  # (1, W) shortened slots
    source = slot + (slot >= gap).long()  # (T, W) original slot of each shortened slot
    scores = attention.scores(h, query)[:, source]  # (b, T, W) the full pass's, shifted past each gap
    windows = list(_windows(model, ids))  # [(delta, h' (b, T, m))]: the output at shortened slot t + delta
    for delta, fresh in windows:
        scores = torch.where(slot == gap + delta, attention.scores(fresh, query)[..., None], scores)
    alpha = project(scores, mask[:, source], attention.spec.projection, attention.spec.lam)  # (b, T, W)
    original = torch.arange(tw, device=mask.device)[None, :]  # (1, T) original slots
    back = (original - (original > gap).long()).clamp(max=width - 1)  # (T, T) shortened slot of each original
    mapped = alpha.gather(-1, back.expand(b, -1, -1)) * (original != gap)  # (b, T, T), 0 at the gap
    context = torch.bmm(mapped, h)  # (b, T, m)
    edge = len(windows) // 2 + 1  # r + 1
    padded = torch.nn.functional.pad(h, (0, 0, edge, edge))  # (b, T + 2(r + 1), m) zero beyond the row
    for delta, fresh in windows:
        j = gap[:, 0] + delta  # (T,) the shortened slot
        weight = alpha.gather(-1, j.clamp(0, width - 1).expand(b, -1)[..., None])  # (b, T, 1)
        weight = weight * ((j >= 0) & (j < width))[None, :, None]
        shift = delta if delta < 0 else delta + 1  # original slot t + shift held this slot's h before
        before = padded[:, edge + shift : edge + shift + tw]  # (b, T, m)
        context = context + weight * (fresh - before)
    return context


def _windows(model: AttentionClassifier, ids: torch.Tensor):
    """For a CNN, yield (delta, h') for delta in -r .. r - 1: h' (b, T, m) is the output at shortened slot
    t + delta after deleting slot t, for every t.

    Output w of a kernel k (half-width q) sums the taps W_o x_{w + o - q}; after the deletion, the taps
    reading left of the gap (o < s = t - w + q) see the original slots and the others the slots one further
    right. With C_s[p] = sum_{o<s} W_o x_{p+o-q}, the original row's partial sums (C_k the full
    pre-activation), h'_w = relu(bias + C_s[w] + C_k[w + 1] - C_s[w + 1]), s clamped to 0..k: for
    w = t + delta, s = q - delta whatever t, so each delta is three shifted slices per kernel."""
    encoder = model.encoder
    if not isinstance(encoder, Convolutional):
        return
    b, tw = ids.shape
    convs = _convs(encoder)
    radius = max(conv.kernel_size[0] // 2 for conv in convs)
    pad = radius + 1
    x = model.dropout(model.embedding(ids)) * (ids != PAD_ID).unsqueeze(-1)  # (b, T, d), as the CNN sees it
    partial = []
    for conv in convs:
        k, q = conv.kernel_size[0], conv.kernel_size[0] // 2
        taps = torch.nn.functional.pad(_taps(x, conv.weight), (0, 0, 0, 0, q + pad, q + pad))  # (b, T'', k, F)
        n, length, _, f = taps.shape
        # diagonal view: aligned[:, i, o] = taps[:, i + o, o], tap o of output slot i - pad: (b, T + 2pad, k, F)
        aligned = taps.as_strided((n, tw + 2 * pad, k, f), (length * k * f, k * f, k * f + f, 1))
        cumulative = torch.nn.functional.pad(aligned.cumsum(2), (0, 0, 1, 0))  # (b, T + 2pad, k + 1, F): C_s
        partial.append((k, q, cumulative, conv.bias, f))
    width = sum(f for *_, f in partial)
    for delta in range(-radius, radius):
        fresh = x.new_empty(b, tw, width)
        first = 0
        for k, q, cumulative, bias, f in partial:
            s = min(max(q - delta, 0), k)
            w = pad + delta  # index of output slot t + delta for t = 0
            part = fresh[..., first : first + f]
            torch.add(cumulative[:, w : w + tw, s], cumulative[:, w + 1 : w + 1 + tw, k], out=part)
            part -= cumulative[:, w + 1 : w + 1 + tw, s]
            if bias is not None:
                part += bias
            first += f
        yield delta, fresh.relu_()


def _taps(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x (b, T, d), a Conv1d weight (F, d, k) -> (b, T, k, F): W_o x_p for every slot p and tap o."""
    f, d, k = weight.shape
    return (x @ weight.permute(1, 2, 0).reshape(d, k * f).to(x.dtype)).reshape(*x.shape[:2], k, f)
