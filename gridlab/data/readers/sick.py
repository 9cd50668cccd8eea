"""Reader for SICK (Marelli et al. 2014) in its full release file `SICK.txt`.

Format: tab-separated text with a header row and CRLF line endings; one sentence pair per row, with the gold 3-way
`entailment_label` and the SemEval-2014 Task 1 split of the pair in `SemEval_set`.

Choices:
- The splits are the official SemEval-2014 ones from `SemEval_set`: TRAIN → train, TRIAL → dev, TEST → test.
- premise = `sentence_A`, hypothesis (query) = `sentence_B`, label = `entailment_label` as written. Both sentences
  are stripped: 102 pairs carry a stray leading or trailing space that is no part of the sentence.
- Columns are found by header name rather than position, so a reordered copy still reads.
- `SICK.txt.gz` (as stored here) or the release's uncompressed `SICK.txt` are read alike; lines are split on LF only
  and the CR of CRLF removed, so nothing inside a field can end a row.
"""

from __future__ import annotations

from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.readers.textfiles import numbered_lines
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError

SICK_FILES = (
    SourceFile(
        path="SICK.txt.gz",
        sha256="d9430e97fac213806c17d227038ab774c211f2be8359f098d2b0a2956f4eabcc",
        size=213192,
        names=("SICK.txt",),
    ),
)

_SPLIT_OF_SET = {"TRAIN": "train", "TRIAL": "dev", "TEST": "test"}
_COLUMNS = ("pair_ID", "sentence_A", "sentence_B", "entailment_label", "SemEval_set")


class SickReader:
    """All of SICK's splits come from its one release file."""

    def splits_present(self, folder: Path) -> dict[str, bool]:
        present = SICK_FILES[0].locate(folder) is not None
        return {split: present for split in SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        path = SICK_FILES[0].locate(folder)
        if path is None:
            raise DataError(f"{folder / SICK_FILES[0].path}: not found (nor {SICK_FILES[0].names[0]})")
        return [example for pair_split, example in parse_sick(path) if pair_split == split]


def parse_sick(path: Path) -> list[tuple[str, RawExample]]:
    """Every pair of a SICK release file, with its canonical split name, in file order."""
    lines = numbered_lines(path)
    first = next(lines, None)
    if first is None:
        raise DataError(f"{path}: empty file, expected SICK's tab-separated header")
    header = first[1].rstrip("\r\n").split("\t")
    missing = [column for column in _COLUMNS if column not in header]
    if missing:
        raise DataError(f"{path}: not a SICK release file: header lacks {', '.join(missing)}")
    index = {column: header.index(column) for column in _COLUMNS}
    pairs: list[tuple[str, RawExample]] = []
    for number, line in lines:
        row = line.rstrip("\r\n")
        if not row:
            continue
        fields = row.split("\t")
        if len(fields) != len(header):
            raise DataError(f"{path}: line {number}: {len(fields)} tab-separated fields, the header has {len(header)}")
        semeval_set = fields[index["SemEval_set"]]
        if semeval_set not in _SPLIT_OF_SET:
            raise DataError(f"{path}: line {number}: SemEval_set {semeval_set!r} is not TRAIN, TRIAL or TEST")
        example = RawExample(
            text=fields[index["sentence_A"]].strip(),
            label=fields[index["entailment_label"]],
            query=fields[index["sentence_B"]].strip(),
            source_id=fields[index["pair_ID"]],
        )
        pairs.append((_SPLIT_OF_SET[semeval_set], example))
    return pairs
