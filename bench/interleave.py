"""What the before-and-after benches share: their command line and their rounds, both sides in each round, so
the load of a shared machine falls on the two alike and every ratio is between figures of one run."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Mapping
from typing import TypeVar

import torch

Side = TypeVar("Side")
Result = TypeVar("Result")


def command_line(
    doc: str | None, instances: int, what: str, more: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """`--instances` (`what` they are), `--repeats` and `--threads` (set for torch here), plus `more`'s own."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=instances, help=what)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each side's median is printed")
    parser.add_argument("--threads", type=int, default=1)
    if more is not None:
        more(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args


def interleaved(
    sides: Mapping[str, Side], repeats: int, run: Callable[[Side], tuple[float, Result]]
) -> tuple[dict[str, float], dict[str, Result]]:
    """`run(side)` -> (seconds, result) for every side once a round, `repeats` rounds: each side's median seconds
    and its last result."""
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    results: dict[str, Result] = {}
    for _ in range(repeats):
        for name, side in sides.items():
            took, results[name] = run(side)
            seconds[name].append(took)
    return {name: statistics.median(times) for name, times in seconds.items()}, results
