"""One side of `bench/shard.py --before REV`: the J&W shard run with whichever gridlab is importable (a
revision's code first on PYTHONPATH, or this checkout's), timed, its rows pickled for the parent to compare.

It uses only interfaces gridlab had before shards were cut by length (dataset loading, the model factory,
the shared pass, each analysis's `run`), so that the same file drives a revision from before issue 14 and
today's code: the two sides differ in gridlab alone. The loop is the shard runner's: batches of 32 in the
order of the given rows, one shared pass per batch, every analysis on it.

    python bench/shard_worker.py --rows rows.npy --weights model.pt --out side.pkl [--steps 500] ...
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.catalog import DATASETS
from gridlab.data.prepare import load_dataset
from gridlab.models.factory import build_model

BATCH_SIZE = 32


def jw_config(dataset: str) -> CellConfig:
    """The J&W BiLSTM of bench/shard.py (embeddings 300, hidden 128 per direction, additive attention)."""
    config = CellConfig(
        dataset=dataset,
        encoder="lstm",
        attention="additive",
        model=ModelConfig(embedding_dim=300, hidden_size=128, attention_size=128),
        train=TrainConfig(batch_size=32, lr=1e-3, amsgrad=True, weight_decay=1e-5, clip_norm=None),
    )
    return config.model_copy(update={"data": DATASETS[dataset].resolve(config.data)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="imdb")
    parser.add_argument("--rows", type=Path, required=True, help=".npy of test-split positions, in run order")
    parser.add_argument("--weights", type=Path, required=True, help="the model's state_dict (torch.save)")
    parser.add_argument("--analyses", required=True, help="JSON: analysis id -> parameters")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = jw_config(args.dataset)
    data = load_dataset(config.dataset, args.data_dir, args.cache, config.data)
    model = build_model(config, data)
    model.load_state_dict(torch.load(args.weights, map_location="cpu", weights_only=True))
    model.eval()
    table = data.splits["test"].take(pa.array(np.load(args.rows)))
    device = torch.device("cpu")
    analyses = json.loads(args.analyses)
    contexts = {
        a: AnalysisContext("bench", model, device, IMPLEMENTATIONS[a].info.params.model_validate(p))
        for a, p in analyses.items()
    }
    columns: dict[str, list[dict]] = {a: [] for a in analyses}
    started = time.perf_counter()
    for batch in iterate_batches(table, BATCH_SIZE):
        shared = forward_once(model, batch)
        for analysis_id in analyses:
            columns[analysis_id].append(IMPLEMENTATIONS[analysis_id].run(contexts[analysis_id], shared))
    seconds = time.perf_counter() - started
    rows = {a: {name: np.concatenate([c[name] for c in chunks]) for name in chunks[0]} for a, chunks in columns.items()}
    instance_ids = np.asarray(table.column("instance_id").to_pylist())
    with args.out.open("wb") as file:
        pickle.dump({"seconds": seconds, "instance_id": instance_ids, "rows": rows}, file)


if __name__ == "__main__":
    main()
