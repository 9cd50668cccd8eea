"""What a report reads: a grid's analysis rows (Parquet), its summary, and each trained cell's config and
test metrics. Sections get this object and never touch the file layout themselves.

    >>> inputs = ReportInputs.load(expanded)
    >>> rows = inputs.rows("permutation")        # every part of every cell, or None when not run
    >>> inputs.configs                           # every cell of the grid, trained or not: what it aims at
    >>> inputs.restrict(ids)                     # the same grid with only these cells (rows already read kept)
    >>> inputs.partial("sparsity_importance")    # cells left out of its rows: some of their parts not written yet

A cell whose analysis has only some of its parts (a launch in flight) is left out of that analysis's rows: its
number would be a mean over part of its test sample, beside cells measured on all of it. `withheld=True` reads
none of the grid's results (its cells and what they aim at stay known): what `gridlab fidelity` reads of a grid
whose launch is running, so that a record is never written from a grid half rerun.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from gridlab.catalog.analyses import ANALYSES
from gridlab.grid.expand import Cell, ExpandedGrid
from gridlab.grid.paths import get_path
from gridlab.results.parts import AXES
from gridlab.results.shards import parts_expected
from gridlab.store.layout import CellFiles, cell_of
from gridlab.store.models import ModelStore


@dataclass
class ReportInputs:
    grid: ExpandedGrid
    _rows: dict[str, pd.DataFrame | None] = field(default_factory=dict)
    _partial: dict[str, list[str]] = field(default_factory=dict)  # analysis -> cells left out, partly written
    withheld: bool = False  # read none of its results: no rows, no summary, no trained cell

    @classmethod
    def load(cls, grid: ExpandedGrid, withheld: bool = False) -> ReportInputs:
        return cls(grid, withheld=withheld)

    @property
    def _read_cells(self) -> list[Cell]:
        """The cells whose results are read: all of the grid's, none where they are withheld."""
        return [] if self.withheld else self.grid.cells

    @property
    def name(self) -> str:
        return self.grid.spec.name

    @property
    def results_dir(self) -> Path:
        return self.grid.results_dir

    def requested(self, analysis_id: str) -> bool:
        """Whether the grid file asks for this analysis."""
        return analysis_id in self.grid.analyses

    def rows(self, analysis_id: str) -> pd.DataFrame | None:
        """All rows of one analysis for the grid's cells (hive partition column `cell` dropped), or None when
        none were written. Only the grid's cells count: a grid restricted with --where reports on its own."""
        if analysis_id not in self._rows:
            parts, self._partial[analysis_id] = self._complete_parts(analysis_id)
            frame = None
            if parts:
                frame = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
                frame = self._with_settings(frame.drop(columns=["cell"], errors="ignore"))
            self._rows[analysis_id] = frame
        return self._rows[analysis_id]

    def partial(self, analysis_id: str) -> list[str]:
        """The grid's cells with some but not all parts of this analysis written, left out of `rows`."""
        self.rows(analysis_id)
        return self._partial.get(analysis_id, [])

    def _complete_parts(self, analysis_id: str) -> tuple[list[Path], list[str]]:
        """The parts of the cells whose analysis is complete, and the cells with only some of theirs."""
        by_cell: dict[str, list[Path]] = {}
        for path in self.grid.workspace.parts_of(analysis_id, {c.id for c in self._read_cells}):
            by_cell.setdefault(cell_of(path.parent), []).append(path)
        per_model = ANALYSES[analysis_id].scope == "model"
        spec = self.grid.spec
        complete, partial = [], []
        for cell_id, paths in sorted(by_cell.items()):
            try:
                expected = parts_expected(self.grid.workspace, cell_id, per_model, spec.instances, spec.shard_size)
            except FileNotFoundError:  # its model folder is gone: nothing says how many parts it had
                expected = len(paths)
            if len(paths) < expected:
                partial.append(cell_id)
            else:
                complete += paths
        return complete, partial

    @cached_property
    def summary(self) -> pd.DataFrame | None:
        path = self.grid.workspace.summary
        return pd.read_parquet(path) if path.is_file() and not self.withheld else None

    @cached_property
    def cells(self) -> pd.DataFrame:
        """One row per trained cell: cell_id, the axes, the model block, and its test metrics (`test_*`)."""
        store = ModelStore(self.grid.workspace.models)
        records = []
        for cell in self._read_cells:
            folder = store.cell(cell.id)
            if folder.state() != "trained":
                continue
            metrics = folder.read(CellFiles.METRICS)
            records.append(
                {
                    "cell_id": cell.id,
                    **{axis: getattr(cell.config, axis) for axis in AXES},
                    **{k: v for k, v in metrics.items() if k.startswith("test_")},
                }
            )
        frame = pd.DataFrame.from_records(records, columns=None if records else ["cell_id", *AXES])
        return self._with_settings(frame)

    @cached_property
    def cell_commits(self) -> dict[str, str]:
        """The gridlab commit that trained each trained cell, as its metrics record it (cells trained before
        the trainer recorded it are absent)."""
        store = ModelStore(self.grid.workspace.models)
        found = {}
        for cell in self._read_cells:
            folder = store.cell(cell.id)
            if folder.state() == "trained":
                commit = folder.read(CellFiles.METRICS).get("gridlab_commit")
                if commit:
                    found[cell.id] = str(commit)
        return found

    def _with_settings(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`frame` with a column per setting axis that varies in the grid (`model.embeddings`, ...): rows of
        cells that differ in a setting belong to different configurations, which tables must not pool."""
        settings = self.setting_axes
        if not settings:
            return frame
        return frame.merge(self.configs[["cell_id", *settings]], on="cell_id", how="left")

    @property
    def setting_axes(self) -> list[str]:
        """The grid's axes beyond the model axes (`model.embeddings`, `train.lr`, ...) that take two or more
        values among its cells: settings whose effect on a published number the fidelity table breaks out."""
        paths = [p for p in self.grid.axis_paths if p not in AXES]
        return [p for p in paths if self.configs[p].nunique(dropna=False) > 1]

    @cached_property
    def configs(self) -> pd.DataFrame:
        """One row per cell of the grid, trained or not: cell_id, the model axes, each axis path of the grid
        beyond them (as text, null as 'null'), and `_config` (the resolved config, for `applies`)."""
        extra = [p for p in self.grid.axis_paths if p not in AXES]
        records = []
        for cell in self.grid.cells:
            dumped = cell.config.model_dump(mode="json")
            records.append(
                {
                    "cell_id": cell.id,
                    **{axis: getattr(cell.config, axis) for axis in AXES},
                    **{path: setting_text(get_path(dumped, path)) for path in extra},
                    "_config": cell.config.model_dump(),
                }
            )
        frame = pd.DataFrame.from_records(records, columns=["cell_id", *AXES, *extra, "_config"])
        frame["projection_lambda"] = frame["projection_lambda"].astype(float)
        return frame

    def restrict(self, cell_ids: Collection[str]) -> ReportInputs:
        """The same grid with only these cells; rows already read are filtered, not read again."""
        keep = set(cell_ids)
        grid = dataclasses.replace(self.grid, cells=[c for c in self.grid.cells if c.id in keep])
        rows = {
            a: None if f is None or not f["cell_id"].isin(keep).any() else f[f["cell_id"].isin(keep)]
            for a, f in self._rows.items()
        }
        partial = {a: [c for c in cells if c in keep] for a, cells in self._partial.items()}
        return ReportInputs(grid, rows, partial, self.withheld)


def setting_text(value: Any) -> str:
    """A setting's value as the report prints it: 'null' for None, JSON for lists, else str."""
    if value is None:
        return "null"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value).lower() if isinstance(value, bool) else str(value)
