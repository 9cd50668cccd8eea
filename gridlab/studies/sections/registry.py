"""The report's sections, in the order `index.html` shows them: one per paper, then gridlab's own
(`gridlab.report.sections.registry`).

    >>> [section.id for section in load_sections()]
    ['jain_wallace', 'serrano_smith', 'wiegreffe_pinter', 'vashishth', 'meister', 'rationale', 'faithfulness',
     'heatmaps', 'summaries']

Each paper's module exposes `SECTION` (a `gridlab.studies.sections.PaperSection`).
"""

from __future__ import annotations

from gridlab.report.sections import Section
from gridlab.report.sections import registry as report_sections
from gridlab.studies.sections import PaperSection

PACKAGE = "gridlab.studies.sections"

PAPERS: tuple[str, ...] = (
    f"{PACKAGE}.jain_wallace",
    f"{PACKAGE}.serrano_smith",
    f"{PACKAGE}.wiegreffe_pinter",
    f"{PACKAGE}.vashishth",
    f"{PACKAGE}.meister",
)
SECTIONS: tuple[str, ...] = (*PAPERS, *report_sections.SECTIONS)


def paper_sections() -> list[PaperSection]:
    """The papers' sections, whose comparisons make the fidelity table."""
    sections = report_sections.load_sections(PAPERS)
    for name, section in zip(PAPERS, sections, strict=True):
        if not isinstance(section, PaperSection):
            raise TypeError(f"{name}.SECTION is not a gridlab.studies.sections.PaperSection: {section!r}")
    return [s for s in sections if isinstance(s, PaperSection)]


def load_sections() -> list[Section]:
    """Every section of the report, the papers' first."""
    return [*paper_sections(), *report_sections.load_sections()]
