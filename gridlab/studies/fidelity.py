"""The fidelity table: every published number a grid aims at, ours beside it, and whether ours is within the
tolerance its quantity allows (`tolerances.py`), with the run that tests why where it is not (`ablations.py`).

    >>> result = fidelity(ReportInputs.load(expanded))
    >>> result.frame[["paper", "dataset", "model", "quantity", "published", "ours", "verdict", "ablation"]]
    >>> result.sensitivity      # the same numbers per value of each setting axis (model.embeddings, ...)

A row per published number that a section joins to ours (the sections' `comparisons`), for the grid's
configured cells whether trained or not: a number without rows yet reads "not run". Ours is the section's
own value (mean across seeds, their std and count); nothing here recomputes a statistic. A grid with an
axis beyond the model axes (a setting: embeddings, learning rate, ...) has a row per combination of its
settings (named in `detail`), and `sensitivity` puts each number's values under one setting side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gridlab.catalog.analyses import ANALYSES
from gridlab.data.catalog import DATASETS
from gridlab.report.inputs import ReportInputs
from gridlab.studies.ablations import Ablation, ablation_text, load_ablations
from gridlab.studies.comparison import Comparison, applicable_configs, expected
from gridlab.studies.published import published
from gridlab.studies.sections.registry import paper_sections
from gridlab.studies.tolerances import TOLERANCES, Tolerance, rule_for, tolerance_for

WITHIN, OUTSIDE, NOT_RUN, UNDEFINED = "within", "outside", "not run", "undefined"
STALE = "stale"  # measured on cells that are no longer the grid's (or recorded without them): counted as not run
MATCHES_RERUN, DIFFERS_FROM_RERUN = "matches the rerun", "differs from the rerun"
COLUMNS = [
    "paper",
    "table",
    "dataset",
    "model",
    "detail",
    "quantity",
    "published",
    "published_seed_std",
    "rerun",
    "ours",
    "ours_std",
    "n_seeds",
    "n_instances",
    "population",
    "printed_model",
    "cells",
    "measured_cells",
    "difference",
    "rule",
    "tolerance",
    "tolerance_source",
    "verdict",
    "rerun_verdict",
    "ablation",
    "note",
]
SHOWN_AXES = ("encoder", "attention", "projection", "projection_lambda", "architecture", "attention_mode")
DEFAULTS = {"projection": "softmax", "architecture": "flat", "attention_mode": "learned"}
IDENTITY = ["paper", "table", "dataset", "model", "detail", "quantity"]  # one published number


@dataclass(frozen=True)
class FidelityResult:
    grid: str
    file: str
    frame: pd.DataFrame  # COLUMNS + the keys that name each number (model axes, pred, variant, setting)
    sensitivity: pd.DataFrame  # axis, value, then the frame's columns; empty without a setting axis
    axes: list[str]  # the setting axes broken out in `sensitivity` (pooled in `frame`)
    partial: dict[str, list[str]] = field(default_factory=dict)  # analysis -> cells left out, partly analysed

    @property
    def rules(self) -> list[Tolerance]:
        """The tolerance rules this grid's rows use, in the order of `tolerances.TOLERANCES`."""
        used = {rule_for(q).rule for q in (*self.frame["quantity"], *self.sensitivity["quantity"])}
        return [rule for rule in TOLERANCES if rule.rule in used]

    def counts(self) -> dict[str, int]:
        verdicts = (WITHIN, OUTSIDE, NOT_RUN, UNDEFINED, STALE)
        return {v: int((self.frame["verdict"] == v).sum()) for v in verdicts}


def all_comparisons() -> list[Comparison]:
    """Every paper section's comparisons, in the report's section order."""
    return [c for section in paper_sections() for c in section.comparisons]


NO_DATA, NO_MODEL = "no data", "no model"


def out_of_reach() -> pd.DataFrame:
    """The published numbers no grid can aim at: paper, table, dataset, quantity, published, and why, one row
    per number. `no data`: the dataset is not one gridlab has (ADR tweets, MIMIC, CNN, Yahoo, ...); `no model`:
    gridlab builds no such model (a comparison's `unmodelled`) on a dataset it has. The fidelity tables list
    only what a grid's cells join; this lists the rest, so that every number is accounted for."""
    parts = []
    for comparison in all_comparisons():
        paper = comparison.paper()
        citation = published(comparison.key)
        if "dataset" in paper:
            outside = paper[~paper["dataset"].isin(list(DATASETS))]
            outside = outside.drop(columns=list(comparison.replicated_over)).drop_duplicates()
            table = outside["table"] if "table" in outside else citation["table"].iloc[0]
            parts.append(_unreachable(citation, outside.assign(table=table), NO_DATA))
        if comparison.unmodelled is not None:  # on a dataset gridlab lacks too: `no data` says enough
            numbers = comparison.unmodelled()
            known = numbers["dataset"].isin(list(DATASETS))
            parts += [
                _unreachable(citation, numbers[~known], NO_DATA),
                _unreachable(citation, numbers[known], NO_MODEL),
            ]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=["paper", "table", "dataset", "quantity", "published", "reason"])
    return pd.concat(parts, ignore_index=True)


def _unreachable(citation: pd.DataFrame, numbers: pd.DataFrame, reason: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "paper": citation["paper"].iloc[0],
            "table": numbers["table"],
            "dataset": numbers["dataset"],
            "quantity": numbers["quantity"],
            "published": numbers["published"].astype(float),
            "reason": reason,
        }
    )


def fidelity(inputs: ReportInputs, entries: list[Ablation] | None = None) -> FidelityResult:
    """The fidelity table of a grid, and its break-out by every setting axis with two or more values."""
    entries = load_ablations() if entries is None else entries
    axes = inputs.setting_axes
    frame, sensitivity = per_setting_frame(inputs, entries), sensitivity_frame(inputs, entries)
    partial = {a: cells for a in inputs.grid.analyses if (cells := inputs.partial(a))}
    return FidelityResult(inputs.name, str(inputs.grid.file), frame, sensitivity, axes, partial)


def per_setting_frame(inputs: ReportInputs, entries: list[Ablation]) -> pd.DataFrame:
    """The fidelity rows of each combination of the grid's varying settings apart (cells that differ in a
    setting are different models, never seeds of one), the combination named in `detail`."""
    axes = inputs.setting_axes
    if not axes:
        return fidelity_frame(inputs, entries)
    parts = []
    for values, group in inputs.configs.groupby(axes, sort=True):
        label = ", ".join(f"{axis} {value}" for axis, value in zip(axes, values))
        frame = fidelity_frame(inputs.restrict(group["cell_id"]), entries)
        frame["detail"] = [f"{detail}; {label}" if detail else label for detail in frame["detail"]]
        parts.append(frame)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def fidelity_frame(inputs: ReportInputs, entries: list[Ablation]) -> pd.DataFrame:
    parts = [compare(c, inputs, entries).assign(_order=i) for i, c in enumerate(all_comparisons())]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.concat(parts, ignore_index=True)
    # Grouped by table, dataset and model; a model's numbers stay in the order the paper prints them.
    frame = frame.sort_values(["_order", "table", "dataset", "model"], kind="stable").drop(columns="_order")
    keys = [c for c in frame.columns if c not in COLUMNS]
    return frame[COLUMNS + keys].reset_index(drop=True)


def compare(comparison: Comparison, inputs: ReportInputs, entries: list[Ablation]) -> pd.DataFrame:
    """One comparison's published numbers for this grid, ours joined on (keys, extra, quantity), judged."""
    target = expected(comparison, inputs)
    if target.empty:
        return pd.DataFrame(columns=COLUMNS)
    on = [*comparison.keys, *comparison.extra, "quantity"]
    ours = comparison.ours(inputs)
    if ours is None or ours.empty:
        ours = pd.DataFrame({c: pd.Series(dtype=target[c].dtype) for c in on})
    ours = ours.rename(columns={"note": "ours_note"})
    merged = target.merge(ours, on=on, how="left", indicator=True)
    citation = published(comparison.key)
    configs = applicable_configs(inputs, comparison.analyses)
    with_rows = measured_cells(inputs, comparison)
    rows = []
    for row in merged.to_dict(orient="records"):
        cells = configs[_matching(configs, row, comparison.keys)]
        judged = judge(row, comparison, citation["paper"].iloc[0], entries)
        judged["cells"] = " ".join(sorted(cells["cell_id"]))
        measured = sorted(set(cells["cell_id"]) & with_rows) if judged["verdict"] != NOT_RUN else []
        judged["measured_cells"] = " ".join(measured)
        judged["population"] = population(cells, inputs, row.get("corpus"), sampled=reads_a_sample(comparison))
        rows.append(judged)
    return pd.DataFrame.from_records(rows)


def measured_cells(inputs: ReportInputs, comparison: Comparison) -> set[str]:
    """The cells a comparison's numbers are computed from: the trained ones where it reads test metrics (J&W's
    and Meister's accuracy), else those with complete rows of its analyses (a partly written cell is not)."""
    if comparison.reads_models:
        return set(inputs.cells["cell_id"])
    found: set[str] = set()
    for analysis in comparison.analyses:
        rows = inputs.rows(analysis) if inputs.requested(analysis) else None
        if rows is not None:
            found |= set(rows["cell_id"])
    return found


def _matching(configs: pd.DataFrame, row: dict[str, Any], keys: tuple[str, ...]) -> np.ndarray:
    """The configs whose model axes are the row's (NaN matches NaN: a projection without a lambda)."""
    keep = np.ones(len(configs), dtype=bool)
    for key in keys:
        value, column = row.get(key), configs[key]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            keep &= column.isna().to_numpy()
        else:
            keep &= (column == value).to_numpy()
    return keep


FULL = "full data"


def reads_a_sample(comparison: Comparison) -> bool:
    """Whether the grid's `instances` sample reaches a comparison's numbers: only instance-level analyses read
    the sample; test metrics and model-level analyses (an ablation's accuracy) read the whole test split."""
    return not comparison.reads_models and any(
        ANALYSES[a].scope == "instance" for a in comparison.analyses if a in ANALYSES
    )


def population(cells: pd.DataFrame, inputs: ReportInputs, corpus: Any = None, sampled: bool = True) -> str:
    """What the number's cells were trained and measured on, beside what the paper used: FULL, or each
    reduction named ('training subset of 5000', 'sample of 500 test instances', 'different corpus: ...');
    `sampled`: whether the number reads the grid's sample of test instances (`reads_a_sample`)."""
    parts = []
    subsets = sorted({c["train"]["max_train"] for c in cells["_config"] if c["train"]["max_train"]})
    if subsets:
        parts.append("training subset of " + " / ".join(str(n) for n in subsets))
    sample = inputs.grid.spec.instances if sampled else None
    datasets = set(cells["dataset"])
    tests = [DATASETS[d].expected_rows.get("test") if d in DATASETS else None for d in datasets]
    if sample is not None and any(size is None or size > sample for size in tests):
        parts.append(f"sample of {sample} test instances")
    if isinstance(corpus, str) and corpus:
        parts.append(corpus)
    return "; ".join(parts) or FULL


def judge(row: dict[str, Any], comparison: Comparison, paper: str, entries: list[Ablation]) -> dict[str, Any]:
    """One fidelity row: ours against the published value, the rule's width, the verdict, the ablation."""
    measured = row.pop("_merge") == "both"
    ours, value, rerun = _number(row.get("ours")), float(row["published"]), _number(row.get("rerun"))
    width = tolerance_for(row["quantity"], _number(row.get("published_seed_std")), value)
    difference, verdict = verdict_for(ours, value, width.width) if measured else (math.nan, NOT_RUN)
    out = {
        **{k: row.get(k) for k in (*comparison.keys, *comparison.extra)},
        "paper": paper,
        "table": row["table"],
        "dataset": row.get("dataset"),
        "model": model_label(row, comparison.keys),
        "detail": detail_label(row, comparison.extra),
        "quantity": row["quantity"],
        "published": value,
        "published_seed_std": _number(row.get("published_seed_std")),
        "rerun": rerun,
        "ours": ours,
        "ours_std": _number(row.get("ours_std")),
        "n_seeds": _number(row.get("n_seeds")),
        "n_instances": _number(row.get("n_instances")),
        "printed_model": all(row.get(axis) == value for axis, value in comparison.printed_for.items()),
        "difference": difference,
        "rule": width.rule.rule,
        "tolerance": width.width,
        "tolerance_source": width.source,
        "verdict": verdict,
        "rerun_verdict": rerun_verdict_for(ours, rerun, width.width) if measured else "",
        "note": "; ".join(n for n in (row.get("note"), row.get("ours_note")) if isinstance(n, str) and n),
    }
    out["ablation"] = ablation_text(out, entries, verdict)
    return out


def verdict_for(ours: float | None, published: float, tolerance: float) -> tuple[float, str]:
    """The difference ours − published and the verdict of a measured number, the one rule of
    docs/fidelity/README.md: within iff |ours − published| ≤ tolerance (undefined without a value)."""
    if ours is None:
        return math.nan, UNDEFINED
    difference = ours - published
    return difference, WITHIN if abs(difference) <= tolerance + 1e-9 else OUTSIDE


def rerun_verdict_for(ours: float | None, rerun: float | None, tolerance: float) -> str:
    """Whether ours lies within the same tolerance of the authors' own rerun (`reruns.py`): its own column,
    which never changes the verdict against the printed number. Empty without a rerun or a value."""
    if ours is None or rerun is None:
        return ""
    return MATCHES_RERUN if abs(ours - rerun) <= tolerance + 1e-9 else DIFFERS_FROM_RERUN


def model_label(row: dict[str, Any], keys: tuple[str, ...]) -> str:
    """'lstm + additive', then whatever differs from the usual model: 'sparsegen λ=0.5', 'han', 'uniform'."""
    parts = [f"{row.get('encoder')} + {row.get('attention')}"]
    for axis in ("projection", "architecture", "attention_mode"):
        value = row.get(axis)
        if axis in keys and isinstance(value, str) and value != DEFAULTS[axis]:
            lam = _number(row.get("projection_lambda"))
            parts.append(f"{value} λ={lam:g}" if axis == "projection" and lam is not None else value)
    if "projection" not in keys:
        parts.append("λ sweep")
    return ", ".join(parts)


def detail_label(row: dict[str, Any], extra: tuple[str, ...]) -> str:
    """Which of a model's numbers: 'class 0', 'all classes', 'uniform, train+infer', 'frozen'."""
    parts = []
    for column in extra:
        value = row.get(column)
        if column == "pred":
            parts.append("all classes" if value == "all" else f"class {value}")
        elif value is not None:
            parts.append(str(value))
    return ", ".join(parts)


def sensitivity_frame(inputs: ReportInputs, entries: list[Ablation]) -> pd.DataFrame:
    """Per setting axis and value: the fidelity rows of only that value's cells. A number is kept when the
    grid aims at it under two or more values of the axis (else there is nothing to compare)."""
    parts = []
    for axis in inputs.setting_axes:
        for value, group in inputs.configs.groupby(axis, sort=True):
            frame = fidelity_frame(inputs.restrict(group["cell_id"]), entries)
            parts.append(frame.assign(axis=axis, value=value))
    if not parts:
        return pd.DataFrame(columns=["axis", "value", *COLUMNS])
    frame = pd.concat(parts, ignore_index=True)
    values = frame.groupby(["axis", *IDENTITY], dropna=False)["value"].transform("nunique")
    frame = frame[values >= 2]
    first = {key: i for i, key in enumerate(dict.fromkeys(zip(*(frame[c] for c in ["axis", *IDENTITY]))))}
    order = [first[key] for key in zip(*(frame[c] for c in ["axis", *IDENTITY]))]
    frame = frame.assign(_order=order).sort_values(["_order", "value"], kind="stable").drop(columns="_order")
    return frame[["axis", "value", *[c for c in frame.columns if c not in ("axis", "value")]]].reset_index(drop=True)


def _number(value: Any) -> float | None:
    """A float, or None for null / NaN (never 0: a missing number is not a small one)."""
    if value is None or value is pd.NA:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(number) else number
