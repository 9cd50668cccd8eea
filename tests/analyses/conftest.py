"""Shared test data for the analyses: tiny synthetic test rows, with the short cases SPEC singles out."""

from __future__ import annotations

from pathlib import Path

from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig


def short_synthetic_rows(root: Path, n_test: int) -> dict:
    """`n_test` synthetic test rows of lengths 3-14, the first cut to T = 1 and the second to T = 2."""
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=n_test, min_length=3, max_length=14))
    data = load_dataset("synthetic", root, root / "cache", config)
    rows = data.splits["test"].select(["ids", "label", "instance_id"]).to_pydict()
    rows["ids"][0], rows["ids"][1] = rows["ids"][0][:1], rows["ids"][1][:2]
    return {"data": data, "rows": rows}
