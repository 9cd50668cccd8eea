"""A small Transformer encoder whose self-attention matrices can be read and replaced at inference.

    >>> encoder = TransformerEncoder(input_dim=300, hidden=128, layers=2, heads=1)
    >>> h = encoder(x, tokens)
    >>> encoder.attention_maps          # [(B, heads, T, T)] per layer, from the last forward pass
    >>> encoder.norm_maps()             # [(B, heads, T, T)] alpha_hij ||f_h(x_j)|| (Kobayashi et al. 2020)
    >>> encoder.override = lambda layer, attn: attn.flip(-1)   # e.g. Vashishth §4.3's layer permutation
    >>> state = encoder.run_layers(encoder.project(x), tokens, stop=1)   # the input of layer 1
    >>> h = encoder.run_layers(state, tokens, start=1)                   # the same h as encoder(x, tokens)

Meister et al.'s setting: 2 layers, 1 head, hidden 128; post-norm layers with a 4x feed-forward, input
embeddings projected to `hidden` plus sinusoidal positions. Written out (not `nn.TransformerEncoder`) so
that the attention matrix of each layer is an explicit tensor an analysis can intervene on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import torch
from torch import nn

Override = Callable[[int, torch.Tensor], torch.Tensor]
Seen = Callable[[torch.Tensor, torch.Tensor], None]


def sinusoidal_positions(length: int, dim: int, device: torch.device) -> torch.Tensor:
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)  # (T, 1)
    frequency = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim, device=device)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: dim // 2])
    return table  # (T, dim)


class SelfAttentionLayer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.ReLU(), nn.Linear(4 * hidden, hidden))
        self.norm2 = nn.LayerNorm(hidden)

    def attention(self, x: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, m) -> attention (B, heads, T, T) over the real keys, and values (B, heads, T, m/heads)."""
        b, t, m = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, m // self.heads).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, m/H)
        scores = q @ k.transpose(-1, -2) / math.sqrt(m // self.heads)  # (B, H, T, T)
        scores = scores.masked_fill(~tokens[:, None, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1), v

    def value_norms(self, values: torch.Tensor) -> torch.Tensor:
        """values (B, H, T, m/H) -> (B, H, T) ||f_h(x_j)||, f_h(x_j) = W_O^h v_hj: the vector that key j adds
        to the layer's output through head h before its attention weight scales it (Kobayashi et al. 2020).
        W_O^h is the block of the output projection's columns that reads head h."""
        per_head = self.out.weight.view(self.out.out_features, self.heads, -1)  # (m, H, m/H)
        return torch.einsum("bhtd,mhd->bhtm", values, per_head).norm(dim=-1)

    def combine(self, x: torch.Tensor, attention: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        b, t, m = x.shape
        mixed = (attention @ values).transpose(1, 2).reshape(b, t, m)  # (B, T, m)
        x = self.norm1(x + self.out(mixed))
        return self.norm2(x + self.feed_forward(x))


class TransformerEncoder(nn.Module):
    def __init__(self, input_dim: int, hidden: int, layers: int, heads: int):
        super().__init__()
        self.input = nn.Linear(input_dim, hidden)
        self.layers = nn.ModuleList(SelfAttentionLayer(hidden, heads) for _ in range(layers))
        self.override: Override | None = None
        self.attention_maps: list[torch.Tensor] = []
        self.attention_values: list[torch.Tensor] = []  # (B, H, T, m/H) per layer, for `norm_maps`

    def forward(self, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """x (B, T, d), tokens (B, T) -> (B, T, hidden); every layer's attention kept in `attention_maps`."""
        self.attention_maps, self.attention_values = [], []
        return self.run_layers(self.project(x), tokens, seen=self._keep)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) embeddings -> (B, T, hidden) the input of the first self-attention layer."""
        return self.input(x) + sinusoidal_positions(x.shape[1], self.input.out_features, x.device)

    def run_layers(
        self,
        x: torch.Tensor,
        tokens: torch.Tensor,
        start: int = 0,
        stop: int | None = None,
        seen: Seen | None = None,
    ) -> torch.Tensor:
        """x (B, T, hidden) the input of layer `start`, tokens (B, T) the keys that may be attended -> the input
        of layer `stop` (None: the last layer's output); `seen` gets each layer's attention and values. Taking
        a key out of `tokens` deletes that item from layer `start` on (its own row is still computed, but no
        other row reads it)."""
        tokens = tokens | ~tokens.any(-1, keepdim=True)  # an all-padding row attends everywhere, not to nothing
        for index in range(start, len(self.layers) if stop is None else stop):
            layer = cast(SelfAttentionLayer, self.layers[index])  # nn.ModuleList is untyped
            attention, values = layer.attention(x, tokens)
            if self.override is not None:
                attention = self.override(index, attention)
            if seen is not None:
                seen(attention, values)
            x = layer.combine(x, attention, values)
        return x

    def _keep(self, attention: torch.Tensor, values: torch.Tensor) -> None:
        self.attention_maps.append(attention.detach())  # for reading: no graph kept, so a model deep-copies
        self.attention_values.append(values.detach())

    def norm_maps(self) -> list[torch.Tensor]:
        """[(B, H, T, T)] per layer of the last forward pass: alpha_hij ||f_h(x_j)||, the size of what key j
        adds to query i through head h (Kobayashi et al. 2020), not only its weight. Computed when asked,
        so training pays nothing for it."""
        with torch.no_grad():
            return [
                attention * cast(SelfAttentionLayer, layer).value_norms(values)[:, :, None, :]
                for layer, attention, values in zip(self.layers, self.attention_maps, self.attention_values)
            ]
