"""seed_variance (W&P): attention JSD and output TVD between models that differ only in seed."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gridlab.analyses import seed_variance as declared
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.seed_variance import compute as seed_variance
from gridlab.catalog.analyses import NoParams
from gridlab.data.batching import iterate_batches
from tests.analyses.conftest import perturbed_model, short_synthetic_rows

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> dict:
    return short_synthetic_rows(tmp_path_factory.mktemp("sv"), n_test=12)


def passes(rows: dict, seeds: list[int]):
    batch = next(iterate_batches(rows["data"].splits["test"], 12))
    return [forward_once(perturbed_model(rows["data"], "lstm", "additive", seed=s), batch) for s in seeds]


def test_batched_rows_equal_the_per_instance_reference(rows):
    own, *peers = passes(rows, [0, 1, 2])
    context = AnalysisContext("cell", None, CPU, NoParams())
    batched = seed_variance.run(context, own, peers, ["p1", "p2"])
    looped = seed_variance.reference(context, own, peers, ["p1", "p2"])
    for column in ("jsd_seed_mean", "jsd_seed_max", "tvd_seed_mean"):
        np.testing.assert_allclose(batched[column], looped[column], rtol=1e-9, atol=1e-12)
    assert list(batched["other_seeds"]) == [2] * 12 and batched["peer_cells"] == ["p1,p2"] * 12
    assert (batched["jsd_seed_max"] >= batched["jsd_seed_mean"]).all()
    assert (batched["jsd_seed_max"] > 0).all() and (batched["jsd_seed_max"] <= math.log(2)).all()


def test_a_peer_identical_to_the_model_is_at_distance_zero(rows):
    own, same = passes(rows, [0, 0])
    columns = seed_variance.run(AnalysisContext("cell", None, CPU, NoParams()), own, [same], ["p"])
    assert np.allclose(columns["jsd_seed_mean"], 0.0, atol=1e-12) and np.allclose(columns["tvd_seed_mean"], 0.0)


def test_hand_worked_jsd_between_two_attention_vectors(rows):
    """alpha = (1, 0) against (1/2, 1/2): m = (3/4, 1/4); JSD = 1/2 ln(4/3) + 1/4 ln(2/3) + 1/4 ln 2."""
    own, peer = passes(rows, [0, 1])
    own = type(own)(own.batch, own.encoded, torch.zeros_like(own.alpha), own.logits, own.probs, own.pred)
    peer = type(peer)(peer.batch, peer.encoded, torch.zeros_like(peer.alpha), peer.logits, peer.probs, peer.pred)
    own.alpha[:, 0], peer.alpha[:, :2] = 1.0, 0.5
    expected = 0.5 * math.log(4 / 3) + 0.25 * math.log(2 / 3) + 0.25 * math.log(2)
    columns = seed_variance.run(AnalysisContext("cell", None, CPU, NoParams()), own, [peer], ["p"])
    np.testing.assert_allclose(columns["jsd_seed_max"], expected, rtol=1e-6)


def test_peers_are_the_cells_equal_but_for_the_seed():
    base = {"dataset": "sst", "encoder": "lstm", "seed": 0, "train": {"lr": 0.001}}
    cells = {
        "a": base,
        "b": {**base, "seed": 2},
        "c": {**base, "seed": 1},
        "d": {**base, "encoder": "cnn", "seed": 1},
        "e": {**base, "seed": 3, "train": {"lr": 0.01}},
    }
    assert declared.peers_of(base, cells) == ["c", "b"]  # by seed; other encoder or lr is another group
    assert declared.peers_of(cells["d"], cells) == []
    assert declared.seed_peers(cells) == {
        name: declared.peers_of(config, cells) for name, config in cells.items()
    }  # all at once, the same answer
