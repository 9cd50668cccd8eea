"""The pieces every paper's claims share: a `Claim` (a conclusion, its statistic and its rule), the `Finding` it
makes per condition, and the rules' two readings of the seeds' 95% t-intervals: a value against a reference
(`side`, `against`) and two models against each other (`apart`, `ordered`). With one seed there is no interval
and the mean decides.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.report.stats import grouping_axes, is_null, model_axes

HOLDS, PARTLY, REVERSED, NOT_RUN = "holds", "partly", "reversed", "not run"
VERDICTS = (HOLDS, PARTLY, REVERSED, NOT_RUN)
# A recorded finding whose cells are no longer the grid's (`conclusions_record`): shown, counted as not run.
STALE = "stale"
SIGN = {"below": "<", "above": ">", "within": "≈"}  # how two seed intervals lie (`apart`), for reading
BILSTM = "lstm"  # J&W's BiLSTM; their "average" encoder is gridlab's `average`
PRETRAINED = "pretrained"  # a fine-tuned Hugging Face encoder: the same questions on today's models
# A condition names these axes always, and the other configuration axes (settings like `model.embeddings`
# included) where they vary among the rows; then the seeds present.
SHOWN = ("dataset", "encoder", "attention")


@dataclass(frozen=True)
class Finding:
    """One condition's decision: the axes it fixes (with a list of seeds), the statistic's value, the verdict."""

    condition: dict[str, Any]  # axis -> value, in the order shown
    seeds: tuple[int, ...]
    value: float
    verdict: str
    detail: str  # the numbers the rule compared, for reading
    cells: tuple[str, ...] = ()  # the ids of the cells whose rows it read: what the record traces it to


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str  # "Jain & Wallace (2019) §4.1"
    wording: str  # the conclusion, short, in the paper's terms
    analyses: tuple[str, ...]  # whose rows it reads ("cells": the trained cells' test metrics)
    statistic: str
    rule: str  # how one condition is decided, and where its threshold comes from
    needs: str  # which analyses and cells would decide it, for a grid whose rows cannot
    decide: Callable[[ReportInputs], list[Finding]]


def side(mean: float, low: float, high: float, reference: float) -> str:
    """'below' / 'above' the reference when the seeds' 95% interval (or, without one, the mean) lies wholly on
    that side, 'within' when the interval contains it; '' when the mean is undefined."""
    if pd.isna(mean):
        return ""
    if pd.isna(low) or pd.isna(high):
        low = high = mean
    if high < reference:
        return "below"
    if low > reference:
        return "above"
    return "within"


def against(frame_row: pd.Series, column: str, reference: float, claimed: Literal["below", "above"]) -> str:
    """holds / reversed / partly for `column` (with its `_ci_low`/`_ci_high`) against a reference."""
    where = side(frame_row[column], frame_row.get(f"{column}_ci_low"), frame_row.get(f"{column}_ci_high"), reference)
    if not where:
        return ""
    return HOLDS if where == claimed else PARTLY if where == "within" else REVERSED


def _matching(rows: pd.DataFrame, condition: dict[str, Any]) -> pd.DataFrame:
    """The rows matching `condition` (null matches null)."""
    mask = pd.Series(True, index=rows.index)
    for axis, value in condition.items():
        if axis in rows.columns:
            column = rows[axis]
            mask &= column.isna() if is_null(value) else column.eq(value)
    return rows[mask]


def seeds_of(rows: pd.DataFrame, condition: dict[str, Any]) -> tuple[int, ...]:
    """The seeds of the rows matching `condition` (null matches null)."""
    return tuple(sorted(int(s) for s in _matching(rows, condition)["seed"].dropna().unique()))


def cells_of(rows: pd.DataFrame, *conditions: dict[str, Any]) -> tuple[str, ...]:
    """The ids of the cells whose rows match any of `conditions`, sorted: the cells a finding was measured on."""
    if "cell_id" not in rows.columns:
        return ()
    return tuple(sorted({str(c) for condition in conditions for c in _matching(rows, condition)["cell_id"].dropna()}))


def shown_condition(row: pd.Series, axes: Sequence[str]) -> dict[str, Any]:
    return {axis: row[axis] for axis in axes if axis in row.index}


def per_configuration(
    table: pd.DataFrame, rows: pd.DataFrame, decide: Callable[[pd.Series], tuple[str, float, str]]
) -> list[Finding]:
    """A finding per row of `table` (one per configuration), shown by the axes that vary in `rows`."""
    findings = []
    shown = grouping_axes(rows, SHOWN)
    for _, row in table.iterrows():
        verdict, value, detail = decide(row)
        if not verdict:
            continue
        condition, model = shown_condition(row, shown), shown_condition(row, model_axes(rows))
        findings.append(Finding(condition, seeds_of(rows, model), value, verdict, detail, cells_of(rows, model)))
    return findings


def paired(
    table: pd.DataFrame, rows: pd.DataFrame, axis: str, first: Any, second: Any
) -> list[tuple[dict[str, Any], tuple[int, ...], pd.Series, pd.Series, tuple[str, ...]]]:
    """Rows of `table` with `axis` = first matched to those with `axis` = second on every other configuration
    axis: (the shared condition, the seeds of both, the first row, the second row, the cells of both)."""
    shared = [a for a in model_axes(table) if a != axis]
    shown = [a for a in grouping_axes(rows, SHOWN) if a != axis]
    one, two = table[table[axis] == first], table[table[axis] == second]
    out = []
    for _, a in one.iterrows():
        for _, b in two.iterrows():
            if all((is_null(a[k]) and is_null(b[k])) or a[k] == b[k] for k in shared):
                key = shown_condition(a, shared)
                both = ({**key, axis: first}, {**key, axis: second})
                seeds = sorted({*seeds_of(rows, both[0]), *seeds_of(rows, both[1])})
                out.append((shown_condition(a, shown), tuple(seeds), a, b, cells_of(rows, *both)))
    return out


def learned(rows: pd.DataFrame | None, encoders: Sequence[str] | None = None) -> pd.DataFrame | None:
    """The rows of learned-attention cells (of these encoders); None when there are none."""
    if rows is None:
        return None
    keep = rows["attention_mode"] == "learned"
    if encoders is not None:
        keep &= rows["encoder"].isin(list(encoders))
    return rows[keep] if keep.any() else None


def apart(first: pd.Series, second: pd.Series, column: str, second_column: str | None = None) -> str:
    """'below' / 'above' when `first`'s 95% seed interval of `column` lies wholly below / above `second`'s (of
    `second_column`, default the same; one seed: its mean), 'within' when they overlap."""
    low, high = _bounds(first, column)
    other_low, other_high = _bounds(second, second_column or column)
    if high < other_low:
        return "below"
    if low > other_high:
        return "above"
    return "within"


def _bounds(row: pd.Series, column: str) -> tuple[float, float]:
    """The seeds' 95% interval of `column` (`<column>_ci_low/high`), or its mean twice where there is none."""
    low, high = row.get(f"{column}_ci_low", math.nan), row.get(f"{column}_ci_high", math.nan)
    return (row[column], row[column]) if pd.isna(low) or pd.isna(high) else (low, high)


def ordered(
    first: pd.Series,
    second: pd.Series,
    column: str,
    claimed: Literal["below", "above"],
    second_column: str | None = None,
) -> str:
    """holds / reversed / partly: `first`'s `column` claimed below / above `second`'s, decided by whether the
    seeds' 95% intervals lie apart (on the claimed side: holds; on the other: reversed) or overlap (partly)."""
    where = apart(first, second, column, second_column)
    return HOLDS if where == claimed else PARTLY if where == "within" else REVERSED


def interval(row: pd.Series, column: str, digits: int = 3, unit: str = "") -> str:
    """'0.412 (95% [0.398, 0.426])': the mean across seeds and its interval; '(one seed)' without one.
    `unit` follows the mean: '1.5% (95% [0.2, 2.8])'."""
    mean = row.get(column, math.nan)
    if pd.isna(mean):
        return "–"
    low, high = row.get(f"{column}_ci_low", math.nan), row.get(f"{column}_ci_high", math.nan)
    spread = "(one seed)" if pd.isna(low) or pd.isna(high) else f"(95% [{low:.{digits}f}, {high:.{digits}f}])"
    return f"{mean:.{digits}f}{unit} {spread}"
