"""The J&W section on hand-made rows: Table 2's numbers per class and overall, across two seeds, the
paper's columns beside them, the figures, and what it reports missing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gridlab.report.artifacts import Figure, Table
from gridlab.studies.sections.jain_wallace import SECTION, at_plotting_threshold, jsd_within
from tests.rows import model_axes

T_975_1 = 12.706204736174707  # scipy.stats.t.ppf(0.975, 1)


def axes(seed: int, encoder: str = "lstm") -> dict:
    return model_axes(seed, f"sst-{encoder}-{seed}", encoder=encoder)


def correlation_rows() -> pd.DataFrame:
    """(pred, tau_g, p_g, tau_loo, p_loo) per instance: seed 0 and seed 1 of one model."""
    instances = {
        0: [(0, 0.2, 0.01, 0.1, 0.20), (0, 0.4, 0.20, 0.3, 0.01), (1, 0.6, 0.01, 0.5, 0.01)],
        1: [
            (0, 0.4, 0.01, 0.2, 0.01),
            (0, 0.6, 0.01, 0.2, 0.30),
            (0, None, None, None, None),
            (1, 0.8, 0.50, 0.7, 0.01),
        ],
    }
    records = [
        {
            **axes(seed),
            "instance_id": i,
            "length": 5,
            "label": pred,
            "pred": pred,
            "max_attention": 0.5,
            "tau_g": tau_g,
            "p_g": p_g,
            "tau_loo": tau_loo,
            "p_loo": p_loo,
        }
        for seed, rows in instances.items()
        for i, (pred, tau_g, p_g, tau_loo, p_loo) in enumerate(rows)
    ]
    return pd.DataFrame.from_records(records)


def test_table2_numbers(fake_inputs):
    output = SECTION.build(fake_inputs({"importance_correlation": correlation_rows()}))
    table = next(a for a in output.artifacts if a.id == "jw_table2")
    assert isinstance(table, Table)
    frame = table.frame.set_index("pred")
    assert list(frame.index) == ["0", "1", "all"]
    zero = frame.loc["0"]
    assert zero["tau_g"] == pytest.approx(0.4)  # per-seed means 0.3, 0.5
    assert zero["tau_g_seed_sd"] == pytest.approx(math.sqrt(0.02))
    assert zero["tau_g_ci_high"] == pytest.approx(0.4 + T_975_1 * math.sqrt(0.02) / math.sqrt(2))
    assert zero["tau_g_sd"] == pytest.approx(0.1)  # instance std 0.1 in both seeds
    assert zero["sig_g"] == pytest.approx(0.75)  # 1/2 and 2/2 significant (the null tau is left out)
    assert zero["tau_loo"] == pytest.approx((0.2 + 0.2) / 2)
    assert zero["sig_loo"] == pytest.approx((0.5 + 0.5) / 2)
    assert (zero["n_seeds"], zero["n_instances"]) == (2, 5)
    overall = frame.loc["all"]
    assert overall["tau_g"] == pytest.approx(0.5)  # seed means 0.4 and 0.6
    assert overall["sig_g"] == pytest.approx((2 / 3 + 2 / 3) / 2)
    # the paper's numbers beside ours, for SST BiLSTM class 0 and 1 (none for "all": J&W give per class)
    assert (zero["paper_tau_g"], zero["paper_tau_g_sd"], zero["paper_sig_g"]) == (0.40, 0.21, 0.59)
    assert (frame.loc["1", "paper_tau_loo"], frame.loc["1", "paper_sig_loo"]) == (0.33, 0.47)
    assert math.isnan(overall["paper_tau_g"])
    shown = table.display.set_index("class")
    assert shown.loc["0", "τ_g"] == "0.40 ± 0.10" and shown.loc["0", "J&W τ_g"] == "0.40 ± 0.21"
    assert list(table.display.columns[:3]) == ["dataset", "encoder", "class"]  # constant axes left out


def test_figures_and_missing(fake_inputs):
    rows = correlation_rows()
    permutation = rows[
        [
            "cell_id",
            "dataset",
            "encoder",
            "attention",
            "projection",
            "projection_lambda",
            "architecture",
            "attention_mode",
            "seed",
            "pred",
            "max_attention",
        ]
    ].assign(tvd_median=0.01, tvd_mean=0.02, tvd_max=0.1)
    output = SECTION.build(fake_inputs({"importance_correlation": rows, "permutation": permutation}))
    ids = [a.id for a in output.artifacts]
    assert ids == ["jw_table2", "jw_fig2_tau_g", "jw_fig2_tau_loo", "jw_permutation", "jw_fig3"]
    assert all(isinstance(a, Figure) for a in output.artifacts if a.id.startswith("jw_fig"))
    permuted = next(a for a in output.artifacts if a.id == "jw_permutation").frame.iloc[0]
    assert (permuted["tvd_median_median"], permuted["tvd_max_mean"], permuted["n_seeds"]) == (0.01, 0.1, 2)
    assert output.missing == ["J&W Figs. 4–5 need `adversarial` rows"]


def test_adversarial_only(fake_inputs):
    rows = correlation_rows()[
        [
            "cell_id",
            "dataset",
            "encoder",
            "attention",
            "projection",
            "projection_lambda",
            "architecture",
            "attention_mode",
            "seed",
            "pred",
            "max_attention",
        ]
    ]
    adversarial = rows.assign(jsd_eps_max=[0.6, 0.2, 0.69, 0.1, 0.3, 0.4, 0.68], tvd_at_jsd=0.005)
    output = SECTION.build(fake_inputs({"adversarial": adversarial}))
    assert [a.id for a in output.artifacts] == ["jw_adversarial", "jw_fig4_selection", "jw_fig4", "jw_fig5"]
    table = output.artifacts[0].frame.iloc[0]
    assert table["share_above_0_5"] == pytest.approx((2 / 3 + 1 / 4) / 2)
    assert table["jsd_eps_max_mean"] == pytest.approx(((0.6 + 0.2 + 0.69) / 3 + (0.1 + 0.3 + 0.4 + 0.68) / 4) / 2)
    assert "J&W Table 2 and Fig. 2 need `importance_correlation` rows" in output.missing
    # rows without candidate columns (written before they existed): the 0.05 rule is empty, never an error
    selection = output.artifacts[1]
    assert isinstance(selection, Table)
    frame = selection.frame.iloc[0]
    assert frame["jsd_eps_max_median"] == pytest.approx((0.6 + (0.3 + 0.4) / 2) / 2)  # per-seed medians
    assert math.isnan(frame["jsd_plot_median"]) and math.isnan(frame["jsd_plot_mean"])
    assert frame["n_with_candidates"] == 0 and frame["paper_jsd_median"] == 0.69
    assert selection.display.iloc[0]["median, TVD ≤ 0.05"] == "–"
    assert "predate the `candidate_jsd` / `candidate_tvd` columns" in selection.caption


def adversarial_rows() -> pd.DataFrame:
    """Two seeds of SST BiLSTM, k = 3 candidates per instance, with the eps-max JSD Algorithm 3 gives at
    eps 0.01 beside every candidate's (JSD, TVD)."""
    instances = {
        0: [
            ([0.30, 0.62, 0.55], [0.005, 0.03, 0.08]),  # eps: 0.30; TVD <= 0.05: 0.62
            ([0.20, 0.40, 0.60], [0.06, 0.07, 0.20]),  # nothing within either: 0 and 0
            ([0.10, 0.67, 0.30], [0.001, 0.05, 0.02]),  # eps: 0.10; 0.05 itself is kept: 0.67
        ],
        1: [
            ([0.50, 0.64, 0.20], [0.01, 0.04, 0.001]),  # eps (0.01 itself kept): 0.50; 0.05: 0.64
            ([0.45, 0.00, 0.69], [0.002, 0.0, 0.051]),  # eps: 0.45; 0.05: 0.45 (0.69 is just outside)
        ],
    }
    records = [
        {
            **axes(seed),
            "instance_id": i,
            "pred": i % 2,
            "max_attention": 0.5,
            "jsd_eps_max": max([j for j, t in zip(jsds, tvds) if t <= 0.01], default=0.0),
            "tvd_at_jsd": 0.0,
            "candidate_jsd": np.asarray(jsds),  # as Parquet list cells come back
            "candidate_tvd": np.asarray(tvds),
        }
        for seed, rows in instances.items()
        for i, (jsds, tvds) in enumerate(rows)
    ]
    return pd.DataFrame.from_records(records)


def test_plotting_threshold_recomputed_from_candidates(fake_inputs):
    rows = adversarial_rows()
    assert list(at_plotting_threshold(rows)) == pytest.approx([0.62, 0.0, 0.67, 0.64, 0.45])
    # the same recomputation at eps gives back Algorithm 3's column
    recomputed = [jsd_within(j, t, 0.01) for j, t in zip(rows["candidate_jsd"], rows["candidate_tvd"])]
    assert recomputed == pytest.approx(list(rows["jsd_eps_max"]))
    assert math.isnan(jsd_within(None, None, 0.05)) and math.isnan(jsd_within(math.nan, math.nan, 0.05))
    output = SECTION.build(fake_inputs({"adversarial": rows}))
    table = next(a for a in output.artifacts if a.id == "jw_fig4_selection")
    frame = table.frame.iloc[0]
    # per cell, then across seeds: seed 0 medians 0.10 / 0.62, seed 1 medians 0.475 / 0.545
    assert frame["jsd_eps_max_median"] == pytest.approx((0.10 + 0.475) / 2)
    assert frame["jsd_plot_median"] == pytest.approx((0.62 + 0.545) / 2)
    assert frame["jsd_plot_median_seed_sd"] == pytest.approx(abs(0.62 - 0.545) / math.sqrt(2))
    assert frame["jsd_eps_max_mean"] == pytest.approx((0.40 / 3 + 0.95 / 2) / 2)
    assert frame["jsd_plot_mean"] == pytest.approx((1.29 / 3 + 1.09 / 2) / 2)
    assert (frame["n_seeds"], frame["n_instances"], frame["n_with_candidates"]) == (2, 5, 5)
    assert "predate" not in table.caption
    shown = table.display.iloc[0]
    assert shown["median, TVD ≤ 0.05"] == "0.583 ± 0.053" and shown["J&W Fig. 4"] == "toward 0.69"


def test_rows_partly_without_candidates(fake_inputs):
    rows = adversarial_rows()
    rows.loc[rows["seed"] == 1, ["candidate_jsd", "candidate_tvd"]] = math.nan  # an older part, concatenated
    table = next(a for a in SECTION.build(fake_inputs({"adversarial": rows})).artifacts if a.id == "jw_fig4_selection")
    frame = table.frame.iloc[0]
    assert frame["jsd_plot_median"] == pytest.approx(0.62) and frame["n_with_candidates"] == 3  # seed 0 only
    assert "Only 3 of 5 instances carry candidate columns" in table.caption


def test_test_performance_beside_table1(fake_inputs):
    cells = pd.DataFrame.from_records(
        [
            {**axes(0), "test_accuracy": 0.80},
            {**axes(1), "test_accuracy": 0.84},
            {**axes(0, "average"), "test_accuracy": 0.78},
        ]
    )
    output = SECTION.build(fake_inputs({"importance_correlation": correlation_rows()}, cells=cells))
    table = next(a for a in output.artifacts if a.id == "jw_table1").frame.set_index("encoder")
    assert table.loc["lstm", "test_accuracy"] == pytest.approx(0.82)
    assert (table.loc["lstm", "paper_value"], table.loc["lstm", "paper_metric"]) == (0.81, "f1")
    assert math.isnan(table.loc["average", "paper_value"])  # J&W Table 1 is the BiLSTM's only
