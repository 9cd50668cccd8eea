"""What gridlab writes is as readable as the user's umask says (0644 files, 0755 folders under umask 022; 0640
and 0750 under 027), although every writer goes through a hidden temporary that is renamed into place: the
file helpers, staged folders, a Parquet part, the model store's cell folders, the prepared-data cache, a
report, and what a mirror downloads from object storage."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.report.render import render_report
from gridlab.results.parts import write_part
from gridlab.store import atomic
from gridlab.store.models import ModelStore
from gridlab.store.remote import Mirror
from tests.object_store import ObjectStore

UMASKS = (0o022, 0o027)


@pytest.fixture(params=UMASKS, ids=lambda m: f"umask{m:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_modes(root: Path, umask: int) -> int:
    """Every file and folder under `root` (pytest's own, private, aside) has the umask's mode; returns how many
    were seen."""
    paths = list(root.rglob("*"))
    for path in paths:
        expected = (0o777 if path.is_dir() else 0o666) & ~umask
        assert mode(path) == expected, f"{path}: {mode(path):04o}, expected {expected:04o}"
    return len(paths)


def test_the_file_helpers(umask: int, tmp_path: Path):
    atomic.write_text(tmp_path / "a.txt", "a")
    atomic.write_bytes(tmp_path / "b.bin", b"b")
    atomic.write_json(tmp_path / "c.json", {"c": 1})
    atomic.write_text(tmp_path / "a.txt", "replaced")  # a file put in place of another gets the same mode
    with atomic.replaced(tmp_path / "deeper" / "d.txt") as partial:
        partial.write_text("d")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.bin", "c.json", "d.txt", "deeper"]
    assert_modes(tmp_path, umask)


def test_a_failed_write_leaves_no_temporary(tmp_path: Path):
    with pytest.raises(RuntimeError), atomic.replaced(tmp_path / "x.txt") as partial:
        partial.write_text("half")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_published_folders_new_and_replacing(umask: int, tmp_path: Path):
    target = tmp_path / "out" / "folder"
    for content in ("first", "second"):
        staging = atomic.staging_folder(target)
        assert mode(staging) == 0o777 & ~umask
        (staging / "inner").mkdir()
        (staging / "inner" / "file.txt").write_text(content)
        atomic.publish_folder(staging, target)
    assert (target / "inner" / "file.txt").read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["folder"]  # the retired copy is gone
    assert assert_modes(tmp_path, umask) == 4


def test_a_parquet_part(umask: int, tmp_path: Path):
    part = tmp_path / "analyses" / "permutation" / "cell=abc" / "part-00000.parquet"
    write_part(part, pa.table({"x": [1, 2]}))
    assert assert_modes(tmp_path, umask) == 4


def test_the_model_stores_cell_folder(umask: int, tmp_path: Path):
    store = ModelStore(tmp_path / "models")
    store.write_failure("cell1", "diverged", {"seed": 0}, {})
    store.write_failure("cell1", "diverged again", {"seed": 0}, {})  # replaces the folder
    assert (tmp_path / "models" / "cell1").is_dir()
    assert assert_modes(tmp_path, umask) >= 5


def test_the_prepared_data_cache(umask: int, tmp_path: Path):
    config = DataConfig(synthetic=SyntheticConfig(n_train=10, n_dev=4, n_test=4, min_length=3, max_length=5))
    load_dataset("synthetic", tmp_path / "data", tmp_path / "cache", config)
    assert any(p.suffix == ".parquet" for p in (tmp_path / "cache").rglob("*"))
    assert_modes(tmp_path, umask)


def test_a_report(umask: int, tmp_path: Path):
    render_report([], tmp_path / "report", "empty")
    assert any((tmp_path / "report").iterdir())
    assert_modes(tmp_path, umask)


def test_a_mirror_download(umask: int, object_store: ObjectStore, tmp_path: Path):
    """Object storage keeps no modes: what a mirror brings down gets the umask's, like a local write."""
    mirror = Mirror.of(object_store.uri("runs"))
    source = tmp_path / "source"
    atomic.write_text(source / "g" / "summary.txt", "one")
    (source / "g" / "models" / "c1").mkdir(parents=True)
    (source / "g" / "models" / "c1" / "model.pt").write_bytes(b"weights")
    Mirror(source, mirror.uri).push(source / "g")
    elsewhere = Mirror(tmp_path / "elsewhere", mirror.uri)
    assert elsewhere.pull("g") == 2
    assert (elsewhere.local / "g" / "models" / "c1" / "model.pt").read_bytes() == b"weights"
    assert_modes(elsewhere.local, umask)
