"""Workers run the driver's gridlab or refuse (`execution.codebase`): the source digest follows the files, not
their folder; a process started from a folder that holds another `gridlab/` imports that one and sees the
mismatch; a trial and an analysis actor given the driver's identity refuse, in one line naming both places."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gridlab
from gridlab.execution.actors import AnalysisActor
from gridlab.execution.codebase import Codebase, ForeignCode, source_digest
from gridlab.execution.trainable import train_cell

PACKAGE = Path(gridlab.__file__).resolve().parent
ELSEWHERE = Codebase("another-host:/srv/old/gridlab", "0" * 64)


def copy_of_gridlab(folder: Path) -> Path:
    copy = folder / "gridlab"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_the_digest_is_of_the_source_wherever_it_lies(tmp_path: Path):
    here = Codebase.here()
    assert here.location.endswith(f":{PACKAGE}") and here.digest == source_digest(PACKAGE)
    assert here.mismatch() is None
    copy = copy_of_gridlab(tmp_path)
    assert source_digest(copy) == here.digest
    (copy / "execution" / "trainable.py").write_text((copy / "execution" / "trainable.py").read_text() + "\n# x\n")
    assert source_digest(copy) != here.digest
    (copy / "execution" / "trainable.py").unlink()
    assert source_digest(copy_of_gridlab(tmp_path / "again")) != source_digest(copy)


def test_a_process_started_beside_another_gridlab_imports_it_and_refuses(tmp_path: Path):
    """What a Ray worker of a driver started in such a folder does: its working folder comes first."""
    copy = copy_of_gridlab(tmp_path)
    (copy / "text.py").write_text((copy / "text.py").read_text() + "\n# an edited copy\n")
    driver = Codebase.here()
    script = (
        "from gridlab.execution.codebase import Codebase; "
        f"print(Codebase(location={driver.location!r}, digest={driver.digest!r}).mismatch())"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    assert "imported gridlab from " in line and f"{copy}" in line and f"not the driver's {driver.location}" in line


def test_a_trial_on_another_gridlab_fails_its_cell_before_training(monkeypatch):
    reported: list[dict] = []
    monkeypatch.setattr("gridlab.execution.trainable.tune.report", lambda metrics, **_: reported.append(metrics))
    train_cell({}, code=ELSEWHERE)  # no trial params: anything past the check would raise
    (result,) = reported
    assert result["failed"] is True and result["epoch"] == 0
    assert "/srv/old/gridlab" in result["failure_reason"] and Codebase.here().location in result["failure_reason"]


def test_an_analysis_actor_on_another_gridlab_fails_each_shard(tmp_path: Path):
    actor = AnalysisActor.__ray_actor_class__(
        str(tmp_path), str(tmp_path), str(tmp_path), "cpu", 1.0, 0.0, {}, ELSEWHERE
    )
    with pytest.raises(ForeignCode, match="not the driver's another-host:/srv/old/gridlab"):
        actor.run(None)
