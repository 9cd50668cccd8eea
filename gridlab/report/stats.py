"""Across-seed statistics for the report's tables: every instance-level number is first computed per cell
(one model = one seed of a configuration), then aggregated across the seeds of the same configuration.

    >>> cells = per_cell(rows, by=["dataset", "encoder"], value="tau_g")              # one row per cell
    >>> across_seeds(cells, by=["dataset", "encoder"], value="tau_g")
       dataset encoder   mean    std  n_seeds  ci_low  ci_high
    >>> seed_summary(rows, by=["dataset", "encoder"], value="tau_g")                 # the two in one
    >>> seed_table(rows, by, {"tau_g": ("tau_g", "mean"), "tau_g_sd": ("tau_g", "std")})
    >>> plus_minus(0.4012, 0.2093)
    '0.40 ± 0.21'

Why per cell first: instances of one model are not independent replicates of the experiment, seeds are.
Pooling instances of several seeds would weigh seeds by their instance counts and hide seed-to-seed
variation (J&W's mean tau moved by 0.005-0.19 between the paper and the authors' own rerun;
docs/analyses.md#pitfalls-avoided).
The interval is a two-sided Student t-interval over the per-seed values: mean ± t(1 - a/2, n - 1) s / sqrt(n),
with s the sample standard deviation (ddof = 1) across seeds; with one seed both are undefined (NaN).
Nulls (undefined tau, decisions that never flip) are dropped before any statistic, never treated as zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from gridlab.results.parts import AXES

# The axes that tell two configurations apart; seeds of one configuration are its replicates.
MODEL_AXES = tuple(axis for axis in AXES if axis != "seed")
ALWAYS_SHOWN = ("dataset", "encoder")

Stat = str | Callable[[pd.Series], float]


def setting_columns(frame: pd.DataFrame) -> list[str]:
    """The grid's setting axes among `frame`'s columns (dotted paths: `model.embeddings`, `train.lr`, ...).
    `ReportInputs` adds them to the rows of a grid where they vary: cells that differ in a setting are
    different configurations, never seeds of one."""
    return [column for column in frame.columns if "." in str(column)]


def configuration_axes(frame: pd.DataFrame) -> list[str]:
    return [*MODEL_AXES, *setting_columns(frame)]


def grouping_axes(frame: pd.DataFrame, always: Sequence[str] = ALWAYS_SHOWN) -> list[str]:
    """The configuration axes that vary in `frame` (plus `always`): the columns a table groups by. Axes
    constant over the whole frame are left out of the table and named in its caption (`constant_axes`)."""
    return [
        axis
        for axis in configuration_axes(frame)
        if axis in frame.columns and (axis in always or frame[axis].nunique(dropna=False) > 1)
    ]


def constant_axes(frame: pd.DataFrame, shown: Sequence[str]) -> str:
    """'projection softmax, architecture flat, ...' for the axes that are not table columns."""
    parts = []
    for axis in configuration_axes(frame):
        if axis in frame.columns and axis not in shown and len(frame):
            value = frame[axis].iloc[0]
            if not is_null(value):
                parts.append(f"{axis} {value}")
    return ", ".join(parts)


def _reduce(values: pd.Series, stat: Stat) -> float:
    values = values.dropna().astype(float)
    if not len(values):
        return math.nan
    if callable(stat):
        return float(stat(values))
    if stat == "mean":
        return float(values.mean())
    if stat == "std":  # over the instances of one model, as the papers' "Mean ± Std." (population std)
        return float(values.std(ddof=0))
    if stat == "median":
        return float(values.median())
    if stat == "count":
        return float(len(values))
    raise ValueError(f"unknown statistic {stat!r} (expected mean, std, median, count or a function)")


def per_cell(
    frame: pd.DataFrame, by: Sequence[str], value: str, stat: Stat = "mean", unit: str = "cell_id"
) -> pd.DataFrame:
    """One row per (group, cell): `stat` of `value` over the cell's rows (nulls dropped). Columns: by, unit,
    `value`. A cell whose values are all null gets NaN and is left out by `across_seeds`."""
    keys = [*by, unit]
    grouped = frame.groupby(keys, dropna=False, sort=True)[value]
    out = grouped.apply(lambda values: _reduce(values, stat)).reset_index()
    return out.rename(columns={out.columns[-1]: value})


def interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float, float, int]:
    """(mean, sample std, ci_low, ci_high, n) of per-seed values, NaNs dropped; std and the interval are NaN
    for fewer than two values."""
    finite = np.asarray([v for v in values if not is_null(v)], dtype=float)
    n = len(finite)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan, 0
    mean = float(finite.mean())
    if n < 2:
        return mean, math.nan, math.nan, math.nan, n
    std = float(finite.std(ddof=1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
    return mean, std, mean - half, mean + half, n


def across_seeds(cells: pd.DataFrame, by: Sequence[str], value: str, confidence: float = 0.95) -> pd.DataFrame:
    """Per group: mean over the per-seed values, their std (ddof 1), n_seeds, and the t-interval.
    Columns: by, mean, std, n_seeds, ci_low, ci_high."""
    records = []
    for key, group in cells.groupby(list(by), dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mean, std, low, high, n = interval(group[value].tolist(), confidence)
        records.append({**dict(zip(by, key)), "mean": mean, "std": std, "n_seeds": n, "ci_low": low, "ci_high": high})
    return pd.DataFrame.from_records(records, columns=[*by, "mean", "std", "n_seeds", "ci_low", "ci_high"])


def seed_summary(
    frame: pd.DataFrame,
    by: Sequence[str],
    value: str,
    stat: Stat = "mean",
    confidence: float = 0.95,
    unit: str = "cell_id",
) -> pd.DataFrame:
    """`stat` of `value` per cell, then mean / std / n_seeds / t-interval across the seeds of each group."""
    return across_seeds(per_cell(frame, by, value, stat, unit), by, value, confidence)


def seed_table(
    frame: pd.DataFrame,
    by: Sequence[str],
    measures: Mapping[str, tuple[str, Stat]],
    confidence: float = 0.95,
    unit: str = "cell_id",
    spread: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Several measures side by side, one row per group. For each measure name m = (column, stat):
    `m` (mean across seeds of the per-cell stat), and for the measures in `spread` (default: all)
    `m_seed_sd`, `m_ci_low`, `m_ci_high`; then `n_seeds` (cells in the group) and `n_instances` (rows)."""
    by = list(by)
    spread = list(measures) if spread is None else list(spread)
    table = (
        frame.groupby(by, dropna=False, sort=True)
        .agg(n_seeds=(unit, "nunique"), n_instances=(unit, "size"))
        .reset_index()
    )
    for name, (column, stat) in measures.items():
        summary = seed_summary(frame, by, column, stat, confidence, unit)
        summary = summary.drop(columns=["n_seeds"]).rename(
            columns={"mean": name, "std": f"{name}_seed_sd", "ci_low": f"{name}_ci_low", "ci_high": f"{name}_ci_high"}
        )
        table = _merge(table, summary, by)
    ordered = [
        *by,
        *[
            c
            for name in measures
            for c in ((name, f"{name}_seed_sd", f"{name}_ci_low", f"{name}_ci_high") if name in spread else (name,))
        ],
        "n_seeds",
        "n_instances",
    ]
    return table[ordered]


def accuracy_table(cells: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame | None:
    """Each group's test accuracy across its seeds (`seed_table`'s columns but `n_instances`: one number per
    cell), for the papers' baseline-accuracy tables; None when no cell is trained."""
    if cells.empty or "test_accuracy" not in cells.columns:
        return None
    return seed_table(cells, by, {"test_accuracy": ("test_accuracy", "mean")}).drop(columns="n_instances")


def model_axes(frame: pd.DataFrame) -> list[str]:
    """Every configuration axis present in `frame`: tables group by all of them (a constant one splits
    nothing) so that the CSV always names the full configuration; the display shows only `grouping_axes`."""
    return [axis for axis in configuration_axes(frame) if axis in frame.columns]


def _merge(left: pd.DataFrame, right: pd.DataFrame, on: list[str]) -> pd.DataFrame:
    """A left merge; pandas matches null keys to null keys (projection_lambda is null for every
    non-sparsegen cell), which is what a group with a null axis needs."""
    return left.merge(right, on=on, how="left")


def merge_on(left: pd.DataFrame, right: pd.DataFrame, on: Sequence[str]) -> pd.DataFrame:
    """`left` with `right`'s other columns joined on `on` (left join; null keys match null keys)."""
    return _merge(left, right, list(on))


def share(mask: pd.Series) -> float:
    """The share of True among non-null entries (NaN when none)."""
    values = mask.dropna()
    return float(values.astype(bool).mean()) if len(values) else math.nan


def plus_minus(mean: float | None, std: float | None, digits: int = 2) -> str:
    """'0.40 ± 0.21'; just '0.40' when std is missing; '–' when mean is missing."""
    if is_null(mean):
        return "–"
    if is_null(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def bracket(low: float | None, high: float | None, digits: int = 2) -> str:
    """'[0.38, 0.42]' for an interval; '–' where it is undefined (one seed)."""
    if is_null(low) or is_null(high):
        return "–"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def numbers(values: Iterable[float | None], digits: int = 2) -> list[str]:
    """A display column of plain numbers, '–' where one is missing (a paper that printed none)."""
    return [plus_minus(value, None, digits) for value in values]


def pm(frame: pd.DataFrame, mean: str, std: str | None = None, digits: int = 2) -> list[str]:
    """A display column of 'mean ± std' strings; `std` defaults to the across-seed `<mean>_seed_sd`."""
    return [plus_minus(m, s, digits) for m, s in zip(frame[mean], frame[std or f"{mean}_seed_sd"])]


def ci(frame: pd.DataFrame, name: str, digits: int = 2) -> list[str]:
    """A display column of '[low, high]' strings from `<name>_ci_low` and `<name>_ci_high`."""
    return [bracket(low, high, digits) for low, high in zip(frame[f"{name}_ci_low"], frame[f"{name}_ci_high"])]


def is_null(value: object) -> bool:
    """A missing value in any of its spellings (None, NaN of any float type, pd.NA): never a number."""
    if value is None or value is pd.NA:
        return True
    try:
        return bool(np.isnan(value))  # type: ignore[call-overload]  # any scalar; a non-number raises TypeError
    except TypeError:
        return False
