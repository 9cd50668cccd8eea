"""`gridlab report`: the papers' tables and figures from a grid's analysis rows, beside the published
numbers, as Markdown + CSV, PNG and one index.html."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gridlab.cli.grid_commands import GridArg, WhereOption, load, say_results_folder
from gridlab.cli.output import echo, user_errors


@user_errors
def report(
    grid: GridArg,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="Report folder; default: <results_dir>/<grid>/report.")
    ] = None,
    where: WhereOption = None,
) -> None:
    """Build the report: one section per paper from the grid's Parquet rows, and what is missing."""
    from gridlab.studies.report import build_report  # matplotlib and the sections load only for this command

    expanded = load(grid, where, check_data=False)  # rows suffice; heatmaps say if data is absent
    say_results_folder(expanded, as_json=False)  # first: a missing folder explains an empty report
    summary = build_report(expanded, out)
    echo(f"report: {summary.index}")
    echo(f"conclusions: {summary.conclusions} ({summary.out / 'conclusions.md'})")
    echo(f"fidelity: {summary.fidelity} ({summary.out / 'fidelity.md'})")
    echo(
        f"{len(summary.sections)} sections, {summary.tables} tables, {summary.figures} figures"
        + (f", {summary.fragments} fragments" if summary.fragments else "")
    )
    if summary.missing:
        echo("missing:")
        for line in summary.missing:
            echo(f"  {line}")
