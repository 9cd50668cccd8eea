"""`attention_ablation` (Vashishth et al. §4.1, Tables 1-3; docs/analyses.md#attention_ablation): a model's
test accuracy (BLEU for translation) with its attention replaced at inference by uniform weights, random
U(0, 1) weights (normalised), or a permutation of its own weights. Per model, not per instance: one row per mode, the
learned attention included as the baseline.

    >>> rows = run_model(context, data)     # {"mode": [...], "metric": [...], "value": [...], "delta": [...]}

Cells trained with uniform or random attention (`attention_mode`) give Vashishth's "Train+Infer" rows by
their own `learned` row; a learned model's `uniform`/`random` rows are the "Infer" ones. Random weights and
permutations are drawn per (cell, instance), so the numbers do not depend on batching.

A HAN model's attention is replaced at both levels, as Vashishth's §3.1 computes it at both: each
sentence's word weights (uniform over its words, U(0, 1) normalised, or permuted within the sentence; the
sentence vectors, and so the sentence encoder's outputs, are recomputed from them), then the sentence
weights over the recomputed sentences; with `han_levels: sentence`, the sentence weights only. Its
Train+Infer cells need `model.word_attention_mode: as_cell`.
"""

from __future__ import annotations

import pandas as pd
import torch

from gridlab.analyses.attention_ablation import INFO, AttentionAblationParams
from gridlab.analyses.base import AnalysisContext, ModelAnalysis
from gridlab.analyses.common import (
    decode_many,
    forward_once,
    instance_generator,
    instance_seed,
    measured,
    pass_from,
)
from gridlab.analyses.permutation.compute import permute, unmasked_first
from gridlab.data.batching import Batch, iterate_batches
from gridlab.data.prepare import PreparedDataset
from gridlab.models.classifier import AttentionClassifier, HierarchicalClassifier, WordStates
from gridlab.models.seq2seq import Seq2Seq, bleu, permute_within_mask

ID = "attention_ablation"
VERSION = 3  # 2: a HAN model's word-level attention is replaced too; 3: a translation cell trained with uniform
# or random attention keeps it in its `learned` row (version 2 switched it to its untrained learned scores)
BATCH_SIZE = 64


def _instance_draws(context: AnalysisContext, shared, kind: str, padding: float) -> torch.Tensor:
    """(B, T) uniforms from each instance's own generator, in compact token order; `padding` after them."""
    mask = shared.encoded.mask
    draws = torch.full(mask.shape, padding, dtype=torch.float64)
    for row, (instance_id, length) in enumerate(zip(shared.batch.instance_ids.tolist(), shared.lengths.tolist())):
        generator = instance_generator(context.cell_id, f"{ID}/{kind}", instance_id)
        draws[row, :length] = torch.rand(length, generator=generator, dtype=torch.float64)
    return draws.to(mask.device)


def _replaced(context: AnalysisContext, shared, mode: str) -> torch.Tensor:
    """(B, T) attention for `mode`, on the simplex over each row's tokens."""
    mask = shared.encoded.mask
    if mode == "learned":
        return shared.alpha
    if mode == "uniform":
        return mask / mask.sum(-1, keepdim=True)
    if mode == "random":
        compact = _instance_draws(context, shared, mode, padding=0.0).to(shared.alpha.dtype)  # (B, T)
        weights = torch.zeros_like(shared.alpha).scatter_(-1, unmasked_first(mask), compact)  # at token positions
        return weights / weights.sum(-1, keepdim=True)
    noise = _instance_draws(context, shared, mode, padding=2.0)  # padding sorts after every token
    return permute(shared.alpha, mask, noise.unsqueeze(1))[:, 0]  # "permute": (B, T)


def _word_draws(context: AnalysisContext, batch: Batch, mask: torch.Tensor, kind: str, padding: float) -> torch.Tensor:
    """(B, S, W) uniforms at each instance's words, drawn from its own generator in reading order (sentence by
    sentence), so they never depend on the batch's padding; `padding` elsewhere."""
    draws = torch.full(mask.shape, padding, dtype=torch.float64)
    for row, instance_id in enumerate(batch.instance_ids.tolist()):
        generator = instance_generator(context.cell_id, f"{ID}/{kind}/words", instance_id)
        draws[row][mask[row].cpu()] = torch.rand(int(mask[row].sum()), generator=generator, dtype=torch.float64)
    return draws.to(mask.device)


def _word_weights(context: AnalysisContext, batch: Batch, mode: str, words: WordStates) -> torch.Tensor:
    """A HAN's word weights (B, S, W) replaced by `mode` on each sentence's words (a sentence without words
    keeps what it had)."""
    alpha, mask = words.alpha, words.mask  # (B, S, W)
    has_words = mask.any(-1, keepdim=True)  # (B, S, 1)
    if mode == "uniform":
        weights = mask / mask.sum(-1, keepdim=True).clamp(min=1)
    elif mode == "random":
        draws = _word_draws(context, batch, mask, mode, padding=0.0).to(alpha.dtype)
        weights = draws / draws.sum(-1, keepdim=True).clamp(min=torch.finfo(alpha.dtype).tiny)
    else:  # permute: within each sentence
        b, s, w = mask.shape
        noise = _word_draws(context, batch, mask, mode, padding=2.0).reshape(b * s, 1, w)
        weights = permute(alpha.reshape(b * s, w), mask.reshape(b * s, w), noise)[:, 0].reshape(b, s, w)
    return torch.where(has_words, weights.to(alpha.dtype), alpha)


def _predictions(context: AnalysisContext, model: AttentionClassifier, batch: Batch, modes: list[str]) -> torch.Tensor:
    """(B, modes) predicted classes with the attention of each mode. A HAN runs its word level once and its
    sentence level once per mode, on the sentence vectors that mode's word weights make."""
    if not isinstance(model, HierarchicalClassifier):
        shared = forward_once(model, batch)
        alphas = torch.stack([_replaced(context, shared, m) for m in modes], dim=1)  # (B, modes, T)
        return decode_many(model, shared, alphas).argmax(-1)
    words = model.encode_words(batch)
    keep_words = context.params.han_levels == "sentence"
    columns = []
    for mode in modes:
        word_alpha = words.alpha if mode == "learned" or keep_words else _word_weights(context, batch, mode, words)
        replaced = pass_from(model, batch, model.encode_sentences(batch, words, word_alpha))
        alpha = _replaced(context, replaced, mode)
        columns.append(model.decode(replaced.encoded.h, alpha, None).argmax(-1))
    return torch.stack(columns, dim=1)


@torch.no_grad()
def _classifier_accuracies(
    context: AnalysisContext, model: AttentionClassifier, data: PreparedDataset, modes: list[str]
) -> dict[str, float]:
    correct = dict.fromkeys(modes, 0)
    total = 0
    hierarchical = hasattr(model, "word_attention")
    for batch in iterate_batches(data.splits["test"], BATCH_SIZE, sentences=hierarchical):
        batch = batch.to(context.device)
        predictions = _predictions(context, model, batch, modes)  # (B, modes)
        hits = (predictions == batch.labels.unsqueeze(-1)).sum(0).tolist()
        for mode, hit in zip(modes, hits):
            correct[mode] += hit
        total += batch.size
    return {mode: correct[mode] / max(total, 1) for mode in modes}


def _translation_bleus(
    context: AnalysisContext, model: Seq2Seq, data: PreparedDataset, modes: list[str]
) -> dict[str, float]:
    """BLEU per mode, decoded greedily or by beam search (`beam_size`); the draws of random and permuted weights
    follow seeds of the cell. `learned` is the model's own attention, as it was trained (a Train+Infer cell's
    uniform or random weights), and `permute` shuffles those; the model gets its own mode back afterwards."""
    target_vocab = data.target_vocab
    if target_vocab is None:
        raise ValueError(f"cell {context.cell_id}: a translation model's dataset needs a target vocabulary")
    own = model.attention.mode
    scores = {}
    for mode in modes:
        seed = instance_seed(context.cell_id, f"{ID}/{mode}", 0)
        generator = torch.Generator(device="cpu").manual_seed(seed)
        torch.manual_seed(seed)  # random mode draws from the global generator inside the model
        model.attention.mode = mode if mode in ("uniform", "random") else own
        model.alpha_override = (lambda a, m: permute_within_mask(a, m, generator)) if mode == "permute" else None
        try:
            scores[mode] = bleu(model, data.splits["test"], target_vocab, beam_size=context.params.beam_size)
        finally:
            model.attention.mode, model.alpha_override = own, None
    return scores


def run_model(context: AnalysisContext[AttentionAblationParams], data: PreparedDataset) -> dict[str, list]:
    modes = ["learned", *context.params.modes]
    model = context.model
    if isinstance(model, Seq2Seq):
        values, metric = _translation_bleus(context, model, data, modes), "bleu"
    else:
        values, metric = _classifier_accuracies(context, model, data, modes), "accuracy"
    instances = data.splits["test"].num_rows
    return {
        "mode": modes,
        "metric": [metric] * len(modes),
        "value": [values[m] for m in modes],
        "delta": [values[m] - values["learned"] for m in modes],
        "instances": [instances] * len(modes),
    }


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    return measured({f"{row['mode']}_{row['metric']}": float(row["value"]) for row in rows.to_dict("records")})


def reference_accuracy(context: AnalysisContext, data: PreparedDataset, mode: str) -> float:
    """One instance at a time, one decode each: the oracle for the batched accuracies."""
    model = context.classifier
    correct = total = 0
    hierarchical = hasattr(model, "word_attention")
    with torch.no_grad():
        for batch in iterate_batches(data.splits["test"], 1, sentences=hierarchical):
            batch = batch.to(context.device)
            correct += int(_predictions(context, model, batch, [mode])[0, 0].item() == batch.labels.item())
            total += 1
    return correct / max(total, 1)


class AttentionAblation(ModelAnalysis[AttentionAblationParams]):
    info = INFO
    version = VERSION
    run_model, summarize = staticmethod(run_model), staticmethod(summarize)
