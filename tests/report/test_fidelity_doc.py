"""docs/fidelity.md and the report's fidelity section: `gridlab fidelity` writes the document for grids with
and without results, the settings table is read when present, and `gridlab report` puts the fidelity table
first in index.html, with fidelity.md and fidelity.csv beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import GridlabError
from gridlab.report.build import build_report
from gridlab.report.fidelity import IDENTITY, FidelityResult
from gridlab.report.fidelity_doc import SETTINGS_COLUMNS, coverage_frame, coverage_markdown, settings_markdown

from .test_fidelity import JW_GRID, embeddings_grid, jw_rows


@pytest.fixture
def jw_with_rows(synthetic_grid):
    grid = synthetic_grid(JW_GRID)
    for cell in grid.cells(dataset="sst"):
        grid.write_rows("importance_correlation", cell, jw_rows(cell.config.seed))
    return grid


def test_the_command_writes_the_document(jw_with_rows, synthetic_grid, tmp_path: Path):
    empty = synthetic_grid({**JW_GRID, "name": "not-launched"})
    out = tmp_path / "docs" / "fidelity.md"
    result = CliRunner().invoke(app, ["fidelity", str(jw_with_rows.path), str(empty.path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"fidelity: {out}" in result.output
    text = out.read_text()
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "# Fidelity: gridlab against the papers",
        "## Summary",
        "## Published numbers",
        "## Out of reach",
        "## Settings: the papers, their code and gridlab",
        "## Tolerances",
        f"## Fidelity: fidelity-jw ({jw_with_rows.path})",
        f"## Fidelity: not-launched ({empty.path})",
        "## Wall time",
    ]
    assert f"`gridlab fidelity {jw_with_rows.path} {empty.path} --out {out}`" in text
    assert "| fidelity-jw |" in text and "| not-launched |" in text
    mine, theirs = text.split("## Fidelity: not-launched")
    assert "| within |" in mine and "| outside |" in mine and "no ablation yet" in mine
    assert "| not run |" in theirs and "| within |" not in theirs.split("## Wall time")[0]
    assert (
        "18 published numbers: 0 within tolerance, 0 outside (0 with an ablation, 0 without one yet), 18 not run."
        in text
    )
    assert "Not run yet (18 numbers):" not in text  # the launched grid measured some: fewer are left
    assert "widens nothing" in text  # every tolerance rule with its reason
    assert "| Serrano & Smith (2019) | Table 2" in text and "| yahoo | 4 | no data |" in text
    assert "- Wiegreffe & Pinter (2019): the paper's text is not among the shared papers" in text
    assert text.count("Wall time: launch wall time not recorded; no training recorded.") == 2


def test_the_command_on_a_missing_grid_file(tmp_path: Path):
    result = CliRunner().invoke(app, ["fidelity", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "f.md")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert not (tmp_path / "f.md").exists()


def test_the_settings_table(tmp_path: Path):
    path = tmp_path / "fidelity_settings.csv"
    assert "absent" in settings_markdown(path)
    pd.DataFrame(
        [["Jain & Wallace (2019)", "tokeniser", "spaCy", "spaCy 2, lowercased", "regex, lowercased", "no spaCy"]],
        columns=list(SETTINGS_COLUMNS),
    ).to_csv(path, index=False)
    table = settings_markdown(path)
    assert table.splitlines()[0] == "| " + " | ".join(SETTINGS_COLUMNS) + " |"
    assert "| Jain & Wallace (2019) | tokeniser | spaCy | spaCy 2, lowercased | regex, lowercased | no spaCy |" in table
    path.write_text("paper,setting\nx,y\n")
    with pytest.raises(GridlabError, match="paper_says"):
        settings_markdown(path)


def test_the_report_puts_the_fidelity_table_first(jw_with_rows):
    summary = build_report(jw_with_rows.expanded)
    index = summary.index.read_text()
    tables = re.findall(r'<table id="([^"]+)"', index)
    assert tables[0] == "fidelity" and "jw_table2" in tables
    assert index.index('<section id="fidelity">') < index.index('<section id="jain_wallace">')
    assert tables.index("fidelity_tolerances") < tables.index("jw_table2")
    frame = pd.read_csv(summary.out / "fidelity.csv")
    assert len(frame) == 18 and set(frame["verdict"]) == {"within", "outside", "undefined", "not run"}
    markdown = (summary.out / "fidelity.md").read_text()
    assert markdown.startswith(f"# Fidelity: fidelity-jw ({jw_with_rows.path})")
    assert "## Tolerances" in markdown and "widens nothing" in markdown
    manifest = json.loads((summary.out / "report.json").read_text())
    assert manifest["sections"][0]["id"] == "fidelity"
    assert manifest["sections"][0]["artifacts"] == ["fidelity", "fidelity_tolerances"]
    assert summary.fidelity == (
        "18 published numbers: 4 within tolerance, 2 outside (0 with an ablation, 2 without one yet), "
        "10 not run, 2 undefined (rows, but no value)."
    )
    assert "fidelity" not in summary.sections  # the papers' sections; the fidelity line says the rest


def test_a_setting_axis_gets_its_sensitivity_table(synthetic_grid):
    summary = build_report(embeddings_grid(synthetic_grid).expanded)
    manifest = json.loads((summary.out / "report.json").read_text())
    assert manifest["sections"][0]["artifacts"] == ["fidelity", "fidelity_sensitivity", "fidelity_tolerances"]
    split = pd.read_csv(summary.out / "fidelity_sensitivity.csv", keep_default_na=False)
    assert set(split["axis"]) == {"model.embeddings"} and set(split["value"]) == {"null", "word2vec"}
    markdown = (summary.out / "fidelity.md").read_text()
    assert "## Sensitivity to model.embeddings" in markdown
    assert (
        "| model.embeddings | word2vec | Jain & Wallace (2019) | Table 2 | sst | lstm + additive | class 0 |"
        in markdown
    )
    assert "Cells of every value of model.embeddings are pooled here" in markdown


def test_the_report_command_prints_the_fidelity_line(jw_with_rows):
    result = CliRunner().invoke(app, ["report", str(jw_with_rows.path)])
    assert result.exit_code == 0, result.output
    assert "fidelity: 18 published numbers:" in result.output and "fidelity.md" in result.output


def _result(file: str, verdicts: dict[str, str], axes: list[str] | None = None) -> FidelityResult:
    """A grid's fidelity rows: one J&W Table 2 number per quantity, with the given verdicts."""
    frame = pd.DataFrame(
        [
            {"paper": "J&W", "table": "Table 2", "dataset": "imdb", "model": "lstm + additive", "detail": "class 0"}
            | {"quantity": quantity, "verdict": verdict}
            for quantity, verdict in verdicts.items()
        ]
    )
    return FidelityResult(file, file, frame, pd.DataFrame(), axes or [])


def test_each_published_number_takes_the_verdict_of_the_first_grid_that_measured_it():
    paper_grid = _result("paper.yaml", {"tau_g": "within", "tau_loo": "not run", "sig_frac_g": "not run"})
    subset = _result("subset.yaml", {"tau_g": "outside", "tau_loo": "outside", "sig_frac_g": "not run"})
    ablation = _result("ablation.yaml", {"sig_frac_g": "within"}, axes=["model.embeddings"])
    frame = coverage_frame([paper_grid, subset, ablation]).set_index("quantity")
    assert list(frame.columns) == [c for c in IDENTITY if c != "quantity"] + ["verdict", "file"]
    assert frame.loc["tau_g", ["verdict", "file"]].tolist() == ["within", "paper.yaml"]  # the paper's grid first
    assert frame.loc["tau_loo", ["verdict", "file"]].tolist() == ["outside", "subset.yaml"]  # else its subset
    assert frame.loc["sig_frac_g", ["verdict", "file"]].tolist() == ["not run", ""]  # an ablation does not count
    text = coverage_markdown([paper_grid, subset, ablation])
    assert "| J&W | 3 | 1 | 1 | 1 |" in text
    assert "Not run yet (1 number):" in text and "| J&W | Table 2 | imdb | lstm + additive | 1 |" in text


def test_the_count_of_published_numbers_without_a_grid():
    assert coverage_markdown([]) == "No grid without a setting axis aims at a published number."
