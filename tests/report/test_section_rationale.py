"""The rationale-recovery section on hand-made rows: AUC and precision@k per ranking across two seeds,
rankings not requested left out, and the chance level beside."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gridlab.report.sections.rationale import SECTION
from tests.rows import model_axes


def rows() -> pd.DataFrame:
    """attention only (the other rankings null): seed 0 AUC 0.5, 1.0 and P@1/P@3 [1, .5], [0, .5];
    seed 1 AUC 1.0 and [1, 1], then an instance without a rationale item (all null)."""
    instances = {
        0: [(0.5, [1.0, 0.5], 1, 4), (1.0, [0.0, 0.5], 2, 4)],
        1: [(1.0, [1.0, 1.0], 1, 5), (None, None, 0, 5)],
    }
    records = []
    for seed, values in instances.items():
        for i, (auc, precision, tokens, length) in enumerate(values):
            row = {
                **model_axes(seed, dataset="synthetic"),
                "instance_id": i,
                "length": length,
                "pred": 0,
                "max_attention": 0.5,
                "ks": [1, 3],
                "rationale_tokens": tokens,
                "auc_attention": auc,
                "precision_at_k_attention": precision,
            }
            for ranking in ("gradient", "grad_x_attention", "leave_one_out"):
                row[f"auc_{ranking}"] = None
                row[f"precision_at_k_{ranking}"] = None
            records.append(row)
    return pd.DataFrame.from_records(records)


def test_recovery_table(fake_inputs):
    output = SECTION.build(fake_inputs({"rationale_recovery": rows()}))
    assert [a.id for a in output.artifacts] == ["rationale_recovery", "rationale_auc"]
    table = output.artifacts[0]
    assert list(table.frame["ranking"]) == ["attention"]
    row = table.frame.iloc[0]
    assert row["auc"] == pytest.approx((0.75 + 1.0) / 2)
    assert row["auc_seed_sd"] == pytest.approx(math.sqrt(0.03125))
    assert row["precision_at_1"] == pytest.approx((0.5 + 1.0) / 2)
    assert row["precision_at_3"] == pytest.approx((0.5 + 1.0) / 2)
    assert row["chance_precision"] == pytest.approx((0.375 + 0.2) / 2)  # P/T, instances with P > 0
    assert (row["n_seeds"], row["n_instances"]) == (2, 4)
    assert list(table.display.columns) == [
        "dataset",
        "encoder",
        "ranking",
        "AUC",
        "AUC 95% CI",
        "P@1",
        "P@3",
        "chance P (P/T)",
        "seeds",
        "instances",
    ]
    assert output.missing == []


def test_missing_rows(fake_inputs):
    output = SECTION.build(fake_inputs({}))
    assert output.artifacts == [] and "rationale_recovery" in output.missing[0]
