"""The findings behind docs/conclusions.md, kept in docs/conclusions.csv beside it, so that a regeneration on a
machine without some grids' runs (a fresh clone has none) shows what was measured, traced to the run that made
it, instead of turning it back into "not run".

    >>> record = ClaimRecord.read(Path("docs/conclusions.csv"))          # empty where there is none yet
    >>> rows = record.carry(claim, "grids/jain_wallace.yaml", cell_ids, finding_rows(...), trace)

The CSV is both the table the page shows and the record: one row per finding, with the cells it was measured
on (ids from their resolved configs), the grid file's hash, the gridlab commits that trained those cells and
the day (`record.py`), and its verdict as measured (`measured_verdict`); then the overall rows, which are
recomputed every time and never read back. A recorded finding is *current* while every one of its cells is
still a cell of the grid and its statistic and rule are still the claim's: it is then carried as measured.
Otherwise it is *stale*: shown with its value, verdict `stale`, counted as not run, and kept as recorded until
a run here replaces it.

A finding measured here replaces the recorded one of the same claim, grid and condition (the condition's axes;
its seeds may differ), or whose cells include or are included in its own: except that a current recorded
finding measured on more cells (the rest of its seeds, say, where this machine ran some) is kept instead. What
the page shows does not depend on whether a finding was measured here or carried: a fresh clone rebuilds the
committed page and CSV byte for byte, and a regeneration with the same runs on another day or at another
commit changes no byte either: a finding measured again on the same cells and grid file, with the same value
and verdict, keeps the record's commit and day.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from gridlab.studies.claims import STALE, Claim
from gridlab.studies.conclusions import COLUMNS, OVERALL
from gridlab.studies.record import TRACE, Trace, cell_ids, kept_trace, read_record, same_numbers

RECORD_COLUMNS = [*COLUMNS, *TRACE, "measured_on", "measured_verdict"]
SEEDS_PART = re.compile(r"(?:^|, )(?:seeds [0-9,]+|no seeds)$")  # the end of `conclusions.condition_text`


def record_path(document: Path) -> Path:
    """docs/conclusions.md → docs/conclusions.csv."""
    return document.with_suffix(".csv")


@dataclass(frozen=True)
class ClaimRecord:
    findings: pd.DataFrame  # RECORD_COLUMNS as text, one row per recorded finding (no overall row)

    @classmethod
    def empty(cls) -> ClaimRecord:
        return cls(pd.DataFrame(columns=RECORD_COLUMNS))

    @classmethod
    def read(cls, path: Path) -> ClaimRecord:
        """The findings of the CSV at `path`; empty when there is none. A CSV without its columns is an error."""
        if not path.is_file():
            return cls.empty()
        frame = read_record(path, RECORD_COLUMNS)
        return cls(frame[frame["condition"] != OVERALL].reset_index(drop=True))

    def carry(
        self, claim: Claim, grid: str, grid_cells: Collection[str], measured: Sequence[dict[str, Any]], trace: Trace
    ) -> list[dict[str, Any]]:
        """The claim's rows for the grid file `grid` (whose cells today are `grid_cells`): each finding
        `measured` here, traced, unless a current recorded one was measured on more of its cells; then every
        recorded finding no measured one replaces, current or stale. Sorted by condition, then cells."""
        recorded = self.findings[(self.findings["claim"] == claim.id) & (self.findings["grid"] == grid)]
        found = [_typed(r) for r in recorded.to_dict(orient="records")]
        current = {i: _current(r, claim, set(grid_cells)) for i, r in enumerate(found)}
        rows, replaced, kept = [], set(), set()
        for row in measured:
            matches = [i for i, r in enumerate(found) if _same_finding(r, row)]
            replaced.update(matches)
            fuller = [i for i in matches if current[i] and _cells(found[i]) > _cells(row)]
            again = [found[i] for i in matches if current[i] and _measured_again(found[i], row, trace)]
            rows += [] if fuller else [_traced(row, kept_trace(again[0], trace) if again else trace)]
            kept.update(fuller)
        rows += [_as_carried(found[i], current[i]) for i in range(len(found)) if i in kept or i not in replaced]
        return sorted(rows, key=lambda r: (r["condition"], r["cells"]))


def _traced(row: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """A finding measured now, with its trace and its verdict as measured."""
    return {
        **row,
        "grid_hash": trace.grid_hash,
        "commit": trace.commit_for(cell_ids(row["cells"])),
        "measured_on": trace.measured_on,
        "measured_verdict": row["verdict"],
    }


def _measured_again(found: dict[str, Any], row: dict[str, Any], trace: Trace) -> bool:
    """The recorded finding is this one: the same cells of the same grid file, the same value and verdict."""
    return (
        _cells(found) == _cells(row)
        and found["grid_hash"] == trace.grid_hash
        and found["measured_verdict"] == row["verdict"]
        and same_numbers(found["value"], row["value"])
    )


def _as_carried(found: dict[str, Any], current: bool) -> dict[str, Any]:
    """A recorded finding as the page shows it: its measured verdict while current, else `stale`."""
    return {**found, "verdict": found["measured_verdict"] if current else STALE}


def _current(found: dict[str, Any], claim: Claim, grid_cells: set[str]) -> bool:
    """Every recorded cell is still one of the grid's (a changed grid file gives changed cell ids) and the
    finding's statistic and rule are still the claim's (a verdict is never carried past a change of the rule
    that gave it); a finding recorded without cells never is."""
    cells = cell_ids(found["cells"])
    same_rule = found["statistic"] == claim.statistic and found["rule"] == claim.rule
    return bool(cells) and set(cells) <= grid_cells and same_rule


def _same_finding(found: dict[str, Any], row: dict[str, Any]) -> bool:
    """The same claim's condition: the same axes (seeds aside), or cells of which one set holds the other."""
    if _axes(found["condition"]) == _axes(row["condition"]):
        return True
    mine, theirs = _cells(row), _cells(found)
    return bool(mine and theirs) and (mine <= theirs or theirs <= mine)


def _axes(condition: str) -> str:
    return SEEDS_PART.sub("", condition)


def _cells(row: dict[str, Any]) -> set[str]:
    return set(cell_ids(row["cells"]))


def _typed(found: dict[str, Any]) -> dict[str, Any]:
    """A record row (text) with its value as a float (NaN for '') and its seeds as an int (None for '')."""
    value = pd.to_numeric(found["value"], errors="coerce")
    seeds = pd.to_numeric(found["seeds"], errors="coerce")
    return {**found, "value": float(value), "seeds": None if pd.isna(seeds) else int(seeds)}
