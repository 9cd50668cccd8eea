"""Encoders: embedded tokens (B, T, d) -> representations h (B, T, m) that attention weighs.

    >>> encoder = build_encoder("lstm", input_dim=300, hidden=128)
    >>> h = encoder(embedded, lengths, tokens)           # (B, T, 256)

- `lstm`, `gru`: bidirectional; padding never reaches a real position (J&W, S&S).
- `cnn`: J&W's kernels 1, 3, 5, 7 x `hidden` filters (ReLU), or S&S's widths 3 and 5 concatenated.
  Same-length zero padding, and `<pad>` embeds to zero, so a padded batch equals the instance alone.
- `average`: J&W's "average" encoder, linear + ReLU per token (order-free); tanh instead, as their code
  builds it, with `model.average_activation: tanh`.
- `noenc`: S&S's encoderless model, h = the embeddings.
- `transformer`: Meister's 2-layer, 1-head, hidden-128 self-attention encoder (`gridlab.models.transformer`).

`summary(h, lengths, tokens)` is one vector per sequence: the final states of both directions for recurrent
encoders (the "last hidden state" J&W use as the query of pair tasks), the mean over tokens otherwise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from gridlab.models.transformer import TransformerEncoder

JW_KERNELS = (1, 3, 5, 7)
SS_KERNELS = (3, 5)


class Encoder(nn.Module, ABC):
    output_dim: int

    @abstractmethod
    def forward(self, x: torch.Tensor, lengths: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """x (B, T, d), lengths (B,), tokens (B, T) = positions holding a token -> h (B, T, m)."""

    def summary(self, h: torch.Tensor, lengths: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        weights = tokens.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
        return (h * weights).sum(1) / weights.sum(1).clamp_min(1)


class Recurrent(Encoder):
    """A one-layer bidirectional LSTM/GRU. On a CPU each direction runs as its own one-way pass over the padded
    batch, the backward one over each row reversed within its length: padding then only ever follows a row's
    tokens, so no real position reads it, and oneDNN's fused LSTM takes the pass (2-5x faster than a packed
    sequence to train, bench/recurrent.py; a row's LSTM states are the same bit for bit whatever batch it comes
    in). On CUDA the packed sequence goes to cuDNN, which wants the module's own flat weights."""

    def __init__(self, cell: str, input_dim: int, hidden: int):
        super().__init__()
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(input_dim, hidden, batch_first=True, bidirectional=True)
        self.hidden = hidden
        self.output_dim = 2 * hidden

    def forward(self, x, lengths, tokens):
        lengths = lengths.clamp_min(1)
        if x.is_cuda:
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            h, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=x.shape[1])
            return h  # (B, T, 2 * hidden), zeros past each length
        reverse = reversed_within(lengths.to(x.device), x.shape[1])
        forward = self._one_way(x, "")
        backward = self._one_way(_gather_steps(x, reverse), "_reverse")
        h = torch.cat([forward, _gather_steps(backward, reverse)], dim=-1)
        return h * tokens.unsqueeze(-1).to(h.dtype)  # (B, T, 2 * hidden), zeros past each length

    def _one_way(self, x: torch.Tensor, suffix: str) -> torch.Tensor:
        """One direction's states (B, T, hidden), read left to right, with that direction's weights."""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        weights = [getattr(self.rnn, f"{name}_l0{suffix}") for name in names]
        zeros = x.new_zeros(1, x.shape[0], self.hidden)
        if isinstance(self.rnn, nn.LSTM):
            return torch.lstm(x, (zeros, zeros), weights, True, 1, 0.0, self.training, False, True)[0]
        return torch.gru(x, zeros, weights, True, 1, 0.0, self.training, False, True)[0]

    def summary(self, h, lengths, tokens):
        last = (lengths.clamp_min(1) - 1).to(h.device)
        forward = h[torch.arange(h.shape[0], device=h.device), last, : self.hidden]  # (B, hidden)
        backward = h[:, 0, self.hidden :]  # (B, hidden)
        return torch.cat([forward, backward], dim=-1)


def reversed_within(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(B, T) step indices that read each row backwards within its length and leave the padding in place."""
    slots = torch.arange(steps, device=lengths.device)
    ends = lengths[:, None]
    return torch.where(slots < ends, ends - 1 - slots, slots)


def _gather_steps(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x (B, T, m) read at the steps index (B, T) names, per row."""
    return x.gather(1, index.unsqueeze(-1).expand_as(x))


class Convolutional(Encoder):
    def __init__(self, input_dim: int, hidden: int, kernels: tuple[int, ...]):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(input_dim, hidden, k, padding=k // 2) for k in kernels)
        self.output_dim = hidden * len(kernels)

    def forward(self, x, lengths, tokens):
        x = (x * tokens.unsqueeze(-1)).transpose(1, 2)  # (B, d, T), padding exactly zero
        h = torch.cat([torch.relu(conv(x)) for conv in self.convs], dim=1)  # (B, m, T)
        return h.transpose(1, 2)


class Average(Encoder):
    def __init__(self, input_dim: int, hidden: int, activation: str = "relu"):
        super().__init__()
        self.projection = nn.Linear(input_dim, hidden)
        self.activation = {"relu": torch.relu, "tanh": torch.tanh}[activation]
        self.output_dim = hidden

    def forward(self, x, lengths, tokens):
        return self.activation(self.projection(x))


class Identity(Encoder):
    def __init__(self, input_dim: int):
        super().__init__()
        self.output_dim = input_dim

    def forward(self, x, lengths, tokens):
        return x


class Transformer(Encoder):
    def __init__(self, input_dim: int, hidden: int, layers: int, heads: int):
        super().__init__()
        self.encoder = TransformerEncoder(input_dim, hidden, layers, heads)
        self.output_dim = hidden

    def forward(self, x, lengths, tokens):
        return self.encoder(x, tokens)


def build_encoder(
    kind: str,
    input_dim: int,
    hidden: int,
    cnn_variant: str = "jain_wallace",
    layers: int = 2,
    heads: int = 1,
    average_activation: str = "relu",
) -> Encoder:
    if kind in ("lstm", "gru"):
        return Recurrent(kind, input_dim, hidden)
    if kind == "cnn":
        return Convolutional(input_dim, hidden, JW_KERNELS if cnn_variant == "jain_wallace" else SS_KERNELS)
    if kind == "average":
        return Average(input_dim, hidden, average_activation)
    if kind == "noenc":
        return Identity(input_dim)
    if kind == "transformer":
        return Transformer(input_dim, hidden, layers, heads)
    raise ValueError(f"unknown encoder '{kind}'")
