"""What gridlab knows about each dataset: its files, their checksums, its splits and its defaults.

A `DatasetSpec` is pure description; the reading itself is delegated to a `SourceReader` (one per source
format, in `gridlab.data.readers`), so two dataset ids over the same files (`sst` / `sst5`, `imdb` /
`imdb10`) share one reader and differ only in how labels are chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from gridlab.data.config import DataConfig
from gridlab.data.examples import RawExample
from gridlab.data.synthetic import SyntheticConfig

Task = Literal["single", "pair", "translation"]
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class SourceFile:
    """A file of a known public release: its path inside the dataset folder and its checksum.

    `names` lists the other names the same release file goes by (e.g. an uncompressed copy a user
    downloaded), tried in order when `path` is absent; their checksums are unknown, so they are
    reported as unverified rather than as corrupt, as is a file whose publisher gives no checksum.
    """

    path: str
    sha256: str | None  # None: the publisher gives none (`gridlab data fetch` records what it downloaded)
    size: int | None
    names: tuple[str, ...] = ()

    def locate(self, folder: Path) -> Path | None:
        for name in (self.path, *self.names):
            candidate = folder / name
            if candidate.is_file():
                return candidate
        return None


class SourceReader(Protocol):
    """Reads one source format. `split` is one of SPLITS."""

    def splits_present(self, folder: Path) -> dict[str, bool]:
        """Which official splits have their files under `folder` (cheap: no parsing)."""
        ...

    def read(self, folder: Path, split: str) -> list[RawExample]:
        """Every instance of an official split, in file order."""
        ...


@dataclass(frozen=True)
class Preprocessing:
    """Per-dataset defaults for the tokenised form (Jain & Wallace's settings where they give them)."""

    min_count: int = 1
    min_length: int = 1
    max_length: int | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset id as grids name it.

    official_splits: the splits the public release defines; a split outside it (typically `dev`) is
        carved from `train` with a fixed seed, as the papers did, and that is not "derived".
    expected_rows: raw rows per official split as counted in the release (SOURCE.md), before filters.
    configure: builds the reader from a resolved `DataConfig` where parameters change what is read.
    keep: a filter on raw labels (J&W's binary subsets of AG News and 20News); None keeps all.
    label_names: the readers' label strings in class-index order; None means "the sorted labels of
        train" (bAbI answers). They are what the files say ("0", "neg"): they decide how labels are read and
        are stored with prepared data and trained models, so they never change for the sake of a reader.
    class_names: what a person reads for each class, in the same order as `label_names` ("negative",
        "positive"); None where the labels are words already (bAbI answers) or mean nothing but their
        number (the generated task). Shown, never read back: renaming a class changes no cell id or cache.
    release: where the original public release comes from, in one phrase (`gridlab data fetch` says it when
        it has no mirror to fetch from; docs/datasets.md has a section per data folder).
    unfetchable: official splits whose release file gridlab knows no verified copy of (AG News's train
        split: only its test file is in the shared data), so `gridlab data fetch` cannot bring them.
    """

    id: str
    folder: str
    task: Task
    description: str
    reader: SourceReader
    files: tuple[SourceFile, ...]
    official_splits: tuple[str, ...]
    expected_rows: Mapping[str, int]
    label_names: tuple[str, ...] | None
    preprocessing: Preprocessing = field(default_factory=Preprocessing)
    keep: Callable[[RawExample], bool] | None = None
    has_rationales: bool = False
    configure: Callable[[DataConfig], SourceReader] | None = None
    unfetchable: tuple[str, ...] = ()
    class_names: tuple[str, ...] | None = None
    release: str = ""

    def __post_init__(self) -> None:
        if self.class_names is not None and len(self.class_names) != len(self.label_names or ()):
            raise ValueError(f"{self.id}: {len(self.class_names)} class names for labels {self.label_names}")

    def class_name(self, label: str) -> str:
        """The human-readable name of a label string as the readers give it (itself where there is none)."""
        if self.class_names is None or self.label_names is None or label not in self.label_names:
            return label
        return self.class_names[self.label_names.index(label)]

    def resolve(self, config: DataConfig) -> DataConfig:
        """A cell's `data:` section with this dataset's defaults filled in and the fields that do not apply to
        it set to None: what a cell id hashes, so that `babi_size` never changes the id of an `sst` cell."""
        defaults = self.preprocessing
        is_babi = self.folder == "babi"
        return config.model_copy(
            update={
                "min_count": config.min_count or defaults.min_count,
                "min_length": config.min_length or defaults.min_length,
                "max_length": config.max_length or defaults.max_length,
                "dev_fraction": (
                    config.dev_fraction if config.test_fraction or "dev" not in self.official_splits else None
                ),
                "babi_size": (config.babi_size or "10k") if is_babi else None,
                "babi_labels": config.babi_labels if is_babi else "answers",
                "synthetic": (config.synthetic or SyntheticConfig()) if self.id == "synthetic" else None,
                "drop_titles": config.drop_titles and self.folder == "ag_news",
                "carve_unit": config.carve_unit if self.task == "pair" and config.may_pool() else "instance",
                "vocabulary": config.vocabulary or "train",
            }
        )

    def reader_for(self, config: DataConfig) -> SourceReader:
        """The reader for a resolved data config (bAbI's size and the synthetic task depend on it)."""
        return self.configure(config) if self.configure else self.reader
