"""Reference implementations, the test oracles of the batched measures: one instance at a time, rebuilt with
`collate` (`reference_gradient_importance`, `reference_leave_one_out`), and the one-row column lists they
build on (`instance_rows`, `without_item`)."""

from __future__ import annotations

import itertools

import torch

from gridlab.analyses.common import SharedPass, tvd
from gridlab.data.batching import Batch, collate
from gridlab.models.classifier import AttentionClassifier


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
    if batch.query_ids is not None and batch.query_lengths is not None:  # collate sets both or neither
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
    return {
        **rows,
        "ids": [[token for sentence in kept for token in sentence]],
        "sentence_starts": [_starts([len(sentence) for sentence in kept])],
    }


def _starts(sizes: list[int]) -> list[int]:
    """Start offset of each sentence; [0] for an empty document, as the prepared data has it."""
    starts = [0]
    for size in sizes[:-1]:
        starts.append(starts[-1] + size)
    return starts
