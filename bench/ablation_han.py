"""Time of attention_ablation's accuracy pass for a HAN: gridlab's word level once a batch, then the sentence level
once per mode (learned, uniform, random, permuted), against the whole model once per mode, which it replaced. The
word level is nearly all of the work, and its states do not depend on the weights later put on them. Both sides run
on the same model and rows in the same process, rounds interleaved; prints the median of the rounds and whether the
two sides' accuracies are equal (they must be: accuracy is a count, every draw is per instance).

A second comparison, read in batches of similar length rather than in file order, was measured with this bench's
first version and left out: no gain (the HAN's word level already runs its sentences longest first in chunks
padded to their own longest; the flat model 3.7 s in file order against 3.4-4.0 s by length on 2,000 reviews).

    GRIDLAB_DATA=../shared/data python bench/ablation_han.py                      # IMDB, 500 test reviews
    python bench/ablation_han.py --instances 2000 --repeats 3 --threads 2

Model: Vashishth's IMDB HAN (BiLSTM at both levels, 50d embeddings, 128 per direction, additive attention,
punctuation stripped), untrained (the time does not depend on the weights); the rows are a fixed random sample of
the test split (its file order lists the negative reviews first). Prints a table; a benchmark, not a test.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import torch
from interleave import command_line, interleaved

from gridlab.analyses.attention_ablation import AttentionAblationParams
from gridlab.analyses.attention_ablation import compute as attention_ablation
from gridlab.analyses.base import AnalysisContext
from gridlab.config.schema import CellConfig
from gridlab.data.batching import sample_rows
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.grid.expand import resolve_data_dir
from gridlab.models.factory import build_model

CONFIG = CellConfig(
    dataset="imdb",
    architecture="han",
    model={"embedding_dim": 50, "hidden_size": 128, "attention_size": 128},
    data={"strip_punctuation": True},
)
MODES = ["learned", "uniform", "random", "permute"]
PREDICTIONS = attention_ablation._predictions


def model_per_mode(context, model, batch, modes) -> torch.Tensor:
    """What the analysis computed before: the whole model, word level included, once per mode."""
    return torch.cat([PREDICTIONS(context, model, batch, [mode]) for mode in modes], dim=1)


SIDES: dict[str, Callable] = {"model per mode": model_per_mode, "gridlab: words once": PREDICTIONS}


def timed(model: torch.nn.Module, data: PreparedDataset, predictions: Callable) -> tuple[float, dict[str, float]]:
    """Seconds for the analysis's accuracy pass with `predictions` for each batch, and its accuracies."""
    original = attention_ablation._predictions
    attention_ablation._predictions = predictions
    try:
        context = AnalysisContext("bench", model, torch.device("cpu"), AttentionAblationParams(modes=MODES[1:]))
        started = time.perf_counter()
        values = attention_ablation._classifier_accuracies(context, model, data, MODES)
        return time.perf_counter() - started, values
    finally:
        attention_ablation._predictions = original


def main() -> None:
    args = command_line(__doc__, 500, "test reviews, a fixed random sample")
    with tempfile.TemporaryDirectory() as cache:
        data = load_dataset(CONFIG.dataset, resolve_data_dir(None), Path(cache), CONFIG.data)
        test = data.splits["test"]
        data = dataclasses.replace(
            data, splits={**data.splits, "test": test.take(pa.array(sample_rows(test.num_rows, args.instances)))}
        )
        torch.manual_seed(0)
        model = build_model(CONFIG, data).eval()
        seconds, values = interleaved(SIDES, args.repeats, lambda predictions: timed(model, data, predictions))
    before, ours = seconds.values()
    same = values["model per mode"] == values["gridlab: words once"]
    print(f"{'reviews':>8} {'model per mode s':>17} {'words once s':>13} {'speed-up':>9}  accuracies equal")
    print(f"{args.instances:8d} {before:17.2f} {ours:13.2f} {before / ours:8.1f}x  {same}")


if __name__ == "__main__":
    main()
