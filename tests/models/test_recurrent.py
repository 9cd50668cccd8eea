"""The recurrent encoder's CPU pass (one direction at a time, the backward one reversed within each row) computes
what a packed bidirectional `nn.LSTM`/`nn.GRU` computes, and a row's LSTM states do not depend on its batch."""

from __future__ import annotations

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from gridlab.models.encoders import Recurrent, reversed_within


def padded_batch(seed: int = 0, rows: int = 6, steps: int = 9, width: int = 5):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([steps, 1, 4, 7, 2, 9][:rows])
    tokens = torch.arange(steps)[None, :] < lengths[:, None]
    x = torch.randn(rows, steps, width, generator=generator) * tokens.unsqueeze(-1)
    return x, lengths, tokens


def packed_reference(encoder: Recurrent, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    h, _ = pad_packed_sequence(encoder.rnn(packed)[0], batch_first=True, total_length=x.shape[1])
    return h


def test_reversed_within_reads_each_row_backwards_and_leaves_padding():
    assert reversed_within(torch.tensor([3, 1]), 4).tolist() == [[2, 1, 0, 3], [0, 1, 2, 3]]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_the_pass_and_its_gradients_equal_a_packed_sequence(cell: str):
    torch.manual_seed(0)
    encoder = Recurrent(cell, 5, 4)
    x, lengths, tokens = padded_batch()
    x.requires_grad_(True)
    ours = encoder(x, lengths, tokens)
    reference = packed_reference(encoder, x, lengths)
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-6)
    weights = torch.randn_like(ours)
    grads = torch.autograd.grad((ours * weights).sum(), [x, *encoder.parameters()])
    expected = torch.autograd.grad((reference * weights).sum(), [x, *encoder.parameters()])
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_a_rows_lstm_states_do_not_depend_on_its_batch():
    torch.manual_seed(0)
    encoder = Recurrent("lstm", 5, 4)
    x, lengths, tokens = padded_batch()
    with torch.no_grad():
        batch = encoder(x, lengths, tokens)
        for row in range(len(lengths)):
            n = int(lengths[row])
            alone = encoder(x[row : row + 1, :n], lengths[row : row + 1], tokens[row : row + 1, :n])
            assert torch.equal(alone[0], batch[row, :n])
            assert not batch[row, n:].any()  # zeros past the row's end
