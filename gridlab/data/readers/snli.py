"""Reader for SNLI 1.0 (Bowman et al. 2015) in its JSON-lines release files `snli_1.0_{train,dev,test}.jsonl`.

Format: one JSON object per line with, among others, `gold_label`, `sentence1` (premise), `sentence2` (hypothesis)
and `pairID`. `gold_label` is `-` where the five annotators reached no majority.

Choices:
- Rows with gold label `-` are dropped, the convention of the SNLI paper and of every model trained on it; that leaves
  9,842 dev and 9,824 test pairs.
- text = `sentence1`, query = `sentence2`, label = `gold_label` as written. Both sentences are stripped: a few
  hypotheses (4 in dev, 8 in test) start with a stray space that is no part of the sentence.
- Each split is read from `snli_1.0_<split>.jsonl.gz` (as stored here) or the release's uncompressed
  `snli_1.0_<split>.jsonl`. The train file is not in our copy (see SOURCE.md), but a user who has it gets it read the
  same way; its checksum is unknown here, so `SNLI_FILES` lists only dev and test.
- Lines are streamed rather than read whole, because the uncompressed train file is about 470 MB.
"""

from __future__ import annotations

import json
from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.readers.textfiles import numbered_lines
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError

SNLI_FILES = (
    SourceFile(
        path="snli_1.0_dev.jsonl.gz",
        sha256="e5cfcc71b4846c40e06bae364a13312adeb434884e9a7cedf67037bdd212e39d",
        size=1004730,
        names=("snli_1.0_dev.jsonl",),
    ),
    SourceFile(
        path="snli_1.0_test.jsonl.gz",
        sha256="ef5f0721f18e6aafd80f0d67aa2ef9784277aa08ba6a582c03fc381367282ac5",
        size=1005357,
        names=("snli_1.0_test.jsonl",),
    ),
)

# The label SNLI gives a pair whose annotators reached no majority.
NO_GOLD_LABEL = "-"


class SnliReader:
    """SNLI's three official splits, one release file each."""

    def splits_present(self, folder: Path) -> dict[str, bool]:
        return {split: snli_file(folder, split) is not None for split in SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        path = snli_file(folder, split)
        if path is None:
            raise DataError(f"{folder / f'snli_1.0_{split}.jsonl.gz'}: not found (nor snli_1.0_{split}.jsonl)")
        return parse_snli(path)


def snli_file(folder: Path, split: str) -> Path | None:
    """The release file of `split` under `folder`, compressed or not; None if neither is there."""
    for name in (f"snli_1.0_{split}.jsonl.gz", f"snli_1.0_{split}.jsonl"):
        if (folder / name).is_file():
            return folder / name
    return None


def parse_snli(path: Path) -> list[RawExample]:
    """The pairs of one SNLI JSON-lines file that have a gold label, in file order."""
    examples: list[RawExample] = []
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}: line {number}: not JSON: {error.msg}") from error
        if not isinstance(row, dict):
            raise DataError(f"{path}: line {number}: not a JSON object")
        try:
            gold_label = row["gold_label"]
            premise, hypothesis, pair_id = row["sentence1"], row["sentence2"], row["pairID"]
        except KeyError as error:
            raise DataError(f"{path}: line {number}: not an SNLI pair: no field {error}") from error
        if gold_label == NO_GOLD_LABEL:
            continue
        examples.append(RawExample(text=premise.strip(), label=gold_label, query=hypothesis.strip(), source_id=pair_id))
    return examples
