"""Which gridlab a process runs: its package folder and a digest of its source, so a Ray worker can refuse to
train or analyse with code other than the driver's.

    >>> driver = Codebase.here()                # once, in the driver
    >>> driver.mismatch()                       # in a trial or an actor: None, or the one-line reason

Ray puts the driver's working folder first on a worker's `sys.path`: a launch started from a folder that holds
another `gridlab/` (a checkout, a backup copy) trains and analyses with that code while the driver reports and
publishes with its own, and nothing says so. The two ways out are to ship the driver's package to the workers
(`runtime_env={"py_modules": [gridlab]}`) or to check, and gridlab checks. Shipping uploads the package on every
launch and starts the trials and actors in a runtime environment of their own (a fresh pool of workers), and it
overrides, without a word, the gridlab that a cluster's image installed with the dependencies it was built
against. A check changes nothing that runs, costs one hash of the package's source per worker process, and
names both places, so the user fixes the cause: starts from another folder, or installs the same gridlab on
every node. The driver's identity reaches a trial as a parameter of the trainable (`tune.with_parameters`),
not in its config: the config is saved with the experiment, and a launch resumed after an upgrade must
compare with the code that runs now.
"""

from __future__ import annotations

import functools
import hashlib
import socket
from dataclasses import dataclass
from pathlib import Path

import gridlab


class ForeignCode(Exception):
    """Raised in a worker that imported another gridlab than the driver's; its message names both."""


@dataclass(frozen=True)
class Codebase:
    location: str  # "host:/path/to/gridlab", the imported package's folder
    digest: str  # sha256 over its .py files' relative paths and contents

    @staticmethod
    def here() -> Codebase:
        """The gridlab this process imported (hashed once per process: its modules are loaded by then)."""
        return _here()

    def mismatch(self) -> str | None:
        """None when this process imported the same gridlab as `self` (the driver's); else why not, in one line."""
        here = Codebase.here()
        if here.digest == self.digest:
            return None
        return (
            f"this worker imported gridlab from {here.location} (source {here.digest[:12]}), not the driver's "
            f"{self.location} (source {self.digest[:12]}): start the launch from a folder that holds no other "
            "gridlab/, and install the same gridlab on every node"
        )


@functools.lru_cache(maxsize=1)
def _here() -> Codebase:
    package = Path(gridlab.__file__).resolve().parent
    return Codebase(f"{socket.gethostname()}:{package}", source_digest(package))


def source_digest(package: Path) -> str:
    """sha256 of every .py file under `package`, each as its relative path and its bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        data = path.read_bytes()
        digest.update(f"{path.relative_to(package).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
