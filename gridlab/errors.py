"""The error hierarchy that the CLI turns into clean one-line messages.

Everything a user can cause (a bad grid file, a missing dataset, a corrupt download) raises a
`GridlabError`; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno


class GridlabError(Exception):
    """A user-facing failure: the CLI prints its message and exits with `exit_code`."""

    exit_code = 1

    def lines(self) -> list[str]:
        return [str(self)]


class GridFileError(GridlabError):
    """One or more problems in a grid file, each rendered as `FILE: path.to.key: what was wrong`."""

    exit_code = 2

    def __init__(self, file: str, problems: list[tuple[str, str]]):
        self.file = file
        self.problems = problems
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        return [f"{self.file}: {where}: {what}" if where else f"{self.file}: {what}" for where, what in self.problems]


class BadInput(GridlabError):
    """A value the user gave that cannot be used (a command-line value, a settings file): exit 2, like a bad
    grid file."""

    exit_code = 2


class UntrustedExperiment(GridlabError):
    """A Tune experiment whose saved state no longer matches the seal gridlab wrote for it (`execution.seal`):
    restoring it would unpickle files someone else changed. Exit 1, not 2: the command line was fine, the
    results folder is not; the user decides, with `--trust-results`."""


class Interrupted(GridlabError):
    """The user stopped a command (Ctrl-C); what was finished is kept and a relaunch resumes."""

    exit_code = 130


class DataError(GridlabError):
    """A dataset file is missing, unreadable or not what its format promises."""


class DatasetMissingError(DataError):
    """A dataset has no files under the data directory."""

    def __init__(self, dataset_id: str, data_dir: str, missing: list[str]):
        self.dataset_id = dataset_id
        self.missing = missing
        super().__init__(
            f"dataset '{dataset_id}' is not under {data_dir} (missing: {', '.join(missing)}); "
            f"run `gridlab data fetch {dataset_id}` or set GRIDLAB_DATA to a folder that has it"
        )


class ChecksumError(DataError):
    """A file's sha256 matches no known release of it."""


class ResourceFault(GridlabError):
    """The machine, not the grid, stopped the work: a full disk, a read-only or unwritable results folder.
    What was finished is kept; freeing the resource and relaunching resumes."""


class WorkerLost(ResourceFault):
    """Ray lost a training trial's worker in a way Tune does not retry (its memory monitor killed the worker as
    the trial started) and Tune's loop stopped: the experiment stays unfinished, and a relaunch resumes it."""


_REMEDY = (
    "(expected room to write results); the cells and parts finished so far are kept: free the resource, then "
    "run the command again to resume"
)
# errno -> what it means for a results folder
_RESOURCE_ERRNOS = {
    errno.ENOSPC: "no space left on its device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
}


def resource_fault(error: BaseException, where: str = "the results folder") -> ResourceFault | None:
    """The one-line ResourceFault for an OSError (anywhere in `error`'s causes) that a full or unwritable disk
    raised, else None. `where` names the place when the error does not (pyarrow's writers give no path)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            number = current.errno if current.errno in _RESOURCE_ERRNOS else None
            if number is None and "No space left on device" in str(current):  # wrapped without its errno
                number = errno.ENOSPC
            if number is not None:
                return ResourceFault(f"{current.filename or where}: {_RESOURCE_ERRNOS[number]} {_REMEDY}")
        current = current.__cause__ or current.__context__
    return None
