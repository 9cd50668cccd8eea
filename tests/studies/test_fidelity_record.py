"""The record kept beside docs/fidelity/: a regeneration on a machine without a grid's runs carries the
numbers measured before where they are still the grid's (the same cells), and marks them stale where not
(the grid changed, or the row predates cell ids); a number measured here replaces the record's unless the
record's averaged more seeds; every measured number is traced to its cells, grid hash and commit; the wall
time is carried the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from gridlab.errors import GridlabError
from gridlab.store.provenance import grid_hash, gridlab_commit
from gridlab.studies.fidelity import NOT_RUN, STALE, WITHIN
from gridlab.studies.fidelity_record import NUMBER_COLUMNS, NumberRecord, record_paths
from gridlab.studies.walltime import WallTime

from .test_fidelity_doc import JW_GRID, jw_rows, jw_with_rows, plan_file, regenerate  # noqa: F401  (jw_with_rows: the J&W grid, SST rows)

TAU0 = ("sst", "class 0", "tau_g")


@pytest.fixture
def jw(jw_with_rows):  # noqa: F811
    return jw_with_rows


def pages(grid, out: Path) -> pd.DataFrame:
    """Regenerate out/ from `grid` alone (it decides J&W's numbers); verdicts.csv indexed by number."""
    frame = regenerate(plan_file(out.parent, [grid.path]), out)
    for column in ("ours", "seeds", "difference"):
        frame[column] = pd.to_numeric(frame[column])
    return frame.set_index(["dataset", "detail", "quantity"])


def read_record(out: Path) -> pd.DataFrame:
    return pd.read_csv(record_paths(out)[0], dtype=str, keep_default_na=False)


def test_every_measured_number_is_recorded_with_its_trace(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    measured = pages(jw, out)
    record = read_record(out)
    assert list(record.columns) == NUMBER_COLUMNS
    assert len(record) == int((measured["verdict"] != NOT_RUN).sum()) > 0
    sst = sorted(c.id for c in jw.cells(dataset="sst"))
    assert set(record["cells"]) == {" ".join(sst)}  # both seeds' cells, the ones with rows
    assert set(record["grid_hash"]) == {grid_hash(jw.path)} and set(record["commit"]) == {gridlab_commit()}
    assert measured.loc[TAU0, "cells"] == " ".join(sst) and measured.loc[TAU0, "commit"] == gridlab_commit()


def test_numbers_without_runs_here_are_carried_while_their_cells_are_the_grids(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    measured = pages(jw, out)
    record = read_record(out)
    shutil.rmtree(jw.expanded.results_dir)  # the machine that ran the grid is gone
    carried = pages(jw, out)
    columns = ["ours", "verdict", "cells", "grid_hash", "commit", "measured_on", "note"]
    pd.testing.assert_frame_equal(carried[columns], measured[columns])  # the page is the same wherever the runs are
    pd.testing.assert_frame_equal(read_record(out), record)  # carried numbers stay in the record as they were


def test_a_number_measured_on_some_of_its_seeds_is_carried_as_it_was_measured(synthetic_grid, tmp_path: Path):
    """A launch stopped after one seed: the page says "reduced" (one seed) with the runs and without them."""
    grid = synthetic_grid(JW_GRID)
    first = next(cell for cell in grid.cells(dataset="sst") if cell.config.seed == 0)
    grid.write_rows("importance_correlation", first, jw_rows(0))
    out = tmp_path / "fidelity"
    measured = pages(grid, out)
    assert measured.loc[TAU0, "seeds"] == 1 and measured.loc[TAU0, "cells"] == first.id
    shutil.rmtree(grid.expanded.results_dir)
    carried = pages(grid, out)
    columns = ["ours", "verdict", "cells", "grid_hash", "commit", "measured_on", "note"]
    pd.testing.assert_frame_equal(carried[columns], measured[columns])
    assert STALE not in set(carried["verdict"])


def test_a_number_measured_on_other_cells_is_stale_and_counted_as_not_run(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    pages(jw, out)
    record = read_record(out)
    record["cells"] = "0123456789ab"  # the grid's config changed since: its cells have other ids
    record.loc[record["quantity"] == "tau_loo", "cells"] = ""  # recorded before the record kept cells
    record.to_csv(record_paths(out)[0], index=False)
    shutil.rmtree(jw.expanded.results_dir)
    stale = pages(jw, out)
    assert (stale.loc[stale["verdict"] != NOT_RUN, "verdict"] == STALE).all()
    assert stale.loc[TAU0, "ours"] == pytest.approx(0.42)  # shown with its value
    assert "on cells that are not the grid's cells" in stale.loc[TAU0, "note"]
    assert "recorded without its cells" in stale.loc[("sst", "class 0", "tau_loo"), "note"]
    readme = (out / "README.md").read_text()
    assert "are stale" in readme and f"`gridlab launch {jw.path}`" in readme
    assert len(read_record(out)) == len(record)  # kept until a run here replaces them


def test_a_number_measured_here_replaces_the_record(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    pages(jw, out)
    record = read_record(out)
    record["ours"] = "0.999"
    record["measured_on"] = "2001-01-01"
    record.to_csv(record_paths(out)[0], index=False)
    again = pages(jw, out)  # the runs are still here
    assert "0.999" not in set(again["ours"].astype(str)) and "2001-01-01" not in set(again["measured_on"])
    assert "2001-01-01" not in set(read_record(out)["measured_on"])


def test_a_number_measured_here_on_fewer_seeds_keeps_the_records(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    measured = pages(jw, out)
    record = read_record(out)
    tau = (record["quantity"] == "tau_g") & (record["detail"] == "class 0")
    here_seeds = int(measured.loc[TAU0, "seeds"])
    record.loc[tau, ["ours", "n_seeds", "measured_on"]] = ["0.412", str(here_seeds + 2), "2001-01-01"]
    record.to_csv(record_paths(out)[0], index=False)
    again = pages(jw, out)  # the runs are still here, on fewer seeds than the record's (its cells are the same)
    assert again.loc[TAU0, "ours"] == pytest.approx(0.412) and again.loc[TAU0, "seeds"] == here_seeds + 2
    ours = measured.loc[TAU0, "ours"]
    assert (
        f"measured 2001-01-01 over {here_seeds + 2} seeds; this results folder has {here_seeds}: {ours:.3f}"
        in (again.loc[TAU0, "note"])
    )
    kept = read_record(out)
    assert kept.loc[tau.values, "measured_on"].tolist() == ["2001-01-01"]  # the fuller number stays recorded
    others = again.drop(index=TAU0)
    assert not others["note"].str.contains("carried: measured").any()  # equal seeds: this folder's numbers win


def test_a_carried_number_is_judged_against_todays_tolerance(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    pages(jw, out)
    record = read_record(out)
    tau = (record["quantity"] == "tau_g") & (record["detail"] == "class 0")
    published = 0.40  # J&W's SST BiLSTM class 0 (gridlab/studies/published.py)
    record.loc[tau, "ours"] = str(published + 0.01)
    record.to_csv(record_paths(out)[0], index=False)
    shutil.rmtree(jw.expanded.results_dir)
    again = pages(jw, out)
    assert again.loc[TAU0, "difference"] == pytest.approx(0.01) and again.loc[TAU0, "verdict"] == WITHIN


def test_the_wall_time_is_carried_with_its_date(jw, tmp_path: Path):
    out = tmp_path / "fidelity"
    pages(jw, out)
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
    pages(jw, out)
    text = (out / "walltime.md").read_text()
    assert f"| fidelity-jw | {jw.path} | 2026-01-02 | 4 | 2 | 0 | 2m05s | 3 | 24 | 3m20s |" in text  # 4 cells


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
    numbers, _ = record_paths(tmp_path)
    numbers.write_text("file,ours\nx,1\n")
    with pytest.raises(GridlabError, match=r"record.csv: missing columns frame, axis"):
        NumberRecord.read(tmp_path)


def test_a_number_is_traced_to_the_commit_that_trained_its_cells(jw, tmp_path: Path):
    """Cells record the commit that trained them; the record carries those, not the commit writing the pages."""
    trained_with = "git " + "ab" * 20
    for cell in jw.cells(dataset="sst"):
        jw.write_trained(cell, gridlab_commit=trained_with)
    measured = pages(jw, tmp_path / "fidelity")
    assert measured.loc[TAU0, "commit"] == trained_with != gridlab_commit()
    assert set(read_record(tmp_path / "fidelity")["commit"]) == {trained_with}


def test_a_number_names_the_commits_of_its_own_cells_only(jw, tmp_path: Path):
    """A grid trained over several sittings: each number is traced to the commits that trained the cells it was
    measured on (two when its seeds were trained at two), never to the commits of the grid's other cells."""
    first, second, elsewhere = ("git " + c * 40 for c in "abc")
    sst = jw.cells(dataset="sst")
    for cell in sst:
        jw.write_trained(cell, gridlab_commit=first if cell.config.seed == 0 else second)
    jw.write_trained(next(c for c in jw.expanded.cells if c.config.dataset != "sst"), gridlab_commit=elsewhere)
    measured = pages(jw, tmp_path / "fidelity")
    assert measured.loc[TAU0, "commit"] == f"{first} {second}"
    assert elsewhere not in set(read_record(tmp_path / "fidelity")["commit"])


def test_the_same_runs_regenerated_later_keep_the_records_trace(jw, tmp_path: Path):
    """Another day, another checkout, the same cells and numbers: the record names the run that made them, so a
    regeneration with the same runs changes no byte; a number that changed takes today's trace."""
    out = tmp_path / "fidelity"
    pages(jw, out)
    record = read_record(out)
    record["commit"], record["measured_on"] = "git 1111111", "2001-01-01"
    changed = record["quantity"] == "tau_loo"
    record.loc[changed, "ours"] = "0.999"
    record.to_csv(record_paths(out)[0], index=False)
    pages(jw, out)  # the runs are still here
    again = read_record(out).set_index(["dataset", "detail", "quantity"])
    kept = again.loc[TAU0]
    assert (kept["commit"], kept["measured_on"]) == ("git 1111111", "2001-01-01")
    remeasured = again.loc[("sst", "class 0", "tau_loo")]
    assert remeasured["commit"] == gridlab_commit() and remeasured["measured_on"] != "2001-01-01"
