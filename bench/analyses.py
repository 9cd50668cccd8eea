"""Instances per second of each per-instance analysis: the batched implementation against the straightforward
per-instance loop of the same math (its `reference`), on the issue's models: a BiLSTM (hidden 128 per
direction, embeddings 300, additive attention, batch 32) on SST-like (T = 20) and IMDB-like (T = 180)
inputs, with the share of each row's time that is the encoder pass.

    python bench/analyses.py                                   # CPU, lstm, every row, both lengths
    python bench/analyses.py --encoder cnn --only leave_one_out
    python bench/analyses.py --device cuda --lengths 180 --only permutation adversarial
    python bench/analyses.py --end-to-end --datasets imdb    # a whole J&W shard on real data (bench/shard.py)

Rows: every per-instance analysis, plus its building blocks measured alone: `gradient` and `leave_one_out`
(the two halves of `importance_correlation`, J&W §4.1), and `adversarial` both at equal steps (early
stopping off, the budget the original always spent; what its target is judged on) and as run in production
(`adversarial_stop`: early stopping on, in batched and loop alike).

Each measurement is repeated (`--repeats`), batched and loop interleaved, and the table shows medians: on a
shared machine the figures move with the load. Every ratio is between figures of this run: the loop is the
baseline here, and the originals' own code is timed against gridlab by `../shared/perf-peers` (same
weights, interleaved), never by figures typed in. `enc ms` is the shared encoder pass of one batch
(`forward_once`, which every J&W function of the originals also runs) and `enc share` its part of that
pass plus the batched analysis: where it is large, no analysis speed-up can move the row much.
`--profile` adds torch's profile of each batched row (its top operators). Prints a table; it is a
benchmark, not a test. Untrained weights, sharpened so that decisions do flip (erasure stops at the first
flip, so a model that never flips would flatter it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from gridlab.analyses import importance
from gridlab.analyses.adversarial import compute as adversarial
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import SharedPass, forward_once
from gridlab.analyses.importance.integrated_gradients import integrated_gradients
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.catalog.analyses import ANALYSES
from gridlab.data.batching import collate
from gridlab.models.attention import AttentionSpec
from gridlab.models.classifier import FlatClassifier, Sizes
from gridlab.models.encoders import build_encoder

VOCAB = 20_000
ENCODERS = ("lstm", "gru", "cnn", "average", "noenc", "transformer")


@dataclass(frozen=True)
class Row:
    """One line of the table: how to run the batched and the loop variant, and what to compare with."""

    params_of: str  # the registry id whose default parameters the context carries
    batched: Callable[[AnalysisContext, SharedPass], object]
    loop: Callable[[AnalysisContext, SharedPass], object]
    target: str = "-"  # issue 14's target against the original code (measured by ../shared/perf-peers)
    loop_cap: int | None = None  # at most this many instances for the loop (the adversarial reference is slow)


def _gradient(context, shared):
    return importance.gradient_importance(context.model, shared.batch, shared)


def _gradient_loop(context, shared):
    return importance.reference_gradient_importance(context.model, shared)


def _leave_one_out(context, shared):
    return importance.leave_one_out(context.model, shared.batch, shared)


def _leave_one_out_loop(context, shared):
    return importance.reference_leave_one_out(context.model, shared)


def _integrated_gradients(context, shared):
    return integrated_gradients(context.model, shared.batch, shared, context.params.ig_steps)


def _integrated_gradients_loop(context, shared):
    one = torch.arange(1, device=shared.pred.device)
    return [_integrated_gradients(context, _rows(shared, one + b)) for b in range(len(shared.pred))]


def _module_row(analysis_id: str, **kwargs) -> Row:
    module = IMPLEMENTATIONS[analysis_id]
    return Row(analysis_id, module.run, module.reference, **kwargs)


def _equal_steps(function):
    return lambda context, shared: function(context, shared, convergence=None)


# Targets are multiples of the original code's figure (issue 14), except where a row says "vs loop".
ROWS: dict[str, Row] = {
    "gradient": Row("importance_correlation", _gradient, _gradient_loop, "1.5x at T = 180"),
    "leave_one_out": Row("importance_correlation", _leave_one_out, _leave_one_out_loop, "2x rnn; 20x vs loop cnn/avg"),
    "importance_correlation": _module_row("importance_correlation"),
    "permutation": _module_row("permutation", target="20x at T = 20"),
    "adversarial": Row(
        "adversarial",
        _equal_steps(adversarial.run),
        _equal_steps(adversarial.reference),
        "4x (equal steps)",
        loop_cap=4,
    ),
    "adversarial_stop": _module_row("adversarial", loop_cap=4),
    "erasure_multi": _module_row("erasure_multi", target="20x per ranking at T = 20"),
    "erasure_single": _module_row("erasure_single"),
    "sparsity_importance": _module_row("sparsity_importance"),
    "rationale_recovery": _module_row("rationale_recovery"),
    "integrated_gradients": Row("eraser", _integrated_gradients, _integrated_gradients_loop),
    "eraser": _module_row("eraser", loop_cap=8),
    "ranking_agreement": _module_row("ranking_agreement", loop_cap=8),
}


def model(encoder: str) -> FlatClassifier:
    torch.manual_seed(0)
    classifier = FlatClassifier(
        Sizes(VOCAB, 300, 2, 128, 0.0), build_encoder(encoder, 300, 128), AttentionSpec("additive", "softmax")
    )
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
        yield collate(
            {"instance_id": list(range(start, start + n)), "label": [0] * n, "ids": ids, "rationale": rationale}
        )


def rate(function, context: AnalysisContext, shared_passes: list[SharedPass], instances: int) -> float:
    synchronize = torch.cuda.synchronize if context.device.type == "cuda" else (lambda: None)
    synchronize()
    started = time.perf_counter()
    for shared in shared_passes:
        shared.memo.clear()  # a pass keeps the rankings' scores for the shard's next analysis: time them each time
        function(context, shared)
    synchronize()
    return instances / (time.perf_counter() - started)


def measure(
    row: Row, context: AnalysisContext, passes, loop_passes, instances: int, loop_instances: int, repeats: int
) -> tuple[float, float]:
    """Median inst/s of the batched and the loop variant over `repeats` interleaved rounds."""
    if row.loop_cap is not None and loop_instances > row.loop_cap:
        loop_passes = [_first(loop_passes[0], row.loop_cap)]
        loop_instances = row.loop_cap
    row.batched(context, passes[0])  # warm-up
    batched, loop = [], []
    for _ in range(repeats):
        batched.append(rate(row.batched, context, passes, instances))
        loop.append(rate(row.loop, context, loop_passes, loop_instances))
    return statistics.median(batched), statistics.median(loop)


def _first(shared: SharedPass, n: int) -> SharedPass:
    """The pass of the first n instances of a batch (the loop reference reads its rows one by one)."""
    return _rows(shared, torch.arange(n, device=shared.alpha.device))


def _rows(shared: SharedPass, rows: torch.Tensor) -> SharedPass:
    """The pass of instances `rows` of a batch."""
    e = shared.encoded
    encoded = replace(e, h=e.h[rows], mask=e.mask[rows], query=None if e.query is None else e.query[rows])
    return SharedPass(
        shared.batch.rows(rows), encoded, shared.alpha[rows], shared.logits[rows], shared.probs[rows], shared.pred[rows]
    )


def main() -> None:
    if "--end-to-end" in sys.argv[1:]:  # the end-to-end rows: real data, file against length order
        from shard import main as end_to_end  # bench/shard.py, beside this file

        end_to_end([a for a in sys.argv[1:] if a != "--end-to-end"])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 180])
    parser.add_argument("--encoder", default="lstm", choices=ENCODERS)
    parser.add_argument(
        "--only",
        "--analyses",
        dest="analyses",
        nargs="+",
        default=list(ROWS),
        choices=list(ROWS),
        metavar="ROW",
        help=f"rows to measure (default all): {', '.join(ROWS)}",
    )
    parser.add_argument("--instances", type=int, default=64, help="instances per measurement (batched)")
    parser.add_argument("--loop-instances", type=int, default=16, help="instances for the per-instance loop")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; the table shows medians")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="also print each batched row's top operators")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    classifier = model(args.encoder).to(device)
    print(
        f"device {device}, encoder {args.encoder}, torch threads {args.threads}, "
        f"median of {args.repeats} interleaved rounds"
    )
    print(
        f"{'analysis':22} {'T':>4} {'batched/s':>10} {'loop/s':>9} {'ratio':>7} {'enc ms':>7} {'enc share':>9}  target"
    )
    for length in args.lengths:
        inputs = [b.to(device) for b in batches(length, args.instances)]
        passes = [forward_once(classifier, b) for b in inputs]
        loop_passes = [forward_once(classifier, b.to(device)) for b in batches(length, args.loop_instances)]
        encoder_ms = encoder_pass_ms(classifier, inputs, args.repeats)
        for name in args.analyses:
            row = ROWS[name]
            context = AnalysisContext("bench", classifier, device, ANALYSES[row.params_of].params())
            batched, loop = measure(
                row, context, passes, loop_passes, args.instances, args.loop_instances, args.repeats
            )
            analysis_ms = 1000 * len(inputs[0].lengths) / batched
            share = encoder_ms / (encoder_ms + analysis_ms)
            print(
                f"{name:22} {length:>4} {batched:>10.1f} {loop:>9.1f} {batched / loop:>6.1f}x {encoder_ms:>7.2f} "
                f"{share:>9.0%}  {row.target}",
                flush=True,
            )
            if args.profile:
                print(profile(row, context, passes), flush=True)


def encoder_pass_ms(classifier: FlatClassifier, inputs: list, repeats: int) -> float:
    """Median milliseconds of `forward_once` on one batch (the pass a shard shares among its analyses)."""
    forward_once(classifier, inputs[0])  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for batch in inputs:
            forward_once(classifier, batch)
        times.append((time.perf_counter() - started) * 1000 / len(inputs))
    return statistics.median(times)


def profile(row: Row, context: AnalysisContext, passes: list[SharedPass], top: int = 8) -> str:
    """torch's profile of the batched row over the passes: its most expensive operators (self time)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if context.device.type == "cuda" else [])
    with torch_profile(activities=activities) as recorded:
        for shared in passes:
            row.batched(context, shared)
    return recorded.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)


if __name__ == "__main__":
    main()
