"""`train.selection_metric` and `train.batching` in the training loop: ROC AUC as J&W computed it (binary:
AUC of the positive class; multi-class: macro one-vs-rest over the classes present), the kept epoch is the
best dev AUC when asked for and the best dev accuracy by default, and bucketed training batches are
used by `train_epoch` and reproducible from the seed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch
from sklearn.metrics import roc_auc_score
from torch import nn

from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import Batch, iterate_batches, training_rows
from gridlab.data.config import DataConfig
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.data.vocab import SPECIALS, Vocab
from gridlab.models.factory import build_model
from gridlab.training.loop import Trainer, UndefinedSelection, evaluate, fit, roc_auc, train_epoch

CPU = torch.device("cpu")
SMALL = ModelConfig(embedding_dim=16, hidden_size=16, attention_size=16)

# dev labels and the positive-class logit of each epoch (negative-class logit 0); by design epoch 1 has the
# best accuracy (6/8) but a poor AUC (9/16), epoch 2 a poor accuracy (4/8) but a perfect AUC
DEV_LABELS = np.array([0, 0, 0, 0, 1, 1, 1, 1])
DEV_SCORES = {
    1: [-1.0, -1.0, -1.0, 5.0, 1.0, 1.0, 1.0, -2.0],
    2: [1.5, 1.6, 1.7, 1.8, 2.0, 2.1, 2.2, 2.3],
    3: [0.0] * 8,
}


class ScriptedModel(nn.Module):
    """A classifier whose dev logits at epoch k are DEV_SCORES[k]: which epoch is kept depends only on the
    selection metric. Training sees a constant loss (zero gradient), so the weights never change."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(()))
        self.epochs = 0

    def train(self, mode: bool = True) -> ScriptedModel:
        self.epochs += int(mode)  # train_epoch calls model.train() once per epoch
        return super().train(mode)

    def forward(self, batch: Batch) -> torch.Tensor:
        if self.training:
            return self.weight.expand(batch.size, 2)
        positive = torch.tensor(DEV_SCORES[self.epochs], dtype=torch.float32)[batch.instance_ids]
        return torch.stack([torch.zeros_like(positive), positive], dim=-1) + self.weight


def split(labels: np.ndarray) -> pa.Table:
    return pa.table(
        {
            "instance_id": pa.array(np.arange(len(labels), dtype=np.int64)),
            "label": pa.array(labels.astype(np.int64)),
            "ids": pa.array([[4, 4, 4]] * len(labels), pa.list_(pa.int32())),
        }
    )


def scripted_data(dev_labels: np.ndarray = DEV_LABELS) -> PreparedDataset:
    table = split(DEV_LABELS)
    return PreparedDataset(
        id="synthetic",
        task="single",
        config=DataConfig(),
        label_names=("0", "1"),
        vocab=Vocab(SPECIALS + ("w",)),
        target_vocab=None,
        splits={"train": table, "dev": split(dev_labels), "test": table},
        derived_splits=False,
        cache_key="scripted",
    )


def scripted_fit(selection: str | None):
    train = (
        TrainConfig(epochs=3, patience=5) if selection is None else TrainConfig(epochs=3, selection_metric=selection)
    )
    return fit(ScriptedModel(), scripted_data(), CellConfig(dataset="synthetic", train=train), CPU)


def test_default_keeps_the_best_dev_accuracy_epoch():
    result = scripted_fit(None)
    assert result.best_epoch == 1
    assert [r.dev["accuracy"] for r in result.history] == [0.75, 0.5, 0.5]


def test_roc_auc_keeps_the_best_dev_auc_epoch():
    result = scripted_fit("roc_auc")
    assert [r.dev["roc_auc"] for r in result.history] == [9 / 16, 1.0, 0.5]
    assert result.best_epoch == 2


def test_roc_auc_selection_needs_two_classes_in_dev():
    one_class = CellConfig(dataset="synthetic", train=TrainConfig(epochs=1, selection_metric="roc_auc"))
    with pytest.raises(UndefinedSelection, match="selection_metric: accuracy"):
        Trainer(ScriptedModel(), scripted_data(np.zeros(8, dtype=np.int64)), one_class, CPU)
    default = CellConfig(dataset="synthetic", train=TrainConfig(epochs=1))
    result = fit(ScriptedModel(), scripted_data(np.zeros(8, dtype=np.int64)), default, CPU)
    assert "roc_auc" not in result.history[0].dev  # undefined: left out, never NaN


def test_binary_auc_is_the_positive_class_auc():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, size=300)
    logits = rng.normal(size=(300, 2)) + labels[:, None] * [0.0, 1.0]
    probs = torch.softmax(torch.tensor(logits), -1).numpy()
    log_probs = np.log(probs)
    assert roc_auc(labels, log_probs) == pytest.approx(roc_auc_score(labels, probs[:, 1]), abs=1e-12)


def test_multiclass_auc_is_macro_one_vs_rest_over_present_classes():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, size=400)
    probs = torch.softmax(torch.tensor(rng.normal(size=(400, 4)) + np.eye(4)[labels]), -1).numpy()
    expected = roc_auc_score(labels, probs, multi_class="ovr", average="macro")
    assert roc_auc(labels, np.log(probs)) == pytest.approx(expected, abs=1e-12)
    absent = labels != 2  # class 2 never occurs: the average is over classes 0, 1 and 3
    per_class = [roc_auc_score(labels[absent] == c, probs[absent, c]) for c in (0, 1, 3)]
    assert roc_auc(labels[absent], np.log(probs[absent])) == pytest.approx(np.mean(per_class), abs=1e-12)
    assert roc_auc(np.full(5, 3), np.log(probs[:5])) is None


def test_auc_ranks_confident_predictions_that_round_to_one():
    """float32 probabilities of these logits are all 1.0; their log-odds still order them."""
    positive = torch.tensor([20.0, 30.0, 40.0, 50.0])
    logits = torch.stack([torch.zeros(4), positive], -1)
    assert torch.all(torch.softmax(logits, -1)[:, 1] == 1.0)
    scores = torch.log_softmax(logits.double(), -1).numpy()
    assert roc_auc(np.array([0, 0, 1, 1]), scores) == 1.0


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> PreparedDataset:
    return load_dataset("synthetic", tmp_path_factory.mktemp("d"), tmp_path_factory.mktemp("c"), DataConfig())


def test_evaluate_reports_roc_auc_for_classifiers(synthetic):
    config = CellConfig(dataset="synthetic", model=SMALL)
    metrics = evaluate(build_model(config, synthetic), synthetic.splits["dev"], CPU)
    assert set(metrics) == {"accuracy", "loss", "roc_auc"} and 0.0 <= metrics["roc_auc"] <= 1.0


def test_train_epoch_uses_bucketed_batches(synthetic):
    seen: list[np.ndarray] = []

    def record(model: nn.Module, batch: Batch) -> torch.Tensor:
        seen.append(batch.instance_ids.numpy())
        return model.weight.sum() * 0.0

    model = ScriptedModel()
    optimizer = torch.optim.Adam(model.parameters())
    train = TrainConfig(batch_size=32, max_train=500, batching="bucketed")
    train_epoch(model, synthetic.splits["train"], train, optimizer, CPU, epoch_seed=4, loss_of=record)
    split = synthetic.splits["train"]
    chosen = training_rows(split.num_rows, 500, "sample")
    assert chosen is not None
    expected = iterate_batches(split.take(pa.array(chosen)), 32, seed=4, bucketed=True)
    assert [list(b) for b in seen] == [list(b.instance_ids.numpy()) for b in expected]
    lengths = np.array([len(x) for x in split.column("ids").to_pylist()])
    assert np.mean([np.ptp(lengths[b]) for b in seen]) < 0.5 * np.ptp(lengths[chosen])


def test_bucketed_training_is_reproducible_and_differs_from_shuffled(synthetic):
    def weights(batching: str) -> dict[str, torch.Tensor]:
        config = CellConfig(
            dataset="synthetic",
            model=SMALL,
            seed=2,
            train=TrainConfig(epochs=1, batch_size=32, max_train=256, batching=batching),
        )
        model = build_model(config, synthetic)
        fit(model, synthetic, config, CPU)
        return model.state_dict()

    first, again, shuffled = weights("bucketed"), weights("bucketed"), weights("shuffled")
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], shuffled[k]) for k in first)


def test_max_train_samples_both_classes_of_a_split_sorted_by_label():
    """IMDB's training split lists its positive reviews, then its negative ones: its first rows are one class.
    `max_train` takes a fixed sample (the same for every seed), `head` the first rows."""
    labels = np.array([0] * 500 + [1] * 500)
    sample = training_rows(len(labels), 100, "sample")
    assert sample is not None and len(sample) == 100 and (np.diff(sample) > 0).all()
    assert 30 < labels[sample].sum() < 70
    assert np.array_equal(sample, training_rows(len(labels), 100, "sample"))
    assert labels[training_rows(len(labels), 100, "head")].sum() == 0
    assert training_rows(len(labels), None, "sample") is None and training_rows(50, 100, "sample") is None
