"""Batches with items deleted: one item per row for leave-one-out, all deletions of a batch built at once by
gathering each row with a shifted index (no loop over positions); any set of items per row for the eraser's
comprehensiveness and sufficiency. A shortened row ends in padding (a `<pad>` slot appended to the source
rows), and padding never changes a model's output."""

from __future__ import annotations

import torch

from gridlab.data.batching import Batch, Sentences
from gridlab.data.vocab import PAD_ID


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
    """The batch of rows `rows` (n,) each with one item deleted, as `shift_index` describes."""
    return _gathered(batch, rows, index, None if batch.sentences is not None else batch.lengths[rows] - 1)


def _gathered(batch: Batch, rows: torch.Tensor, index: torch.Tensor, lengths: torch.Tensor | None) -> Batch:
    """Rows `rows` (n,) of the batch with their items' slots read from `index` (n, width) (slot T being the
    appended padding) and the new token `lengths` (flat batches). For a HAN batch the sentences move; its flat
    `ids`/`mask`/`lengths` are the originals' (HierarchicalClassifier reads only `sentences`)."""
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
    elif lengths is None:
        raise ValueError("a flat batch's rows need their new lengths")
    else:
        ids, mask = with_pad_slot(batch.ids, PAD_ID)[take], with_pad_slot(batch.mask, False)[take]
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


def without_items(batch: Batch, rows: torch.Tensor, removed: torch.Tensor) -> Batch:
    """The batch of rows `rows` (n,) with the items `removed` (n, T) marks deleted (tokens, or a HAN
    document's sentences), every other slot kept in order (`<sos>`/`<eos>` too) and packed to the front, the
    width cut to the longest result: no padded work beyond it. A row may lose all its items."""
    if batch.sentences is not None:
        kept = batch.sentences.doc_mask[rows] & ~removed  # (n, S)
    else:
        kept = (batch.ids[rows] != PAD_ID) & ~removed  # (n, T) real slots, markers included
    counts = kept.sum(-1)  # (n,)
    width = max(int(counts.max()) if len(counts) else 0, 1)
    index = torch.sort((~kept).int(), dim=-1, stable=True).indices[:, :width]  # (n, width) kept slots first
    filled = torch.arange(width, device=index.device)[None, :] < counts[:, None]  # (n, width)
    index = torch.where(filled, index, kept.shape[1])  # the rest reads the appended pad slot
    return _gathered(batch, rows, index, None if batch.sentences is not None else counts)
