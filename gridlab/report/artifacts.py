"""What a report section produces: tables (written as Markdown and CSV), figures (PNG) and HTML fragments
(per-instance heatmaps). Sections build these from data; `render` decides how they land on disk.

    >>> Table("jw_table2", "J&W Table 2: ...", frame, caption="...")
    >>> Figure("jw_fig3", "Median permutation TVD against max attention", fig)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from matplotlib.figure import Figure as MplFigure


@dataclass(frozen=True)
class Table:
    id: str  # file stem: <id>.md and <id>.csv; unique within a report
    title: str
    frame: pd.DataFrame  # exactly the numbers written to the CSV (the Markdown rounds them for reading)
    caption: str = ""  # what the rows are, how they were computed, where the published numbers come from
    # What the Markdown and index.html show instead of the rounded frame, when set: the same rows, with
    # e.g. "0.40 ± 0.21" strings (`stats.plus_minus`) and only the axes that vary. The CSV is always `frame`.
    display: pd.DataFrame | None = None
    # The whole <id>.md when set (a table that needs more than a caption beside it, e.g. the fidelity table
    # with its tolerance rules); default: title, the readable table, the caption.
    markdown: str | None = None


@dataclass(frozen=True)
class Figure:
    id: str  # file stem: <id>.png
    title: str
    figure: MplFigure  # built with matplotlib.figure.Figure (no pyplot state), closed after rendering
    caption: str = ""


@dataclass(frozen=True)
class Fragment:
    id: str  # anchor in index.html (also <id>.html beside it)
    title: str
    html: str  # self-contained HTML (inline styles), escaped by its builder
    caption: str = ""


Artifact = Table | Figure | Fragment


@dataclass(frozen=True)
class SectionOutput:
    """A section's artifacts, and what it could not build because rows are missing (shown in the report)."""

    artifacts: list[Artifact] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # e.g. "adversarial rows (analysis not run)"


@dataclass(frozen=True)
class Provenance:
    """What a report's numbers were computed from, so that each table and figure can be traced: the grid file
    and its content hash, the commit that trained each cell (absent for cells trained before the trainer
    recorded one), and the commit that rendered the report. Each section names the cells whose rows it read."""

    grid_file: str
    grid_hash: str
    rendered_with: str  # `gridlab.store.provenance.gridlab_commit()` when the report was written
    cell_commits: dict[str, str] = field(default_factory=dict)  # cell id -> 'git <hash>'

    def trained_with(self, cells: tuple[str, ...]) -> list[str]:
        """The distinct commits that trained `cells`, sorted; 'not recorded' for cells without one."""
        return sorted({self.cell_commits.get(cell, NOT_RECORDED) for cell in cells})


NOT_RECORDED = "not recorded"
