"""What the records beside generated pages share (docs/fidelity/record.csv, docs/conclusions.csv): each
measured value is traced to the run that made it, so that a regeneration on a machine without that run can
carry it, and tell whether it is still the grid's.

    >>> trace = Trace.of(Path("grids/jain_wallace.yaml"), gridlab_commit(), today, inputs.cell_commits)
    >>> trace.commit_for(["3f1c9a0b2d4e"])    # the commit that trained those cells, else the checkout's
    >>> frame = read_record(path, COLUMNS, optional=TRACE)                            # the record's CSV, as text
    >>> cell_ids("b a")                                                               # ['a', 'b']

A value is traced to its cells (ids from their resolved configs: a changed grid gives other ids), the grid
file's content hash (`gridlab.store.provenance`), the gridlab commits that trained those cells, and the day it was
measured. Which recorded cells count as "the grid's today" is each record's own rule.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from gridlab.errors import GridlabError
from gridlab.store.provenance import grid_hash
from gridlab.text import counted

TRACE = ["cells", "grid_hash", "commit"]  # what a value was measured on, beside the day (`measured_on`)


@dataclass(frozen=True)
class Trace:
    """What a value measured now is traced to: the grid file's content hash, the gridlab commit that trained
    its cells (`cell_commits`, as each cell's metrics record it; `commit`, the checkout writing the page, for
    cells trained before the trainer recorded one), the day."""

    grid_hash: str
    commit: str
    measured_on: str
    cell_commits: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls, grid_file: Path, commit: str, today: datetime.date, cell_commits: Mapping[str, str] | None = None
    ) -> Trace:
        return cls(grid_hash(grid_file), commit, today.isoformat(), dict(cell_commits or {}))

    def trained(self, cells: Iterable[str]) -> str:
        """The commits that trained `cells` (space-separated, sorted); '' when none of them records one."""
        return " ".join(sorted({self.cell_commits[c] for c in cells if c in self.cell_commits}))

    def commit_for(self, cells: Iterable[str]) -> str:
        """What a value measured now on `cells` is traced to: the commits that trained them, else `commit`."""
        return self.trained(cells) or self.commit


def same_numbers(recorded: object, measured: object) -> bool:
    """Whether a record's number (text, '' for none) is the one measured now: both absent, or equal to float
    precision (the record writes floats in full)."""
    old, new = pd.to_numeric(recorded, errors="coerce"), pd.to_numeric(measured, errors="coerce")
    if pd.isna(old) or pd.isna(new):
        return bool(pd.isna(old) and pd.isna(new))
    return math.isclose(float(old), float(new), rel_tol=1e-9, abs_tol=1e-12)


def kept_trace(found: dict[str, Any], trace: Trace) -> Trace:
    """The record's trace for a number measured again on the same cells, grid file and value: the run that
    made it, not the regeneration (another day, another checkout), so a page regenerated with the same runs
    stays the same bytes. Its commit is the one its cells record where they record one (a fact of the run),
    else the record's."""
    commit = trace.trained(cell_ids(found["cells"])) or str(found["commit"])
    return Trace(trace.grid_hash, commit, str(found["measured_on"]))


def cell_ids(text: object) -> list[str]:
    """The record's space-separated cell ids, sorted ([] for none: a value recorded without its cells)."""
    return sorted(str(text or "").split())


def key_text(value: Any) -> str:
    """A key cell as a record's CSV holds it: '' for null, else its text."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value)


def read_record(path: Path, columns: list[str], optional: list[str] | None = None) -> pd.DataFrame:
    """The file's columns as text; `optional` ones absent from an older file read as empty. A file without
    its columns is an error (a record silently missing one would carry values without their trace)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for column in optional or []:
        if column not in frame.columns:
            frame[column] = ""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise GridlabError(f"{path}: missing columns {', '.join(missing)} (expected the header {','.join(columns)})")
    return frame[columns]


def regenerating(stale: pd.DataFrame, noun: str) -> str:
    """The launches that would measure the stale rows again, each with how many it would renew, in the order of
    the rows' grids, e.g. "`gridlab launch grids/a.yaml` (3 numbers), ..."."""
    per_grid = stale.groupby("grid", sort=False).size()
    return ", ".join(f"`gridlab launch {grid}` ({counted(int(n), noun)})" for grid, n in per_grid.items())
