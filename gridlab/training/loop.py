"""Training one cell's model in plain torch: the loop that the Ray Tune trainable wraps.

    >>> result = fit(model, data, config, device=torch.device("cpu"))
    >>> result.best_epoch, result.history[-1].dev["accuracy"]

Adam (AMSGrad by default) with weight decay on every parameter except attention's (J&W), gradient-norm
clipping, early stopping with `patience` on the dev selection metric (accuracy for classifiers, BLEU of
greedy translations for the translation model), the best epoch's weights kept. The model is
selected on dev only; test metrics are computed once, by the caller, on the selected weights. A NaN or
infinite loss stops training with `NonFiniteLoss` rather than training on garbage.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from gridlab.data.batching import Batch, iterate_batches
from gridlab.data.prepare import PreparedDataset
from gridlab.errors import GridlabError
from gridlab.grid.schema import CellConfig, TrainConfig
from gridlab.models.seq2seq import Seq2Seq, bleu, sequence_loss


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


def selection_metric(model: nn.Module) -> str:
    """The dev metric that picks the best epoch (higher is better)."""
    return "bleu" if isinstance(model, Seq2Seq) else "accuracy"


def batch_loss(model: nn.Module, batch, reduction: str = "mean") -> torch.Tensor:
    if isinstance(model, Seq2Seq):
        return sequence_loss(model(batch), batch.target_ids)
    return nn.functional.cross_entropy(model(batch), batch.labels, reduction=reduction)


def make_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.Optimizer:
    exempt = model.attention_parameter_names() if hasattr(model, "attention_parameter_names") else set()
    decayed = [p for n, p in model.named_parameters() if n not in exempt]
    undecayed = [p for n, p in model.named_parameters() if n in exempt]
    groups = [{"params": decayed, "weight_decay": train.weight_decay}, {"params": undecayed, "weight_decay": 0.0}]
    return torch.optim.Adam(groups, lr=train.lr, amsgrad=train.amsgrad)


def train_epoch(
    model: nn.Module,
    table: pa.Table,
    train: TrainConfig,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    epoch_seed: int,
    loss_of: Callable[[nn.Module, Batch], torch.Tensor] = batch_loss,
    what: str = "training",
) -> float:
    """One shuffled pass minimising `loss_of(model, batch)` (the task loss; the analyses that train models
    pass their own objective); returns the mean batch loss."""
    model.train()
    losses = []
    for batch in iterate_batches(
        table, train.batch_size, shuffle=True, seed=epoch_seed, sentences=hierarchical(model), limit=train.max_train
    ):
        batch = batch.to(device)
        loss = loss_of(model, batch)
        if not torch.isfinite(loss):
            raise NonFiniteLoss(f"{what} loss became {loss.item()} (epoch seed {epoch_seed})")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if train.clip_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), train.clip_norm)
        optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses)) if losses else float("nan")


@torch.no_grad()
def evaluate(
    model: nn.Module, table: pa.Table, device: torch.device, batch_size: int = 128, target_vocab=None
) -> dict[str, float]:
    """Accuracy and mean cross-entropy over a split; BLEU and token-level loss for translation."""
    model.eval()
    if isinstance(model, Seq2Seq):
        losses = [batch_loss(model, b.to(device)).item() for b in iterate_batches(table, batch_size)]
        return {"bleu": bleu(model, table, target_vocab, batch_size=batch_size), "loss": float(np.mean(losses))}
    correct, total, loss = 0, 0, 0.0
    for batch in iterate_batches(table, batch_size, sentences=hierarchical(model)):
        batch = batch.to(device)
        logits = model(batch)
        loss += nn.functional.cross_entropy(logits, batch.labels, reduction="sum").item()
        correct += (logits.argmax(-1) == batch.labels).sum().item()
        total += batch.size
    return {"accuracy": correct / max(total, 1), "loss": loss / max(total, 1)}


class Trainer:
    """The early-stopping loop as a resumable object: `state_dict()` after any epoch is everything needed to
    continue from there (a Tune checkpoint), so a killed trial loses at most the epoch in flight."""

    def __init__(self, model: nn.Module, data: PreparedDataset, config: CellConfig, device: torch.device):
        self.model = model.to(device)
        self.data = data
        self.config = config
        self.device = device
        self.optimizer = make_optimizer(model, config.train)
        self.metric = selection_metric(model)
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
        train_loss = train_epoch(
            self.model,
            self.data.splits["train"],
            self.config.train,
            self.optimizer,
            self.device,
            epoch_seed=self.config.seed * 1000 + self.epoch,
        )
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
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
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


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
