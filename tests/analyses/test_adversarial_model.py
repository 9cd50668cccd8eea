"""adversarial_model (W&P §4, Meister App. C.1): an adversary trained for diverging attention, per model."""

from __future__ import annotations

import dataclasses
import math

import pyarrow as pa
import pytest
import torch

from gridlab.analyses.adversarial_model import AdversarialModelParams
from gridlab.analyses.adversarial_model import compute as adversarial_model
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import tvd
from gridlab.config.schema import CellConfig, TrainConfig
from gridlab.data.batching import iterate_batches, training_rows
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model

from .conftest import SMALL, fitted_synthetic

CPU = torch.device("cpu")
LN2 = math.log(2)
ADVERSARY_TRAIN = TrainConfig(lr=0.01, weight_decay=0.0)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    synthetic = SyntheticConfig(n_train=320, n_dev=60, n_test=50, min_length=6, max_length=14)
    model, data, config = fitted_synthetic(tmp_path_factory.mktemp("d"), synthetic)
    return model, data, config.model_copy(update={"train": ADVERSARY_TRAIN})


def context(trained, **params) -> AnalysisContext:
    model, _, config = trained
    return AnalysisContext("cell", model, CPU, AdversarialModelParams(**params), config)


@pytest.fixture(scope="module")
def rows(trained) -> dict[str, list]:
    return adversarial_model.run_model(context(trained, lam=1.0, epochs=5), trained[1])


def test_masked_kl_and_objective_by_hand():
    mask = torch.tensor([[False, True, True, True, False]])  # <sos> x1 x2 x3 <eos>
    p = torch.tensor([[0.3, 0.5, 0.25, 0.25, 0.7]])  # mass on <sos>/<eos> must not count
    q = torch.tensor([[0.0, 0.25, 0.25, 0.5, 0.0]])
    # 0.5 ln(0.5/0.25) + 0.25 ln(0.25/0.25) + 0.25 ln(0.25/0.5) = 0.5 ln 2 - 0.25 ln 2
    assert adversarial_model.masked_kl(p, q, mask).item() == pytest.approx(0.25 * LN2, abs=1e-7)
    assert adversarial_model.masked_kl(q, q, mask).item() == 0.0
    y_adv, y_base = torch.tensor([[0.7, 0.3]]), torch.tensor([[0.4, 0.6]])
    assert tvd(y_adv, y_base).item() == pytest.approx(0.3)
    loss = adversarial_model.objective(y_adv, y_base, p, q, mask, lam=2.0)
    assert loss.item() == pytest.approx(0.3 - 2.0 * 0.25 * LN2, abs=1e-6)


def test_the_jsd_objective_is_bounded_against_a_sparse_base():
    """Disjoint supports: JSD = ln 2 exactly, where the KL term would be ln(1e12) per unit of mass; shared
    support (0.5, 0.5) against (1, 0): m = (0.75, 0.25), JSD = 0.5 (0.5 ln(0.5/0.75) + 0.5 ln(0.5/0.25)) +
    0.5 ln(1/0.75)."""
    mask = torch.tensor([[True, True, True]])
    base = torch.tensor([[1.0, 0.0, 0.0]])
    y = torch.tensor([[0.6, 0.4]])
    disjoint = adversarial_model.objective(y, y, torch.tensor([[0.0, 0.5, 0.5]]), base, mask, 2.0, "jsd")
    assert disjoint.item() == pytest.approx(-2.0 * LN2, abs=1e-6)
    shared = adversarial_model.objective(y, y, torch.tensor([[0.5, 0.5, 0.0]]), base, mask, 1.0, "jsd")
    expected = 0.5 * (0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(2.0)) + 0.5 * math.log(1 / 0.75)
    assert shared.item() == pytest.approx(-expected, abs=1e-6)


def test_masked_kl_is_finite_with_sparse_zeros():
    mask = torch.tensor([[True, True, True]])
    p = torch.tensor([[0.5, 0.5, 0.0]], requires_grad=True)  # a sparsemax adversary: 0 log 0 = 0
    q = torch.tensor([[1.0, 0.0, 0.0]])  # a sparse base: alpha_base = 0 where the adversary has mass
    kl = adversarial_model.masked_kl(p, q, mask)
    expected = 0.5 * math.log(0.5) + 0.5 * (math.log(0.5) - math.log(1e-12))
    assert kl.item() == pytest.approx(expected, rel=1e-5)
    kl.sum().backward()
    assert torch.isfinite(p.grad).all()


def assert_lookups_equal_fresh_passes(model, tables: dict, references: dict, sentences: bool = False) -> None:
    """Every shuffled batch (of another width than the stored passes') looks up what a fresh base pass gives."""
    for split, table in tables.items():
        for batch in iterate_batches(table, 7, shuffle=True, seed=3, sentences=sentences):
            with torch.no_grad():
                probs, alpha, _ = adversarial_model.adversary_pass(model, batch)
            base_probs, base_alpha = references[split].of(batch, alpha.shape[-1])
            torch.testing.assert_close(base_probs, probs, atol=1e-6, rtol=0)
            torch.testing.assert_close(base_alpha, alpha, atol=1e-6, rtol=0)


def test_the_base_side_computed_once_is_the_base_models_pass_on_any_batch(trained):
    """A cell's `max_train` limits the stored training rows to the ones it trains on."""
    model, data, config = trained
    capped = config.model_copy(update={"train": config.train.model_copy(update={"max_train": 100})})
    capped_context = AnalysisContext("cell", model, CPU, AdversarialModelParams(), capped)
    references = adversarial_model.base_references(capped_context, data)
    chosen = training_rows(data.splits["train"].num_rows, 100, capped.train.subset)
    assert chosen is not None
    stored = torch.nonzero(references["train"].probs.sum(-1) > 0).flatten()
    assert stored.tolist() == chosen.tolist()  # instance ids are row positions in a prepared split
    assert_lookups_equal_fresh_passes(
        model, {**data.splits, "train": data.splits["train"].take(pa.array(chosen))}, references
    )


@pytest.mark.parametrize(("dataset", "architecture"), [("sick", "pair"), ("20news", "han")])
def test_the_base_side_of_pair_and_hierarchical_models(dataset, architecture, data_dir, tmp_path):
    """Pair models attend over the premise, a HAN's output attention over sentences: both looked up alike."""
    data = load_dataset(dataset, data_dir, tmp_path / "cache", DataConfig(max_length=60))
    data = dataclasses.replace(data, splits={name: table.slice(0, 30) for name, table in data.splits.items()})
    config = CellConfig(dataset=dataset, encoder="lstm", architecture=architecture, model=SMALL)
    model = build_model(config, data).eval()
    references = adversarial_model.base_references(
        AnalysisContext("cell", model, CPU, AdversarialModelParams(), config), data
    )
    assert_lookups_equal_fresh_passes(model, data.splits, references, sentences=architecture == "han")


def test_rows_follow_the_schema_and_bounds(rows, trained):
    table = pa.Table.from_pydict(rows, schema=adversarial_model.INFO.rows)  # raises on a missing or mistyped column
    assert table.column_names == adversarial_model.INFO.rows.names and rows["variant"] == ["frozen", "unfrozen"]
    for i in range(2):
        assert 0.0 <= rows["jsd_median"][i] <= LN2 and 0.0 <= rows["jsd_mean"][i] <= LN2
        assert 0.0 <= rows["tvd_mean"][i] <= 1.0 and 0.0 <= rows["accuracy"][i] <= 1.0
        assert rows["accuracy_delta"][i] == pytest.approx(rows["accuracy"][i] - rows["base_accuracy"][i])
        assert 1 <= rows["best_epoch"][i] <= rows["epochs_trained"][i] <= 5
    assert rows["instances"] == [50, 50]
    assert rows["base_accuracy"][0] > 0.8  # the base model learned the planted task
    summary = adversarial_model.summarize(table.to_pandas())
    assert summary["frozen_jsd_mean"] == rows["jsd_mean"][0] and "unfrozen_accuracy_delta" in summary


def test_same_rows_for_the_same_cell(rows, trained):
    assert adversarial_model.run_model(context(trained, lam=1.0, epochs=5), trained[1]) == rows


def test_frozen_adversary_starts_next_to_the_base_model_and_lam_zero_keeps_it_there(trained):
    """At lam = 0 the objective is TVD to the base alone: the nudged copy stays (or comes back) next to it."""
    near = adversarial_model.run_model(context(trained, variants=["frozen"], lam=0.0, epochs=2), trained[1])
    assert near["jsd_mean"][0] < 1e-2 and near["tvd_mean"][0] < 0.05 and abs(near["accuracy_delta"][0]) <= 0.05


def test_frozen_adversary_with_lam_diverges(rows):
    assert rows["jsd_mean"][0] > 0.1


def test_the_frozen_start_is_seeded_not_left_to_float_rounding(trained):
    """The same cell gives the same frozen adversary whatever the thread count."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = adversarial_model.run_model(context(trained, variants=["frozen"], lam=1.0, epochs=1), trained[1])
        torch.set_num_threads(2)
        two = adversarial_model.run_model(context(trained, variants=["frozen"], lam=1.0, epochs=1), trained[1])
    finally:
        torch.set_num_threads(threads)
    assert one["jsd_mean"][0] > 0.01
    assert abs(one["jsd_mean"][0] - two["jsd_mean"][0]) < 0.02


def test_the_kl_term_drives_the_divergence_under_weight_decay(trained):
    """With the cells' weight decay, lam = 0 stays next to the base; lam > 0 pushes it far."""
    model, data, config = trained
    decayed = (model, data, config.model_copy(update={"train": TrainConfig(lr=0.01, weight_decay=1e-5)}))
    drift = adversarial_model.run_model(context(decayed, variants=["frozen"], lam=0.0, epochs=4), data)
    pushed = adversarial_model.run_model(context(decayed, variants=["frozen"], lam=1.0, epochs=4), data)
    assert drift["jsd_mean"][0] < 0.01 and pushed["jsd_mean"][0] > 0.1


def test_selection_never_reads_the_test_split(trained):
    _, data, _ = trained
    no_test = dataclasses.replace(data, splits={k: v for k, v in data.splits.items() if k != "test"})
    one_epoch = context(trained, epochs=1)
    references = adversarial_model.base_references(one_epoch, no_test)
    adversary, epochs, best = adversarial_model.fit_adversary(one_epoch, no_test, "unfrozen", references)
    assert set(references) == {"train", "dev"}
    assert (epochs, best) == (1, 1) and not adversary.training


def test_the_adversaries_learning_rate_can_differ_from_the_cells(trained):
    """At a rate too small to move in one epoch the frozen adversary stays on the base; `lr` lets it leave."""
    model, data, config = trained
    slow = (model, data, config.model_copy(update={"train": TrainConfig(lr=1e-7, weight_decay=0.0)}))
    stuck = adversarial_model.run_model(context(slow, variants=["frozen"], lam=1.0, epochs=1), data)
    moved = adversarial_model.run_model(context(slow, variants=["frozen"], lam=1.0, epochs=1, lr=0.01), data)
    reference = adversarial_model.run_model(context(trained, variants=["frozen"], lam=1.0, epochs=1), data)
    assert stuck["jsd_mean"][0] < 0.01 < moved["jsd_mean"][0]
    assert moved["jsd_mean"][0] == pytest.approx(reference["jsd_mean"][0], abs=1e-6)  # as the cell's own 0.01
