"""`gridlab fidelity`: docs/fidelity/ from the runs of the grids gridlab/studies/fidelity_grids.yaml lists
(from the repository root), or from the numbers recorded beside the pages where this machine lacks the runs:
the rule and the headline per paper and table, a page per paper, the ablations, verdicts.csv."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated

import typer

from gridlab.cli.grid_commands import load
from gridlab.cli.output import echo, user_errors
from gridlab.store.atomic import write_text

OutOption = Annotated[Path, typer.Option("--out", help="The folder of pages to write (each page replaced whole).")]
PlanOption = Annotated[
    Path | None,
    typer.Option(
        "--grids",
        help="The YAML that lists the grids and which decide each paper's numbers "
        "(default: gridlab/studies/fidelity_grids.yaml); its grid paths are relative to the working directory.",
    ),
]


@user_errors
def fidelity(out: OutOption = Path("docs/fidelity"), grids: PlanOption = None) -> None:
    """Write the fidelity pages: each published number once, ours beside it, its tolerance and verdict
    (within / outside / not run / stale), the ablation that tests an outside one, and the trace of every
    measured number (its cells, the grid file's hash, the gridlab commit)."""
    # pandas and the sections load only here
    from gridlab.studies.fidelity_doc import fidelity_pages
    from gridlab.studies.fidelity_record import NumberRecord, record_paths
    from gridlab.studies.provenance import gridlab_commit
    from gridlab.studies.verdicts import PLAN_FILE, load_plan

    plan = load_plan(grids or PLAN_FILE)
    expanded = [load(Path(grid), check_data=False) for grid in plan.grids]  # rows suffice, as for `report`
    pages = fidelity_pages(expanded, plan, NumberRecord.read(out), datetime.date.today(), gridlab_commit())
    for name, text in pages.files.items():
        write_text(out / name, text)
    pages.record.write(out)
    echo(f"fidelity: {out}/README.md and {len(pages.files) - 1} more (the record: {record_paths(out)[0]})")
