"""Reader for the Large Movie Review Dataset v1.0 (Maas et al. 2011) in its original per-review layout.

Format: one review per file, `aclImdb/<split>/<pos|neg>/<id>_<rating>.txt`, a single line of UTF-8 text
with HTML `<br />` line breaks left in. The folder gives the polarity (`neg`: rating 1-4, `pos`: 7-10) and the
file name the IMDb star rating, so the same files serve the binary (`label="polarity"`) and the ten-class
(`label="rating"`) task. The official splits are train and test (25,000 each); there is no official dev.

Where the reviews are looked for, in order: `aclImdb_v1_labeled.tar.gz` (the checksummed copy in
shared/data: the official layout without `train/unsup/`), the official `aclImdb_v1.tar.gz`, and an unpacked
`aclImdb/` folder. Archives are streamed with `tarfile` rather than unpacked: 50,000 small files on disk
cost more than decompressing 28 MB. Unlabelled `train/unsup/` reviews are skipped, because only `pos`/`neg`
folders are read. Reviews come back sorted by member name, so an archive and an unpacked folder give the
same order whatever order the archive was packed in.

`<br />` tags become a space, not nothing: they separate sentences ("...end.<br /><br />Next...") and
deleting them would glue words together.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Literal

from gridlab.data.examples import RawExample
from gridlab.data.spec import SourceFile
from gridlab.errors import DataError

OFFICIAL_SPLITS = ("train", "test")
LABELED_ARCHIVE = "aclImdb_v1_labeled.tar.gz"
OFFICIAL_ARCHIVE = "aclImdb_v1.tar.gz"
UNPACKED_FOLDER = "aclImdb"

# Checksum as recorded in shared/data/imdb/SOURCE.md. The official archive is accepted under its own name;
# its content differs (it also holds unsup/ and .feat files), so it is reported as unverified.
IMDB_FILES = (
    SourceFile(
        LABELED_ARCHIVE,
        "93748be5a1e8d260e8521db8209ec1c8f9b3a4177e4da69461d8389ed611b8a6",
        28630985,
        names=(OFFICIAL_ARCHIVE,),
    ),
)

_POLARITIES = ("neg", "pos")
# Any file in a labelled review folder; its name is then checked strictly, so that a stray file is an error
# rather than a silently dropped review.
_REVIEW_MEMBER = re.compile(r"aclImdb/(train|test)/(neg|pos)/([^/]+)")
_REVIEW_NAME = re.compile(r"(\d+)_(\d+)\.txt")
_RATINGS = {"neg": range(1, 5), "pos": range(7, 11)}
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


class ImdbReader:
    """IMDB reviews labelled by polarity ("neg"/"pos") or by star rating ("1".."10", no 5 or 6)."""

    def __init__(self, label: Literal["polarity", "rating"]):
        if label not in ("polarity", "rating"):
            raise ValueError(f"ImdbReader label must be 'polarity' or 'rating', not {label!r}")
        self.label = label

    def splits_present(self, folder: Path) -> dict[str, bool]:
        source = _find_source(Path(folder))
        if source is None:
            parts: frozenset[tuple[str, str]] = frozenset()
        elif source.is_dir():
            parts = _folder_parts(source)
        else:
            parts = _archive_parts(str(source), source.stat().st_mtime_ns)
        return {split: all((split, polarity) in parts for polarity in _POLARITIES) for split in OFFICIAL_SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        if split not in OFFICIAL_SPLITS:
            raise ValueError(f"IMDB has no split {split!r}; its splits are {OFFICIAL_SPLITS}")
        source = _find_source(Path(folder))
        if source is None:
            raise DataError(
                f"{folder}: none of {LABELED_ARCHIVE}, {OFFICIAL_ARCHIVE} or {UNPACKED_FOLDER}/ found (IMDB)"
            )
        reviews = _read_folder(source, split) if source.is_dir() else _read_archive(source, split)
        if not reviews:
            raise DataError(f"{source}: no reviews under aclImdb/{split}/pos or aclImdb/{split}/neg")
        return [self._example(source, name, data) for name, data in sorted(reviews)]

    def _example(self, source: Path, name: str, data: bytes) -> RawExample:
        match = _REVIEW_MEMBER.fullmatch(name)
        assert match is not None  # only matching names are collected
        polarity, file_name = match[2], match[3]
        parsed = _REVIEW_NAME.fullmatch(file_name)
        if parsed is None or int(parsed[2]) not in _RATINGS[polarity]:
            raise DataError(
                f"{source}: {name}: expected a review named <id>_<rating>.txt with a rating of "
                f"{_RATINGS[polarity].start}-{_RATINGS[polarity].stop - 1} for '{polarity}'"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataError(f"{source}: {name}: not UTF-8 text ({error.reason} at byte {error.start})") from error
        label = polarity if self.label == "polarity" else parsed[2]
        return RawExample(text=_LINE_BREAK.sub(" ", text), label=label, source_id=name)


def _find_source(folder: Path) -> Path | None:
    for archive in (folder / LABELED_ARCHIVE, folder / OFFICIAL_ARCHIVE):
        if archive.is_file():
            return archive
    unpacked = folder / UNPACKED_FOLDER
    return unpacked if unpacked.is_dir() else None


@lru_cache(maxsize=16)
def _archive_parts(path: str, mtime_ns: int) -> frozenset[tuple[str, str]]:
    """The (split, polarity) folders that hold files in the archive; keyed by mtime so a replaced file is re-listed.

    Listing has to decompress the whole archive (seconds for the official 84 MB one), hence the cache.
    """
    parts: set[tuple[str, str]] = set()
    try:
        with tarfile.open(path, "r|gz") as archive:
            for member in archive:
                match = _REVIEW_MEMBER.fullmatch(member.name)
                if match is not None and member.isfile():
                    parts.add((match[1], match[2]))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise DataError(f"{path}: not a readable .tar.gz archive ({error})") from error
    return frozenset(parts)


def _folder_parts(root: Path) -> frozenset[tuple[str, str]]:
    return frozenset(
        (split, polarity)
        for split in OFFICIAL_SPLITS
        for polarity in _POLARITIES
        if next((root / split / polarity).glob("*.txt"), None) is not None
    )


def _read_archive(path: Path, split: str) -> list[tuple[str, bytes]]:
    reviews: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(path, "r|gz") as archive:
            for member in archive:
                match = _REVIEW_MEMBER.fullmatch(member.name)
                if match is None or match[1] != split or not member.isfile():
                    continue
                content = archive.extractfile(member)
                assert content is not None  # regular files always have content
                reviews.append((member.name, content.read()))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise DataError(f"{path}: not a readable .tar.gz archive ({error})") from error
    return reviews


def _read_folder(root: Path, split: str) -> list[tuple[str, bytes]]:
    reviews: list[tuple[str, bytes]] = []
    for polarity in _POLARITIES:
        for file in (root / split / polarity).glob("*"):
            if not file.is_file():
                continue
            try:
                reviews.append((f"{UNPACKED_FOLDER}/{split}/{polarity}/{file.name}", file.read_bytes()))
            except OSError as error:
                raise DataError(f"{file}: cannot read ({error.strerror or error})") from error
    return reviews
