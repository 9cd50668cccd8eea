"""Gradient importance: g_t = |grad_{e_t} y . e_t| per attention item, the generic autograd path (a BiLSTM
premise encoder's backward is written out instead, `lstm_backward.py`).

`g_t = |sum_w 1[x_tw = 1] dy/dx_tw|`, the gradient with respect to the one-hot input, is the
embedding gradient dotted with the token's embedding. `y` is the probability of the predicted class
`shared.pred`; the graph is cut at the final attention layer (alpha is a constant). The constant is
`shared.alpha`: for learned attention it equals `model.attend(...).detach()` on the same input, and for
random attention it is the draw that produced `shared.probs`. One backward serves the whole batch
(instances never interact, so the gradient of the summed y is each instance's own). dy/dlogits =
y (e_pred - p) is formed with 1 - y as the sum of the other probabilities, so a confident prediction whose
y rounds to 1.0 in float32 still gets the exact direction (autograd through softmax would round 1 - y to 0
and keep only the -y p_c terms; `prediction.py`).
For HAN an item is a sentence: its words' contributions `grad_{e_w} y . e_w` are summed, then the
absolute value taken (the one-hot gradient of the sentence as one unit: all its words scaled together).
Only the final (sentence) attention is detached; the word attention is part of the sentence encoder.
"""

from __future__ import annotations

import torch

from gridlab.analyses.bilstm import premise_bilstm
from gridlab.analyses.common import SharedPass
from gridlab.analyses.importance.lstm_backward import _LstmBackward
from gridlab.analyses.importance.prediction import prediction_gradient
from gridlab.data.batching import Batch
from gridlab.models.classifier import AttentionClassifier


def input_gradient(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> tuple[torch.Tensor, torch.Tensor]:
    """(gradient, embedded), both the shape of `model.embed(batch)`: d y / d e with alpha = `shared.alpha`
    held constant and y the probability of `shared.pred`. One backward for the batch (written out for a
    BiLSTM premise encoder, `_LstmBackward`)."""
    if premise_bilstm(model) is not None:
        return _LstmBackward.of(model, shared).input_gradient(), model.embed(batch).detach()
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
    if premise_bilstm(model) is not None:  # e_t . (W_ih^T d gates_t) = (W_ih e_t) . d gates_t: no input gradient
        return _LstmBackward.of(model, shared).contributions().abs() * shared.encoded.mask
    gradient, embedded = input_gradient(model, batch, shared)
    mask = shared.encoded.mask
    contributions = (gradient * embedded).sum(-1)  # (B, T) tokens, or (B, S, W) words of sentences
    per_item = contributions.reshape(*mask.shape, -1).sum(-1)  # (B, T): padding embeds to 0 and adds nothing
    return per_item.abs() * mask
