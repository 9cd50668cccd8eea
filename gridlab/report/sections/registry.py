"""The report's sections, in the order `index.html` shows them: one per paper, then gridlab's own.

    >>> [section.id for section in load_sections()]
    ['jain_wallace', 'serrano_smith', 'wiegreffe_pinter', 'vashishth', 'meister', 'rationale', 'faithfulness',
     'heatmaps', 'summaries']

Each module exposes `SECTION` (a `gridlab.report.sections.Section`).
"""

from __future__ import annotations

import importlib

from gridlab.report.sections import Section

PACKAGE = "gridlab.report.sections"

SECTIONS: tuple[str, ...] = (
    f"{PACKAGE}.jain_wallace",
    f"{PACKAGE}.serrano_smith",
    f"{PACKAGE}.wiegreffe_pinter",
    f"{PACKAGE}.vashishth",
    f"{PACKAGE}.meister",
    f"{PACKAGE}.rationale",
    f"{PACKAGE}.faithfulness",
    f"{PACKAGE}.heatmaps",
    f"{PACKAGE}.summaries",
)


def load_section(module_name: str) -> Section:
    section = importlib.import_module(module_name).SECTION
    if not isinstance(section, Section):
        raise TypeError(f"{module_name}.SECTION is not a gridlab.report.sections.Section: {section!r}")
    return section


def load_sections() -> list[Section]:
    """Every section, imported by module name: a module that is missing or fails to import is an error."""
    return [load_section(name) for name in SECTIONS]
