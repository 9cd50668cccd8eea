"""docs/conclusions.md and its CSV as `gridlab fidelity` writes them: each finding measured here is recorded
with its cells, grid hash, commit and day; without the runs it is carried from the CSV while its cells are the
grid's, else shown stale and counted as not run; a grid whose runs cover part of its cells has those findings
measured and the rest carried; and a regeneration without runs gives the same bytes."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import GridlabError
from gridlab.store.layout import GridWorkspace
from gridlab.store.lock import exclusive, running
from gridlab.store.provenance import grid_hash
from gridlab.studies.claims import CLAIMS, HOLDS, NOT_RUN, PARTLY, REVERSED, STALE
from gridlab.studies.conclusions import OVERALL
from gridlab.studies.conclusions_doc import ConclusionsPages, conclusions_pages, short_commit
from gridlab.studies.conclusions_record import RECORD_COLUMNS, ClaimRecord, record_path
from gridlab.studies.verdicts import load_plan

from .test_conclusions import per_instance, tau_columns

GRID = {
    "name": "claims-record",
    "grid": {"dataset": ["sst", "imdb"], "encoder": ["lstm", "average"], "attention": ["additive"], "seed": [0, 1]},
    "analyses": {"importance_correlation": {}},
}
FIRST, LATER = datetime.date(2026, 11, 20), datetime.date(2026, 11, 28)
COMMIT, OTHER_COMMIT = "git " + "a" * 40, "git " + "b" * 40
CLAIM = "jw.weak_correlation"


def with_rows(synthetic_grid, spec: dict = GRID, lstm_tau: float = 0.2, **where):
    """The grid with importance_correlation rows for its cells matching `where`: the BiLSTM's tau_g
    `lstm_tau`, the average encoder's 0.6 (so the claim holds below 0.6, is reversed above)."""
    grid = synthetic_grid(spec)
    for cell in grid.cells(**where):
        tau = lstm_tau if cell.config.encoder == "lstm" else 0.6
        grid.write_rows("importance_correlation", cell, per_instance({}, tau_columns(tau)))
    return grid


def regenerate(grid, record: ClaimRecord, today: datetime.date = LATER, commit: str = OTHER_COMMIT):
    return conclusions_pages([grid.expanded], record, today, commit)


def saved(pages: ConclusionsPages, folder: Path) -> ClaimRecord:
    """The pages written as `gridlab fidelity` writes them, and the record read back."""
    path = record_path(folder / "conclusions.md")
    path.write_text(pages.csv)
    return ClaimRecord.read(path)


def claim_rows(pages: ConclusionsPages, claim: str = CLAIM) -> pd.DataFrame:
    return pages.table[pages.table["claim"] == claim].reset_index(drop=True)


def remove_runs(grid) -> None:
    shutil.rmtree(grid.expanded.results_dir)


def test_a_finding_measured_here_is_recorded_with_its_trace(synthetic_grid):
    grid = with_rows(synthetic_grid)
    pages = regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT)
    assert list(pages.table.columns) == RECORD_COLUMNS
    rows = claim_rows(pages)
    assert rows["condition"].tolist() == [
        "dataset imdb, attention additive, seeds 0,1",
        "dataset sst, attention additive, seeds 0,1",
        OVERALL,
    ]
    for dataset, cells in zip(["imdb", "sst"], rows["cells"]):
        assert cells.split() == sorted(c.id for c in grid.cells(dataset=dataset))  # lstm and average, 2 seeds
    findings = rows.iloc[:2]
    assert set(findings["grid_hash"]) == {grid_hash(grid.path)} and set(findings["commit"]) == {COMMIT}
    assert set(findings["measured_on"]) == {"2026-11-20"}
    assert findings["verdict"].tolist() == findings["measured_verdict"].tolist() == [HOLDS, HOLDS]
    assert findings["value"].tolist() == pytest.approx([0.2 - 0.6] * 2)
    overall = rows.iloc[2]
    assert overall["verdict"] == HOLDS and overall["cells"] == overall["commit"] == overall["measured_on"] == ""
    assert "| 2026-11-20, git aaaaaaa |" in pages.markdown


def test_without_runs_the_record_is_carried_and_the_pages_are_the_same_bytes(synthetic_grid, tmp_path: Path):
    grid = with_rows(synthetic_grid)
    first = regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT)
    record = saved(first, tmp_path)
    remove_runs(grid)
    again = regenerate(grid, record)  # another day, another commit: nothing measured, so neither shows
    assert again.csv == first.csv and again.markdown == first.markdown
    assert "No finding is stale." in again.markdown


def test_the_same_runs_regenerated_later_keep_the_records_trace(synthetic_grid, tmp_path: Path):
    """Another day, another checkout, the same runs: the same bytes; a changed value takes today's trace."""
    grid = with_rows(synthetic_grid)
    first = regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT)
    again = regenerate(grid, saved(first, tmp_path))  # the runs are still here
    assert again.csv == first.csv and again.markdown == first.markdown
    changed = with_rows(synthetic_grid, lstm_tau=0.3)  # the same cells, other numbers (a rerun that differs)
    rows = claim_rows(regenerate(changed, saved(first, tmp_path))).iloc[:2]
    assert set(rows["commit"]) == {OTHER_COMMIT} and set(rows["measured_on"]) == {LATER.isoformat()}


def test_without_a_record_a_grid_without_runs_is_not_run(synthetic_grid):
    pages = regenerate(synthetic_grid(GRID), ClaimRecord.empty())
    rows = claim_rows(pages)
    assert rows["condition"].tolist() == [OVERALL] and rows["verdict"].tolist() == [NOT_RUN]
    assert rows["detail"].item().startswith("needs `importance_correlation` rows")


def test_a_finding_whose_cells_are_no_longer_the_grids_is_stale(synthetic_grid, tmp_path: Path):
    record = saved(regenerate(with_rows(synthetic_grid), ClaimRecord.empty(), FIRST, COMMIT), tmp_path)
    changed = synthetic_grid({**GRID, "name": "claims-record-changed", "train": {"epochs": 3}})  # new cell ids
    renamed = record.findings.assign(grid=str(changed.path))  # the same grid file, edited since
    pages = regenerate(changed, ClaimRecord(renamed))
    rows = claim_rows(pages)
    assert rows["verdict"].tolist() == [STALE, STALE, NOT_RUN]  # shown with its value, counted as not run
    assert rows["measured_verdict"].tolist()[:2] == [HOLDS, HOLDS] and rows["value"].notna().sum() == 2
    assert rows["detail"].iloc[2] == "conditions: 0 holds, 0 partly, 0 reversed, 2 not run (2 stale)"
    assert f"What regenerates them: `gridlab launch {changed.path}`" in pages.markdown
    # Kept as measured, so that a later regeneration still shows it stale rather than dropping it.
    assert saved(pages, tmp_path).findings["measured_verdict"].tolist()[:2] == [HOLDS, HOLDS]


def test_a_finding_recorded_by_another_statistic_is_stale(synthetic_grid, tmp_path: Path):
    grid = with_rows(synthetic_grid)
    record = saved(regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT), tmp_path)
    remove_runs(grid)
    edited = record.findings.assign(statistic="an older wording")
    assert claim_rows(regenerate(grid, ClaimRecord(edited)))["verdict"].tolist() == [STALE, STALE, NOT_RUN]


def test_a_verdict_is_not_carried_past_a_change_of_its_rule(synthetic_grid, tmp_path: Path):
    grid = with_rows(synthetic_grid)
    record = saved(regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT), tmp_path)
    assert (record.findings["rule"] == CLAIMS["jw.weak_correlation"].rule).all()  # each verdict names its rule
    remove_runs(grid)
    assert claim_rows(regenerate(grid, record))["verdict"].tolist() == [HOLDS, HOLDS, HOLDS]
    looser = record.findings.assign(rule="holds when the means are in the claimed order")
    assert claim_rows(regenerate(grid, ClaimRecord(looser)))["verdict"].tolist() == [STALE, STALE, NOT_RUN]


def test_runs_of_some_cells_are_measured_and_the_rest_carried(synthetic_grid, tmp_path: Path):
    """`gridlab launch grid --where dataset=sst` after a full run recorded elsewhere: SST measured again
    (here reversed), IMDB carried from the record with its own day and commit."""
    grid = with_rows(synthetic_grid)
    record = saved(regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT), tmp_path)
    remove_runs(grid)
    grid = with_rows(synthetic_grid, lstm_tau=0.9, dataset="sst")
    rows = claim_rows(regenerate(grid, record))
    assert rows["condition"].str.startswith("dataset").tolist() == [True, True, False]
    imdb, sst, overall = (rows.iloc[i] for i in range(3))
    assert (imdb["verdict"], imdb["measured_on"], imdb["commit"]) == (HOLDS, "2026-11-20", COMMIT)
    assert (sst["verdict"], sst["measured_on"], sst["commit"]) == (REVERSED, "2026-11-28", OTHER_COMMIT)
    assert overall["verdict"] == PARTLY and overall["value"] == 0.5


def test_runs_of_fewer_seeds_keep_the_recorded_finding(synthetic_grid, tmp_path: Path):
    """Seed 0 alone rerun here says less than the record's two seeds: the record's finding is kept."""
    grid = with_rows(synthetic_grid)
    record = saved(regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT), tmp_path)
    remove_runs(grid)
    grid = with_rows(synthetic_grid, lstm_tau=0.9, dataset="sst", seed=0)
    rows = claim_rows(regenerate(grid, record))
    assert rows["verdict"].tolist() == [HOLDS, HOLDS, HOLDS]
    assert rows["condition"].iloc[1] == "dataset sst, attention additive, seeds 0,1"
    assert rows["measured_on"].iloc[1] == "2026-11-20"


def test_runs_of_more_seeds_replace_the_recorded_finding(synthetic_grid, tmp_path: Path):
    grid = with_rows(synthetic_grid, seed=0)
    record = saved(regenerate(grid, ClaimRecord.empty(), FIRST, COMMIT), tmp_path)
    assert claim_rows(regenerate(grid, record))["condition"].iloc[0].endswith("seeds 0")
    grid = with_rows(synthetic_grid, lstm_tau=0.9)  # every seed now
    rows = claim_rows(regenerate(grid, record))
    assert len(rows) == 3 and rows["verdict"].tolist() == [REVERSED, REVERSED, REVERSED]
    assert set(rows["measured_on"].iloc[:2]) == {"2026-11-28"}


def test_a_record_without_its_columns_is_refused(tmp_path: Path):
    path = tmp_path / "conclusions.csv"
    path.write_text("claim,condition,value\njw.permutation,all,\n")
    with pytest.raises(GridlabError, match="conclusions.csv: missing columns"):
        ClaimRecord.read(path)
    assert ClaimRecord.read(tmp_path / "absent.csv").findings.empty


def test_short_commit():
    assert short_commit("git " + "c" * 40 + "-dirty") == "git ccccccc-dirty"
    assert short_commit("gridlab 0.1.0") == "gridlab 0.1.0"
    assert short_commit(f"git {'a' * 40} git {'b' * 40}") == "git aaaaaaa, bbbbbbb"  # cells trained at two
    assert short_commit("git") == "git"


def plan_file(folder: Path, conclusions: list[Path]) -> Path:
    path = folder / "fidelity_grids.yaml"
    path.write_text(yaml.safe_dump({"papers": [], "grids": [], "conclusions": [str(p) for p in conclusions]}))
    return path


def test_the_fidelity_command_writes_the_conclusions_and_rebuilds_them_without_runs(synthetic_grid, tmp_path):
    grid = with_rows(synthetic_grid)
    plan, out = plan_file(tmp_path, [grid.path]), tmp_path / "docs" / "fidelity"
    result = CliRunner().invoke(app, ["fidelity", "--grids", str(plan), "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = tmp_path / "docs" / "conclusions.md"
    assert f"conclusions: {document} (1 hold, 0 partly, 0 reversed, 17 not run;" in result.output
    written = {p: p.read_bytes() for p in (document, record_path(document))}
    assert f"- {grid.path}: 2 findings" in document.read_text()
    remove_runs(grid)
    result = CliRunner().invoke(app, ["fidelity", "--grids", str(plan), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {p: p.read_bytes() for p in written} == written


def test_a_grid_whose_launch_is_running_keeps_its_recorded_findings(synthetic_grid, tmp_path):
    """A launch in flight has written some cells' rows and not others' (here SST's, with other numbers): the
    fidelity command reads none of them and keeps the record, so no record is written from a grid half rerun
    (a finding of one seed, or one named without the axes its other cells would add)."""
    grid = with_rows(synthetic_grid)
    plan, out = plan_file(tmp_path, [grid.path]), tmp_path / "docs" / "fidelity"
    command = ["fidelity", "--grids", str(plan), "--out", str(out)]
    assert CliRunner().invoke(app, command).exit_code == 0
    document = tmp_path / "docs" / "conclusions.md"
    written = {p: p.read_bytes() for p in (document, record_path(document))}
    with_rows(synthetic_grid, lstm_tau=0.9, dataset="sst")  # the rerun's first rows: reversed on SST
    with exclusive(grid.expanded.workspace, "launch"):
        result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert f"{grid.path}: `gridlab launch` (pid {os.getpid()}" in result.output
    assert "its results are not read now, its recorded numbers are kept" in result.output
    assert {p: p.read_bytes() for p in written} == written
    result = CliRunner().invoke(app, command)  # the launch has ended: its rows are read
    assert result.exit_code == 0 and "is running on it" not in result.output
    assert "(0 hold, 1 partly, 0 reversed, 17 not run;" in result.output  # SST reversed, IMDB holds: partly


def test_a_lock_file_left_by_a_killed_launch_holds_nothing(tmp_path: Path):
    """`kill -9` leaves the holder's line in the lock file (the lock itself goes with the process)."""
    workspace = GridWorkspace(tmp_path / "runs" / "g")
    workspace.path.mkdir(parents=True)
    assert running(workspace) is None  # never launched
    dead = subprocess.Popen(["true"])
    dead.wait()
    holder = {"host": socket.gethostname(), "pid": dead.pid, "command": "launch", "since": 0.0}
    workspace.lock.write_text(json.dumps(holder))
    assert running(workspace) is None
    workspace.lock.write_text(json.dumps({**holder, "pid": os.getpid()}))
    assert running(workspace) == f"`gridlab launch` (pid {os.getpid()} on {socket.gethostname()}, since " + (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(0.0)) + ")"
    )
    workspace.lock.write_text("")  # let go
    assert running(workspace) is None


def test_the_study_lists_the_conclusions_grids_once():
    plan = load_plan()
    assert plan.conclusions[0] == "grids/jain_wallace.yaml"
    assert "grids/robustness.yaml" in plan.conclusions and len(set(plan.conclusions)) == len(plan.conclusions)
    # a paper's stated subsets (IMDB on 5,000 reviews) decide its claims as its own grid does
    assert {grid for paper in plan.papers for grid in paper.decide} <= set(plan.conclusions)
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / file).is_file() for file in plan.conclusions)
