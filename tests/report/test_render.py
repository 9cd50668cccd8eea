"""Rendering a report folder: the files, index.html's ids, report.json, and the atomic swap."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure

from gridlab.errors import GridlabError
from gridlab.report.artifacts import NOT_RECORDED, Figure, Fragment, Provenance, Table
from gridlab.report.render import SectionResult, markdown_table, render_report


def figure() -> MplFigure:
    fig = MplFigure(figsize=(2, 2))
    fig.subplots().plot([0, 1], [1, 0])
    return fig


def sections(table_id: str = "t_main") -> list[SectionResult]:
    frame = pd.DataFrame({"dataset": ["sst", "imdb"], "tau": [0.123456789, float("nan")], "n": [3, 4]})
    display = pd.DataFrame({"dataset": ["sst", "imdb"], "tau": ["0.12 ± 0.01", "–"]})
    return [
        SectionResult(
            "paper_a",
            "Paper A <2019>",
            [
                Table(table_id, "A table", frame, "caption & more", display),
                Figure("f_main", "A figure", figure(), "a caption"),
                Fragment("h_main", "Heatmaps", '<span style="color:red">tok</span>'),
            ],
            ["adversarial: not run — add `adversarial: {}`"],
        ),
        SectionResult("paper_b", "Paper B", [], ["sparsity_importance: not run"], rendered=False),
    ]


def siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name != folder.name)


def test_files_index_and_manifest(tmp_path: Path):
    out = tmp_path / "report"
    manifest = render_report(sections(), out, title="quick")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["f_main.png", "h_main.html", "index.html", "report.json", "t_main.csv", "t_main.md"]
    assert (out / "f_main.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = pd.read_csv(out / "t_main.csv")
    assert csv.loc[0, "tau"] == 0.123456789  # full precision in the CSV
    markdown = (out / "t_main.md").read_text()
    assert "| 0.12 ± 0.01 |" in markdown and "0.123456789" not in markdown  # the display, for reading
    index = (out / "index.html").read_text()
    assert '<table id="t_main" class="gridlab-table">' in index
    inlined = base64.b64encode((out / "f_main.png").read_bytes()).decode("ascii")  # one file: no PNG to carry
    assert f'<img id="f_main" class="gridlab-figure" src="data:image/png;base64,{inlined}" alt="A figure"' in index
    assert '<div id="h_main" class="gridlab-fragment"><span style="color:red">tok</span></div>' in index
    assert "Paper A &lt;2019&gt;" in index and "caption &amp; more" in index  # escaped
    assert "adversarial: not run" in index and "sparsity_importance: not run" in index
    assert "<link" not in index and 'src="http' not in index  # self-contained
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk == manifest
    assert [(a["id"], a["kind"], a["section"]) for a in manifest["artifacts"]] == [
        ("t_main", "table", "paper_a"),
        ("f_main", "figure", "paper_a"),
        ("h_main", "fragment", "paper_a"),
    ]
    assert manifest["artifacts"][0]["files"] == ["t_main.md", "t_main.csv"]
    assert manifest["sections"][1] == {
        "id": "paper_b",
        "title": "Paper B",
        "rendered": False,
        "artifacts": [],
        "missing": ["sparsity_importance: not run"],
        "cells": [],
        "trained_with": [],
    }
    assert "Paper B: sparsity_importance: not run" in manifest["missing"]
    assert siblings(out) == []  # no temporary folder left beside it


def test_each_table_and_figure_is_traced_to_its_cells_and_their_commits(tmp_path: Path):
    out = tmp_path / "report"
    first, second = sections()
    traced = [dataclasses.replace(first, cells=("c1", "c2", "c3")), second]
    commits = {"c1": "git aaa", "c2": "git bbb"}  # c3 was trained before cells recorded their commit
    provenance = Provenance("grids/quick.yaml", "sha256:0123456789ab", "git ccc", commits)
    manifest = render_report(traced, out, title="quick", provenance=provenance)
    assert manifest["provenance"] == {
        "grid_file": "grids/quick.yaml",
        "grid_hash": "sha256:0123456789ab",
        "rendered_with": "git ccc",
    }
    figure_entry = next(a for a in manifest["artifacts"] if a["id"] == "f_main")
    assert figure_entry["cells"] == ["c1", "c2", "c3"]
    assert figure_entry["trained_with"] == ["git aaa", "git bbb", NOT_RECORDED]
    index = (out / "index.html").read_text()
    assert "Grid file grids/quick.yaml (sha256:0123456789ab); rendered with git ccc." in index
    assert "Rows of 3 cells, trained with git aaa, git bbb, not recorded." in index


def test_rerender_replaces_the_previous_report(tmp_path: Path):
    out = tmp_path / "report"
    render_report(sections("t_old"), out, title="quick")
    (out / "stray.txt").write_text("from the old report")
    render_report(sections("t_new"), out, title="quick")
    names = {p.name for p in out.iterdir()}
    assert "t_new.csv" in names and "t_old.csv" not in names and "stray.txt" not in names
    assert siblings(out) == []


def test_a_failure_leaves_the_previous_report_untouched(tmp_path: Path):
    out = tmp_path / "report"
    render_report(sections(), out, title="quick")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    class Broken(MplFigure):
        def savefig(self, *args, **kwargs):
            raise RuntimeError("disk full")

    broken = sections("t_other")
    broken[0].artifacts[1] = Figure("f_main", "A figure", Broken())
    with pytest.raises(RuntimeError, match="disk full"):
        render_report(broken, out, title="quick")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert siblings(out) == []


def test_refuses_to_replace_a_folder_that_is_not_a_report(tmp_path: Path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(GridlabError, match="not a gridlab report"):
        render_report(sections(), out, title="quick")
    assert (out / "notes.txt").read_text() == "keep me"


def test_duplicate_or_unsafe_ids_are_errors(tmp_path: Path):
    twice = sections()
    twice[0].artifacts.append(Table("t_main", "again", pd.DataFrame({"a": [1]})))
    with pytest.raises(ValueError, match="used twice"):
        render_report(twice, tmp_path / "r1", title="x")
    unsafe = [SectionResult("s", "S", [Table("../escape", "x", pd.DataFrame({"a": [1]}))])]
    with pytest.raises(ValueError, match="safe file stem"):
        render_report(unsafe, tmp_path / "r2", title="x")
    assert not any(tmp_path.iterdir())


def test_markdown_table_rounds_and_escapes():
    frame = pd.DataFrame({"name": ["a|b", None], "value": [0.123456, 12345.6], "flag": [True, False]})
    assert markdown_table(frame).splitlines() == [
        "| name | value | flag |",
        "| --- | ---: | --- |",
        "| a\\|b | 0.123 | yes |",
        "| – | 12,346 | no |",
    ]


def test_a_table_may_bring_its_own_markdown(tmp_path: Path):
    frame = pd.DataFrame({"quantity": ["tau_g"], "verdict": ["within"]})
    table = Table("t_own", "Own", frame, "a caption", markdown="# Own\n\nthe table, then its rules\n")
    render_report([SectionResult("s", "S", [table])], tmp_path / "report", title="own")
    assert (tmp_path / "report" / "t_own.md").read_text() == "# Own\n\nthe table, then its rules\n"
    assert pd.read_csv(tmp_path / "report" / "t_own.csv").equals(frame)  # the CSV is the frame, as always
