"""d y / d logits for y the predicted class's probability, shared by the generic gradient (`gradient.py`)
and the BiLSTM's written-out backward (`lstm_backward.py`): y (e_pred - p), formed with 1 - y as the sum of
the other probabilities, so a confident prediction whose y rounds to 1.0 in float32 still gets the exact
direction (autograd through softmax would round 1 - y to 0 and keep only the -y p_c terms)."""

from __future__ import annotations

import torch


def prediction_gradient(logits: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """(B, C) d y / d logits for y = softmax(logits)_pred: y (e_pred - p), with 1 - y taken as the sum of
    the other classes' probabilities, which stays exact when y itself rounds to 1."""
    probs = torch.softmax(logits, dim=-1)  # (B, C)
    chosen = torch.nn.functional.one_hot(pred, logits.shape[-1]).bool()  # (B, C)
    others = probs.masked_fill(chosen, 0.0)  # (B, C)
    y = probs.gather(-1, pred[:, None])  # (B, 1)
    return y * torch.where(chosen, others.sum(-1, keepdim=True), -others)
