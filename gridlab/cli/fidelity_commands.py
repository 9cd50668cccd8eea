"""`gridlab fidelity`: docs/fidelity.md from the runs of one or more grids: the settings table, each grid's
published numbers beside ours with a verdict and an ablation, and each study's wall time."""

from __future__ import annotations

import datetime
import shlex
from pathlib import Path
from typing import Annotated

import typer

from gridlab.cli.grid_commands import load
from gridlab.cli.output import echo, user_errors
from gridlab.store.atomic import write_text

GridsArg = Annotated[list[Path], typer.Argument(help="Grid files (YAML), in the order the document shows them.")]
OutOption = Annotated[Path, typer.Option("--out", help="The Markdown file to write (replaced whole).")]


@user_errors
def fidelity(grids: GridsArg, out: OutOption = Path("docs/fidelity.md")) -> None:
    """Write the fidelity document: for every grid, each published number, ours, its tolerance and verdict
    (within / outside / not run), the ablation that tests an outside one, and the study's wall time."""
    from gridlab.report.fidelity_doc import fidelity_document  # pandas and the sections load only here
    from gridlab.report.fidelity_record import NumberRecord, record_paths

    expanded = [load(grid, check_data=False) for grid in grids]  # rows suffice, as for `gridlab report`
    command = shlex.join(["gridlab", "fidelity", *map(str, grids), "--out", str(out)])
    document = fidelity_document(expanded, command, NumberRecord.read(out), datetime.date.today())
    write_text(out, document.text)
    document.record.write(out)
    echo(f"fidelity: {out} (its record: {', '.join(map(str, record_paths(out)))})")
    for grid in expanded:
        echo(f"  {grid.spec.name}: {grid.file}")
