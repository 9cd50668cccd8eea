"""What the full-data IMDB cells of the J&W and S&S grids would cost on one GPU, from arithmetic on the real
data, for docs/scale.md: no GPU has run gridlab, so this is an estimate and says so.

    GRIDLAB_DATA=../shared/data python bench/gpu_arithmetic.py

A recurrent model's training step cannot go faster than its recurrences' sequential steps (one small kernel
each, forward and backward) nor than its arithmetic at the GPU's throughput; the CPU-side batching (Arrow rows
to padded tensors) stays on the CPU whatever the device. For each cell kind this counts, over one epoch as
gridlab batches it (bucketed, full training split):
- batches, tokens, and the recurrences' sequential steps (a flat model: each batch's longest review; a HAN:
  each chunk of sentences' longest sentence, then the most sentences);
- multiply-adds: 2 per non-embedding parameter per token forward, 3 times that for a training step;
- the batching's own seconds, timed here on this CPU.
The per-step latency and the sustained throughput are assumptions, given as options and printed beside the
result. J&W's analyses are bounded the same way where they dominate: leave-one-out, counted as if each
review ran again once per word (gridlab's recurrent path does less: it resumes from the full pass's states
and stops once it rejoins them). S&S erase at the attention layer, so their analyses are one forward and one
gradient pass a review."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from gridlab.analyses.importance.leave_one_out import LOO_CHUNK_ELEMENTS
from gridlab.data.batching import bucketed_batches, collate, sequence_lengths
from gridlab.data.prepare import load_dataset
from gridlab.grid.expand import Cell, expand, restrict
from gridlab.grid.load import load_grid_file
from gridlab.models.classifier import WORD_CHUNK_ROWS
from gridlab.models.factory import build_model

REPO = Path(__file__).resolve().parent.parent
CELLS = {  # what docs/scale.md costs: the cells behind the fidelity table's reduced IMDB rows
    "J&W IMDB, BiLSTM + additive": ("jain_wallace.yaml", ["dataset=imdb", "encoder=lstm", "attention=additive"]),
    "S&S imdb10, HAN (GRU)": ("serrano_smith.yaml", ["dataset=imdb10", "architecture=han", "encoder=gru"]),
    "S&S imdb10, flat (GRU)": ("serrano_smith.yaml", ["dataset=imdb10", "architecture=flat", "encoder=gru"]),
}


def grid_cell(file: str, where: list[str]) -> Cell:
    path = REPO / "grids" / file
    grid = restrict(expand(load_grid_file(path), str(path), check_data=False), [*where, "seed=0"])
    (cell,) = grid.cells
    return cell


def recurrent_steps(ids: list[list[int]], starts: list[list[int]] | None) -> int:
    """Sequential steps of one forward pass over a batch: the longest review, or for a HAN the longest
    sentence of each chunk of WORD_CHUNK_ROWS sentences (longest first) plus the most sentences."""
    if starts is None:
        return max(len(row) for row in ids) + 2  # <sos>, <eos>
    sentences = [np.diff([*s, len(row)]) for row, s in zip(ids, starts)]
    lengths = np.sort(np.concatenate(sentences))[::-1]
    chunk_longest = lengths[::WORD_CHUNK_ROWS]
    return int(chunk_longest.sum()) + max(len(s) for s in sentences)


def loo_steps(lengths: np.ndarray, state_width: int) -> int:
    """Sequential steps of leave-one-out over reviews of `lengths` words: each review's L deletions run in
    chunks of LOO_CHUNK_ELEMENTS state elements, each chunk L + 1 steps long (L - 1 words, <sos>, <eos>)."""
    rows_per_chunk = np.maximum(LOO_CHUNK_ELEMENTS // (lengths * state_width), 1)
    return int((np.ceil(lengths / rows_per_chunk) * (lengths + 1)).sum())


def dense_parameters(model: nn.Module) -> int:
    """Parameters that every token multiplies (all but the embedding tables)."""
    embedded = {id(p) for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in embedded)


def epoch_counts(cell: Cell, data_dir: Path, cache_dir: Path) -> dict:
    config = cell.config
    data = load_dataset(config.dataset, data_dir, cache_dir, config.data)
    train = data.splits["train"]
    hierarchical = config.architecture == "han"
    batches = bucketed_batches(sequence_lengths(train) + 2, config.train.batch_size, config.seed)
    ids = train.column("ids").to_pylist()
    starts = train.column("sentence_starts").to_pylist() if hierarchical else None
    steps = sum(
        recurrent_steps([ids[i] for i in b], None if starts is None else [starts[i] for i in b]) for b in batches
    )
    tokens = int(sequence_lengths(train).sum())
    columns = [c for c in ("instance_id", "label", "ids", "sentence_starts") if c in train.column_names]
    table = train.select(columns)
    started = time.perf_counter()
    for chunk in batches:
        collate(table.take(chunk).to_pydict(), sentences=hierarchical)
    batching = time.perf_counter() - started
    test_lengths = sequence_lengths(data.splits["test"]).astype(np.float64)
    model = build_model(config, data)
    return {
        "config": config,
        "rows": train.num_rows,
        "batches": len(batches),
        "tokens": tokens,
        "steps": steps,
        "dense": dense_parameters(model),
        "batching_s": batching,
        "test_rows": len(test_lengths),
        "test_tokens": float(test_lengths.sum()),
        "test_squared": float((test_lengths**2).sum()),
        "loo_steps": loo_steps(test_lengths, model.encoder.output_dim),
    }


def report(name: str, c: dict, step_us: tuple[float, float], tflops: float, seeds: int) -> None:
    config = c["config"]
    train_flop = 6 * c["dense"] * c["tokens"]  # forward 2, backward 4 per parameter per token
    low = c["batching_s"] + max(train_flop / (tflops * 1e12), 2 * c["steps"] * step_us[0] * 1e-6)
    high = c["batching_s"] + max(train_flop / (tflops * 1e12), 2 * c["steps"] * step_us[1] * 1e-6)
    epochs = config.train.epochs * seeds
    print(f"## {name} ({config.train.epochs} epochs x {seeds} seeds)")
    print(
        f"  one epoch: {c['rows']:,} reviews, {c['batches']:,} batches of {config.train.batch_size}, "
        f"{c['tokens']:,} tokens, {c['steps']:,} sequential recurrent steps forward, "
        f"{c['dense']:,} dense parameters, {train_flop / 1e12:.2f} TFLOP; batching on this CPU {c['batching_s']:.1f} s"
    )
    total = f"{low * epochs / 60:.0f}-{high * epochs / 60:.0f} min"
    print(f"  GPU estimate: {low:.0f}-{high:.0f} s an epoch, {total} for all")
    if config.dataset == "imdb":  # J&W analyse every test review; leave-one-out is the bulk of it
        # at most: as if each deletion re-ran the whole review, where gridlab's recurrent path resumes each
        # direction from the full pass's state beside the gap and stops once it rejoins the full pass
        flop = 2 * c["dense"] * c["test_squared"]
        low, high = (max(flop / (tflops * 1e12), c["loo_steps"] * us * 1e-6) for us in step_us)
        print(
            f"  analyses, at most: leave-one-out as if each of the {c['test_rows']:,} test reviews ran again "
            "once per word: "
            f"{c['test_squared']:,.0f} tokens, {flop / 1e12:.0f} TFLOP and {c['loo_steps']:,} sequential steps a "
            f"model: {low / 60:.0f}-{high / 60:.0f} min a model, {low * seeds / 60:.0f}-{high * seeds / 60:.0f} min "
            "for these seeds (permutation and the adversary recompute the output layer only)"
        )
    else:  # S&S erase at the attention layer: one forward and one gradient pass a review, the rest output-layer
        print(
            "  analyses: one forward and one gradient pass over 1,000 test reviews a model; erasure recomputes "
            "only the output layer: seconds"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step-us", type=float, nargs=2, default=(20.0, 60.0), help="µs per recurrent step, low high")
    parser.add_argument("--tflops", type=float, default=5.0, help="sustained fp32 TFLOP/s on these small matrices")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=REPO / "runs" / "cache")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"assumed: {args.step_us[0]:g}-{args.step_us[1]:g} µs a recurrent step, {args.tflops:g} TFLOP/s sustained")
    for name, (file, where) in CELLS.items():
        counts = epoch_counts(grid_cell(file, where), Path(os.environ["GRIDLAB_DATA"]), args.cache)
        report(name, counts, tuple(args.step_us), args.tflops, args.seeds)


if __name__ == "__main__":
    main()
