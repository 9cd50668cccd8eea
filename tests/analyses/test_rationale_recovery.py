"""`rationale_recovery` (docs/analyses.md#rationale_recovery): hand-worked AUC and precision@k (ties included),
nulls exactly where required, the HAN sentence rationale, `run` == `reference` on small real models, bounds,
batching invariance, the written schema and `summarize`, and a trained model's attention finding the planted tokens."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.rationale_recovery import RECOVERY_RANKINGS, RationaleRecoveryParams
from gridlab.analyses.rationale_recovery import compute as rationale_recovery
from gridlab.analyses.rationale_recovery.compute import (
    RANKINGS,
    item_rationale,
    recovery_metrics,
    reference_recovery_metrics,
)
from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import collate, iterate_batches
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model
from gridlab.training.loop import fit

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
COLUMNS = ("ids", "label", "instance_id", "rationale", "sentence_starts")
KS = [1, 3, 5]
INF = math.inf


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("rationale")
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=12, min_length=3, max_length=12))
    return load_dataset("synthetic", tmp, tmp / "cache", config)


@pytest.fixture(scope="module")
def rows(synthetic) -> dict:
    """12 test rows; row 0 cut to its rationale (P = T), row 1 to its other tokens (P = 0), row 2 to one
    rationale token (T = 1), so every null rule is exercised."""
    rows = synthetic.splits["test"].select(list(COLUMNS)).to_pydict()

    def keep(i: int, chosen: list[int]) -> None:
        rows["ids"][i] = [rows["ids"][i][t] for t in chosen]
        rows["rationale"][i] = [rows["rationale"][i][t] for t in chosen]
        rows["sentence_starts"][i] = [0]

    for i, want in ((0, True), (1, False)):
        keep(i, [t for t, flag in enumerate(rows["rationale"][i]) if flag == want])
    keep(2, [rows["rationale"][2].index(True)])
    return rows


def sentences_every(rows: dict, size: int) -> dict:
    """The rows split into sentences of `size` tokens (synthetic instances are one sentence each)."""
    return {**rows, "sentence_starts": [list(range(0, max(len(ids), 1), size)) for ids in rows["ids"]]}


def model_of(synthetic, encoder: str, architecture: str = "flat"):
    config = CellConfig(dataset="synthetic", encoder=encoder, architecture=architecture, model=TINY)
    torch.manual_seed(0)
    model = build_model(config, synthetic).eval()
    with torch.no_grad():  # untrained, alpha is near uniform and the output near constant: sharpen both
        for name, parameter in model.attention.named_parameters():
            if name in ("context.weight", "learned_query"):
                parameter.mul_(10.0)
        model.classifier.weight.mul_(10.0)
    return model


def context(model, **params) -> AnalysisContext:
    return AnalysisContext(CELL, model, torch.device("cpu"), RationaleRecoveryParams(**params))


def assert_columns_equal(actual: dict, expected: dict) -> None:
    assert set(actual) == set(expected) == set(rationale_recovery.INFO.rows.names)
    for name, values in actual.items():
        assert len(values) == len(expected[name]), name
        for a, b in zip(values, expected[name]):
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=1e-12, err_msg=name)


# ----- the metrics by hand -------------------------------------------------------------------------------


def metrics_of(scores: list[list[float]], flags: list[list[int]], ks: list[int] = KS):
    """Rows with a masked <sos>-like slot in front and masked padding after (value 99: never counted)."""
    width = max(len(s) for s in scores) + 2
    s = torch.full((len(scores), width), 99.0)
    mask = torch.zeros(len(scores), width, dtype=torch.bool)
    rationale = torch.zeros_like(mask)
    for b, (row, marked) in enumerate(zip(scores, flags)):
        s[b, 1 : len(row) + 1] = torch.tensor(row)
        mask[b, 1 : len(row) + 1] = True
        rationale[b, 1 : len(row) + 1] = torch.tensor(marked, dtype=torch.bool)
    rationale[:, 0] = True  # a flag outside the mask must not count either
    return recovery_metrics(s, mask, rationale, ks)


HAND = [  # scores, rationale, AUC (None = null), precision@1, @3, @5 (None = null)
    ([0.9, 0.1, 0.5, 0.3], [1, 0, 1, 0], 1.0, [1.0, 2 / 3, 2 / 4]),  # k = 5 is capped at T = 4
    ([0.1, 0.9, 0.3, 0.5], [1, 0, 1, 0], 0.0, [0.0, 1 / 3, 2 / 4]),
    ([0.5, 0.5], [1, 0], 0.5, [1.0, 0.5, 0.5]),  # a tie counts 1/2; top-1 by position
    ([0.5, 0.5, 0.5], [0, 1, 1], 0.5, [0.0, 2 / 3, 2 / 3]),  # all tied: the earlier item first
    ([0.9, 0.5, 0.5, 0.1], [0, 1, 0, 1], 0.125, [0.0, 1 / 3, 2 / 4]),  # pairs: 0 + 1/2 + 0 + 0 of 4
    ([0.2, 0.7, 0.4, 0.9, 0.4, 0.1], [0, 1, 1, 0, 0, 0], 5.5 / 8, [0.0, 2 / 3, 2 / 5]),  # 0.4 at 2 before 0.4 at 4
    ([0.3, 0.8], [1, 1], None, [1.0, 1.0, 1.0]),  # only rationale: no pair for the AUC
    ([0.3, 0.8, 0.1], [0, 0, 0], None, None),  # no rationale
    ([0.4], [1], None, [1.0, 1.0, 1.0]),
    ([], [], None, None),  # no items at all
    ([0.3, math.nan, 0.1], [1, 0, 0], None, None),  # a non-finite score: no ranking
    ([0.3, INF, 0.1], [1, 0, 0], None, None),
]


def test_hand_worked_auc_and_precision_batched_and_reference():
    metrics = metrics_of([case[0] for case in HAND], [case[1] for case in HAND])
    for b, (scores, flags, auc, precision) in enumerate(HAND):
        assert bool(metrics.auc_defined[b]) == (auc is not None), b
        if auc is not None:
            assert float(metrics.auc[b]) == pytest.approx(auc, abs=1e-12), b
        assert bool(metrics.precision_defined[b]) == (precision is not None), b
        if precision is not None:
            assert metrics.precision[b].tolist() == pytest.approx(precision, abs=1e-12), b
        reference = reference_recovery_metrics(np.array(scores, dtype=np.float64), np.array(flags, dtype=bool), KS)
        assert reference[0] == (None if auc is None else pytest.approx(auc, abs=1e-12)), b
        assert reference[1] == (None if precision is None else pytest.approx(precision, abs=1e-12)), b


def test_auc_is_the_share_of_correctly_ordered_pairs_on_random_rows():
    generator = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 4, (40, 9), generator=generator).float()  # few values: many ties
    mask = torch.rand(40, 9, generator=generator) < 0.8
    rationale = torch.rand(40, 9, generator=generator) < 0.4
    metrics = recovery_metrics(scores, mask, rationale, [2, 20])
    for b in range(40):
        s, flags = scores[b][mask[b]], rationale[b][mask[b]]
        pos, neg = s[flags], s[~flags]
        if len(pos) and len(neg):
            pairs = (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
            assert float(metrics.auc[b]) == pytest.approx(float(pairs.mean()), abs=1e-12)
        else:
            assert not metrics.auc_defined[b]
        if len(pos):
            order = sorted(range(len(s)), key=lambda i: (-float(s[i]), i))
            expected = [sum(bool(flags[i]) for i in order[:k]) / max(min(k, len(s)), 1) for k in (2, 20)]
            assert metrics.precision[b].tolist() == pytest.approx(expected, abs=1e-12)


# ----- the rationale -------------------------------------------------------------------------------------


def test_han_items_are_sentences_with_any_rationale_word(synthetic):
    rows = {
        "ids": [[5, 6, 7, 8, 9], [5, 6], []],
        "sentence_starts": [[0, 2, 4], [0], [0]],
        "rationale": [[False, False, False, True, False], [True, False], []],
        "label": [0, 1, 0],
        "instance_id": [0, 1, 2],
    }
    model = model_of(synthetic, "gru", "han")
    shared = forward_once(model, collate(rows, sentences=True))
    assert item_rationale(shared).tolist() == [[False, True, False], [True, False, False], [False, False, False]]


def test_a_batch_without_rationale_is_refused(synthetic, rows):
    model = model_of(synthetic, "average")
    plain = {k: v for k, v in rows.items() if k in ("ids", "label", "instance_id")}
    shared = forward_once(model, collate(plain))
    with pytest.raises(ValueError, match="rationale"):
        rationale_recovery.run(context(model), shared)


# ----- real models ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoder", "architecture"), [("lstm", "flat"), ("cnn", "flat"), ("average", "flat"), ("gru", "han")]
)
def test_run_equals_reference_with_bounds_and_nulls(synthetic, rows, encoder, architecture):
    model = model_of(synthetic, encoder, architecture)
    han = architecture == "han"
    shared = forward_once(model, collate(sentences_every(rows, 3) if han else rows, sentences=han))
    columns = rationale_recovery.run(context(model), shared)
    assert_columns_equal(columns, rationale_recovery.reference(context(model), shared))

    items = shared.encoded.mask.sum(-1).tolist()
    marked = item_rationale(shared).sum(-1).tolist()
    assert columns["rationale_tokens"].tolist() == marked
    if not han:
        assert marked[:3] == [items[0], 0, 1] and items[2] == 1
    assert all(ks == KS for ks in columns["ks"])
    for name in RECOVERY_RANKINGS:
        auc, precision = columns[f"auc_{name}"], columns[f"precision_at_k_{name}"]
        assert [v is not None for v in auc] == [0 < p < t for p, t in zip(marked, items)], name
        assert [v is not None for v in precision] == [p > 0 for p in marked], name
        assert all(0.0 <= v <= 1.0 for v in auc if v is not None), name
        assert all(len(v) == len(KS) and all(0.0 <= x <= 1.0 for x in v) for v in precision if v is not None)
        assert any(v is not None for v in auc), name  # not vacuous


def test_unrequested_rankings_are_null_and_ks_are_the_params(synthetic, rows):
    model = model_of(synthetic, "lstm")
    shared = forward_once(model, collate(rows))
    columns = rationale_recovery.run(context(model, rankings=["gradient"], ks=[2, 50]), shared)
    full = rationale_recovery.run(context(model, ks=[2, 50]), shared)
    for name in RANKINGS:
        for column in (f"auc_{name}", f"precision_at_k_{name}"):
            if name == "gradient":
                assert_columns_equal({**full, column: columns[column]}, full)
            else:
                assert all(v is None for v in columns[column]), column
    assert all(ks == [2, 50] for ks in columns["ks"])


@pytest.mark.parametrize("encoder", ["lstm", "cnn"])
def test_rows_do_not_depend_on_batch_grouping(synthetic, rows, encoder):
    model = model_of(synthetic, encoder)
    whole = rationale_recovery.run(context(model), forward_once(model, collate(rows)))
    regrouped: dict[str, list] = {name: [None] * len(rows["ids"]) for name in whole}
    for group in ([5, 0, 9], [1, 11, 2, 3], [4, 6, 7, 8, 10]):
        picked = {k: [v[i] for i in group] for k, v in rows.items()}
        part = rationale_recovery.run(context(model), forward_once(model, collate(picked)))
        for name, values in part.items():
            for row, i in enumerate(group):
                regrouped[name][i] = values[row]
    assert_columns_equal(regrouped, whole)


def test_columns_write_with_the_schema_and_summarize(synthetic, rows):
    model = model_of(synthetic, "cnn")
    columns = rationale_recovery.run(context(model), forward_once(model, collate(rows)))
    table = pa.table(
        {
            field.name: pa.array(columns[field.name].tolist(), field.type, from_pandas=False)
            for field in rationale_recovery.INFO.rows
        },
        schema=rationale_recovery.INFO.rows,
    )
    frame = table.to_pandas()
    summary = rationale_recovery.summarize(frame)
    expected_keys = {f"auc_{name}_mean" for name in RECOVERY_RANKINGS}  # the requested ones only
    expected_keys |= {f"precision_at_{k}_{name}_mean" for name in RECOVERY_RANKINGS for k in KS}
    assert set(summary) == expected_keys
    for name in RECOVERY_RANKINGS:
        auc = [v for v in columns[f"auc_{name}"] if v is not None]
        assert summary[f"auc_{name}_mean"] == pytest.approx(np.mean(auc))
        precision = np.array([v for v in columns[f"precision_at_k_{name}"] if v is not None])  # (n, K)
        for i, k in enumerate(KS):
            assert summary[f"precision_at_{k}_{name}_mean"] == pytest.approx(precision[:, i].mean())


def test_summarize_has_no_entry_for_an_unrequested_ranking():
    frame = pd.DataFrame(
        {
            "ks": [[1, 2], [1, 2]],
            "rationale_tokens": [1, 0],
            **{f"auc_{name}": [0.75, None] for name in RANKINGS},
            **{f"precision_at_k_{name}": [[1.0, 0.5], None] for name in RANKINGS},
        }
    )
    frame["auc_gradient"] = [None, None]
    frame["precision_at_k_gradient"] = [None, None]
    summary = rationale_recovery.summarize(frame)
    assert summary["auc_attention_mean"] == 0.75 and summary["precision_at_2_attention_mean"] == 0.5
    assert not {"auc_gradient_mean", "precision_at_1_gradient_mean"} & set(summary)


# ----- a trained model attends to the planted tokens -----------------------------------------------------


def test_trained_attention_recovers_the_planted_rationale(tmp_path: Path):
    data = load_dataset(
        "synthetic",
        tmp_path,
        tmp_path / "cache",
        DataConfig(synthetic=SyntheticConfig(n_train=1000, n_dev=100, n_test=200)),
    )
    config = CellConfig(
        dataset="synthetic",
        encoder="average",
        model=ModelConfig(embedding_dim=32, hidden_size=32, attention_size=32),
        train=TrainConfig(epochs=2, batch_size=32, lr=0.003),
    )
    model = build_model(config, data)

    def attention_summary() -> dict[str, float]:
        model.eval()
        recovery = context(model, rankings=["attention"], ks=[2])
        rows = [
            rationale_recovery.run(recovery, forward_once(model, batch))
            for batch in iterate_batches(data.splits["test"], 100)
        ]
        frame = pd.DataFrame({name: np.concatenate([r[name] for r in rows]) for name in rows[0]})
        return rationale_recovery.summarize(frame)

    untrained = attention_summary()
    fit(model, data, config, torch.device("cpu"))
    trained = attention_summary()
    assert untrained["auc_attention_mean"] < 0.7, untrained  # not a property of the data alone
    assert trained["auc_attention_mean"] > 0.8, trained  # measured: 0.98
    assert trained["precision_at_2_attention_mean"] > 0.5, trained  # 2 planted tokens among 8-24
