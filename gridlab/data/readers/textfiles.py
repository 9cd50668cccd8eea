"""Line-oriented text release files, plain or gzip'd, with read errors turned into `DataError`."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from gridlab.errors import DataError


def open_text(path: Path) -> TextIO:
    """UTF-8 text, gunzipped when the name ends in `.gz`. Only LF ends a line (newline="\\n"): a stray CR or
    Unicode line separator inside a field must not split a row."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return path.open(encoding="utf-8", newline="\n")


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, line) of a text file; read and decode errors become DataError naming the file."""
    try:
        with open_text(path) as handle:
            yield from enumerate(handle, start=1)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise DataError(f"{path}: unreadable: {error}") from error
