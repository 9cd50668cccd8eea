"""Training one cell's model in plain torch: the loop that the Ray Tune trainable wraps.

    >>> result = fit(model, data, config, device=torch.device("cpu"))
    >>> result.best_epoch, result.history[-1].dev["accuracy"]

Adam (AMSGrad by default; AdamW with `train.optimizer: adamw`) with weight decay on every parameter except
attention's (J&W), a constant learning rate or BERT's linear warm-up and decay (`train.warmup`), gradient-norm
clipping, early stopping with `patience` on the dev selection metric (`train.selection_metric`: accuracy
by default or ROC AUC, as J&W selected their binary classifiers; BLEU of greedy translations for the
translation model), the best epoch's weights kept. Training batches are shuffled, or of similar lengths
(`train.batching: bucketed`, J&W). The model is selected on dev only; test metrics are computed once, by
the caller, on the selected weights. A NaN or infinite loss stops training with `NonFiniteLoss` rather
than training on garbage.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from gridlab.config.schema import CellConfig, TrainConfig
from gridlab.data.batching import Batch, iterate_batches, training_rows
from gridlab.data.prepare import PreparedDataset
from gridlab.errors import GridlabError
from gridlab.models.seq2seq import Seq2Seq, bleu


class NonFiniteLoss(GridlabError):
    """The training loss became NaN or infinite."""


@dataclass(frozen=True)
class EpochRecord:
    epoch: int
    train_loss: float
    dev: dict[str, float]


@dataclass
class FitResult:
    best_state: dict[str, torch.Tensor]
    best_epoch: int
    history: list[EpochRecord] = field(default_factory=list)


def hierarchical(model: nn.Module) -> bool:
    return hasattr(model, "word_attention")


class UndefinedSelection(GridlabError):
    """The dev split cannot rank epochs by the chosen metric (ROC AUC of a dev split with one class)."""


def selection_metric(model: nn.Module, train: TrainConfig | None = None) -> str:
    """The dev metric that picks the best epoch (higher is better): BLEU for translation, else the
    grid's `train.selection_metric` (accuracy when unset)."""
    if isinstance(model, Seq2Seq):
        return "bleu"
    return (train.selection_metric if train is not None else None) or "accuracy"


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """ROC AUC of (N, C) class scores, or None where it is undefined (fewer than two classes in `labels`).

    Binary: AUC of the positive class's score, as J&W's `roc_auc_score(target, p1)`. More classes: the
    macro average of one-vs-rest AUCs over the classes that occur in `labels`; a class absent from the split
    has no positive instance, so its AUC does not exist and it is left out of the average rather than
    counted as 0.5 (on a split where every class occurs this is sklearn's `multi_class="ovr"` macro AUC).
    Scores only need the order of each class's probability: the caller passes log-probabilities, which
    stay distinct where float32 probabilities round to 1.0 and would tie."""
    from sklearn.metrics import roc_auc_score  # imported here: sklearn costs a second and most callers skip it

    present = np.unique(labels)
    if len(present) < 2:
        return None
    if scores.shape[1] == 2:
        return float(roc_auc_score(labels == 1, scores[:, 1] - scores[:, 0]))
    return float(np.mean([roc_auc_score(labels == c, scores[:, c]) for c in present]))


def batch_loss(model: nn.Module, batch, reduction: str = "mean") -> torch.Tensor:
    if isinstance(model, Seq2Seq):
        return model.loss(batch)
    return nn.functional.cross_entropy(model(batch), batch.labels, reduction=reduction)


def make_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.Optimizer:
    """Adam with the attention parameters in a group of their own: their learning rate is scaled
    (`attention_lr_scale`) and they escape weight decay unless `attention_weight_decay` (J&W's pair code)."""
    names = getattr(model, "attention_parameter_names", None)
    attention_names: set[str] = names() if callable(names) else set()
    rest = [p for n, p in model.named_parameters() if n not in attention_names]
    attention = [p for n, p in model.named_parameters() if n in attention_names]
    groups = [
        {"params": rest, "weight_decay": train.weight_decay},
        {
            "params": attention,
            "weight_decay": train.weight_decay if train.attention_weight_decay else 0.0,
            "lr": train.lr * train.attention_lr_scale,
        },
    ]
    optimizer = torch.optim.AdamW if train.optimizer == "adamw" else torch.optim.Adam
    return optimizer(groups, lr=train.lr, amsgrad=train.amsgrad)


def epoch_batches(table: pa.Table, train: TrainConfig) -> int:
    """Optimiser steps per epoch: one per batch of the training rows the cell uses."""
    chosen = training_rows(table.num_rows, train.max_train, train.subset)
    rows = table.num_rows if chosen is None else len(chosen)
    return -(-rows // train.batch_size)


def make_schedule(
    optimizer: torch.optim.Optimizer, train: TrainConfig, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR | None:
    """None for a constant rate; with `train.warmup` = f, every group's rate is scaled by s / w over the first
    w = ceil(f x total) steps, then by (total - s) / (total - w) down to 0 at the last step (BERT's schedule:
    the new output layer's first large gradients never reach the pretrained weights at the full rate)."""
    if train.warmup is None:
        return None
    total = max(1, train.epochs * steps_per_epoch)
    warm = math.ceil(train.warmup * total)

    def scale(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, scale)


M = TypeVar("M", bound=nn.Module)


def train_epoch(
    model: M,
    table: pa.Table,
    train: TrainConfig,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    epoch_seed: int,
    loss_of: Callable[[M, Batch], torch.Tensor] = batch_loss,
    what: str = "training",
    schedule: torch.optim.lr_scheduler.LambdaLR | None = None,
) -> float:
    """One pass in shuffled (or length-bucketed, `train.batching`) batches drawn from `epoch_seed`,
    minimising `loss_of(model, batch)` (the task loss; the analyses that train models pass their own
    objective); returns the mean batch loss."""
    model.train()
    losses: list[float] = []
    chosen = training_rows(table.num_rows, train.max_train, train.subset)
    for batch in iterate_batches(
        table if chosen is None else table.take(pa.array(chosen)),
        train.batch_size,
        shuffle=True,
        seed=epoch_seed,
        sentences=hierarchical(model),
        bucketed=train.batching == "bucketed",
    ):
        batch = batch.to(device)
        loss = loss_of(model, batch)
        if not torch.isfinite(loss):
            raise NonFiniteLoss(
                f"{what} loss became {loss.item()} at batch {len(losses) + 1} of the epoch "
                f"(train.lr {train.lr:g}: a smaller one, or train.clip_norm, may keep it finite)"
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if train.clip_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), train.clip_norm)
        optimizer.step()
        if schedule is not None:
            schedule.step()
        losses.append(loss.item())
    return float(np.mean(losses)) if losses else float("nan")


@torch.no_grad()
def evaluate(
    model: nn.Module, table: pa.Table, device: torch.device, batch_size: int = 128, target_vocab=None
) -> dict[str, float]:
    """Accuracy, mean cross-entropy and ROC AUC (left out where the split has one class) over a split;
    BLEU and token-level loss for translation."""
    model.eval()
    if isinstance(model, Seq2Seq):
        losses = [batch_loss(model, b.to(device)).item() for b in iterate_batches(table, batch_size)]
        return {"bleu": bleu(model, table, target_vocab, batch_size=batch_size), "loss": float(np.mean(losses))}
    correct, total, loss = 0, 0, 0.0
    scores, labels = [], []
    for batch in iterate_batches(table, batch_size, sentences=hierarchical(model)):
        batch = batch.to(device)
        logits = model(batch)
        loss += nn.functional.cross_entropy(logits, batch.labels, reduction="sum").item()
        correct += (logits.argmax(-1) == batch.labels).sum().item()
        total += batch.size
        scores.append(torch.log_softmax(logits.double(), -1).cpu().numpy())
        labels.append(batch.labels.cpu().numpy())
    metrics = {"accuracy": correct / max(total, 1), "loss": loss / max(total, 1)}
    auc = roc_auc(np.concatenate(labels), np.concatenate(scores)) if labels else None
    return metrics if auc is None else {**metrics, "roc_auc": auc}


class Trainer:
    """The early-stopping loop as a resumable object: `state_dict()` after any epoch is everything needed to
    continue from there (a Tune checkpoint), so a killed trial loses at most the epoch in flight."""

    def __init__(self, model: nn.Module, data: PreparedDataset, config: CellConfig, device: torch.device):
        self.model = model.to(device)
        self.data = data
        self.config = config
        self.device = device
        self.optimizer = make_optimizer(model, config.train)
        self.schedule = make_schedule(self.optimizer, config.train, epoch_batches(data.splits["train"], config.train))
        self.metric = selection_metric(model, config.train)
        _check_selection(self.metric, data)
        self.epoch = 0
        self.best = float("-inf")
        self.waited = 0
        self.result = FitResult(best_state=_snapshot(model), best_epoch=0)

    @property
    def finished(self) -> bool:
        return self.epoch >= self.config.train.epochs or self.waited >= self.config.train.patience

    def run_epoch(self) -> tuple[EpochRecord, bool]:
        """One epoch of training and the dev evaluation; returns the record and whether dev improved."""
        self.epoch += 1
        try:
            train_loss = train_epoch(
                self.model,
                self.data.splits["train"],
                self.config.train,
                self.optimizer,
                self.device,
                epoch_seed=self.config.seed * 1000 + self.epoch,
                schedule=self.schedule,
            )
        except NonFiniteLoss as failure:
            raise NonFiniteLoss(f"epoch {self.epoch}: {failure}") from None
        dev = evaluate(self.model, self.data.splits["dev"], self.device, target_vocab=self.data.target_vocab)
        record = EpochRecord(self.epoch, train_loss, dev)
        self.result.history.append(record)
        improved = dev[self.metric] > self.best
        if improved:
            self.best, self.waited = dev[self.metric], 0
            self.result.best_state, self.result.best_epoch = _snapshot(self.model), self.epoch
        else:
            self.waited += 1
        return record, improved

    def state_dict(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "epoch": self.epoch,
            "best": self.best,
            "waited": self.waited,
            "best_state": self.result.best_state,
            "best_epoch": self.result.best_epoch,
            "history": [dataclasses.asdict(r) for r in self.result.history],
            "rng": torch.get_rng_state(),  # dropout and random attention continue the same stream
            **({} if self.schedule is None else {"schedule": self.schedule.state_dict()}),
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.schedule is not None:
            self.schedule.load_state_dict(state["schedule"])
        self.epoch, self.best, self.waited = state["epoch"], state["best"], state["waited"]
        torch.set_rng_state(state["rng"])
        history = [EpochRecord(**r) for r in state["history"]]
        self.result = FitResult(state["best_state"], state["best_epoch"], history)

    def select_best(self) -> FitResult:
        """Load the best epoch's weights (chosen on dev only) into the model."""
        self.model.load_state_dict(self.result.best_state)
        return self.result


def fit(
    model: nn.Module,
    data: PreparedDataset,
    config: CellConfig,
    device: torch.device,
    on_epoch: Callable[[EpochRecord, bool], None] | None = None,
) -> FitResult:
    """Train with early stopping on the dev selection metric; `on_epoch(record, improved)` after each epoch."""
    trainer = Trainer(model, data, config, device)
    while not trainer.finished:
        record, improved = trainer.run_epoch()
        if on_epoch is not None:
            on_epoch(record, improved)
    return trainer.select_best()


def _check_selection(metric: str, data: PreparedDataset) -> None:
    """Fail before training, not after an epoch, when dev cannot rank epochs by ROC AUC."""
    if metric != "roc_auc":
        return
    classes = np.unique(data.splits["dev"].column("label").to_numpy())
    if len(classes) < 2:
        raise UndefinedSelection(
            f"{data.id}: the dev split has {len(classes)} class(es): ROC AUC cannot select the epoch "
            "(set train.selection_metric: accuracy)"
        )


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
