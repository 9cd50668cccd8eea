"""The seal of a Tune experiment's state (`execution.seal`) and its key (`config.user.experiment_key`): a folder
sealed with this user's key matches; an altered or added state file, or a seal that is not gridlab's, is
BROKEN; no seal, or one made with another key, is ABSENT. SealState driven as Tune drives it leaves a seal
that knows every file an upload may have landed. No Ray."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyarrow import fs as pafs

from gridlab.config.user import KEY_ENV, experiment_key, settings_path
from gridlab.errors import BadInput
from gridlab.execution.seal import (
    VERSIONS_KEPT,
    SealState,
    Verdict,
    check,
    digests,
    remember,
    state_files,
    write_seal,
)
from gridlab.store.layout import LAUNCH_MARKER, TUNE_SEAL
from gridlab.store.remote import Mirror
from tests.object_store import ObjectStore

STATE = {
    "tuner.pkl": b"\x80\x05tuner",
    "experiment_state-2026-11-28_03-00-00.json": b'{"trial_data": []}',
    "basic-variant-state-2026-11-28_03-00-00.json": b"\x80\x05searcher",
    "cell0/error.pkl": b"\x80\x05an errored trial's exception, unpickled as Tune reports it",
}


@pytest.fixture
def experiment(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("GRIDLAB_CONFIG", str(tmp_path / "settings" / "settings.json"))
    monkeypatch.delenv(KEY_ENV, raising=False)
    folder = tmp_path / "tune" / "launch-001"
    (folder / "cell0" / "checkpoint_000001").mkdir(parents=True)
    for name, data in STATE.items():
        (folder / name).write_bytes(data)
    (folder / "cell0" / "checkpoint_000001" / "trainer.pt").write_bytes(b"tensors: read with weights_only")
    (folder / "cell0" / "params.pkl").write_bytes(b"written by Tune's logger, never read back")
    (folder / LAUNCH_MARKER).write_text('{"finished": false}')
    sealed: dict[str, list[str]] = {}
    remember(sealed, digests(STATE, experiment_key()))
    write_seal(str(folder), pafs.LocalFileSystem(), sealed, experiment_key())
    return folder


def verdict(folder: Path) -> tuple[Verdict, str]:
    return check(str(folder), None)


def test_a_folder_sealed_with_the_users_key_matches(experiment: Path):
    assert set(state_files(str(experiment), pafs.LocalFileSystem())) == set(STATE)
    assert verdict(experiment)[0] is Verdict.MATCHES
    (experiment / LAUNCH_MARKER).write_text('{"finished": true}')  # gridlab's own marker is not Tune's state
    (experiment / "cell0" / "params.pkl").write_bytes(b"changed")
    (experiment / "cell0" / "checkpoint_000001" / "trainer.pt").write_bytes(b"changed")
    assert verdict(experiment)[0] is Verdict.MATCHES


def test_an_altered_pickle_is_broken(experiment: Path):
    (experiment / "tuner.pkl").write_bytes(STATE["tuner.pkl"] + b"\n")  # unpickles the same: not the point
    assert verdict(experiment) == (Verdict.BROKEN, "tuner.pkl does not match its seal")


def test_an_added_state_file_is_broken(experiment: Path):
    (experiment / "callback-states-2026-11-28_03-00-00.pkl").write_bytes(b"\x80\x05evil")
    assert verdict(experiment) == (Verdict.BROKEN, "callback-states-2026-11-28_03-00-00.pkl is not in its seal")


def test_a_trials_pickled_error_is_sealed_too(experiment: Path):
    (experiment / "cell1").mkdir()
    (experiment / "cell1" / "error.pkl").write_bytes(b"\x80\x05evil")
    assert verdict(experiment) == (Verdict.BROKEN, "cell1/error.pkl is not in its seal")
    (experiment / "cell1" / "error.pkl").unlink()
    (experiment / "cell0" / "error.pkl").write_bytes(b"\x80\x05evil")
    assert verdict(experiment) == (Verdict.BROKEN, "cell0/error.pkl does not match its seal")


def test_no_seal_is_absent_and_a_seal_gridlab_did_not_write_is_broken(experiment: Path):
    (experiment / TUNE_SEAL).unlink()
    assert verdict(experiment) == (Verdict.ABSENT, f"it has no {TUNE_SEAL} made with your key")
    (experiment / TUNE_SEAL).write_text("not json")
    assert verdict(experiment)[0] is Verdict.BROKEN
    (experiment / TUNE_SEAL).write_text('{"hmac_sha256": {"tuner.pkl": "not a list"}}')
    assert verdict(experiment)[0] is Verdict.BROKEN


def test_a_seal_rewritten_by_whoever_wrote_the_files_is_broken(experiment: Path):
    """Whoever can write the folder recomputes a plain digest; without the key, the HMAC is wrong."""
    evil = b"\x80\x05evil"
    (experiment / "tuner.pkl").write_bytes(evil)
    seal = json.loads((experiment / TUNE_SEAL).read_text())
    seal["hmac_sha256"]["tuner.pkl"] = [hashlib.sha256(b"tuner.pkl\0" + evil).hexdigest()]
    (experiment / TUNE_SEAL).write_text(json.dumps(seal))
    assert verdict(experiment) == (Verdict.BROKEN, "tuner.pkl does not match its seal")


def test_a_seal_made_with_another_key_is_absent(experiment: Path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "another user's secret, long enough to be used")
    assert verdict(experiment)[0] is Verdict.ABSENT


def test_a_digest_cannot_be_moved_to_another_file():
    key = b"k" * 32
    assert digests({"a.json": b"same"}, key)["a.json"] != digests({"b.json": b"same"}, key)["b.json"]


def test_the_key_is_made_once_beside_the_settings_and_kept_private(experiment: Path):
    key_file = settings_path().parent / "experiment.key"
    assert key_file.is_file() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(experiment_key()) == 64 and experiment_key() == key_file.read_text().encode()
    assert not list(experiment.rglob("experiment.key"))  # never under results_dir


def test_a_short_key_is_refused(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(BadInput, match=KEY_ENV):
        experiment_key()
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("GRIDLAB_CONFIG", str(tmp_path / "settings.json"))
    (tmp_path / "experiment.key").write_text("cut short")
    with pytest.raises(BadInput, match="experiment.key"):
        experiment_key()


def test_a_seal_in_object_storage_is_checked_there(experiment: Path, object_store: ObjectStore):
    """Results in S3: Tune keeps the experiment in the bucket, and the check reads it there."""
    mirror = Mirror.of(object_store.uri("runs"))
    key = f"{mirror.root}/g/tune/launch-001"
    for file in (*STATE, TUNE_SEAL, "cell0/params.pkl"):
        with mirror.filesystem.open_output_stream(f"{key}/{file}") as stream:
            stream.write((experiment / file).read_bytes())
    assert check(key, mirror.filesystem)[0] is Verdict.MATCHES
    with mirror.filesystem.open_output_stream(f"{key}/tuner.pkl") as stream:
        stream.write(b"\x80\x05written by whoever can write the bucket")
    assert check(key, mirror.filesystem) == (Verdict.BROKEN, "tuner.pkl does not match its seal")
    mirror.filesystem.delete_file(f"{key}/{TUNE_SEAL}")
    assert check(key, mirror.filesystem)[0] is Verdict.ABSENT


def test_a_file_matches_any_of_its_last_sealed_versions(experiment: Path):
    sealed: dict[str, list[str]] = {}
    for version in range(VERSIONS_KEPT + 1):
        remember(sealed, digests({"tuner.pkl": b"v%d" % version}, experiment_key()))
    write_seal(str(experiment), pafs.LocalFileSystem(), sealed, experiment_key())
    for name in STATE:
        (experiment / name).unlink()
    for version in range(1, VERSIONS_KEPT + 1):  # an upload still landing leaves an earlier version
        (experiment / "tuner.pkl").write_bytes(b"v%d" % version)
        assert verdict(experiment)[0] is Verdict.MATCHES
    (experiment / "tuner.pkl").write_bytes(b"v0")  # older than what the seal keeps
    assert verdict(experiment)[0] is Verdict.BROKEN


@dataclass
class Storage:
    """What SealState reads of a Tune trial's StorageContext."""

    experiment_fs_path: str
    experiment_driver_staging_path: str
    storage_filesystem: pafs.FileSystem = field(default_factory=pafs.LocalFileSystem)


def test_each_save_is_sealed_in_storage_before_tune_uploads_it(tmp_path: Path, monkeypatch):
    """SealState as Tune drives it: no seal until a step has trials (an experiment killed before is ABSENT,
    never BROKEN); then what the fit started from and what is staged, and at each save (`get_state`) the staged
    files, straight into storage: a kill before, during or after an upload leaves a seal that knows each file
    there. A file someone else puts in storage during the run is not sealed."""
    monkeypatch.setenv("GRIDLAB_CONFIG", str(tmp_path / "settings" / "settings.json"))
    storage, staging = tmp_path / "launch-001", tmp_path / "staging"
    storage.mkdir()
    staging.mkdir()
    (storage / "tuner.pkl").write_bytes(b"\x80\x05tuner")  # written by Tuner() before the fit
    callback = pickle.loads(pickle.dumps(SealState()))  # as Tune keeps it in tuner.pkl: without the key

    def upload(*names: str) -> None:  # Tune's upload, cut short after these files
        for name in names:
            (storage / name).parent.mkdir(exist_ok=True)
            shutil.copyfile(staging / name, storage / name)

    (staging / "experiment_state-x.json").write_bytes(b'{"save": 1}')  # the first save: no trial yet
    callback.on_step_begin(0, [])
    callback.get_state()
    upload("experiment_state-x.json")
    assert check(str(storage), None)[0] is Verdict.ABSENT
    callback.on_step_begin(1, [SimpleNamespace(storage=Storage(str(storage), str(staging)))])
    assert check(str(storage), None)[0] is Verdict.MATCHES

    def save(state: bytes, *uploaded: str) -> None:
        (staging / "experiment_state-x.json").write_bytes(state)
        callback.get_state()
        upload(*uploaded)
        assert check(str(storage), None)[0] is Verdict.MATCHES, state

    save(b'{"save": 2}')  # killed before the upload: save 1's state, save 2's seal
    save(b'{"save": 2}', "experiment_state-x.json")
    (staging / "cell0").mkdir()
    (staging / "cell0" / "error.pkl").write_bytes(b"\x80\x05a trial's error")
    save(b'{"save": 3}', "cell0/error.pkl")
    (staging / "cell0" / "error.pkl").unlink()  # uploaded, then gone from staging: still sealed
    save(b'{"save": 4}', "experiment_state-x.json")
    (storage / "callback-states-x.pkl").write_bytes(b"\x80\x05put there by someone else")
    callback.get_state()
    assert check(str(storage), None) == (Verdict.BROKEN, "callback-states-x.pkl is not in its seal")


def test_a_seal_that_cannot_be_written_is_removed(tmp_path: Path, monkeypatch):
    """A full disk or a store that refuses the write: a seal that lags behind the files would make a relaunch
    refuse them, so the experiment is left unsealed (ABSENT) instead."""
    monkeypatch.setenv("GRIDLAB_CONFIG", str(tmp_path / "settings" / "settings.json"))
    storage, staging = tmp_path / "launch-001", tmp_path / "staging"
    storage.mkdir()
    staging.mkdir()
    (storage / "tuner.pkl").write_bytes(b"\x80\x05tuner")
    callback = SealState()
    callback.on_step_begin(1, [SimpleNamespace(storage=Storage(str(storage), str(staging)))])
    assert (storage / TUNE_SEAL).is_file()

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("gridlab.execution.seal.write_seal", refuse)
    (staging / "experiment_state-x.json").write_bytes(b'{"save": 2}')
    callback.get_state()
    upload = staging / "experiment_state-x.json"
    shutil.copyfile(upload, storage / upload.name)
    assert check(str(storage), None)[0] is Verdict.ABSENT
