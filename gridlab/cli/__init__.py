"""The `gridlab` command line: one sub-app per noun, thin commands over the library.

gridlab validate grids/quick.yaml
gridlab plan grids/quick.yaml
gridlab data list
gridlab report grids/quick.yaml
gridlab ui grids/quick.yaml
gridlab fidelity                         # docs/fidelity/ and docs/conclusions.md (studies/fidelity_grids.yaml)
gridlab conclusions grids/jain_wallace.yaml grids/serrano_smith.yaml --out conclusions.md
"""

from __future__ import annotations

import typer

from gridlab import __version__
from gridlab.cli import (
    annotate_commands,
    conclusions_commands,
    config_commands,
    data_commands,
    fidelity_commands,
    grid_commands,
    report_commands,
    run_commands,
    ui_commands,
)
from gridlab.runtime import stop_on_sigterm

app = typer.Typer(
    name="gridlab",
    help="Declarative experiment grids for attention-interpretability studies, on Ray.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: flags without a `<bool>` type after them
)
app.command()(grid_commands.validate)
app.command()(grid_commands.plan)
app.command()(run_commands.launch)
app.command()(run_commands.analyze)
app.command()(run_commands.status)
app.command()(run_commands.track)
app.command()(ui_commands.ui)
app.command()(report_commands.report)
app.command()(fidelity_commands.fidelity)
app.command()(conclusions_commands.conclusions)
app.add_typer(data_commands.app, name="data")
app.add_typer(annotate_commands.app, name="annotate")
app.add_typer(config_commands.app, name="config")


def _version(show: bool) -> None:
    if show:
        typer.echo(f"gridlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """Declarative experiment grids for attention-interpretability studies, on Ray."""


def main() -> None:
    stop_on_sigterm()
    app()
