"""The measured numbers behind docs/fidelity.md, kept beside it (`fidelity.record.csv`, `fidelity.walltime.csv`)
so that a regeneration on a machine that lacks some grids' runs carries their numbers, dated and marked,
instead of turning them back into "not run".

Paper-scale grids take longer than one sitting on 2 cores, and a results folder does not always outlive the
machine it was written on. A number measured once stays evidence until a run here replaces it: a row that
is "not run" in this results folder takes its recorded value, is judged again against today's tolerance
and ablations, and says in its note when it was measured. A row measured here wins over the record, unless
the record's measurement averaged more seeds: a few seeds rerun on a new machine say less than the whole
set measured before, so the record's number stays and the note gives this folder's beside it.

    >>> record = NumberRecord.read(Path("docs/fidelity.md"))      # empty where no record exists yet
    >>> result = record.carry(fidelity(inputs), entries)           # "not run" rows filled from the record
    >>> record.updated([result, ...], today).write(Path("docs/fidelity.md"))
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from gridlab.errors import GridlabError
from gridlab.report.ablations import Ablation, ablation_text
from gridlab.report.fidelity import IDENTITY, NOT_RUN, FidelityResult, rerun_verdict_for, verdict_for
from gridlab.report.walltime import WallTime
from gridlab.store.atomic import write_text

TABLES = ("fidelity", "sensitivity")  # which of a grid's two frames a recorded number belongs to
NUMBER_KEY = ["file", "frame", "axis", "value", *IDENTITY]
MEASURED = ["ours", "ours_std", "n_seeds", "n_instances"]
NUMBER_COLUMNS = [*NUMBER_KEY, *MEASURED, "note", "measured_on"]
WALL_COLUMNS = ["file", "launches", "launch_seconds", "unfinished", "trials", "epochs", "train_seconds", "measured_on"]


def record_paths(document: Path) -> tuple[Path, Path]:
    """docs/fidelity.md → docs/fidelity.record.csv and docs/fidelity.walltime.csv."""
    return document.with_suffix(".record.csv"), document.with_suffix(".walltime.csv")


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
        numbers = _read(numbers_path, NUMBER_COLUMNS) if numbers_path.is_file() else cls.empty().numbers
        walls = _read(walls_path, WALL_COLUMNS) if walls_path.is_file() else cls.empty().walls
        return cls(numbers, walls)

    def write(self, document: Path) -> None:
        numbers_path, walls_path = record_paths(document)
        write_text(numbers_path, self.numbers[NUMBER_COLUMNS].to_csv(index=False))
        write_text(walls_path, self.walls[WALL_COLUMNS].to_csv(index=False))

    def carry(self, result: FidelityResult, entries: list[Ablation]) -> FidelityResult:
        """`result` with each number that the record holds and this folder lacks, or measured on fewer seeds,
        filled from it and judged again."""
        recorded = self.numbers[self.numbers["file"] == result.file]
        if recorded.empty:
            return result
        frame = _carry_frame(result.frame, recorded[recorded["frame"] == "fidelity"], entries, [])
        sensitivity = _carry_frame(
            result.sensitivity, recorded[recorded["frame"] == "sensitivity"], entries, ["axis", "value"]
        )
        return replace(result, frame=frame, sensitivity=sensitivity)

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


CARRIED_NOTE = "carried: measured {on} in runs not in this results folder"
FEWER_SEEDS_NOTE = "carried: measured {on} over {seeds} seeds; this results folder has {here_seeds}: {ours:.3f}"
CARRIED_PREFIX = CARRIED_NOTE.split("{on}")[0]


def _carry_frame(frame: pd.DataFrame, recorded: pd.DataFrame, entries: list[Ablation], axes: list[str]) -> pd.DataFrame:
    if frame.empty or recorded.empty:
        return frame
    key = [*axes, *IDENTITY]
    by_key: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for found in recorded.to_dict(orient="records"):
        by_key.setdefault(tuple(found[k] for k in key), []).append(found)
    rows = []
    for row in frame.to_dict(orient="records"):
        # One number may have had several measured rows (cells that differ in a second setting axis).
        matches = by_key.get(tuple(_key_text(row[k]) for k in key), [])
        if row["verdict"] == NOT_RUN:
            rows += [_carried(row, found, entries) for found in matches] or [row]
        elif matches and all(_more_seeds(found, row) for found in matches):
            rows += [_carried(row, found, entries, here=row) for found in matches]
        else:
            rows.append(row)
    return pd.DataFrame.from_records(rows, columns=[*frame.columns, "measured_on"])


def _carried(
    row: dict[str, Any], found: dict[str, Any], entries: list[Ablation], here: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`row` with the record's measurement `found`; `here`: this folder's own, on fewer seeds, named in the note."""
    out = {**row, **{k: _float(found[k]) for k in MEASURED}}
    out["difference"], out["verdict"] = verdict_for(out["ours"], float(row["published"]), float(row["tolerance"]))
    out["rerun_verdict"] = rerun_verdict_for(out["ours"], _float(row.get("rerun")), float(row["tolerance"]))
    out["ablation"] = ablation_text(out, entries, out["verdict"])
    # The note as measured (it may hold the section's own remark on the value), without an older carry mark.
    measured_note = "; ".join(p for p in str(found["note"]).split("; ") if p and not p.startswith(CARRIED_PREFIX))
    note = CARRIED_NOTE.format(on=found["measured_on"])
    if here is not None:
        note = FEWER_SEEDS_NOTE.format(
            on=found["measured_on"], seeds=int(out["n_seeds"]), here_seeds=int(here["n_seeds"]), ours=here["ours"]
        )
    out["note"] = f"{measured_note}; {note}" if measured_note else note
    out["measured_on"] = found["measured_on"]
    return out


def _measured_numbers(result: FidelityResult, today: datetime.date) -> pd.DataFrame:
    """The numbers of `result` that have a value, as record rows; a carried one keeps its measured date."""
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
        parts.append(kept)
    if not parts:
        return pd.DataFrame(columns=NUMBER_COLUMNS)
    numbers = pd.concat(parts, ignore_index=True)
    for column in NUMBER_KEY:
        numbers[column] = numbers[column].map(_key_text)
    return numbers[NUMBER_COLUMNS]


def _wall_fields(wall: WallTime) -> dict[str, Any]:
    return {
        "launches": wall.launches,
        "launch_seconds": wall.launch_seconds,
        "unfinished": wall.unfinished,
        "trials": wall.trials,
        "epochs": wall.epochs,
        "train_seconds": wall.train_seconds,
    }


def _key_text(value: Any) -> str:
    """A key cell as the record's CSV holds it: '' for null, else its text."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value)


def _more_seeds(found: dict[str, Any], row: dict[str, Any]) -> bool:
    recorded, here = _float(found["n_seeds"]), _float(row["n_seeds"])
    return recorded is not None and here is not None and recorded > here


def _float(value: Any) -> float | None:
    number = pd.to_numeric(value, errors="coerce")
    return None if pd.isna(number) else float(number)


def _read(path: Path, columns: list[str]) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise GridlabError(f"{path}: missing columns {', '.join(missing)} (expected the header {','.join(columns)})")
    return frame[columns]
