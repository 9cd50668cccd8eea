"""Where a measured number came from, recorded beside it so that a reader can trace it and a later
regeneration can tell whether it is still the grid's: the grid file's content hash and the gridlab commit that
trained its cells (`gridlab.store.provenance`; each trained cell records it in its metrics).

    >>> grid_hash(Path("grids/jain_wallace.yaml"))      # 'sha256:3f1c9a0b2d4e' (its bytes, not its name or date)
    >>> inputs.cell_commits                             # {'3f1c9a0b2d4e': 'git 45d7ca9...'}: `record.Trace`
"""

from __future__ import annotations

import hashlib
from pathlib import Path

HASH_CHARS = 12  # hex digits kept: enough to tell two versions of one grid file apart


def grid_hash(path: Path) -> str:
    """'sha256:<first 12 hex digits>' of the file's bytes."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:HASH_CHARS]
