"""Where a measured number came from, recorded beside it so that a reader can trace it and a later
regeneration can tell whether it is still the grid's: the grid file's content hash and the gridlab commit.

    >>> grid_hash(Path("grids/jain_wallace.yaml"))      # 'sha256:3f1c9a0b2d4e' (its bytes, not its name or date)
    >>> gridlab_commit()                                # 'git 61f4c0f2a9...' or 'git 61f4c0f2a9...-dirty'

The commit is read, never guessed: `git rev-parse HEAD` of the checkout that holds this package, marked
`-dirty` when its tracked files differ from that commit; where gridlab is not a git checkout (an installed
wheel) it is the package version ('gridlab 0.1.0').
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from gridlab import __version__

PACKAGE = Path(__file__).resolve().parents[1]
HASH_CHARS = 12  # hex digits kept: enough to tell two versions of one grid file apart


def grid_hash(path: Path) -> str:
    """'sha256:<first 12 hex digits>' of the file's bytes."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:HASH_CHARS]


def gridlab_commit() -> str:
    """'git <40 hex>' (with '-dirty' for uncommitted changes to tracked files), else 'gridlab <version>'."""
    head = _git("rev-parse", "HEAD")
    if head is None:
        return f"gridlab {__version__}"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return f"git {head}{'-dirty' if dirty else ''}"


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(PACKAGE), *args], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
