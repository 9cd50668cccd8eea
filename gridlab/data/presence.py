"""Which splits of a dataset are under the data directory, and whether a grid may use what is there.

A dataset with no files is missing (the error names `gridlab data fetch`); one with some official splits
absent is partial, and is refused unless the grid opts in to derived splits, so results on carved splits
can never pass for results on the official ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gridlab.data.config import DataConfig
from gridlab.data.files import sha256_file
from gridlab.data.spec import DatasetSpec, SourceReader
from gridlab.errors import DataError, DatasetMissingError


@dataclass(frozen=True)
class Presence:
    spec: DatasetSpec
    folder: Path
    present_splits: tuple[str, ...]
    missing_splits: tuple[str, ...]
    derived: bool  # the splits will be carved from the pooled present ones

    def file_digests(self) -> dict[str, str]:
        """What the cache is keyed on: sha256 of every file at the folder's top level, and the size of
        every file below it (unpacked archives can hold tens of thousands of files)."""
        if not self.spec.files:
            return {}
        digests = {}
        for path in sorted(self.folder.rglob("*")):
            if path.is_file() and path.name != "SOURCE.md":
                relative = str(path.relative_to(self.folder))
                digests[relative] = sha256_file(path) if path.parent == self.folder else str(path.stat().st_size)
        return digests


def splits_status(spec: DatasetSpec, data_dir: Path, reader: SourceReader | None = None) -> dict[str, bool]:
    """Official split -> are its files there (without parsing them)."""
    folder = data_dir / spec.folder
    if spec.files and not folder.is_dir():
        return {split: False for split in spec.official_splits}
    return (reader or spec.reader).splits_present(folder)


def check_presence(spec: DatasetSpec, data_dir: Path, config: DataConfig) -> Presence:
    """The splits a resolved data config can use, or a clear error saying why it cannot."""
    folder = data_dir / spec.folder
    status = splits_status(spec, data_dir, spec.reader_for(config))
    present = tuple(s for s in spec.official_splits if status.get(s))
    missing = tuple(s for s in spec.official_splits if not status.get(s))
    if not present:
        raise DatasetMissingError(spec.id, str(data_dir), [f"{spec.folder}/ ({', '.join(missing)})"])
    if missing and not config.derive_splits:
        derive = f"set `data: {{derive_splits: true}}` to carve splits from {'/'.join(present)}"
        if set(missing) & set(spec.unfetchable):  # `gridlab data fetch` cannot bring these: do not send them there
            remedy = (
                f"gridlab knows no verified copy of its {'/'.join(missing)} file to fetch: put the release's file "
                f"in {folder} yourself (`gridlab data check` reports it unverified), or {derive}"
            )
        else:
            remedy = f"fetch the full release (`gridlab data fetch {spec.id}`) or {derive}"
        raise DataError(f"dataset '{spec.id}' under {folder} is partial: no {'/'.join(missing)} split; {remedy}")
    return Presence(spec, folder, present, missing, derived=bool(missing))
