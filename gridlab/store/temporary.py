"""Hidden temporary files and folders beside a target, created with the modes the user's umask gives any new
file (0644 and 0755 under umask 022), so that what is renamed into place from them is as readable as a file
written directly. `tempfile.mkstemp` and `mkdtemp` create theirs private (0600, 0700) whatever the umask:
fine for scratch space, wrong for results that others read, serve or copy.

    >>> partial = new_file(folder, ".summary.parquet.", ".tmp")    # empty, 0666 less the umask
    >>> staging = new_folder(folder, ".3f2a.tmp-")                  # empty, 0777 less the umask

The kernel applies the umask as it creates each one (no process-wide umask is read or changed, which would
race with other threads); names are random and creation exclusive, so two writers never share one.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

_ATTEMPTS = 100


def new_file(folder: Path, prefix: str, suffix: str = "") -> Path:
    """A new empty file in `folder` named `prefix` + random + `suffix`."""

    def create(path: Path) -> None:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))

    return _created(folder, prefix, suffix, create)


def new_folder(folder: Path, prefix: str) -> Path:
    """A new empty folder in `folder` named `prefix` + random."""
    return _created(folder, prefix, "", lambda path: os.mkdir(path, 0o777))


def _created(folder: Path, prefix: str, suffix: str, create: Callable[[Path], None]) -> Path:
    for _ in range(_ATTEMPTS):
        path = Path(folder) / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            create(path)
        except FileExistsError:  # 48 random bits: only ever another writer's leftover of the same name
            continue
        return path
    raise FileExistsError(f"no free temporary name {prefix}*{suffix} in {folder} after {_ATTEMPTS} attempts")
