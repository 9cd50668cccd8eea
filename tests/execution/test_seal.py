"""The seal of a Tune experiment's state (`execution.seal`) and its key (`config.user.experiment_key`): a folder
sealed with this user's key passes; an altered, added or unsealed state file, a missing seal, or a seal made
with another key is refused in one line that names the folder and the override. No Ray."""

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
from gridlab.errors import BadInput, UntrustedExperiment
from gridlab.execution.seal import (
    OVERRIDE,
    VERSIONS_KEPT,
    SealState,
    check_sealed,
    remember,
    seal_entries,
    state_files,
    write_seal,
)
from gridlab.store.layout import LAUNCH_MARKER, TUNE_SEAL
from gridlab.store.remote import Mirror
from tests.store.conftest import ObjectStore, object_store, s3_endpoint  # noqa: F401 (fixtures: moto's S3)

STATE = {
    "tuner.pkl": b"\x80\x05tuner",
    "experiment_state-2026-11-28_03-00-00.json": b'{"trial_data": []}',
    "basic-variant-state-2026-11-28_03-00-00.json": b"{}",
    "cell0/error.pkl": b"\x80\x05an errored trial's exception, unpickled as Tune reports it",
}


@pytest.fixture
def experiment(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("GRIDLAB_CONFIG", str(tmp_path / "settings" / "settings.json"))
    monkeypatch.delenv(KEY_ENV, raising=False)
    folder = tmp_path / "tune" / "launch-001"
    (folder / "cell0").mkdir(parents=True)
    for name, data in STATE.items():
        (folder / name).write_bytes(data)
    (folder / "cell0" / "checkpoint_000001").mkdir()
    (folder / "cell0" / "checkpoint_000001" / "trainer.pt").write_bytes(b"tensors: read with weights_only")
    (folder / "cell0" / "params.pkl").write_bytes(b"a trial's folder: not Tune's restore state")
    (folder / LAUNCH_MARKER).write_text('{"finished": false}')
    sealed: dict[str, list[str]] = {}
    remember(sealed, seal_entries(STATE, experiment_key()))
    write_seal(str(folder), pafs.LocalFileSystem(), sealed)
    return folder


def refusal(folder: Path) -> str:
    with pytest.raises(UntrustedExperiment) as raised:
        check_sealed(str(folder), None, "runs/g/tune/launch-001")
    assert raised.value.exit_code == 2
    (line,) = raised.value.lines()
    assert line.startswith("runs/g/tune/launch-001: not restored: ") and OVERRIDE in line
    return line


def test_a_folder_sealed_with_the_users_key_passes(experiment: Path):
    assert set(state_files(str(experiment), pafs.LocalFileSystem())) == set(STATE)
    check_sealed(str(experiment), None, "runs/g/tune/launch-001")
    (experiment / LAUNCH_MARKER).write_text('{"finished": true}')  # gridlab's own marker is not Tune's state
    (experiment / "cell0" / "params.pkl").write_bytes(b"changed")
    (experiment / "cell0" / "checkpoint_000001" / "trainer.pt").write_bytes(b"changed")
    check_sealed(str(experiment), None, "runs/g/tune/launch-001")


def test_an_altered_pickle_is_refused(experiment: Path):
    (experiment / "tuner.pkl").write_bytes(STATE["tuner.pkl"] + b"\n")  # still unpickles the same: not the point
    assert "tuner.pkl does not match its seal" in refusal(experiment)


def test_an_added_state_file_is_refused(experiment: Path):
    (experiment / "callback-states-2026-11-28_03-00-00.pkl").write_bytes(b"\x80\x05evil")
    assert "callback-states-2026-11-28_03-00-00.pkl is not in its seal" in refusal(experiment)


def test_a_trials_pickled_error_is_sealed_too(experiment: Path):
    (experiment / "cell1").mkdir()
    (experiment / "cell1" / "error.pkl").write_bytes(b"\x80\x05evil")
    assert "cell1/error.pkl is not in its seal" in refusal(experiment)
    (experiment / "cell1" / "error.pkl").unlink()
    (experiment / "cell0" / "error.pkl").write_bytes(b"\x80\x05evil")
    assert "cell0/error.pkl does not match its seal" in refusal(experiment)


def test_a_folder_without_its_seal_is_refused(experiment: Path):
    (experiment / TUNE_SEAL).unlink()
    assert f"it has no readable {TUNE_SEAL}" in refusal(experiment)
    (experiment / TUNE_SEAL).write_text("not json")
    assert f"it has no readable {TUNE_SEAL}" in refusal(experiment)


def test_a_seal_rewritten_by_whoever_wrote_the_files_is_refused(experiment: Path):
    """The attacker who can write the folder recomputes a plain digest; without the key, the HMAC is wrong."""
    evil = b"\x80\x05evil"
    (experiment / "tuner.pkl").write_bytes(evil)
    seal = json.loads((experiment / TUNE_SEAL).read_text())["hmac_sha256"]
    forged = seal | {"tuner.pkl": [hashlib.sha256(b"tuner.pkl\0" + evil).hexdigest()]}
    (experiment / TUNE_SEAL).write_text(json.dumps({"hmac_sha256": forged}))
    assert "tuner.pkl does not match its seal" in refusal(experiment)


def test_a_seal_made_with_another_key_is_refused(experiment: Path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "another user's secret, long enough to be used")
    assert "sealed with another key" in refusal(experiment)


def test_a_seal_cannot_be_moved_to_another_file(experiment: Path):
    entries = seal_entries({"a.json": b"same"}, b"k" * 32) | seal_entries({"b.json": b"same"}, b"k" * 32)
    assert entries["a.json"] != entries["b.json"]


def test_the_key_is_made_once_beside_the_settings_and_kept_private(experiment: Path):
    key_file = settings_path().parent / "experiment.key"
    assert key_file.is_file()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(experiment_key()) == 64 and experiment_key() == key_file.read_text().encode()


def test_a_short_key_in_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(BadInput, match=KEY_ENV):
        experiment_key()


def test_a_seal_in_object_storage_is_checked_there(experiment: Path, object_store: ObjectStore):  # noqa: F811
    """Results in S3: Tune keeps the experiment in the bucket, and the check reads it there."""
    mirror = Mirror.of(object_store.uri("runs"))
    key = f"{mirror.root}/g/tune/launch-001"
    for file in (*STATE, TUNE_SEAL, "cell0/params.pkl"):
        with mirror.filesystem.open_output_stream(f"{key}/{file}") as stream:
            stream.write((experiment / file).read_bytes())
    label = f"{mirror.uri}/g/tune/launch-001"
    check_sealed(key, mirror.filesystem, label)
    with mirror.filesystem.open_output_stream(f"{key}/tuner.pkl") as stream:
        stream.write(b"\x80\x05written by whoever can write the bucket")
    with pytest.raises(UntrustedExperiment, match=f"^{label}: not restored: tuner.pkl does not match its seal"):
        check_sealed(key, mirror.filesystem, label)


def test_a_file_is_accepted_in_any_of_its_last_sealed_versions(experiment: Path):
    sealed: dict[str, list[str]] = {}
    for version in range(VERSIONS_KEPT + 1):
        remember(sealed, seal_entries({"tuner.pkl": b"v%d" % version}, experiment_key()))
    write_seal(str(experiment), pafs.LocalFileSystem(), sealed)
    (experiment / "cell0" / "error.pkl").unlink()  # only tuner.pkl is sealed here
    for name in STATE:
        (experiment / name).unlink(missing_ok=True)
    for version in range(1, VERSIONS_KEPT + 1):  # an upload still landing leaves an earlier version
        (experiment / "tuner.pkl").write_bytes(b"v%d" % version)
        check_sealed(str(experiment), None, "runs/g/tune/launch-001")
    (experiment / "tuner.pkl").write_bytes(b"v0")  # older than what the seal keeps
    assert "tuner.pkl does not match its seal" in refusal(experiment)


@dataclass
class Storage:
    """What SealState reads of a Tune trial's StorageContext."""

    experiment_fs_path: str
    experiment_driver_staging_path: str
    storage_filesystem: pafs.FileSystem = field(default_factory=pafs.LocalFileSystem)


def test_each_save_is_sealed_in_storage_before_tune_uploads_it(tmp_path: Path, monkeypatch):
    """SealState as Tune drives it: the first step sees storage as the fit began, each save (`get_state`) seals
    the staged files straight into storage; a kill before, during or after the upload leaves a seal that
    knows each file there, and a file replaced in storage during the run is not blessed."""
    monkeypatch.setenv("GRIDLAB_CONFIG", str(tmp_path / "settings" / "settings.json"))
    storage, staging = tmp_path / "launch-001", tmp_path / "staging"
    storage.mkdir()
    staging.mkdir()
    (storage / "tuner.pkl").write_bytes(b"\x80\x05tuner")  # written by Tuner() before the fit
    (staging / TUNE_SEAL).write_text("a seal a restore copied down")
    callback = pickle.loads(pickle.dumps(SealState()))  # as Tune saves it in tuner.pkl: without the key
    callback.on_step_begin(0, [SimpleNamespace(storage=Storage(str(storage), str(staging)))])

    def save(state: bytes, uploaded: list[str]) -> None:
        (staging / "experiment_state-x.json").write_bytes(state)
        callback.get_state()
        assert not (staging / TUNE_SEAL).exists()
        for name in uploaded:  # Tune's upload, cut short after these files
            (storage / name).parent.mkdir(exist_ok=True)
            shutil.copyfile(staging / name, storage / name)
        check_sealed(str(storage), None, "launch-001")

    save(b'{"save": 1}', uploaded=[])
    save(b'{"save": 1}', uploaded=["experiment_state-x.json"])
    save(b'{"save": 2}', uploaded=[])  # killed before the upload: save 1's state, save 2's seal
    (staging / "cell0").mkdir()
    (staging / "cell0" / "error.pkl").write_bytes(b"\x80\x05a trial's error")
    save(b'{"save": 3}', uploaded=["cell0/error.pkl"])
    (staging / "cell0" / "error.pkl").unlink()  # uploaded, then gone from staging: still sealed
    save(b'{"save": 4}', uploaded=["experiment_state-x.json"])
    (storage / "tuner.pkl").write_bytes(b"\x80\x05replaced in the bucket during the run")
    callback.get_state()
    assert "tuner.pkl does not match its seal" in refusal_of(storage)


def refusal_of(folder: Path) -> str:
    with pytest.raises(UntrustedExperiment) as raised:
        check_sealed(str(folder), None, "launch-001")
    return str(raised.value)
