"""Every section module of the registry imports and exposes a `Section`, in the report's order: the papers'
sections (each a `PaperSection`) first, then gridlab's own."""

from __future__ import annotations

import importlib

from gridlab.report.sections import Section
from gridlab.studies.sections import PaperSection
from gridlab.studies.sections.registry import PAPERS, SECTIONS, load_sections, paper_sections


def test_every_section_module_imports():
    assert [name.rsplit(".", 1)[-1] for name in SECTIONS] == [
        "jain_wallace",
        "serrano_smith",
        "wiegreffe_pinter",
        "vashishth",
        "meister",
        "rationale",
        "faithfulness",
        "heatmaps",
        "summaries",
    ]
    ids = []
    for name in SECTIONS:
        section = importlib.import_module(name).SECTION
        assert isinstance(section, Section), name
        assert callable(section.build) and isinstance(section.analyses, tuple)
        ids.append(section.id)
    assert len(set(ids)) == len(ids)
    assert [s.id for s in load_sections()] == ids


def test_the_papers_sections_are_paper_sections_and_come_first():
    assert all(isinstance(importlib.import_module(name).SECTION, PaperSection) for name in PAPERS)
    assert [s.id for s in paper_sections()] == [s.id for s in load_sections()[: len(PAPERS)]]
