"""Reader for 20 Newsgroups: the original `20news-19997` messages, split by the "by-date" file list.

Format: `20news-19997.tar.gz` holds one Usenet message per file, `20_newsgroups/<newsgroup>/<id>` (full
headers, a blank line, the body), mostly ASCII with some Latin-1 bytes, so it is decoded as latin-1 (which
cannot fail) as scikit-learn does. `20news-bydate_split_ids.tsv` (header `split	newsgroup	file_id`) names
the messages of the official by-date train/test split (11,314 / 7,532); the 19997 collection itself has no
split, and it also holds cross-posted duplicates that by-date dropped, so only listed messages are read.
The label is the newsgroup name.

Every message is cleaned as scikit-learn's `fetch_20newsgroups(remove=("headers", "footers", "quotes"))`
does, in the same order (headers, then footer, then quotes), because Jain & Wallace's 20News numbers were
made on that text. That also makes the 19997 headers harmless: they differ from the by-date files' headers
but are removed whole. The footer rule is scikit-learn's, quirks included: everything from the last line
that is blank or made only of dashes is cut, which removes a signature but, in a message without one, its
last paragraph. Messages left empty are kept; dropping them is a preprocessing choice, not the reader's.

Messages come back sorted by member name (newsgroup, then file id as text).
"""

from __future__ import annotations

import tarfile
import zlib
from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.spec import SourceFile
from gridlab.errors import DataError

OFFICIAL_SPLITS = ("train", "test")
ARCHIVE = "20news-19997.tar.gz"
SPLIT_IDS = "20news-bydate_split_ids.tsv"
NEWSGROUP_NAMES = (
    "alt.atheism",
    "comp.graphics",
    "comp.os.ms-windows.misc",
    "comp.sys.ibm.pc.hardware",
    "comp.sys.mac.hardware",
    "comp.windows.x",
    "misc.forsale",
    "rec.autos",
    "rec.motorcycles",
    "rec.sport.baseball",
    "rec.sport.hockey",
    "sci.crypt",
    "sci.electronics",
    "sci.med",
    "sci.space",
    "soc.religion.christian",
    "talk.politics.guns",
    "talk.politics.mideast",
    "talk.politics.misc",
    "talk.religion.misc",
)

# Checksums as recorded in shared/data/20newsgroups/SOURCE.md.
NEWSGROUPS_FILES = (
    SourceFile(ARCHIVE, "dc5e0b4411d7bad1f407db84f719554a13e7be89197c23f181667fa2f2d6d3fa", 17007917),
    SourceFile(SPLIT_IDS, "a431f6cc4022dbe8ca70d88967a05a17ea12d5f0865597df357ec2cf83483b0f", 534605),
)

_SPLIT_IDS_HEADER = ["split", "newsgroup", "file_id"]
_MEMBER_PREFIX = "20_newsgroups"
# A line is quoted text, or introduces it, if it starts with a quote mark or an attribution, or contains an
# attribution verb ("John Doe writes:"); the same tests scikit-learn makes.
_QUOTE_PREFIXES = (">", "|", "In article", "Quoted from")
_QUOTE_MARKERS = ("writes:", "writes in", "wrote:", "says:", "said:")


class NewsgroupsReader:
    """20 Newsgroups messages of the given groups (None: all 20), labelled by newsgroup name."""

    def __init__(self, groups: tuple[str, ...] | None):
        if groups is not None and not groups:
            raise ValueError("groups must name at least one newsgroup, or be None for all 20")
        unknown = sorted(set(groups or ()) - set(NEWSGROUP_NAMES))
        if unknown:
            raise ValueError(f"unknown newsgroups {unknown}; the 20 are {NEWSGROUP_NAMES}")
        self.groups = NEWSGROUP_NAMES if groups is None else tuple(groups)

    def splits_present(self, folder: Path) -> dict[str, bool]:
        present = (Path(folder) / ARCHIVE).is_file() and (Path(folder) / SPLIT_IDS).is_file()
        return {split: present for split in OFFICIAL_SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        if split not in OFFICIAL_SPLITS:
            raise ValueError(f"20 Newsgroups has no split {split!r}; its splits are {OFFICIAL_SPLITS}")
        folder = Path(folder)
        for name in (ARCHIVE, SPLIT_IDS):
            if not (folder / name).is_file():
                raise DataError(f"{folder / name}: file not found (20 Newsgroups)")
        wanted = _split_members(folder / SPLIT_IDS, split, frozenset(self.groups))
        messages = _read_members(folder / ARCHIVE, wanted)
        missing = sorted(wanted - messages.keys())
        if missing:
            raise DataError(
                f"{folder / ARCHIVE}: {len(missing)} messages listed in {SPLIT_IDS} are not in it (first: {missing[0]})"
            )
        return [
            RawExample(text=strip_message(messages[name].decode("latin-1")), label=name.split("/")[1], source_id=name)
            for name in sorted(messages)
        ]


def strip_message(text: str) -> str:
    """A message without headers, signature footer and quoted replies (scikit-learn's order and rules)."""
    return _strip_quotes(_strip_footer(_strip_headers(text)))


def _strip_headers(text: str) -> str:
    # Headers end at the first blank line; a message without one is all header.
    return text.partition("\n\n")[2]


def _strip_footer(text: str) -> str:
    lines = text.strip().split("\n")
    # The last blank or dashes-only line sets off the signature; one on the first line cuts nothing.
    for index in range(len(lines) - 1, 0, -1):
        if not lines[index].strip().strip("-"):
            return "\n".join(lines[:index])
    return text


def _strip_quotes(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not _is_quote_line(line))


def _is_quote_line(line: str) -> bool:
    return line.startswith(_QUOTE_PREFIXES) or any(marker in line for marker in _QUOTE_MARKERS)


def _split_members(path: Path, split: str, groups: frozenset[str]) -> frozenset[str]:
    """Archive member names of `split`'s messages in `groups`, from the by-date id list."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: cannot read ({error})") from error
    if not lines or lines[0].split("\t") != _SPLIT_IDS_HEADER:
        raise DataError(f"{path}: expected the header line 'split<TAB>newsgroup<TAB>file_id'")
    members: set[str] = set()
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 3 or fields[0] not in OFFICIAL_SPLITS or not all(fields):
            raise DataError(f"{path}:{number}: expected 'train|test<TAB>newsgroup<TAB>file_id', got {line[:80]!r}")
        row_split, group, file_id = fields
        if row_split == split and group in groups:
            members.add(f"{_MEMBER_PREFIX}/{group}/{file_id}")
    return frozenset(members)


def _read_members(path: Path, wanted: frozenset[str]) -> dict[str, bytes]:
    messages: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r|gz") as archive:
            for member in archive:
                if member.name in wanted and member.isfile():
                    content = archive.extractfile(member)
                    assert content is not None  # regular files always have content
                    messages[member.name] = content.read()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise DataError(f"{path}: not a readable .tar.gz archive ({error})") from error
    return messages
