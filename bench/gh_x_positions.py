"""`sparsity_importance`'s `gh_x_positions` on a trained model: entropy_gh_x averaged over every item p
(Meister et al.: one backward per item, O(T^2)) against at most N items evenly spaced over each instance
(N backwards). For batches of the cell's analysed test rows in length order (the longest, the median, a
quarter of the way up), each N runs on the same batch one after another; prints each N's time and how far
its per-instance entropy_gh_x is from the every-position one. A benchmark, not a test.

    GRIDLAB_DATA=../shared/data python bench/gh_x_positions.py runs/meister CELL_ID
    python bench/gh_x_positions.py runs/meister CELL_ID --positions 64 32 --batch 32 --threads 2

CELL_ID: a trained flat/pair cell of that grid's results folder (`gridlab plan --json` lists the ids).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from gridlab.analyses.common import forward_once
from gridlab.analyses.sparsity_importance import compute as sparsity_importance
from gridlab.data.batching import collate
from gridlab.execution.runner import ShardRunner
from gridlab.grid.expand import resolve_data_dir


def entropies(model, batch, shared, positions: int | None) -> tuple[np.ndarray, float]:
    """Per-instance entropy_gh_x (NaN where undefined) and the seconds its gradients took."""
    started = time.perf_counter()
    gh_x = sparsity_importance.representation_input_gradient_norms(model, batch, shared, positions)
    seconds = time.perf_counter() - started
    mask = shared.encoded.mask.cpu().numpy()
    values = gh_x.double().cpu().numpy()
    means = [sparsity_importance.mean_entropy(values[b][np.ix_(mask[b], mask[b])]) for b in range(len(mask))]
    return np.array([np.nan if m is None else m for m in means]), seconds


def compare(model, rows: pa.Table, positions: list[int], batch_size: int) -> list[str]:
    """Markdown rows: for batches of `rows` (in length order) from the top, the middle and a quarter of the
    way up, each N's seconds beside every position's and the per-instance entropy_gh_x differences."""
    lines = [
        "| batch from | longest | N | seconds | every-position seconds | max abs diff | mean diff |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for start in (rows.num_rows - batch_size, rows.num_rows // 2, rows.num_rows // 4):
        start = max(start, 0)
        batch = collate(rows.slice(start, batch_size).to_pydict())
        shared = forward_once(model, batch)
        every, every_seconds = entropies(model, batch, shared, None)
        longest = int(shared.encoded.mask.sum(1).max())
        for n in positions:
            sampled, seconds = entropies(model, batch, shared, n)
            diff = sampled - every
            lines.append(
                f"| {start} | {longest} | {n} | {seconds:.1f} | {every_seconds:.1f} | "
                f"{np.nanmax(np.abs(diff)):.4f} | {np.nanmean(diff):+.5f} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the grid's results folder (runs/<grid>)")
    parser.add_argument("cell", help="a trained cell id")
    parser.add_argument("--positions", type=int, nargs="+", default=[64, 32, 16])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--instances", type=int, default=1000, help="the grid's `instances`")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runner = ShardRunner(args.results, resolve_data_dir(None), args.results.parent / "cache", torch.device("cpu"))
    cell = runner.load(args.cell)
    population = min(args.instances, cell.data.splits["test"].num_rows)
    config = cell.config
    print(f"{args.cell} ({config.dataset}, {config.encoder}), batches of {args.batch}, {args.threads} thread(s)")
    print("\n".join(compare(cell.model, cell.shard_rows(0, population, population), args.positions, args.batch)))


if __name__ == "__main__":
    main()
