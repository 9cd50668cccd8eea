"""Peak memory and time of one leave-one-out chunk of the pretrained encoder on a long ERASER movie review
(`--words` of its first test review, each deletion a 512-piece sequence), with every layer's attention maps
kept on the pass (as every pass did before `PretrainedEncoder.keeping_maps`) and without (now, outside the
readings that need them). Each side runs in a process of its own (peak RSS is per process), the two
alternating for `--repeats` rounds.

    GRIDLAB_DATA=../shared/data python bench/pretrained_maps.py --repeats 2

Needs the movie reviews (`movies`) and `gridlab[pretrained]`."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from gridlab.analyses.importance.deletion import deleted_batch, shift_index
from gridlab.analyses.importance.leave_one_out import LOO_CHUNK_ELEMENTS
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.models.factory import build_model
from gridlab.models.pretrained import PretrainedClassifier


def one_chunk(kept: bool, cache: Path) -> dict:
    """Build the model, then time one chunk of deletions of the first test review; its peak RSS above the
    model's."""
    data = load_dataset("movies", Path(os.environ["GRIDLAB_DATA"]), cache, DataConfig())
    config = CellConfig(
        dataset="movies",
        encoder="pretrained",
        attention="dot",
        model=ModelConfig(pretrained="all-minilm-l6-v2", max_pieces=512),
    )
    torch.manual_seed(0)
    model = build_model(config, data).eval()
    assert isinstance(model, PretrainedClassifier)
    review = collate(data.splits["test"].slice(0, 1).to_pydict())
    words = int(review.lengths[0])
    rows = LOO_CHUNK_ELEMENTS // (words * model.encoder.output_dim)  # leave-one-out's rows a call
    deletions = deleted_batch(
        review, torch.zeros(rows, dtype=torch.long), shift_index(torch.arange(1, rows + 1), words)
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with torch.no_grad(), model.encoder.keeping_maps() if kept else nullcontext():
        logits = model(deletions)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "words": words,
        "rows": rows,
        "seconds": seconds,
        "peak_gb": peak / 1e6,
        "model_gb": before / 1e6,
        "logits_sum": float(logits.double().sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--side", choices=["kept", "dropped"], help=argparse.SUPPRESS)  # one measurement
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(one_chunk(args.side == "kept", args.cache)))
        return
    results: dict[str, list[dict]] = {"kept": [], "dropped": []}
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(args.repeats):
            for side, runs in results.items():
                command = [sys.executable, __file__, "--side", side, "--cache", cache]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out.splitlines()[-1]))
    for side, runs in results.items():
        print(
            f"maps {side}: {runs[0]['rows']} deletions of a {runs[0]['words']}-word review, peak RSS "
            + ", ".join(f"{r['peak_gb']:.2f}" for r in runs)
            + " GB (model loaded: "
            + ", ".join(f"{r['model_gb']:.2f}" for r in runs)
            + "), "
            + ", ".join(f"{r['seconds']:.0f}" for r in runs)
            + " s"
        )
    assert {round(r["logits_sum"], 4) for runs in results.values() for r in runs} == {
        round(results["kept"][0]["logits_sum"], 4)
    }, "the two sides' outputs differ"


if __name__ == "__main__":
    main()
