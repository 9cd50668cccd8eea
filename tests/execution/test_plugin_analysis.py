"""Adding an analysis takes one class and one registry line: a toy analysis defined in this file (not
importable by Ray's workers, so it travels by value) is validated, planned, run by `gridlab launch` on a
local Ray and shown in `gridlab report`, through the CLI as a user would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from gridlab.analyses import registry
from gridlab.analyses.base import AnalysisContext, Columns, InstanceAnalysis
from gridlab.analyses.common import SharedPass
from gridlab.catalog import analyses as catalog
from gridlab.catalog.analyses import AnalysisInfo, Params
from gridlab.cli import app

from .conftest import write_grid

pytestmark = pytest.mark.slow


class ToyParams(Params):
    scale: float = 1.0


class PeakAttention(InstanceAnalysis[ToyParams]):
    """The largest attention weight of each instance, times `scale`."""

    info = AnalysisInfo("toy_peak", "largest attention weight, scaled", ToyParams, "instance")
    schema = pa.schema([("peak", pa.float64())])
    version = 1

    @staticmethod
    def run(context: AnalysisContext[ToyParams], shared: SharedPass) -> Columns:
        return {"peak": (shared.alpha.max(-1).values.double() * context.params.scale).cpu().numpy()}

    reference = run

    @staticmethod
    def summarize(rows: pd.DataFrame) -> dict[str, float]:
        return {"peak_mean": float(rows["peak"].mean())}


@pytest.fixture
def toy_registered() -> Iterator[None]:
    registry.register(PeakAttention)  # the one registry line
    yield
    del registry.IMPLEMENTATIONS["toy_peak"], catalog.ANALYSES["toy_peak"]  # as they were, for the other tests


def test_a_toy_analysis_is_validated_planned_run_and_reported(tmp_path: Path, toy_registered, local_ray):
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

    report = cli.invoke(app, ["report", str(path)])
    assert report.exit_code == 0, report.output
    table = pd.read_csv(tmp_path / "runs" / "g" / "report" / "summary_toy_peak.csv")
    assert table["peak_mean"].tolist() == pytest.approx([rows["peak"].mean()])
