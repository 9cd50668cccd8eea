"""One writer per grid at a time: `gridlab launch` and `gridlab analyze` hold an exclusive lock on the grid's
folder, so two of them never train the same cells into one Tune experiment or race MLflow's first migration.

    >>> with exclusive(workspace, "launch"):      # GridBusy (one line: who holds it) if another one runs
    ...     train_and_analyse()

The lock is the operating system's (`flock` on `results_dir/<grid>/launch.lock`): it is released when its
holder exits, however it exits, so a killed launch never leaves a stale lock behind. The file also names the
holder (host, pid, command, start time) for the message a second launch prints. Readers (`status`, `plan`,
`report`) take no lock; `running(workspace)` reads the holder from the file, without taking the lock, for
`gridlab fidelity`, which leaves a grid in flight out of the record. A shared file system must support
`flock` (local disks and NFSv4 do). Where results live in object storage, the grid's lease in the bucket
(`store.lease`) holds other machines off as well.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from gridlab.errors import GridlabError
from gridlab.store.layout import GridWorkspace
from gridlab.store.lease import held
from gridlab.store.remote import mirror_of


class GridBusy(GridlabError):
    """Another launch or analyze holds the grid."""


@contextmanager
def exclusive(workspace: GridWorkspace, command: str) -> Iterator[None]:
    """Holds the grid's lock for the block; raises GridBusy at once if another process holds it."""
    workspace.path.mkdir(parents=True, exist_ok=True)
    with open(workspace.lock, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise GridBusy(_busy(workspace, handle.read())) from None
        handle.seek(0)
        handle.truncate()
        holder = {"host": socket.gethostname(), "pid": os.getpid(), "command": command, "since": time.time()}
        handle.write(json.dumps(holder))
        handle.flush()
        mirror = mirror_of(workspace.path)  # results in object storage: other machines are held off too
        try:
            with held(mirror.uri, workspace.path.name, command) if mirror is not None else nullcontext():
                yield
        finally:
            handle.seek(0)
            handle.truncate()  # the lock itself goes with the file's closing


def running(workspace: GridWorkspace) -> str | None:
    """Who holds the grid now ("`gridlab launch` (pid 12 on host, since ...)"), or None. Read from the lock
    file, never by taking the lock: a reader must not make a starting launch fail. The holder is written once
    the lock is taken and cleared when it is let go; a holder on this host whose process is gone (killed
    outright) holds nothing."""
    try:
        holder = json.loads(workspace.lock.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    if not isinstance(holder, dict):
        return None
    if holder.get("host") == socket.gethostname() and not _alive(holder.get("pid")):
        return None
    try:
        return _holder_text(holder)
    except (KeyError, TypeError, ValueError):
        return "another launch or analyze"


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _holder_text(holder: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder["since"]))
    return f"`gridlab {holder['command']}` (pid {holder['pid']} on {holder['host']}, since {since})"


def _busy(workspace: GridWorkspace, holder_json: str) -> str:
    try:
        who = _holder_text(json.loads(holder_json))
    except (ValueError, KeyError, TypeError):
        who = "another launch or analyze"
    return (
        f"{workspace.path.name}: {who} is running on this grid; wait for it to end (status and report work meanwhile)"
    )
