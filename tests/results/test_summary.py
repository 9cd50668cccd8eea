"""summary.parquet: a launch restricted with --where rewrites its own cells' rows and keeps the others'; a
number a cell did not measure is null there and no metric on its MLflow run."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pytest

from gridlab.analyses.erasure_multi import compute as erasure_multi
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.config.schema import CellConfig
from gridlab.errors import BadInput
from gridlab.results import summary
from gridlab.results.parts import AXES, write_part
from gridlab.store.layout import GridWorkspace


def grid_of(results: Path, cell_ids: list[str]) -> SimpleNamespace:
    return SimpleNamespace(workspace=GridWorkspace(results), cells=[SimpleNamespace(id=i) for i in cell_ids])


def rows(cell_ids: list[str], value: float) -> pd.DataFrame:
    return pd.DataFrame({"grid": "g", "cell_id": cell_ids, "adversarial.jsd_eps_max_median": value})


def test_a_restricted_launch_keeps_the_other_cells_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(summary, "summarize_grid", lambda grid: rows([c.id for c in grid.cells], 0.5))
    summary.write_summary(grid_of(tmp_path, ["a", "b", "c"]))  # the whole grid
    monkeypatch.setattr(summary, "summarize_grid", lambda grid: rows([c.id for c in grid.cells], 0.7))
    own = summary.write_summary(grid_of(tmp_path, ["b"]))  # then --where picks one cell
    assert list(own["cell_id"]) == ["b"]
    stored = pd.read_parquet(GridWorkspace(tmp_path).summary)
    assert dict(zip(stored["cell_id"], stored["adversarial.jsd_eps_max_median"])) == {"a": 0.5, "b": 0.7, "c": 0.5}


def erasure_rows(cell_id: str, tried: list[str], frac: dict[str, list[float | None]]) -> pa.Table:
    """Three instances of T = 4 on which `tried` were tried; `frac` their fractions (null: never flipped)."""
    columns: dict[str, list] = {"cell_id": [cell_id] * 3, "length": [4] * 3, "measured": [tried] * 3}
    for name in erasure_multi.INFO.rows.names[:-1]:
        ranking = name.split("_", 1)[1]
        values = frac.get(ranking, [None] * 3)
        columns[name] = values if name.startswith("frac") else [None if v is None else round(v * 4) for v in values]
    return pa.table(columns)


class Tracker:
    def __init__(self) -> None:
        self.logged: dict[str, dict[str, float]] = {}

    def log_epoch(self, cell_id: str, step: int, metrics: dict[str, float]) -> None:
        self.logged[cell_id] = metrics


def test_what_a_cell_did_not_measure_is_null_and_not_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Cell a asked erasure_multi for attention and norm_rollout, cell b for attention only, which never
    flipped: b's attention is a measured 0, its norm_rollout null in summary.parquet and absent from MLflow."""
    workspace = GridWorkspace(tmp_path)
    fractions = {"attention": [0.25, None, 0.5], "norm_rollout": [0.75, 0.5, 0.25]}
    write_part(workspace.part("erasure_multi", "a", 0), erasure_rows("a", ["attention", "norm_rollout"], fractions))
    write_part(workspace.part("erasure_multi", "b", 0), erasure_rows("b", ["attention"], {}))
    config = CellConfig(dataset="synthetic")
    grid = SimpleNamespace(
        workspace=workspace,
        spec=SimpleNamespace(name="g"),
        analyses={"erasure_multi": None},
        cells=[SimpleNamespace(id="a", config=config), SimpleNamespace(id="b", config=config)],
    )
    frame = summary.write_summary(grid)
    stored = pd.read_parquet(workspace.summary).set_index("cell_id")
    assert stored.loc["a", "erasure_multi.flipped_norm_rollout"] == 1.0
    assert math.isnan(stored.loc["b", "erasure_multi.flipped_norm_rollout"])
    assert stored.loc["b", "erasure_multi.flipped_attention"] == 0.0  # tried, never flipped
    assert {c for c in stored.columns if c.startswith("erasure_multi.")} == {
        "erasure_multi.instances",
        "erasure_multi.flipped_attention",
        "erasure_multi.frac_attention_median",
        "erasure_multi.flipped_norm_rollout",
        "erasure_multi.frac_norm_rollout_median",
    }  # no column for a ranking no cell asked for
    assert set(AXES) <= set(stored.columns)

    trained = SimpleNamespace(cell=lambda cell_id: SimpleNamespace(state=lambda: "trained"))
    monkeypatch.setattr(summary, "ModelStore", lambda folder: trained)
    tracker = Tracker()
    assert summary.log_summaries(grid, frame, tracker) == 2
    assert tracker.logged["b"] == {"erasure_multi.instances": 3.0, "erasure_multi.flipped_attention": 0.0}
    assert tracker.logged["a"]["erasure_multi.frac_attention_median"] == 0.375


def test_a_summary_name_its_declaration_does_not_list_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    workspace = GridWorkspace(tmp_path)
    write_part(workspace.part("erasure_multi", "a", 0), erasure_rows("a", ["attention"], {}))
    grid = SimpleNamespace(
        workspace=workspace,
        spec=SimpleNamespace(name="g"),
        analyses={"erasure_multi": None},
        cells=[SimpleNamespace(id="a", config=CellConfig(dataset="synthetic"))],
    )
    analysis = IMPLEMENTATIONS["erasure_multi"]
    monkeypatch.setattr(analysis, "summarize", staticmethod(lambda rows: {"flipped_attention": 0.0, "flips": 1.0}))
    with pytest.raises(BadInput, match=r"^gridlab/analyses/erasure_multi/__init__.py: summary_columns: .* flips$"):
        summary.summarize_grid(grid)
