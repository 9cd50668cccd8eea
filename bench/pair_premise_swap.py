"""How much of a trained pair model's decision reads the premise: its test accuracy with its own premise, with
another pair's premise (the batch rolled by one row, each hypothesis kept, attention recomputed over the other
premise), and with the attention's context zeroed (the output reads the hypothesis's summary alone). A model
whose accuracy survives both has no use for its attention over the premise, whatever the attention ablation
puts there (grids/ablations/vashishth_snli_attention.yaml).

    GRIDLAB_DATA=../shared/data python bench/pair_premise_swap.py runs/vashishth 84cef9b99fad bfa926408e99

Reads the cells' stored configs and weights from `<results_dir>/<grid>/models/<cell>`; prints one row a cell.
A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from gridlab.config.schema import CellConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.prepare import load_dataset
from gridlab.models.classifier import PairClassifier
from gridlab.models.factory import build_model


def load_cell(folder: Path, data_dir: Path, cache: Path):
    stored = json.loads((folder / "config.json").read_text())
    stored.pop("cell_id", None)
    config = CellConfig.model_validate(stored)
    data = load_dataset(config.dataset, data_dir, cache, config.data)
    model = build_model(config, data)
    model.load_state_dict(torch.load(folder / "model.pt", map_location="cpu", weights_only=True))
    if not isinstance(model, PairClassifier):
        raise SystemExit(f"{folder}: not a pair model")
    return config, data, model.eval()


@torch.no_grad()
def accuracies(model: PairClassifier, table) -> dict[str, float]:
    hits = {"own premise": 0, "another premise": 0, "zero context": 0}
    for batch in iterate_batches(table, 256):
        encoded = model.encode(batch)
        h, mask, query = encoded.h, encoded.mask, encoded.query
        other_h, other_mask = h.roll(1, 0), mask.roll(1, 0)  # (B, T, m), (B, T): row i reads row i-1's premise
        logits = {
            "own premise": model.decode(h, model.attend(h, mask, query), query),
            "another premise": model.decode(other_h, model.attend(other_h, other_mask, query), query),
            "zero context": model.decode(h, torch.zeros_like(mask, dtype=h.dtype), query),
        }
        for name, values in logits.items():
            hits[name] += int((values.argmax(-1) == batch.labels).sum())
    return {name: hit / table.num_rows for name, hit in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grid_results", type=Path, help="<results_dir>/<grid name>, e.g. runs/vashishth")
    parser.add_argument("cells", nargs="+")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("GRIDLAB_DATA", "data"))
    for cell in args.cells:
        config, data, model = load_cell(
            args.grid_results / "models" / cell, data_dir, args.grid_results.parent / "cache"
        )
        scores = accuracies(model, data.splits["test"])
        setting = f"{config.model.pair_output}, carve {config.data.carve_unit}"
        print(f"{cell} ({setting}): " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))


if __name__ == "__main__":
    main()
