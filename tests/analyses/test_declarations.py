"""The declarations are found, not listed: every folder of `gridlab/analyses/` with a `compute` module is an
analysis, declared by its `__init__.py` without torch; docs/analyses.md has a section for each (the count is
derived here, never written by hand); a malformed plug-in folder is refused with a line that names it."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridlab.catalog.analyses import ANALYSES, AnalysisInfo, Declarations, NoParams, analysis_folders

REPO = Path(__file__).resolve().parents[2]


def test_every_folder_with_a_computation_is_declared_and_documented():
    folders = sorted(p.parent.name for p in (REPO / "gridlab" / "analyses").glob("*/compute.py"))
    assert list(ANALYSES) == folders and len(folders) > 1
    assert "importance" not in ANALYSES  # shared code is no analysis
    documented = re.findall(r"^## (\w+)$", (REPO / "docs" / "analyses.md").read_text(), re.M)
    assert sorted(set(documented) & set(ANALYSES)) == folders
    counted = re.search(r"the (\d+) analyses", (REPO / "docs" / "analyses.md").read_text())
    assert counted is not None and int(counted.group(1)) == len(ANALYSES)


def test_the_declarations_load_without_torch():
    probe = (
        "import sys; from gridlab.catalog.analyses import ANALYSES; list(ANALYSES); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.endswith('.compute')))"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_a_folder_lends_its_computation_on_first_use():
    """`gridlab.analyses.permutation.run` (what ../shared/perf-peers calls) loads `compute` only when asked."""
    probe = (
        "import sys; from gridlab.analyses import permutation; print('torch' in sys.modules); "
        "from gridlab.analyses.permutation import compute; "
        "print(permutation.run is compute.run, 'torch' in sys.modules); "
        "print(hasattr(permutation, '__wrapped__'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True", "False"]


@pytest.fixture
def plugin_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [m for m in sys.modules if m.split(".")[0].startswith("bad_plugin")]:
        del sys.modules[module]


def write(root: Path, package: str, folder: str, declaration: str) -> None:
    (root / package / folder).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / folder / "__init__.py").write_text(declaration)
    (root / package / folder / "compute.py").write_text("")


IMPORTS = "from gridlab.catalog.analyses import AnalysisInfo, NoParams\n"


@pytest.mark.parametrize(
    ("declaration", "error"),
    [
        ("", "bad_plugin_0.toy/__init__.py: expected INFO, the analysis's AnalysisInfo"),
        (
            IMPORTS + 'INFO = AnalysisInfo("other", "x", NoParams, "instance")',
            "bad_plugin_1.toy/__init__.py: INFO.id is 'other', expected its folder's name",
        ),
        (IMPORTS + 'INFO = AnalysisInfo("toy", "x", NoParams, "grid")', "analysis toy: a grid-scope analysis"),
    ],
)
def test_a_malformed_plugin_folder_is_refused(plugin_root: Path, declaration: str, error: str, request):
    package = f"bad_plugin_{request.node.callspec.indices['declaration']}"
    write(plugin_root, package, "toy", declaration)
    assert analysis_folders(package) == [f"{package}.toy"]
    with pytest.raises(ValueError, match=re.escape(error)):
        Declarations(package).add_package(package)


def test_a_plugin_cannot_take_a_built_in_id(plugin_root: Path):
    write(
        plugin_root,
        "bad_plugin_taken",
        "permutation",
        IMPORTS + 'INFO = AnalysisInfo("permutation", "x", NoParams, "instance")',
    )
    catalog = Declarations("gridlab.analyses")
    with pytest.raises(
        ValueError, match="analysis id 'permutation' is already declared by gridlab.analyses.permutation"
    ):
        catalog.add_package("bad_plugin_taken")


def test_only_grid_scope_names_peers():
    with pytest.raises(ValueError, match="a grid-scope analysis, and only one, says who its peers are"):
        AnalysisInfo("toy", "x", NoParams, "instance", peers=lambda configs: {})
