"""`diagnostic_mlp` (Wiegreffe & Pinter §4.4, "guiding simpler models"; docs/analyses.md#diagnostic_mlp):
does a trained model's attention carry information a non-contextual model can use? A per-token MLP over
fresh embeddings is trained once per variant, its token vectors pooled with different weights; if the base
model's frozen attention helps the MLP beyond uniform pooling, the attention marks tokens that matter, and if
an adversary's attention (which gives the model's predictions too) helps it less, the adversary's attention does
not carry what the model's does. Per model, one row per variant.

    >>> rows = run_model(context, data)   # {"variant": ["uniform", "learned", "base", "adversary"], ...}

The MLP (W&P §4.4): `e_t = E[x_t]` (a fresh embedding of the dataset's vocabulary, `model.embedding_dim`
wide, N(0, model.embedding_init_std^2) like the models', `<pad>` at zero), `h_t = ReLU(W e_t + b)` with
`params.hidden` units, `c = sum_t alpha_t h_t` over the unmasked positions, logits `= W_o c + b_o`. No
token sees another: whatever the pooled vector knows beyond a bag of words comes from alpha. Variants:
- `uniform`: alpha_t = 1/T over the unmasked positions.
- `learned`: the MLP's own additive attention `v^T tanh(W h_t + b)`, softmax over the unmasked positions,
  trained jointly (the same `Attention` layer the models use).
- `base`: the trained base model's attention on the same instance, computed without gradients by
  `forward_once` and imposed (frozen).
- `adversary`: likewise the attention of W&P's model-consistent adversary (§4): a fresh model of the cell's
  architecture trained to give the base model's outputs while its attention moves away (TVD - lam * KL,
  `params.adversary_lam`). It is `adversarial_model`'s `unfrozen` variant, trained by the same function with
  the same seeds, so with the same lam (and that analysis's default epochs, learning rate and divergence) it
  is the adversary whose JSD and accuracy `adversarial_model` reports.

Choices:
- **Flat models only** (the registry's `applies`): the MLP weighs the positions of the batch's `mask`,
  which for a flat model is exactly the set the base model attends over (the tokens, not `<sos>`/`<eos>`/
  padding), so alpha lines up token for token. Pair models attend over the premise given a query and HAN
  models over sentences; an MLP over premise tokens or words would not be W&P's diagnostic.
- **Training**: Adam at `train.lr` (no weight decay), cross-entropy, batch size and `max_train` from
  `config.train`, `params.epochs` epochs; the epoch with the best dev accuracy is kept (never test), and
  test accuracy and macro F1 (W&P report F1) are computed once on it.
- **Macro F1** averages the per-class F1 over the classes that occur in the test labels or predictions
  (scikit-learn's default for `average="macro"`).
- **Determinism**: each variant seeds torch (initialisation, random base attention) and its batch order
  from `instance_seed(cell_id, "diagnostic_mlp/<variant>", epoch)`.
- **An empty test split** gives null accuracy and F1, never 0.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import torch
from torch import nn

from gridlab.analyses.adversarial_model import AdversarialModelParams
from gridlab.analyses.adversarial_model.compute import base_references, fit_adversary, with_params
from gridlab.analyses.base import AnalysisContext, ModelAnalysis
from gridlab.analyses.common import columns_of, forward_once, instance_seed, measured
from gridlab.analyses.diagnostic_mlp import INFO, SCHEMA, SUMMARY_METRICS, DiagnosticMlpParams
from gridlab.data.batching import Batch, iterate_batches
from gridlab.data.prepare import PreparedDataset
from gridlab.data.vocab import PAD_ID
from gridlab.models.attention import Attention, AttentionSpec
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.projections import uniform
from gridlab.training import loop

ID = "diagnostic_mlp"
VERSION = 1  # the `adversary` variant (added later) is a new row: the other variants' rows are unchanged
EVAL_BATCH_SIZE = 128

Context = AnalysisContext[DiagnosticMlpParams]


class DiagnosticMlp(nn.Module):
    """Embedding -> per-token Linear + ReLU -> alpha-weighted mean over the mask -> Linear."""

    def __init__(self, vocab: int, embedding_dim: int, hidden: int, classes: int, init_std: float, learned: bool):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embedding_dim, padding_idx=PAD_ID)
        with torch.no_grad():
            nn.init.normal_(self.embedding.weight, std=init_std)
            self.embedding.weight[PAD_ID] = 0.0
        self.mlp = nn.Sequential(nn.Linear(embedding_dim, hidden), nn.ReLU())
        self.attention = Attention(AttentionSpec("additive", "softmax"), hidden, None, hidden) if learned else None
        self.classifier = nn.Linear(hidden, classes)

    def tokens(self, ids: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.embedding(ids))  # (B, T, hidden)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) ids and mask [and imposed (B, T) alpha] -> (B, C) logits; alpha None = own attention."""
        h = self.tokens(ids)
        if alpha is None:
            if self.attention is None:
                raise ValueError("an MLP built without its own attention (`learned=False`) needs an imposed alpha")
            alpha = self.attention(h, mask)  # (B, T), 0 off the mask
        context = torch.einsum("bt,bth->bh", alpha.to(h.dtype), h)  # (B, hidden)
        return self.classifier(context)


def imposed_alpha(variant: str, guide: AttentionClassifier | None, batch: Batch) -> torch.Tensor | None:
    """(B, T) weights over `batch.mask` for the variant: uniform, or the frozen attention of its guide (the base
    model or the adversary; flat: attention over exactly batch.mask); None for `learned` (the MLP attends itself)."""
    if variant == "uniform":
        return uniform(batch.mask)
    if guide is None:
        return None
    with torch.no_grad():
        return forward_once(guide, batch).alpha


def guide_of(context: Context, data: PreparedDataset, variant: str) -> AttentionClassifier | None:
    """The model whose attention the variant imposes: the base model, a trained adversary, or none."""
    if variant == "base":
        return context.classifier
    if variant == "adversary":
        return trained_adversary(context, data)
    return None


def trained_adversary(context: Context, data: PreparedDataset) -> AttentionClassifier:
    """W&P's model-consistent adversary of the base model: `adversarial_model`'s `unfrozen` variant at
    `params.adversary_lam`, the other settings that analysis's defaults."""
    adversarial = with_params(context, AdversarialModelParams(variants=["unfrozen"], lam=context.params.adversary_lam))
    adversary, _, _ = fit_adversary(adversarial, data, "unfrozen", base_references(adversarial, data))
    return adversary


def build_mlp(context: Context, data: PreparedDataset, variant: str) -> DiagnosticMlp:
    m = context.cell_config.model
    mlp = DiagnosticMlp(
        len(data.vocab),
        m.embedding_dim,
        context.params.hidden,
        len(data.label_names),
        m.embedding_init_std,
        learned=variant == "learned",
    )
    return mlp.to(context.device)


def logits_of(mlp: DiagnosticMlp, variant: str, guide: AttentionClassifier | None, batch: Batch) -> torch.Tensor:
    return mlp(batch.ids, batch.mask, imposed_alpha(variant, guide, batch))


def train_epoch(
    mlp: DiagnosticMlp,
    context: Context,
    data: PreparedDataset,
    pooling: tuple[str, AttentionClassifier | None],
    optimizer: torch.optim.Optimizer,
    seed: int,
) -> float:
    """One pass of cross-entropy training, without gradient clipping (a small model, W&P clip nothing).
    `pooling` is the variant and its guide (`guide_of`)."""
    train = context.cell_config.train.model_copy(update={"clip_norm": None})
    return loop.train_epoch(
        mlp,
        data.splits["train"],
        train,
        optimizer,
        context.device,
        seed,
        loss_of=lambda model, batch: nn.functional.cross_entropy(logits_of(model, *pooling, batch), batch.labels),
        what="diagnostic MLP",
    )


@torch.no_grad()
def predict(
    mlp: DiagnosticMlp,
    context: Context,
    data: PreparedDataset,
    pooling: tuple[str, AttentionClassifier | None],
    split: str,
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, predictions) over a split."""
    mlp.eval()
    labels, predictions = [], []
    for batch in iterate_batches(data.splits[split], EVAL_BATCH_SIZE):
        batch = batch.to(context.device)
        predictions.append(logits_of(mlp, *pooling, batch).argmax(-1).cpu().numpy())
        labels.append(batch.labels.cpu().numpy())
    if not labels:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(labels), np.concatenate(predictions)


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
    """The share predicted right; NaN for no instances (nothing was measured)."""
    return float((labels == predictions).mean()) if len(labels) else math.nan


def f1_macro(labels: np.ndarray, predictions: np.ndarray) -> float:
    """Mean per-class F1 over the classes present in labels or predictions (sklearn's macro average); NaN for
    no instances."""
    classes = np.union1d(labels, predictions)
    if not len(classes):
        return math.nan
    scores = []
    for cls in classes:
        tp = np.sum((predictions == cls) & (labels == cls))
        wrong = np.sum((predictions == cls) != (labels == cls))  # false positives + false negatives
        scores.append(2 * tp / (2 * tp + wrong))
    return float(np.mean(scores))


def fit_mlp(
    context: Context, data: PreparedDataset, pooling: tuple[str, AttentionClassifier | None]
) -> tuple[DiagnosticMlp, float, int]:
    """Train one variant; returns the MLP at its best dev epoch (the first where dev accuracy is undefined),
    that dev accuracy and the epoch."""
    variant = pooling[0]
    analysis = f"{ID}/{variant}"
    torch.manual_seed(instance_seed(context.cell_id, analysis, 0))  # initialisation (and random base attention)
    mlp = build_mlp(context, data, variant)
    optimizer = torch.optim.Adam(mlp.parameters(), lr=context.cell_config.train.lr)
    best, best_epoch, best_state = math.nan, 0, copy.deepcopy(mlp.state_dict())
    for epoch in range(1, context.params.epochs + 1):
        train_epoch(mlp, context, data, pooling, optimizer, instance_seed(context.cell_id, analysis, epoch))
        dev = accuracy(*predict(mlp, context, data, pooling, "dev"))
        if best_epoch == 0 or dev > best:
            best, best_epoch, best_state = dev, epoch, copy.deepcopy(mlp.state_dict())
    mlp.load_state_dict(best_state)
    return mlp.eval(), best, best_epoch


def null_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


def run_model(context: Context, data: PreparedDataset) -> dict[str, list]:
    rows = []
    for variant in context.params.variants:
        pooling = (variant, guide_of(context, data, variant))
        mlp, dev_accuracy, best_epoch = fit_mlp(context, data, pooling)
        labels, predictions = predict(mlp, context, data, pooling, "test")
        rows.append(
            {
                "variant": variant,
                "accuracy": null_if_nan(accuracy(labels, predictions)),
                "f1_macro": null_if_nan(f1_macro(labels, predictions)),
                "dev_accuracy": null_if_nan(dev_accuracy),
                "best_epoch": best_epoch,
                "instances": data.splits["test"].num_rows,
            }
        )
    return columns_of(rows, SCHEMA)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    return measured(
        {
            f"{row['variant']}_{metric}": float(row[metric])
            for row in rows.to_dict("records")
            for metric in SUMMARY_METRICS
        }
    )


class DiagnosticMlpAnalysis(ModelAnalysis[DiagnosticMlpParams]):
    info = INFO
    version = VERSION
    run_model, summarize = staticmethod(run_model), staticmethod(summarize)
