"""An analysis is one folder, a plug-in's as gridlab's own: a toy analysis written as a package in a temporary
folder (importable here, not by Ray's workers, so it travels by value) is added with one call, then validated,
planned, run by `gridlab launch` on a local Ray, summarised and shown in `gridlab report`, through the CLI as a
user would."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from gridlab.analyses import registry
from gridlab.catalog.analyses import ANALYSES
from gridlab.cli import app

from .conftest import write_grid

pytestmark = pytest.mark.slow

PACKAGE = "toy_plugins"
DECLARATION = """
import pyarrow as pa

from gridlab.catalog.analyses import AnalysisInfo, Params


class ToyParams(Params):
    scale: float = 1.0


INFO = AnalysisInfo(
    "toy_peak",
    "largest attention weight, scaled",
    ToyParams,
    "instance",
    rows=pa.schema([("peak", pa.float64())]),
    summary_columns=("peak_mean",),
)
"""
COMPUTE = '''
import pandas as pd

from gridlab.analyses.base import AnalysisContext, Columns, InstanceAnalysis
from gridlab.analyses.common import SharedPass
from toy_plugins.toy_peak import INFO, ToyParams


class PeakAttention(InstanceAnalysis[ToyParams]):
    """The largest attention weight of each instance, times `scale`."""

    info = INFO
    version = 1

    @staticmethod
    def run(context: AnalysisContext[ToyParams], shared: SharedPass) -> Columns:
        return {"peak": (shared.alpha.max(-1).values.double() * context.params.scale).cpu().numpy()}

    reference = run

    @staticmethod
    def summarize(rows: pd.DataFrame) -> dict[str, float]:
        return {"peak_mean": float(rows["peak"].mean())}
'''


def write_plugin(folder: Path) -> None:
    """The plug-in, in gridlab's own shape: `<package>/<id>/__init__.py` declares, `compute.py` computes."""
    analysis = folder / PACKAGE / "toy_peak"
    analysis.mkdir(parents=True)
    (folder / PACKAGE / "__init__.py").write_text("")
    (analysis / "__init__.py").write_text(DECLARATION)
    (analysis / "compute.py").write_text(COMPUTE)


@pytest.fixture
def toy_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    write_plugin(tmp_path / "plugins")
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    assert registry.register(PACKAGE) == ["toy_peak"]  # the one step
    yield
    ANALYSES.forget(PACKAGE)  # as they were, for the other tests
    registry.IMPLEMENTATIONS.forget("toy_peak")
    for module in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[module]


def test_a_toy_analysis_folder_is_validated_planned_run_and_reported(tmp_path: Path, toy_registered, local_ray):
    assert registry.is_plugin("toy_peak") and not registry.is_plugin("permutation")
    path = write_grid(
        tmp_path,
        grid={"dataset": ["synthetic"], "encoder": ["lstm"], "seed": [0]},
        train={"epochs": 1, "batch_size": 64, "max_train": 256},
        analyses={"toy_peak": {"scale": 2.0}},
        instances=64,
        shard_size=32,
    )
    cli = CliRunner()
    valid = cli.invoke(app, ["validate", str(path)])
    assert valid.exit_code == 0 and "toy_peak" in valid.output, valid.output
    bad = write_grid(tmp_path, name="bad", analyses={"toy_peak": {"scale": "large"}})
    invalid = cli.invoke(app, ["validate", str(bad)])
    assert invalid.exit_code == 2 and "toy_peak" in invalid.output and "scale" in invalid.output, invalid.output
    plan = cli.invoke(app, ["plan", str(path)])
    assert plan.exit_code == 0 and "toy_peak: 1 of 1 cell (" in plan.output, plan.output

    launched = cli.invoke(app, ["launch", str(path)])
    assert launched.exit_code == 0, launched.output
    rows = pd.read_parquet(tmp_path / "runs" / "g" / "analyses" / "toy_peak")
    assert len(rows) == 64 and rows["instance_id"].is_unique
    assert (rows["peak"] == 2.0 * rows["max_attention"]).all() and (rows["analysis_version"] == 1).all()
    summary = pd.read_parquet(tmp_path / "runs" / "g" / "summary.parquet")
    assert summary["toy_peak.peak_mean"].tolist() == pytest.approx([rows["peak"].mean()])

    report = cli.invoke(app, ["report", str(path)])
    assert report.exit_code == 0, report.output
    table = pd.read_csv(tmp_path / "runs" / "g" / "report" / "summary_toy_peak.csv")
    assert table["peak_mean"].tolist() == pytest.approx([rows["peak"].mean()])
