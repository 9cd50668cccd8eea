"""docs/fidelity/ and the report's fidelity section: `gridlab fidelity` writes the pages for grids with and
without results, the settings table is read when present, each published number is decided once by its
paper's own grid, every verdict in the committed verdicts.csv follows the rule, and the committed pages are
what the command rebuilds from the repository alone. `gridlab report` puts the fidelity section first."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import GridlabError
from gridlab.studies.fidelity import FULL, NOT_RUN, OUTSIDE, STALE, UNDEFINED, WITHIN, FidelityResult
from gridlab.studies.fidelity_doc import SETTINGS_COLUMNS, anchor, settings_markdown
from gridlab.studies.report import build_report
from gridlab.studies.tolerances import tolerance_for
from gridlab.studies.verdicts import (
    ABLATION_GRID,
    ANOTHER_PAPER,
    EXTRA_MODEL,
    VERDICT_COLUMNS,
    WITHIN_FULL,
    WITHIN_REDUCED,
    Plan,
    decide,
    headline,
    load_plan,
)

from .test_fidelity import JW_GRID, embeddings_grid, jw_rows

REPO = Path(__file__).resolve().parents[2]
JW = "Jain & Wallace (2019)"


@pytest.fixture
def jw_with_rows(synthetic_grid):
    grid = synthetic_grid(JW_GRID)
    for cell in grid.cells(dataset="sst"):
        grid.write_rows("importance_correlation", cell, jw_rows(cell.config.seed))
    return grid


def plan_file(folder: Path, deciding: list[Path], others: list[Path] = ()) -> Path:
    """A grids file: `deciding` decide J&W's numbers (in that order), `others` are read as extras."""
    path = folder / "fidelity_grids.yaml"
    papers = [{"paper": JW, "page": "jain_wallace", "decide": [str(p) for p in deciding]}]
    path.write_text(yaml.safe_dump({"papers": papers, "grids": [str(p) for p in [*deciding, *others]]}))
    return path


def regenerate(plan: Path, out: Path) -> pd.DataFrame:
    result = CliRunner().invoke(app, ["fidelity", "--grids", str(plan), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return pd.read_csv(out / "verdicts.csv", dtype={"detail": str}, keep_default_na=False)


def test_the_command_writes_the_pages(jw_with_rows, synthetic_grid, tmp_path: Path):
    empty = synthetic_grid({**JW_GRID, "name": "not-launched"})
    out = tmp_path / "docs" / "fidelity"
    verdicts = regenerate(plan_file(tmp_path, [jw_with_rows.path], [empty.path]), out)
    assert {p.name for p in out.iterdir()} >= {
        "README.md",
        "jain_wallace.md",
        "ablations.md",
        "tolerances.md",
        "settings.md",
        "out_of_reach.md",
        "walltime.md",
        "verdicts.csv",
        "record.csv",
        "walltime.csv",
    }
    readme = (out / "README.md").read_text()
    lines = readme.splitlines()
    rule = next(i for i, line in enumerate(lines) if "iff |ours − published| ≤ its tolerance" in line)
    assert rule < next(i for i, line in enumerate(lines) if re.search(r"\d", line) and line.startswith("|"))
    assert "[Table 2](jain_wallace.md#table-2)" in readme and len(lines) < 40  # one screen
    assert list(verdicts.columns) == VERDICT_COLUMNS
    assert len(verdicts) == 18 and set(verdicts["grid"]) <= {str(jw_with_rows.path)}  # once each, mine decide
    check_rule(verdicts)
    assert set(verdicts["verdict"]) == {WITHIN, OUTSIDE, UNDEFINED, NOT_RUN}
    assert verdicts.loc[verdicts["verdict"] == WITHIN, "reduced"].astype(str).eq("True").all()  # 2 seeds
    page = (out / "jain_wallace.md").read_text()
    assert "## Table 1 (test performance, LSTM)" in page and page.index("## Table 1") < page.index("## Table 2")
    assert "no ablation yet" in page and "## Extra measurements" in page
    assert "| stale |" not in page and str(tmp_path) not in readme  # no machine path in the summary
    assert "widens nothing" in (out / "README.md").read_text() + (out / "tolerances.md").read_text()


def test_the_command_on_a_missing_grid_file(tmp_path: Path):
    plan = plan_file(tmp_path, [tmp_path / "nope.yaml"])
    result = CliRunner().invoke(app, ["fidelity", "--grids", str(plan), "--out", str(tmp_path / "f")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert not (tmp_path / "f" / "README.md").exists()


def test_a_grids_file_whose_deciding_grid_is_not_read_is_refused(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"papers": [{"paper": JW, "page": "jw", "decide": ["a.yaml"]}], "grids": []}))
    with pytest.raises(GridlabError, match="deciding grids not among `grids`: a.yaml"):
        load_plan(path)


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
    assert tables[:2] == ["conclusions", "fidelity"] and "jw_table2" in tables  # after the claims table only
    assert index.index('<section id="fidelity">') < index.index('<section id="jain_wallace">')
    assert tables.index("fidelity_tolerances") < tables.index("jw_table2")
    # per table first: the counts; the rows on demand, a <details> per table, then the extra measurements
    start = index.index('<table id="fidelity"')
    counts = index[start : index.index("</table>", start)]
    assert "within, 3+ seeds, full data" in counts and "Table 2" in counts and "class 0" not in counts
    rows = index[index.index('<div id="fidelity_rows"') :]
    rows = rows[: rows.index("</div>")]
    assert rows.count("<details>") == 2  # Table 1, Table 2: this grid's additive models only, no extras
    assert "<summary>Jain &amp; Wallace (2019), Table 2: 16 published numbers:" in rows and "class 0" in rows
    frame = pd.read_csv(summary.out / "fidelity.csv")  # the verdicts, as docs/fidelity/verdicts.csv has them
    assert list(frame.columns) == VERDICT_COLUMNS
    assert len(frame) == 18 and set(frame["verdict"]) == {"within", "outside", "undefined", "not run"}
    markdown = (summary.out / "fidelity.md").read_text()
    assert markdown.startswith(f"# Fidelity: fidelity-jw ({jw_with_rows.path})")
    assert "## Tolerances" in markdown and "widens nothing" in markdown
    manifest = json.loads((summary.out / "report.json").read_text())
    assert manifest["sections"][1]["id"] == "fidelity"
    assert manifest["sections"][1]["artifacts"] == ["fidelity", "fidelity_rows", "fidelity_tolerances"]
    assert summary.fidelity == (
        "18 published numbers: 4 within (0 on 3+ seeds and full data, 4 reduced), 2 outside (0 with an "
        "ablation, 2 without one yet), 10 not run, 2 undefined (rows, but no value)."
    )
    assert "fidelity" not in summary.sections  # the papers' sections; the fidelity line says the rest


def test_the_reports_verdicts_are_the_pages(jw_with_rows, tmp_path: Path):
    """The same rows, decided the same way, whether `gridlab report` or `gridlab fidelity` shows them."""
    report = pd.read_csv(build_report(jw_with_rows.expanded).out / "fidelity.csv", keep_default_na=False)
    pages = regenerate(plan_file(tmp_path, [jw_with_rows.path]), tmp_path / "fidelity")
    columns = [c for c in VERDICT_COLUMNS if c not in ("measured_on", "commit", "grid_hash", "note")]
    pd.testing.assert_frame_equal(report[columns].astype(str), pages[columns].astype(str))


def test_a_setting_axis_gets_its_sensitivity_table(synthetic_grid):
    summary = build_report(embeddings_grid(synthetic_grid).expanded)
    manifest = json.loads((summary.out / "report.json").read_text())
    assert manifest["sections"][1]["artifacts"] == [
        "fidelity",
        "fidelity_rows",
        "fidelity_sensitivity",
        "fidelity_tolerances",
    ]
    split = pd.read_csv(summary.out / "fidelity_sensitivity.csv", keep_default_na=False)
    assert set(split["axis"]) == {"model.embeddings"} and set(split["value"]) == {"null", "word2vec"}
    markdown = (summary.out / "fidelity.md").read_text()
    # a grid that sweeps a setting decides nothing: its rows are extra measurements, one per setting
    assert "0 published numbers" in markdown and "## Extra measurements" in markdown
    assert "| Table 2 | sst | lstm + additive | class 0; model.embeddings word2vec | tau_g |" in markdown


def test_the_report_command_prints_the_fidelity_line(jw_with_rows):
    result = CliRunner().invoke(app, ["report", str(jw_with_rows.path)])
    assert result.exit_code == 0, result.output
    assert "fidelity: 18 published numbers:" in result.output and "fidelity.md" in result.output


def _result(file: str, rows: list[dict], axes: list[str] | None = None) -> FidelityResult:
    """A grid's fidelity rows: J&W Table 2 numbers, SST BiLSTM class 0, one per dict (quantity, verdict, ...)."""
    base = {"paper": JW, "table": "Table 2", "dataset": "sst", "model": "lstm + additive", "detail": "class 0"}
    base |= {"published": 0.40, "ours": 0.41, "ours_std": 0.01, "n_seeds": 3, "n_instances": 100}
    base |= {"difference": 0.01, "tolerance": 0.07, "tolerance_source": "stated default", "rerun": None}
    base |= {"rerun_verdict": "", "population": FULL, "printed_model": True, "ablation": "", "note": ""}
    base |= {"cells": "c1", "measured_cells": "c1", "grid_hash": "sha256:x", "commit": "git y", "measured_on": "d"}
    frame = pd.DataFrame([base | row for row in rows])
    return FidelityResult(file, file, frame, pd.DataFrame(), axes or [])


PLAN = Plan.model_validate(
    {
        "papers": [{"paper": JW, "page": "jain_wallace", "decide": ["paper.yaml", "subset.yaml"]}],
        "grids": ["paper.yaml", "subset.yaml", "other_paper.yaml", "ablation.yaml"],
    }
)


def test_each_published_number_is_decided_once_by_its_papers_own_grid():
    paper_grid = _result(
        "paper.yaml",
        [
            {"quantity": "tau_g", "verdict": WITHIN},
            {"quantity": "tau_loo", "verdict": NOT_RUN},
            {"quantity": "sig_frac_g", "verdict": STALE},
            {"quantity": "sig_frac_loo", "verdict": NOT_RUN},
            {"quantity": "tau_g", "model": "lstm + dot", "printed_model": False, "verdict": WITHIN},
        ],
    )
    subset = _result(
        "subset.yaml",
        [
            {"quantity": "tau_g", "verdict": OUTSIDE},
            {"quantity": "tau_loo", "verdict": OUTSIDE, "population": "training subset of 5000"},
            {"quantity": "sig_frac_g", "verdict": STALE},
            {"quantity": "sig_frac_loo", "verdict": NOT_RUN},
        ],
    )
    other = _result("other_paper.yaml", [{"quantity": "sig_frac_loo", "verdict": WITHIN}])
    ablation = _result("ablation.yaml", [{"quantity": "sig_frac_loo", "verdict": WITHIN}], axes=["model.embeddings"])
    decided = decide([paper_grid, subset, other, ablation], PLAN)
    got = decided.verdicts.set_index("quantity")
    assert len(got) == 4 and got.index.is_unique  # each number once
    assert got.loc["tau_g", ["verdict", "grid"]].tolist() == [WITHIN, "paper.yaml"]  # the paper's grid first
    assert got.loc["tau_loo", ["verdict", "grid", "reduced"]].tolist() == [OUTSIDE, "subset.yaml", True]
    assert got.loc["sig_frac_g", ["verdict", "grid"]].tolist() == [STALE, "paper.yaml"]
    # another paper's grid and an ablation grid never decide, even where the paper's grids did not run
    assert got.loc["sig_frac_loo", ["verdict", "grid"]].tolist() == [NOT_RUN, "paper.yaml"]
    why = dict(zip(zip(decided.extras["grid"], decided.extras["model"]), decided.extras["why"]))
    assert why[("paper.yaml", "lstm + dot")] == EXTRA_MODEL
    assert why[("other_paper.yaml", "lstm + additive")] == ANOTHER_PAPER
    assert why[("ablation.yaml", "lstm + additive")] == ABLATION_GRID
    counts = headline(decided.verdicts).iloc[0]
    assert counts[[WITHIN_FULL, WITHIN_REDUCED, OUTSIDE, NOT_RUN, STALE]].tolist() == [1, 0, 1, 1, 1]


def test_a_verdict_on_fewer_seeds_or_a_subset_is_counted_apart():
    rows = [
        {"quantity": "tau_g", "verdict": WITHIN},
        {"quantity": "tau_loo", "verdict": WITHIN, "n_seeds": 2},
        {"quantity": "sig_frac_g", "verdict": WITHIN, "population": "sample of 500 test instances"},
    ]
    counts = headline(decide([_result("paper.yaml", rows)], PLAN).verdicts).iloc[0]
    assert counts[[WITHIN_FULL, WITHIN_REDUCED]].tolist() == [1, 2]


def test_github_anchors_of_table_headings():
    assert anchor("Table 1 (test performance, LSTM)") == "table-1-test-performance-lstm"
    assert anchor("Table 5 (JSD only)") == "table-5-jsd-only"


def committed_verdicts() -> pd.DataFrame:
    return pd.read_csv(REPO / "docs" / "fidelity" / "verdicts.csv", keep_default_na=False)


def test_every_committed_verdict_follows_the_rule_from_the_numbers_beside_it():
    check_rule(committed_verdicts())


def check_rule(frame: pd.DataFrame) -> None:
    """Every verdict of a verdicts.csv follows from the numbers printed beside it, and is traced."""
    assert list(frame.columns) == VERDICT_COLUMNS and len(frame)
    assert not frame.duplicated(["paper", "table", "dataset", "model", "detail", "quantity"]).any()
    for row in frame.to_dict(orient="records"):
        width = tolerance_for(row["quantity"], None, float(row["published"]))
        assert float(row["tolerance"]) <= width.width + 1e-9 or row["tolerance_source"] == "paper's spread", row
        if row["verdict"] in (WITHIN, OUTSIDE):
            distance = abs(float(row["ours"]) - float(row["published"]))
            assert (distance <= float(row["tolerance"]) + 1e-9) == (row["verdict"] == WITHIN), row
            assert row["cells"] and row["grid_hash"] and row["commit"], row  # a verdict is traced
            reduced = float(row["seeds"] or 0) < 3 or row["population"] != FULL
            assert str(row["reduced"]) == str(reduced), row
        else:
            assert row["verdict"] in (NOT_RUN, STALE, UNDEFINED), row


@pytest.mark.slow  # every grid of the repository expanded and judged: about a minute on 2 cores
def test_the_committed_pages_are_what_the_repository_regenerates(tmp_path: Path):
    """A fresh checkout with no results folder: the grids and the committed pages and records (docs/fidelity/,
    docs/conclusions.md and its CSV, which the same command writes), nothing else."""
    pages = ["docs/fidelity", "docs/conclusions.md", "docs/conclusions.csv"]
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "grids", *pages], capture_output=True, text=True, check=True
    ).stdout.split()
    for name in tracked:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, tmp_path / name)
    committed = {name: (REPO / name).read_bytes() for name in tracked if name.startswith("docs/")}
    assert {"docs/conclusions.md", "docs/conclusions.csv"} <= set(committed)
    # A process of its own: this folder's autouse fixtures (no shipped ablations) must not reach it.
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", "from gridlab.cli import app; app()", "fidelity"]
    result = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "runs").exists()
    assert len(committed["docs/fidelity/README.md"].decode().splitlines()) <= 40  # one screen
    written = {str(p.relative_to(tmp_path)) for p in (tmp_path / "docs").rglob("*") if p.is_file()}
    assert written == set(committed)
    for name, text in committed.items():
        assert (tmp_path / name).read_bytes() == text, name


def test_no_machine_path_in_the_docs_or_the_code():
    """No path of the machine a document or module was written on. The cluster's nodes are another matter:
    /home/ubuntu is the home folder cluster.yaml's image gives every node, where docs/clusters.md puts files."""
    for folder in ("docs", "gridlab"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in {".md", ".py", ".csv", ".yaml"}:
                text = path.read_text()
                assert not re.search(r"(?<![\w.])/(work|home(?!/ubuntu/)|tmp|Users|root)/", text), path
