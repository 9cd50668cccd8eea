"""The W&P section on hand-made rows: seed-variance JSD against J&W's adversarial JSD and W&P's adversaries
across two seeds, the CDF figure, the diagnostic MLP table, and subsets of the analyses."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gridlab.studies.sections.wiegreffe_pinter import SECTION
from tests.rows import model_axes

SEED_JSD = {0: [0.1, 0.2, 0.3], 1: [0.05, 0.15, 0.4]}
ADVERSARIAL_JSD = {0: [0.5, 0.1, 0.6], 1: [0.01, 0.2, 0.3]}  # above the seed JSD: 2 of 3, then 1 of 3


def seed_rows() -> pd.DataFrame:
    return pd.DataFrame.from_records(
        [
            {
                **model_axes(seed),
                "instance_id": i,
                "other_seeds": 1,
                "peer_cells": f"c{1 - seed}",
                "jsd_seed_mean": jsd,
                "jsd_seed_max": jsd,
                "tvd_seed_mean": 0.01,
            }
            for seed, values in SEED_JSD.items()
            for i, jsd in enumerate(values)
        ]
    )


def adversarial_rows() -> pd.DataFrame:
    return pd.DataFrame.from_records(
        [
            {
                **model_axes(seed),
                "instance_id": i,
                "jsd_eps_max": jsd,
                "tvd_at_jsd": 0.005,
                "steps_run": 100,
                "n_within_eps": 3,
            }
            for seed, values in ADVERSARIAL_JSD.items()
            for i, jsd in enumerate(values)
        ]
    )


def adversary_rows() -> pd.DataFrame:
    return pd.DataFrame.from_records(
        [
            {
                **model_axes(seed),
                "variant": "frozen",
                "jsd_mean": jsd,
                "jsd_median": jsd,
                "tvd_mean": 0.1,
                "accuracy": 0.7,
                "base_accuracy": 0.8,
                "accuracy_delta": -0.1,
                "epochs_trained": 8,
                "best_epoch": 2,
                "instances": 3,
            }
            for seed, jsd in ((0, 0.6), (1, 0.5))
        ]
    )


TRADEOFF = {0.01: ((0.10, 0.03), (0.12, 0.05)), 1.0: ((0.60, 0.20), (0.50, 0.30))}  # lam -> seed -> (JSD, TVD)


def tradeoff_rows() -> pd.DataFrame:
    return pd.DataFrame.from_records(
        [
            {**model_axes(seed), "lam": lam, "jsd_mean": jsd, "tvd_mean": tvd, "accuracy": 0.8, "instances": 3}
            for lam, by_seed in TRADEOFF.items()
            for seed, (jsd, tvd) in enumerate(by_seed)
        ]
    )


def mlp_rows() -> pd.DataFrame:
    accuracy = {"uniform": (0.70, 0.72), "learned": (0.75, 0.77), "base": (0.78, 0.82)}
    return pd.DataFrame.from_records(
        [
            {
                **model_axes(seed),
                "variant": variant,
                "accuracy": values[seed],
                "f1_macro": values[seed] - 0.01,
                "dev_accuracy": 0.7,
                "best_epoch": 4,
                "instances": 100,
            }
            for variant, values in accuracy.items()
            for seed in (0, 1)
        ]
    )


def cells() -> pd.DataFrame:
    return pd.DataFrame.from_records([{**model_axes(seed), "test_accuracy": a} for seed, a in ((0, 0.80), (1, 0.82))])


def artifact(output, artifact_id: str):
    return next(a for a in output.artifacts if a.id == artifact_id)


def test_seed_variance_against_adversaries(fake_inputs):
    inputs = fake_inputs(
        {
            "seed_variance": seed_rows(),
            "adversarial": adversarial_rows(),
            "adversarial_model": adversary_rows(),
            "adversary_tradeoff": tradeoff_rows(),
            "diagnostic_mlp": mlp_rows(),
        },
        cells(),
    )
    output = SECTION.build(inputs)
    assert output.missing == []
    frame = artifact(output, "wp_seed_vs_adversarial").frame
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["seed_jsd_max_median"] == pytest.approx(0.175)  # medians 0.2 and 0.15
    assert row["seed_jsd_max_mean"] == pytest.approx(0.2)
    assert row["adversarial_jsd_median"] == pytest.approx(0.35)  # medians 0.5 and 0.2
    assert row["adversarial_above_seed"] == pytest.approx(0.5)  # 2/3 and 1/3
    assert row["adversarial_above_seed_seed_sd"] == pytest.approx((1 / 3) / math.sqrt(2))
    assert row["adversary_frozen_jsd"] == pytest.approx(0.55)
    assert row["n_seeds"] == 2


def test_the_tradeoff_is_read_against_each_models_own_seed_distance(fake_inputs):
    """Per lam: the adversary's JSD and TVD across seeds, the seeds' own (seed_variance, per model over its
    instances, then across seeds) and the excess computed per model before the seeds are pooled."""
    output = SECTION.build(fake_inputs({"seed_variance": seed_rows(), "adversary_tradeoff": tradeoff_rows()}))
    frame = artifact(output, "wp_adversary_tradeoff").frame
    assert list(frame["lam"]) == [0.01, 1.0]
    top = frame.iloc[1]
    assert top["jsd"] == pytest.approx(0.55) and top["tvd"] == pytest.approx(0.25)
    seed_jsd = [sum(SEED_JSD[s]) / 3 for s in (0, 1)]  # 0.2 and 0.2
    assert top["seed_jsd"] == pytest.approx(sum(seed_jsd) / 2) and top["seed_tvd"] == pytest.approx(0.01)
    excess = [0.60 - seed_jsd[0], 0.50 - seed_jsd[1]]
    assert top["jsd_excess"] == pytest.approx(sum(excess) / 2)
    assert top["jsd_excess_ci_low"] < top["jsd_excess"] < top["jsd_excess_ci_high"]
    assert top["n_seeds"] == 2
    (ax,) = [ax for ax in artifact(output, "wp_tradeoff_curve").figure.axes if ax.get_visible()]
    (curve,) = ax.lines
    assert list(curve.get_xdata()) == pytest.approx([0.11, 0.55])  # rising lam


def test_cdf_figure_lines(fake_inputs):
    output = SECTION.build(
        fake_inputs(
            {"seed_variance": seed_rows(), "adversarial": adversarial_rows(), "adversarial_model": adversary_rows()}
        )
    )
    figure = artifact(output, "wp_jsd_cdf").figure
    (ax,) = [ax for ax in figure.axes if ax.get_visible()]
    steps = [line for line in ax.lines if line.get_drawstyle() == "steps-post"]
    assert len(steps) == 2  # other seeds, J&W adversarial
    seed_curve = steps[0]
    assert list(seed_curve.get_xdata()) == [0.0, *sorted(SEED_JSD[0] + SEED_JSD[1])]
    assert list(seed_curve.get_ydata())[-1] == 1.0
    (vertical,) = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert vertical.get_xdata()[0] == pytest.approx(0.55)


def test_diagnostic_mlp_table(fake_inputs):
    output = SECTION.build(fake_inputs({"diagnostic_mlp": mlp_rows()}, cells()))
    frame = artifact(output, "wp_diagnostic_mlp").frame
    assert list(frame["variant"]) == ["uniform", "learned", "base"]
    base = frame.set_index("variant").loc["base"]
    assert base["accuracy"] == pytest.approx(0.80) and base["accuracy_seed_sd"] == pytest.approx(0.04 / math.sqrt(2))
    assert base["f1_macro"] == pytest.approx(0.79)
    assert base["model_accuracy"] == pytest.approx(0.81)
    assert base["n_seeds"] == 2
    # only the MLP ran: no comparison table or figure, and the three absent analyses are named
    assert [a.id for a in output.artifacts] == ["wp_diagnostic_mlp"]
    missing = " ".join(output.missing)
    assert all(f"`{a}`" in missing for a in ("seed_variance", "adversarial", "adversarial_model", "adversary_tradeoff"))


def test_adversarial_alone(fake_inputs):
    output = SECTION.build(fake_inputs({"adversarial": adversarial_rows()}))
    frame = artifact(output, "wp_seed_vs_adversarial").frame
    assert "seed_jsd_max_median" not in frame and "adversarial_above_seed" not in frame
    assert frame.iloc[0]["adversarial_jsd_mean"] == pytest.approx((1.2 / 3 + 0.51 / 3) / 2)
    assert {a.id for a in output.artifacts} == {"wp_seed_vs_adversarial", "wp_jsd_cdf"}


def test_a_single_seed_grid_is_named(fake_inputs):
    rows = seed_rows()
    rows = rows[rows["seed"] == 0].assign(other_seeds=0, jsd_seed_max=math.nan, jsd_seed_mean=math.nan)
    output = SECTION.build(fake_inputs({"seed_variance": rows}))
    assert any("no cell has another seed" in line for line in output.missing)
