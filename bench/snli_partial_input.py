"""How far SNLI's label can be read from one side of a pair alone, on gridlab's derived split (about 15,700
training pairs carved from dev and test, by premise or pair by pair: `data.carve_unit`): a bag-of-words
logistic regression over the hypothesis only, the premise only, and both bags side by side (no interaction
between them). A pair model whose output layer reads the hypothesis's summary can reach the hypothesis-only
accuracy without its attention; one that reads the hypothesis only through its attention weights cannot
(grids/ablations/vashishth_snli_attention.yaml).

    GRIDLAB_DATA=../shared/data python bench/snli_partial_input.py
    python bench/snli_partial_input.py --max-train 8000 --seeds 3 --carve-unit instance

Trains each baseline with Adam for `--epochs` epochs, keeps the epoch of best dev accuracy and prints its test
accuracy (mean over seeds); the majority class's test share is the floor. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset

SIDES = {"hypothesis": ("query_ids",), "premise": ("ids",), "both bags": ("ids", "query_ids")}


def bags(table: pa.Table, columns: tuple[str, ...], vocab: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """EmbeddingBag inputs (flat ids, offsets) for the rows of `table`; the second column's ids are shifted by
    `vocab`, so its words get weights of their own."""
    rows = [
        np.concatenate([np.asarray(ids) + k * vocab for k, ids in enumerate(r)])
        for r in zip(*(table[c].to_pylist() for c in columns))
    ]
    offsets = torch.tensor(np.cumsum([0] + [len(r) for r in rows[:-1]]))
    return torch.from_numpy(np.concatenate(rows)).long(), offsets, torch.tensor(table["label"].to_pylist())


class BagOfWords(nn.Module):
    """Logits = W counts + b: multinomial logistic regression on word counts."""

    def __init__(self, words: int, classes: int):
        super().__init__()
        self.weights = nn.EmbeddingBag(words, classes, mode="sum")
        nn.init.zeros_(self.weights.weight)
        self.bias = nn.Parameter(torch.zeros(classes))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.weights(ids, offsets) + self.bias  # (B, C)


def accuracy(model: BagOfWords, data) -> float:
    ids, offsets, labels = data
    with torch.no_grad():
        return float((model(ids, offsets).argmax(-1) == labels).float().mean())


def fit(splits: dict, columns: tuple[str, ...], vocab: int, classes: int, seed: int, epochs: int) -> float:
    """Test accuracy at the epoch of best dev accuracy."""
    torch.manual_seed(seed)
    data = {s: bags(t, columns, vocab) for s, t in splits.items()}
    model = BagOfWords(vocab * len(columns), classes)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-5)
    ids, offsets, labels = data["train"]
    starts = offsets.tolist() + [len(ids)]
    best_dev, test = -1.0, float("nan")
    for _ in range(epochs):
        for chunk in torch.randperm(len(labels)).split(64):
            pieces = [ids[starts[i] : starts[i + 1]] for i in chunk.tolist()]
            chunk_offsets = torch.tensor(np.cumsum([0] + [len(p) for p in pieces[:-1]]))
            loss = nn.functional.cross_entropy(model(torch.cat(pieces), chunk_offsets), labels[chunk])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        dev = accuracy(model, data["dev"])
        if dev > best_dev:
            best_dev, test = dev, accuracy(model, data["test"])
    return test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-train", type=int, default=None, help="the first N training pairs (the grids' head)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--carve-unit", choices=["instance", "premise"], default="premise", help="data.carve_unit")
    args = parser.parse_args()
    data = load_dataset(
        "snli",
        Path(os.environ.get("GRIDLAB_DATA", "data")),
        Path("runs/cache"),
        DataConfig(derive_splits=True, carve_unit=args.carve_unit),
    )
    splits = dict(data.splits)
    if args.max_train is not None:
        splits["train"] = splits["train"].slice(0, args.max_train)
    labels = np.asarray(splits["test"]["label"].to_pylist())
    majority = np.bincount(labels).max() / len(labels)
    print(f"train {splits['train'].num_rows} pairs, test {len(labels)}; majority class {majority:.3f}")
    for side, columns in SIDES.items():
        scores = [
            fit(splits, columns, len(data.vocab), len(data.label_names), s, args.epochs) for s in range(args.seeds)
        ]
        print(f"{side:>11}: test accuracy {np.mean(scores):.3f} ({', '.join(f'{x:.3f}' for x in scores)})")


if __name__ == "__main__":
    main()
