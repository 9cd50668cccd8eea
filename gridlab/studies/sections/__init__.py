"""One module per paper: each exposes `SECTION`, a `PaperSection`, which is a report section
(`gridlab.report.sections.Section`) that also declares the published numbers it sets beside ours
(`comparisons`), from which the fidelity table is built."""

from __future__ import annotations

from dataclasses import dataclass

from gridlab.report.sections import Section
from gridlab.studies.comparison import Comparison


@dataclass(frozen=True)
class PaperSection(Section):
    comparisons: tuple[Comparison, ...] = ()  # its published numbers and ours for each (the fidelity table)
