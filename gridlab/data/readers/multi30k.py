"""Reader for Multi30k Task 1 (Elliott et al. 2016), English → German, in its raw release files.

Format: per split, `<name>.en` and `<name>.de`, UTF-8, one untokenised cased sentence per line; line i of the two
files is one translation pair. The official repository stores them gzip'd (`<name>.{en,de}.gz`), as we do.

Choices:
- train = `train`, dev = `val`, test = `test_2016_flickr`: the standard Multi30k splits (torchtext's test2016).
  The WMT17 extra test sets are listed in `MULTI30K_FILES` for checksums but not read.
- text = English line, target = German line, label = "" (translation has no class).
- Lines are split on LF only, so a stray CR cannot add a line to one side and shift the alignment. Each line is
  stripped, since 40 German training lines end in a stray space that is no part of the sentence (no-break spaces
  inside a sentence, as in `Nummer 28`, are kept).
- The two sides must have the same number of lines; otherwise the pairs are misaligned and reading fails.
- `source_id` is `<name>:<line>`, the line of both files, whether compressed or not.
"""

from __future__ import annotations

from pathlib import Path

from gridlab.data.examples import RawExample
from gridlab.data.readers.textfiles import numbered_lines
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError


def _release_file(name: str, sha256: str, size: int) -> SourceFile:
    # Stored gzip'd; a user's uncompressed copy of the same file is accepted under its plain name.
    return SourceFile(path=f"{name}.gz", sha256=sha256, size=size, names=(name,))


MULTI30K_FILES = (
    _release_file("train.en", "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f", 568929),
    _release_file("train.de", "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6", 637044),
    _release_file("val.en", "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28", 21650),
    _release_file("val.de", "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a", 24681),
    _release_file("test_2016_flickr.en", "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9", 21077),
    _release_file("test_2016_flickr.de", "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8", 22890),
    _release_file("test_2017_flickr.en", "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074", 19138),
    _release_file("test_2017_flickr.de", "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee", 21471),
    _release_file("test_2017_mscoco.en", "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58", 8844),
    _release_file("test_2017_mscoco.de", "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338", 10230),
)

_SPLIT_NAMES = {"train": "train", "dev": "val", "test": "test_2016_flickr"}
_FILES_BY_NAME = {file.names[0]: file for file in MULTI30K_FILES}


class Multi30kReader:
    """English → German pairs of Multi30k's three standard splits."""

    def splits_present(self, folder: Path) -> dict[str, bool]:
        return {split: all(_locate(folder, split, side) for side in ("en", "de")) for split in SPLITS}

    def read(self, folder: Path, split: str) -> list[RawExample]:
        name = _SPLIT_NAMES[split]
        english_path, german_path = (_require(folder, split, side) for side in ("en", "de"))
        english, german = _read_lines(english_path), _read_lines(german_path)
        if len(english) != len(german):
            raise DataError(
                f"{english_path} has {len(english)} lines but {german_path} has {len(german)}: "
                "the two sides of a Multi30k split must be line-aligned"
            )
        return [
            RawExample(text=source, label="", target=target, source_id=f"{name}:{number}")
            for number, (source, target) in enumerate(zip(english, german), start=1)
        ]


def _locate(folder: Path, split: str, side: str) -> Path | None:
    return _FILES_BY_NAME[f"{_SPLIT_NAMES[split]}.{side}"].locate(folder)


def _require(folder: Path, split: str, side: str) -> Path:
    path = _locate(folder, split, side)
    if path is None:
        name = f"{_SPLIT_NAMES[split]}.{side}"
        raise DataError(f"{folder / (name + '.gz')}: not found (nor {name})")
    return path


def _read_lines(path: Path) -> list[str]:
    """The stripped lines of a UTF-8 text file, gunzipped if it ends in `.gz`."""
    return [line.strip() for _, line in numbered_lines(path)]
