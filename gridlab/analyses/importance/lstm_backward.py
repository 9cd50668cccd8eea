"""Gradient importance for a flat/pair model's BiLSTM premise encoder (`_LstmBackward`): the LSTM's
backward written out to the gates only, from the shared pass's h; oneDNN's fused backward would also form
the weights' gradients. g_t needs no input gradient: e_t . (W_ih^T dz_t) = (W_ih e_t) . dz_t. `gradient.py`
takes this path whenever `_bilstm` finds such an encoder. W_ih e is read from a table of every vocabulary
word's projection (`_projection_table`), built once for a model's weights and shared by all its batches."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
from torch import nn

from gridlab.analyses.common import SharedPass
from gridlab.analyses.importance.prediction import prediction_gradient
from gridlab.data.batching import Batch
from gridlab.models.classifier import (
    AttentionClassifier,
    FlatClassifier,
    PairClassifier,
)
from gridlab.models.encoders import Recurrent


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
    a row of the vocabulary's projection table plus one batched matmul, the cell states one scan of
    c_t = f_t c_{t-1} + i_t g_t, and everything the backward multiplies by is formed for all steps at once,
    so a backward step is a few tensor operations. Both directions step together (the backward one reads
    each row reversed within its length); d y / d h_t = alpha_t d y / d context comes from autograd through
    `model.output` alone. The item gradient needs no input gradient at all: e_t . (W_ih^T dz_t) =
    (W_ih e_t) . dz_t, with W_ih e_t already formed for z. Same equations as torch's cell (gates i, f, g, o);
    only float rounding differs."""

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
        b, tw, _ = embedded.shape
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
        # each direction in its reading order, step-major, h_{t-1} at step t (0 before the first): (2, Tw, B, H)
        h_before = h.new_zeros(2, tw, b, hidden)
        h_before[0, 1:] = h[:, :-1, :hidden].transpose(0, 1)
        h_before[1, 1:] = (
            h[..., hidden:].gather(1, reverse[:, :-1, None].expand(-1, -1, hidden)) * inside[:, :-1, None]
        ).transpose(0, 1)
        ids = batch.ids.to(embedded.device)
        vocabulary = model.embedding.num_embeddings
        ids_read = torch.stack([ids.t(), ids.gather(1, reverse).t() + vocabulary])  # (2, Tw, B) rows of the table
        table = _projection_table(model.embedding, rnn, w_ih)  # (2V, 4H)
        projections = table.index_select(0, ids_read.reshape(-1)).reshape(2, tw * b, -1)  # (2, Tw*B, 4H) W_ih e
        z = torch.baddbmm(bias[:, None, :], h_before.reshape(2, tw * b, hidden), w_hh.transpose(1, 2))
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


_TABLES: weakref.WeakKeyDictionary[nn.LSTM, tuple[tuple[int, ...], torch.Tensor]] = weakref.WeakKeyDictionary()


def _projection_table(embedding: nn.Embedding, rnn: nn.LSTM, w_ih: torch.Tensor) -> torch.Tensor:
    """(2V, 4H) W_ih e_v for every word v of the vocabulary, forward direction's rows then the backward's.

    A batch's tokens then take their projections by row lookup instead of a (B Tw, d) x (d, 4H) matmul per
    direction (at T = 180 the costliest operation of the backward). Built once per model and weights: the
    key holds the tensors' storage and version, which an in-place update (an optimiser step, `.to`) changes,
    so a changed model gets a new table. One matmul over the whole vocabulary, so a token's row is the same
    whatever batch or shard it comes in. Memory: 32 V H bytes (V = 20k, H = 128: 82 MB)."""
    weights = [embedding.weight, *(getattr(rnn, name) for name in ("weight_ih_l0", "weight_ih_l0_reverse"))]
    key = tuple(n for w in weights for n in (w.data_ptr(), w._version))
    cached = _TABLES.get(rnn)
    if cached is None or cached[0] != key:
        table = torch.matmul(embedding.weight.detach(), w_ih.transpose(1, 2))  # (2, V, 4H)
        cached = (key, table.reshape(-1, table.shape[-1]))
        _TABLES[rnn] = cached
    return cached[1]


def _lstm_backward(z: torch.Tensor, seeds: torch.Tensor, w_hh: torch.Tensor) -> torch.Tensor:
    """(2, Tw, B, 4H) d y / d z from the gate pre-activations z (2, Tw, B, 4H; i, f, g, o) of a run from zero
    states, the seeds (2, Tw, B, H) = d y / d h_t and w_hh (2, 4H, H). With c_t = f c_{t-1} + i g and
    h_t = o tanh(c_t): dc_t = dc_{t+1} f_{t+1} + dh_t o (1 - tanh^2 c_t), dz = (dc g i', dc c_{t-1} f',
    dc i g', dh tanh(c_t) o') with ' the activations' derivatives, and dh_{t-1} = seed_{t-1} + W_hh^T dz_t.
    Step-major, so that a step's slices are contiguous per direction. z's memory becomes the factors of dz
    and then dz itself, in place: a fresh buffer of that size costs more in page faults than its arithmetic."""
    _, tw, b, four = z.shape
    hidden = four // 4
    g = _tanh(z[..., 2 * hidden : 3 * hidden])
    sig = z.sigmoid_()  # i, f, o (and g's, overwritten below)
    i, f, o = sig[..., :hidden], sig[..., hidden : 2 * hidden], sig[..., 3 * hidden :]
    u = i * g
    cells = z.new_zeros(tw + 1, 2, b, hidden)  # c_{t-1} at t, c_t at t + 1
    for s in range(tw):
        torch.addcmul(u[:, s], f[:, s], cells[s], out=cells[s + 1])
    tanh_c = _tanh(cells[1:]).transpose(0, 1)  # (2, Tw, B, H)
    into_cell = torch.addcmul(o, o, tanh_c * tanh_c, value=-1.0)  # d c / d h through h = o tanh(c)
    forget = f.clone()  # the carry's factor; its slot becomes f'
    # the factors, in place: sigmoid' times what each gate multiplies (g's slot first: it reads i)
    torch.mul(i, torch.addcmul(torch.ones_like(g), g, g, value=-1.0), out=sig[..., 2 * hidden : 3 * hidden])  # i tanh'
    for gate, times in ((i, g), (f, cells[:-1].transpose(0, 1)), (o, tanh_c)):
        gate.addcmul_(gate, gate, value=-1.0).mul_(times)  # s (1 - s) times
    factors = sig.view(2, tw, b, 4, hidden)
    d_state, d_carry = seeds[:, -1].clone(), torch.zeros_like(seeds[:, 0])  # d_carry: dc_{t+1} f_{t+1}
    d_cell = torch.empty_like(d_carry)  # (2, B, H); the step's buffers are reused, written with out=
    for s in reversed(range(tw)):
        torch.addcmul(d_carry, d_state, into_cell[:, s], out=d_cell)
        factors[:, s, :, :3].mul_(d_cell[:, :, None])  # i, f, g: times dc
        factors[:, s, :, 3].mul_(d_state)  # o: times dh
        if s:
            torch.mul(d_cell, forget[:, s], out=d_carry)
            for direction in range(2):  # a contiguous (B, 4H) slice each: a batched matmul would copy them
                torch.addmm(seeds[direction, s - 1], sig[direction, s], w_hh[direction], out=d_state[direction])
    return sig


def _tanh(x: torch.Tensor) -> torch.Tensor:
    """tanh(x) = 2 sigmoid(2x) - 1, into a new contiguous tensor: torch's CPU tanh is about ten times slower
    than its sigmoid (and slower still on strided memory); the identity costs an absolute error of float
    rounding at 1, which every product it enters here tolerates."""
    return x.mul(2.0).sigmoid_().mul_(2.0).sub_(1.0)
