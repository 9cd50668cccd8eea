"""Reader for the bAbI QA tasks v1.2 (Weston et al. 2015), English, in the release's own text format.

Format: one line per sentence, `ID text`; a question line is `ID question<TAB>answer<TAB>supporting IDs`. IDs restart
at 1 where a new story begins. The answer is one word, or a comma list for tasks 8 and 19 (kept as written).

Choices:
- The release's validation folders (`en-valid-10k/` for size "10k", `en-valid/` for "1k") give all three splits as
  files `qaN_{train,valid,test}.txt`, so dev is the release's own 90/10 cut of train and no split is carved here.
- One example per question. Its text is the story as far as the question: every sentence of the same story that
  precedes it, joined with single spaces. Earlier question lines are not sentences of the story, so they are left out.
- The files are read straight out of `tasks_1-20_v1-2_en.tar.gz` (our English-only packing) or the official
  `tasks_1-20_v1-2.tar.gz` (same member names); an unpacked `tasks_1-20_v1-2/` folder works too. The archive is
  tried first because it is the file the checksums describe.
- `source_id` is `<path inside the release>:<line>`, the same whichever of those three forms was read.
"""

from __future__ import annotations

import functools
import re
import tarfile
import zlib
from pathlib import Path
from typing import Literal

from gridlab.data.examples import RawExample
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError

BABI_FILES = (
    SourceFile(
        path="tasks_1-20_v1-2_en.tar.gz",
        sha256="b93149728d9076c3c63365485ca2e90bb1e55fa5e08350d6cc955936c603d4bf",
        size=6045842,
        names=("tasks_1-20_v1-2.tar.gz",),
    ),
)

# The archive's top-level folder, which is also what unpacking it creates.
_RELEASE_ROOT = "tasks_1-20_v1-2"
_SIZE_FOLDERS = {"10k": "en-valid-10k", "1k": "en-valid"}
# The release calls its development split "valid".
_FILE_SPLITS = {"train": "train", "dev": "valid", "test": "test"}
_LINE = re.compile(r"(\d+) (.*)")


class BabiReader:
    """One bAbI task at one training-set size, read from the official validation split folders."""

    def __init__(self, task: int, size: Literal["10k", "1k"]) -> None:
        if not 1 <= task <= 20:
            raise ValueError(f"bAbI task must be 1..20, not {task}")
        if size not in _SIZE_FOLDERS:
            raise ValueError(f"bAbI size must be '10k' or '1k', not {size!r}")
        self.task = task
        self.size = size

    def member(self, split: str) -> str:
        """Where `split` lies inside the release (archive member name, or path under the unpacked folder)."""
        return f"{_RELEASE_ROOT}/{_SIZE_FOLDERS[self.size]}/qa{self.task}_{_FILE_SPLITS[split]}.txt"

    def splits_present(self, folder: Path) -> dict[str, bool]:
        archive = BABI_FILES[0].locate(folder)
        if archive is not None:
            names = _archive_names(str(archive), archive.stat().st_mtime_ns)
            return {split: self.member(split) in names for split in SPLITS}
        return {split: (folder / self.member(split)).is_file() for split in SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        member = self.member(split)
        archive = BABI_FILES[0].locate(folder)
        if archive is not None:
            origin = f"{archive} (member {member})"
            data = _read_member(archive, member)
        else:
            path = folder / member
            origin = str(path)
            if not path.is_file():
                raise DataError(
                    f"{path}: not found, and no {BABI_FILES[0].path} or {BABI_FILES[0].names[0]} in {folder} "
                    f"(bAbI task {self.task}, size {self.size}, split {split})"
                )
            data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataError(f"{origin}: not UTF-8 text: {error}") from error
        return parse_babi(text, member, origin)


def parse_babi(text: str, member: str, origin: str) -> list[RawExample]:
    """Every question of one bAbI file, with the story sentences before it. `origin` names the file in errors."""
    examples: list[RawExample] = []
    story: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise DataError(
                f"{origin}: line {number}: expected 'ID text' or 'ID question<TAB>answer', got {line[:80]!r}"
            )
        if match[1] == "1":
            story = []
        body = match[2]
        if "\t" not in body:
            story.append(body.strip())
            continue
        question, answer = body.split("\t")[:2]
        examples.append(
            RawExample(
                text=" ".join(story),
                label=answer.strip(),
                query=question.strip(),
                source_id=f"{member}:{number}",
            )
        )
    return examples


@functools.lru_cache(maxsize=8)
def _archive_names(path: str, mtime_ns: int) -> frozenset[str]:
    """Member names of a tar archive. `mtime_ns` is only a cache key: a replaced archive is listed afresh.

    Cached because one archive serves 20 tasks × 2 sizes, and listing it decompresses all of it.
    """
    try:
        with tarfile.open(path, "r:*") as tar:
            return frozenset(tar.getnames())
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise DataError(f"{path}: unreadable tar archive: {error}") from error


def _read_member(archive: Path, member: str) -> bytes:
    try:
        with tarfile.open(archive, "r:*") as tar:
            # Iterating stops decompressing at the member; getmember() would first scan the whole archive.
            for info in tar:
                if info.name == member:
                    handle = tar.extractfile(info)
                    if handle is not None:  # None where the name is a directory
                        return handle.read()
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise DataError(f"{archive}: unreadable tar archive: {error}") from error
    raise DataError(f"{archive}: has no member {member}")
