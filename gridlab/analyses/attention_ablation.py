"""`attention_ablation` (Vashishth et al. §4.1, Tables 1-3; docs/analyses.md#attention_ablation): a model's
test accuracy (BLEU for translation) with its attention replaced at inference by uniform weights, random
U(0, 1) weights (normalised), or a permutation of its own weights. Per model, not per instance: one row per mode, the
learned attention included as the baseline.

    >>> rows = run_model(context, data)     # {"mode": [...], "metric": [...], "value": [...], "delta": [...]}

Cells trained with uniform or random attention (`attention_mode`) give Vashishth's "Train+Infer" rows by
their own `learned` row; a learned model's `uniform`/`random` rows are the "Infer" ones. Random weights and
permutations are drawn per (cell, instance), so the numbers do not depend on batching.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.base import AnalysisContext, ModelAnalysis
from gridlab.analyses.common import decode_many, forward_once, instance_generator, instance_seed
from gridlab.analyses.permutation import permute, unmasked_first
from gridlab.catalog.analyses import ANALYSES, AttentionAblationParams
from gridlab.data.batching import iterate_batches
from gridlab.data.prepare import PreparedDataset
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.seq2seq import Seq2Seq, bleu, permute_within_mask

ID = "attention_ablation"
VERSION = 1
SCHEMA = pa.schema(
    [
        ("mode", pa.string()),
        ("metric", pa.string()),
        ("value", pa.float64()),
        ("delta", pa.float64()),  # value - the learned attention's value
        ("instances", pa.int64()),
    ]
)
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


@torch.no_grad()
def _classifier_accuracies(
    context: AnalysisContext, model: AttentionClassifier, data: PreparedDataset, modes: list[str]
) -> dict[str, float]:
    correct = dict.fromkeys(modes, 0)
    total = 0
    hierarchical = hasattr(model, "word_attention")
    for batch in iterate_batches(data.splits["test"], BATCH_SIZE, sentences=hierarchical):
        shared = forward_once(model, batch.to(context.device))
        alphas = torch.stack([_replaced(context, shared, m) for m in modes], dim=1)  # (B, modes, T)
        predictions = decode_many(model, shared, alphas).argmax(-1)  # (B, modes)
        hits = (predictions == shared.batch.labels.unsqueeze(-1)).sum(0).tolist()
        for mode, hit in zip(modes, hits):
            correct[mode] += hit
        total += batch.size
    return {mode: correct[mode] / max(total, 1) for mode in modes}


def _translation_bleus(
    context: AnalysisContext, model: Seq2Seq, data: PreparedDataset, modes: list[str]
) -> dict[str, float]:
    """Greedy-decoding BLEU per mode; the draws of random and permuted weights follow seeds of the cell."""
    target_vocab = data.target_vocab
    if target_vocab is None:
        raise ValueError(f"cell {context.cell_id}: a translation model's dataset needs a target vocabulary")
    scores = {}
    for mode in modes:
        seed = instance_seed(context.cell_id, f"{ID}/{mode}", 0)
        generator = torch.Generator(device="cpu").manual_seed(seed)
        torch.manual_seed(seed)  # random mode draws from the global generator inside the model
        model.attention.mode = mode if mode in ("uniform", "random") else "learned"
        model.alpha_override = (lambda a, m: permute_within_mask(a, m, generator)) if mode == "permute" else None
        try:
            scores[mode] = bleu(model, data.splits["test"], target_vocab)
        finally:
            model.attention.mode, model.alpha_override = "learned", None
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
    return {f"{row['mode']}_{row['metric']}": float(row["value"]) for row in rows.to_dict("records")}


def reference_accuracy(context: AnalysisContext, data: PreparedDataset, mode: str) -> float:
    """One instance at a time, one decode each: the oracle for the batched accuracies."""
    model = context.classifier
    correct = total = 0
    hierarchical = hasattr(model, "word_attention")
    with torch.no_grad():
        for batch in iterate_batches(data.splits["test"], 1, sentences=hierarchical):
            shared = forward_once(model, batch.to(context.device))
            alpha = _replaced(context, shared, mode)
            logits = model.decode(shared.encoded.h, alpha, shared.encoded.query)
            correct += int(logits.argmax(-1).item() == batch.labels.item())
            total += 1
    return correct / max(total, 1)


class AttentionAblation(ModelAnalysis[AttentionAblationParams]):
    info = ANALYSES[ID]
    schema, version = SCHEMA, VERSION
    run_model, summarize = staticmethod(run_model), staticmethod(summarize)
