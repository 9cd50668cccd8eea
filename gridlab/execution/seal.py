"""Tune's saved state is code: `Tuner.restore` unpickles `tuner.pkl` and the trials stored in
`experiment_state-*.json` (and any searcher or callback `*.pkl` beside them), and the fit that follows
unpickles an errored trial's `<trial>/error.pkl` when it reports its results. Whoever can write a grid's
`tune/` folder, or its bucket when results are in object storage, could run code in the next relaunch's
driver. So a launch seals each experiment it writes, and restores only what carries its seal.

    >>> callbacks = [..., SealState()]                       # each save of Tune's state is sealed as it is made
    >>> check_sealed(path, filesystem, "runs/g/tune/launch-002")   # before Tuner.restore; UntrustedExperiment if not

The seal (`TUNE_SEAL`, in the experiment folder) is an HMAC-SHA256 per state file (those pickles and JSON
files), keyed by a secret kept
outside results_dir (`config.user.experiment_key`): a plain digest stored beside the files would be rewritten
by whoever rewrote them. Tune saves its state every few seconds during a fit (and after each trial checkpoint),
first into a local staging folder, then uploads that folder in the background. Tune asks its callbacks for
their state at the one moment its own state files are staged and their upload has not begun: then `SealState`
seals the staged files and writes the seal straight to the experiment's storage, whole (a rename, or one PUT).
So a driver killed at any point leaves a seal that already knows every file an upload may have landed; the
last `VERSIONS_KEPT` versions of each file stay in the seal, for an upload still landing as the next save
begins. The files that were in storage before the fit began (`tuner.pkl`, a restored experiment's earlier
state) are sealed as they were then, not as they are at each save, so that a file replaced in the bucket
during a run is not blessed by the next save.
"""

from __future__ import annotations

import hmac
import json
from hashlib import sha256
from pathlib import Path

from pyarrow import fs as pafs
from ray import tune
from ray.air.constants import EXPR_ERROR_PICKLE_FILE

from gridlab.config.user import experiment_key
from gridlab.errors import UntrustedExperiment
from gridlab.store.layout import LAUNCH_MARKER, TUNE_SEAL

VERSIONS_KEPT = 3
STATE_SUFFIXES = (".json", ".pkl")  # the files of an experiment's folder that Tune copies back and reads on restore
OVERRIDE = "--trust-experiment"


def state_files(path: str, filesystem: pafs.FileSystem) -> dict[str, bytes]:
    """The experiment folder's state files and its trials' pickled errors, by path relative to the folder;
    gridlab's own files left out. (A trial's checkpoints are not state: gridlab reads them as tensors only.)"""
    found = {}
    for info in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True)):
        name = info.path[len(path.rstrip("/")) + 1 :]
        if info.type == pafs.FileType.File and _is_state(name):
            with filesystem.open_input_stream(info.path) as stream:
                found[name] = stream.read()
    return found


def _is_state(name: str) -> bool:
    parts = name.split("/")
    if len(parts) == 1:
        return name.endswith(STATE_SUFFIXES) and name not in (LAUNCH_MARKER, TUNE_SEAL)
    return len(parts) == 2 and parts[1] == EXPR_ERROR_PICKLE_FILE


def seal_entries(files: dict[str, bytes], key: bytes) -> dict[str, str]:
    """name -> HMAC-SHA256 of the name and the contents (a file's seal cannot be moved to another name)."""
    return {name: hmac.new(key, name.encode() + b"\0" + data, sha256).hexdigest() for name, data in files.items()}


def remember(sealed: dict[str, list[str]], entries: dict[str, str]) -> None:
    """Add each file's newest digest to `sealed`, keeping its last `VERSIONS_KEPT` ones."""
    for name, digest in entries.items():
        versions = [d for d in sealed.get(name, []) if d != digest] + [digest]
        sealed[name] = versions[-VERSIONS_KEPT:]


def write_seal(path: str, filesystem: pafs.FileSystem, sealed: dict[str, list[str]]) -> None:
    """The seal of the experiment at `path`, replaced whole: written beside it, then moved into place (a rename
    on a disk; on an object store, a copy that lands whole). The temporary's name ends in neither suffix of a
    state file, so one that a kill left behind is not taken for Tune's."""
    temporary = f"{path}/.{TUNE_SEAL}.partial"
    with filesystem.open_output_stream(temporary) as stream:
        stream.write(json.dumps({"hmac_sha256": sealed}, sort_keys=True).encode())
    filesystem.move(temporary, f"{path}/{TUNE_SEAL}")


def check_sealed(path: str, filesystem: pafs.FileSystem | None, label: str) -> None:
    """Raise UntrustedExperiment, in one line naming `label` and the override, unless every state file of the
    experiment at `path` matches this user's seal."""
    filesystem = filesystem or pafs.LocalFileSystem()
    problem = _seal_problem(state_files(path, filesystem), _read_seal(path, filesystem), experiment_key())
    if problem is not None:
        raise UntrustedExperiment(
            f"{label}: not restored: {problem}, and restoring a Tune experiment unpickles its files; if you trust "
            f"them, run the launch again with {OVERRIDE}"
        )


def _read_seal(path: str, filesystem: pafs.FileSystem) -> dict[str, list[str]] | None:
    try:
        with filesystem.open_input_stream(f"{path}/{TUNE_SEAL}") as stream:
            entries = json.loads(stream.read())["hmac_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(entries, dict) or not all(isinstance(v, list) for v in entries.values()):
        return None
    return entries


def _seal_problem(files: dict[str, bytes], seal: dict[str, list[str]] | None, key: bytes) -> str | None:
    """What is wrong, in words; None when every file is sealed as it is. A sealed file that is gone is no
    problem (Tune reads the newest state there is, and every sealed one was written by this launch's owner)."""
    if seal is None:
        return f"it has no readable {TUNE_SEAL} (written by gridlab as it saves the experiment)"
    if not files:
        return "it holds no Tune state"
    for name, digest in sorted(seal_entries(files, key).items()):
        if name not in seal:
            return f"{name} is not in its seal"
        if not any(hmac.compare_digest(digest, str(version)) for version in seal[name]):
            return f"{name} does not match its seal (changed since gridlab saved it, or sealed with another key)"
    return None


class SealState(tune.Callback):
    """Seals each save of the experiment's state as Tune makes it (see the module's docstring). Tune pickles its
    callbacks into `tuner.pkl`: the key is never saved with them, a restored one reads it again."""

    def __init__(self) -> None:
        self._key = experiment_key()
        self._storage = None  # the trials' StorageContext: where Tune stages and where it uploads
        self._sealed: dict[str, list[str]] = {}  # what storage held when the fit began, then what was staged since

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()  # type: ignore[misc]

    def on_step_begin(self, iteration, trials, **info) -> None:
        if self._storage is None and trials:
            storage = trials[0].storage
            found = state_files(storage.experiment_fs_path, storage.storage_filesystem)
            self._sealed = {name: [digest] for name, digest in seal_entries(found, self._key).items()}
            self._storage = storage

    def get_state(self) -> None:
        """Called by Tune as it saves: after its state files are in the staging folder, before their upload."""
        if self._storage is not None:
            staging = Path(self._storage.experiment_driver_staging_path)
            # what was staged earlier stays sealed: it may be uploaded and gone from staging
            remember(self._sealed, seal_entries(state_files(str(staging), pafs.LocalFileSystem()), self._key))
            (staging / TUNE_SEAL).unlink(missing_ok=True)  # a restore copied the old one here: not to be uploaded
            write_seal(self._storage.experiment_fs_path, self._storage.storage_filesystem, self._sealed)
        return None
