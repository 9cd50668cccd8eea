"""`gridlab launch` and `gridlab status`: train a grid's cells on Ray and see where each one stands."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from gridlab.checkpoints import ModelStore
from gridlab.cli.grid_commands import GridArg, load
from gridlab.cli.output import console, echo, user_errors


@user_errors
def launch(
    grid: GridArg,
    force: Annotated[Optional[list[str]], typer.Option("--force", help="Retrain this cell id (repeatable).")] = None,
    address: Annotated[Optional[str], typer.Option(help="Ray address: 'auto', 'ray://host:10001'; "
                                                        "default: the grid's ray.address (null: a local Ray).")] = None,
) -> None:
    """Train every cell of the grid that is not trained yet (resuming an interrupted launch first)."""
    from gridlab.trials.launch import launch as run_launch  # Ray and MLflow load only for this command

    expanded = load(grid)
    report = run_launch(expanded, force or [], address, emit=echo)
    if report.trained or report.failed:
        echo(f"done: {len(report.trained)} trained, {len(report.failed)} failed, {report.skipped} already trained")
    for cell_id, reason in report.failed.items():
        echo(f"failed: {cell_id}: {reason}")
    if report.failed:
        raise typer.Exit(1)


@user_errors
def status(grid: GridArg) -> None:
    """Per cell: trained, failed (with the reason) or pending; where its checkpoint and MLflow run are."""
    expanded = load(grid)
    store = ModelStore(expanded.results_dir)
    table = Table(title=f"{expanded.spec.name}: {len(expanded.cells)} cells", title_justify="left")
    for column in ("cell", "dataset", "encoder", "attention", "seed", "state", "detail", "checkpoint / MLflow run"):
        table.add_column(column, no_wrap=column not in ("detail", "checkpoint / MLflow run"))
    counts = {"trained": 0, "failed": 0, "pending": 0}
    for cell in expanded.cells:
        folder = store.cell(cell.id)
        state = folder.state()
        counts[state] += 1
        detail, where = "", ""
        run = folder.read("tracking.json")["mlflow_run_id"] if (folder.path / "tracking.json").is_file() else "-"
        if state == "trained":
            metrics = folder.read("metrics.json")
            detail = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if k.startswith("test_"))
            where = f"{folder.checkpoint} / {run}"
        elif state == "failed":
            detail, where = folder.failure_reason() or "", f"- / {run}"
        c = cell.config
        table.add_row(cell.id, c.dataset, c.encoder, c.attention, str(c.seed), state, detail, where)
    console.print(table)
    echo(f"{counts['trained']} trained, {counts['failed']} failed, {counts['pending']} pending")
