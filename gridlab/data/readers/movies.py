"""Reader for the movie-review annotator rationales of Zaidan, Eisner & Piatko (2007), in their original tagged files.

Format: `zaidan_movie_review_rationales.tar.gz` holds `movies/withRats_{pos,neg}/` (and the untagged copies in
`movies/noRats_*`). Each file is one review on one line, lower-cased and tokenised as in polarity v2.0. In
`withRats_*`, the annotator's rationales are inline tags around tokens: `<POS> … </POS>` in positive reviews,
`<NEG> … </NEG>` in negative ones. The 3-digit number in a file name starts with the cross-validation fold (0–9).

Choices:
- Only `withRats_*` is read: it has the tagged files for folds 0–8 and the plain files of fold 9, so it holds every
  review exactly once, with its rationales where there are any.
- Splits by fold: train = folds 0–7 (1,600 reviews), test = fold 8 (200, all tagged), dev = fold 9 (200, untagged).
  Fold 8 rather than the untagged fold 9 is the test split so that rationale analyses run on held-out reviews.
- text = the review with the tags removed and whitespace collapsed to single spaces; rationale = one (start, end)
  character span of that text per tag pair, computed while removing the tags, so `text[start:end]` is exactly the
  tagged words. The archive is read in place with `tarfile`, in archive order (neg before pos, as packed).
"""

from __future__ import annotations

import re
import tarfile
import zlib
from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError

MOVIES_FILES = (
    SourceFile(
        path="zaidan_movie_review_rationales.tar.gz",
        sha256="54e8c24df8f01afcb556a09620a3b3f8b4cc209aab95e3916d99690138c39494",
        size=6175864,
    ),
)

SPLIT_FOLDS = {"train": frozenset(range(8)), "dev": frozenset({9}), "test": frozenset({8})}
_MEMBER = re.compile(r"movies/withRats_(pos|neg)/(?:pos|neg)R?_(\d)\d\d\.txt")
_TAG = re.compile(r"<(/?)(POS|NEG)>")

Span = tuple[int, int]


class MovieRationalesReader:
    """The 2,000 polarity v2.0 reviews with Zaidan et al.'s rationales, split by cross-validation fold."""

    def splits_present(self, folder: Path) -> dict[str, bool]:
        present = MOVIES_FILES[0].locate(folder) is not None
        return {split: present for split in SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        archive = MOVIES_FILES[0].locate(folder)
        if archive is None:
            raise DataError(f"{folder / MOVIES_FILES[0].path}: not found")
        folds = SPLIT_FOLDS[split]
        examples: list[RawExample] = []
        try:
            with tarfile.open(archive, "r:*") as tar:
                for info in tar:
                    match = _MEMBER.fullmatch(info.name)
                    if match is None or int(match[2]) not in folds:
                        continue
                    handle = tar.extractfile(info)
                    if handle is None:
                        raise DataError(f"{archive}: {info.name} is not a file")
                    where = f"{archive} (member {info.name})"
                    examples.append(_review(handle.read(), label=match[1], where=where, source_id=info.name))
        except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
            raise DataError(f"{archive}: unreadable tar archive: {error}") from error
        if not examples:
            raise DataError(f"{archive}: no movies/withRats_{{pos,neg}}/ reviews of folds {sorted(folds)}")
        return examples


def _review(data: bytes, label: str, where: str, source_id: str) -> RawExample:
    try:
        tagged = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(f"{where}: not UTF-8 text: {error}") from error
    text, rationale = strip_rationale_tags(tagged, where)
    return RawExample(text=text, label=label, rationale=rationale, source_id=source_id)


def strip_rationale_tags(tagged: str, where: str) -> tuple[str, tuple[Span, ...]]:
    """The text without `<POS>`/`<NEG>` tags, whitespace collapsed, and the character span of each tagged stretch.

    `where` names the file in errors: tags must pair up, not nest, and enclose at least one word.
    """
    words: list[str] = []
    length = 0  # len(" ".join(words)), kept as words are added
    spans: list[Span] = []
    opened: tuple[str, int, int] | None = None  # (tag name, start offset, words before it)
    # Padding the tags with spaces makes each one a token even where it touches a word.
    for token in _TAG.sub(r" \g<0> ", tagged).split():
        tag = _TAG.fullmatch(token)
        if tag is None:
            length += len(token) + (1 if words else 0)
            words.append(token)
            continue
        closing, name = tag[1] == "/", tag[2]
        if not closing:
            if opened is not None:
                raise DataError(f"{where}: <{name}> opened inside <{opened[0]}>")
            # The next word starts after the separating space, if any word precedes it.
            opened = (name, length + (1 if words else 0), len(words))
        elif opened is None or opened[0] != name:
            raise DataError(f"{where}: </{name}> closes no open <{name}>")
        elif len(words) == opened[2]:
            raise DataError(f"{where}: <{name}> encloses no words")
        else:
            spans.append((opened[1], length))
            opened = None
    if opened is not None:
        raise DataError(f"{where}: <{opened[0]}> is never closed")
    return " ".join(words), tuple(spans)
