"""Training time of the translation model: gridlab's teacher forcing (target embeddings looked up once, the
vocabulary-sized readout applied once after the decoder loop, only at target tokens) against the step-by-step
pass it replaced (`decode_step` at every step: an embedding lookup, a readout and their weight gradients a step,
padded steps included), on Multi30k. Both sides train the same model from the same start on the same batches, in
the same process, rounds interleaved; the median of the rounds is printed with the largest difference of the
two sides' weights after training (float rounding only: the equations are the same).

    GRIDLAB_DATA=../shared/data python bench/seq2seq.py                      # 640 sentence pairs
    python bench/seq2seq.py --instances 1600 --repeats 5 --threads 2

Model: the Vashishth grid's Multi30k cell (BiGRU encoder, GRU decoder, additive attention, 300d embeddings from
scratch, 128 hidden, batches of 32, clipping at 5). Prints a table; it is a benchmark, not a test.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from interleave import command_line, interleaved

from gridlab.config.schema import CellConfig
from gridlab.data.batching import Batch
from gridlab.data.prepare import load_dataset
from gridlab.grid.expand import resolve_data_dir
from gridlab.models.factory import build_model
from gridlab.models.seq2seq import Seq2Seq, sequence_loss
from gridlab.training.loop import make_optimizer, train_epoch

CONFIG = CellConfig(
    dataset="multi30k",
    architecture="seq2seq",
    encoder="gru",
    attention="additive",
    model={"embeddings": None, "embedding_dim": 300, "hidden_size": 128, "attention_size": 128},
    train={"batch_size": 32, "clip_norm": 5.0, "batching": "shuffled"},
)


def stepwise_loss(model: Seq2Seq, batch: Batch) -> torch.Tensor:
    """What training computed before: logits step by step through `decode_step`, the loss over every step."""
    encoded = model.encode(batch)
    state = model.initial_state(encoded.h, batch)
    logits = []
    for t in range(batch.target_ids.shape[1] - 1):
        alpha = model.attend(encoded.h, encoded.mask, state)
        step_logits, state = model.decode_step(encoded.h, alpha, state, batch.target_ids[:, t])
        logits.append(step_logits)
    return sequence_loss(torch.stack(logits, dim=1), batch.target_ids)


LOSSES: dict[str, Callable[[Seq2Seq, Batch], torch.Tensor]] = {
    "step by step": stepwise_loss,
    "batched readout": Seq2Seq.loss,
}


def train_once(data, instances: int, loss_of: Callable) -> tuple[float, torch.Tensor]:
    """Seconds for one epoch over the first `instances` training pairs, and the trained weights, flattened."""
    model = build_model(CONFIG, data)
    optimizer = make_optimizer(model, CONFIG.train)
    table = data.splits["train"].slice(0, instances)
    started = time.perf_counter()
    train_epoch(model, table, CONFIG.train, optimizer, torch.device("cpu"), epoch_seed=0, loss_of=loss_of)
    seconds = time.perf_counter() - started
    return seconds, torch.cat([p.detach().flatten() for p in model.parameters()])


def main() -> None:
    args = command_line(__doc__, 640, "training pairs per timed epoch")
    with tempfile.TemporaryDirectory() as cache:
        data = load_dataset(CONFIG.dataset, resolve_data_dir(None), Path(cache), CONFIG.data)
        seconds, weights = interleaved(LOSSES, args.repeats, lambda loss_of: train_once(data, args.instances, loss_of))
    old, new = seconds.values()
    diff = (weights["step by step"] - weights["batched readout"]).abs().max().item()
    print(f"{'pairs':>6} {'step by step s':>15} {'batched readout s':>18} {'speed-up':>9} {'max |weight diff|':>18}")
    print(f"{args.instances:6d} {old:15.2f} {new:18.2f} {old / new:8.1f}x {diff:18.1e}")


if __name__ == "__main__":
    main()
