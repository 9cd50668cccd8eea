"""Training time of `adversarial_model`'s adversary: the base model's outputs and attention stored once per
instance and looked up in every batch (`BaseReference`, gridlab's) against a base pass in every batch (what it
replaced), on IMDB with the Meister grid's cells. Both sides train the same adversary from the same start on the
same batches for a few epochs, in the same process, rounds interleaved; the median of the rounds is printed with
the largest difference of the two sides' adversary weights after them (float rounding only, which Adam's
normalised steps amplify: the base pass is the same computation in other batches).

    GRIDLAB_DATA=../shared/data python bench/adversary.py                    # 320 reviews, both encoders
    python bench/adversary.py --instances 1000 --epochs 8 --repeats 5 --threads 2 --encoders transformer

Models: the Meister grid's IMDB cells (BiLSTM + additive and Transformer + dot, 50d embeddings, 128 hidden,
batches of 32 of similar length, reviews under 400 tokens), untrained: the time does not depend on the weights.
Prints a table; it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from interleave import command_line, interleaved

from gridlab.analyses.adversarial_model import AdversarialModelParams
from gridlab.analyses.adversarial_model import compute as adversarial_model
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.config.schema import CellConfig
from gridlab.data.batching import Batch
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.grid.expand import resolve_data_dir
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.factory import build_model
from gridlab.training.loop import make_optimizer, train_epoch

SETTINGS = {
    "model": {"embedding_dim": 50, "hidden_size": 128, "attention_size": 128, "transformer_layers": 2},
    "train": {"batch_size": 32, "clip_norm": None, "batching": "bucketed", "weight_decay": 1.0e-5, "amsgrad": True},
    "data": {"strip_punctuation": True, "max_length": 399},
}
CELLS = {
    "lstm": CellConfig(dataset="imdb", encoder="lstm", attention="additive", **SETTINGS),
    "transformer": CellConfig(dataset="imdb", encoder="transformer", attention="dot", **SETTINGS),
}
PARAMS = AdversarialModelParams()

Loss = Callable[[AttentionClassifier, Batch], torch.Tensor]


def base_pass_every_batch(base: AttentionClassifier, table, device: torch.device) -> Loss:
    """What the adversary computed before: the base model's pass on every batch of every epoch."""

    def loss_of(adversary: AttentionClassifier, batch: Batch) -> torch.Tensor:
        with torch.no_grad():
            reference = forward_once(base, batch)
        probs, alpha, mask = adversarial_model.adversary_pass(adversary, batch)
        return adversarial_model.objective(probs, reference.probs, alpha, reference.alpha, mask, PARAMS.lam).mean()

    return loss_of


def stored_base_side(base: AttentionClassifier, table, device: torch.device) -> Loss:
    """gridlab's: the base side stored once (its one pass counted in the time), looked up by instance id."""
    reference = adversarial_model.base_reference(base, table, device)
    return lambda adversary, batch: adversarial_model.batch_objective(adversary, reference, batch, PARAMS).mean()


SIDES = {"base pass every batch": base_pass_every_batch, "stored base side": stored_base_side}


def train_once(
    config: CellConfig, data: PreparedDataset, instances: int, epochs: int, side: Callable
) -> tuple[float, torch.Tensor]:
    """Seconds for `epochs` adversary epochs over the first `instances` training reviews (the stored side's one
    base pass included), and the adversary's weights after them, flattened."""
    torch.manual_seed(0)
    base = build_model(config, data).eval()
    context = AnalysisContext("bench", base, torch.device("cpu"), PARAMS, config)
    adversary = adversarial_model.initial_adversary(context, data, "frozen")
    optimizer = make_optimizer(adversary, config.train)
    table = data.splits["train"].slice(0, instances)
    started = time.perf_counter()
    loss_of = side(base, table, torch.device("cpu"))
    for epoch in range(epochs):
        train_epoch(adversary, table, config.train, optimizer, torch.device("cpu"), epoch, loss_of=loss_of)
    seconds = time.perf_counter() - started
    return seconds, torch.cat([p.detach().flatten() for p in adversary.parameters()])


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--encoders", nargs="+", choices=sorted(CELLS), default=sorted(CELLS))
    parser.add_argument("--epochs", type=int, default=4, help="adversary epochs per timed run (the grids: 8)")
    parser.add_argument("--dataset", default="imdb", help="another single-text dataset for a quick run (sst)")


def main() -> None:
    args = command_line(__doc__, 320, "training texts per epoch", options)
    print(f"{'encoder':>12} {'texts':>8} {'base pass s':>12} {'stored s':>9} {'speed-up':>9} {'max |weight diff|':>18}")
    with tempfile.TemporaryDirectory() as cache:
        for encoder in args.encoders:
            config = CELLS[encoder].model_copy(update={"dataset": args.dataset})
            data = load_dataset(config.dataset, resolve_data_dir(None), Path(cache), config.data)
            seconds, weights = interleaved(
                SIDES, args.repeats, lambda side: train_once(config, data, args.instances, args.epochs, side)
            )
            old, new = seconds.values()
            first, second = weights.values()
            diff = (first - second).abs().max().item()
            print(f"{encoder:>12} {args.instances:8d} {old:12.2f} {new:9.2f} {old / new:8.2f}x {diff:18.1e}")


if __name__ == "__main__":
    main()
