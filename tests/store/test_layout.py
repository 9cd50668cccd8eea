"""The store owns the results layout: no module outside `gridlab/store/` spells a cell-folder file name or a
results sub-folder name, and the layout it gives is the one users read (`pandas.read_parquet` of an
analysis folder) and older results folders have."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

from gridlab.store.atomic import publish_folder, replaced, staging_folder, write_json, write_text
from gridlab.store.layout import CacheFiles, CellFiles, GridWorkspace, Results, TrackingFiles, cell_of

PACKAGE = Path(__file__).resolve().parents[2] / "gridlab"
LAYOUT = PACKAGE / "store" / "layout.py"
# What a results file or folder name looks like, whoever would define it: a new spelling outside the store, of a
# name layout.py does not hold yet, fails as surely as one it does
LOOKS_LIKE_RESULTS = re.compile(
    r"(?<![\w-])cell=|part-|launch-|checkpoint_|\.parquet\b|\.jsonl\b|\.db\b|\.lock\b|\.lease\b"
)
# Literals that look like results names and are not: the datasets' own release files, data shipped with gridlab,
# and an annotation sheet's files (`annotate/files.py`: a folder wherever `--out` puts it)
NOT_RESULTS = {
    ("data/readers/snli.py", text)
    for text in (
        "snli_1.0_dev.jsonl",
        "snli_1.0_dev.jsonl.gz",
        "snli_1.0_test.jsonl",
        "snli_1.0_test.jsonl.gz",
        ".jsonl",
        ".jsonl.gz",
        ": not found (nor snli_1.0_",
        ".jsonl)",
    )
} | {
    ("data/catalog.py", "snli_1.0.zip at nlp.stanford.edu/projects/snli (its snli_1.0_{dev,test}.jsonl)"),
    ("data/vectors.py", "data/glove_6B_index.parquet"),
    ("annotate/files.py", "key.parquet"),
}


def code_literals(path: Path) -> list[ast.Constant]:
    """The string constants of a module (f-strings' fixed parts included), docstrings aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def layout_names() -> tuple[set[str], set[str]]:
    """The file names (with a dot) and folder names that layout.py spells, read from its code."""
    pieces = {
        piece
        for node in code_literals(LAYOUT)
        for piece in re.split(r"[/*{}]", node.value)
        if re.fullmatch(r"[A-Za-z][\w.=-]*", piece)
    }
    return {p for p in pieces if "." in p}, {p for p in pieces if "." not in p and "=" not in p}


def literals_outside_the_store() -> list[str]:
    """'file:line: literal' for every literal outside gridlab/store/ that spells a name layout.py defines, or
    looks like a results file or folder name."""
    files, folders = layout_names()
    spelled = re.compile("|".join(rf"(?<![\w.-]){re.escape(name)}(?![\w-])" for name in sorted(files)))
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        if where.parts[0] == "store":
            continue
        for node in code_literals(path):
            text = node.value
            named = spelled.search(text) or LOOKS_LIKE_RESULTS.search(text)
            in_path = "/" in text and folders & set(text.split("/"))
            if (named or in_path) and (where.as_posix(), text) not in NOT_RESULTS:
                found.append(f"{where}:{node.lineno}: {text!r}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                right = node.right
                if isinstance(right, ast.Constant) and right.value in folders:
                    found.append(f"{where}:{node.lineno}: / {right.value!r}")
    return found


def test_layout_names_are_read_from_layout():
    files, folders = layout_names()
    assert {CellFiles.METRICS, TrackingFiles.JOURNAL, CacheFiles.META, "summary.parquet"} <= files
    assert {"analyses", "models", "tune", "tracking", "cache"} <= folders


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
