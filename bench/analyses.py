"""Instances per second of each implemented per-instance analysis: the batched implementation against the
straightforward per-instance loop of the same math (`reference`), on the issue's models: a BiLSTM (hidden
128 per direction, embeddings 300, additive attention, batch 32) on SST-like (T = 20) and IMDB-like
(T = 180) inputs, plus the original code's figures measured on the same 2-core machine.

    python bench/analyses.py                  # CPU, all analyses, both lengths
    python bench/analyses.py --device cuda --lengths 180 --analyses permutation

Prints a table; it is a benchmark, not a test. Untrained weights, sharpened so that decisions do flip
(erasure stops at the first flip, so a model that never flips would flatter it).
"""

from __future__ import annotations

import argparse
import time

import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.implementations import IMPLEMENTATIONS
from gridlab.analyses.registry import ANALYSES
from gridlab.data.batching import collate
from gridlab.models.attention import AttentionSpec
from gridlab.models.classifier import FlatClassifier, Sizes
from gridlab.models.encoders import build_encoder

VOCAB = 20_000
# The original code on this machine (instances/s, SST-like / IMDB-like), from the issue.
ORIGINAL = {
    "permutation": ("215-320", "52"),
    "adversarial": ("23-29", "5.4-6.3"),
    "importance_correlation": ("190-220 (LOO), 1,400 (grad)", "2.5-2.9 (LOO), 160 (grad)"),
    "erasure_multi": ("1,900-2,200 per ranking", "92-113 per ranking"),
    "erasure_single": ("-", "-"),
}
TARGET = {"permutation": "20x", "erasure_multi": "20x per ranking", "adversarial": "4x",
          "importance_correlation": "LOO 2x (rnn), 20x (cnn/avg); grad 1.5x"}


def model(encoder: str) -> FlatClassifier:
    torch.manual_seed(0)
    classifier = FlatClassifier(Sizes(VOCAB, 300, 2, 128, 0.0), build_encoder(encoder, 300, 128),
                                AttentionSpec("additive", "softmax"))
    with torch.no_grad():
        classifier.attention.context.weight.mul_(10.0)
        classifier.classifier.weight.mul_(30.0)
    return classifier.eval()


def batches(length: int, count: int, batch_size: int = 32):
    generator = torch.Generator().manual_seed(length)
    for start in range(0, count, batch_size):
        n = min(batch_size, count - start)
        ids = torch.randint(4, VOCAB, (n, length), generator=generator).tolist()
        rationale = (torch.rand((n, length), generator=generator) < 0.1).tolist()  # for rationale_recovery
        yield collate({"instance_id": list(range(start, start + n)), "label": [0] * n, "ids": ids,
                       "rationale": rationale})


def rate(function, context, shared_passes, instances: int) -> float:
    started = time.perf_counter()
    for shared in shared_passes:
        function(context, shared)
    return instances / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 180])
    parser.add_argument("--encoder", default="lstm")
    per_instance = sorted(a for a, m in IMPLEMENTATIONS.items() if hasattr(m, "reference"))
    parser.add_argument("--analyses", nargs="+", default=per_instance, choices=per_instance)
    parser.add_argument("--instances", type=int, default=64, help="instances per measurement (batched)")
    parser.add_argument("--loop-instances", type=int, default=16, help="instances for the per-instance loop")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    classifier = model(args.encoder).to(device)
    print(f"device {device}, encoder {args.encoder}, torch threads {args.threads}")
    print(f"{'analysis':24} {'T':>4} {'batched/s':>10} {'loop/s':>9} {'ratio':>7}  target   original (inst/s)")
    for length in args.lengths:
        passes = [forward_once(classifier, b.to(device)) for b in batches(length, args.instances)]
        loop_passes = [forward_once(classifier, b.to(device)) for b in batches(length, args.loop_instances)]
        for analysis_id in args.analyses:
            module = IMPLEMENTATIONS[analysis_id]
            context = AnalysisContext("bench", classifier, device, ANALYSES[analysis_id].params())
            module.run(context, passes[0])  # warm-up
            batched = rate(module.run, context, passes, args.instances)
            loop = rate(module.reference, context, loop_passes, args.loop_instances)
            original = ORIGINAL.get(analysis_id, ("-", "-"))[0 if length <= 20 else 1]
            print(f"{analysis_id:24} {length:>4} {batched:>10.1f} {loop:>9.1f} {batched / loop:>6.1f}x  "
                  f"{TARGET.get(analysis_id, '-'):8} {original}", flush=True)


if __name__ == "__main__":
    main()
