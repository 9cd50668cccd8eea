"""`gridlab annotate export | score`: the human evaluation of Vashishth et al. §4.4.

gridlab annotate export grids/vashishth.yaml --per-cell 100
gridlab annotate score grids/vashishth.yaml
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer

from gridlab.annotate.export import export_grid
from gridlab.annotate.files import ANSWERS_GLOB, INSTRUCTIONS, ITEMS, KEY
from gridlab.cli.grid_commands import GridArg, load
from gridlab.cli.output import echo, user_errors
from gridlab.text import counted

app = typer.Typer(
    help="Human evaluation of attention (Vashishth et al. §4.4): blinded sheets, then agreement and 2x2 tables.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("export")
@user_errors
def export(
    grid: GridArg,
    cells: Annotated[
        Optional[list[str]],
        typer.Option(
            "--cells",
            metavar="CELL_ID[,CELL_ID]",
            help="Only these cell ids (repeatable or "
            "comma-separated); default: every "
            "trained flat cell with learned "
            "attention.",
        ),
    ] = None,
    per_cell: Annotated[
        int,
        typer.Option("--per-cell", min=1, help="Test instances per cell; each gives an original and a permuted item."),
    ] = 100,
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out", help="Folder for the sheet and key; default: <results_dir>/<grid>/annotation.", show_default=False
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an earlier export in the folder.")] = False,
) -> None:
    """Write a shuffled, blinded sheet (items.csv, INSTRUCTIONS.md) and its hidden key (key.parquet)."""
    expanded = load(grid)
    only = [c.strip() for value in cells or [] for c in value.split(",") if c.strip()]
    folder = out or expanded.workspace.annotation
    report = export_grid(expanded, folder, only or None, per_cell, force)
    echo(f"{counted(report.items, 'item')} from {counted(len(report.cells), 'cell')} written to {folder}/")
    if report.skipped:
        reasons = Counter(report.skipped.values())
        echo(
            f"left out {counted(len(report.skipped), 'cell')}: "
            + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        )
    echo(
        f"hand out {ITEMS} and {INSTRUCTIONS}; keep {KEY} from annotators. Collect their {ANSWERS_GLOB} in "
        f"{folder}/, then run `gridlab annotate score {grid}`" + (f" --dir {folder}" if out else "")
    )


@app.command("score")
@user_errors
def score(
    grid: GridArg,
    folder: Annotated[
        Optional[Path],
        typer.Option(
            "--dir",
            help="The export's folder, with the answers-<name>.csv sheets; default: <results_dir>/<grid>/annotation.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Check every answers-<name>.csv against the key; print Cohen's kappa and the 2x2 tables, write them as CSV."""
    from gridlab.annotate.score import markdown, score_folder, write_scores

    expanded = load(grid)
    folder = folder or expanded.workspace.annotation
    scores = score_folder(folder, expanded.spec.name)
    echo(markdown(scores))
    written = write_scores(folder, scores)
    echo(f"tables written: {', '.join(str(p) for p in written)}")
