"""What `gridlab data list` shows: per dataset id, which official splits are there and how many rows.

Counting rows means reading the files (IMDB's archive takes seconds), so counts are remembered in
`<cache_dir>/rows.json` under a key made of the files' checksums: a changed file is counted again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from gridlab.data.catalog import DATASETS
from gridlab.data.files import sha256_file
from gridlab.data.presence import splits_status
from gridlab.data.spec import DatasetSpec
from gridlab.store.atomic import write_json
from gridlab.store.layout import CacheFiles, Results


@dataclass(frozen=True)
class DatasetStatus:
    spec: DatasetSpec
    present: tuple[str, ...]
    missing: tuple[str, ...]
    rows: dict[str, int]

    @property
    def state(self) -> str:
        if not self.present:
            return "missing"
        return "partial" if self.missing else "present"


def default_cache_dir() -> Path:
    """$GRIDLAB_CACHE, else ./runs/cache (the default results_dir's cache)."""
    return Path(os.environ.get("GRIDLAB_CACHE") or Results(Path("runs")).cache)


def inventory(data_dir: Path, cache_dir: Path, ids: list[str] | None = None) -> list[DatasetStatus]:
    known = _load_counts(cache_dir)
    statuses = [_status(DATASETS[i], data_dir, known) for i in (ids or list(DATASETS))]
    _save_counts(cache_dir, known)
    return statuses


def _status(spec: DatasetSpec, data_dir: Path, known: dict[str, dict[str, int]]) -> DatasetStatus:
    status = splits_status(spec, data_dir)
    present = tuple(s for s in spec.official_splits if status.get(s))
    missing = tuple(s for s in spec.official_splits if not status.get(s))
    if not present:
        return DatasetStatus(spec, present, missing, {})
    key = _counts_key(spec, data_dir / spec.folder)
    if key not in known:
        keep = spec.keep or (lambda _: True)
        folder = data_dir / spec.folder
        known[key] = {s: sum(1 for e in spec.reader.read(folder, s) if keep(e)) for s in present}
    return DatasetStatus(spec, present, missing, known[key])


def _counts_key(spec: DatasetSpec, folder: Path) -> str:
    files = sorted(p for p in folder.iterdir() if p.is_file()) if spec.files else []
    digests = [(p.name, sha256_file(p)) for p in files]
    return spec.id + ":" + hashlib.sha256(json.dumps(digests).encode()).hexdigest()[:16]


def _load_counts(cache_dir: Path) -> dict[str, dict[str, int]]:
    try:
        return json.loads((cache_dir / CacheFiles.ROW_COUNTS).read_text())
    except (OSError, ValueError):
        return {}


def _save_counts(cache_dir: Path, counts: dict[str, dict[str, int]]) -> None:
    """Best effort and atomic: a read-only or racing cache only costs a recount next time."""
    try:
        write_json(cache_dir / CacheFiles.ROW_COUNTS, counts, indent=None)
    except OSError:
        return  # counting again next time is the whole cost
