"""docs/fidelity.md, regenerated from the runs by `gridlab fidelity GRID [GRID ...] --out docs/fidelity.md`:
the settings where gridlab, the papers and their code differ (`fidelity_settings.csv`), the tolerance
rules, each grid's fidelity table (with its sensitivity break-out), and each study's wall time.

    >>> document = fidelity_document([expanded, ...], "gridlab fidelity grids/jain_wallace.yaml --out ...",
    ...                              NumberRecord.read(out), datetime.date.today())
    >>> document.text, document.record           # the Markdown, and the record to keep beside it

A number without rows here takes its value from the record of an earlier regeneration, marked with the date
it was measured (`fidelity_record.py`); one that no run has measured reads "not run": the document says what
is left to run as plainly as what has been reproduced. Nothing in it is written by hand; rerun the command
after a launch.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gridlab.errors import GridlabError
from gridlab.grid.expand import ExpandedGrid
from gridlab.report.ablations import Ablation, load_ablations
from gridlab.report.fidelity import (
    IDENTITY,
    NO_DATA,
    NO_MODEL,
    NOT_RUN,
    OUTSIDE,
    UNDEFINED,
    WITHIN,
    FidelityResult,
    fidelity,
    out_of_reach,
)
from gridlab.report.fidelity_record import NumberRecord
from gridlab.report.fidelity_text import grid_markdown, tolerance_frame
from gridlab.report.inputs import ReportInputs
from gridlab.report.published import PAPERS_WITHOUT_NUMBERS
from gridlab.report.render import markdown_table
from gridlab.report.walltime import WallTime, wall_time
from gridlab.text import counted, duration

SETTINGS_FILE = Path(__file__).with_name("fidelity_settings.csv")
SETTINGS_COLUMNS = ("paper", "setting", "paper_says", "original_code", "gridlab", "why")


def settings_markdown(path: Path = SETTINGS_FILE) -> str:
    """The settings table as Markdown; a line saying so when the file is absent. A file without the expected
    columns is an error (a table silently missing a column would read as complete)."""
    if not path.is_file():
        return f"No settings table yet ({path.name} is absent from gridlab/report/)."
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in SETTINGS_COLUMNS if c not in frame.columns]
    if missing:
        raise GridlabError(
            f"{path}: missing columns {', '.join(missing)} (expected the header {','.join(SETTINGS_COLUMNS)})"
        )
    if frame.empty:
        return f"The settings table ({path.name}) has no rows yet."
    return markdown_table(frame[list(SETTINGS_COLUMNS)])


def summary_frame(results: list[FidelityResult]) -> pd.DataFrame:
    records = []
    for result in results:
        counts = result.counts()
        outside = result.frame[result.frame["verdict"] == OUTSIDE]
        records.append(
            {
                "grid": result.grid,
                "file": result.file,
                "published numbers": len(result.frame),
                WITHIN: counts[WITHIN],
                OUTSIDE: counts[OUTSIDE],
                "outside, no ablation yet": int((outside["ablation"] == "no ablation yet").sum()),
                NOT_RUN: counts[NOT_RUN],
            }
        )
    return pd.DataFrame.from_records(records)


def coverage_frame(results: list[FidelityResult]) -> pd.DataFrame:
    """One row per published number that a grid without a setting axis aims at (a paper's grid, or a stated
    subset of it), with the verdict of the first such grid, in the document's order, that measured it: the
    paper's own grid where it ran, else its subset; `not run` where none did. Grids that sweep a setting
    (ablations) test causes and are left out: a number within tolerance under a setting the paper did not
    use does not reproduce it."""
    columns = [*IDENTITY, "verdict", "file"]
    parts = [r.frame.assign(file=r.file)[columns] for r in results if not r.axes and len(r.frame)]
    if not parts:
        return pd.DataFrame(columns=columns)
    frame = pd.concat(parts, ignore_index=True).assign(_measured=lambda f: f["verdict"] != NOT_RUN)
    frame["_position"] = range(len(frame))
    first = frame.sort_values(["_measured", "_position"], ascending=[False, True], kind="stable")
    chosen = first.drop_duplicates(IDENTITY).sort_values("_position")
    return chosen.assign(file=chosen["file"].where(chosen["_measured"], ""))[columns].reset_index(drop=True)


def coverage_markdown(results: list[FidelityResult]) -> str:
    """Per paper, how many of its published numbers on gridlab's datasets have a verdict, and which are left."""
    frame = coverage_frame(results)
    if frame.empty:
        return "No grid without a setting axis aims at a published number."
    verdicts = [WITHIN, OUTSIDE, *([UNDEFINED] if (frame["verdict"] == UNDEFINED).any() else []), NOT_RUN]
    counts = (
        frame.groupby("paper", sort=False)["verdict"]
        .value_counts()
        .unstack(fill_value=0)
        .reindex(columns=verdicts, fill_value=0)
        .reset_index()
    )
    counts.insert(1, "published numbers", counts[verdicts].sum(axis=1))
    left = frame[frame["verdict"] == NOT_RUN]
    todo = left.groupby(["paper", "table", "dataset", "model"], sort=False).size().reset_index(name="numbers")
    parts = [
        "Each published number once, whichever grids aim at it: the verdict of the first grid in this document "
        "that measured it (the paper's grid where it ran, else its stated subset). Grids that sweep a setting "
        "(the ablations) are not counted: they test why, not whether. As in the tables below, a number printed "
        "once for several of gridlab's models counts once per model (J&W's Table 1 accuracy for both attention "
        "functions, Meister's Table 5 JSD for every projection).",
        "",
        markdown_table(counts.rename_axis(None, axis=1)),
    ]
    if len(todo):
        parts += ["", f"Not run yet ({counted(len(left), 'number')}):", "", markdown_table(todo)]
    return "\n".join(parts)


def out_of_reach_markdown() -> str:
    """The published numbers no grid can aim at, counted per paper, table, dataset and reason."""
    frame = out_of_reach()
    lines = [f"- {paper}: {why}." for paper, why in PAPERS_WITHOUT_NUMBERS.items()]
    if frame.empty:
        return "\n".join(["Every typed-in published number has a gridlab dataset and model.", "", *lines])
    counts = frame.groupby(["paper", "table", "dataset", "reason"], sort=False).size().reset_index(name="numbers")
    reasons = frame["reason"].value_counts()
    return "\n".join(
        [
            f"{len(frame)} published numbers are out of reach, so no grid can aim at them: "
            f"{reasons.get(NO_DATA, 0)} are on datasets gridlab does not have (`no data`: no public copy reachable "
            f"here, or data under licence such as MIMIC) and {reasons.get(NO_MODEL, 0)} belong to models gridlab "
            "does not build (`no model`: Rocktäschel et al.'s conditional-encoding pair model and Luong et al.'s "
            "decoder attention, in Vashishth et al.'s Tables 2 and 3).",
            "",
            markdown_table(
                counts.rename(columns={"reason": "verdict"})[["paper", "table", "dataset", "numbers", "verdict"]]
            ),
            "",
            "Papers whose numbers are not typed in:",
            "",
            *lines,
        ]
    )


def wall_time_frame(grids: list[ExpandedGrid], times: list[tuple[WallTime, str | None]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "grid": [g.spec.name for g in grids],
            "file": [str(g.file) for g in grids],
            "measured": [on or "here" for _, on in times],
            "cells": [len(g.cells) for g in grids],
            "launches": [t.launches for t, _ in times],
            "unfinished launches": [t.unfinished for t, _ in times],
            "launch wall time": [duration(t.launch_seconds) if t.launches else "not recorded" for t, _ in times],
            "trials": [t.trials for t, _ in times],
            "epochs": [t.epochs for t, _ in times],
            "trial time (summed)": [duration(t.train_seconds) if t.trials else "–" for t, _ in times],
        }
    )


@dataclass(frozen=True)
class FidelityDocument:
    text: str  # docs/fidelity.md
    record: NumberRecord  # the numbers it shows, to keep beside it for the next regeneration


def fidelity_document(
    grids: list[ExpandedGrid],
    command: str,
    record: NumberRecord,
    today: datetime.date,
    settings: Path = SETTINGS_FILE,
    entries: list[Ablation] | None = None,
) -> FidelityDocument:
    entries = load_ablations() if entries is None else entries
    results = [record.carry(fidelity(ReportInputs.load(grid), entries), entries) for grid in grids]
    times = [record.wall_time(str(grid.file), wall_time(grid.workspace)) for grid in grids]
    parts = [
        "# Fidelity: gridlab against the papers",
        "",
        f"Generated from the runs by `{command}`; rerun it after a launch instead of editing this file. "
        "A number is reproduced when ours lies within its tolerance of the published one; where it does not, "
        "the `ablation` column names the run that tests why, or says `no ablation yet`. A number measured by "
        "an earlier regeneration whose runs are not in this results folder, or are here on fewer seeds, is "
        "carried from the record beside this file (fidelity.record.csv), and its note says when it was measured.",
        "",
        "## Summary",
        "",
        markdown_table(summary_frame(results)),
        "",
        "## Published numbers",
        "",
        coverage_markdown(results),
        "",
        "## Out of reach",
        "",
        out_of_reach_markdown(),
        "",
        "## Settings: the papers, their code and gridlab",
        "",
        settings_markdown(settings),
        "",
        "## Tolerances",
        "",
        markdown_table(tolerance_frame()),
        "",
    ]
    for result, grid, (spent, on) in zip(results, grids, times):
        when = f" (measured {on}, in runs of which this results folder holds fewer trials)" if on else ""
        parts += [
            grid_markdown(result, level=2, tolerances=False).rstrip(),
            "",
            f"Wall time: {spent.describe()}{when}.",
            "",
        ]
    parts += [
        "## Wall time",
        "",
        markdown_table(wall_time_frame(grids, times)),
        "",
        "Launch wall time: from the grid's launch log (a start and an end line for every `gridlab launch`; "
        "training and analyses together, trials in parallel). Trial time: Ray Tune's `time_this_iter_s` summed "
        "over every epoch of every trial (its result log in the launch's Tune experiment), so it exceeds the wall "
        "time when trials run side by side. Grids of one name share a results folder, its launch log and its "
        "trials: their rows are the folder's, every launch and trial of any of them (a cell copied from another "
        "grid counts where it was trained). Analysis shards are not timed one by one; their time is inside the "
        "launch's. Where these files live: gridlab/store/layout.py.",
    ]
    return FidelityDocument("\n".join(parts).rstrip() + "\n", record.updated(results, times, today))
