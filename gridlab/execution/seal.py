"""Tune's saved state is code: `Tuner.restore` unpickles `tuner.pkl`, the trials in the newest
`experiment_state-*.json`, the searcher's `basic-variant-state-*.json` and any `callback-states-*.pkl`, and the
fit that follows unpickles an errored trial's `<trial>/error.pkl` as it reports results. Whoever can write a
grid's `tune/` folder (or its bucket) could run code in the next relaunch's driver. So a launch seals what it
writes, and a relaunch restores only what carries its seal.

    >>> callbacks = [..., SealState()]                   # each save of Tune's state is sealed as it is made
    >>> verdict, detail = check(path, filesystem)        # before Tuner.restore: MATCHES, ABSENT or BROKEN

The seal (`TUNE_SEAL`, in the experiment's storage) is an HMAC-SHA256 of each state file's name and bytes,
keyed by a secret kept outside results_dir (`config.user.experiment_key`): a plain digest beside the files
would be rewritten by whoever rewrote them. Tune saves its state into a local staging folder, then uploads the
folder in the background; it asks its callbacks for their state between the two, and that is when
`SealState` seals the staged files and writes the seal straight to storage, whole. So every file an upload
can land is sealed before it lands, and a kill at any point leaves no file the seal does not know, with one
exception: the first save of a new fit, made before any trial exists and so before the callback learns
where the experiment lives. An experiment killed then has no seal (ABSENT): the launch does not restore it,
and trains its cells in a new experiment. Each file keeps its last `VERSIONS_KEPT` digests, for an upload
still landing as the next save begins.
"""

from __future__ import annotations

import enum
import hmac
import json
from hashlib import sha256
from pathlib import Path
from typing import Any

from pyarrow import fs as pafs
from ray import tune
from ray.air.constants import EXPR_ERROR_PICKLE_FILE

from gridlab.config.user import experiment_key
from gridlab.store.layout import LAUNCH_MARKER, TUNE_SEAL

VERSIONS_KEPT = 4
STATE_SUFFIXES = (".json", ".pkl")  # the top-level files Tune copies back to its staging folder on restore
TUNER_STATE = "tuner.pkl"  # written by `tune.Tuner(...)` straight to storage, before the fit
OVERRIDE = "--trust-results"


class Verdict(enum.Enum):
    MATCHES = "matches"  # every state file is one this user's gridlab sealed
    ABSENT = "absent"  # no seal made with this user's key: nothing says who wrote the files
    BROKEN = "broken"  # a seal of this user's, and a file it does not vouch for: changed since gridlab wrote it


def state_files(path: str, filesystem: pafs.FileSystem) -> dict[str, bytes]:
    """The experiment folder's state files and its trials' pickled errors, by path relative to the folder;
    gridlab's own files left out. (Checkpoints are not state: gridlab reads them with weights_only.)"""
    found = {}
    root = path.rstrip("/")
    for info in filesystem.get_file_info(pafs.FileSelector(root, allow_not_found=True, recursive=True)):
        name = info.path[len(root) + 1 :]
        if info.type == pafs.FileType.File and _is_state(name):
            with filesystem.open_input_stream(info.path) as stream:
                found[name] = stream.read()
    return found


def _is_state(name: str) -> bool:
    parts = name.split("/")
    if len(parts) == 1:
        return name.endswith(STATE_SUFFIXES) and name != LAUNCH_MARKER
    return len(parts) == 2 and parts[1] == EXPR_ERROR_PICKLE_FILE


def digests(files: dict[str, bytes], key: bytes) -> dict[str, str]:
    """name -> HMAC-SHA256 of the name and the bytes (a digest cannot be moved to another file)."""
    return {name: hmac.new(key, name.encode() + b"\0" + data, sha256).hexdigest() for name, data in files.items()}


def key_id(key: bytes) -> str:
    """Names the key in a seal without revealing it, so a seal made with another key reads as no seal."""
    return hmac.new(key, b"gridlab experiment key", sha256).hexdigest()[:16]


def remember(sealed: dict[str, list[str]], entries: dict[str, str]) -> None:
    """Add each file's newest digest to `sealed`, keeping its last `VERSIONS_KEPT` ones."""
    for name, digest in entries.items():
        versions = [d for d in sealed.get(name, []) if d != digest] + [digest]
        sealed[name] = versions[-VERSIONS_KEPT:]


def write_seal(path: str, filesystem: pafs.FileSystem, sealed: dict[str, list[str]], key: bytes) -> None:
    """The seal of the experiment at `path`, replaced whole: written under a hidden name, then moved into place
    (a rename on a disk; on an object store, a copy that lands whole)."""
    temporary = f"{path}/.{TUNE_SEAL}.partial"
    with filesystem.open_output_stream(temporary) as stream:
        stream.write(json.dumps({"key": key_id(key), "hmac_sha256": sealed}, sort_keys=True).encode())
    filesystem.move(temporary, f"{path}/{TUNE_SEAL}")


def read_seal(path: str, filesystem: pafs.FileSystem, key: bytes) -> dict[str, list[str]] | None:
    """The seal's digests when it was made with `key`; None when there is no seal or another key made it.
    ValueError when it is not a seal gridlab writes."""
    where = f"{path}/{TUNE_SEAL}"
    if filesystem.get_file_info(where).type == pafs.FileType.NotFound:
        return None
    with filesystem.open_input_stream(where) as stream:
        seal = json.loads(stream.read())  # ValueError when it is not JSON
    entries = seal.get("hmac_sha256") if isinstance(seal, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(v, list) for v in entries.values()):
        raise ValueError("not a seal")
    if seal.get("key") != key_id(key):
        return None
    return {name: [str(d) for d in versions] for name, versions in entries.items()}


def check(path: str, filesystem: pafs.FileSystem | None) -> tuple[Verdict, str]:
    """Whether every state file of the experiment at `path` is one this user's gridlab sealed, and if not,
    why, in words. Reads the files as bytes: nothing is unpickled."""
    filesystem = filesystem or pafs.LocalFileSystem()
    key = experiment_key()
    try:
        sealed = read_seal(path, filesystem, key)
    except ValueError as error:
        return Verdict.BROKEN, f"its {TUNE_SEAL} is not one gridlab wrote ({error})"
    if sealed is None:
        return Verdict.ABSENT, f"it has no {TUNE_SEAL} made with your key"
    for name, digest in sorted(digests(state_files(path, filesystem), key).items()):
        if not any(hmac.compare_digest(digest, version) for version in sealed.get(name, [])):
            change = "is not in its seal" if name not in sealed else "does not match its seal"
            return Verdict.BROKEN, f"{name} {change}"
    return Verdict.MATCHES, "sealed"


class SealState(tune.Callback):
    """Seals each save of the experiment's state as Tune makes it (see the module's docstring). Tune pickles
    its callbacks into `tuner.pkl`: the key and the storage are never saved with it; a restored one reads the
    key again and learns the storage from its trials. gridlab's other callbacks keep no Tune state, so Tune
    stages nothing after asking this one (a `callback-states-*.pkl` would go up unsealed)."""

    def __init__(self) -> None:
        self._key = experiment_key()
        self._storage: Any = None  # the trials' StorageContext: where Tune stages and where it uploads
        self._sealed: dict[str, list[str]] = {}

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()  # type: ignore[misc]

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        """The first step that has trials: what this fit started from is sealed (the seal a restored experiment
        carried, `tuner.pkl` as the Tuner wrote it) with what Tune has staged so far."""
        if self._storage is not None or not trials:
            return
        storage = trials[0].storage
        path, filesystem = storage.experiment_fs_path, storage.storage_filesystem
        try:
            self._sealed = read_seal(path, filesystem, self._key) or {}
        except ValueError:
            self._sealed = {}  # a seal the user told gridlab to ignore (`--trust-results`)
        with filesystem.open_input_stream(f"{path}/{TUNER_STATE}") as stream:
            remember(self._sealed, digests({TUNER_STATE: stream.read()}, self._key))
        self._storage = storage
        self._seal()

    def get_state(self) -> None:
        """Called by Tune as it saves: after its state files are staged, before their upload."""
        if self._storage is not None:
            self._seal()
        return None

    def _seal(self) -> None:
        staging = Path(self._storage.experiment_driver_staging_path)
        remember(self._sealed, digests(state_files(str(staging), pafs.LocalFileSystem()), self._key))
        path, filesystem = self._storage.experiment_fs_path, self._storage.storage_filesystem
        try:
            write_seal(path, filesystem, self._sealed, self._key)
        except OSError:  # a full disk, an unreachable store: a seal that lags behind the files would refuse
            try:  # them, so none at all (the launch then trains the cells afresh); the next save tries again
                filesystem.delete_file(f"{path}/{TUNE_SEAL}")
            except OSError:
                pass
