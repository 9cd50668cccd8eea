"""One module per section: each exposes `SECTION`, a title, the analyses it reads, and
`build(inputs) -> SectionOutput`. The report renders every section in the order its caller lists them (the
papers' sections, in `gridlab.studies.sections`, add the published numbers they are set beside)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gridlab.report.artifacts import SectionOutput


@dataclass(frozen=True)
class Section:
    id: str  # "jain_wallace"; anchor and file prefix
    title: str  # "Jain & Wallace (2019), Attention is not Explanation"
    analyses: tuple[str, ...]  # the analysis ids it reads; a section with none of them run is listed as missing
    build: Callable[..., SectionOutput]  # (ReportInputs) -> SectionOutput
    # It also reads the trained cells' test metrics (an accuracy table): its artifacts trace to every trained
    # cell, not only to those with rows of its analyses (`gridlab.report.build.cells_read`).
    reads_cells: bool = False
