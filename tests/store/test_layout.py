"""The store owns the results layout: no module outside `gridlab/store/` spells a cell-folder file name or a
results sub-folder name, and the layout it gives is the one users read (`pandas.read_parquet` of an
analysis folder) and older results folders have."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from gridlab.store.atomic import publish_folder, replaced, staging_folder, write_json, write_text
from gridlab.store.layout import CellFiles, GridWorkspace, Results, cell_of

PACKAGE = Path(__file__).resolve().parents[2] / "gridlab"
FILE_NAMES = {
    CellFiles.MODEL,
    CellFiles.CONFIG,
    CellFiles.DATA,
    CellFiles.HISTORY,
    CellFiles.METRICS,
    CellFiles.FAILURE,
    CellFiles.TRACKING,
    "summary.parquet",
    "launches.jsonl",
    "mlflow.db",
    "gridlab-launch.json",
}
FOLDER_NAMES = {"analyses", "models", "tune", "cache", "mlartifacts", "annotation"}
PREFIXES = ("cell=", "part-", "launch-")


def literals_outside_the_store() -> list[str]:
    """'file:line: literal' for every layout name in code (docstrings aside) outside gridlab/store/."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "store" in path.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value
                if text in FILE_NAMES or text.startswith(PREFIXES) or "result.json" in text:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {text!r}")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                right = node.right
                if isinstance(right, ast.Constant) and right.value in FOLDER_NAMES:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: / {right.value!r}")
    return found


def test_no_layout_name_is_spelled_outside_the_store():
    assert literals_outside_the_store() == []


def test_the_layout_users_and_older_results_rely_on(tmp_path: Path):
    results = Results(tmp_path)
    grid = results.grid("g")
    assert grid.path == tmp_path / "g"
    assert grid.part("permutation", "abc123", 7) == tmp_path / "g/analyses/permutation/cell=abc123/part-00007.parquet"
    assert grid.models == tmp_path / "g/models" and grid.summary == tmp_path / "g/summary.parquet"
    assert results.cache == tmp_path / "cache" and results.tracking_db == tmp_path / "mlflow.db"
    assert cell_of(grid.cell_parts("permutation", "abc123")) == "abc123"
    assert grid.next_tune_experiment() == tmp_path / "g/tune/launch-001"
    grid.next_tune_experiment().mkdir(parents=True)
    assert grid.next_tune_experiment().name == "launch-002"


def test_parts_of_reads_only_the_asked_cells(tmp_path: Path):
    grid = GridWorkspace(tmp_path)
    for cell in ("a", "b"):
        with replaced(grid.part("permutation", cell, 0)) as partial:
            pd.DataFrame({"cell_id": [cell], "x": [1.0]}).to_parquet(partial)
    assert [cell_of(p.parent) for p in grid.parts_of("permutation")] == ["a", "b"]
    assert [cell_of(p.parent) for p in grid.parts_of("permutation", {"b"})] == ["b"]
    assert len(pd.read_parquet(grid.analysis("permutation"))) == 2  # the hive layout reads as one table
    assert grid.cell_partitions("a") == [grid.cell_parts("permutation", "a")]


def test_an_interrupted_write_leaves_the_old_file(tmp_path: Path):
    target = tmp_path / "x" / "t.json"
    write_json(target, {"v": 1})
    with pytest.raises(RuntimeError), replaced(target) as partial:
        partial.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == '{\n  "v": 1\n}'
    assert sorted(p.name for p in target.parent.iterdir()) == ["t.json"]  # no temporary left
    write_text(target, "a\r\nb")
    assert target.read_bytes() == b"a\r\nb"  # exactly as given


def test_a_folder_takes_the_old_ones_place_whole(tmp_path: Path):
    target = tmp_path / "report"
    for version in ("old", "new"):
        staging = staging_folder(target)
        (staging / "index.html").write_text(version)
        publish_folder(staging, target)
    assert (target / "index.html").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # staging and the retired copy are gone
