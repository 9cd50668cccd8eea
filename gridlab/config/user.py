"""The user's own settings, kept between commands: `gridlab config set data_dir PATH` once, and every later
`status`, `plan`, `launch` or `data list` finds the datasets without an environment variable.

A JSON file: $GRIDLAB_CONFIG, else $XDG_CONFIG_HOME/gridlab/settings.json, else ~/.config/gridlab/settings.json.

    >>> set_setting("data_dir", "/data/gridlab")
    >>> read_settings()
    {'data_dir': '/data/gridlab'}
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gridlab.errors import BadInput
from gridlab.store.atomic import write_json

SETTINGS = {
    "data_dir": "the datasets folder, for grids that set no data_dir when $GRIDLAB_DATA is unset",
}


def settings_path() -> Path:
    if os.environ.get("GRIDLAB_CONFIG"):
        return Path(os.environ["GRIDLAB_CONFIG"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gridlab" / "settings.json"


def read_settings() -> dict[str, str]:
    """The settings file's contents; {} when there is none. A file that is not a JSON object is an error."""
    path = settings_path()
    if not path.is_file():
        return {}
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadInput(f"{path}: not valid JSON ({error}); fix it or remove it") from None
    if not isinstance(settings, dict):
        raise BadInput(f"{path}: expected a JSON object of settings, found {type(settings).__name__}")
    return {k: str(v) for k, v in settings.items() if k in SETTINGS}


def set_setting(key: str, value: str | None) -> Path:
    """Write one setting (None removes it); returns the file written."""
    if key not in SETTINGS:
        raise BadInput(f"unknown setting {key!r} (known: {', '.join(SETTINGS)})")
    settings = read_settings()
    if value is None:
        settings.pop(key, None)
    else:
        settings[key] = value
    path = settings_path()
    write_json(path, settings)
    return path
