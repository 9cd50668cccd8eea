"""Across-seed statistics on a frame small enough to check by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gridlab.report.stats import (
    across_seeds,
    bracket,
    constant_axes,
    grouping_axes,
    interval,
    per_cell,
    plus_minus,
    seed_summary,
    seed_table,
)

T_975_2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)


def rows() -> pd.DataFrame:
    """Three seeds of one configuration (values 1 2 3 | 4 6 | null 8) and one seed of another."""
    records = []
    for seed, values in ((0, [1.0, 2.0, 3.0]), (1, [4.0, 6.0]), (2, [None, 8.0])):
        records += [
            {
                "cell_id": f"a{seed}",
                "dataset": "sst",
                "encoder": "lstm",
                "projection": "softmax",
                "projection_lambda": math.nan,
                "seed": seed,
                "x": v,
            }
            for v in values
        ]
    records += [
        {
            "cell_id": "b0",
            "dataset": "sst",
            "encoder": "average",
            "projection": "softmax",
            "projection_lambda": math.nan,
            "seed": 0,
            "x": 10.0,
        }
    ]
    return pd.DataFrame.from_records(records)


def test_per_cell_means_drop_nulls():
    cells = per_cell(rows(), ["dataset", "encoder"], "x")
    assert cells.set_index("cell_id")["x"].to_dict() == {"a0": 2.0, "a1": 5.0, "a2": 8.0, "b0": 10.0}


def test_across_seeds_mean_std_and_t_interval():
    summary = seed_summary(rows(), ["dataset", "encoder"], "x").set_index("encoder")
    lstm = summary.loc["lstm"]
    assert lstm["mean"] == pytest.approx(5.0)  # mean of the per-seed means 2, 5, 8 (not of the 6 instances)
    assert lstm["std"] == pytest.approx(3.0)  # sample std of 2, 5, 8
    assert lstm["n_seeds"] == 3
    half = T_975_2 * 3.0 / math.sqrt(3)
    assert (lstm["ci_low"], lstm["ci_high"]) == pytest.approx((5.0 - half, 5.0 + half))
    one = summary.loc["average"]  # a single seed: no spread, no interval
    assert one["mean"] == 10.0 and one["n_seeds"] == 1
    assert math.isnan(one["std"]) and math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])


def test_instance_std_per_cell_then_averaged():
    summary = seed_summary(rows(), ["dataset", "encoder"], "x", stat="std").set_index("encoder")
    # population std per cell: sqrt(2/3), 1, 0 -> their mean
    assert summary.loc["lstm", "mean"] == pytest.approx((math.sqrt(2 / 3) + 1.0 + 0.0) / 3)


def test_all_null_cell_is_left_out_of_the_seeds():
    frame = rows()
    frame.loc[frame["cell_id"] == "a2", "x"] = None
    summary = seed_summary(frame, ["encoder"], "x").set_index("encoder")
    assert summary.loc["lstm", "n_seeds"] == 2 and summary.loc["lstm", "mean"] == pytest.approx(3.5)


def test_interval_helper_and_across_seeds_columns():
    mean, std, low, high, n = interval([2.0, 5.0, float("nan"), 8.0])
    assert (mean, std, n) == (5.0, pytest.approx(3.0), 3)
    cells = pd.DataFrame({"g": ["a", "a"], "v": [1.0, 3.0]})
    out = across_seeds(cells, ["g"], "v")
    assert list(out.columns) == ["g", "mean", "std", "n_seeds", "ci_low", "ci_high"]
    assert out.loc[0, "std"] == pytest.approx(math.sqrt(2))


def test_seed_table_names_columns_and_keeps_null_axes():
    table = seed_table(
        rows(), ["dataset", "encoder", "projection_lambda"], {"x": ("x", "mean"), "x_sd": ("x", "std")}, spread=["x"]
    )
    assert list(table.columns) == [
        "dataset",
        "encoder",
        "projection_lambda",
        "x",
        "x_seed_sd",
        "x_ci_low",
        "x_ci_high",
        "x_sd",
        "n_seeds",
        "n_instances",
    ]
    lstm = table.set_index("encoder").loc["lstm"]
    assert lstm["x"] == pytest.approx(5.0) and lstm["x_seed_sd"] == pytest.approx(3.0)
    assert lstm["n_seeds"] == 3 and lstm["n_instances"] == 7  # rows, the null one included


def test_grouping_and_constant_axes():
    frame = rows()
    assert grouping_axes(frame) == ["dataset", "encoder"]  # projection is constant: named in the caption
    assert constant_axes(frame, ["dataset", "encoder"]) == "projection softmax"


def test_formatting():
    assert plus_minus(0.4012, 0.2093) == "0.40 ± 0.21"
    assert plus_minus(0.4, float("nan")) == "0.40"
    assert plus_minus(None, 0.1) == "–"
    assert plus_minus(12.345, 1.0, 1) == "12.3 ± 1.0"
    assert bracket(0.381, 0.4249) == "[0.38, 0.42]"
    assert bracket(float("nan"), 1.0) == "–"
