"""`build_report`'s handling of sections: missing analyses with what to run, a section's own missing lines,
failures that stop the report, and the `gridlab report` command on a grid where nothing has run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.report.artifacts import SectionOutput, Table
from gridlab.report.build import run_section
from gridlab.report.sections import Section


def section(build, analyses=("permutation", "adversarial")) -> Section:
    return Section("demo", "Demo (2019)", analyses, build)


def table() -> Table:
    return Table("demo_table", "Demo", pd.DataFrame({"a": [1]}))


def test_a_section_without_rows_is_missing_not_empty(fake_inputs):
    def never(inputs):
        raise AssertionError("a section with none of its analyses run is not built")

    result = run_section(section(never), fake_inputs({}, analyses={"permutation": {}}))
    assert not result.rendered and result.artifacts == []
    assert result.missing[0].startswith("permutation: requested, but no rows yet — run `gridlab analyze grid.yaml`")
    assert result.missing[1] == (
        "adversarial: not run — add `adversarial: {}` to `analyses:` in grid.yaml and run `gridlab analyze grid.yaml`"
    )


def test_section_lines_follow_and_do_not_repeat_the_generic_one(fake_inputs):
    def build(inputs):
        return SectionOutput([table()], ["adversarial: not run (Figs. 4-5)", "Fig. 9 needs more seeds"])

    result = run_section(section(build), fake_inputs({"permutation": pd.DataFrame({"cell_id": ["c1"], "x": [1]})}))
    assert result.rendered and [a.id for a in result.artifacts] == ["demo_table"]
    assert result.cells == ("c1",)  # what its tables were computed from
    assert [line.split(" —")[0] for line in result.missing] == ["adversarial: not run", "Fig. 9 needs more seeds"]


def test_a_section_that_reads_the_test_metrics_traces_to_every_trained_cell(fake_inputs):
    rows = {"permutation": pd.DataFrame({"cell_id": ["c1"], "x": [1]})}
    trained = pd.DataFrame({"cell_id": ["c1", "c2"], "test_accuracy": [0.8, 0.9]})
    accuracy = Section("demo", "Demo (2019)", ("permutation",), lambda inputs: SectionOutput([table()]), True)
    assert run_section(accuracy, fake_inputs(rows, trained)).cells == ("c1", "c2")
    assert run_section(section(lambda inputs: SectionOutput([table()])), fake_inputs(rows, trained)).cells == ("c1",)


def test_a_failing_section_fails_the_report(fake_inputs):
    def build(inputs):
        raise ValueError("bad rows")

    with pytest.raises(ValueError, match="bad rows"):
        run_section(section(build), fake_inputs({"permutation": pd.DataFrame({"cell_id": ["c1"], "x": [1]})}))


def test_a_section_with_rows_but_nothing_to_show_is_missing(fake_inputs):
    result = run_section(
        section(lambda inputs: SectionOutput([], ["no instance has T >= 2"])),
        fake_inputs({"permutation": pd.DataFrame({"cell_id": ["c1"], "x": [1]})}),
    )
    assert not result.rendered and "no instance has T >= 2" in result.missing


def grid_file(folder: Path, data_dir: Path) -> Path:
    grid = {
        "name": "nothing",
        "results_dir": str(folder / "runs"),
        "data_dir": str(data_dir),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        "analyses": {"permutation": {}},
    }
    path = folder / "nothing.yaml"
    path.write_text(yaml.safe_dump(grid))
    return path


def test_report_command_on_a_grid_with_nothing_run(tmp_path: Path, data_dir: Path):
    path = grid_file(tmp_path, data_dir)
    result = CliRunner().invoke(app, ["report", str(path)])
    assert result.exit_code == 0, result.output
    out = tmp_path / "runs" / "nothing" / "report"
    assert f"report: {out / 'index.html'}" in result.output
    assert "0 sections, 0 tables, 0 figures" in result.output
    assert "permutation: requested, but no rows yet" in result.output
    assert "fidelity: No published number matches this grid's cells and analyses." in result.output
    manifest = json.loads((out / "report.json").read_text())
    claims, fidelity, *papers = manifest["sections"]
    assert claims["id"] == "conclusions" and claims["artifacts"] == ["conclusions"]
    assert "conclusions: 0 hold, 0 partly, 0 reversed, 18 not run" in result.output
    assert fidelity["id"] == "fidelity"
    assert fidelity["artifacts"] == ["fidelity", "fidelity_rows", "fidelity_tolerances"]
    assert not any(s["rendered"] for s in papers) and not any(s["artifacts"] for s in papers)
    assert (out / "index.html").is_file() and (out / "fidelity.md").is_file() and (out / "fidelity.csv").is_file()
    assert (out / "conclusions.md").is_file() and (out / "conclusions.csv").is_file()


def test_report_needs_the_rows_not_the_datasets(tmp_path: Path):
    """A report reads Parquet rows: a grid whose data folder is gone (or was never set) still reports."""
    grid = {
        "name": "elsewhere",
        "results_dir": str(tmp_path / "runs"),
        "data_dir": str(tmp_path / "no-data"),
        "grid": {"dataset": ["sst"], "encoder": ["average"], "seed": [0]},
        "analyses": {"permutation": {}},
    }
    path = tmp_path / "elsewhere.yaml"
    path.write_text(yaml.safe_dump(grid))
    assert CliRunner().invoke(app, ["validate", str(path)]).exit_code == 2  # training does need the data
    result = CliRunner().invoke(app, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert "permutation: requested, but no rows yet" in result.output


def test_report_command_refuses_an_out_folder_that_is_not_a_report(tmp_path: Path, data_dir: Path):
    path = grid_file(tmp_path, data_dir)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep")
    result = CliRunner().invoke(app, ["report", str(path), "--out", str(mine)])
    assert result.exit_code == 1
    assert "is not a gridlab report" in result.output and "Traceback" not in result.output
    assert (mine / "thesis.tex").read_text() == "keep"


def test_report_command_has_help():
    result = CliRunner().invoke(app, ["report", "--help"])
    assert result.exit_code == 0 and "--out" in result.output
