"""Reader for AG News (Zhang, Zhao & LeCun 2015) in its original `ag_news_csv` files.

Format: `train.csv` / `test.csv`, no header, three double-quoted columns: class index (1-4), title,
description; internal quotes are doubled. `classes.txt` names the classes, one per line, in index order
(World, Sports, Business, Sci/Tech). Each file may also be gzip'd (`test.csv.gz`, as stored in
shared/data); the `.gz` is preferred because it is the copy whose checksum is known. The official splits
are train (120,000) and test (7,600); shared/data has only test.

The text is `title + " " + description` (the description alone with `drop_titles`, as Jain & Wallace read
it), with every backslash turned into a space. The readme says new
lines are escaped as backslash + "n", but the files escape a line break as a lone backslash: every "\\n" in
test.csv is a break before a word starting with "n" ("social\\network", "gave\\no indication"), so replacing
"\\n" would cut those words. "\\\\" is a paragraph break and "\\$" the one escaped character (a dollar
sign, where a space before "$" is harmless). HTML entities ("&lt;b&gt;", " #36;") are left as they are:
they are what the corpus contains.
"""

from __future__ import annotations

import csv
import gzip
import zlib
from pathlib import Path
from typing import TextIO

from gridlab.data.examples import RawExample
from gridlab.data.spec import SourceFile
from gridlab.errors import DataError

OFFICIAL_SPLITS = ("train", "test")
CLASSES_FILE = "classes.txt"
# The names classes.txt gives, used when a download lacks it.
DEFAULT_CLASSES = ("World", "Sports", "Business", "Sci/Tech")

# Checksums as recorded in shared/data/ag_news/SOURCE.md. train.csv has no entry: no copy of it was
# obtained, so its checksum is not known here.
AG_NEWS_FILES = (
    SourceFile(
        "test.csv.gz", "3c277beb6ce3dd635407635cb90a7c5ceaf87168fabb3be218e39aa2b097f706", 748824, names=("test.csv",)
    ),
    SourceFile(CLASSES_FILE, "612dbfa932f07a6ed837295a7d5746ce7412e7bb4bc32ba919fdb3cda3a1b9b5", 31),
)


class AgNewsReader:
    """AG News articles labelled by class name ("World", "Sports", "Business", "Sci/Tech")."""

    def __init__(self, drop_titles: bool = False):
        self.drop_titles = drop_titles

    def splits_present(self, folder: Path) -> dict[str, bool]:
        return {split: _split_file(Path(folder), split) is not None for split in OFFICIAL_SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        if split not in OFFICIAL_SPLITS:
            raise ValueError(f"AG News has no split {split!r}; its splits are {OFFICIAL_SPLITS}")
        folder = Path(folder)
        path = _split_file(folder, split)
        if path is None:
            raise DataError(f"{folder}: neither {split}.csv.gz nor {split}.csv found (AG News {split} split)")
        classes = _read_classes(folder / CLASSES_FILE)
        try:
            with _open_text(path) as stream:
                return [
                    _example(path, row_number, row, classes, self.drop_titles)
                    for row_number, row in enumerate(csv.reader(stream, strict=True), start=1)
                ]
        except csv.Error as error:
            raise DataError(f"{path}: malformed CSV ({error})") from error
        except UnicodeDecodeError as error:
            raise DataError(f"{path}: not UTF-8 text ({error.reason})") from error
        except (OSError, EOFError, zlib.error) as error:
            raise DataError(f"{path}: cannot read ({error})") from error


def _split_file(folder: Path, split: str) -> Path | None:
    for name in (f"{split}.csv.gz", f"{split}.csv"):
        if (folder / name).is_file():
            return folder / name
    return None


def _open_text(path: Path) -> TextIO:
    # newline="" lets the csv module see line ends inside quoted fields, as its documentation asks.
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _read_classes(path: Path) -> tuple[str, ...]:
    if not path.is_file():
        return DEFAULT_CLASSES
    try:
        names = tuple(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: cannot read the class names ({error})") from error
    if not names:
        raise DataError(f"{path}: no class names in it")
    return names


def _example(path: Path, row_number: int, row: list[str], classes: tuple[str, ...], drop_titles: bool) -> RawExample:
    if len(row) != 3 or not row[0].isdigit() or not 1 <= int(row[0]) <= len(classes):
        raise DataError(
            f'{path}: row {row_number}: expected "<class 1-{len(classes)}>","<title>","<description>", '
            f"got {_preview(row)}"
        )
    title, description = row[1], row[2]
    return RawExample(
        text=_unescape(description if drop_titles else f"{title} {description}"),
        label=classes[int(row[0]) - 1],
        source_id=f"{path.name}:{row_number}",
    )


def _unescape(text: str) -> str:
    return text.replace("\\", " ")


def _preview(row: list[str]) -> str:
    return repr(",".join(row)[:80])
