"""What a measured number is traced to: the grid file's content hash (its bytes, not its name) and the
gridlab commit, read from git (dirty marked) or, outside a checkout, the package version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gridlab import __version__
from gridlab.store import provenance
from gridlab.store.provenance import grid_hash, gridlab_commit
from gridlab.studies.verdicts import load_plan

REPO = Path(__file__).resolve().parents[2]


def test_the_grid_hash_follows_the_files_bytes(tmp_path: Path):
    one, other = tmp_path / "a.yaml", tmp_path / "b.yaml"
    one.write_text("name: x\n")
    other.write_text("name: x\n")
    assert grid_hash(one) == grid_hash(other) and re.fullmatch(r"sha256:[0-9a-f]{12}", grid_hash(one))
    other.write_text("name: y\n")
    assert grid_hash(one) != grid_hash(other)


def test_the_commit_is_read_from_git_or_is_the_package_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    assert re.fullmatch(r"git [0-9a-f]{40}(-dirty)?", gridlab_commit())  # this checkout
    monkeypatch.setattr(provenance, "PACKAGE", tmp_path)  # not a git checkout: an installed package
    assert gridlab_commit() == f"gridlab {__version__}"


def test_the_shipped_plan_reads_grids_that_exist():
    plan = load_plan()
    assert all((REPO / grid).is_file() for grid in plan.grids)
    assert len(set(plan.grids)) == len(plan.grids)
    for paper in plan.papers:
        assert paper.decide and not any("ablations/" in grid for grid in paper.decide)  # ablations never decide
