"""The Vashishth section on hand-made rows: Train+Infer / Infer deltas across two seeds, the paper's numbers
beside them, Fig. 2's panels per task type and Fig. 4's lines, and what it reports missing."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure

from gridlab.report.artifacts import Figure, Table
from gridlab.studies.sections.vashishth import SECTION, max_attention_bin

T_975_1 = 12.706204736174707  # scipy.stats.t.ppf(0.975, 1): the 95% interval with two seeds


def axes(dataset="sst", encoder="lstm", attention="additive", architecture="flat", mode="learned", seed=0) -> dict:
    cell = f"{dataset}-{encoder}-{attention}-{architecture}-{mode}-{seed}"
    return {
        "cell_id": cell,
        "dataset": dataset,
        "encoder": encoder,
        "attention": attention,
        "projection": "softmax",
        "projection_lambda": math.nan,
        "architecture": architecture,
        "attention_mode": mode,
        "seed": seed,
    }


def ablation_rows() -> pd.DataFrame:
    """SST flat learned cells (seeds 0, 1) and their uniform-trained twins; one SNLI pair cell."""
    records = []
    learned = {
        0: {"learned": 0.80, "uniform": 0.78, "random": 0.79, "permute": 0.79},
        1: {"learned": 0.84, "uniform": 0.80, "random": 0.82, "permute": 0.81},
    }
    for seed, values in learned.items():
        for mode, value in values.items():
            records.append(
                {
                    **axes(seed=seed),
                    "mode": mode,
                    "metric": "accuracy",
                    "value": value,
                    "delta": value - values["learned"],
                    "instances": 100,
                }
            )
    for seed, own in ((0, 0.79), (1, 0.82)):  # trained with uniform attention: their own `learned` rows
        for mode, value in (("learned", own), ("uniform", own), ("permute", own - 0.1)):
            records.append(
                {
                    **axes(mode="uniform", seed=seed),
                    "mode": mode,
                    "metric": "accuracy",
                    "value": value,
                    "delta": value - own,
                    "instances": 100,
                }
            )
    for mode, value in (("learned", 0.70), ("permute", 0.40)):
        records.append(
            {
                **axes("snli", architecture="pair"),
                "mode": mode,
                "metric": "accuracy",
                "value": value,
                "delta": value - 0.70,
                "instances": 100,
            }
        )
    return pd.DataFrame.from_records(records)


def permutation_rows() -> pd.DataFrame:
    records = []
    for dataset, architecture, tvds in (
        ("sst", "flat", [0.01, 0.02, 0.03, 0.05]),
        ("snli", "pair", [0.3, 0.5, 0.4, 0.6]),
    ):
        for i, (tvd, top) in enumerate(zip(tvds, [0.2, 0.25, 0.6, 0.9])):
            records.append(
                {
                    **axes(dataset, architecture=architecture),
                    "instance_id": i,
                    "max_attention": top,
                    "tvd_median": tvd,
                    "tvd_mean": tvd,
                    "tvd_max": tvd,
                }
            )
    return pd.DataFrame.from_records(records)


def layer_rows() -> pd.DataFrame:
    accuracy = {0: [0.80, 0.70, 0.60], 1: [0.82, 0.74, 0.50]}
    return pd.DataFrame.from_records(
        [
            {
                **axes(encoder="transformer", attention="dot", seed=seed),
                "layers_permuted": k,
                "accuracy": a,
                "delta": a - values[0],
                "instances": 50,
            }
            for seed, values in accuracy.items()
            for k, a in enumerate(values)
        ]
    )


def table(output, table_id: str) -> Table:
    return next(a for a in output.artifacts if a.id == table_id)


def row(frame: pd.DataFrame, **match) -> pd.Series:
    chosen = frame
    for key, value in match.items():
        chosen = chosen[chosen[key] == value]
    assert len(chosen) == 1, (match, chosen)
    return chosen.iloc[0]


def test_train_infer_and_infer_across_two_seeds(fake_inputs):
    output = SECTION.build(fake_inputs({"attention_ablation": ablation_rows()}))
    frame = table(output, "vashishth_table1").frame
    base = row(frame, variant="learned", setting="base")
    assert base["mean"] == pytest.approx(82.0) and base["std"] == pytest.approx(math.sqrt(8.0))
    assert base["n_seeds"] == 2 and base["paper_value"] == pytest.approx(83.4)
    # Train+Infer: (0.79 - 0.80, 0.82 - 0.84) = (-1, -2) points
    train = row(frame, variant="uniform", setting="train+infer")
    assert train["mean"] == pytest.approx(-1.5) and train["std"] == pytest.approx(math.sqrt(0.5))
    assert train["ci_high"] - train["mean"] == pytest.approx(T_975_1 * math.sqrt(0.5) / math.sqrt(2))
    assert train["paper_value"] == pytest.approx(-1.0)
    # Infer: (0.78 - 0.80, 0.80 - 0.84) = (-2, -4) points
    infer = row(frame, variant="uniform", setting="infer")
    assert infer["mean"] == pytest.approx(-3.0) and infer["std"] == pytest.approx(math.sqrt(2.0))
    assert infer["paper_value"] == pytest.approx(-0.8)
    permute = row(frame, variant="permute", setting="infer")
    assert permute["mean"] == pytest.approx(-2.0) and permute["paper_value"] == pytest.approx(-1.7)
    # a uniform-trained cell's own permute row is not an Infer row of the learned model
    assert len(frame[(frame["variant"] == "permute")]) == 1
    assert not (frame["variant"] == "random").loc[frame["setting"] == "train+infer"].any()
    assert list(frame["variant"] + "/" + frame["setting"]) == [
        "learned/base",
        "uniform/train+infer",
        "uniform/infer",
        "random/infer",
        "permute/infer",
    ]


def test_pair_table_and_what_is_missing(fake_inputs):
    output = SECTION.build(fake_inputs({"attention_ablation": ablation_rows()}))
    pair = table(output, "vashishth_table2").frame
    assert row(pair, variant="learned")["mean"] == pytest.approx(70.0)
    assert row(pair, variant="learned")["paper_value"] == pytest.approx(75.7)
    assert row(pair, variant="permute")["mean"] == pytest.approx(-30.0)
    assert row(pair, variant="permute")["paper_value"] == pytest.approx(-41.0)
    assert math.isnan(row(pair, variant="permute")["std"])  # one seed
    assert table(output, "vashishth_table1").display is not None
    assert not any(a.id == "vashishth_table3" for a in output.artifacts)
    missing = " | ".join(output.missing)
    assert "Table 3" in missing and "Table 2" in missing  # no generation cells; no Train+Infer for SNLI
    assert "`permutation`" in missing and "`layer_permutation`" in missing


def test_fig2_one_panel_per_task_and_dataset(fake_inputs):
    output = SECTION.build(fake_inputs({"permutation": permutation_rows()}))
    figure = next(a for a in output.artifacts if isinstance(a, Figure) and a.id == "vashishth_fig2")
    assert isinstance(figure.figure, MplFigure)
    panels = [ax for ax in figure.figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["pair · snli", "single · sst"]
    data = table(output, "vashishth_fig2_data").frame
    # max attention 0.2 and 0.25 fall in 0-0.25, 0.6 in 0.5-0.75, 0.9 in 0.75-1
    sst = data[data["dataset"] == "sst"].set_index("max_attention_bin")
    assert sst.loc["0-0.25", "instances"] == 2 and sst.loc["0-0.25", "median"] == pytest.approx(0.015)
    assert sst.loc["0.75-1", "median"] == pytest.approx(0.05)
    assert "Tables 1-3" in " ".join(output.missing)


def test_max_attention_bins_close_on_the_right():
    assert list(max_attention_bin(pd.Series([0.0, 0.25, 0.26, 0.5, 0.75, 1.0]))) == [
        "0-0.25",
        "0-0.25",
        "0.25-0.5",
        "0.25-0.5",
        "0.5-0.75",
        "0.75-1",
    ]


def test_fig4_accuracy_per_layer_across_seeds(fake_inputs):
    output = SECTION.build(fake_inputs({"layer_permutation": layer_rows()}))
    data = table(output, "vashishth_fig4_data").frame.set_index("layers_permuted")
    assert list(data.index) == [0, 1, 2]
    assert data.loc[1, "mean"] == pytest.approx(0.72) and data.loc[2, "mean"] == pytest.approx(0.55)
    assert data.loc[2, "std"] == pytest.approx(0.1 / math.sqrt(2))  # (0.60, 0.50)
    figure = next(a for a in output.artifacts if a.id == "vashishth_fig4").figure
    (ax,) = figure.axes
    assert len(ax.containers) == 1  # one errorbar line per configuration
    dotted = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert len(dotted) == 1 and dotted[0].get_ydata()[0] == pytest.approx(0.81)  # the unpermuted accuracy
