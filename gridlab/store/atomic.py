"""Atomic writes: a file or folder is written beside its target under a hidden temporary name and renamed
into place (a rename within one filesystem is atomic on POSIX), so a reader, or a relaunch after a kill,
sees the old content or the new, never a half-written file. What is put in place has the modes the user's
umask gives a new file or folder (0644, 0755 under umask 022), as if written directly (`store.temporary`).
Where results live in object storage, what is put in place here is then uploaded (`store.remote.pushed`).

    >>> write_text(path, "...")                      # also write_bytes, write_json
    >>> with replaced(path) as partial:              # anything that writes a file by name (Parquet, PNG)
    ...     pq.write_table(table, partial)
    >>> publish_folder(staging, target)              # a filled staging folder takes the target's place
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gridlab.store.remote import pushed
from gridlab.store.temporary import new_file, new_folder


@contextmanager
def replaced(path: Path) -> Iterator[Path]:
    """A temporary path beside `path`; once the block ends without error it replaces `path`, otherwise it
    is removed. The parent folder is created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        yield temporary
        os.replace(temporary, path)
        pushed(path)  # uploaded where results live in object storage (`store.remote`)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def write_bytes(path: Path, data: bytes) -> None:
    with replaced(path) as partial:
        partial.write_bytes(data)


def write_text(path: Path, text: str) -> None:
    """`text` as UTF-8, exactly as given (no newline translation)."""
    with replaced(path) as partial, open(partial, "w", encoding="utf-8", newline="") as stream:
        stream.write(text)


def write_json(path: Path, value: Any, indent: int | None = 2) -> None:
    write_text(path, json.dumps(value, indent=indent, sort_keys=True))


def staging_folder(target: Path) -> Path:
    """An empty hidden folder beside `target`, to fill and then `publish_folder`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return new_folder(target.parent, f".{target.name}.tmp-")


def publish_folder(staging: Path, target: Path) -> None:
    """Put the filled `staging` folder (from `staging_folder`) in `target`'s place. An existing target is
    first renamed aside and deleted only once the new one is in place."""
    if not target.exists():
        os.rename(staging, target)
    else:
        retired = new_folder(target.parent, f".{target.name}.old-")
        os.rename(target, retired / target.name)
        os.rename(staging, target)
        shutil.rmtree(retired, ignore_errors=True)
    pushed(target)


def unwritable(folder: Path) -> str | None:
    """Why results could not be written under `folder`, or None; found without creating anything (the
    nearest part of the path that exists must be a writable folder)."""
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder (expected a folder to write results in)"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable (expected a folder to write results in)"
    return None
