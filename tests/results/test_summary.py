"""summary.parquet: a launch restricted with --where rewrites its own cells' rows and keeps the others'."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from gridlab.results import summary
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
