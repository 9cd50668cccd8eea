"""Fixtures for the report tests: a stand-in for ReportInputs over hand-made rows, a real grid on disk with
hand-made Parquet rows and trained-cell metrics (`SyntheticGrid`, for what reads the grid itself: fidelity),
and one launched quick grid with its report, shared by the end-to-end and browser tests (launching it is the
expensive part)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

REPO = Path(__file__).resolve().parents[2]


@dataclass
class FakeInputs:
    """The part of ReportInputs a section reads: rows per analysis, trained cells, the grid's analyses."""

    frames: dict[str, pd.DataFrame]
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    analyses: dict = field(default_factory=dict)

    def rows(self, analysis_id: str) -> pd.DataFrame | None:
        return self.frames.get(analysis_id)

    def requested(self, analysis_id: str) -> bool:
        return analysis_id in self.frames or analysis_id in self.analyses

    def partial(self, analysis_id: str) -> list[str]:
        return []  # hand-made rows are whole

    @property
    def grid(self) -> SimpleNamespace:
        return SimpleNamespace(analyses=self.analyses, file="grid.yaml", cells=[])


@pytest.fixture(autouse=True)
def no_shipped_ablations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped ablations.yaml names real SST runs; report tests build synthetic rows for the same cells,
    so they see no entries unless a test passes its own."""
    for module in ("gridlab.studies.fidelity", "gridlab.studies.fidelity_doc"):
        monkeypatch.setattr(f"{module}.load_ablations", lambda: [])


@pytest.fixture
def fake_inputs() -> type[FakeInputs]:
    return FakeInputs


@dataclass
class SyntheticGrid:
    """A grid file expanded for real (ids, axes, analyses) over a temporary results_dir, where tests write
    rows and trained cells by hand: no training, no data needed."""

    folder: Path
    spec: dict

    @property
    def path(self) -> Path:
        path = self.folder / f"{self.spec['name']}.yaml"
        if not path.is_file():
            path.write_text(yaml.safe_dump({"results_dir": str(self.folder / "runs"), **self.spec}, sort_keys=False))
        return path

    @cached_property
    def expanded(self):
        from gridlab.grid.expand import expand
        from gridlab.grid.load import load_grid_file

        return expand(load_grid_file(self.path), str(self.path), check_data=False)

    def cells(self, **where) -> list:
        """The grid's cells whose config has these values (e.g. dataset="sst", seed=0)."""
        return [c for c in self.expanded.cells if all(getattr(c.config, k) == v for k, v in where.items())]

    def write_rows(self, analysis: str, cell, records: list[dict], shard: int = 0) -> None:
        """One Parquet part of `analysis` for `cell` (shard 0 unless told): the cell's common columns, then each
        record."""
        from gridlab.results.parts import AXES

        common = {"cell_id": cell.id, **{axis: getattr(cell.config, axis) for axis in AXES}}
        frame = pd.DataFrame.from_records([{**common, **record} for record in records])
        frame["projection_lambda"] = frame["projection_lambda"].astype(float)
        path = self.expanded.workspace.part(analysis, cell.id, shard)
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(path)

    def write_trained(self, cell, test_rows: int | None = None, **metrics: object) -> None:
        """The cell's model folder as a finished trial leaves it (metrics.json + a stand-in model.pt; with
        `test_rows`, data.json's row count of the test split, which says how many shards its analyses have)."""
        folder = self.expanded.results_dir / "models" / cell.id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "metrics.json").write_text(json.dumps({"final": True, **metrics}))
        (folder / "model.pt").write_bytes(b"")
        if test_rows is not None:
            (folder / "data.json").write_text(json.dumps({"rows": {"test": test_rows}}))


@pytest.fixture
def synthetic_grid(tmp_path: Path):
    """`synthetic_grid(spec)` -> a SyntheticGrid named after spec['name'] in this test's tmp_path."""
    return lambda spec: SyntheticGrid(tmp_path, spec)


@contextmanager
def local_ray(temp_dir: Path) -> Iterator[None]:
    """A local Ray on loopback for one launch (the same settings as tests/execution's `local_ray`), shut down
    after it so module-scoped Rays of other test folders can start later in the session."""
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.2",
        logging_level="warning",
        _temp_dir=str(temp_dir),
        log_to_driver=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class QuickRun:
    grid_file: Path  # the quick grid, with results_dir and data_dir pointing at this run
    results: Path  # results_dir/quick
    report: Path  # results/report, built by `gridlab report`
    output: str  # what `gridlab report` printed

    @property
    def manifest(self) -> dict:
        return json.loads((self.report / "report.json").read_text())


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory: pytest.TempPathFactory, shipped_sst: Path) -> QuickRun:
    """grids/quick.yaml launched (trained and analysed) in a temporary results dir, then `gridlab report`."""
    from typer.testing import CliRunner

    from gridlab.cli import app

    folder = tmp_path_factory.mktemp("quick")
    grid = yaml.safe_load((REPO / "grids" / "quick.yaml").read_text())
    grid["results_dir"] = str(folder / "runs")
    grid["data_dir"] = str(shipped_sst)  # SST is read in Ray workers: the whole release, shipped in the package
    path = folder / "quick.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    with local_ray(tmp_path_factory.mktemp("ray")):
        launched = CliRunner().invoke(app, ["launch", str(path)])
    assert launched.exit_code == 0, launched.output
    reported = CliRunner().invoke(app, ["report", str(path)])
    assert reported.exit_code == 0, reported.output
    results = folder / "runs" / "quick"
    return QuickRun(path, results, results / "report", reported.output)
