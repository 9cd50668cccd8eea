"""`gridlab validate` and `gridlab plan`: read a grid file and show what it would run, creating nothing."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from gridlab.catalog.analyses import ANALYSES, RANKING_NEEDS, ranking_applies
from gridlab.cli.output import console, echo, user_errors, warn
from gridlab.grid.expand import ID_LENGTH, Cell, ExpandedGrid, expand, restrict
from gridlab.grid.load import load_grid_file
from gridlab.store.models import ModelStore, trained_elsewhere
from gridlab.text import counted

GridArg = Annotated[Path, typer.Argument(help="The grid file (YAML).", show_default=False)]
WhereOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--where",
        metavar="PATH=VALUE[,VALUE]",
        help="Only the cells whose config matches, e.g. dataset=sst (repeatable: a path given twice adds its values).",
    ),
]
COLUMNS = ("dataset", "encoder", "attention", "projection", "architecture", "attention_mode", "seed")
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object per line instead of a table.")]


def load(grid: Path, where: list[str] | None = None, check_data: bool = True, results: bool = True) -> ExpandedGrid:
    """The expanded grid; with `results`, a results_dir in object storage is first brought to its local
    copy (`Store.sync`), so every command reads and writes there as it would a local folder."""
    expanded = expand(load_grid_file(grid), file=str(grid), check_data=check_data)
    for message in expanded.warnings:
        warn(f"{grid}: {message}")
    if results:
        expanded.store.sync(expanded.spec.name)
    return restrict(expanded, where or [])


@contextmanager
def uploading(expanded: ExpandedGrid) -> Iterator[None]:
    """Around a command that writes: what it leaves that `store.atomic` did not upload as it went (the logs it
    appended to) goes to the object store at the end, also when the command fails or is interrupted."""
    try:
        yield
    finally:
        expanded.store.upload_pending(expanded.spec.name)


def results_folder(expanded: ExpandedGrid) -> tuple[str, bool]:
    """The line that says which results folder a command read (`results: /abs/runs/quick/`), and whether it
    exists. A relative results_dir is read from the current folder, so a grid run from elsewhere finds nothing
    there: the line then says so, and how to read the right one, instead of reporting every cell pending."""
    folder = expanded.results_dir.absolute()
    line = f"results: {folder}/"
    if expanded.store.uri is not None:
        line += f" (the local copy of {expanded.store.uri})"
    if folder.is_dir():
        return line, True
    line += f" does not exist: nothing of grid '{expanded.spec.name}' was trained or analysed there"
    configured = expanded.spec.results_dir
    if expanded.store.uri is None and not Path(configured).is_absolute():
        line += (
            f"; results_dir '{configured}' is relative, read from the current folder ({Path.cwd()}): run the "
            "command from the folder the grid was launched from, or give the grid an absolute results_dir"
        )
    return line, False


def say_results_folder(expanded: ExpandedGrid, as_json: bool) -> None:
    """The results folder read: a line of the output, or, beside JSON lines, a warning on stderr when it is
    missing (stdout stays one JSON object per line)."""
    line, exists = results_folder(expanded)
    if not as_json:
        echo(line)
    elif not exists:
        warn(line)


def applicable(expanded: ExpandedGrid, cell: Cell) -> list[str]:
    return [a for a in expanded.analyses if ANALYSES[a].applies(cell.config)]


@user_errors
def validate(grid: GridArg) -> None:
    """Check a grid file: schema, values, datasets present. Prints the number of cells and analyses."""
    expanded = load(grid, results=False)  # offline: the grid file and the data folder
    collapsed = f" ({expanded.collapsed} duplicate combinations collapsed)" if expanded.collapsed else ""
    echo(
        f"{grid}: valid: {counted(len(expanded.cells), 'cell')}{collapsed}, "
        f"{counted(len(expanded.analyses), 'analysis', 'analyses')}"
        + (f" ({', '.join(expanded.analyses)})" if expanded.analyses else "")
    )
    for analysis in expanded.analyses:  # one line per analysis some cells cannot run
        skipped = sum(analysis not in applicable(expanded, cell) for cell in expanded.cells)
        if skipped:
            echo(
                f"{analysis}: does not apply to {skipped} of {counted(len(expanded.cells), 'cell')} "
                f"(needs {ANALYSES[analysis].needs})"
            )


@user_errors
def plan(
    grid: GridArg,
    as_json: JsonOption = False,
    where: WhereOption = None,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Time a few training batches and one analysed batch of each kind of cell this results folder "
            "has not measured yet, on its data, for the estimate of the time left (reads those datasets).",
        ),
    ] = False,
) -> None:
    """Show every cell (id, dataset, encoder, ...) and what would run for it, with counts and the time left."""
    expanded = load(grid, where, check_data=False)  # the grid and the results folder say it all
    store = ModelStore(expanded.workspace.models)
    states: dict[str, str] = {cell.id: store.cell(cell.id).state() for cell in expanded.cells}
    copied = {  # cells another grid of the results folder trained: a launch copies them
        cell.id: folder.grid
        for cell in expanded.cells
        if states[cell.id] != "trained" and (folder := trained_elsewhere(expanded.results, expanded.spec.name, cell.id))
    }
    if as_json:
        for cell in expanded.cells:
            echo(
                json.dumps(
                    {
                        "id": cell.id,
                        "state": states[cell.id],
                        "config": cell.config.model_dump(mode="json"),
                        "analyses": applicable(expanded, cell),
                        "trained_by": copied.get(cell.id),
                    },
                    sort_keys=True,
                )
            )
        say_results_folder(expanded, as_json=True)
        return
    console.print(_cells_table(expanded, states, copied))
    _print_counts(expanded, states, copied, calibrate)


def _extra_axes(expanded: ExpandedGrid) -> list[str]:
    return [p for p in expanded.axis_paths if p not in COLUMNS and p != "projection_lambda"]


def _cells_table(expanded: ExpandedGrid, states: dict[str, str], copied: dict[str, str]) -> Table:
    extra = _extra_axes(expanded)
    table = Table(title=f"{expanded.spec.name}: {counted(len(expanded.cells), 'cell')}", title_justify="left")
    for column in ("cell", "state", *COLUMNS, *extra, "runs"):
        table.add_column(column, no_wrap=column != "runs", min_width=ID_LENGTH if column == "cell" else None)
    for cell in expanded.cells:
        c = cell.config
        config = c.model_dump()
        projection = c.projection if c.projection_lambda is None else f"{c.projection} λ={c.projection_lambda:g}"
        values = [c.dataset, c.encoder, c.attention, projection, c.architecture, c.attention_mode, str(c.seed)]
        values += [_get(config, p) for p in extra]
        first = [] if states[cell.id] == "trained" else [_copy_or_train(expanded, cell, copied.get(cell.id))]
        runs = ", ".join([*first, *applicable(expanded, cell)])
        table.add_row(cell.id, states[cell.id], *values, runs)
    return table


def _copy_or_train(expanded: ExpandedGrid, cell: Cell, source: str | None) -> str:
    """'train', or 'copy from <grid>' with the number of analysis parts that come with the copy."""
    if source is None:
        return "train"
    from gridlab.execution.plan import reusable_parts  # torch: only when there is a plan to show

    parts = len(reusable_parts(expanded, cell, expanded.results.grid(source)))
    return f"copy from {source}" + (f" with {counted(parts, 'analysis part')}" if parts else "")


def _get(config: dict, path: str) -> str:
    node: Any = config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return str(node)


def _skipped_rankings(expanded: ExpandedGrid, analysis_id: str) -> list[str]:
    """Lines for the requested rankings of an analysis that some of its cells cannot compute (rollout and flow
    without a Transformer encoder): those cells skip them, their columns stay null."""
    rankings = getattr(expanded.analyses[analysis_id], "rankings", [])
    cells = [c for c in expanded.cells if analysis_id in applicable(expanded, c)]
    lines = []
    for ranking in rankings:
        skipping = sum(not ranking_applies(ranking, c.config) for c in cells)
        if skipping:
            lines.append(
                f"ranking {ranking}: skipped for {skipping} of {counted(len(cells), 'cell')} "
                f"(needs {RANKING_NEEDS[ranking]}); its columns stay null there"
            )
    return lines


def _print_counts(expanded: ExpandedGrid, states: dict[str, str], copied: dict[str, str], calibrated: bool) -> None:
    spec = expanded.spec
    cells = expanded.cells
    untrained = [c for c in cells if states[c.id] != "trained"]
    by_dataset = Counter(c.config.dataset for c in untrained)
    datasets = f" ({', '.join(f'{d} {n}' for d, n in by_dataset.items())})" if untrained else ""
    failed = sum(states[c.id] == "failed" for c in cells)
    retried = f", {failed} of them failed before (a launch retries them)" if failed else ""
    echo(f"cells: {len(cells) - len(untrained)} trained, {len(untrained)} to train{datasets}{retried}")
    if copied:
        grids = ", ".join(sorted(set(copied.values())))
        echo(f"  {len(copied)} of them trained by {grids} in this results folder: a launch copies them")
    if expanded.collapsed:
        echo(f"  {expanded.collapsed} combinations resolved to a cell already listed and were collapsed")
    shards = math.ceil(spec.instances / spec.shard_size) if spec.instances else None
    from gridlab.analyses.registry import IMPLEMENTATIONS  # torch: only when there is a plan to show

    for analysis_id in expanded.analyses:
        info = ANALYSES[analysis_id]
        n = sum(analysis_id in applicable(expanded, c) for c in cells)
        line = f"{analysis_id}: {n} of {counted(len(cells), 'cell')} ({info.scope} level)"
        if info.scope == "instance":
            per_model = f"{spec.instances} test instances" if spec.instances else "all test instances"
            line += f", {per_model} per model" + (f" in up to {shards} shards of {spec.shard_size}" if shards else "")
        if n < len(cells) and info.needs:
            line += f"; needs {info.needs}"
        if analysis_id not in IMPLEMENTATIONS:
            line += "; not implemented yet: validated and planned, not run"
        echo(line)
        for skipped in _skipped_rankings(expanded, analysis_id):
            echo(f"  {skipped}")
    from gridlab.execution.estimate import calibrate, estimate  # reads the plan's jobs: torch, as above

    calibration = calibrate(expanded, states) if calibrated else None
    left = estimate(expanded, states, calibration, copied=copied)
    where = f"the pace measured in {expanded.results_dir}/"
    if calibration is not None and calibration.kinds:
        where += f" and calibrated just now on {counted(calibration.kinds, 'kind')} of cell"
    echo(f"left, at {where}: {left.describe()}")
    if left.train_unknown or left.analysis_unknown:
        echo(f"  `gridlab plan {expanded.file} --calibrate` times a few batches of each kind not measured yet")
    say_results_folder(expanded, as_json=False)
    echo(f"data: {expanded.data_dir.absolute()}/")
