"""The measured numbers behind docs/fidelity/, kept beside them (`record.csv`, `walltime.csv`) so that a
regeneration on a machine that lacks some grids' runs shows what was measured, traced to the run that made
it, instead of turning it back into "not run".

Each recorded number carries what it was measured on: the cells (ids from their resolved configs), the grid
file's content hash and the gridlab commits that trained its cells (`record.Trace`), and the date. A recorded
number is *current* when its cells are all among the cells the grid names for that number today; it is then
judged again against today's tolerance and ablations, and says in its note when it was measured. Otherwise
it is *stale* (the grid changed since, or the row was recorded before cells were): shown with its value,
verdict `stale`, counted as not run, and kept in the record unchanged until a run here replaces it. A row
measured here wins over the record, unless the record's current measurement averaged more seeds.

    >>> record = NumberRecord.read(Path("docs/fidelity"))            # empty where no record exists yet
    >>> result = record.carry(fidelity(inputs), entries, trace)      # "not run" rows filled, current or stale
    >>> record.updated([result, ...], walls, today).write(Path("docs/fidelity"))
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from gridlab.store.atomic import write_text
from gridlab.studies.ablations import Ablation, ablation_text
from gridlab.studies.fidelity import IDENTITY, NOT_RUN, STALE, FidelityResult, rerun_verdict_for, verdict_for
from gridlab.studies.record import TRACE, Trace, cell_ids, kept_trace, key_text, read_record, same_numbers
from gridlab.studies.walltime import WallTime

TABLES = ("fidelity", "sensitivity")  # which of a grid's two frames a recorded number belongs to
NUMBER_KEY = ["file", "frame", "axis", "value", *IDENTITY]
MEASURED = ["ours", "ours_std", "n_seeds", "n_instances"]
NUMBER_COLUMNS = [*NUMBER_KEY, *MEASURED, "note", "measured_on", *TRACE]
RECORD_FILE, WALL_FILE = "record.csv", "walltime.csv"
CURRENT = "current"


WALL_COLUMNS = ["file", "launches", "launch_seconds", "unfinished", "trials", "epochs", "train_seconds", "measured_on"]


def record_paths(folder: Path) -> tuple[Path, Path]:
    """docs/fidelity → docs/fidelity/record.csv and docs/fidelity/walltime.csv."""
    return folder / RECORD_FILE, folder / WALL_FILE


@dataclass(frozen=True)
class NumberRecord:
    numbers: pd.DataFrame  # NUMBER_COLUMNS, one row per measured number
    walls: pd.DataFrame  # WALL_COLUMNS, one row per grid file with recorded launches or trials

    @classmethod
    def empty(cls) -> NumberRecord:
        return cls(pd.DataFrame(columns=NUMBER_COLUMNS), pd.DataFrame(columns=WALL_COLUMNS))

    @classmethod
    def read(cls, document: Path) -> NumberRecord:
        """The record beside `document`; empty when there is none. A record without its columns is an error."""
        numbers_path, walls_path = record_paths(document)
        # TRACE is absent from rows recorded before 2026-11-28
        numbers = read_record(numbers_path, NUMBER_COLUMNS, TRACE) if numbers_path.is_file() else cls.empty().numbers
        walls = read_record(walls_path, WALL_COLUMNS) if walls_path.is_file() else cls.empty().walls
        return cls(numbers, walls)

    def write(self, document: Path) -> None:
        numbers_path, walls_path = record_paths(document)
        write_text(numbers_path, self.numbers[NUMBER_COLUMNS].to_csv(index=False))
        write_text(walls_path, self.walls[WALL_COLUMNS].to_csv(index=False))

    def carry(self, result: FidelityResult, entries: list[Ablation], trace: Trace) -> FidelityResult:
        """`result` with each measured row traced (`trace`, its cells), and each number that the record holds
        and this folder lacks, or measured on fewer seeds, filled from it: judged again where current, marked
        stale where not."""
        recorded = self.numbers[self.numbers["file"] == result.file]
        carried = []
        for name, frame in zip(TABLES, (result.frame, result.sensitivity)):
            axes = ["axis", "value"] if name == "sensitivity" else []
            traced = _traced(frame, trace)
            carried.append(_carry_frame(traced, recorded[recorded["frame"] == name], entries, axes, trace))
        return replace(result, frame=carried[0], sensitivity=carried[1])

    def wall_time(self, file: str, measured: WallTime) -> tuple[WallTime, str | None]:
        """The wall time measured here, or the record's with its date where this folder recorded none or ran
        fewer trials of the study (a part of it rerun here says less about the whole than the record does)."""
        rows = self.walls[self.walls["file"] == file]
        if rows.empty:
            return measured, None
        row = rows.iloc[-1]
        if (measured.launches or measured.trials) and measured.trials >= int(row["trials"]):
            return measured, None
        carried = WallTime(
            launches=int(row["launches"]),
            launch_seconds=float(row["launch_seconds"]),
            unfinished=int(row["unfinished"]),
            trials=int(row["trials"]),
            epochs=int(row["epochs"]),
            train_seconds=float(row["train_seconds"]),
        )
        return carried, str(row["measured_on"])

    def updated(
        self, results: list[FidelityResult], walls: list[tuple[WallTime, str | None]], today: datetime.date
    ) -> NumberRecord:
        """The record after a regeneration: every measured number of `results` (carried ones keep their date),
        and the record's numbers of grid files not regenerated now, untouched."""
        files = {r.file for r in results}
        kept = self.numbers[~self.numbers["file"].isin(files)]
        fresh = [_measured_numbers(r, today) for r in results]
        numbers = pd.concat([kept, *fresh], ignore_index=True)[NUMBER_COLUMNS]
        wall_rows = [
            {"file": r.file, **_wall_fields(w), "measured_on": on or today.isoformat()}
            for r, (w, on) in zip(results, walls)
            if w.launches or w.trials
        ]
        kept_walls = self.walls[~self.walls["file"].isin(files)]
        walls_frame = pd.concat([kept_walls, pd.DataFrame(wall_rows, columns=WALL_COLUMNS)], ignore_index=True)
        return NumberRecord(numbers, walls_frame[WALL_COLUMNS])


FEWER_SEEDS_NOTE = "carried: measured {on} over {seeds} seeds; this results folder has {here_seeds}: {ours:.3f}"
STALE_NOTE = "stale: measured {on} on cells that are not the grid's cells for this number today"
UNTRACED_NOTE = "stale: measured {on}, recorded without its cells, grid hash or commit"
OLD_MARKS = ("carried: measured ", "stale: measured ")


def _traced(frame: pd.DataFrame, trace: Trace) -> pd.DataFrame:
    """`frame` with the trace columns: a row measured here is current, traced to this grid file and commit
    (its `measured_cells` say which cells)."""
    frame = frame.copy()
    measured = frame["verdict"] != NOT_RUN if len(frame) else pd.Series(dtype=bool)
    frame["status"] = [CURRENT if m else "" for m in measured]
    frame["grid_hash"] = [trace.grid_hash if m else "" for m in measured]
    cells = frame["measured_cells"] if "measured_cells" in frame else pd.Series("", index=frame.index)
    frame["commit"] = [trace.commit_for(cell_ids(c)) if m else "" for m, c in zip(measured, cells)]
    frame["measured_on"] = [trace.measured_on if m else None for m in measured]
    return frame


def _carry_frame(
    frame: pd.DataFrame, recorded: pd.DataFrame, entries: list[Ablation], axes: list[str], trace: Trace
) -> pd.DataFrame:
    if frame.empty or recorded.empty:
        return frame
    key = [*axes, *IDENTITY]
    by_key: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for found in recorded.to_dict(orient="records"):
        by_key.setdefault(tuple(found[k] for k in key), []).append(found)
    rows = []
    for row in frame.to_dict(orient="records"):
        # One number may have had several measured rows (cells that differ in a second setting axis).
        matches = by_key.get(tuple(key_text(row[k]) for k in key), [])
        current = [found for found in matches if _current(found, row)]
        if row["verdict"] == NOT_RUN:
            rows += [_carried(row, found, entries) for found in matches] or [row]
        elif current and all(_more_seeds(found, row) for found in current):
            rows += [_carried(row, found, entries, here=row) for found in current]
        else:
            again = [found for found in current if _measured_again(found, row)]
            kept = kept_trace(again[0], trace) if again else None
            rows.append({**row, "commit": kept.commit, "measured_on": kept.measured_on} if kept else row)
    return pd.DataFrame.from_records(rows, columns=list(frame.columns))


def _measured_again(found: dict[str, Any], row: dict[str, Any]) -> bool:
    """The recorded number is this one, measured again on the same cells of the same grid file: it keeps the
    record's commit and day (`record.kept_trace`), so a regeneration with the same runs changes no byte."""
    return found["grid_hash"] == row["grid_hash"] and all(same_numbers(found[k], row[k]) for k in MEASURED)


def _current(found: dict[str, Any], row: dict[str, Any]) -> bool:
    """A recorded number is the grid's own today when every cell it was measured on is still one the grid
    names for it (some of its seeds, say, when a launch stopped halfway: the row says how many); an untraced
    row, recorded without cells, never is. The same rule as a run here: a page must not depend on where the
    runs are."""
    recorded = cell_ids(found["cells"])
    return bool(recorded) and set(recorded) <= set(cell_ids(row.get("cells")))


def _carried(
    row: dict[str, Any], found: dict[str, Any], entries: list[Ablation], here: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`row` with the record's measurement `found`, judged again where current, else stale; `here`: this
    folder's own, on fewer seeds, named in the note."""
    out = {**row, **{k: _float(found[k]) for k in MEASURED}}
    published, tolerance = float(row["published"]), float(row["tolerance"])
    out["difference"], out["verdict"] = verdict_for(out["ours"], published, tolerance)
    out["rerun_verdict"] = rerun_verdict_for(out["ours"], _float(row.get("rerun")), tolerance)
    current = _current(found, row)
    if not current:
        out["verdict"], out["rerun_verdict"] = STALE, ""
    out["ablation"] = ablation_text(out, entries, out["verdict"])
    measured_note = _as_measured(found["note"])
    on = found["measured_on"]
    if here is not None:
        note = FEWER_SEEDS_NOTE.format(
            on=on, seeds=int(out["n_seeds"]), here_seeds=int(here["n_seeds"]), ours=here["ours"]
        )
    elif current:  # as the run that made it would show it: a page must not depend on where the runs are
        note = ""
    else:
        note = (STALE_NOTE if found["cells"] else UNTRACED_NOTE).format(on=on)
    out["note"] = "; ".join(part for part in (measured_note, note) if part)
    out["status"] = CURRENT if current else STALE
    out["measured_cells"], out["grid_hash"], out["commit"] = found["cells"], found["grid_hash"], found["commit"]
    out["measured_on"] = on
    return out


def _measured_numbers(result: FidelityResult, today: datetime.date) -> pd.DataFrame:
    """The numbers of `result` that have a value, as record rows with their trace; a carried or stale one
    keeps its measured date, cells, grid hash and commit."""
    parts = []
    for name, frame in zip(TABLES, (result.frame, result.sensitivity)):
        if frame.empty:
            continue
        kept = frame[frame["verdict"] != NOT_RUN].copy()
        if "axis" not in kept:
            kept["axis"], kept["value"] = "", ""
        kept["file"], kept["frame"] = result.file, name
        carried = kept["measured_on"] if "measured_on" in kept else pd.Series(None, index=kept.index)
        kept["measured_on"] = carried.astype(object).fillna(today.isoformat())
        kept["cells"] = kept["measured_cells"] if "measured_cells" in kept else ""
        kept["note"] = kept["note"].map(_as_measured)
        for column in ("grid_hash", "commit"):
            kept[column] = kept[column] if column in kept else ""
        parts.append(kept)
    if not parts:
        return pd.DataFrame(columns=NUMBER_COLUMNS)
    numbers = pd.concat(parts, ignore_index=True)
    for column in NUMBER_KEY:
        numbers[column] = numbers[column].map(key_text)
    return numbers[NUMBER_COLUMNS]


def _as_measured(note: object) -> str:
    """A note as measured (it may hold the section's own remark on the value), without a carry or stale mark:
    the record keeps what was measured, the pages say how it stands today."""
    parts = str(note or "").split("; ")
    return "; ".join(p for p in parts if p and not p.startswith(OLD_MARKS))


def _wall_fields(wall: WallTime) -> dict[str, Any]:
    return {
        "launches": wall.launches,
        "launch_seconds": wall.launch_seconds,
        "unfinished": wall.unfinished,
        "trials": wall.trials,
        "epochs": wall.epochs,
        "train_seconds": wall.train_seconds,
    }


def _more_seeds(found: dict[str, Any], row: dict[str, Any]) -> bool:
    recorded, here = _float(found["n_seeds"]), _float(row["n_seeds"])
    return recorded is not None and here is not None and recorded > here


def _float(value: Any) -> float | None:
    number = pd.to_numeric(value, errors="coerce")
    return None if pd.isna(number) else float(number)
