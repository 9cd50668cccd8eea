"""gridlab's own sections, in the order `index.html` shows them after the papers' (which
`gridlab.studies.sections.registry` puts first).

    >>> [section.id for section in load_sections()]
    ['rationale', 'faithfulness', 'heatmaps', 'summaries']

Each module exposes `SECTION` (a `gridlab.report.sections.Section`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from gridlab.report.sections import Section

PACKAGE = "gridlab.report.sections"

SECTIONS: tuple[str, ...] = (
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


def load_sections(names: Sequence[str] = SECTIONS) -> list[Section]:
    """Every section of `names`, imported by module name: a module that is missing or fails to import is an
    error."""
    return [load_section(name) for name in names]
