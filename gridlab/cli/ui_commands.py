"""`gridlab ui`: the MLflow UI on a grid's tracking store, and the URL of the grid's experiment in it.

gridlab ui grids/quick.yaml              # serves runs/mlflow.db on 127.0.0.1:5000 (or the first free port)
gridlab ui grids/quick.yaml --port 8080
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gridlab.cli.grid_commands import GridArg, load
from gridlab.cli.output import echo, user_errors
from gridlab.errors import GridlabError, Interrupted
from gridlab.grid.expand import ExpandedGrid
from gridlab.store.store import Store
from gridlab.text import counted
from gridlab.tracking.journal import TrackingJournal
from gridlab.tracking.ui import LocalUi, experiment_id, experiment_url, free_port, is_server, store_path


def grid_tracking_uri(expanded: ExpandedGrid) -> str:
    """Where a launch of the grid tracks (`execution.launch.tracking_uri`, without importing Ray): its
    `tracking_uri`, else the sqlite store of its results folder."""
    return expanded.tracking_uri


@user_errors
def ui(
    grid: GridArg,
    port: Annotated[
        Optional[int], typer.Option(help="Port on 127.0.0.1; default: 5000, or the first free one after it.")
    ] = None,
) -> None:
    """Start the MLflow UI on the grid's tracking store (until Ctrl-C) and print the URL of the grid's
    experiment in the model-training view; where the grid tracks to a server, print that URL only."""
    expanded = load(grid, check_data=False)  # the grid file and its results folder
    name, uri = expanded.spec.name, grid_tracking_uri(expanded)
    journal = TrackingJournal(expanded.workspace.tracking)
    # as last counted: the UI asks nothing
    waiting = journal.backlog(journal.store_at(Store.portable_tracking_uri(uri)))
    if waiting:
        echo(f"{counted(waiting, 'record')} of {name} not in the store yet: `gridlab track {grid}` sends them")
    if is_server(uri):
        found = experiment_id(uri, name)
        if found is None:
            raise GridlabError(f"{uri} has no experiment '{name}' yet: `gridlab launch {grid}` creates it")
        echo(f"{name} tracks to the MLflow server {uri}; its experiment in the model-training view:")
        echo(experiment_url(uri, found))
        return
    store = store_path(uri)
    if store is not None and not store.is_file():
        raise GridlabError(f"no tracking store at {store}: nothing of {name} was tracked yet (`gridlab launch {grid}`)")
    try:
        _serve(LocalUi(uri, port if port is not None else free_port(), expanded.results.artifacts), name, grid)
    except KeyboardInterrupt:  # the server is stopped by now (`LocalUi.__exit__`)
        raise Interrupted("stopped the MLflow UI") from None


def _serve(ui: LocalUi, name: str, grid: Path) -> None:
    """Until the server stops: print the experiment's URL once it answers, then wait."""
    with ui:
        echo(f"starting the MLflow UI on 127.0.0.1:{ui.port} ...")
        base = ui.wait_until_up()
        found = experiment_id(base, name)
        if found is None:
            echo(f"the store has no experiment '{name}' yet (`gridlab launch {grid}` creates it); every experiment:")
            echo(f"{base}/#/experiments")
        else:
            echo(f"MLflow UI, experiment '{name}' (id {found}) in the model-training view; Ctrl-C stops it:")
            echo(experiment_url(base, found))
        code = ui.wait()
        raise GridlabError(f"the MLflow server stopped by itself (exit code {code}): {ui.last_line()}")
