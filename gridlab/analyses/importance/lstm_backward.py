"""Gradient importance for a flat/pair model's BiLSTM premise encoder (`_LstmBackward`): the LSTM's
backward written out to the gates only, from the shared pass's gates and cells (`analyses/bilstm.py`);
oneDNN's fused backward would also form the weights' gradients. g_t needs no input gradient:
e_t . (W_ih^T dz_t) = (W_ih e_t) . dz_t, and W_ih e_t + b is the row of the vocabulary's projection table
that the pass read. `gradient.py` takes this path whenever `premise_bilstm` finds such an encoder."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gridlab.analyses.bilstm import BiLstmPass
from gridlab.analyses.common import SharedPass, shared_lstm
from gridlab.analyses.importance.prediction import prediction_gradient
from gridlab.models.classifier import AttentionClassifier

DOT_STEPS = 8  # steps per product buffer in `contributions`: (8, 2, B, 4H) stays in cache


@dataclass(frozen=True)
class _LstmBackward:
    """The backward of a BiLSTM premise encoder for y (the predicted class's probability, alpha held) written
    out, to the gates' pre-activations only. Autograd through `nn.LSTM` (oneDNN's fused backward) re-runs
    the forward and also computes the weights' gradients, about half its work, which nothing here reads.
    Here the forward is the shared pass's (every gate and cell kept, `BiLstmPass`), so a backward step is
    one small matmul per direction and a few tensor operations, both directions stepping together; d y / d
    h_t = alpha_t d y / d context comes from autograd through `model.output` alone. The item gradient needs
    no input gradient at all: e_t . (W_ih^T dz_t) = (W_ih e_t) . dz_t. Same equations as torch's cell;
    only float rounding differs."""

    lstm: BiLstmPass
    d_gates: torch.Tensor  # (Tw, 2, B, 4H) d y / d z, z the pass's pre-activations (g's doubled)

    @staticmethod
    @torch.no_grad()
    def of(model: AttentionClassifier, shared: SharedPass) -> _LstmBackward:
        lstm = shared_lstm(model, shared)
        h = shared.encoded.h  # (B, Tw, 2H)
        b, hidden = h.shape[0], h.shape[-1] // 2
        weights_read = torch.stack([shared.alpha, shared.alpha.gather(1, lstm.reverse) * lstm.inside])  # (2, B, Tw)
        context = torch.einsum("bt,btm->bm", shared.alpha.to(h.dtype), h)  # (B, 2H), as `decode`
        with torch.enable_grad():
            leaf = context.requires_grad_(True)
            logits = model.output(leaf, shared.encoded.query)  # (B, C)
            direction = prediction_gradient(logits.detach(), shared.pred)
            (d_context,) = torch.autograd.grad(logits, leaf, grad_outputs=direction)  # (B, 2H)
        # d y / d h_t per direction in reading order: (Tw, 2, B, H)
        seeds = weights_read.permute(2, 0, 1).to(h.dtype)[..., None] * d_context.view(b, 2, hidden).transpose(0, 1)
        return _LstmBackward(lstm, _lstm_backward(lstm, seeds))

    def contributions(self) -> torch.Tensor:
        """(B, Tw) grad_{e_t} y . e_t = (W_ih e_t) . dz_t, a few steps at a time: the products of all steps
        at once would be a fresh buffer the size of dz, whose page faults cost more than the arithmetic."""
        tw, _, b, four = self.d_gates.shape
        weights = self.lstm.weights
        dots = self.d_gates.new_empty(tw, 2, b)
        products = self.d_gates.new_empty(min(tw, DOT_STEPS), 2, b, four)
        for start in range(0, tw, DOT_STEPS):
            steps = slice(start, min(start + DOT_STEPS, tw))
            rows = products[: steps.stop - start]
            torch.index_select(weights.table, 0, self.lstm.rows[steps].reshape(-1), out=rows.view(-1, four))
            rows.sub_(weights.bias[:, None, :]).mul_(self.d_gates[steps])  # W_ih e = the row less the biases
            torch.sum(rows, -1, out=dots[steps])
        return self.lstm.in_row_order(dots)

    def input_gradient(self) -> torch.Tensor:
        """(B, Tw, d) d y / d e."""
        return self.lstm.in_row_order(torch.matmul(self.d_gates, self.lstm.weights.w_ih))  # (Tw, 2, B, d) first


def _lstm_backward(lstm: BiLstmPass, seeds: torch.Tensor) -> torch.Tensor:
    """(Tw, 2, B, 4H) d y / d z from the pass's activations s = sigmoid(z) (i, f, g' with tanh(g) = 2 g' - 1,
    o), cells and the seeds (Tw, 2, B, H) = d y / d h_t. With c_t = f c_{t-1} + i tanh(g) and h_t = o tanh(c_t):
    dc_t = dc_{t+1} f_{t+1} + dh_t o (1 - tanh^2 c_t); dz = s (1 - s) times (dc tanh(g), dc c_{t-1},
    dc 2 i, dh tanh(c_t)); dh_{t-1} = seed_{t-1} + W_hh^T dz_t. The factors not depending on dc and dh are
    formed for all steps at once, so a step is a few operations on contiguous (2, B, .) slices."""
    tw, _, b, four = lstm.gates.shape
    hidden = four // 4
    gates, products = lstm.gates, lstm.weights.backward_products
    i, f, g, o = (gates[..., k * hidden : (k + 1) * hidden] for k in range(4))
    factors = torch.addcmul(gates, gates, gates, value=-1.0)  # s (1 - s), then times what each gate multiplies
    into_i, into_f, into_g, into_o = (factors[..., k * hidden : (k + 1) * hidden] for k in range(4))
    torch.addcmul(into_i, into_i, g, value=-2.0, out=into_i).neg_()  # times tanh(g) = 2 g' - 1
    into_f.mul_(lstm.cells[:-1])
    into_g.mul_(i).mul_(2.0)
    into_o.mul_(lstm.tanh_cells)
    into_cell = torch.mul(o, lstm.tanh_cells)
    torch.addcmul(o, into_cell, lstm.tanh_cells, value=-1.0, out=into_cell)  # d c / d h = o (1 - tanh^2 c)
    by_gate = factors.view(tw, 2, b, 4, hidden)
    d_state, d_carry = seeds[-1].clone(), torch.zeros_like(seeds[-1])  # d_carry: dc_{t+1} f_{t+1}
    d_cell = torch.empty_like(d_carry)  # (2, B, H); the step's buffers are reused, written with out=
    for s in reversed(range(tw)):
        torch.addcmul(d_carry, d_state, into_cell[s], out=d_cell)
        by_gate[s, :, :, :3].mul_(d_cell[:, :, None])  # i, f, g: times dc
        by_gate[s, :, :, 3].mul_(d_state)  # o: times dh
        if s:
            torch.mul(d_cell, f[s], out=d_carry)
            for direction, product in enumerate(products):
                torch.add(seeds[s - 1, direction], product(factors[s, direction]), out=d_state[direction])
    return factors
