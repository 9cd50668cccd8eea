"""The sheets name predictions by the dataset's class names ("negative"), not by the files' labels ("0"):
token_scores rows made by hand, no model."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from gridlab.annotate.export import export_cells


def scores_rows(dataset: str, labels: list[str], n: int = 6) -> pd.DataFrame:
    """n instances of five tokens, gold label i % 2, predicted (i + 1) % 2, the permuted prediction the gold."""
    weights = [0.4, 0.3, 0.2, 0.1, 0.0]
    rows = [
        {
            "dataset": dataset,
            "instance_id": i,
            "items": ["a", "fine", "and", "moving", "film"],
            "length": 5,
            "label": i % 2,
            "pred": (i + 1) % 2,
            "permuted_pred": i % 2,
            "label_name": labels[i % 2],
            "pred_name": labels[(i + 1) % 2],
            "alpha": weights,
            "alpha_order": [0, 1, 2, 3, 4],
            "permuted_alpha": weights[::-1],
            "permuted_order": [4, 3, 2, 1, 0],
        }
        for i in range(n)
    ]
    return pd.DataFrame(rows)


def test_the_sheet_and_instructions_use_class_names(tmp_path: Path):
    rows = {"c" * 12: scores_rows("sst", ["0", "1"]), "d" * 12: scores_rows("imdb", ["neg", "pos"])}
    export_cells("g", rows, per_cell=6, out=tmp_path)
    with (tmp_path / "items.csv").open(newline="") as stream:
        shown = {row["prediction"] for row in csv.DictReader(stream)}
    assert shown == {"negative", "positive"}
    instructions = (tmp_path / "INSTRUCTIONS.md").read_text()
    assert "- negative, positive\n" in instructions and "- 0, 1" not in instructions and "neg," not in instructions
    key = pd.read_parquet(tmp_path / "key.parquet")
    assert set(key["label"]) == {0, 1}  # the key keeps class indices: scoring never reads a name


def test_labels_without_names_are_shown_as_they_are(tmp_path: Path):
    export_cells("g", {"e" * 12: scores_rows("babi1", ["garden", "kitchen"])}, per_cell=6, out=tmp_path)
    assert "- garden, kitchen\n" in (tmp_path / "INSTRUCTIONS.md").read_text()
