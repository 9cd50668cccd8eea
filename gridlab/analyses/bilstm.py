"""A flat/pair model's BiLSTM premise encoder written out for the analyses (`BiLstmPass`): both directions'
gates, cells and states at every step, kept with the shared pass so that the gradient's backward
(`importance/lstm_backward.py`) and leave-one-out's resumed runs (`importance/recurrent.py`) start from them
instead of computing them again.

On a CPU the shared pass itself is this scan (`scan`): a token's input share of the gates, W_ih e + b, is a
row of a per-model table of every vocabulary word's projection (`LstmWeights`), so a step is one small
matmul per direction (through oneDNN, `_Product`) and a few elementwise operations, and every gate is kept
as it is computed. Rows are the same bit for bit under any thread count. Elsewhere the shared
pass is `nn.LSTM`'s fused kernel and the gates are rebuilt from its states on first use (`rebuild`: one
matmul and a scan of the cells). Same equations as torch's cell; only float rounding differs.

Conventions: gates in torch's order i, f, g, o with g's rows doubled, so that one sigmoid covers all four
and tanh(g) = 2 sigmoid(2g) - 1 (torch's CPU tanh is several times slower than its sigmoid); tensors are
step-major (steps, direction, batch, ...), so that a step's slice is contiguous; the backward direction
reads each row reversed within its length. Steps past a row's end read padding and are never used."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
from torch import nn

from gridlab.data.batching import Batch
from gridlab.models.classifier import AttentionClassifier, FlatClassifier, PairClassifier
from gridlab.models.encoders import Recurrent, reversed_within


def premise_recurrent(model: AttentionClassifier) -> nn.LSTM | nn.GRU | None:
    """The premise encoder's one-layer bidirectional `nn.LSTM`/`nn.GRU` of a flat/pair model whose dropout is
    inactive, else None: the recurrences the analyses write out (here, and leave-one-out's resumed runs).
    With dropout active each rerun would draw its own mask."""
    if type(model) not in (FlatClassifier, PairClassifier) or not isinstance(model.encoder, Recurrent):
        return None
    rnn = model.encoder.rnn
    if rnn.num_layers != 1 or not rnn.bidirectional or rnn.proj_size:
        return None
    return None if model.training and model.dropout.p > 0 else rnn


def premise_bilstm(model: AttentionClassifier) -> nn.LSTM | None:
    """`premise_recurrent` where it is an LSTM: the models this module writes out."""
    rnn = premise_recurrent(model)
    return rnn if isinstance(rnn, nn.LSTM) else None


@dataclass(frozen=True)
class LstmWeights:
    """Both directions' weights with g's rows doubled, and the input share of every vocabulary word."""

    table: torch.Tensor  # (2V, 4H) W_ih e_v + b_ih + b_hh, the forward direction's V rows then the backward's
    bias: torch.Tensor  # (2, 4H) b_ih + b_hh
    w_ih: torch.Tensor  # (2, 4H, d)
    vocabulary: int
    forward_products: tuple[_Product, _Product]  # per direction: h (n, H) -> h W_hh^T (n, 4H)
    backward_products: tuple[_Product, _Product]  # per direction: dz (n, 4H) -> dz W_hh (n, H)

    @staticmethod
    @torch.no_grad()
    def of(embedding: nn.Embedding, rnn: nn.LSTM) -> LstmWeights:
        """Built once per model and weights: the key holds the tensors' storage and version, which an
        in-place update (an optimiser step, `.to`) changes, so a changed model gets new ones. The table is
        one matmul over the vocabulary, so a token's row is the same whatever batch or shard it comes in.
        Memory: 32 V H bytes (V = 20k, H = 128: 82 MB)."""
        parameters = [embedding.weight, *rnn.parameters()]
        key = tuple(n for p in parameters for n in (p.data_ptr(), p._version))
        cached = _WEIGHTS.get(rnn)
        if cached is not None and cached[0] == key:
            return cached[1]
        hidden = rnn.hidden_size
        suffixes = ("", "_reverse")
        w_ih = torch.stack([getattr(rnn, f"weight_ih_l0{x}") for x in suffixes])
        w_hh = torch.stack([getattr(rnn, f"weight_hh_l0{x}") for x in suffixes])
        scale = torch.ones(4 * hidden, dtype=w_hh.dtype, device=w_hh.device)
        scale[2 * hidden : 3 * hidden] = 2.0
        w_ih, w_hh = w_ih * scale[:, None], w_hh * scale[:, None]
        if rnn.bias:
            bias = torch.stack([getattr(rnn, f"bias_ih_l0{x}") + getattr(rnn, f"bias_hh_l0{x}") for x in suffixes])
            bias = bias * scale
        else:
            bias = w_ih.new_zeros(2, 4 * hidden)
        table = torch.baddbmm(bias[:, None, :], embedding.weight.detach().expand(2, -1, -1), w_ih.transpose(1, 2))
        weights = LstmWeights(
            table.reshape(-1, 4 * hidden),
            bias,
            w_ih,
            embedding.num_embeddings,
            (_Product(w_hh[0]), _Product(w_hh[1])),
            (_Product(w_hh[0].t()), _Product(w_hh[1].t())),
        )
        _WEIGHTS[rnn] = (key, weights)
        return weights


class _Product:
    """x (n, K) -> x W^T for one fixed W (N, K): the per-step matmul of a recurrence. On a CPU with float32
    weights it runs through oneDNN with W packed once, as `nn.LSTM`'s own kernel does: PyTorch's matmul (MKL)
    takes a much slower path for these small products on AMD CPUs (on the project's EPYC, a (32, 128) x (128,
    512) product: 44 us against oneDNN's 27-30 us; a T = 180 gradient row 72 -> 64 ms a batch). oneDNN's linear
    is an internal PyTorch operator (`torch.ops.mkldnn`, what `torch.compile` emits on CPUs); where it is
    missing or refuses the weights (float64, an accelerator), the plain matmul stands in. Both give the same
    sums up to float rounding."""

    def __init__(self, weight: torch.Tensor, rows: int = 32):
        self.weight_t = weight.t().contiguous()  # (K, N) for the plain matmul
        self.packed: torch.Tensor | None = None
        if weight.device.type == "cpu" and weight.dtype == torch.float32 and torch.backends.mkldnn.is_available():
            try:
                self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), rows)
            except (AttributeError, RuntimeError):  # a torch without the operator, or one that refuses
                self.packed = None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is not None:
            return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.packed, None, "none", [], "")
        return x @ self.weight_t


_WEIGHTS: weakref.WeakKeyDictionary[nn.LSTM, tuple[tuple[int, ...], LstmWeights]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class BiLstmPass:
    """Both directions of the premise BiLSTM over a batch, every step kept (Tw slots, B rows, H units)."""

    weights: LstmWeights
    rows: torch.Tensor  # (Tw, 2, B) the table row each direction reads at each step
    reverse: torch.Tensor  # (B, Tw) the slot the backward direction reads at each step
    inside: torch.Tensor  # (B, Tw) slots within the row
    gates: torch.Tensor  # (Tw, 2, B, 4H) sigmoid of the pre-activations: i, f, g (g doubled), o
    states: torch.Tensor  # (Tw + 1, 2, B, H) h after each step, zero before the first
    cells: torch.Tensor  # (Tw + 1, 2, B, H) c after each step, zero before the first
    tanh_cells: torch.Tensor  # (Tw, 2, B, H) tanh(c) after each step

    @staticmethod
    @torch.no_grad()
    def scan(model: AttentionClassifier, batch: Batch) -> BiLstmPass:
        """The pass computed step by step, keeping every gate: the shared pass of a CPU (`forward_once`)."""
        weights, rows, reverse, inside = _reading(model, batch)
        tw, _, b = rows.shape
        hidden = weights.table.shape[1] // 4
        gates = weights.table.index_select(0, rows.reshape(-1)).view(tw, 2, b, 4 * hidden)  # input shares
        states, cells = gates.new_empty(tw + 1, 2, b, hidden), gates.new_empty(tw + 1, 2, b, hidden)
        states[0], cells[0] = 0.0, 0.0
        tanh_cells = gates.new_empty(tw, 2, b, hidden)
        for s in range(tw):
            lstm_step(
                gates[s], states[s], cells[s], weights.forward_products, states[s + 1], cells[s + 1], tanh_cells[s]
            )
        return BiLstmPass(weights, rows, reverse, inside, gates, states, cells, tanh_cells)

    @staticmethod
    @torch.no_grad()
    def rebuild(model: AttentionClassifier, batch: Batch, h: torch.Tensor) -> BiLstmPass:
        """The pass rebuilt from `nn.LSTM`'s h (B, Tw, 2H): every gate pre-activation is one matmul away
        given h_{t-1}, and the cells one scan of c_t = f_t c_{t-1} + i_t g_t."""
        weights, rows, reverse, inside = _reading(model, batch)
        tw, _, b = rows.shape
        hidden = h.shape[-1] // 2
        states = h.new_zeros(tw + 1, 2, b, hidden)
        states[1:, 0] = h[..., :hidden].transpose(0, 1)
        states[1:, 1] = h[..., hidden:].gather(1, reverse[..., None].expand(-1, -1, hidden)).transpose(0, 1)
        gates = weights.table.index_select(0, rows.reshape(-1)).view(tw, 2, b, 4 * hidden)
        for direction, product in enumerate(weights.forward_products):  # all steps at once: h_{t-1} W_hh^T
            before = states[:-1, direction].reshape(tw * b, hidden)
            gates[:, direction] += product(before).view(tw, b, 4 * hidden)
        gates.sigmoid_()
        i, f, g = gates[..., :hidden], gates[..., hidden : 2 * hidden], gates[..., 2 * hidden : 3 * hidden]
        shares = torch.addcmul(-i, i, g, value=2.0)  # i tanh(g) = i (2 sigmoid(2g) - 1)
        cells = h.new_zeros(tw + 1, 2, b, hidden)
        for s in range(tw):
            torch.addcmul(shares[s], f[s], cells[s], out=cells[s + 1])
        return BiLstmPass(weights, rows, reverse, inside, gates, states, cells, tanh(cells[1:]))

    def h(self) -> torch.Tensor:
        """(B, Tw, 2H) forward | backward states at each position, zero past each row: `Recurrent.forward`'s
        output, written in place (a concatenation would copy both halves once more)."""
        states = self.states[1:]  # (Tw, 2, B, H)
        tw, _, b, hidden = states.shape
        h = states.new_empty(b, tw, 2 * hidden)
        mask = self.inside[..., None].to(states.dtype)  # (B, Tw, 1)
        torch.mul(states[:, 0].transpose(0, 1), mask, out=h[..., :hidden])
        index = self.reverse[..., None].expand(-1, -1, hidden)
        h[..., hidden:] = states[:, 1].transpose(0, 1).gather(1, index)
        h[..., hidden:] *= mask
        return h

    def in_row_order(self, reading: torch.Tensor) -> torch.Tensor:
        """(Tw, 2, B, ...) per direction in reading order -> (B, Tw, ...) in the row's order, the directions
        summed; zero past each row."""
        forward, backward = reading[:, 0].transpose(0, 1), reading[:, 1].transpose(0, 1)  # (B, Tw, ...)
        trailing = [1] * (backward.dim() - 2)
        index = self.reverse.reshape(*self.reverse.shape, *trailing).expand_as(backward)
        mask = self.inside.reshape(*self.inside.shape, *trailing).to(reading.dtype)
        return (forward + backward.gather(1, index)) * mask

    def input_shares(self, direction: int) -> torch.Tensor:
        """(Tw * B, 4H) W_ih e + b at each step of one direction, step-major."""
        return self.weights.table.index_select(0, self.rows[:, direction].reshape(-1))


def lstm_step(
    gates: torch.Tensor,
    h: torch.Tensor,
    c: torch.Tensor,
    products: tuple[_Product, ...],
    h_out: torch.Tensor,
    c_out: torch.Tensor,
    tanh_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of n rows of k recurrences (both directions, or one), in place: gates (k, n, 4H), the input
    shares, become the activations; the new c and h (k, n, H) are written to c_out (which may be c) and
    h_out, tanh(c) to tanh_out where given. `products` holds each recurrence's h -> h W_hh^T."""
    for k, product in enumerate(products):
        gates[k] += product(h[k])
    hidden = h.shape[-1]
    sig = gates.sigmoid_()
    i, f, g, o = (sig[..., k * hidden : (k + 1) * hidden] for k in range(4))
    c = torch.addcmul((f * c).sub_(i), i, g, value=2.0, out=c_out)  # f c + i (2 sigmoid(2g) - 1)
    tanh_c = tanh(c, out=tanh_out)
    return torch.mul(o, tanh_c, out=h_out), c


def tanh(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """tanh(x) = 2 sigmoid(2x) - 1: torch's CPU tanh is several times slower than its sigmoid (slower still
    on strided memory); the identity costs an absolute error of float rounding at 1."""
    return torch.mul(x, 2.0, out=out).sigmoid_().mul_(2.0).sub_(1.0)


def _reading(model: AttentionClassifier, batch: Batch) -> tuple[LstmWeights, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(weights, rows (Tw, 2, B), reverse (B, Tw), inside (B, Tw)): what each direction reads at each step."""
    rnn = premise_bilstm(model)
    if rnn is None:
        raise ValueError("a written-out BiLSTM pass needs a flat/pair model with a BiLSTM premise encoder")
    weights = LstmWeights.of(model.embedding, rnn)
    ids = batch.ids.to(weights.table.device)
    lengths = batch.lengths.clamp_min(1).to(ids.device)  # as `Recurrent.forward` reads them
    reverse = reversed_within(lengths, ids.shape[1])
    inside = torch.arange(ids.shape[1], device=ids.device) < lengths[:, None]
    rows = torch.stack([ids.t(), ids.gather(1, reverse).t() + weights.vocabulary], dim=1)  # (Tw, 2, B)
    return weights, rows, reverse, inside
