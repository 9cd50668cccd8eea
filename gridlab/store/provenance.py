"""Where a result came from: the gridlab commit it was made with, read from the checkout that holds this
package, and the content hash of the grid file that asked for it. The trainer writes the commit into each
trained cell's metrics (`gridlab_commit`); reports and the studies' records carry both beside every number, so
a reader can trace a number to the code and the grid file that measured it.

    >>> gridlab_commit()          # 'git 61f4c0f2a9...' or 'git 61f4c0f2a9...-dirty'; 'gridlab 0.1.0' from a wheel
    >>> grid_hash(Path("grids/jain_wallace.yaml"))      # 'sha256:3f1c9a0b2d4e' (its bytes, not its name or date)

The commit is read, never guessed: `git rev-parse HEAD` of the checkout that holds this package, marked
`-dirty` when its tracked files differ from that commit; where gridlab is not a git checkout (an installed
wheel, a Ray job's working folder) it is the package version.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from gridlab import __version__

PACKAGE = Path(__file__).resolve().parents[1]
HASH_CHARS = 12  # hex digits kept: enough to tell two versions of one grid file apart


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


def grid_hash(path: Path) -> str:
    """'sha256:<first 12 hex digits>' of the file's bytes."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:HASH_CHARS]
