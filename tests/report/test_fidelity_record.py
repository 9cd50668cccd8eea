"""The record kept beside docs/fidelity.md: a regeneration on a machine without a grid's runs carries the
numbers measured before (judged again, dated in their note) instead of turning them back into "not run";
a number measured here replaces the record's unless the record's averaged more seeds; the wall time is carried
the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.errors import GridlabError
from gridlab.report.fidelity_record import NUMBER_COLUMNS, NumberRecord, record_paths
from gridlab.report.walltime import WallTime

from .test_fidelity_doc import jw_with_rows  # noqa: F401  (the J&W grid with rows for its SST cells)


@pytest.fixture
def jw(jw_with_rows):  # noqa: F811
    return jw_with_rows


def regenerate(grid, out: Path) -> str:
    result = CliRunner().invoke(app, ["fidelity", str(grid.path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text()


def table_rows(text: str) -> list[str]:
    """The fidelity table's rows, without the note column (where the carry mark goes)."""
    return [line.rsplit(" | ", 1)[0] for line in text.splitlines() if line.startswith("| Jain & Wallace")]


def test_numbers_without_runs_here_are_carried_from_the_record(jw, tmp_path: Path):
    out = tmp_path / "docs" / "fidelity.md"
    measured = regenerate(jw, out)
    numbers, walls = record_paths(out)
    record = pd.read_csv(numbers)
    judged = [row for row in table_rows(measured) if any(f"| {v} |" in row for v in ("within", "outside", "undefined"))]
    assert len(record) == len(judged) > 0
    assert list(record.columns) == NUMBER_COLUMNS

    shutil.rmtree(jw.expanded.results_dir)  # the machine that ran the grid is gone
    carried = regenerate(jw, out)
    assert table_rows(carried) == table_rows(measured)
    assert carried.count("carried: measured ") == len(record)
    assert len(pd.read_csv(numbers)) == len(record)  # carried numbers stay in the record, with their date
    assert set(pd.read_csv(numbers)["measured_on"]) == set(record["measured_on"])


def test_a_number_measured_here_replaces_the_record(jw, tmp_path: Path):
    out = tmp_path / "fidelity.md"
    regenerate(jw, out)
    numbers, _ = record_paths(out)
    record = pd.read_csv(numbers, dtype=str, keep_default_na=False)
    record["ours"] = "0.999"
    record["measured_on"] = "2001-01-01"
    record.to_csv(numbers, index=False)
    text = regenerate(jw, out)  # the runs are still here
    assert "carried: measured" not in text and "0.999" not in text
    assert set(pd.read_csv(numbers)["measured_on"]) != {"2001-01-01"}


def test_a_number_measured_here_on_fewer_seeds_keeps_the_records(jw, tmp_path: Path):
    out = tmp_path / "fidelity.md"
    measured = regenerate(jw, out)
    numbers, _ = record_paths(out)
    record = pd.read_csv(numbers, dtype=str, keep_default_na=False)
    tau = (record["quantity"] == "tau_g") & (record["detail"] == "class 0")
    here_seeds = int(float(record.loc[tau, "n_seeds"].iloc[0]))
    here = next(line for line in measured.splitlines() if "| sst | lstm + additive | class 0 | tau_g |" in line)
    record.loc[tau, ["ours", "n_seeds", "measured_on"]] = ["0.412", str(here_seeds + 2), "2001-01-01"]
    record.to_csv(numbers, index=False)
    text = regenerate(jw, out)  # the runs are still here, on fewer seeds than the record's
    row = next(line for line in text.splitlines() if "| sst | lstm + additive | class 0 | tau_g |" in line)
    ours = here.split(" | ")[8].split(" ± ")[0]
    assert "| 0.412 ± " in row and f"| {here_seeds + 2} |" in row
    assert f"measured 2001-01-01 over {here_seeds + 2} seeds; this results folder has {here_seeds}: {ours} |" in row
    kept = pd.read_csv(numbers, dtype=str, keep_default_na=False)
    assert kept.loc[tau.values, "measured_on"].tolist() == ["2001-01-01"]  # the fuller number stays recorded
    others = [line for line in text.splitlines() if line.startswith("| Jain & Wallace") and line != row]
    assert not any("carried: measured" in line for line in others)  # equal seeds: this folder's numbers win


def test_a_carried_number_is_judged_against_todays_tolerance(jw, tmp_path: Path):
    out = tmp_path / "fidelity.md"
    regenerate(jw, out)
    numbers, _ = record_paths(out)
    record = pd.read_csv(numbers, dtype=str, keep_default_na=False)
    tau = (record["quantity"] == "tau_g") & (record["detail"] == "class 0")
    published = 0.40  # J&W's SST BiLSTM class 0 (gridlab/report/published.py)
    record.loc[tau, "ours"] = str(published + 0.01)
    record.to_csv(numbers, index=False)
    shutil.rmtree(jw.expanded.results_dir)
    text = regenerate(jw, out)
    row = next(line for line in text.splitlines() if "| sst | lstm + additive | class 0 | tau_g |" in line)
    assert "| 0.410 ± " in row and "| +0.010 |" in row and "| within |" in row


def test_the_wall_time_is_carried_with_its_date(jw, tmp_path: Path):
    out = tmp_path / "fidelity.md"
    regenerate(jw, out)
    _, walls = record_paths(out)
    frame = pd.DataFrame(
        [
            {
                "file": str(jw.path),
                "launches": 2,
                "launch_seconds": 125.0,
                "unfinished": 0,
                "trials": 3,
                "epochs": 24,
                "train_seconds": 200.0,
                "measured_on": "2026-01-02",
            }
        ]
    )
    frame.to_csv(walls, index=False)
    text = regenerate(jw, out)
    assert "Wall time: 2 launches, 2m05s wall; 3 trials, 24 epochs, 3m20s of trial time (measured 2026-01-02" in text
    assert f"| fidelity-jw | {jw.path} | 2026-01-02 |" in text


def test_a_partial_rerun_keeps_the_fuller_wall_time_of_the_record():
    walls = pd.DataFrame(
        [
            {
                "file": "g.yaml",
                "launches": 8,
                "launch_seconds": 5000.0,
                "unfinished": 0,
                "trials": 78,
                "epochs": 624,
                "train_seconds": 6000.0,
                "measured_on": "2026-11-23",
            }
        ]
    )
    record = NumberRecord(pd.DataFrame(columns=NUMBER_COLUMNS), walls)
    part = WallTime(launches=3, launch_seconds=1300.0, unfinished=0, trials=27, epochs=216, train_seconds=1800.0)
    kept, on = record.wall_time("g.yaml", part)
    assert (kept.trials, kept.launches, on) == (78, 8, "2026-11-23")
    whole = WallTime(launches=9, launch_seconds=5200.0, unfinished=0, trials=78, epochs=624, train_seconds=6100.0)
    assert record.wall_time("g.yaml", whole) == (whole, None)
    assert record.wall_time("other.yaml", part) == (part, None)


def test_a_record_without_its_columns_is_one_clear_error(tmp_path: Path):
    out = tmp_path / "fidelity.md"
    numbers, _ = record_paths(out)
    numbers.write_text("file,ours\nx,1\n")
    with pytest.raises(GridlabError, match=r"fidelity.record.csv: missing columns frame, axis"):
        NumberRecord.read(out)
