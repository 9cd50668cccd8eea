"""`adversarial_model` (Wiegreffe & Pinter §4; Meister et al. App. C.1, Table 5;
docs/analyses.md#adversarial_model): train an adversary model whose attention diverges from the trained base
model's while its predictions stay close, then measure how far its attention moved (JSD) and what it cost
(test accuracy). Per model, one row per variant.

    >>> rows = run_model(context, data)   # {"variant": ["frozen", "unfrozen"], "jsd_mean": [...], ...}

Variants (Meister App. C.1):
- `frozen`: the adversary starts as a copy of the trained base model's parameters; all of them are trained.
- `unfrozen`: a fresh model of the cell's architecture (`build_model`, i.e. the initialisation the base
  model itself started from, so the two differ by their objective only) trained from scratch.

The objective per instance (W&P §4, minimised):

    L = TVD(y_adv, y_base) - lam * KL(alpha_adv || alpha_base)

with y the output distributions (softmax of the logits) and alpha the attention over the unmasked
positions. Choices:
- **The base side computed once**: the base model is fixed, so its outputs and attention on every train, dev
  and test instance are computed once per model, without gradients (`BaseReference`), and looked up by
  instance id in each adversary batch (bench/adversary.py times it against a base pass per batch).
  For a base with `random` attention this is one draw per instance, the same for every epoch and variant.
- **Means, not sums**: W&P's code summed L over a batch; the batch loss here is the mean over its
  instances, so `lam` and the learning rate mean the same thing at any batch size (docs/analyses.md#adversarial_model).
- **KL in nats over the mask only**, terms with alpha_adv = 0 contribute 0 and alpha_base is clamped at
  1e-12 (sparse projections give exact zeros), so the loss stays finite; it is bounded by ln(1e12) per unit
  of adversarial mass that lands outside the base's support. Against a sparse base that reward dwarfs the
  TVD term: `divergence: jsd` puts the bounded JSD(alpha_adv, alpha_base) in its place (Meister's Table 5
  caption calls JSD "the metric being optimized over"; W&P's literal KL is infinite there).
- **Training as the cell's**: `make_optimizer` (Adam, AMSGrad, weight decay except on attention), gradient
  clipping, batch size and `max_train` from `config.train`; `params.epochs` epochs with the cell's early
  stopping `patience`; the learning rate is the cell's unless `params.lr` sets one (a Transformer trained
  at Meister's 1e-5 barely moves its adversary in 8 epochs).
- **A seeded nudge at the frozen start**: a copy of the base sits at a stationary point of L (TVD = 0 with
  zero subgradient, KL at its minimum), where only float rounding (which differs by thread count and device)
  would move it, and Adam turns rounding into full-size steps. So the frozen adversary's attention
  parameters start at the base's plus `FROZEN_NUDGE` x their own std x N(0, 1), drawn from the cell's seed:
  the way out is the same on every machine. With `lam = 0` the TVD term pulls the adversary back to the base.
- **Selection on dev, never test**: the epoch with the lowest mean dev objective is kept (the start is not
  a candidate: an adversary is always trained for at least one epoch); test gives the reported numbers.
- **Determinism**: each variant seeds torch (dropout, random attention) and its batch order from
  `instance_seed(cell_id, "adversarial_model/<variant>", epoch)`, so a cell gives the same rows on every run.

Columns: `jsd_mean`/`jsd_median` of JSD(alpha_adv, alpha_base) over test instances (natural log, in
[0, ln 2]), `tvd_mean` of the outputs, the adversary's and the base model's test `accuracy`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.adversarial_model import INFO, SCHEMA, SUMMARY_METRICS, AdversarialModelParams
from gridlab.analyses.base import AnalysisContext, ModelAnalysis
from gridlab.analyses.common import EPS, columns_of, instance_seed, jsd, tvd
from gridlab.data.batching import Batch, analysis_order, iterate_batches, sequence_lengths, training_rows
from gridlab.data.prepare import PreparedDataset
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.factory import build_model
from gridlab.training import loop
from gridlab.training.loop import hierarchical, make_optimizer

ID = "adversarial_model"
VERSION = 2  # 2: the base side computed once per instance (rows move at float-rounding level)
EVAL_BATCH_SIZE = 128
FROZEN_NUDGE = 0.01  # relative scale of the seeded noise that moves a frozen adversary off the base model

Context = AnalysisContext[AdversarialModelParams]


def masked_kl(p: torch.Tensor, q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """KL(p || q) over the unmasked positions, natural log: (B, T) -> (B,). 0 log 0 = 0; q clamped at 1e-12."""
    p = p * mask
    terms = p * (torch.log(p.clamp_min(EPS)) - torch.log(q.clamp_min(EPS)))  # finite everywhere: no NaN grads
    return torch.where(p > 0, terms, 0.0).sum(-1)


def objective(
    adv_probs: torch.Tensor,
    base_probs: torch.Tensor,
    adv_alpha: torch.Tensor,
    base_alpha: torch.Tensor,
    mask: torch.Tensor,
    lam: float,
    divergence: str = "kl",
) -> torch.Tensor:
    """W&P's per-instance loss TVD(y_adv, y_base) - lam * KL(alpha_adv || alpha_base): (B,); with
    `divergence="jsd"` the attention term is JSD(alpha_adv, alpha_base) instead (bounded by ln 2)."""
    if divergence == "jsd":
        return tvd(adv_probs, base_probs) - lam * jsd(adv_alpha * mask, base_alpha * mask)
    return tvd(adv_probs, base_probs) - lam * masked_kl(adv_alpha, base_alpha, mask)


def adversary_pass(model: AttentionClassifier, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(probs (B, C), alpha (B, T), mask (B, T)) of a model, with gradients where enabled."""
    encoded = model.encode(batch)
    alpha = model.attend(encoded.h, encoded.mask, encoded.query)
    logits = model.decode(encoded.h, alpha, encoded.query)
    return torch.softmax(logits, dim=-1), alpha, encoded.mask


@dataclass(frozen=True)
class BaseReference:
    """The base model's output distribution and attention on every instance of one split, by instance id."""

    probs: torch.Tensor  # (N, C)
    alpha: torch.Tensor  # (N, W): each instance's attention at its own positions, zero past its end

    def of(self, batch: Batch, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(probs (B, C), alpha (B, width)) of the batch's instances; `width` is the batch's attention width."""
        return self.probs[batch.instance_ids], self.alpha[batch.instance_ids, :width]


References = dict[str, BaseReference]  # by split


def eval_batches(table: pa.Table, model: AttentionClassifier, device: torch.device) -> Iterator[Batch]:
    """A split's rows in evaluation batches, shortest first: batches of similar lengths pad little."""
    by_length = table.take(pa.array(analysis_order(sequence_lengths(table))))
    for batch in iterate_batches(by_length, EVAL_BATCH_SIZE, sentences=hierarchical(model)):
        yield batch.to(device)


@torch.no_grad()
def base_reference(base: AttentionClassifier, table: pa.Table, device: torch.device) -> BaseReference:
    """One pass of the base model over a split's rows."""
    passes = []
    for batch in eval_batches(table, base, device):
        probs, alpha, _ = adversary_pass(base, batch)
        passes.append((batch.instance_ids, probs, alpha))
    size = max((int(ids.max()) + 1 for ids, _, _ in passes), default=0)
    width = max((alpha.shape[-1] for _, _, alpha in passes), default=0)
    classes = passes[0][1].shape[-1] if passes else 0
    all_probs = torch.zeros(size, classes, device=device)
    all_alpha = torch.zeros(size, width, device=device)
    for ids, probs, alpha in passes:
        all_probs[ids] = probs
        all_alpha[ids, : alpha.shape[-1]] = alpha
    return BaseReference(all_probs, all_alpha)


def base_references(context: Context, data: PreparedDataset) -> References:
    """The base side of every split an adversary reads: the training rows the cell trains on, dev and test."""
    base, device, train = context.classifier, context.device, context.cell_config.train
    references = {}
    for split, table in data.splits.items():
        if split == "train":
            chosen = training_rows(table.num_rows, train.max_train, train.subset)
            table = table if chosen is None else table.take(pa.array(chosen))
        if split in ("train", "dev", "test"):
            references[split] = base_reference(base, table, device)
    return references


def batch_objective(
    adversary: AttentionClassifier, reference: BaseReference, batch: Batch, params: AdversarialModelParams
) -> torch.Tensor:
    """(B,) objective of each instance against the base model's (gradient-free) outputs and attention."""
    probs, alpha, mask = adversary_pass(adversary, batch)
    base_probs, base_alpha = reference.of(batch, alpha.shape[-1])
    return objective(probs, base_probs, alpha, base_alpha, mask, params.lam, params.divergence)


def with_params(context: AnalysisContext, params: AdversarialModelParams) -> Context:
    """Another analysis's context as this one's, with `params`: diagnostic_mlp and adversary_tradeoff train
    this analysis's adversaries through it."""
    return AnalysisContext(
        context.cell_id, context.model, context.device, params, context.config, context.initial_embeddings
    )


def initial_adversary(context: Context, data: PreparedDataset, variant: str) -> AttentionClassifier:
    if variant == "frozen":
        adversary = copy.deepcopy(context.classifier)
        generator = torch.Generator().manual_seed(instance_seed(context.cell_id, f"{ID}/frozen/nudge", 0))
        with torch.no_grad():
            for parameter in adversary.attention.parameters():
                noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
                parameter.add_(FROZEN_NUDGE * parameter.std().nan_to_num(1.0) * noise.to(parameter.device))
    else:
        built = build_model(context.cell_config, data, context.initial_embeddings())  # seeded with the cell's seed
        if not isinstance(built, AttentionClassifier):  # the registry applies this analysis to classifiers only
            raise TypeError(f"cell {context.cell_id}: an adversary needs a classifier, not {type(built).__name__}")
        adversary = built
    return adversary.to(context.device)


def train_epoch(
    adversary: AttentionClassifier,
    context: Context,
    data: PreparedDataset,
    optimizer: torch.optim.Optimizer,
    seed: int,
    reference: BaseReference,
) -> float:
    """One pass over the training split minimising the mean objective; returns the mean batch loss."""
    params = context.params
    return loop.train_epoch(
        adversary,
        data.splits["train"],
        context.cell_config.train,
        optimizer,
        context.device,
        seed,
        loss_of=lambda model, batch: batch_objective(model, reference, batch, params).mean(),
        what="adversary",
    )


@torch.no_grad()
def dev_objective(
    adversary: AttentionClassifier, context: Context, data: PreparedDataset, reference: BaseReference
) -> float:
    """Mean objective over the dev split (the selection criterion, lower is better)."""
    adversary.eval()
    total, n = 0.0, 0
    for batch in eval_batches(data.splits["dev"], adversary, context.device):
        values = batch_objective(adversary, reference, batch, context.params)
        total += values.double().sum().item()
        n += batch.size
    return total / max(n, 1)


def fit_adversary(
    context: Context, data: PreparedDataset, variant: str, references: References
) -> tuple[AttentionClassifier, int, int]:
    """Train one variant; returns the adversary with its best dev weights, epochs trained, best epoch."""
    analysis = f"{ID}/{variant}"
    adversary = initial_adversary(context, data, variant)
    torch.manual_seed(instance_seed(context.cell_id, analysis, 0))  # dropout and random attention draws
    train = context.cell_config.train
    if context.params.lr is not None:
        train = train.model_copy(update={"lr": context.params.lr})
    optimizer = make_optimizer(adversary, train)
    best, best_epoch, best_state, waited, epoch = float("inf"), 0, None, 0, 0
    while epoch < context.params.epochs and waited < train.patience:
        epoch += 1
        seed = instance_seed(context.cell_id, analysis, epoch)
        train_epoch(adversary, context, data, optimizer, seed, references["train"])
        value = dev_objective(adversary, context, data, references["dev"])
        if value < best:
            best, best_epoch, waited = value, epoch, 0
            best_state = copy.deepcopy(adversary.state_dict())
        else:
            waited += 1
    if best_state is not None:  # None only if every dev objective was NaN
        adversary.load_state_dict(best_state)
    return adversary.eval(), epoch, best_epoch


@torch.no_grad()
def compare_on_test(
    adversary: AttentionClassifier, context: Context, data: PreparedDataset, reference: BaseReference
) -> dict[str, float | None]:
    """Attention JSD, output TVD and accuracies of adversary and base over the test split."""
    jsds, tvds, hits, base_hits = [np.zeros(0)], [np.zeros(0)], 0, 0
    for batch in eval_batches(data.splits["test"], adversary, context.device):
        probs, alpha, _ = adversary_pass(adversary, batch)
        base_probs, base_alpha = reference.of(batch, alpha.shape[-1])
        jsds.append(jsd(alpha.double(), base_alpha.double()).cpu().numpy())  # (B,)
        tvds.append(tvd(probs.double(), base_probs.double()).cpu().numpy())  # (B,)
        hits += int((probs.argmax(-1) == batch.labels).sum())
        base_hits += int((base_probs.argmax(-1) == batch.labels).sum())
    jsd_all, tvd_all = np.concatenate(jsds), np.concatenate(tvds)
    n = len(jsd_all)
    if n == 0:  # an empty test split: nulls, never NaN
        return dict.fromkeys(("jsd_mean", "jsd_median", "tvd_mean", "accuracy", "base_accuracy"))
    return {
        "jsd_mean": float(jsd_all.mean()),
        "jsd_median": float(np.median(jsd_all)),
        "tvd_mean": float(tvd_all.mean()),
        "accuracy": hits / n,
        "base_accuracy": base_hits / n,
    }


def run_model(context: Context, data: PreparedDataset) -> dict[str, list]:
    rows = []
    references = base_references(context, data)
    for variant in context.params.variants:
        adversary, epochs_trained, best_epoch = fit_adversary(context, data, variant, references)
        scores = compare_on_test(adversary, context, data, references["test"])
        accuracy, base_accuracy = scores["accuracy"], scores["base_accuracy"]  # both None for an empty test split
        delta = None if accuracy is None or base_accuracy is None else accuracy - base_accuracy
        rows.append(
            {
                "variant": variant,
                **scores,
                "accuracy_delta": delta,
                "epochs_trained": epochs_trained,
                "best_epoch": best_epoch,
                "instances": data.splits["test"].num_rows,
            }
        )
    return columns_of(rows, SCHEMA)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    return {
        f"{row['variant']}_{m}": float(row[m])
        for row in rows.to_dict("records")
        for m in SUMMARY_METRICS
        if row[m] is not None and not pd.isna(row[m])
    }


class AdversarialModel(ModelAnalysis[AdversarialModelParams]):
    info = INFO
    version = VERSION
    run_model, summarize = staticmethod(run_model), staticmethod(summarize)
