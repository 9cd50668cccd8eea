"""A trainer restored from the state saved after any epoch ends bit for bit where an uninterrupted one
does (weights, kept epoch, test metrics): model, optimizer, RNG stream and data order all come back, and
whatever a new process consumes before restoring (building the model draws from the RNG) changes nothing."""

from __future__ import annotations

import io

import pytest
import torch

from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig, SyntheticConfig
from gridlab.data.prepare import load_dataset
from gridlab.models.factory import build_model
from gridlab.training.loop import Trainer, evaluate

CPU = torch.device("cpu")
EPOCHS = 4


SCHEDULES = {"adam": {}, "adamw-warmup": {"optimizer": "adamw", "warmup": 0.2, "amsgrad": False}}


@pytest.fixture(scope="module", params=list(SCHEDULES))
def setting(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """The default optimiser, and AdamW with a warm-up whose schedule must resume mid-way too."""
    root = tmp_path_factory.mktemp("data")
    config = CellConfig(
        dataset="synthetic",
        encoder="lstm",
        model=ModelConfig(embedding_dim=12, hidden_size=12, attention_size=12, dropout=0.3),
        train=TrainConfig(epochs=EPOCHS, batch_size=32, lr=0.01, patience=EPOCHS, **SCHEDULES[request.param]),
        data=DataConfig(synthetic=SyntheticConfig(n_train=400, n_dev=60, n_test=60, min_length=4, max_length=12)),
    )
    config = config.model_copy(update={"data": DATASETS["synthetic"].resolve(config.data)})
    return config, load_dataset("synthetic", root, root / "cache", config.data)


def new_trainer(config: CellConfig, data) -> Trainer:
    torch.manual_seed(config.seed)
    return Trainer(build_model(config, data), data, config, CPU)


def test_resuming_after_any_epoch_is_bit_exact(setting):
    config, data = setting
    clean = new_trainer(config, data)
    saved: dict[int, bytes] = {}
    while not clean.finished:
        clean.run_epoch()
        buffer = io.BytesIO()
        torch.save(clean.state_dict(), buffer)
        saved[clean.epoch] = buffer.getvalue()
    last = {k: v.clone() for k, v in clean.model.state_dict().items()}
    clean.select_best()
    reference = evaluate(clean.model, data.splits["test"], CPU)

    for epoch in range(1, EPOCHS):
        torch.manual_seed(12345)  # a new process draws differently before it restores
        resumed = new_trainer(config, data)
        resumed.load_state_dict(torch.load(io.BytesIO(saved[epoch]), weights_only=True))
        while not resumed.finished:
            resumed.run_epoch()
        assert all(torch.equal(a, last[k]) for k, a in resumed.model.state_dict().items()), epoch
        resumed.select_best()
        assert resumed.result.best_epoch == clean.result.best_epoch
        assert evaluate(resumed.model, data.splits["test"], CPU) == reference, epoch
