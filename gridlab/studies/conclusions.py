"""The claims table: what each paper concluded and whether a grid's rows support it, one row per claim and
condition and one overall row per claim (condition `all`). `gridlab report` shows it first
(`conclusions_section`: conclusions.md and conclusions.csv); `gridlab conclusions` writes the document of any
grids' rows (`write_conclusions`), with every rule written before its numbers; `gridlab fidelity` writes
docs/conclusions.md and its record from the study's grids (`conclusions_doc`, `conclusions_record`).

    >>> frame = claims_frame({"quick": ReportInputs.load(expanded)})
    >>> conclusions_section(frame)             # the report's first section: conclusions.md, conclusions.csv
    >>> frame.columns[:6].tolist()
    ['claim', 'condition', 'statistic', 'value', 'verdict', 'detail']
    >>> undecided(frame)        # "jw.weak_correlation: not run — needs `importance_correlation` rows of ..."

Overall row of a claim: `holds` when every decided condition holds, `reversed` when none holds and one or
more is reversed, `partly` when the conditions disagree, `not run` when the rows decide no condition. Its
value is the share of decided conditions that hold.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gridlab.grid.expand import ExpandedGrid
from gridlab.report.artifacts import Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.render import SectionResult, cell_text, markdown_table
from gridlab.store.atomic import write_text
from gridlab.studies.claims import CLAIM_LIST, HOLDS, NOT_RUN, PARTLY, REVERSED, STALE, Claim, Finding

SECTION_ID = "conclusions"
TITLE = "Conclusions: what each paper claimed, and whether these rows support it"
# `rule`: the rule that decided the verdict, so that a verdict is cited with it and a record knows when a
# rule has changed since (`conclusions_record`)
COLUMNS = ["claim", "condition", "statistic", "value", "verdict", "detail", "seeds", "grid", "paper", "rule"]
OVERALL = "all"
OVERALL_RULE = (
    "holds when every decided condition holds, reversed when none holds and some are reversed, partly when they "
    "disagree, not run when the rows decide no condition (a stale finding counts as not run)"
)
READS = {"cells": "the trained cells' test accuracy"}  # what a claim reads that is not an analysis


def condition_text(finding: Finding) -> str:
    """'dataset sst, encoder lstm, seeds 0,1,2': the axes the finding fixes, then its seeds."""
    parts = [f"{axis} {cell_text(value)}" for axis, value in finding.condition.items()]
    parts.append(f"seeds {','.join(map(str, finding.seeds))}" if finding.seeds else "no seeds")
    return ", ".join(parts)


def overall(verdicts: Sequence[str]) -> str:
    decided = [v for v in verdicts if v != NOT_RUN]
    if not decided:
        return NOT_RUN
    if all(v == HOLDS for v in decided):
        return HOLDS
    if HOLDS not in decided and REVERSED in decided:
        return REVERSED
    return PARTLY


def finding_rows(claim: Claim, grid: str, inputs: ReportInputs) -> list[dict[str, Any]]:
    """The claim's rows of one grid (`grid`: its label in the table), one per condition its rows decide, each
    with the cells it was measured on (`cells`, space-separated ids)."""
    return [
        {
            "claim": claim.id,
            "condition": condition_text(finding),
            "statistic": claim.statistic,
            "value": float(finding.value),
            "verdict": finding.verdict,
            "detail": finding.detail,
            "seeds": len(finding.seeds),
            "grid": grid,
            "paper": claim.paper,
            "rule": claim.rule,
            "cells": " ".join(finding.cells),
        }
        for finding in claim.decide(inputs)
    ]


def overall_row(claim: Claim, rows: Sequence[Mapping[str, Any]], grids: Mapping[str, ReportInputs]) -> dict[str, Any]:
    """The claim's overall row over its condition rows `rows` (a stale one counts as not run)."""
    verdicts = [NOT_RUN if r["verdict"] == STALE else r["verdict"] for r in rows]
    decided = [v for v in verdicts if v != NOT_RUN]
    counts = ", ".join(f"{sum(v == name for v in verdicts)} {name}" for name in (HOLDS, PARTLY, REVERSED, NOT_RUN))
    stale = sum(r["verdict"] == STALE for r in rows)
    counts += f" ({stale} stale)" if stale else ""
    return {
        "claim": claim.id,
        "condition": OVERALL,
        "statistic": "share of decided conditions that hold",
        "value": sum(v == HOLDS for v in decided) / len(decided) if decided else math.nan,
        "verdict": overall(verdicts),
        "detail": f"conditions: {counts}" if rows else f"needs {claim.needs}{requested_by(claim, grids)}",
        "seeds": math.nan,
        "grid": ", ".join(grids),
        "paper": claim.paper,
        "rule": OVERALL_RULE,
    }


def claim_rows(claim: Claim, grids: Mapping[str, ReportInputs]) -> list[dict[str, Any]]:
    """The claim's rows: one per condition of every grid, then its overall row."""
    rows = [row for grid, inputs in grids.items() for row in finding_rows(claim, grid, inputs)]
    return [*rows, overall_row(claim, rows, grids)]


def requested_by(claim: Claim, grids: Mapping[str, ReportInputs]) -> str:
    """'; requested by grids/x.yaml (its rows: `gridlab launch grids/x.yaml`)' for the grids that ask for
    every analysis the claim reads; whether their cells can decide it shows once the rows are written."""
    analyses = [a for a in claim.analyses if a != "cells"]
    files = [str(i.grid.file) for i in grids.values() if analyses and all(i.requested(a) for a in analyses)]
    if not files:
        return ""
    launches = ", ".join(f"`gridlab launch {f}`" for f in files)
    return f"; requested by {', '.join(files)} (its rows: {launches})"


def claims_frame(grids: Mapping[str, ReportInputs]) -> pd.DataFrame:
    """Every claim's rows over these grids' rows (grid name -> inputs), in the order of CLAIM_LIST."""
    records = [row for claim in CLAIM_LIST for row in claim_rows(claim, grids)]
    frame = pd.DataFrame.from_records(records, columns=COLUMNS)
    frame["value"] = frame["value"].astype(float)
    frame["seeds"] = frame["seeds"].astype("Int64")
    return frame


def undecided(frame: pd.DataFrame) -> list[str]:
    """For each claim the rows decide for no condition: what would decide it."""
    rows = frame[(frame["condition"] == OVERALL) & (frame["verdict"] == NOT_RUN)]
    return [f"{claim}: not run — {detail}" for claim, detail in zip(rows["claim"], rows["detail"])]


def undecided_markdown(frame: pd.DataFrame) -> list[str]:
    """The lines of `undecided` as a Markdown list under a heading line; none when every claim is decided."""
    lines = undecided(frame)
    if not lines:
        return []
    return ["", "What would decide the claims these rows cannot:", "", *[f"- {line}" for line in lines]]


def display(frame: pd.DataFrame) -> pd.DataFrame:
    """What a reader sees: claim, condition (after the grid's name when several grids decide conditions),
    verdict, the value rounded, and the numbers the rule compared."""
    conditions = frame[frame["condition"] != OVERALL]
    several = conditions["grid"].nunique() > 1
    shown = frame[["claim", "grid", "condition", "verdict", "value", "detail"]].copy()
    shown["value"] = [cell_text(v) for v in frame["value"]]
    if several:
        shown.loc[frame["condition"] == OVERALL, "grid"] = "all"
        return shown
    return shown.drop(columns="grid")


CAPTION = (
    "One row per claim and condition (the configuration its rows fix, and the seeds present), then one overall "
    "row per claim (condition 'all': holds when every decided condition holds, reversed when none holds and "
    "some are reversed, partly when they disagree, not run when no row decides it; its value is the share "
    "of decided conditions that hold). Each claim's statistic and rule, with the paper's words it rests on, "
    "are in docs/conclusions.md and gridlab/studies/claims/ (a module per paper); the CSV has every value at "
    "full precision."
)


def conclusions_table(frame: pd.DataFrame) -> Table:
    markdown = "\n".join(
        [
            f"# {TITLE}",
            "",
            markdown_table(display(frame)),
            "",
            CAPTION,
            *undecided_markdown(frame),
        ]
    )
    return Table(SECTION_ID, TITLE, frame, CAPTION, display(frame), markdown + "\n")


def conclusions_section(frame: pd.DataFrame) -> SectionResult:
    """The report's first section: the claims table `frame` (`claims_frame`), and what would decide the rest."""
    return SectionResult(SECTION_ID, TITLE, [conclusions_table(frame)], undecided(frame))


def summary(frame: pd.DataFrame) -> str:
    """'3 hold, 1 partly, 0 reversed, 10 not run' over the overall rows."""
    verdicts = frame.loc[frame["condition"] == OVERALL, "verdict"]
    return ", ".join(
        f"{int((verdicts == v).sum())} {'hold' if v == HOLDS else v}" for v in (HOLDS, PARTLY, REVERSED, NOT_RUN)
    )


def tally(frame: pd.DataFrame) -> pd.DataFrame:
    """Per claim and grid with decided conditions: how many hold, are partly and are reversed, and which are
    reversed. A grid that sweeps conditions (grids/robustness.yaml: encoders x embeddings x datasets) reads here
    as a count of where a claim survives; stale findings count as not run and are left out."""
    decided = frame[(frame["condition"] != OVERALL) & frame["verdict"].isin([HOLDS, PARTLY, REVERSED])]
    records = []
    for claim in CLAIM_LIST:
        mine = decided[decided["claim"] == claim.id]
        for grid in dict.fromkeys(mine["grid"]):  # in the order the grids decide conditions
            rows = mine[mine["grid"] == grid]
            verdicts = rows["verdict"]
            records.append(
                {
                    "claim": claim.id,
                    "grid": grid,
                    "conditions": len(rows),
                    HOLDS: int((verdicts == HOLDS).sum()),
                    PARTLY: int((verdicts == PARTLY).sum()),
                    REVERSED: int((verdicts == REVERSED).sum()),
                    "reversed where": "; ".join(rows.loc[verdicts == REVERSED, "condition"]) or "–",
                }
            )
    columns = ["claim", "grid", "conditions", HOLDS, PARTLY, REVERSED, "reversed where"]
    return pd.DataFrame.from_records(records, columns=columns)


# ---- docs/conclusions.md ---------------------------------------------------------------------------------------


def rules_markdown() -> str:
    """Every claim's wording, statistic, rule and analyses: what the numbers below are judged by."""
    parts = []
    for claim in CLAIM_LIST:
        parts += [
            f"### `{claim.id}` — {claim.paper}",
            "",
            f"*{claim.wording}*",
            "",
            f"- **Reads**: {', '.join(READS.get(a, f'`{a}` rows') for a in claim.analyses)}",
            f"- **Statistic**: {claim.statistic}",
            f"- **Rule per condition**: {claim.rule}",
            f"- **Decided by**: {claim.needs}",
            "",
        ]
    return "\n".join(parts)


DOCUMENT_TITLE = "# Conclusions: what each paper claimed, and whether gridlab's runs support it"
HOW_DECIDED = (
    "Every statistic is computed per model over its test instances, then averaged across seeds, by the "
    "functions of the report's sections (`gridlab/studies/claims/` names them, a module per paper). Where a "
    "rule compares a value with a reference, the 95% t-interval across seeds decides: the claimed side when the whole "
    "interval lies on it, reversed when it lies wholly on the other side, partly when it contains the "
    "reference (one seed: the mean decides). Where it compares two models (or two readings of one), "
    "their two intervals decide: the claimed order when they lie apart in it, reversed when they lie apart "
    "the other way, partly when they overlap. A claim that something makes no difference "
    "(`wp.uniform_baseline`, `vashishth.single_sequence`) holds while the interval its rule names shows no "
    "difference and is reversed when it shows one. A claim's overall row (condition `all`) holds when every "
    "decided condition holds, is reversed when none holds and some are reversed, partly when they "
    "disagree, and not run when the rows decide no condition."
)


def conclusions_document(
    frame: pd.DataFrame, source: Sequence[str], shown: pd.DataFrame | None = None, notes: Sequence[str] = ()
) -> str:
    """docs/conclusions.md: where its rows came from (`source`, Markdown lines), the rules, then the claims
    table `frame` (shown as `shown`, default `display(frame)`) and `notes` below it."""
    return "\n".join(
        [
            DOCUMENT_TITLE,
            "",
            *source,
            "",
            "## How each claim is decided",
            "",
            HOW_DECIDED,
            "",
            rules_markdown(),
            "## Across conditions",
            "",
            "How many of the conditions each grid decides a claim holds in, is partly in and is reversed in, "
            "and where it is reversed (the rows below give each condition's numbers).",
            "",
            markdown_table(tally(frame)),
            "",
            "## Verdicts",
            "",
            markdown_table(display(frame) if shown is None else shown),
            "",
            f"Overall: {summary(frame)}.",
            *notes,
            *undecided_markdown(frame),
            "",
        ]
    )


def write_conclusions(grids: Sequence[ExpandedGrid], out: Path) -> pd.DataFrame:
    """Writes the conclusions document of these grids' rows to `out`, naming the `gridlab conclusions` line
    that rewrites it; returns its table. (docs/conclusions.md itself is `gridlab fidelity`'s: `conclusions_doc`.)"""
    command = shlex.join(["gridlab", "conclusions", *(str(g.file) for g in grids), "--out", str(out)])
    frame = claims_frame({grid.spec.name: ReportInputs.load(grid) for grid in grids})
    sources = [f"- `{g.spec.name}`: {g.file}, rows from {g.workspace.analyses}" for g in grids]
    source = [f"Generated by `{command}` from these grids' Parquet rows (rewrite it with the same command):", ""]
    write_text(Path(out), conclusions_document(frame, [*source, *sources]))
    return frame
