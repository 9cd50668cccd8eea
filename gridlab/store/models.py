"""The trained-model store: `results_dir/<grid>/models/<cell id>/`, one folder per cell, holding the files
named in `layout.CellFiles` (`metrics.json` and `model.pt` together mean "trained", `failure.json` why the
last attempt failed).

A folder is complete or absent: it is assembled in a hidden sibling and renamed into place (`atomic`), so a
process killed mid-write never leaves a half cell that a relaunch would trust.

    >>> store = ModelStore(workspace.models)
    >>> store.cell(cell_id).state()                  # "trained" | "failed" | "pending"
    >>> store.cell(cell_id).read(CellFiles.METRICS)
    >>> trained_elsewhere(Results(results_dir), "quick", cell_id)  # the same cell, trained by another grid
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gridlab.store.atomic import publish_folder, staging_folder
from gridlab.store.layout import CellFiles, Results

CellState = Literal["trained", "failed", "pending"]


def data_reference(data) -> dict[str, Any]:
    """data.json: enough to reload exactly this vocabulary from the dataset cache, and to notice if it changed."""
    return {
        "dataset": data.id,
        "cache_key": data.cache_key,
        "derived_splits": data.derived_splits,
        "label_names": list(data.label_names),
        "vocab_size": len(data.vocab),
        "vocab_sha256": data.vocab.digest(),
        "rows": {split: table.num_rows for split, table in data.splits.items()},
    }


def write_trained(
    folder: Path,
    cell_id: str,
    config: dict[str, Any],
    weights: Mapping[str, Any],
    data_json: dict[str, Any],
    metrics: dict[str, Any],
    history: list[dict[str, Any]],
) -> None:
    """The files of a trained cell (`CellFiles.TRAINED`) into `folder`: what a finished trial leaves, for the
    store to publish. `weights` is a state dict (saved on CPU); `config` the resolved cell config as JSON."""
    import torch  # here, not at the top: readers of the store (reports, status) never load torch

    torch.save({k: v.cpu() for k, v in weights.items()}, folder / CellFiles.MODEL)
    files = {
        CellFiles.CONFIG: {"cell_id": cell_id, **config},
        CellFiles.DATA: data_json,
        CellFiles.HISTORY: history,
        CellFiles.METRICS: metrics,
    }
    for name, value in files.items():
        (folder / name).write_text(json.dumps(value, indent=2, sort_keys=True))


@dataclass(frozen=True)
class CellFolder:
    path: Path  # results_dir/<grid>/models/<cell id>

    @property
    def grid(self) -> str:
        """The name of the grid whose store holds this cell."""
        return self.path.parent.parent.name

    @property
    def checkpoint(self) -> Path:
        return self.path / CellFiles.MODEL

    @property
    def metrics_file(self) -> Path:
        return self.path / CellFiles.METRICS

    @property
    def failure_file(self) -> Path:
        return self.path / CellFiles.FAILURE

    def state(self) -> CellState:
        return state_of({name for name in (CellFiles.METRICS, CellFiles.MODEL, CellFiles.FAILURE) if self.has(name)})

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    def read(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def failure_reason(self) -> str | None:
        return self.read(CellFiles.FAILURE)["reason"] if self.failure_file.is_file() else None

    def mlflow_run_id(self) -> str | None:
        return self.read(CellFiles.TRACKING)["mlflow_run_id"] if self.has(CellFiles.TRACKING) else None


def state_of(names: set[str]) -> CellState:
    """A cell's state from the file names its model folder holds (on disk or in an object store): its final
    metrics beside its weights mean trained, a failure record failed, anything else pending."""
    if {CellFiles.METRICS, CellFiles.MODEL} <= names:
        return "trained"
    return "failed" if CellFiles.FAILURE in names else "pending"


def trained_elsewhere(results: Results, grid: str, cell_id: str) -> CellFolder | None:
    """The cell trained by another grid of the same results folder, the first by grid name, or None. A cell id
    hashes the resolved config, seed included, so two grids that share a cell train the same weights: an
    ablation grid can take the paper grid's models instead of training them again."""
    if not results.path.is_dir():
        return None
    for other in sorted(p.name for p in results.path.iterdir() if p.is_dir() and p.name != grid):
        folder = ModelStore(results.grid(other).models).cell(cell_id)
        if folder.state() == "trained":
            return folder
    return None


class ModelStore:
    def __init__(self, root: Path):
        self.root = root  # results_dir/<grid>/models (GridWorkspace.models)

    def cell(self, cell_id: str) -> CellFolder:
        return CellFolder(self.root / cell_id)

    def publish(self, cell_id: str, folder: Path, extra: dict[str, Any]) -> CellFolder:
        """Publish a trained cell from a folder holding its `CellFiles.TRAINED` files (a finished trial's
        checkpoint, another grid's cell), plus `extra` JSON files; nothing else of that folder is copied."""

        def fill(staging: Path) -> None:
            for name in CellFiles.TRAINED:
                shutil.copyfile(folder / name, staging / name)
            for name, value in extra.items():
                (staging / name).write_text(json.dumps(value, indent=2, sort_keys=True))

        return self._publish(cell_id, fill)

    def publish_trained(self, cell_id: str, **trained: Any) -> CellFolder:
        """Publish a trained cell from its parts (`write_trained`'s arguments after the cell id)."""
        with tempfile.TemporaryDirectory() as tmp:
            write_trained(Path(tmp), cell_id, **trained)
            return self.publish(cell_id, Path(tmp), {})

    def write_failure(self, cell_id: str, reason: str, config: dict, tracking: dict) -> CellFolder:
        def fill(staging: Path) -> None:
            (staging / CellFiles.CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True))
            (staging / CellFiles.FAILURE).write_text(json.dumps({"reason": reason}, indent=2))
            (staging / CellFiles.TRACKING).write_text(json.dumps(tracking, indent=2, sort_keys=True))

        return self._publish(cell_id, fill)

    def _publish(self, cell_id: str, fill: Callable[[Path], None]) -> CellFolder:
        target = self.root / cell_id
        staging = staging_folder(target)
        try:
            fill(staging)
            publish_folder(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return CellFolder(target)
