"""adversary_tradeoff: W&P's model-consistent adversary at several weights of its attention term."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pydantic
import pytest
import torch

from gridlab.analyses.adversarial_model import AdversarialModelParams
from gridlab.analyses.adversarial_model import compute as adversarial_model
from gridlab.analyses.adversary_tradeoff import AdversaryTradeoffParams
from gridlab.analyses.adversary_tradeoff import compute as adversary_tradeoff
from gridlab.analyses.base import AnalysisContext
from gridlab.data.synthetic import SyntheticConfig

from .conftest import fitted_synthetic

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    synthetic = SyntheticConfig(n_train=320, n_dev=64, n_test=64, min_length=12, max_length=24)
    return fitted_synthetic(tmp_path_factory.mktemp("t"), synthetic)


def context(trained, **params) -> AnalysisContext:
    model, _, config = trained
    return AnalysisContext("cell", model, CPU, AdversaryTradeoffParams(**params), config)


@pytest.fixture(scope="module")
def rows(trained) -> dict[str, list]:
    return adversary_tradeoff.run_model(context(trained, lams=[1.0, 0.0], epochs=3), trained[1])


def test_one_row_per_lam_in_rising_order(rows):
    assert rows["lam"] == [0.0, 1.0]
    assert all(0.0 <= j <= math.log(2) + 1e-9 for j in rows["jsd_mean"])
    assert all(0.0 <= t <= 1.0 for t in rows["tvd_mean"])


def test_a_heavier_attention_term_moves_the_attention_further(rows):
    """lam = 0 trains the adversary to copy the base model's outputs only; lam = 1 also rewards attention away
    from the base's: its attention lies further from the base model's."""
    assert rows["jsd_mean"][1] > rows["jsd_mean"][0] + 0.05


def test_each_point_is_adversarial_models_unfrozen_adversary_at_that_lam(trained, rows):
    """Same function, same seeds: the sweep's point at `adversarial_model`'s lam is its unfrozen row."""
    model, data, config = trained
    params = AdversarialModelParams(variants=["unfrozen"], lam=1.0, epochs=3)
    reported = adversarial_model.run_model(AnalysisContext("cell", model, CPU, params, config), data)
    for column in ("jsd_mean", "tvd_mean", "accuracy", "best_epoch"):
        assert rows[column][1] == pytest.approx(reported[column][0], abs=1e-9), column


def test_an_empty_test_split_is_not_measured(trained):
    _, data, _ = trained
    empty = dataclasses.replace(data, splits={**data.splits, "test": data.splits["test"].slice(0, 0)})
    rows = adversary_tradeoff.run_model(context(trained, lams=[0.1], epochs=1), empty)
    assert rows["jsd_mean"] == [None] and rows["tvd_mean"] == [None] and rows["instances"] == [0]


def test_the_summary_spans_the_sweep(rows):
    summary = adversary_tradeoff.summarize(pd.DataFrame(rows))
    assert summary["lams"] == 2
    assert summary["jsd_mean_min"] == min(rows["jsd_mean"]) and summary["tvd_mean_max"] == max(rows["tvd_mean"])


@pytest.mark.parametrize("lams", [[0.1, 0.1], [-1.0], []])
def test_lams_must_be_distinct_non_negative_and_present(lams):
    with pytest.raises(pydantic.ValidationError):
        AdversaryTradeoffParams(lams=lams)
