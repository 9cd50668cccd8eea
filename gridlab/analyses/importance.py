"""Feature importance over the items of the final attention layer, batched: the gradient and leave-one-out
measures of Jain & Wallace §4.1, Algorithm 1 (docs/analyses.md#importance_correlation), shared by every
analysis that ranks items.

    >>> shared = forward_once(model, batch)
    >>> g = gradient_importance(model, batch, shared)      # (B, T) |grad_{e_t} y . e_t|, 0 outside the mask
    >>> d = leave_one_out(model, batch, shared)            # (B, T) TVD(y(x_-t), y(x)), 0 outside the mask
    >>> probs = leave_one_out_probs(model, batch, shared)  # (B, T, C) the outputs behind d
    >>> reference_leave_one_out(model, shared)             # the same as a per-instance loop (test oracle)

Both are aligned with `shared.encoded.mask`: tokens for flat and pair models (the premise only: attention
is over the premise, the query is left as it is), sentences for hierarchical (HAN) models.

Gradient. `g_t = |sum_w 1[x_tw = 1] dy/dx_tw|`, the gradient with respect to the one-hot input, is the
embedding gradient dotted with the token's embedding. `y` is the probability of the predicted class
`shared.pred`; the graph is cut at the final attention layer (alpha is a constant). The constant is
`shared.alpha`: for learned attention it equals `model.attend(...).detach()` on the same input, and for
random attention it is the draw that produced `shared.probs`. One backward serves the whole batch
(instances never interact, so the gradient of the summed y is each instance's own). dy/dlogits =
y (e_pred - p) is formed with 1 - y as the sum of the other probabilities, so a confident prediction whose
y rounds to 1.0 in float32 still gets the exact direction (autograd through softmax would round 1 - y to 0
and keep only the -y p_c terms).
For HAN an item is a sentence: its words' contributions `grad_{e_w} y . e_w` are summed, then the
absolute value taken (the one-hot gradient of the sentence as one unit: all its words scaled together).
Only the final (sentence) attention is detached; the word attention is part of the sentence encoder.

Leave-one-out. Item t is deleted and the sequence shortens (`<sos>`/`<eos>` stay, `lengths` drop by 1),
as J&W's `x_-t`; for HAN sentence t is deleted from the document. The TVD is taken from the classes other
than the prediction (`tvd_beside`), which keeps it exact when the predicted probability rounds to 1.
All deletions of a batch are built at once by gathering each row with a shifted index (no loop over
positions); a shortened row ends in padding (a `<pad>` slot appended to the source rows), and padding never
changes a model's output. They run in chunks of at most `chunk_elements` activations, each chunk as wide
as its longest row. Deleting the only item leaves an empty sequence, which the projections turn into
alpha = 0 and the zero context.

What is optimised (flat and pair models; HAN, transformer encoders, uniform/random attention for local
encoders and training-mode dropout take the generic paths above):
- Gradient, BiLSTM premise encoder (`_LstmBackward`): the LSTM's backward written out to the gates only,
  from the shared pass's h; oneDNN's fused backward would also form the weights' gradients. g_t needs no
  input gradient: e_t . (W_ih^T dz_t) = (W_ih e_t) . dz_t.
- Leave-one-out, BiLSTM/BiGRU (`_RecurrentStates`): deleting token t leaves the forward states before t and
  the backward states after t as they were, so each direction resumes from its state next to the gap
  (L - 1 - t steps forward, t backward, instead of 2 (L - 1)), all deletions of a group stepping together,
  with the input projections of the full pass. Attention and decoding run on the assembled rows.
- Leave-one-out, local encoders (`average`, `noenc`: position-wise; `cnn`: outputs within the widest kernel's
  half-width r of the gap change) with learned attention (`_local_probs`): an alignment score depends only on
  its own h (and the query, which never sees the premise), so a shortened row's scores are the full pass's
  shifted past the gap with the 2r window's recomputed; the projection runs on them and the context is one
  bmm of the mapped weights with the full pass's h plus the window's correction. For every gap at once,
  without rebuilding any row; a CNN's window outputs are sums of per-tap partial sums formed once.

Random attention draws new weights for each shortened row, so its leave-one-out values carry that noise.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from gridlab.analyses.common import SharedPass, tvd
from gridlab.data.batching import Batch, Sentences, collate
from gridlab.data.vocab import PAD_ID
from gridlab.models.attention import Attention
from gridlab.models.classifier import (
    AttentionClassifier,
    FlatClassifier,
    PairClassifier,
)
from gridlab.models.encoders import Average, Convolutional, Identity, Recurrent
from gridlab.models.projections import project

# Slots x features (rows x width x max(embedding, h) size) per leave-one-out model call: all T deletions of a
# 32-document batch of 500 tokens are 16k rows, far too many at once; short batches still run in one call.
LOO_CHUNK_ELEMENTS = 1 << 23
RECURRENT_GROUP = 4  # resumed recurrences per group: RECURRENT_GROUP * chunk_elements states


# ---- gradient -------------------------------------------------------------------------------------------


def prediction_gradient(logits: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """(B, C) d y / d logits for y = softmax(logits)_pred: y (e_pred - p), with 1 - y taken as the sum of
    the other classes' probabilities, which stays exact when y itself rounds to 1."""
    probs = torch.softmax(logits, dim=-1)  # (B, C)
    chosen = torch.nn.functional.one_hot(pred, logits.shape[-1]).bool()  # (B, C)
    others = probs.masked_fill(chosen, 0.0)  # (B, C)
    y = probs.gather(-1, pred[:, None])  # (B, 1)
    return y * torch.where(chosen, others.sum(-1, keepdim=True), -others)


def input_gradient(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> tuple[torch.Tensor, torch.Tensor]:
    """(gradient, embedded), both the shape of `model.embed(batch)`: d y / d e with alpha = `shared.alpha`
    held constant and y the probability of `shared.pred`. One backward for the batch (written out for a
    BiLSTM premise encoder, `_lstm_input_gradient`)."""
    if _bilstm(model) is not None:
        backward = _LstmBackward.of(model, batch, shared)
        return backward.input_gradient(), backward.embedded
    with torch.enable_grad():
        embedded = model.embed(batch).detach().requires_grad_(True)
        encoded = model.encode(batch, embedded=embedded)
        logits = model.decode(encoded.h, shared.alpha.detach(), encoded.query)  # (B, C)
        direction = prediction_gradient(logits.detach(), shared.pred)  # (B, C)
        # autograd.grad rather than backward: the parameters keep no .grad
        (gradient,) = torch.autograd.grad(logits, embedded, grad_outputs=direction)
    return gradient, embedded.detach()


def gradient_importance(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> torch.Tensor:
    """(B, T) g_t = |grad_{e_t} y . e_t| per attention item (summed over a HAN sentence's words before the
    absolute value), 0 outside `shared.encoded.mask`."""
    if _bilstm(model) is not None:  # e_t . (W_ih^T d gates_t) = (W_ih e_t) . d gates_t: no input gradient needed
        return _LstmBackward.of(model, batch, shared).contributions().abs() * shared.encoded.mask
    gradient, embedded = input_gradient(model, batch, shared)
    mask = shared.encoded.mask
    contributions = (gradient * embedded).sum(-1)  # (B, T) tokens, or (B, S, W) words of sentences
    per_item = contributions.reshape(*mask.shape, -1).sum(-1)  # (B, T): padding embeds to 0 and adds nothing
    return per_item.abs() * mask


def _bilstm(model: AttentionClassifier) -> nn.LSTM | None:
    """The premise encoder's one-layer bidirectional `nn.LSTM` of a flat/pair model in eval mode, else None."""
    if type(model) not in (FlatClassifier, PairClassifier) or not isinstance(model.encoder, Recurrent):
        return None
    rnn = model.encoder.rnn
    if not isinstance(rnn, nn.LSTM) or rnn.num_layers != 1 or not rnn.bidirectional or rnn.proj_size:
        return None
    return None if model.training and model.dropout.p > 0 else rnn


@dataclass(frozen=True)
class _LstmBackward:
    """The backward of a BiLSTM premise encoder for y (the predicted class's probability, alpha held) written
    out, to the gates' pre-activations only. Autograd through `nn.LSTM` (oneDNN's fused backward) re-runs
    the forward and also computes the weights' gradients, about half its work, which nothing here reads.
    Here the forward is the shared pass's h: every gate pre-activation z_t = W_ih e_t + W_hh h_{t-1} + b is
    one batched matmul, the cell states one scan of c_t = f_t c_{t-1} + i_t g_t, and everything the backward
    multiplies by is formed for all steps at once, so a backward step is five tensor operations. Both
    directions step together (the backward one reads each row reversed within its length); d y / d h_t =
    alpha_t d y / d context comes from autograd through `model.output` alone. The item gradient needs no
    input gradient at all: e_t . (W_ih^T dz_t) = (W_ih e_t) . dz_t, with W_ih e_t already formed for z.
    Same equations as torch's cell (gates i, f, g, o); only float rounding differs."""

    embedded: torch.Tensor  # (B, Tw, d)
    projections: torch.Tensor  # (2, Tw, B, 4H) W_ih e per direction, in its reading order (step-major)
    d_gates: torch.Tensor  # (2, Tw, B, 4H) d y / d z
    w_ih: torch.Tensor  # (2, 4H, d)
    reverse: torch.Tensor  # (B, Tw) the slot read at each backward-direction step
    inside: torch.Tensor  # (B, Tw) slots within the row

    @staticmethod
    @torch.no_grad()
    def of(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> _LstmBackward:
        rnn = _bilstm(model)
        if rnn is None:
            raise ValueError(
                "the written-out backward needs a flat/pair model with a BiLSTM premise encoder (`_bilstm`)"
            )
        embedded = model.embed(batch)  # (B, Tw, d); dropout is inactive (`_bilstm`)
        b, tw, d = embedded.shape
        slots = torch.arange(tw, device=embedded.device)
        lengths = batch.lengths.clamp_min(1).to(embedded.device)[:, None]  # as `Recurrent.forward` packs them
        reverse, inside = (lengths - 1 - slots).clamp_min(0), slots < lengths  # (B, Tw) each
        names = [(f"weight_ih_l0{x}", f"weight_hh_l0{x}", f"bias_ih_l0{x}", f"bias_hh_l0{x}") for x in ("", "_reverse")]
        w_ih, w_hh = (torch.stack([getattr(rnn, n[k]) for n in names]) for k in (0, 1))  # (2, 4H, d), (2, 4H, H)
        bias = torch.stack(
            [getattr(rnn, n[2]) + getattr(rnn, n[3]) if rnn.bias else w_ih.new_zeros(w_ih.shape[1]) for n in names]
        )  # (2, 4H)
        h = shared.encoded.h  # (B, Tw, 2H) forward | backward, zero past each row
        hidden = h.shape[-1] // 2
        # each direction in its reading order, step-major, with h_{t-1} (0 before the first step): (2, Tw + 1, B, H)
        h_before = h.new_zeros(2, tw + 1, b, hidden)
        h_before[0, 1:] = h[..., :hidden].transpose(0, 1)
        h_before[1, 1:] = (
            h[..., hidden:].gather(1, reverse[..., None].expand(-1, -1, hidden)) * inside[..., None]
        ).transpose(0, 1)
        x_read = torch.stack(
            [embedded.transpose(0, 1), embedded.gather(1, reverse[..., None].expand_as(embedded)).transpose(0, 1)]
        )  # (2, Tw, B, d)
        projections = torch.bmm(x_read.reshape(2, tw * b, d), w_ih.transpose(1, 2))  # (2, Tw*B, 4H) W_ih e
        z = torch.baddbmm(bias[:, None, :], h_before[:, :-1].reshape(2, tw * b, hidden), w_hh.transpose(1, 2))
        z = z.add_(projections).reshape(2, tw, b, -1)  # (2, Tw, B, 4H)
        weights_read = torch.stack([shared.alpha, shared.alpha.gather(1, reverse) * inside]).to(h.dtype)
        weights_read = weights_read.transpose(1, 2)  # (2, Tw, B)
        context = torch.einsum("bt,btm->bm", shared.alpha.to(h.dtype), h)  # (B, 2H), as `decode`
        with torch.enable_grad():
            leaf = context.requires_grad_(True)
            logits = model.output(leaf, shared.encoded.query)  # (B, C)
            direction = prediction_gradient(logits.detach(), shared.pred)
            (d_context,) = torch.autograd.grad(logits, leaf, grad_outputs=direction)  # (B, 2H)
        seeds = weights_read[..., None] * d_context.reshape(b, 2, hidden).transpose(0, 1)[:, None]  # (2, Tw, B, H)
        d_gates = _lstm_backward(z, seeds, w_hh)
        return _LstmBackward(embedded, projections.reshape(2, tw, b, -1), d_gates, w_ih, reverse, inside)

    def _in_row_order(self, reading: torch.Tensor) -> torch.Tensor:
        """(2, B, Tw, ...) per direction in reading order -> (B, Tw, ...) summed in the row's order."""
        forward, backward = reading
        index = self.reverse.reshape(*self.reverse.shape, *([1] * (backward.dim() - 2))).expand_as(backward)
        mask = self.inside.reshape(*self.inside.shape, *([1] * (backward.dim() - 2)))
        return forward + backward.gather(1, index) * mask

    def contributions(self) -> torch.Tensor:
        """(B, Tw) grad_{e_t} y . e_t."""
        return self._in_row_order(torch.linalg.vecdot(self.d_gates, self.projections).transpose(1, 2))

    def input_gradient(self) -> torch.Tensor:
        """(B, Tw, d) d y / d e."""
        _, tw, b, four = self.d_gates.shape
        d_read = torch.bmm(self.d_gates.reshape(2, tw * b, four), self.w_ih)  # (2, Tw*B, d)
        return self._in_row_order(d_read.reshape(2, tw, b, -1).transpose(1, 2))


def _lstm_backward(z: torch.Tensor, seeds: torch.Tensor, w_hh: torch.Tensor) -> torch.Tensor:
    """(2, Tw, B, 4H) d y / d z from the gate pre-activations z (2, Tw, B, 4H; i, f, g, o) of a run from zero
    states, the seeds (2, Tw, B, H) = d y / d h_t and w_hh (2, 4H, H). With c_t = f c_{t-1} + i g and
    h_t = o tanh(c_t): dc_t = dc_{t+1} f_{t+1} + dh_t o (1 - tanh^2 c_t), dz = (dc g i', dc c_{t-1} f',
    dc i g', dh tanh(c_t) o') with ' the activations' derivatives, and dh_{t-1} = seed_{t-1} + W_hh^T dz_t.
    Step-major, so that a step's slices are contiguous per direction. z's memory becomes the factors of dz
    and then dz itself, in place: a fresh buffer of that size costs more in page faults than its arithmetic."""
    _, tw, b, four = z.shape
    hidden = four // 4
    g = torch.tanh(z[..., 2 * hidden : 3 * hidden].contiguous())  # torch's tanh is slow on strided memory
    sig = z.sigmoid_()  # i, f, o (and g's, overwritten below)
    i, f, o = sig[..., :hidden], sig[..., hidden : 2 * hidden], sig[..., 3 * hidden :]
    u = i * g
    cells = z.new_zeros(tw + 1, 2, b, hidden)  # c_{t-1} at t, c_t at t + 1
    for s in range(tw):
        torch.addcmul(u[:, s], f[:, s], cells[s], out=cells[s + 1])
    tanh_c = torch.tanh(cells[1:]).transpose(0, 1)  # (2, Tw, B, H)
    into_cell = torch.addcmul(o, o, tanh_c * tanh_c, value=-1.0)  # d c / d h through h = o tanh(c)
    forget = f.clone()  # the carry's factor; its slot becomes f'
    # the factors, in place: sigmoid' times what each gate multiplies (g's slot first: it reads i)
    torch.mul(i, torch.addcmul(torch.ones_like(g), g, g, value=-1.0), out=sig[..., 2 * hidden : 3 * hidden])  # i tanh'
    for gate, times in ((i, g), (f, cells[:-1].transpose(0, 1)), (o, tanh_c)):
        gate.addcmul_(gate, gate, value=-1.0).mul_(times)  # s (1 - s) times
    factors = sig.view(2, tw, b, 4, hidden)
    d_state, d_carry = seeds[:, -1], torch.zeros_like(seeds[:, 0])  # d_carry: dc_{t+1} f_{t+1}
    for s in reversed(range(tw)):
        d_cell = torch.addcmul(d_carry, d_state, into_cell[:, s])  # (2, B, H)
        factors[:, s, :, :3].mul_(d_cell[:, :, None])  # i, f, g: times dc
        factors[:, s, :, 3].mul_(d_state)  # o: times dh
        if s:
            d_carry = d_cell * forget[:, s]
            d_state = torch.baddbmm(seeds[:, s - 1], sig[:, s], w_hh)  # (2, B, H)
    return sig


# ---- leave-one-out --------------------------------------------------------------------------------------


def leave_one_out(
    model: AttentionClassifier, batch: Batch, shared: SharedPass, chunk_elements: int = LOO_CHUNK_ELEMENTS
) -> torch.Tensor:
    """(B, T) d_t = TVD(y(x_-t), y(x)) per attention item, 0 outside `shared.encoded.mask`."""
    probs = leave_one_out_probs(model, batch, shared, chunk_elements)  # (B, T, C)
    return tvd_beside(probs, shared.probs[:, None, :], shared.pred) * shared.encoded.mask


def tvd_beside(p: torch.Tensor, q: torch.Tensor, dominant: torch.Tensor) -> torch.Tensor:
    """TVD(p, q) over the last axis (C), from every class but `dominant` (B,) (p and q are (B, ..., C)).

    The dominant class's difference is minus the sum of the others' (both sum to 1), so TVD =
    1/2 (|sum_c d_c| + sum_c |d_c|) over the others. Equal to `tvd`, but when q's top class rounds to 1 in
    float32 its difference is rounding noise while the small classes' differences are still exact.
    """
    chosen = torch.nn.functional.one_hot(dominant, p.shape[-1]).bool()  # (B, C)
    chosen = chosen.reshape(len(dominant), *([1] * (p.dim() - 2)), p.shape[-1])  # (B, 1.., C)
    diff = (p - q).masked_fill(chosen, 0.0)  # (B, ..., C)
    return 0.5 * (diff.sum(-1).abs() + diff.abs().sum(-1))


@torch.no_grad()
def leave_one_out_probs(
    model: AttentionClassifier, batch: Batch, shared: SharedPass, chunk_elements: int = LOO_CHUNK_ELEMENTS
) -> torch.Tensor:
    """(B, T, C) the output distribution with item t deleted, 0 outside `shared.encoded.mask`.

    Deleting any token of a run of equal tokens leaves the same sequence: only the run's first is computed
    and its output copied to the others, so they tie exactly, as rebuilding each instance makes them (the
    optimised paths below would otherwise order them by float noise, which moves Kendall's tau-b)."""
    mask = shared.encoded.mask
    first = _run_starts(batch, mask)  # (B, T) the slot whose deletion stands for each slot's
    todo = mask & (first == torch.arange(mask.shape[1], device=mask.device))  # (B, T) the deletions to compute
    out = torch.zeros(*mask.shape, shared.probs.shape[-1], dtype=shared.probs.dtype, device=mask.device)
    states = _RecurrentStates.of(model, batch, shared)
    if states is not None:
        _recurrent_probs(model, shared, states, todo, chunk_elements, out)
    elif _is_local(model):
        _local_probs(model, batch, shared, todo, chunk_elements, out)
    else:
        rows, positions = todo.nonzero(as_tuple=True)  # (N,) each, row-major: an instance's deletions together
        extents = _extents(batch)  # (B,) slots each row occupies
        per_row = mask.shape[1] * _features_per_slot(model, batch, shared)
        step = max(1, chunk_elements // per_row)
        for start in range(0, len(rows), step):
            r, t = rows[start : start + step], positions[start : start + step]  # (n,)
            logits = model(deleted_batch(batch, r, shift_index(t, int(extents[r].max()))))
            out[r, t] = torch.softmax(logits, dim=-1).to(out.dtype)  # (n, C)
    return out.gather(1, first[..., None].expand_as(out)) * mask[..., None]  # (B, T, C)


def _run_starts(batch: Batch, mask: torch.Tensor) -> torch.Tensor:
    """(B, T) for each slot the first slot of its run of equal tokens within the mask (itself when the token
    differs from the one before); HAN items (sentences) are their own."""
    slots = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    if batch.sentences is not None:
        return slots
    ids = batch.ids.to(mask.device)
    repeat = torch.zeros_like(mask)
    repeat[:, 1:] = (ids[:, 1:] == ids[:, :-1]) & mask[:, 1:] & mask[:, :-1]
    return torch.where(repeat, 0, slots).cummax(dim=1).values


def shift_index(positions: torch.Tensor, width: int) -> torch.Tensor:
    """(n, width) source slot of each slot after deleting slot `positions[i]` from row i: j below the gap,
    j + 1 from it on. The last slot reads slot `width`, which `with_pad_slot` makes padding."""
    j = torch.arange(width, device=positions.device)  # (width,)
    return j[None, :] + (j[None, :] >= positions[:, None]).long()  # (n, width)


def with_pad_slot(x: torch.Tensor, value: float | bool) -> torch.Tensor:
    """x (B, T, ...) -> (B, T + 1, ...) with a trailing slot filled with `value`."""
    pad = x.new_full((x.shape[0], 1, *x.shape[2:]), value)
    return torch.cat([x, pad], dim=1)


def deleted_batch(batch: Batch, rows: torch.Tensor, index: torch.Tensor) -> Batch:
    """The batch of rows `rows` (n,) each with one item deleted, as `shift_index` describes. For a HAN batch
    the sentences shift; its flat `ids`/`mask`/`lengths` are the originals' (HierarchicalClassifier reads
    only `sentences`)."""
    take = rows[:, None], index  # advanced indexing: (n, width) without materialising the (n, T) rows first
    query_ids, query_mask, query_lengths = (
        None if value is None else value[rows] for value in (batch.query_ids, batch.query_mask, batch.query_lengths)
    )  # collate sets all three or none
    sentences = None
    if batch.sentences is not None:
        s = batch.sentences
        sentences = Sentences(
            with_pad_slot(s.ids, PAD_ID)[take],
            with_pad_slot(s.mask, False)[take],
            with_pad_slot(s.doc_mask, False)[take],
        )  # (n, width, W), (n, width, W), (n, width)
        ids, mask, lengths = batch.ids[rows], batch.mask[rows], batch.lengths[rows]
    else:
        ids, mask = with_pad_slot(batch.ids, PAD_ID)[take], with_pad_slot(batch.mask, False)[take]
        lengths = batch.lengths[rows] - 1
    return Batch(
        ids=ids,
        mask=mask,
        lengths=lengths,
        labels=batch.labels[rows],
        instance_ids=batch.instance_ids[rows],
        query_ids=query_ids,
        query_mask=query_mask,
        query_lengths=query_lengths,
        sentences=sentences,
    )


def _extents(batch: Batch) -> torch.Tensor:
    """(B,) slots holding each row's content: tokens with markers, or sentences (a prefix of the row)."""
    if batch.sentences is not None:
        return batch.sentences.doc_mask.sum(-1)
    return batch.lengths


def _features_per_slot(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> int:
    """The largest activation per slot of a deletion row (a HAN slot is a sentence of W words)."""
    words = 1 if batch.sentences is None else batch.sentences.ids.shape[-1]
    return words * max(model.embedding.embedding_dim, shared.encoded.h.shape[-1])


# ---- local encoders: scores reused, the outputs next to the gap recomputed ---------------------------------


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


# ---- recurrent encoders: the states on either side of the gap are the full pass's -------------------------


@dataclass(frozen=True)
class _Direction:
    """One direction of a recurrent premise encoder over the batch, in its reading order: slot p of row b is
    position p (forward) or position L_b - 1 - p (backward, each row reversed within its length). Flattened
    time-major, slot p of row b at p * B + b, so that variants gather their slots with one index."""

    gates: torch.Tensor  # (Tw*B, G) the input's share of the gates, x W_ih^T + biases, per slot (time-major)
    h: torch.Tensor  # (Tw*B, H) the state after reading each slot
    c: torch.Tensor | None  # (Tw*B, H) the LSTM cell after each slot; None for a GRU
    step: Callable  # (gates (n, G), h (n, H), c (n, H) | None, h_out, c_out, scratch) -> (h, c): one step
    width: int  # Tw


@dataclass(frozen=True)
class _RecurrentStates:
    """Both directions of a flat/pair model's BiLSTM/BiGRU premise encoder, with every intermediate state.

    Deleting the token at position t leaves the forward states before t and the backward states after t as
    they were; each direction resumes from its state next to the gap and reads the rest of the row: L - 1 - t
    steps forward, t steps backward, instead of 2 (L - 1) per deletion, and the input projections (most of
    an LSTM step's work) are the full pass's. Same equations as torch's cells (gate order i, f, g, o for the
    LSTM; r, z, n for the GRU, b_hn inside r *), so only float rounding differs from `nn.LSTM`/`nn.GRU`."""

    forward: _Direction
    backward: _Direction
    lengths: torch.Tensor  # (B,) tokens with markers

    @staticmethod
    def of(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> _RecurrentStates | None:
        """The states, or None when the model is not a flat/pair model with a one-layer recurrent premise
        encoder (whose `encode` this mirrors). The full pass's h are the shared pass's; an LSTM's cells
        follow from them with one matmul and a scan."""
        if type(model) not in (FlatClassifier, PairClassifier) or not isinstance(model.encoder, Recurrent):
            return None
        if model.training and model.dropout.p > 0:  # each deletion would draw its own dropout
            return None
        rnn = model.encoder.rnn
        if rnn.num_layers != 1 or not rnn.bidirectional or rnn.proj_size:
            return None
        x = model.dropout(model.embed(batch))  # (B, Tw, d)
        h = shared.encoded.h  # (B, Tw, 2H) forward | backward
        lengths = batch.lengths.clamp_min(1).to(x.device)  # as `Recurrent.forward` packs them
        slots = torch.arange(x.shape[1], device=x.device)  # (Tw,)
        reverse = (lengths[:, None] - 1 - slots[None, :]).clamp_min(0)  # (B, Tw) position read at each slot
        hidden = h.shape[-1] // 2
        forward = _direction(rnn, "", x, h[..., :hidden])
        backward = _direction(
            rnn,
            "_reverse",
            x.gather(1, reverse[..., None].expand_as(x)),
            h[..., hidden:].gather(1, reverse[..., None].expand(-1, -1, hidden)),
        )
        return _RecurrentStates(forward, backward, lengths)


def _direction(rnn: nn.RNNBase, suffix: str, x: torch.Tensor, h: torch.Tensor) -> _Direction:
    """One direction of `rnn` over x (B, Tw, d) in reading order, with its states h (B, Tw, H) there (slots
    past a row's end are never read). For an LSTM the cells c_t = f_t c_{t-1} + i_t g_t are rebuilt from the
    gates, all of them one matmul away given h_{t-1}."""
    w_ih, w_hh = getattr(rnn, f"weight_ih_l0{suffix}"), getattr(rnn, f"weight_hh_l0{suffix}")
    b_ih, b_hh = getattr(rnn, f"bias_ih_l0{suffix}", None), getattr(rnn, f"bias_hh_l0{suffix}", None)
    b, width, hidden = h.shape
    lstm = isinstance(rnn, nn.LSTM)
    bias: torch.Tensor | None
    if isinstance(rnn, nn.LSTM):
        w_ih, w_hh, bias = _lstm_weights(rnn, suffix)
        step = _lstm_step(w_hh.t().contiguous(), hidden)
    else:
        bias = b_ih
        step = _gru_step(w_hh.t().contiguous(), b_hh, hidden)
    gates = torch.nn.functional.linear(x, w_ih, bias).transpose(0, 1).contiguous()  # (Tw, B, G) time-major
    hs = h.transpose(0, 1).contiguous()  # (Tw, B, H)
    cs = None
    if lstm:
        before = torch.cat([torch.zeros_like(hs[:1]), hs[:-1]])  # h_{t-1}
        sig = torch.addmm(gates.reshape(-1, gates.shape[-1]), before.reshape(-1, hidden), w_hh.t())
        sig = sig.sigmoid_().reshape(width, b, -1)  # (Tw, B, 4H): i, f, o, 2g
        i, f, tanh_g = sig[..., :hidden], sig[..., hidden : 2 * hidden], sig[..., 3 * hidden :].mul(2.0).sub_(1.0)
        u = i * tanh_g
        cs = torch.empty_like(hs)
        cs[0] = u[0]
        for p in range(1, width):
            torch.addcmul(u[p], f[p], cs[p - 1], out=cs[p])
    flat = width * b  # time-major: slot p of row b is p * B + b
    return _Direction(
        gates.reshape(flat, -1), hs.reshape(flat, hidden), None if cs is None else cs.reshape(flat, hidden), step, width
    )


def _lstm_weights(rnn: nn.LSTM, suffix: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(W_ih (4H, d), W_hh (4H, H), bias (4H,)) of one direction with the gates reordered i, f, o, g and g's
    rows doubled: one sigmoid covers all four, tanh(g) = 2 sigmoid(2g) - 1 (torch's tanh on a column slice
    runs several times slower than on contiguous memory). Both biases sit outside the recurrence."""
    w_ih, w_hh = getattr(rnn, f"weight_ih_l0{suffix}"), getattr(rnn, f"weight_hh_l0{suffix}")
    hidden = w_hh.shape[1]
    order = torch.cat(
        [torch.arange(0, 2 * hidden), torch.arange(3 * hidden, 4 * hidden), torch.arange(2 * hidden, 3 * hidden)]
    ).to(w_ih.device)
    scale = torch.ones(4 * hidden, dtype=w_ih.dtype, device=w_ih.device)
    scale[3 * hidden :] = 2.0
    if rnn.bias:
        bias = getattr(rnn, f"bias_ih_l0{suffix}") + getattr(rnn, f"bias_hh_l0{suffix}")
    else:
        bias = w_ih.new_zeros(4 * hidden)
    return (
        (w_ih[order] * scale[:, None]).detach(),
        (w_hh[order] * scale[:, None]).detach(),
        (bias[order] * scale).detach(),
    )


def _lstm_step(w_hh_t: torch.Tensor, hidden: int) -> Callable:
    """One LSTM step from the input's gate share (n, 4H) in order i, f, o, 2g (which it may overwrite when
    `scratch`); h and c written to h_out and c_out (c_out may be c itself). tanh(g) is taken as
    2 sigmoid(2g) - 1 so that one sigmoid covers the contiguous gates: torch's tanh on a column slice runs
    several times slower than on contiguous memory."""

    def step(gates_x, h, c, h_out, c_out, scratch):
        gates = gates_x.addmm_(h, w_hh_t) if scratch else torch.addmm(gates_x, h, w_hh_t)  # (n, 4H)
        sig = gates.sigmoid_()
        i, f, o, g = sig[:, :hidden], sig[:, hidden : 2 * hidden], sig[:, 2 * hidden : 3 * hidden], sig[:, 3 * hidden :]
        c = torch.addcmul((f * c).sub_(i), i, g, value=2.0, out=c_out)  # f c + i (2 sigmoid(2g) - 1)
        return torch.mul(o, torch.tanh(c), out=h_out), c

    return step


def _gru_step(w_hh_t: torch.Tensor, b_hh: torch.Tensor | None, hidden: int) -> Callable:
    """One GRU step from the input's gate share (n, 3H) in order r, z, n (b_hn inside r *, as torch)."""

    def step(gates_x, h, c, h_out, c_out, scratch):
        gh = h @ w_hh_t if b_hh is None else torch.addmm(b_hh, h, w_hh_t)  # (n, 3H)
        rz = torch.sigmoid(gates_x[:, : 2 * hidden] + gh[:, : 2 * hidden])
        n = torch.tanh(torch.addcmul(gates_x[:, 2 * hidden :], rz[:, :hidden], gh[:, 2 * hidden :]))
        return torch.addcmul(n, rz[:, hidden:], h - n, out=h_out), None  # (1 - z) n + z h

    return step


def _recurrent_probs(
    model: AttentionClassifier,
    shared: SharedPass,
    states: _RecurrentStates,
    todo: torch.Tensor,
    chunk_elements: int,
    out: torch.Tensor,
) -> None:
    """Fill out (B, T, C) at the deletions `todo` (B, T) with their outputs for a recurrent premise encoder.

    Deletions are taken gap-major (every row's position t, then t + 1, ...), so a group's forward runs are
    all about L - 1 - t steps long and its backward runs about t: each step's matmul is on nearly the whole
    group. A group holds up to 4 * chunk_elements resumed states (the recurrences want many rows per step:
    their cost is mostly per-step overhead otherwise); attention and decoding then run on sub-chunks of
    chunk_elements activations, each chunk as wide as its longest row."""
    positions, rows = todo.t().nonzero(as_tuple=True)  # (N,) each, gap-major
    slots = int(states.lengths.max()) - 1  # the widest shortened row
    hidden = states.forward.h.shape[1]
    group = max(1, RECURRENT_GROUP * chunk_elements // (slots * hidden))
    step = max(1, chunk_elements // (slots * 2 * hidden))  # h is (n, W, 2H)
    for start in range(0, len(rows), group):
        r, t = rows[start : start + group], positions[start : start + group]  # (n,)
        lengths = states.lengths[r]
        forward = _Resumed(states.forward, r, t, lengths)
        backward = _Resumed(states.backward, r, lengths - 1 - t, lengths)
        for first in range(0, len(r), step):
            part = slice(first, first + step)
            logits = _recurrent_logits(model, shared, forward, backward, r[part], t[part], lengths[part], part)
            out[r[part], t[part]] = torch.softmax(logits, dim=-1).to(out.dtype)


def _recurrent_logits(
    model: AttentionClassifier,
    shared: SharedPass,
    forward: _Resumed,
    backward: _Resumed,
    rows: torch.Tensor,
    positions: torch.Tensor,
    lengths: torch.Tensor,
    part: slice,
) -> torch.Tensor:
    """(n, C) logits of the deletions `part` of a group: h assembled as `Recurrent.forward` returns it
    (forward | backward, zero past the shortened length), then attention and the decoder."""
    width = int(lengths.max()) - 1  # the shortened rows
    j = torch.arange(width, device=rows.device)[None, :]  # (1, W) shortened positions
    hidden = forward.table.shape[1]
    h = forward.table.new_empty(len(rows), width, 2 * hidden)  # (n, W, 2H)
    flat = h.view(-1, 2 * hidden)
    forward.states(part, j, flat[:, :hidden])
    backward.states(part, lengths[:, None] - 2 - j, flat[:, hidden:])  # reading slot of shortened position j
    mask = with_pad_slot(shared.encoded.mask, False)[rows[:, None], shift_index(positions, width)]  # (n, W)
    query = None if shared.encoded.query is None else shared.encoded.query[rows]
    return model.decode(h, model.attend(h, mask, query), query)


class _Resumed:
    """One direction resumed after the gaps of n deletions: row i lost reading slot gaps[i]; its slots before
    the gap are the full pass's, the rest come from resuming at slot gaps[i] - 1 over slots gaps[i] + 1 ..
    L - 1.

    The runs are sorted longest first, so the ones still running at step s are a prefix and each step is one
    matmul on exactly them (as a packed sequence runs). Their states are written straight into one table
    after the full pass's (time-major, a zero row last), from which `states` gathers h."""

    def __init__(self, direction: _Direction, rows: torch.Tensor, gaps: torch.Tensor, lengths: torch.Tensor):
        n, b = len(rows), direction.h.shape[0] // direction.width
        full, hidden = direction.h.shape
        remaining = lengths - 1 - gaps  # (n,) steps after the gap, >= 1
        order = torch.argsort(remaining, descending=True, stable=True)  # (n,)
        start = (gaps * b + rows)[order]  # (n,) flat slot of each gap, longest run first
        running = torch.bincount(remaining - 1).flip(0).cumsum(0).flip(0).tolist()  # runs with > s steps
        table = direction.h.new_empty(full + len(running) * n + 1, hidden)  # full pass | step s of run r | 0
        table[:full] = direction.h
        table[-1] = 0.0
        h = direction.h.index_select(0, start - b)  # (n, H) the state before the gap
        c = None if direction.c is None else direction.c.index_select(0, start - b)  # (n, H), in place
        gates = direction.gates.new_empty(n, direction.gates.shape[1])  # (n, G) scratch
        for s, active in enumerate(running):
            row = full + s * n
            torch.index_select(direction.gates, 0, start[:active] + (s + 1) * b, out=gates[:active])
            cell = None if c is None else c[:active]  # read before the step overwrites it
            h, _ = direction.step(gates[:active], h[:active], cell, table[row : row + active], cell, scratch=True)
        self.rank = torch.empty_like(order)
        self.rank[order] = torch.arange(n, device=order.device)  # (n,) each row's place in `order`
        self.table, self.rows, self.gaps, self.lengths = table, rows, gaps, lengths
        self.n, self.b, self.full = n, b, full

    def states(self, part: slice, slots: torch.Tensor, out: torch.Tensor) -> None:
        """Write into out (m*W, H) (a view of h: one direction's half) the states of deletions `part` at their
        shortened reading slots `slots` (m, W); negative or past the row: padding, zero."""
        rows, gaps, lengths = self.rows[part, None], self.gaps[part, None], self.lengths[part, None]
        before = slots * self.b + rows  # (m, W)
        after = self.full + (slots - gaps).clamp_min(0) * self.n + self.rank[part, None]
        index = torch.where(slots < gaps, before, after)
        index = torch.where((slots < 0) | (slots > lengths - 2), len(self.table) - 1, index)  # padding
        torch.index_select(self.table, 0, index.reshape(-1), out=out)


# ---- reference: one instance at a time, rebuilt with `collate` --------------------------------------------


def reference_gradient_importance(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """`gradient_importance` as a loop: each instance alone, alpha recomputed and detached, and y's gradient
    by plain autograd through the softmax."""
    out = torch.zeros(shared.encoded.mask.shape, dtype=shared.probs.dtype, device=shared.probs.device)
    for b in range(shared.batch.size):
        rows = instance_rows(shared.batch, b)
        alone = collate(rows, sentences="sentence_starts" in rows).to(shared.alpha.device)
        with torch.enable_grad():
            embedded = model.embed(alone).detach().requires_grad_(True)
            encoded = model.encode(alone, embedded=embedded)
            alpha = model.attend(encoded.h, encoded.mask, encoded.query).detach()
            y = torch.softmax(model.decode(encoded.h, alpha, encoded.query), dim=-1)[0, shared.pred[b]]
            (gradient,) = torch.autograd.grad(y, embedded)
        contributions = (gradient * embedded.detach()).sum(-1)[0]  # (T,) tokens or (S, W) words
        per_item = contributions.reshape(encoded.mask.shape[1], -1).sum(-1)  # (T,)
        out[b, shared.encoded.mask[b]] = per_item[encoded.mask[0]].abs()
    return out


@torch.no_grad()
def reference_leave_one_out(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """`leave_one_out` as a loop: each instance alone, each item deleted from its column lists and the
    instance rebuilt with `collate`, one forward per deletion."""
    out = torch.zeros(shared.encoded.mask.shape, dtype=shared.probs.dtype, device=shared.probs.device)
    for b in range(shared.batch.size):
        rows = instance_rows(shared.batch, b)
        hierarchical = "sentence_starts" in rows
        original = torch.softmax(model(collate(rows, sentences=hierarchical).to(out.device)), dim=-1)[0]
        distances = []
        for t in range(int(shared.encoded.mask[b].sum())):
            shortened = collate(without_item(rows, t), sentences=hierarchical).to(out.device)
            distances.append(tvd(torch.softmax(model(shortened), dim=-1)[0], original))
        if distances:
            out[b, shared.encoded.mask[b]] = torch.stack(distances).to(out.dtype)
    return out


def instance_rows(batch: Batch, b: int) -> dict[str, list]:
    """Instance b as the one-row column lists `collate` takes (markers and padding stripped; for HAN
    `sentence_starts` rebuilt from the sentences)."""
    rows: dict[str, list] = {"instance_id": [int(batch.instance_ids[b])], "label": [int(batch.labels[b])]}
    if batch.sentences is not None:
        s = batch.sentences
        sentences = [s.ids[b, k][s.mask[b, k]].tolist() for k in range(s.ids.shape[1]) if s.doc_mask[b, k]]
        rows["ids"] = [[token for sentence in sentences for token in sentence]]
        rows["sentence_starts"] = [_starts([len(sentence) for sentence in sentences])]
    else:
        rows["ids"] = [batch.ids[b, 1 : int(batch.lengths[b]) - 1].tolist()]
    if batch.query_ids is not None and batch.query_lengths is not None:  # collate sets both or neither
        rows["query_ids"] = [batch.query_ids[b, 1 : int(batch.query_lengths[b]) - 1].tolist()]
    return rows


def without_item(rows: dict[str, list], t: int) -> dict[str, list]:
    """One-row column lists with item t deleted: token t, or sentence t when `sentence_starts` is present."""
    ids = rows["ids"][0]
    if "sentence_starts" not in rows:
        return {**rows, "ids": [ids[:t] + ids[t + 1 :]]}
    bounds = [*rows["sentence_starts"][0], len(ids)]
    sentences = [ids[start:stop] for start, stop in itertools.pairwise(bounds)]
    kept = sentences[:t] + sentences[t + 1 :]
    return {
        **rows,
        "ids": [[token for sentence in kept for token in sentence]],
        "sentence_starts": [_starts([len(sentence) for sentence in kept])],
    }


def _starts(sizes: list[int]) -> list[int]:
    """Start offset of each sentence; [0] for an empty document, as the prepared data has it."""
    starts = [0]
    for size in sizes[:-1]:
        starts.append(starts[-1] + size)
    return starts
