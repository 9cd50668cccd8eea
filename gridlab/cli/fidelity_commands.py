"""`gridlab fidelity`: docs/fidelity/ from the runs of the grids gridlab/studies/fidelity_grids.yaml lists
(from the repository root), or from the numbers recorded beside the pages where this machine lacks the runs:
the rule and the headline per paper and table, a page per paper, the ablations, verdicts.csv; and beside them
docs/conclusions.md and conclusions.csv, the papers' claims decided by the grids listed under `conclusions`,
carried likewise from the CSV where this machine lacks their runs."""

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
ConclusionsOption = Annotated[
    Path | None,
    typer.Option(
        "--conclusions",
        help="The conclusions page to write, its CSV beside it (default: conclusions.md in the folder above --out).",
    ),
]


@user_errors
def fidelity(
    out: OutOption = Path("docs/fidelity"), grids: PlanOption = None, conclusions: ConclusionsOption = None
) -> None:
    """Write the fidelity pages: each published number once, ours beside it, its tolerance and verdict
    (within / outside / not run / stale), the ablation that tests an outside one, and the trace of every
    measured number (its cells, the grid file's hash, the gridlab commit); then the conclusions page of the
    grids listed under `conclusions`, each finding traced likewise. A grid whose launch is running is read as
    if this machine had no runs of it (its recorded numbers are kept)."""
    # pandas and the sections load only here
    from gridlab.store.lock import running as launch_running
    from gridlab.store.provenance import gridlab_commit
    from gridlab.studies.conclusions import summary
    from gridlab.studies.conclusions_doc import conclusions_pages
    from gridlab.studies.conclusions_record import ClaimRecord, record_path
    from gridlab.studies.fidelity_doc import fidelity_pages
    from gridlab.studies.fidelity_record import NumberRecord, record_paths
    from gridlab.studies.verdicts import PLAN_FILE, load_plan

    plan = load_plan(grids or PLAN_FILE)
    files = list(dict.fromkeys([*plan.grids, *plan.conclusions]))
    expanded = {file: load(Path(file), check_data=False) for file in files}  # rows suffice, as for `report`
    # A grid whose launch is running has some cells and seeds done and others not: its numbers stay the record's
    running = {file: who for file in files if (who := launch_running(expanded[file].workspace))}
    for file, who in running.items():
        echo(f"{file}: {who} is running on it: its results are not read now, its recorded numbers are kept")
    today, commit = datetime.date.today(), gridlab_commit()
    pages = fidelity_pages(
        [expanded[g] for g in plan.grids], plan, NumberRecord.read(out), today, commit, running=set(running)
    )
    for name, text in pages.files.items():
        write_text(out / name, text)
    pages.record.write(out)
    echo(f"fidelity: {out}/README.md and {len(pages.files) - 1} more (the record: {record_paths(out)[0]})")
    if not plan.conclusions:
        return
    document = conclusions or out.parent / "conclusions.md"
    claims = [expanded[g] for g in plan.conclusions]
    written = conclusions_pages(claims, ClaimRecord.read(record_path(document)), today, commit, set(running))
    write_text(document, written.markdown)
    write_text(record_path(document), written.csv)
    echo(f"conclusions: {document} ({summary(written.table)}; the record: {record_path(document)})")
