"""The error hierarchy that the CLI turns into clean one-line messages.

Everything a user can cause (a bad grid file, a missing dataset, a corrupt download) raises a
`GridlabError`; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


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
