"""One published table set against ours: which of its numbers a grid aims at, and our value for each.

    >>> COMPARISON = Comparison("jw_table2", ("importance_correlation",), keys=MODEL_AXES, extra=("pred",),
    ...                         join=("dataset", "encoder", ...), paper=table2_published, ours=table2_ours)
    >>> expected(COMPARISON, inputs)     # keys + extra + quantity + published: what the grid's cells aim at
    >>> COMPARISON.ours(inputs)          # keys + extra + quantity + ours, ours_std, n_seeds, n_instances

A section declares its comparisons next to the frames it builds its tables from, and `ours` reshapes those
same frames (`long_rows`), so the fidelity table and the section's table never compute a number two ways.
`expected` is what makes a "not run" row possible: it joins the paper's numbers onto the grid's configured
cells (trained or not) with the same keys the section joins on, so a number the grid aims at shows up
whether or not its rows exist yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gridlab.catalog.analyses import ANALYSES
from gridlab.config.schema import CellConfig
from gridlab.report.inputs import ReportInputs
from gridlab.studies.published import published

# Columns of a long "ours" frame besides the keys; `note` is optional (a caveat on how ours was computed).
OURS = ("ours", "ours_std", "n_seeds", "n_instances")
# Columns of a long "paper" frame besides the keys: `published_seed_std` where the paper prints a std over
# runs, `rerun` where the original code's own rerun is committed (`reruns.py`), `table` where one comparison
# spans several tables (default: the key's own), `note` for a caveat, `corpus` where ours is measured on
# another corpus than the paper's (a population the verdict must name: S&S's IMDB).
PAPER = ("published", "published_seed_std", "rerun", "table", "note", "corpus")


@dataclass(frozen=True)
class Comparison:
    key: str  # the table key in gridlab.studies.published
    analyses: tuple[str, ...]  # whose rows `ours` reads (and which must be requested for a cell to aim at it)
    keys: tuple[str, ...]  # the model axes ours is grouped by (a config's part that names a published number)
    join: tuple[str, ...]  # the config columns the paper's numbers join on (as the section joins them)
    paper: Callable[[], pd.DataFrame]  # join + extra + quantity + PAPER columns
    ours: Callable[..., pd.DataFrame | None]  # (inputs) -> keys + extra + quantity + OURS (+ note); None: no rows
    extra: tuple[str, ...] = ()  # keys of a number beyond the model: predicted class, variant, setting
    # (expected frame, the configs it came from, inputs) -> the rows the grid really aims at, where the
    # analysis parameters or the other cells decide it (e.g. only the adversary variants requested).
    admit: Callable[..., pd.DataFrame] | None = None
    # () -> the paper's numbers that `paper` leaves out because gridlab builds no such model (no config can
    # aim at them): dataset, model_paper, quantity, published, table. Listed as out of reach, not dropped.
    unmodelled: Callable[[], pd.DataFrame] | None = None
    replicated_over: tuple[str, ...] = ()  # columns `paper` copies each number over (one number, several rows)
    # The model a number was printed for, where the paper's table names fewer model axes than gridlab's
    # cells have (Meister's Table 5: no projection): axis -> the paper's value. A row of another value is a
    # copy of that number onto one of gridlab's extra models: an extra measurement, never a verdict.
    printed_for: Mapping[str, str] = field(default_factory=dict)
    # Whether `ours` reads the trained models' test metrics (`inputs.cells`) rather than analysis rows: which
    # cells a number was measured on is then the trained ones, else the ones with complete rows.
    reads_models: bool = False


def applicable_configs(inputs: ReportInputs, analyses: Sequence[str]) -> pd.DataFrame:
    """The grid's cells (trained or not) for which one of `analyses` is requested and applies."""
    configs = inputs.configs
    wanted = [a for a in analyses if inputs.requested(a) and a in ANALYSES]
    if not wanted or configs.empty:
        return configs.iloc[0:0]
    cells = [CellConfig.model_validate(config) for config in configs["_config"]]
    keep = [any(ANALYSES[a].applies(cell) for a in wanted) for cell in cells]
    return configs[np.asarray(keep, dtype=bool)]


def expected(comparison: Comparison, inputs: ReportInputs) -> pd.DataFrame:
    """The published numbers the grid's configured cells aim at: keys + extra + quantity + PAPER columns."""
    configs = applicable_configs(inputs, comparison.analyses)
    columns = [*comparison.keys, *comparison.extra, "quantity", *PAPER]
    if configs.empty:
        return pd.DataFrame(columns=columns)
    models = configs[list(dict.fromkeys([*comparison.keys, *comparison.join]))].drop_duplicates()
    paper = comparison.paper()
    defaults = {
        "published_seed_std": np.nan,
        "rerun": np.nan,
        "table": published(comparison.key)["table"].iloc[0],
        "note": "",
        "corpus": "",
    }
    for column, default in defaults.items():
        if column not in paper:
            paper[column] = default
    frame = models.merge(paper, on=list(comparison.join), how="inner")
    if comparison.admit is not None:
        frame = comparison.admit(frame, configs, inputs)
    return frame[columns].drop_duplicates(subset=columns[: -len(PAPER)]).reset_index(drop=True)


def long_rows(
    frame: pd.DataFrame,
    keys: Sequence[str],
    quantities: Mapping[str, tuple[str, str | None]],
    n_seeds: str | None = "n_seeds",
    n_instances: str | None = "n_instances",
) -> pd.DataFrame:
    """A section's wide frame as long rows: for each quantity q -> (value column, seed-std column), one row per
    frame row with keys, quantity = q, ours, ours_std, n_seeds, n_instances (NaN where a column is absent)."""
    parts = []
    for quantity, (value, spread) in quantities.items():
        part = frame[list(keys)].copy()
        part["quantity"] = quantity
        part["ours"] = frame[value].astype(float)
        part["ours_std"] = frame[spread].astype(float) if spread and spread in frame else np.nan
        part["n_seeds"] = frame[n_seeds] if n_seeds and n_seeds in frame else np.nan
        part["n_instances"] = frame[n_instances] if n_instances and n_instances in frame else np.nan
        parts.append(part)
    columns = [*keys, "quantity", *OURS]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
