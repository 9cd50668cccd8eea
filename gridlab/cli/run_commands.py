"""`gridlab launch`, `analyze`, `status` and `track`: train a grid's cells and run its analyses on Ray, see
where each cell stands, and send MLflow what a tracking outage held back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from gridlab.cli.grid_commands import GridArg, JsonOption, WhereOption, load, say_results_folder, uploading
from gridlab.cli.output import LiveBoard, console, echo, user_errors
from gridlab.errors import BadInput
from gridlab.grid.expand import ID_LENGTH, ExpandedGrid
from gridlab.grid.suggest import unknown
from gridlab.store.layout import CellFiles
from gridlab.store.lock import exclusive
from gridlab.store.models import ModelStore
from gridlab.text import counted

AnalysisOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--analysis", metavar="ANALYSIS", help="Only this analysis id (repeatable); the others wait for a later run."
    ),
]


def _check_analyses(expanded: ExpandedGrid, analysis: list[str] | None, grid: Path) -> None:
    for analysis_id in analysis or []:
        if analysis_id not in expanded.analyses:
            raise BadInput(unknown("analysis", analysis_id, list(expanded.analyses)) + f" (the analyses of {grid})")


@user_errors
def launch(
    grid: GridArg,
    force: Annotated[
        Optional[list[str]], typer.Option("--force", metavar="CELL_ID", help="Retrain this cell id (repeatable).")
    ] = None,
    address: Annotated[
        Optional[str],
        typer.Option(
            help="Ray address: 'auto', 'ray://host:10001'; default: the grid's ray.address (null: a local Ray)."
        ),
    ] = None,
    where: WhereOption = None,
    analysis: AnalysisOption = None,
    train_only: Annotated[
        bool, typer.Option("--train-only", help="Train only; every analysis waits for a later launch or analyze.")
    ] = False,
    trust_results: Annotated[
        bool,
        typer.Option(
            "--trust-results",
            help="Resume an interrupted launch even if its Tune files lack your seal or changed since "
            "(restoring unpickles them; see docs/security.md).",
        ),
    ] = False,
) -> None:
    """Train every untrained cell (resuming an interrupted launch first) and run the grid's analyses."""
    from gridlab.execution.launch import launch as run_launch  # Ray and MLflow load only for this command

    if train_only and analysis:
        raise BadInput("--train-only runs no analysis: leave out --analysis, or --train-only")
    expanded = load(grid, where)
    _check_analyses(expanded, analysis, grid)
    if train_only:
        analysis = []
    with uploading(expanded):
        if console.is_terminal:  # a live row per running trial and for the analyses, redrawn in place
            with LiveBoard() as board:
                report = run_launch(
                    expanded, force or [], address, echo, board.status, only=analysis, trust_results=trust_results
                )
        else:  # a log, a pipe, CI: a plain line per epoch and per shard
            report = run_launch(expanded, force or [], address, echo, only=analysis, trust_results=trust_results)
    if report.trained or report.failed:
        echo(f"done: {len(report.trained)} trained, {len(report.failed)} failed, {report.skipped} already trained")
    for cell_id, reason in report.failed.items():
        echo(f"failed: {cell_id}: {reason}")
    failed_shards = report.analyses.failed if report.analyses else []
    for shard in failed_shards:
        echo(f"analysis failed: {shard}")
    if report.failed or failed_shards:
        raise typer.Exit(1)


@user_errors
def analyze(
    grid: GridArg,
    analysis: AnalysisOption = None,
    address: Annotated[Optional[str], typer.Option(help="Ray address; default: the grid's ray.address.")] = None,
    where: WhereOption = None,
) -> None:
    """Run or resume only the analyses, on every trained cell (parts already written are skipped)."""
    from gridlab.execution.actors import run_analyses, summarize
    from gridlab.execution.launch import tracker_for
    from gridlab.execution.ray_session import ray_session

    expanded = load(grid, where)
    _check_analyses(expanded, analysis, grid)
    with (
        uploading(expanded),
        exclusive(expanded.workspace, "analyze"),
        ray_session(address if address is not None else expanded.spec.ray.address),
    ):
        report = run_analyses(expanded, emit=echo, only=analysis or None)
        tracker = tracker_for(expanded)
        summarize(expanded, tracker, echo)
        waiting = tracker.deliver()
    echo(f"analyses: {report.written} parts written, {report.skipped} already there")
    if waiting:
        echo(f"tracking: {counted(waiting, 'record')} not sent yet; `gridlab track {grid}` sends them")
    for shard in report.failed:
        echo(f"analysis failed: {shard}")
    if report.failed:
        raise typer.Exit(1)


@user_errors
def track(grid: GridArg) -> None:
    """Send the grid's tracking server every record a launch could not send (it was down or unreachable)."""
    from gridlab.execution.launch import tracker_for

    expanded = load(grid, check_data=False)  # the journal and the server are all it needs
    with uploading(expanded), exclusive(expanded.workspace, "track"):
        tracker = tracker_for(expanded)
        before = tracker.backlog()
        waiting = tracker.deliver()
        skipped = tracker.skipped()
    echo(f"tracking: {counted(before - waiting, 'record')} sent to {tracker.tracking_uri}, {waiting} waiting")
    if skipped:
        echo(
            f"tracking: {counted(skipped, 'record')} of {tracker.journal.records} could not be sent (each names a "
            "run that no record created)"
        )
    if waiting:
        raise typer.Exit(1)


@user_errors
def status(grid: GridArg, where: WhereOption = None, as_json: JsonOption = False) -> None:
    """Per cell: trained, failed (with the reason) or pending; where its checkpoint and MLflow run are."""
    expanded = load(grid, where, check_data=False)  # the grid and the results folder say it all
    store = ModelStore(expanded.workspace.models)
    records: list[dict[str, Any]] = []
    for cell in expanded.cells:
        folder = store.cell(cell.id)
        state = folder.state()
        metrics = folder.read(CellFiles.METRICS) if state == "trained" else {}
        c = cell.config
        records.append(
            {
                "id": cell.id,
                **{axis: getattr(c, axis) for axis in ("dataset", "encoder", "attention", "seed")},
                "state": state,
                "test": {k: v for k, v in metrics.items() if k.startswith("test_")},
                "failure": folder.failure_reason() if state == "failed" else None,
                "checkpoint": str(folder.checkpoint) if state == "trained" else None,
                "mlflow_run": folder.mlflow_run_id(),
            }
        )
    if as_json:
        for record in records:
            echo(json.dumps(record, sort_keys=True))
        say_results_folder(expanded, as_json=True)
        return
    table = Table(title=f"{expanded.spec.name}: {counted(len(expanded.cells), 'cell')}", title_justify="left")
    for column in ("cell", "dataset", "encoder", "attention", "seed", "state", "detail", "checkpoint / MLflow run"):
        wraps = column in ("detail", "checkpoint / MLflow run")  # ids never: they are pasted into --force
        table.add_column(column, no_wrap=not wraps, min_width=ID_LENGTH if column == "cell" else None)
    for r in records:
        detail = r["failure"] or ", ".join(f"{k} {v:.4g}" for k, v in r["test"].items())
        location = "" if r["state"] == "pending" else f"{r['checkpoint'] or '-'} / {r['mlflow_run'] or '-'}"
        row = [r["id"], r["dataset"], r["encoder"], r["attention"], str(r["seed"]), r["state"], detail, location]
        table.add_row(*row)
    say_results_folder(expanded, as_json=False)  # first, so the counts stay the last line (scripts read it)
    console.print(table)
    states = [r["state"] for r in records]
    echo(f"{states.count('trained')} trained, {states.count('failed')} failed, {states.count('pending')} pending")
