"""The declarations are found, not listed: every folder of `gridlab/analyses/` with a `compute` module is an
analysis, declared by its `__init__.py` without torch; docs/analyses.md has a section for each (the count is
derived here, never written by hand); a malformed plug-in folder is refused with a line that names it."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
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


IMPORTS = "import pyarrow as pa\nfrom gridlab.catalog.analyses import AnalysisInfo, NoParams\n"
HOLDS = 'rows=pa.schema([("x", pa.float64())]), summary_columns=("x_mean",)'  # what a toy's rows and summary hold


@pytest.mark.parametrize(
    ("declaration", "error"),
    [
        ("", "bad_plugin_0.toy/__init__.py: expected INFO, the analysis's AnalysisInfo"),
        (
            IMPORTS + f'INFO = AnalysisInfo("other", "x", NoParams, "instance", {HOLDS})',
            "bad_plugin_1.toy/__init__.py: INFO.id is 'other', expected its folder's name",
        ),
        (
            IMPORTS + f'INFO = AnalysisInfo("toy", "x", NoParams, "grid", {HOLDS})',
            "analysis toy: a grid-scope analysis",
        ),
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
        IMPORTS + f'INFO = AnalysisInfo("permutation", "x", NoParams, "instance", {HOLDS})',
    )
    catalog = Declarations("gridlab.analyses")
    with pytest.raises(
        ValueError, match="analysis id 'permutation' is already declared by gridlab.analyses.permutation"
    ):
        catalog.add_package("bad_plugin_taken")


def test_only_grid_scope_names_peers():
    with pytest.raises(ValueError, match="a grid-scope analysis, and only one, says who its peers are"):
        AnalysisInfo("toy", "x", NoParams, "instance", peers=lambda configs: {}, rows=ROWS, summary_columns=("x",))


ROWS = pa.schema([("x", pa.float64())])


@pytest.mark.parametrize(
    ("holds", "error"),
    [
        ({"rows": ["x"], "summary_columns": ("x",)}, "analysis toy: rows must be a pyarrow schema, not list"),
        ({"rows": ROWS, "summary_columns": ()}, "analysis toy: summary_columns must be a non-empty tuple of names"),
        ({"rows": ROWS, "summary_columns": "x_mean"}, "analysis toy: summary_columns must be a non-empty tuple"),
    ],
)
def test_a_declaration_says_what_its_rows_and_summary_hold(holds: dict, error: str):
    with pytest.raises(ValueError, match=re.escape(error)):
        AnalysisInfo("toy", "x", NoParams, "instance", **holds)


def test_every_declaration_holds_its_rows_and_summary_names():
    """Torch-free: the columns each analysis writes and the names its summary has, each name once."""
    for info in ANALYSES.values():
        assert isinstance(info.rows, pa.Schema) and len(info.rows) >= 1, info.id
        assert len(set(info.summary_columns)) == len(info.summary_columns) >= 1, info.id
    permutation = ANALYSES["permutation"]
    assert permutation.rows.names == ["tvd_median", "tvd_mean", "tvd_max"]
    assert permutation.summary_column("tvd_max_max") == "tvd_max_max" and not permutation.summarised("tvd_max")


def test_a_field_of_a_summary_name_stands_for_a_whole_number():
    layers, correlation = ANALYSES["layer_permutation"], ANALYSES["importance_correlation"]
    assert layers.summary_column("accuracy_12_layers") == "accuracy_{layers}_layers"
    assert not layers.summarised("accuracy_x_layers") and not layers.summarised("accuracy__layers")
    assert correlation.summary_column("sig_loo_class3") == "sig_loo_class{k}"
    assert correlation.summary_column("sig_loo") == "sig_loo" and not correlation.summarised("sig_loo_class")
