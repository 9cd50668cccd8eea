"""The S&S section on hand-made rows: the flip contingency across two seeds, the published table beside
it, erasure fractions, which ranking flips sooner (never-flipping instances counted explicitly), and the
distance from the exact minimal set."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gridlab.studies.sections.serrano_smith import SECTION
from tests.rows import model_axes


def single_rows() -> pd.DataFrame:
    """Seed 0: both x1, i* only x2, r only x1, neither x6, and one T = 1 row (all null). Seed 1: i* only x4,
    neither x6. delta_js < 0 on 3 rows of seed 0 and none of seed 1."""
    records = []
    patterns = {
        0: [(True, True)] + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 6,
        1: [(True, False)] * 4 + [(False, False)] * 6,
    }
    for seed, flips in patterns.items():
        for i, (top, rand) in enumerate(flips):
            negative = seed == 0 and i < 3
            records.append(
                {
                    **model_axes(seed),
                    "instance_id": i,
                    "length": 5,
                    "pred": 0,
                    "max_attention": 0.5,
                    "js_top": 0.1,
                    "js_rand": 0.2 if negative else 0.05,
                    "delta_js": -0.1 if negative else 0.05,
                    "delta_alpha": 0.1 * (i % 10),
                    "flip_top": top,
                    "flip_rand": rand,
                }
            )
    records.append(
        {
            **model_axes(0),
            "instance_id": 99,
            "length": 1,
            "pred": 0,
            "max_attention": 1.0,
            "js_top": None,
            "js_rand": None,
            "delta_js": None,
            "delta_alpha": None,
            "flip_top": None,
            "flip_rand": None,
        }
    )
    return pd.DataFrame.from_records(records)


def multi_rows() -> pd.DataFrame:
    """One cell, T = 4: (removed by attention, by gradient, exact) per instance; random and grad_x_attention
    were not requested (null everywhere)."""
    instances = [(2, 1, 1), (1, 1, 1), (None, 3, 2), (2, None, 2), (None, None, None)]
    records = []
    for i, (attention, gradient, exact) in enumerate(instances):
        row = {**model_axes(0), "instance_id": i, "length": 4, "pred": 0, "max_attention": 0.5}
        for name, removed in (
            ("attention", attention),
            ("gradient", gradient),
            ("exact", exact),
            ("random", None),
            ("grad_x_attention", None),
        ):
            row[f"removed_{name}"] = removed
            row[f"frac_{name}"] = None if removed is None else removed / 4
        records.append(row)
    records.append(
        {
            **model_axes(0),
            "instance_id": 9,
            "length": 1,
            "pred": 0,
            "max_attention": 1.0,
            **{
                f"{c}_{n}": None
                for c in ("removed", "frac")
                for n in ("attention", "gradient", "exact", "random", "grad_x_attention")
            },
        }
    )
    return pd.DataFrame.from_records(records)


def build(fake_inputs, frames):
    return SECTION.build(fake_inputs(frames, analyses={"erasure_multi": type("P", (), {"exact_max_len": 10})()}))


def test_flip_contingency_across_seeds(fake_inputs):
    output = build(fake_inputs, {"erasure_single": single_rows()})
    table = next(a for a in output.artifacts if a.id == "ss_table2")
    row = table.frame.iloc[0]
    assert row["pct_both"] == pytest.approx((10 + 0) / 2)
    assert row["pct_top_only"] == pytest.approx((20 + 40) / 2)
    assert row["pct_rand_only"] == pytest.approx((10 + 0) / 2)
    assert row["pct_neither"] == pytest.approx((60 + 60) / 2)
    assert row["pct_top_only_seed_sd"] == pytest.approx(math.sqrt(200))  # 20 and 40
    assert row["pct_negative_delta_js"] == pytest.approx((30 + 0) / 2)
    assert (row["n_seeds"], row["n_instances"]) == (2, 20)  # the T = 1 row is in no denominator
    assert table.display.iloc[0]["% only i* flips"] == "30.0 ± 14.1"
    published = next(a for a in output.artifacts if a.id == "ss_table2_published").frame
    assert published.set_index("dataset").loc["yahoo", "pct_top_only"] == 8.7
    assert [a.id for a in output.artifacts] == ["ss_table2", "ss_table2_published", "ss_fig3", "ss_fig4"]
    assert output.missing == ["S&S Figs. 5–6 need `erasure_multi` rows"]


def test_erasure_fractions(fake_inputs):
    output = build(fake_inputs, {"erasure_multi": multi_rows()})
    frame = next(a for a in output.artifacts if a.id == "ss_fig5_fractions").frame
    fractions = frame[frame["population"] == "all (T ≥ 2)"].set_index("ranking")
    assert list(fractions.index) == ["attention", "gradient"]  # requested rankings only, S&S's order
    assert fractions.loc["attention", "pct_flipped"] == pytest.approx(60)  # 3 of the 5 instances with T >= 2
    assert fractions.loc["attention", "frac_median"] == pytest.approx(0.5)  # 0.5, 0.25, 0.5
    assert fractions.loc["attention", "frac_mean"] == pytest.approx(1.25 / 3)
    # the exact set only beside the other rankings on the instances it exists for: never across populations
    short = frame[frame["population"] == "T ≤ 10"].set_index("ranking")
    assert list(short.index) == ["attention", "gradient", "exact"] and list(frame["population"].unique()) == [
        "all (T ≥ 2)",
        "T ≤ 10",
    ]
    assert short.loc["exact", "pct_flipped"] == pytest.approx(80)
    assert short.loc["exact", "frac_median"] == pytest.approx(0.375)
    assert short.loc["attention", "frac_median"] >= short.loc["exact", "frac_median"]


def test_which_ranking_flips_sooner(fake_inputs):
    output = build(fake_inputs, {"erasure_multi": multi_rows()})
    sooner = next(a for a in output.artifacts if a.id == "ss_gradient_vs_attention").frame
    assert len(sooner) == 1  # grad_x_attention was not computed: only gradient vs attention
    row = sooner.iloc[0]
    assert (row["first"], row["second"]) == ("gradient", "attention")
    # (2,1) gradient sooner; (1,1) tie; (-,3) gradient (attention never flips); (2,-) attention; (-,-) neither
    assert row["pct_first_sooner"] == pytest.approx(40)
    assert row["pct_second_sooner"] == pytest.approx(20)
    assert row["pct_tie"] == pytest.approx(20)
    assert row["pct_neither"] == pytest.approx(20)
    assert row["ratio"] == pytest.approx(2.0)


def test_distance_from_the_exact_minimal_set(fake_inputs):
    output = build(fake_inputs, {"erasure_multi": multi_rows()})
    gap = next(a for a in output.artifacts if a.id == "ss_exact_gap").frame.set_index("ranking")
    assert list(gap.index) == ["attention", "gradient"]
    # instances with an exact set: attention removed 2/1/never/2 against 1/1/2/2
    assert gap.loc["attention", "excess_mean"] == pytest.approx(1 / 3)
    assert gap.loc["attention", "pct_minimal"] == pytest.approx(50)
    assert gap.loc["attention", "pct_never"] == pytest.approx(25)
    assert gap.loc["gradient", "excess_mean"] == pytest.approx(1 / 3)  # 1-1, 1-1, 3-2; never on the 4th
    assert gap.loc["gradient", "n_instances"] == 4
    assert output.missing == ["S&S Table 2 and Figs. 3–4 need `erasure_single` rows"]


def test_a_ranking_tried_that_never_flips_is_0_percent_one_not_tried_is_no_row(fake_inputs):
    """With `measured`: grad_x_attention was asked for on cell c0 and never flipped (0 %, no median: a blank);
    random was asked for nowhere (no row); gradient only on c1's rows (c0 has no gradient row, not a 0 %)."""
    tried = ["attention", "grad_x_attention", "exact"]
    c0 = multi_rows().assign(removed_gradient=None, frac_gradient=None)
    c0["measured"] = [tried if t >= 2 else [] for t in c0["length"]]
    c1 = multi_rows().assign(**model_axes(1))
    c1["measured"] = [[*tried, "gradient"] if t >= 2 else [] for t in c1["length"]]
    c1 = c1.assign(removed_grad_x_attention=None, frac_grad_x_attention=None)
    output = build(fake_inputs, {"erasure_multi": pd.concat([c0, c1], ignore_index=True)})
    frame = next(a for a in output.artifacts if a.id == "ss_fig5_fractions").frame
    fractions = frame[frame["population"] == "all (T ≥ 2)"].set_index("ranking")
    assert list(fractions.index) == ["attention", "gradient", "grad_x_attention"]  # S&S's order
    assert fractions.loc["grad_x_attention", "pct_flipped"] == 0.0
    assert math.isnan(fractions.loc["grad_x_attention", "frac_median"])
    assert fractions.loc["attention", "n_seeds"] == 2 and fractions.loc["gradient", "n_seeds"] == 1
    assert fractions.loc["gradient", "pct_flipped"] == pytest.approx(60)  # c1's alone, not averaged with a 0


def test_rows_written_before_measured_keep_the_old_reading(fake_inputs):
    output = build(fake_inputs, {"erasure_multi": multi_rows().assign(measured=None)})
    frame = next(a for a in output.artifacts if a.id == "ss_fig5_fractions").frame
    assert list(frame[frame["population"] == "all (T ≥ 2)"]["ranking"]) == ["attention", "gradient"]
