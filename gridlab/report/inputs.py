"""What a report reads: a grid's analysis rows (Parquet), its summary, and each trained cell's config and
test metrics. Sections get this object and never touch the file layout themselves.

    >>> inputs = ReportInputs.load(expanded)
    >>> rows = inputs.rows("permutation")        # every part of every cell, or None when not run
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from gridlab.checkpoints import ModelStore
from gridlab.grid.expand import ExpandedGrid
from gridlab.results.parts import AXES
from gridlab.results.summary import summary_path


@dataclass
class ReportInputs:
    grid: ExpandedGrid
    _rows: dict[str, pd.DataFrame | None] = field(default_factory=dict)

    @classmethod
    def load(cls, grid: ExpandedGrid) -> ReportInputs:
        return cls(grid)

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
            folder = self.results_dir / "analyses" / analysis_id
            cells = {c.id for c in self.grid.cells}
            parts = (
                sorted(p for p in folder.glob("cell=*/part-*.parquet") if p.parent.name[len("cell=") :] in cells)
                if folder.is_dir()
                else []
            )
            frame = None
            if parts:
                frame = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
                frame = frame.drop(columns=["cell"], errors="ignore")
            self._rows[analysis_id] = frame
        return self._rows[analysis_id]

    @cached_property
    def summary(self) -> pd.DataFrame | None:
        path = summary_path(self.results_dir)
        return pd.read_parquet(path) if path.is_file() else None

    @cached_property
    def cells(self) -> pd.DataFrame:
        """One row per trained cell: cell_id, the axes, the model block, and its test metrics (`test_*`)."""
        store = ModelStore(self.results_dir)
        records = []
        for cell in self.grid.cells:
            folder = store.cell(cell.id)
            if folder.state() != "trained":
                continue
            metrics = folder.read("metrics.json")
            records.append(
                {
                    "cell_id": cell.id,
                    **{axis: getattr(cell.config, axis) for axis in AXES},
                    **{k: v for k, v in metrics.items() if k.startswith("test_")},
                }
            )
        return pd.DataFrame.from_records(records, columns=None if records else ["cell_id", *AXES])
