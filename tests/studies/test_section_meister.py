"""The Meister section on hand-made rows: entropy and tau across two seeds beside the paper's Tables 1 and 6,
the correlation of the sparsegen lambda with entropy (Table 2) computed by hand, Fig. 3, Table 5, and the
trained cells' test accuracy beside Table 3's baselines."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gridlab.studies.sections.meister import SECTION, baseline_ours
from tests.rows import model_axes


def axes(projection="softmax", lam=math.nan, seed=0) -> dict:
    return model_axes(seed, f"{projection}{lam}-{seed}", projection=projection, projection_lambda=lam)


ENTROPY_COLUMNS = ("entropy_gy_x", "entropy_dy_x", "entropy_gy_h", "entropy_dy_h", "entropy_gh_x")
LAMBDAS = (-1.0, 0.0, 0.5)
# mean entropy_gy_x of each sparsegen cell, by seed, in LAMBDAS order
SPARSE_ENTROPY = {0: (0.9, 0.8, 0.7), 1: (0.92, 0.85, 0.6)}


def importance_rows() -> pd.DataFrame:
    records = []
    for seed, (gh, tau) in {0: ((0.9, 0.8), (0.3, 0.5)), 1: ((0.95, 0.85), (0.2, 0.4))}.items():
        for i in range(2):
            records.append(
                {
                    **axes(seed=seed),
                    "instance_id": i,
                    **{c: 0.5 for c in ENTROPY_COLUMNS},
                    "entropy_gh_x": gh[i],
                    "tau_gy_x": tau[i],
                    "tau_dy_x": 0.1,
                    "tau_gy_h": 0.7,
                    "tau_dy_h": 0.6,
                }
            )
    for seed, means in SPARSE_ENTROPY.items():
        for lam, mean in zip(LAMBDAS, means):
            for i, offset in enumerate((-0.01, 0.01)):
                records.append(
                    {
                        **axes("sparsegen", lam, seed),
                        "instance_id": i,
                        **{c: 0.5 + 0.1 * lam for c in ENTROPY_COLUMNS},
                        "entropy_gy_x": mean + offset,
                        "tau_gy_x": 0.4 - 0.1 * lam + seed * 0.02,
                        "tau_dy_x": 0.3,
                        "tau_gy_h": 0.9,
                        "tau_dy_h": 0.8,
                    }
                )
    return pd.DataFrame.from_records(records)


def adversary_rows() -> pd.DataFrame:
    records = []
    for seed, (jsd, accuracy, base) in {0: (0.60, 0.70, 0.80), 1: (0.64, 0.74, 0.82)}.items():
        records.append(
            {
                **axes(seed=seed),
                "variant": "frozen",
                "jsd_mean": jsd,
                "jsd_median": jsd,
                "tvd_mean": 0.1,
                "accuracy": accuracy,
                "base_accuracy": base,
                "accuracy_delta": accuracy - base,
                "epochs_trained": 8,
                "best_epoch": 3,
                "instances": 100,
            }
        )
        records.append(
            {
                **axes(seed=seed),
                "variant": "unfrozen",
                "jsd_mean": 0.5,
                "jsd_median": 0.5,
                "tvd_mean": 0.05,
                "accuracy": base,
                "base_accuracy": base,
                "accuracy_delta": 0.0,
                "epochs_trained": 8,
                "best_epoch": 5,
                "instances": 100,
            }
        )
    return pd.DataFrame.from_records(records)


def artifact(output, artifact_id: str):
    return next(a for a in output.artifacts if a.id == artifact_id)


def softmax_row(frame: pd.DataFrame) -> pd.Series:
    (index,) = np.flatnonzero(frame["projection"] == "softmax")
    return frame.iloc[index]


def pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx, dy = x - x.mean(), y - y.mean()
    return float((dx * dy).sum() / math.sqrt((dx**2).sum() * (dy**2).sum()))


def test_table1_entropy_across_seeds_beside_the_paper(fake_inputs):
    frame = artifact(SECTION.build(fake_inputs({"sparsity_importance": importance_rows()})), "meister_table1").frame
    row = softmax_row(frame)
    assert row["entropy_gh_x"] == pytest.approx(0.875)  # cells: 0.85, 0.90
    assert row["entropy_gh_x_seed_sd"] == pytest.approx(0.05 / math.sqrt(2))
    assert row["entropy_gh_x_sd"] == pytest.approx(0.05)  # each cell's std over its two instances
    assert row["n_seeds"] == 2
    assert (row["paper_mean"], row["paper_std"]) == (pytest.approx(0.93), pytest.approx(0.05))
    assert frame["paper_mean"].isna().sum() == 3  # sparsegen: not in the paper's Table 1


def test_table6_tau_per_measure_beside_the_paper(fake_inputs):
    frame = artifact(SECTION.build(fake_inputs({"sparsity_importance": importance_rows()})), "meister_table6").frame
    row = softmax_row(frame)
    assert row["tau_gy_x"] == pytest.approx(0.35)  # cells: 0.4, 0.3
    assert row["tau_gy_x_seed_sd"] == pytest.approx(0.1 / math.sqrt(2))
    assert row["tau_gy_h"] == pytest.approx(0.7) and row["tau_dy_x"] == pytest.approx(0.1)
    assert (row["paper_tau_gy_x"], row["paper_tau_gy_x_sd"]) == (pytest.approx(0.25), pytest.approx(0.28))
    assert row["paper_tau_dy_h"] == pytest.approx(0.49)


def test_table2_lambda_entropy_correlation_by_hand(fake_inputs):
    output = SECTION.build(fake_inputs({"sparsity_importance": importance_rows()}))
    frame = artifact(output, "meister_table2").frame
    row = frame[frame["entropy"] == "entropy_gy_x"].iloc[0]
    lambdas = [*LAMBDAS, *LAMBDAS]
    entropy = [*SPARSE_ENTROPY[0], *SPARSE_ENTROPY[1]]
    # Kendall tau-b: the 12 pairs with different lambdas are all discordant; 3 pairs tie on lambda, none on
    # entropy, so tau_b = (0 - 12) / sqrt((15 - 3) * (15 - 0)).
    assert row["kendall_tau_b"] == pytest.approx(-12 / math.sqrt(12 * 15))
    assert row["pearson_r"] == pytest.approx(pearson(lambdas, entropy))
    assert row["spearman_rho"] == pytest.approx(pearson([1.5, 3.5, 5.5, 1.5, 3.5, 5.5], [5, 3, 2, 6, 4, 1]))
    assert row["n_cells"] == 6 and row["n_lambdas"] == 3
    assert row["paper_correlation"] == pytest.approx(-0.866)
    assert set(frame["entropy"]) == set(ENTROPY_COLUMNS)
    assert frame.loc[frame["entropy"] != "entropy_gy_x", "paper_correlation"].isna().all()
    assert frame.loc[frame["entropy"] == "entropy_dy_x", "pearson_r"].iloc[0] == pytest.approx(1.0)


def test_table2_needs_three_lambda_values(fake_inputs):
    """Over two lambda values every rank correlation is +-1: a sweep cut short gets no row."""
    rows = importance_rows()
    short = rows[rows["projection_lambda"].fillna(0.0) != LAMBDAS[-1]]
    output = SECTION.build(fake_inputs({"sparsity_importance": short}))
    assert "meister_table2" not in {a.id for a in output.artifacts}
    assert any("at least 3 projection_lambda values" in line for line in output.missing)


def test_fig3_one_panel_four_measures(fake_inputs):
    output = SECTION.build(fake_inputs({"sparsity_importance": importance_rows()}))
    figure = artifact(output, "meister_fig3").figure
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == 1 and len(panels[0].containers) == 4
    assert panels[0].get_xscale() == "symlog"
    (line,) = [c for c in panels[0].containers if c.get_label() == "g_y(x)"]
    x, y = line.lines[0].get_data()
    assert list(x) == list(LAMBDAS)
    assert list(y) == pytest.approx([0.4 - 0.1 * lam + 0.01 for lam in LAMBDAS])  # seeds 0 and 1: +0, +0.02


def test_table5_adversaries_and_missing_lines(fake_inputs):
    output = SECTION.build(fake_inputs({"adversarial_model": adversary_rows()}))
    frame = artifact(output, "meister_table5").frame.set_index("variant")
    assert frame.loc["frozen", "jsd_mean"] == pytest.approx(0.62)
    assert frame.loc["frozen", "jsd_mean_seed_sd"] == pytest.approx(0.04 / math.sqrt(2))
    assert frame.loc["frozen", "accuracy_delta"] == pytest.approx(-0.09)
    assert frame.loc["frozen", "paper_jsd"] == pytest.approx(0.62)  # BiLSTM frozen, SST
    assert frame.loc["unfrozen", "paper_jsd"] == pytest.approx(0.61)
    assert [a.id for a in output.artifacts] == ["meister_table5"]
    assert "`sparsity_importance`" in " ".join(output.missing)


def test_no_lambda_sweep_is_reported(fake_inputs):
    rows = importance_rows()
    output = SECTION.build(fake_inputs({"sparsity_importance": rows[rows["projection"] == "softmax"]}))
    assert {a.id for a in output.artifacts} == {"meister_table1", "meister_table6"}
    missing = " ".join(output.missing)
    assert "Table 2" in missing and "projection_lambda" in missing and "`adversarial_model`" in missing


def test_table3_test_accuracy_across_seeds_beside_the_softmax_baseline(fake_inputs):
    cells = pd.DataFrame.from_records(
        [
            {**axes("softmax", seed=0), "test_accuracy": 0.80},
            {**axes("softmax", seed=1), "test_accuracy": 0.84},
            {**axes("sparsemax", seed=0), "test_accuracy": 0.70},
        ]
    )
    inputs = fake_inputs({"sparsity_importance": importance_rows()}, cells=cells)
    frame = artifact(SECTION.build(inputs), "meister_table3").frame.set_index("projection")
    assert frame.loc["softmax", "test_accuracy"] == pytest.approx(0.82)
    assert frame.loc["softmax", "test_accuracy_seed_sd"] == pytest.approx(0.04 / math.sqrt(2))
    assert frame.loc["softmax", "paper_accuracy"] == pytest.approx(0.82)  # SST BiLSTM (B)
    assert math.isnan(frame.loc["sparsemax", "paper_accuracy"])  # Table 3 states the softmax baselines only
    long = baseline_ours(inputs).set_index("projection")
    assert long.loc["softmax", "quantity"] == "test_performance" and long.loc["softmax", "n_seeds"] == 2
