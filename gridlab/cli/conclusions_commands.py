"""`gridlab conclusions`: a conclusions document from the runs of any grids: each paper's conclusions, the
statistic and rule that decide each, and whether the grids' rows support it (holds / partly / reversed /
not run), per condition and overall. It reads rows only and keeps no record: the project's own
docs/conclusions.md, carried across machines by its CSV, is `gridlab fidelity`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gridlab.cli.grid_commands import load
from gridlab.cli.output import echo, user_errors

GridsArg = Annotated[list[Path], typer.Argument(help="Grid files (YAML) whose rows decide the claims.")]
OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        help="The Markdown file to write (replaced whole). docs/conclusions.md is `gridlab fidelity`'s: "
        "writing it here would leave it without its record.",
    ),
]


@user_errors
def conclusions(grids: GridsArg, out: OutOption = Path("conclusions.md")) -> None:
    """Write the conclusions document: every claim of the papers with its statistic and rule, then its verdict
    per condition of the grids' rows and overall, and which analyses would decide the claims not run."""
    from gridlab.studies.conclusions import summary, write_conclusions  # pandas and the sections load only here

    expanded = [load(grid, check_data=False) for grid in grids]  # rows suffice, as for `gridlab report`
    frame = write_conclusions(expanded, out)  # the document names this command line as its source
    echo(f"conclusions: {out} ({summary(frame)})")
