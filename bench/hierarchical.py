"""Training time of a hierarchical model's word level: gridlab's pass over the sentences longest first, in chunks
padded to their own longest (a padding sentence is one step), against the pass over the whole padded block
(every document padded to the most sentences, every sentence to the longest) it replaced, on real data. Both
sides train the same model from the same start on the same batches, in the same process, rounds interleaved; the
median of the rounds is printed with the largest difference of the two sides' test logits after training (float
rounding in the gradients only: the forward pass is the same bit for bit, tests/models/test_contract.py).

    GRIDLAB_DATA=../shared/data python bench/hierarchical.py                 # IMDB, 300 reviews
    python bench/hierarchical.py --instances 1000 --repeats 5 --threads 2

Model: Vashishth's IMDB HAN (BiLSTM at both levels, 50d embeddings, 128 per direction, additive attention,
batches of 32 of similar length, punctuation stripped). Prints a table; it is a benchmark, not a test.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from interleave import command_line, interleaved

from gridlab.config.schema import CellConfig
from gridlab.data.batching import collate
from gridlab.data.prepare import load_dataset
from gridlab.grid.expand import resolve_data_dir
from gridlab.models.classifier import HierarchicalClassifier
from gridlab.models.factory import build_model
from gridlab.training.loop import make_optimizer, train_epoch

CONFIG = CellConfig(
    dataset="imdb",
    architecture="han",
    model={"embedding_dim": 50, "hidden_size": 128, "attention_size": 128},
    train={"batch_size": 32, "clip_norm": None, "batching": "bucketed"},
    data={"strip_punctuation": True},
)


def whole_block(self: HierarchicalClassifier, x: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
    """What the word level computed before: every row of the padded block at once."""
    return self.word_encoder(x, words.sum(-1), words)


PASSES: dict[str, Callable] = {"whole block": whole_block, "chunked": HierarchicalClassifier._encode_words}


def train_once(data, instances: int, word_pass: Callable) -> tuple[float, torch.Tensor]:
    """Seconds for one epoch over the first `instances` training rows, and the trained model's test logits."""
    original = HierarchicalClassifier._encode_words
    HierarchicalClassifier._encode_words = word_pass  # type: ignore[method-assign]
    try:
        torch.manual_seed(0)
        model = build_model(CONFIG, data)
        optimizer = make_optimizer(model, CONFIG.train)
        table = data.splits["train"].slice(0, instances)
        started = time.perf_counter()
        train_epoch(model, table, CONFIG.train, optimizer, torch.device("cpu"), epoch_seed=0)
        seconds = time.perf_counter() - started
        model.eval()
        with torch.no_grad():
            logits = model(collate(data.splits["test"].slice(0, 32).to_pydict(), sentences=True))
        return seconds, logits
    finally:
        HierarchicalClassifier._encode_words = original  # type: ignore[method-assign]


def main() -> None:
    args = command_line(__doc__, 300, "training rows per timed epoch")
    with tempfile.TemporaryDirectory() as cache:
        data = load_dataset(CONFIG.dataset, resolve_data_dir(None), Path(cache), CONFIG.data)
        seconds, logits = interleaved(
            PASSES, args.repeats, lambda word_pass: train_once(data, args.instances, word_pass)
        )
    old, new = seconds.values()
    diff = (logits["whole block"] - logits["chunked"]).abs().max().item()
    print(f"{'dataset':8} {'whole block s':>14} {'chunked s':>10} {'speed-up':>9} {'max |logit diff|':>17}")
    print(f"{CONFIG.dataset:8} {old:14.2f} {new:10.2f} {old / new:8.1f}x {diff:17.1e}")


if __name__ == "__main__":
    main()
