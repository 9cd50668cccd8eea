"""The user's own settings, kept between commands: `gridlab config set data_dir PATH` once, and every later
`status`, `plan`, `launch` or `data list` finds the datasets without an environment variable.

A JSON file: $GRIDLAB_CONFIG, else $XDG_CONFIG_HOME/gridlab/settings.json, else ~/.config/gridlab/settings.json.
Beside it, `experiment.key`: the secret that seals the Tune experiments a launch writes (`execution.seal`), made
on first use; $GRIDLAB_EXPERIMENT_KEY replaces it (drivers on several machines or pods share one secret).

    >>> set_setting("data_dir", "/data/gridlab")
    >>> read_settings()
    {'data_dir': '/data/gridlab'}
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from gridlab.errors import BadInput
from gridlab.store.atomic import write_json

KEY_ENV = "GRIDLAB_EXPERIMENT_KEY"
KEY_FILE = "experiment.key"
MIN_KEY_LENGTH = 32  # characters of the secret: 128 bits and more as hex

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


def experiment_key() -> bytes:
    """The HMAC key of `execution.seal`: $GRIDLAB_EXPERIMENT_KEY, else `experiment.key` beside the settings file,
    created on first use with 256 random bits, readable by its owner alone. Never under a results folder:
    whoever can write there must not be able to forge a seal."""
    if os.environ.get(KEY_ENV):
        key = os.environ[KEY_ENV]
        if len(key) < MIN_KEY_LENGTH:
            raise BadInput(f"${KEY_ENV} is {len(key)} characters; use at least {MIN_KEY_LENGTH} random ones")
        return key.encode()
    path = settings_path().parent / KEY_FILE
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{KEY_FILE}.{os.getpid()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as stream:
            stream.write(secrets.token_hex(32))
        try:
            os.link(temporary, path)  # whole or not at all; a process that made one first wins
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    key = path.read_text(encoding="ascii").strip()
    if len(key) < MIN_KEY_LENGTH:
        raise BadInput(f"{path}: {len(key)} characters; remove it (a new key is made) or restore the old one")
    return key.encode()
