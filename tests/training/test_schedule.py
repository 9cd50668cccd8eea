"""`train.warmup`: the learning rate rises linearly over the first share of all optimiser steps, then falls
linearly to 0 at the last; `train.optimizer: adamw` decouples weight decay from the gradient."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gridlab.config.schema import TrainConfig
from gridlab.training.loop import make_optimizer, make_schedule


def rates(train: TrainConfig, steps_per_epoch: int) -> list[float]:
    model = nn.Linear(2, 1)
    optimizer = make_optimizer(model, train)
    schedule = make_schedule(optimizer, train, steps_per_epoch)
    seen = []
    for _ in range(train.epochs * steps_per_epoch):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if schedule is not None:
            schedule.step()
    return seen


def test_linear_warmup_then_linear_decay_to_zero():
    seen = rates(TrainConfig(lr=1.0, epochs=2, warmup=0.1), steps_per_epoch=50)  # 100 steps, 10 of warm-up
    assert seen[:10] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert seen[10] == pytest.approx(1.0) and seen[99] == pytest.approx(1 / 90)
    assert all(a > b for a, b in zip(seen[10:], seen[11:]))  # falling every step after the peak


def test_no_warmup_is_a_constant_rate():
    assert set(rates(TrainConfig(lr=0.5, epochs=2), steps_per_epoch=5)) == {0.5}


def test_adamw_decays_the_weights_not_the_gradient():
    train = TrainConfig(optimizer="adamw", lr=0.1, weight_decay=0.5, amsgrad=False)
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(2.0)
    optimizer = make_optimizer(model, train)
    assert isinstance(optimizer, torch.optim.AdamW)
    model.weight.grad = torch.zeros_like(model.weight)  # no gradient: only the decoupled decay moves it
    optimizer.step()
    assert model.weight.item() == pytest.approx(2.0 * (1 - 0.1 * 0.5))
