"""Each published number counted once: from the fidelity rows of every grid, the one row that decides each
number (a verdict), and every other measured row as an extra measurement without a verdict count.

    >>> plan = load_plan()                               # gridlab/studies/fidelity_grids.yaml
    >>> verdicts, extras = decide(results, plan)         # results: FidelityResult per grid, carried and traced
    >>> headline(verdicts)                               # per paper and table: within (full / reduced), outside, ...

A number is one row of a paper's table as printed: (paper, table, dataset, model, detail, quantity), for the
model the paper printed it for (`Comparison.printed_for`). Only the paper's own grids decide it, in the
order `fidelity_grids.yaml` lists them (the paper's grid, then its stated subsets): the first that holds a
current measurement gives the verdict, else the first that holds a stale one (verdict `stale`), else the
number is not run. Another paper's grid, an ablation grid (it sweeps a setting the paper did not use) and a
copy of the number onto one of gridlab's extra models never decide; their measured rows are extras.

A verdict is *reduced* when it rests on fewer than `FULL_SEEDS` seeds or on a population other than the
paper's (a training subset, a sample of test instances, another corpus): the headline counts those apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gridlab.errors import GridlabError
from gridlab.studies.fidelity import FULL, IDENTITY, NOT_RUN, OUTSIDE, STALE, UNDEFINED, WITHIN, FidelityResult

PLAN_FILE = Path(__file__).with_name("fidelity_grids.yaml")
FULL_SEEDS = 3
WITHIN_FULL, WITHIN_REDUCED = f"within, {FULL_SEEDS}+ seeds, full data", "within, reduced"
HEADLINE = [WITHIN_FULL, WITHIN_REDUCED, OUTSIDE, UNDEFINED, NOT_RUN, STALE]
# verdicts.csv, in this order (the last columns trace the row to the run that made it)
VERDICT_COLUMNS = [
    *IDENTITY,
    "published",
    "ours",
    "ours_std",
    "difference",
    "tolerance",
    "tolerance_source",
    "verdict",
    "reduced",
    "rerun",
    "rerun_verdict",
    "seeds",
    "instances",
    "population",
    "ablation",
    "note",
    "grid",
    "cells",
    "grid_hash",
    "commit",
    "measured_on",
]
ANOTHER_PAPER, ABLATION_GRID, EXTRA_MODEL, NOT_DECIDING = (
    "not one of this paper's grids (another paper's, or an ablation's)",
    "ablation grid (sweeps a setting)",
    "copy onto an extra model",
    "another of the paper's grids decided this number",
)


class PaperPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    paper: str  # as the fidelity rows' `paper` column prints it
    page: str = Field(pattern=r"^[a-z0-9_]+$")  # docs/fidelity/<page>.md
    decide: tuple[str, ...]  # grid files, in precedence order: the paper's grid, then its stated subsets


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    papers: tuple[PaperPlan, ...]
    grids: tuple[str, ...]  # every grid whose fidelity rows `gridlab fidelity` reads, in the order its pages show them
    # the grids whose rows decide the claims of docs/conclusions.md (`conclusions_doc`), in the order it shows them
    conclusions: tuple[str, ...] = ()

    def deciding(self, paper: str) -> tuple[str, ...]:
        return next((p.decide for p in self.papers if p.paper == paper), ())


def load_plan(path: Path = PLAN_FILE) -> Plan:
    """The grids `gridlab fidelity` reads and which decide each paper's numbers; every deciding grid must be
    one of the grids read."""
    try:
        plan = Plan.model_validate(yaml.safe_load(path.read_text()))
    except (OSError, yaml.YAMLError, ValidationError) as error:
        raise GridlabError(f"{path}: {error}") from None
    unread = [g for p in plan.papers for g in p.decide if g not in plan.grids]
    if unread:
        raise GridlabError(f"{path}: deciding grids not among `grids`: {', '.join(unread)}")
    return plan


@dataclass(frozen=True)
class Decided:
    verdicts: pd.DataFrame  # VERDICT_COLUMNS, one row per published number a paper's own grids aim at
    extras: pd.DataFrame  # the other measured (or stale) rows: grid, why, then the fidelity columns


def decide(results: list[FidelityResult], plan: Plan) -> Decided:
    """The verdict of each published number the paper's own grids aim at, and the extra measurements: `results`
    in the order the pages show them (carried and traced: `fidelity_record.NumberRecord.carry`)."""
    rows = pd.concat([_rows_of(r) for r in results], ignore_index=True) if results else None
    if rows is None or rows.empty:
        return Decided(pd.DataFrame(columns=VERDICT_COLUMNS), pd.DataFrame(columns=["why", *VERDICT_COLUMNS]))
    rows["_position"] = range(len(rows))  # the grids' order, then each grid's own
    rank = [_rank(plan, paper, grid) for paper, grid in zip(rows["paper"], rows["grid"])]
    rows["_rank"] = rank
    candidate = rows["_rank"].notna() & rows["printed_model"].astype(bool) & ~rows["_setting"].astype(bool)
    # The deciding row: current first, then stale, then not run; within each, the paper's precedence.
    order = {WITHIN: 0, OUTSIDE: 0, UNDEFINED: 0, STALE: 1, NOT_RUN: 2}
    pool = rows[candidate].assign(_state=lambda f: f["verdict"].map(order))
    chosen = pool.sort_values(["_state", "_rank", "_position"], kind="stable").drop_duplicates(IDENTITY)
    papers = {p.paper: i for i, p in enumerate(plan.papers)}
    chosen = chosen.assign(_paper=chosen["paper"].map(papers), _table=chosen["table"].map(table_order))
    chosen = chosen.sort_values(["_paper", "_table", "_position"], kind="stable")
    verdicts = _verdict_frame(chosen)
    rest = rows.drop(index=chosen.index)
    rest = rest[rest["verdict"] != NOT_RUN]
    why = [
        ABLATION_GRID if setting else EXTRA_MODEL if not printed else ANOTHER_PAPER if pd.isna(r) else NOT_DECIDING
        for setting, printed, r in zip(rest["_setting"].astype(bool), rest["printed_model"].astype(bool), rest["_rank"])
    ]
    extras = _verdict_frame(rest)
    extras.insert(0, "why", why)
    return Decided(verdicts, extras)


def table_order(table: str) -> tuple[int, int, str]:
    """Tables before figures, each by its number: 'Table 1 (...)' < 'Table 2' < 'Figure 4'."""
    words = table.split()
    number = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
    return (0 if words[0] == "Table" else 1, number, table)


def _rows_of(result: FidelityResult) -> pd.DataFrame:
    frame = result.frame.copy()
    frame["grid"] = result.file
    frame["_setting"] = bool(result.axes)
    return frame


def _rank(plan: Plan, paper: str, grid: str) -> float | None:
    deciding = plan.deciding(paper)
    return float(deciding.index(grid)) if grid in deciding else None


def _verdict_frame(rows: pd.DataFrame) -> pd.DataFrame:
    frame = rows.rename(columns={"n_seeds": "seeds", "n_instances": "instances", "measured_cells": "_measured"})
    for column in ("_measured", "grid_hash", "commit", "measured_on", "status"):
        if column not in frame:
            frame[column] = ""
    frame["cells"] = frame["_measured"].fillna("")  # the cells the number was measured on ('' if not run)
    frame["reduced"] = [
        verdict in (WITHIN, OUTSIDE, UNDEFINED) and (not _enough(seeds) or population != FULL)
        for verdict, seeds, population in zip(frame["verdict"], frame["seeds"], frame["population"])
    ]
    return frame[VERDICT_COLUMNS].reset_index(drop=True)


def _enough(seeds: object) -> bool:
    number = pd.to_numeric(seeds, errors="coerce")
    return bool(pd.notna(number) and number >= FULL_SEEDS)


def headline(verdicts: pd.DataFrame, by: tuple[str, ...] = ("paper", "table")) -> pd.DataFrame:
    """Per `by` (all rows together for ()): the published numbers, within on full data and 3+ seeds, within
    reduced, outside, undefined (rows without a value), not run and stale."""
    keys = list(by) or ["_all"]
    frame = verdicts.assign(
        _all="all",
        _count=[
            (WITHIN_REDUCED if reduced else WITHIN_FULL) if verdict == WITHIN else verdict
            for verdict, reduced in zip(verdicts["verdict"], verdicts["reduced"])
        ],
    )
    counts = (
        frame.groupby(keys, sort=False)["_count"]
        .value_counts()
        .unstack(fill_value=0)
        .reindex(columns=HEADLINE, fill_value=0)
        .reset_index()
        .rename_axis(None, axis=1)
    )
    counts = frame[keys].drop_duplicates().merge(counts, on=keys, how="left")  # in the rows' order
    counts.insert(len(keys), "published numbers", counts[HEADLINE].sum(axis=1))
    return counts.drop(columns=["_all"], errors="ignore")
