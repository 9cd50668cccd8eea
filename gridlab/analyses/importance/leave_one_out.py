"""Leave-one-out importance: d_t = TVD(y(x_-t), y(x)) per attention item, the generic path and the dispatch
to the optimised ones (`recurrent.py`, `local.py`).

Item t is deleted and the sequence shortens (`<sos>`/`<eos>` stay, `lengths` drop by 1), as J&W's `x_-t`;
for HAN sentence t is deleted from the document. The TVD is taken from the classes other than the
prediction (`tvd_beside`), which keeps it exact when the predicted probability rounds to 1.
All deletions of a batch are built at once by gathering each row with a shifted index (no loop over
positions, `deletion.py`); a shortened row ends in padding (a `<pad>` slot appended to the source rows), and
padding never changes a model's output. They run in chunks of at most `chunk_elements` activations, each
chunk as wide as its longest row. Deleting the only item leaves an empty sequence, which the projections
turn into alpha = 0 and the zero context.

Flat and pair models with a BiLSTM/BiGRU premise encoder (`recurrent.py`), or with a local one and learned
attention (`local.py`), take the optimised paths; HAN, transformer encoders, uniform/random attention for
local encoders and training-mode dropout take the generic one here.

Random attention draws new weights for each shortened row, so its leave-one-out values carry that noise.
"""

from __future__ import annotations

import torch

from gridlab.analyses.common import SharedPass
from gridlab.analyses.importance.deletion import deleted_batch, shift_index
from gridlab.analyses.importance.local import _is_local, _local_probs
from gridlab.analyses.importance.recurrent import _recurrent_probs, _RecurrentStates
from gridlab.data.batching import Batch
from gridlab.models.classifier import AttentionClassifier

# Slots x features (rows x width x max(embedding, h) size) per leave-one-out model call: all T deletions of a
# 32-document batch of 500 tokens are 16k rows, far too many at once; short batches still run in one call.
LOO_CHUNK_ELEMENTS = 1 << 23


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


def _extents(batch: Batch) -> torch.Tensor:
    """(B,) slots holding each row's content: tokens with markers, or sentences (a prefix of the row)."""
    if batch.sentences is not None:
        return batch.sentences.doc_mask.sum(-1)
    return batch.lengths


def _features_per_slot(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> int:
    """The largest activation per slot of a deletion row (a HAN slot is a sentence of W words)."""
    words = 1 if batch.sentences is None else batch.sentences.ids.shape[-1]
    return words * max(model.embedding.embedding_dim, shared.encoded.h.shape[-1])
