"""Training time of the recurrent encoder: gridlab's CPU pass (each direction a one-way pass over the padded
batch, the backward one reversed within each row) against the packed bidirectional sequence it replaced, on
real data. Both sides train the same model from the same start on the same batches, in the same process,
rounds interleaved; the median of the rounds is printed with the largest difference of the two sides' test
logits after training (float rounding only: the equations are the same).

    GRIDLAB_DATA=../shared/data python bench/recurrent.py                    # bAbI 2 and SST, 1000 instances
    python bench/recurrent.py --datasets babi2 --instances 2000 --repeats 5 --threads 2

Models: J&W's bAbI pair BiLSTM (50d embeddings from scratch, 32 per direction, batches of 50) and their SST
BiLSTM (50d, 128 per direction, batches of 32). Prints a table; it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from interleave import command_line, interleaved
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from gridlab.config.schema import CellConfig
from gridlab.data.batching import collate
from gridlab.data.prepare import load_dataset
from gridlab.grid.expand import resolve_data_dir
from gridlab.models.encoders import Recurrent
from gridlab.models.factory import build_model
from gridlab.training.loop import make_optimizer, train_epoch

CONFIGS = {
    "babi2": CellConfig(
        dataset="babi2",
        architecture="pair",
        model={"embedding_dim": 50, "hidden_size": 32, "attention_size": 32},
        train={"batch_size": 50, "clip_norm": None},
    ),
    "sst": CellConfig(
        dataset="sst",
        model={"embedding_dim": 50, "hidden_size": 128, "attention_size": 128},
        train={"batch_size": 32, "clip_norm": None},
    ),
}


def packed_forward(self: Recurrent, x: torch.Tensor, lengths: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """What `Recurrent.forward` computed before: one packed sequence through the bidirectional module."""
    packed = pack_padded_sequence(x, lengths.clamp_min(1).cpu(), batch_first=True, enforce_sorted=False)
    h, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=x.shape[1])
    return h


PASSES: dict[str, Callable] = {"packed": packed_forward, "per direction": Recurrent.forward}


def train_once(config: CellConfig, data, instances: int, forward: Callable) -> tuple[float, torch.Tensor]:
    """Seconds for one epoch over the first `instances` training rows, and the trained model's test logits."""
    original = Recurrent.forward
    Recurrent.forward = forward  # type: ignore[method-assign]
    try:
        model = build_model(config, data)
        optimizer = make_optimizer(model, config.train)
        table = data.splits["train"].slice(0, instances)
        started = time.perf_counter()
        train_epoch(model, table, config.train, optimizer, torch.device("cpu"), epoch_seed=0)
        seconds = time.perf_counter() - started
        model.eval()
        with torch.no_grad():
            logits = model(collate(data.splits["test"].slice(0, 64).to_pydict()))
        return seconds, logits
    finally:
        Recurrent.forward = original  # type: ignore[method-assign]


def dataset_choice(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))


def main() -> None:
    args = command_line(__doc__, 1000, "training rows per timed epoch", more=dataset_choice)
    data_dir = resolve_data_dir(None)
    print(f"{'dataset':8} {'packed s':>9} {'per direction s':>16} {'speed-up':>9} {'max |logit diff|':>17}")
    with tempfile.TemporaryDirectory() as cache:
        for dataset in args.datasets:
            config = CONFIGS[dataset]
            data = load_dataset(dataset, data_dir, Path(cache), config.data)
            seconds, logits = interleaved(
                PASSES, args.repeats, lambda forward: train_once(config, data, args.instances, forward)
            )
            old, new = seconds.values()
            diff = (logits["packed"] - logits["per direction"]).abs().max().item()
            print(f"{dataset:8} {old:9.2f} {new:16.2f} {old / new:8.1f}x {diff:17.1e}")


if __name__ == "__main__":
    main()
