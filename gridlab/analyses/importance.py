"""Feature importance over the items of the final attention layer, batched: the gradient and leave-one-out
measures of Jain & Wallace §4.1, Algorithm 1 (SPEC §3 A), shared by every analysis that ranks items.

    >>> shared = forward_once(model, batch)
    >>> g = gradient_importance(model, batch, shared)      # (B, T) |grad_{e_t} y . e_t|, 0 outside the mask
    >>> d = leave_one_out(model, batch, shared)            # (B, T) TVD(y(x_-t), y(x)), 0 outside the mask
    >>> probs = leave_one_out_probs(model, batch, shared)  # (B, T, C) the outputs behind d
    >>> reference_leave_one_out(model, shared)             # the same as a per-instance loop (test oracle)

Both are aligned with `shared.encoded.mask`: tokens for flat and pair models (the premise only: attention
is over the premise, the query is left as it is), sentences for hierarchical (HAN) models.

Gradient. `g_t = |sum_w 1[x_tw = 1] dy/dx_tw|`, the gradient with respect to the one-hot input, is the
embedding gradient dotted with the token's embedding. `y` is the probability of the predicted class
`shared.pred`; the graph is cut at the final attention layer (alpha is a constant). The constant is
`shared.alpha`: for learned attention it equals `model.attend(...).detach()` on the same input, and for
random attention it is the draw that produced `shared.probs`. One backward serves the whole batch
(instances never interact, so the gradient of the summed y is each instance's own). dy/dlogits =
y (e_pred - p) is formed with 1 - y as the sum of the other probabilities, so a confident prediction whose
y rounds to 1.0 in float32 still gets the exact direction (autograd through softmax would round 1 - y to 0
and keep only the -y p_c terms).
For HAN an item is a sentence: its words' contributions `grad_{e_w} y . e_w` are summed, then the
absolute value taken (the one-hot gradient of the sentence as one unit: all its words scaled together).
Only the final (sentence) attention is detached; the word attention is part of the sentence encoder.

Leave-one-out. Item t is deleted and the sequence shortens (`<sos>`/`<eos>` stay, `lengths` drop by 1),
as J&W's `x_-t`; for HAN sentence t is deleted from the document. The TVD is taken from the classes other
than the prediction (`tvd_beside`), which keeps it exact when the predicted probability rounds to 1.
All deletions of a batch are built at once by gathering each row with a shifted index (no loop over
positions); a shortened row ends in padding (a `<pad>` slot appended to the source rows), and padding never
changes a model's output. They run in chunks of at most `chunk_elements` activations, each chunk as wide
as its longest row. Deleting the only item leaves an empty sequence, which the projections turn into
alpha = 0 and the zero context.

What is optimised: for flat and pair models whose premise encoder is local (`average`, `noenc`: position-wise;
`cnn`: outputs within the widest kernel's radius r of the gap), the deletion's representations are the
shared pass's h gathered around the gap, with only the 2r outputs whose receptive field spans the gap
recomputed from a 4r-token window; the query of a pair model is reused as it is. Only attention and
decoding run over the full shortened rows. Recurrent and transformer encoders (and HAN) re-encode every
shortened row in full: O(T^2) per instance, batched.

Random attention draws new weights for each shortened row, so its leave-one-out values carry that noise.
"""

from __future__ import annotations

import itertools

import torch

from gridlab.analyses.common import SharedPass, tvd
from gridlab.data.batching import Batch, Sentences, collate
from gridlab.data.vocab import PAD_ID
from gridlab.models.classifier import (
    AttentionClassifier,
    FlatClassifier,
    PairClassifier,
)
from gridlab.models.encoders import Average, Convolutional, Identity

# Slots x features (rows x width x max(embedding, h) size) per leave-one-out model call: all T deletions of a
# 32-document batch of 500 tokens are 16k rows, far too many at once; short batches still run in one call.
LOO_CHUNK_ELEMENTS = 1 << 23


# ---- gradient -------------------------------------------------------------------------------------------


def prediction_gradient(logits: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """(B, C) d y / d logits for y = softmax(logits)_pred: y (e_pred - p), with 1 - y taken as the sum of
    the other classes' probabilities, which stays exact when y itself rounds to 1."""
    probs = torch.softmax(logits, dim=-1)  # (B, C)
    chosen = torch.nn.functional.one_hot(pred, logits.shape[-1]).bool()  # (B, C)
    others = probs.masked_fill(chosen, 0.0)  # (B, C)
    y = probs.gather(-1, pred[:, None])  # (B, 1)
    return y * torch.where(chosen, others.sum(-1, keepdim=True), -others)


def input_gradient(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> tuple[torch.Tensor, torch.Tensor]:
    """(gradient, embedded), both the shape of `model.embed(batch)`: d y / d e with alpha = `shared.alpha`
    held constant and y the probability of `shared.pred`. One backward for the batch."""
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
    gradient, embedded = input_gradient(model, batch, shared)
    mask = shared.encoded.mask
    contributions = (gradient * embedded).sum(-1)  # (B, T) tokens, or (B, S, W) words of sentences
    per_item = contributions.reshape(*mask.shape, -1).sum(-1)  # (B, T): padding embeds to 0 and adds nothing
    return per_item.abs() * mask


# ---- leave-one-out --------------------------------------------------------------------------------------


def leave_one_out(model: AttentionClassifier, batch: Batch, shared: SharedPass,
                  chunk_elements: int = LOO_CHUNK_ELEMENTS) -> torch.Tensor:
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
def leave_one_out_probs(model: AttentionClassifier, batch: Batch, shared: SharedPass,
                        chunk_elements: int = LOO_CHUNK_ELEMENTS) -> torch.Tensor:
    """(B, T, C) the output distribution with item t deleted, 0 outside `shared.encoded.mask`."""
    mask = shared.encoded.mask
    rows, positions = mask.nonzero(as_tuple=True)  # (N,) each, row-major: an instance's deletions together
    extents = _extents(batch)  # (B,) slots each row occupies
    radius = _local_radius(model)
    embedded = model.embed(batch) if radius else None  # the window recomputation reads the embeddings
    per_row = mask.shape[1] * _features_per_slot(model, batch, shared)
    step = max(1, chunk_elements // per_row)
    chunks = []
    for start in range(0, len(rows), step):
        r, t = rows[start : start + step], positions[start : start + step]  # (n,)
        index = shift_index(t, int(extents[r].max()))  # (n, width)
        if radius is None:
            logits = model(deleted_batch(batch, r, index))
        else:
            logits = _local_logits(model, batch, shared, embedded, r, t, index, radius)
        chunks.append(torch.softmax(logits, dim=-1))  # (n, C)
    out = torch.zeros(*mask.shape, shared.probs.shape[-1], dtype=shared.probs.dtype, device=mask.device)
    if chunks:
        out[rows, positions] = torch.cat(chunks).to(out.dtype)
    return out  # (B, T, C)


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
    """The batch of rows `rows` (n,) each with one item deleted, as `shift_index` describes. For a HAN batch
    the sentences shift; its flat `ids`/`mask`/`lengths` are the originals' (HierarchicalClassifier reads
    only `sentences`)."""
    take = rows[:, None], index  # advanced indexing: (n, width) without materialising the (n, T) rows first
    query = {}
    if batch.query_ids is not None:
        query = {"query_ids": batch.query_ids[rows], "query_mask": batch.query_mask[rows],
                 "query_lengths": batch.query_lengths[rows]}
    common = dict(labels=batch.labels[rows], instance_ids=batch.instance_ids[rows], **query)
    if batch.sentences is not None:
        s = batch.sentences
        sentences = Sentences(with_pad_slot(s.ids, PAD_ID)[take], with_pad_slot(s.mask, False)[take],
                              with_pad_slot(s.doc_mask, False)[take])  # (n, width, W), (n, width, W), (n, width)
        return Batch(ids=batch.ids[rows], mask=batch.mask[rows], lengths=batch.lengths[rows],
                     sentences=sentences, **common)
    return Batch(ids=with_pad_slot(batch.ids, PAD_ID)[take], mask=with_pad_slot(batch.mask, False)[take],
                 lengths=batch.lengths[rows] - 1, **common)


def _extents(batch: Batch) -> torch.Tensor:
    """(B,) slots holding each row's content: tokens with markers, or sentences (a prefix of the row)."""
    if batch.sentences is not None:
        return batch.sentences.doc_mask.sum(-1)
    return batch.lengths


def _features_per_slot(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> int:
    """The largest activation per slot of a deletion row (a HAN slot is a sentence of W words)."""
    words = 1 if batch.sentences is None else batch.sentences.ids.shape[-1]
    return words * max(model.embedding.embedding_dim, shared.encoded.h.shape[-1])


def _local_radius(model: AttentionClassifier) -> int | None:
    """How far a deletion reaches in the premise encoder's output: 0 for position-wise encoders, the widest
    kernel's half-width for a CNN, None when any output may depend on any input (or the model is not one of
    the flat/pair classes whose `encode` this module mirrors)."""
    if type(model) not in (FlatClassifier, PairClassifier):
        return None
    encoder = model.encoder
    if isinstance(encoder, (Average, Identity)):
        return 0
    if isinstance(encoder, Convolutional):
        return max(conv.kernel_size[0] // 2 for conv in encoder.convs)
    return None


def _local_logits(model: AttentionClassifier, batch: Batch, shared: SharedPass, embedded: torch.Tensor | None,
                  rows: torch.Tensor, positions: torch.Tensor, index: torch.Tensor, radius: int) -> torch.Tensor:
    """(n, C) logits of the deletions for a local encoder: h gathered from the shared pass, the 2r outputs
    next to the gap recomputed, then attention and the decoder on the full shortened rows."""
    encoded = shared.encoded
    take = rows[:, None], index
    h = with_pad_slot(encoded.h, 0.0)[take]  # (n, width, m)
    if radius:
        h = _respliced(model, batch, embedded, h, rows, positions, radius)
    mask = with_pad_slot(encoded.mask, False)[take]  # (n, width)
    query = None if encoded.query is None else encoded.query[rows]  # the query never sees the premise
    alpha = model.attend(h, mask, query)
    return model.decode(h, alpha, query)


def _respliced(model: AttentionClassifier, batch: Batch, embedded: torch.Tensor, h: torch.Tensor,
               rows: torch.Tensor, positions: torch.Tensor, radius: int) -> torch.Tensor:
    """h (n, width, m) of the shortened rows with slots gap - r .. gap + r - 1 recomputed: their receptive
    fields span the gap. Each needs r slots either side, so the encoder runs on slots gap - 2r .. gap + 2r - 1
    (zero beyond the row, as the CNN's own zero padding) and the middle 2r outputs are kept."""
    width, span = h.shape[1], 2 * radius
    original_width = batch.ids.shape[1]
    window = positions[:, None] - span + torch.arange(2 * span, device=positions.device)  # (n, 4r) shortened slots
    source = window + (window >= positions[:, None]).long()  # (n, 4r) slots of the original row
    source = torch.where(window < 0, original_width, source).clamp_max(original_width)  # outside: the pad slot
    tokens = with_pad_slot(batch.ids != PAD_ID, False)[rows[:, None], source]  # (n, 4r)
    x = with_pad_slot(embedded, 0.0)[rows[:, None], source]  # (n, 4r, d)
    local = model.encoder(model.dropout(x), tokens.sum(-1), tokens)[:, radius : radius + span]  # (n, 2r, m)
    offset = torch.arange(width, device=h.device)[None, :] - (positions[:, None] - radius)  # (n, width)
    inside = (offset >= 0) & (offset < span)  # (n, width) the slots whose outputs changed
    fresh = local.gather(1, offset.clamp(0, span - 1)[..., None].expand(-1, -1, h.shape[-1]))  # (n, width, m)
    return torch.where(inside[..., None], fresh, h)


# ---- reference: one instance at a time, rebuilt with `collate` --------------------------------------------


def reference_gradient_importance(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """`gradient_importance` as a loop: each instance alone, alpha recomputed and detached, and y's gradient
    by plain autograd through the softmax."""
    out = torch.zeros(shared.encoded.mask.shape, dtype=shared.probs.dtype, device=shared.probs.device)
    for b in range(shared.batch.size):
        rows = instance_rows(shared.batch, b)
        alone = collate(rows, sentences="sentence_starts" in rows).to(shared.alpha.device)
        with torch.enable_grad():
            embedded = model.embed(alone).detach().requires_grad_(True)
            encoded = model.encode(alone, embedded=embedded)
            alpha = model.attend(encoded.h, encoded.mask, encoded.query).detach()
            y = torch.softmax(model.decode(encoded.h, alpha, encoded.query), dim=-1)[0, shared.pred[b]]
            (gradient,) = torch.autograd.grad(y, embedded)
        contributions = (gradient * embedded.detach()).sum(-1)[0]  # (T,) tokens or (S, W) words
        per_item = contributions.reshape(encoded.mask.shape[1], -1).sum(-1)  # (T,)
        out[b, shared.encoded.mask[b]] = per_item[encoded.mask[0]].abs()
    return out


@torch.no_grad()
def reference_leave_one_out(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """`leave_one_out` as a loop: each instance alone, each item deleted from its column lists and the
    instance rebuilt with `collate`, one forward per deletion."""
    out = torch.zeros(shared.encoded.mask.shape, dtype=shared.probs.dtype, device=shared.probs.device)
    for b in range(shared.batch.size):
        rows = instance_rows(shared.batch, b)
        hierarchical = "sentence_starts" in rows
        original = torch.softmax(model(collate(rows, sentences=hierarchical).to(out.device)), dim=-1)[0]
        distances = []
        for t in range(int(shared.encoded.mask[b].sum())):
            shortened = collate(without_item(rows, t), sentences=hierarchical).to(out.device)
            distances.append(tvd(torch.softmax(model(shortened), dim=-1)[0], original))
        if distances:
            out[b, shared.encoded.mask[b]] = torch.stack(distances).to(out.dtype)
    return out


def instance_rows(batch: Batch, b: int) -> dict[str, list]:
    """Instance b as the one-row column lists `collate` takes (markers and padding stripped; for HAN
    `sentence_starts` rebuilt from the sentences)."""
    rows: dict[str, list] = {"instance_id": [int(batch.instance_ids[b])], "label": [int(batch.labels[b])]}
    if batch.sentences is not None:
        s = batch.sentences
        sentences = [s.ids[b, k][s.mask[b, k]].tolist() for k in range(s.ids.shape[1]) if s.doc_mask[b, k]]
        rows["ids"] = [[token for sentence in sentences for token in sentence]]
        rows["sentence_starts"] = [_starts([len(sentence) for sentence in sentences])]
    else:
        rows["ids"] = [batch.ids[b, 1 : int(batch.lengths[b]) - 1].tolist()]
    if batch.query_ids is not None:
        rows["query_ids"] = [batch.query_ids[b, 1 : int(batch.query_lengths[b]) - 1].tolist()]
    return rows


def without_item(rows: dict[str, list], t: int) -> dict[str, list]:
    """One-row column lists with item t deleted: token t, or sentence t when `sentence_starts` is present."""
    ids = rows["ids"][0]
    if "sentence_starts" not in rows:
        return {**rows, "ids": [ids[:t] + ids[t + 1 :]]}
    bounds = [*rows["sentence_starts"][0], len(ids)]
    sentences = [ids[start:stop] for start, stop in itertools.pairwise(bounds)]
    kept = sentences[:t] + sentences[t + 1 :]
    return {**rows, "ids": [[token for sentence in kept for token in sentence]],
            "sentence_starts": [_starts([len(sentence) for sentence in kept])]}


def _starts(sizes: list[int]) -> list[int]:
    """Start offset of each sentence; [0] for an empty document, as the prepared data has it."""
    starts = [0]
    for size in sizes[:-1]:
        starts.append(starts[-1] + size)
    return starts
