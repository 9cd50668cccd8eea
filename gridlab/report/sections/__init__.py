"""One module per paper (and one for ours): each exposes `SECTION`, a title, the analyses it reads, and
`build(inputs) -> SectionOutput`. The report renders every section in this order. A section that sets our
numbers beside a paper's also declares those `comparisons`, from which the fidelity table is built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gridlab.report.artifacts import SectionOutput
from gridlab.report.comparison import Comparison


@dataclass(frozen=True)
class Section:
    id: str  # "jain_wallace"; anchor and file prefix
    title: str  # "Jain & Wallace (2019), Attention is not Explanation"
    analyses: tuple[str, ...]  # the analysis ids it reads; a section with none of them run is listed as missing
    build: Callable[..., SectionOutput]  # (ReportInputs) -> SectionOutput
    comparisons: tuple[Comparison, ...] = ()  # its published numbers and ours for each (the fidelity table)
