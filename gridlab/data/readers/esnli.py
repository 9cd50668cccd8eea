"""Reader for e-SNLI (Camburu et al. 2018) in the authors' preprocessed text files.

Format: `eSNLI/{s1,s2,labels}.{split}`, plain ASCII, one pair per line, line i of every file of a split is
the same pair: tokenised premise (`s1`), hypothesis (`s2`) and gold label (`entailment` / `neutral` /
`contradiction`). They are exactly SNLI 1.0's pairs with a gold label, in file order. The three
natural-language explanations per pair (`preproc1_expl_{1,2,3}`) are not read: no analysis uses free-text
explanations, and the token highlights that would be rationales are not in this release.

Read from `esnli_dev_test_preprocessed.tar.gz` (as stored here) or an unpacked `eSNLI/` folder. The
official train files (`s1.train` ...) are not in our copy, so `train` is reported absent.
"""

from __future__ import annotations

import tarfile
from functools import lru_cache
from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError

ARCHIVE = "esnli_dev_test_preprocessed.tar.gz"
UNPACKED = "eSNLI"
FIELDS = ("s1", "s2", "labels")
SPLIT_SUFFIX = {"train": "train", "dev": "dev", "test": "test"}

ESNLI_FILES = (SourceFile(ARCHIVE, "f7716973822eb62cc5bf449131b3e1d95c58e20b86e0782b7e529b40fa651036", 1677809),)


class EsnliReader:
    """e-SNLI premise/hypothesis/label triples for the splits whose three files are all present."""

    def splits_present(self, folder: Path) -> dict[str, bool]:
        available = _available_members(folder)
        return {split: all(_member(f, split) in available for f in FIELDS) for split in SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        columns = {name: _read_lines(folder, _member(name, split)) for name in FIELDS}
        lengths = {name: len(lines) for name, lines in columns.items()}
        if len(set(lengths.values())) != 1:
            raise DataError(f"{folder}: e-SNLI {split} files disagree in line count ({lengths})")
        return [
            RawExample(
                text=premise.strip(),
                query=hypothesis.strip(),
                label=label.strip(),
                source_id=f"{_member('labels', split)}:{number}",
            )
            for number, (premise, hypothesis, label) in enumerate(
                zip(columns["s1"], columns["s2"], columns["labels"]), start=1
            )
        ]


def _member(field: str, split: str) -> str:
    return f"{UNPACKED}/{field}.{SPLIT_SUFFIX[split]}"


def _available_members(folder: Path) -> frozenset[str]:
    archive = folder / ARCHIVE
    if archive.is_file():
        return _archive_members(str(archive), archive.stat().st_mtime_ns)
    unpacked = folder / UNPACKED
    if unpacked.is_dir():
        return frozenset(f"{UNPACKED}/{p.name}" for p in unpacked.iterdir() if p.is_file())
    return frozenset()


@lru_cache(maxsize=8)
def _archive_members(path: str, mtime_ns: int) -> frozenset[str]:
    with tarfile.open(path, "r:gz") as archive:
        return frozenset(m.name for m in archive.getmembers() if m.isfile())


def _read_lines(folder: Path, member: str) -> list[str]:
    archive = folder / ARCHIVE
    try:
        if archive.is_file():
            with tarfile.open(archive, "r:gz") as tar:
                handle = tar.extractfile(member)
                if handle is None:
                    raise DataError(f"{archive}: no member {member}")
                data = handle.read()
        else:
            data = (folder / member).read_bytes()
    except (OSError, KeyError, tarfile.TarError) as error:
        raise DataError(f"{folder}: cannot read e-SNLI member {member} ({error})") from None
    return data.decode("ascii", errors="strict").splitlines()
