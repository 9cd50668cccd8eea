"""The trained-model store: `results_dir/<grid>/models/<cell id>/`, one folder per cell.

    config.json    the resolved cell config (what the id hashes)
    data.json      the dataset reference: id, cache key, vocabulary size and digest, label names
    model.pt       the best epoch's weights (selected on dev)
    history.json   per-epoch train loss and dev metrics
    metrics.json   final metrics, test included; with model.pt, it means "trained"
    failure.json   why the last attempt failed (absent once the cell is trained)

A folder is complete or absent: it is assembled in a hidden sibling and renamed into place, so a process
killed mid-write never leaves a half cell that a relaunch would trust.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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


@dataclass(frozen=True)
class CellFolder:
    path: Path

    @property
    def checkpoint(self) -> Path:
        return self.path / "model.pt"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.json"

    @property
    def failure_file(self) -> Path:
        return self.path / "failure.json"

    def state(self) -> CellState:
        if self.metrics_file.is_file() and self.checkpoint.is_file():
            return "trained"
        return "failed" if self.failure_file.is_file() else "pending"

    def read(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def failure_reason(self) -> str | None:
        return self.read("failure.json")["reason"] if self.failure_file.is_file() else None


class ModelStore:
    def __init__(self, grid_results: Path):
        self.root = grid_results / "models"

    def cell(self, cell_id: str) -> CellFolder:
        return CellFolder(self.root / cell_id)

    def publish(self, cell_id: str, folder: Path, extra: dict[str, Any]) -> CellFolder:
        """Publish a trained cell from a finished trial's folder, plus `extra` JSON files."""

        def fill(staging: Path) -> None:
            for path in folder.iterdir():
                shutil.copyfile(path, staging / path.name)
            for name, value in extra.items():
                (staging / name).write_text(json.dumps(value, indent=2, sort_keys=True))

        return self._publish(cell_id, fill)

    def write_failure(self, cell_id: str, reason: str, config: dict, tracking: dict) -> CellFolder:
        def fill(staging: Path) -> None:
            (staging / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
            (staging / "failure.json").write_text(json.dumps({"reason": reason}, indent=2))
            (staging / "tracking.json").write_text(json.dumps(tracking, indent=2, sort_keys=True))

        return self._publish(cell_id, fill)

    def _publish(self, cell_id: str, fill) -> CellFolder:
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{cell_id}-", dir=self.root))
        target = self.root / cell_id
        try:
            fill(staging)
            retired = None
            if target.exists():
                retired = self.root / f".{cell_id}-retired-{os.getpid()}"
                os.rename(target, retired)
            os.rename(staging, target)
            if retired is not None:
                shutil.rmtree(retired, ignore_errors=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return CellFolder(target)
