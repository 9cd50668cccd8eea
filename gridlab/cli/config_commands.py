"""`gridlab config`: the user's settings kept between commands (gridlab/config/user.py), such as the datasets
folder, so that no command needs GRIDLAB_DATA set again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gridlab.cli.output import echo, user_errors
from gridlab.config.user import SETTINGS, read_settings, set_setting, settings_path
from gridlab.errors import BadInput

app = typer.Typer(help="Settings kept between commands (the datasets folder).", no_args_is_help=True)
KeyArg = Annotated[str, typer.Argument(help=f"One of: {', '.join(SETTINGS)}.")]


@app.command("set")
@user_errors
def set_value(key: KeyArg, value: Annotated[str, typer.Argument(help="The value (a folder for data_dir).")]) -> None:
    """Keep a setting: `gridlab config set data_dir ~/data/gridlab`."""
    if key == "data_dir":
        folder = Path(value).expanduser().resolve()
        if not folder.is_dir():
            raise BadInput(f"data_dir: {folder} is not a folder (create it or give another)")
        value = str(folder)
    path = set_setting(key, value)
    echo(f"{key} = {value} (in {path})")


@app.command("unset")
@user_errors
def unset_value(key: KeyArg) -> None:
    """Forget a setting."""
    path = set_setting(key, None)
    echo(f"{key} unset (in {path})")


@app.command("show")
@user_errors
def show() -> None:
    """Every setting, its value (or 'not set') and what it is for."""
    settings = read_settings()
    echo(f"settings file: {settings_path()}")
    for key, meaning in SETTINGS.items():
        echo(f"{key} = {settings.get(key, 'not set')}  ({meaning})")
