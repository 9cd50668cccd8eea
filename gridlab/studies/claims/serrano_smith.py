"""Serrano & Smith (2019), "Is Attention Interpretable?": erasing the highest-attention item rarely flips a
decision, though more often than a random item (§4.2), and rankings by gradient flip decisions after fewer
erasures than attention, which beats random (§5.4).
"""

from __future__ import annotations

import math

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.report.stats import model_axes, seed_table
from gridlab.studies.claims.base import (
    HOLDS,
    PARTLY,
    REVERSED,
    SIGN,
    Claim,
    Finding,
    apart,
    interval,
    learned,
    per_configuration,
    side,
)
from gridlab.studies.sections.serrano_smith import contingency_frame, multi_rankings


def ss_single_erasure(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("erasure_single"))
    if rows is None:
        return []
    table = contingency_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        flips, margin = row["pct_top_flips"], row["top_minus_rand"]
        if pd.isna(flips) or pd.isna(margin):
            return "", math.nan, ""
        rarely = side(flips, row["pct_top_flips_ci_low"], row["pct_top_flips_ci_high"], 50.0)
        sooner = side(margin, row["top_minus_rand_ci_low"], row["top_minus_rand_ci_high"], 0.0)
        verdict = {("below", "above"): HOLDS, ("above", "below"): REVERSED}.get((rarely, sooner), PARTLY)
        detail = (
            f"erasing i* flips {interval(row, 'pct_top_flips', 1, '%')} of instances; only i* flips "
            f"{row['pct_top_only']:.1f}%, only r flips {row['pct_rand_only']:.1f}%: the difference "
            f"{interval(row, 'top_minus_rand', 1)} points"
        )
        return verdict, margin, detail

    return per_configuration(table, rows, decide)


ORDER = ("gradient", "attention", "random")  # S&S §5.4: fewest items erased first


def erasure_order_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, the median fraction of items erased before the decision flips under each ranking of
    ORDER (never flipped = 1.0: all of them went), per model then mean across seeds, with the interval."""
    eligible = rows[rows["length"] >= 2]
    filled = eligible.assign(**{f"erased_{r}": eligible[f"frac_{r}"].astype(float).fillna(1.0) for r in ORDER})
    return seed_table(filled, model_axes(rows), {f"median_{r}": (f"erased_{r}", "median") for r in ORDER})


def ss_erasure_order(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("erasure_multi"))
    if rows is None:
        return []
    params = inputs.grid.analyses.get("erasure_multi")
    requested = getattr(params, "rankings", None)
    # A ranking not requested is null on every row, like one that never flips: the grid's parameters tell them
    # apart; rows without them (a grid file since edited) count a ranking that never flipped as not run.
    ran = list(requested) if requested is not None else multi_rankings(rows)
    if not set(ORDER) <= set(ran) or not all(f"frac_{r}" in rows.columns for r in ORDER):
        return []
    table = erasure_order_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        g, a, r = (f"median_{name}" for name in ORDER)
        if any(pd.isna(row[column]) for column in (g, a, r)):
            return "", math.nan, ""
        first, second = apart(row, row, g, a), apart(row, row, a, r)
        verdict = HOLDS if first == second == "below" else REVERSED if first == second == "above" else PARTLY
        detail = (
            f"median fraction erased: gradient {interval(row, g)} {SIGN[first]} attention {interval(row, a)} "
            f"{SIGN[second]} random {interval(row, r)}"
        )
        return verdict, row[a], detail

    return per_configuration(table, rows, decide)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "ss.single_erasure",
        "Serrano & Smith (2019) §4.2, Table 2",
        "Erasing the highest-attention item rarely flips the decision, but flips it more often than a random item.",
        ("erasure_single",),
        "% of instances (T ≥ 2) where only i* flips minus % where only a random r flips, beside % where "
        "erasing i* flips at all (per model, mean across seeds)",
        "holds when the seeds' 95% interval of the % where erasing i* flips lies wholly below 50% ('in the vast "
        "majority of cases, erasing i* does not change the decision', §4.2) and that of only-i* minus only-r "
        "(the off-diagonal cells §4.2 compares) wholly above 0; reversed when the first lies wholly above 50% "
        "and the second wholly below 0; partly otherwise (an interval that contains its reference included).",
        "`erasure_single` rows of any learned-attention classifier",
        ss_single_erasure,
    ),
    Claim(
        "ss.erasure_order",
        "Serrano & Smith (2019) §5.4, Fig. 5",
        "Erasing by gradient flips the decision after fewer items than by attention, and attention beats random.",
        ("erasure_multi",),
        "median fraction of items erased before the decision flips (never flipped = 1.0), per model over "
        "instances with T ≥ 2, mean across seeds, for the gradient, attention and random rankings",
        "holds when the seeds' 95% interval of the gradient ranking's median lies wholly below the attention "
        "ranking's, and that one wholly below the random ranking's; reversed when both lie wholly above; partly "
        "otherwise (overlapping intervals, equal medians included). No threshold: §5.4 orders the rankings.",
        "`erasure_multi` rows with the rankings gradient, attention and random",
        ss_erasure_order,
    ),
)
