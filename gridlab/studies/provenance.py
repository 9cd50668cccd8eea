"""Where a measured number came from, recorded beside it so that a reader can trace it and a later
regeneration can tell whether it is still the grid's: the grid file's content hash and the gridlab commit that
trained its cells (`gridlab.store.provenance`; each trained cell records it in its metrics).

    >>> grid_hash(Path("grids/jain_wallace.yaml"))      # 'sha256:3f1c9a0b2d4e' (its bytes, not its name or date)
    >>> measured_with(inputs, gridlab_commit())         # the cells' training commits, else this checkout's
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from gridlab.report.inputs import ReportInputs

HASH_CHARS = 12  # hex digits kept: enough to tell two versions of one grid file apart


def grid_hash(path: Path) -> str:
    """'sha256:<first 12 hex digits>' of the file's bytes."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:HASH_CHARS]


def measured_with(inputs: ReportInputs, checkout: str) -> str:
    """The commits that trained the grid's cells here (space-separated, sorted), as their metrics record them;
    `checkout` (the commit writing the page) where no cell records one (cells trained before 2026-11-28)."""
    return " ".join(inputs.training_commits) or checkout
