"""Terminal output for the CLI: the only place that prints. User errors become plain lines on stderr, and a
closed stdout (`gridlab plan GRID | head`) ends a command quietly."""

from __future__ import annotations

import functools
import os
import select
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from gridlab.errors import GridlabError, Interrupted, resource_fault

F = TypeVar("F", bound=Callable)

# Wide when piped so tables are not squeezed into 80 columns in logs and tests.
console = Console(width=None if sys.stdout.isatty() else 200, highlight=False)


def echo(text: str = "") -> None:
    """Plain text: never interpreted as rich markup (paths like `grid.encoder[1]` contain brackets)."""
    typer.echo(text)


class LiveBoard:
    """On a terminal, a live region under the printed lines: a row per running trial (its epoch, dev metric and
    time per epoch) and one for the analyses (shards done, time left), redrawn in place; lines printed
    meanwhile scroll above it. `status(key, None)` drops a row."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}
        self.live = Live(self._render(), console=console, transient=True, auto_refresh=False)

    def __enter__(self) -> LiveBoard:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()

    def status(self, key: str, text: str | None) -> None:
        if text is None:
            self.rows.pop(key, None)
        else:
            self.rows[key] = text
        self.live.update(self._render(), refresh=True)

    def _render(self) -> Table:
        table = Table.grid(padding=(0, 1))
        for key, text in self.rows.items():
            table.add_row(f"[bold]{key}[/bold]", text)
        return table


def warn(text: str) -> None:
    typer.echo(f"warning: {text}", err=True)


def user_errors(command: F) -> F:
    """Domain errors end the command with their lines on stderr and their exit code, no traceback; a reader
    that closed stdout early (`| head`) ends it quietly with exit 0."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except GridlabError as error:
            for line in error.lines():
                typer.echo(line, err=True)
            raise typer.Exit(error.exit_code) from None
        except BrokenPipeError:
            if not stdout_closed():  # a pipe to another process (a server, a worker) broke: not the reader's doing
                raise
            end_quietly()
        except KeyboardInterrupt:  # Ctrl-C outside Ray Tune's own handling: what was written is complete
            typer.echo("interrupted: finished cells and parts are kept; run the command again to resume", err=True)
            raise typer.Exit(Interrupted.exit_code) from None
        except Exception as error:  # a full or unwritable disk, wherever it surfaced: one line, not a traceback
            fault = resource_fault(error)
            if fault is None:
                raise
            typer.echo(str(fault), err=True)
            raise typer.Exit(fault.exit_code) from None

    return wrapper  # type: ignore[return-value]


def stdout_closed() -> bool:
    """Whoever read stdout is gone (`gridlab status --json | head -1` after its line): poll reports an error on
    the write end of a pipe that has no reader left."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured output (tests) has no descriptor
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def end_quietly() -> NoReturn:
    """End the command with exit 0 and nothing on stderr: the reader took what it wanted, as `head` does. What
    is left in stdout's buffer goes to /dev/null, so Python's last flush at exit finds no closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise typer.Exit(0)
