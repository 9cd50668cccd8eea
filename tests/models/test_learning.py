"""The parts learn: every encoder, trained for ~300 steps on the synthetic task on CPU, is far above
chance; and training is reproducible bit for bit from the seed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.models.factory import build_model
from gridlab.training.loop import evaluate, fit

CPU = torch.device("cpu")
SMALL = ModelConfig(embedding_dim=32, hidden_size=32, attention_size=32)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    return load_dataset("synthetic", tmp_path_factory.mktemp("d"), tmp_path_factory.mktemp("c"), DataConfig())


@pytest.mark.parametrize("encoder", ["lstm", "gru", "cnn", "average", "noenc", "transformer"])
def test_each_encoder_learns_the_planted_rule(synthetic, encoder: str):
    # 2,000 instances / batch 32 = 63 steps an epoch: about 300 Adam steps in all
    config = CellConfig(
        dataset="synthetic", encoder=encoder, model=SMALL, train=TrainConfig(epochs=5, batch_size=32, lr=0.003)
    )
    model = build_model(config, synthetic)
    chance = evaluate(model, synthetic.splits["test"], CPU)["accuracy"]
    result = fit(model, synthetic, config, CPU)
    accuracy = evaluate(model, synthetic.splits["test"], CPU)["accuracy"]
    assert accuracy >= 0.9, f"{encoder}: test accuracy {accuracy:.3f} (untrained {chance:.3f})"
    assert result.history[result.best_epoch - 1].dev["accuracy"] == max(r.dev["accuracy"] for r in result.history)


def test_training_is_bitwise_reproducible_from_the_seed(synthetic):
    config = CellConfig(
        dataset="synthetic",
        encoder="lstm",
        model=SMALL,
        seed=7,
        train=TrainConfig(epochs=1, batch_size=64, max_train=512),
    )
    states = []
    for _ in range(2):
        model = build_model(config, synthetic)
        fit(model, synthetic, config, CPU)
        states.append(model.state_dict())
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])


def test_attention_parameters_are_exempt_from_weight_decay(synthetic):
    from gridlab.training.loop import make_optimizer

    config = CellConfig(dataset="synthetic", model=SMALL, train=TrainConfig(weight_decay=0.1))
    model = build_model(config, synthetic)
    exempt = model.attention_parameter_names()
    assert exempt == {"attention.key.weight", "attention.key.bias", "attention.context.weight"}
    decayed, undecayed = make_optimizer(model, config.train).param_groups
    assert decayed["weight_decay"] == 0.1 and undecayed["weight_decay"] == 0.0
    assert {id(p) for p in undecayed["params"]} == {id(p) for n, p in model.named_parameters() if n in exempt}
    assert decayed["lr"] == undecayed["lr"] == config.train.lr


def test_attention_weight_decay_decays_the_attention_group_too(synthetic):
    """J&W's pair-model code decays every parameter; the option is id-neutral when off."""
    from gridlab.grid.expand import cell_id
    from gridlab.training.loop import make_optimizer

    plain = CellConfig(dataset="synthetic", model=SMALL, train=TrainConfig(weight_decay=0.1))
    decaying = plain.model_copy(update={"train": TrainConfig(weight_decay=0.1, attention_weight_decay=True)})
    model = build_model(decaying, synthetic)
    rest, attention = make_optimizer(model, decaying.train).param_groups
    assert rest["weight_decay"] == attention["weight_decay"] == 0.1
    names = model.attention_parameter_names()
    assert {id(p) for p in attention["params"]} == {id(p) for n, p in model.named_parameters() if n in names}
    explicit = plain.model_copy(update={"train": TrainConfig(weight_decay=0.1, attention_weight_decay=False)})
    assert cell_id(explicit) == cell_id(plain) != cell_id(decaying)


def test_attention_learning_rate_scale(synthetic):
    """Meister et al. train the attention parameters at 1x or 10x the others' rate; the scale is id-neutral."""
    from gridlab.grid.expand import cell_id
    from gridlab.training.loop import make_optimizer

    plain = CellConfig(dataset="synthetic", model=SMALL, train=TrainConfig(lr=1e-4))
    scaled = plain.model_copy(update={"train": TrainConfig(lr=1e-4, attention_lr_scale=10.0)})
    decayed, attention = make_optimizer(build_model(scaled, synthetic), scaled.train).param_groups
    assert decayed["lr"] == 1e-4 and attention["lr"] == pytest.approx(1e-3)
    explicit = plain.model_copy(update={"train": TrainConfig(lr=1e-4, attention_lr_scale=1.0)})
    assert cell_id(explicit) == cell_id(plain) != cell_id(scaled)


@pytest.mark.slow
def test_translation_model_trains_and_is_selected_on_bleu(data_dir: Path, tmp_path: Path):
    data = load_dataset("multi30k", data_dir, tmp_path, DataConfig())
    data = dataclasses.replace(data, splits={**data.splits, "dev": data.splits["dev"].slice(0, 64)})
    config = CellConfig(
        dataset="multi30k",
        encoder="gru",
        architecture="seq2seq",
        model=SMALL,
        train=TrainConfig(epochs=2, batch_size=32, max_train=256, patience=1),
    )
    model = build_model(config, data)
    result = fit(model, data, config, CPU)
    assert [set(r.dev) for r in result.history] == [{"bleu", "loss"}] * len(result.history)
    assert all(0.0 <= r.dev["bleu"] <= 100.0 for r in result.history)
    assert result.history[result.best_epoch - 1].dev["bleu"] == max(r.dev["bleu"] for r in result.history)


def test_resuming_from_a_trainer_checkpoint_equals_training_straight_through(synthetic, tmp_path: Path):
    from gridlab.training.loop import Trainer

    config = CellConfig(
        dataset="synthetic",
        encoder="gru",
        model=SMALL,
        attention_mode="random",
        train=TrainConfig(epochs=3, batch_size=64, max_train=512),
    )
    straight = Trainer(build_model(config, synthetic), synthetic, config, CPU)
    while not straight.finished:
        straight.run_epoch()

    first = Trainer(build_model(config, synthetic), synthetic, config, CPU)
    first.run_epoch()
    torch.save(first.state_dict(), tmp_path / "trainer.pt")
    resumed = Trainer(build_model(config.model_copy(update={"seed": 99}), synthetic), synthetic, config, CPU)
    resumed.load_state_dict(torch.load(tmp_path / "trainer.pt", weights_only=True))  # tensors and plain types only
    while not resumed.finished:
        resumed.run_epoch()
    assert resumed.epoch == straight.epoch == 3
    assert [r.dev for r in resumed.result.history] == [r.dev for r in straight.result.history]
    assert all(
        torch.equal(a, b) for a, b in zip(resumed.model.state_dict().values(), straight.model.state_dict().values())
    )


def test_a_non_finite_loss_names_its_epoch_and_batch(synthetic):
    from gridlab.training.loop import NonFiniteLoss

    config = CellConfig(dataset="synthetic", model=SMALL, train=TrainConfig(lr=1e30, clip_norm=None))
    with pytest.raises(
        NonFiniteLoss, match=r"^epoch 1: training loss became \S+ at batch \d+ of the epoch \(train\.lr 1e\+30"
    ):
        fit(build_model(config, synthetic), synthetic, config, CPU)
