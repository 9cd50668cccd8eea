"""End to end on real data: a whole J&W shard (gradient, leave-one-out and their Kendall tau, 100
permutations, the k = 5 adversary) on SST and IMDB test instances (gridlab's fixed sample of them), cut in
test-file order (what gridlab did before shards were cut by length) against gridlab's length order; and one
training epoch in shuffled against length-bucketed batches. Both sides of each ratio run in the same
process, interleaved, on the same weights; the rows of the two orders are compared first: values (TVDs,
JSDs) must agree within 1e-5, and the Kendall taus that near-tied importances move are counted and shown.
Where a column differs by more, the same shard is run once more with every weight one float apart: an
analysis whose rows that alone moves beyond 1e-5 (the adversary's 500 optimiser steps amplify the last bits
of h) is ill-conditioned at float precision and is shown beside that floor (instances, mean shift) instead
of failing the run.

    GRIDLAB_DATA=../shared/data python bench/shard.py                        # SST and IMDB, 1000 instances
    python bench/shard.py --datasets imdb --instances 256 --repeats 1 --steps 100
    python bench/shard.py --datasets imdb --before daec99d                   # against a revision's code
    python bench/analyses.py --end-to-end ...                                # the same, from the analyses bench

`--before REV` adds the row that says what a change bought: the same shard, weights and instances run by
the gridlab of git revision REV in file order (what gridlab did before shards were cut by length;
daec99d is the last revision before issue 14) against this tree's gridlab in length order, each side in a
worker process of its own (bench/shard_worker.py), rounds interleaved, rows compared as above.

Model: the J&W BiLSTM (embeddings 300, hidden 128 per direction, additive attention), untrained weights
sharpened as in bench/analyses.py so that decisions flip. Training: J&W's settings (Adam 1e-3, amsgrad,
batch 32), `--train-batches` batches of an epoch (all by default). Prints a table; it is a benchmark, not
a test.
"""

from __future__ import annotations

import argparse
import copy
import functools
import io
import json
import math
import os
import pickle
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import torch
from shard_worker import jw_config  # beside this file

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.config.schema import CellConfig
from gridlab.data.batching import analysis_order, iterate_batches, sample_rows, sequence_lengths
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.execution.runner import AnalysedBatches, analyse_batches
from gridlab.grid.expand import resolve_data_dir
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.factory import build_model
from gridlab.training.loop import make_optimizer, train_epoch

JW_SHARD = {"importance_correlation": {}, "permutation": {"n": 100}, "adversarial": {"k": 5, "steps": 500}}
ORDERS = ("file", "length")
TOLERANCE = 1e-5  # rows of the two orders may differ by float rounding of other batch shapes, no more


@dataclass(frozen=True)
class Setup:
    dataset: str
    config: CellConfig
    data: PreparedDataset
    model: AttentionClassifier


def setup(dataset: str, data_dir: Path, cache: Path, device: torch.device) -> Setup:
    config = jw_config(dataset)
    data = load_dataset(dataset, data_dir, cache, config.data)
    torch.manual_seed(0)
    model = build_model(config, data)
    with torch.no_grad():
        model.attention.context.weight.mul_(10.0)
        model.classifier.weight.mul_(30.0)
    assert isinstance(model, AttentionClassifier)
    return Setup(dataset, config, data, model.to(device).eval())


def shard_table(data: PreparedDataset, instances: int, order: str) -> pa.Table:
    """The analysed test rows (gridlab's fixed sample of `instances`), in file order or in length order."""
    split = data.splits["test"]
    rows = split.take(pa.array(sample_rows(split.num_rows, instances)))
    return rows if order == "file" else rows.take(pa.array(analysis_order(sequence_lengths(rows))))


def run_shard(run: Setup, table: pa.Table, analyses: dict[str, dict], device: torch.device) -> AnalysedBatches:
    chosen = {a: IMPLEMENTATIONS[a] for a in analyses}
    contexts = {
        a: AnalysisContext("bench", run.model, device, chosen[a].info.params.model_validate(p))
        for a, p in analyses.items()
    }
    return analyse_batches(iterate_batches(table, 32), run.model, chosen, contexts, [], (), device)


def frames_of(analysed: AnalysedBatches, analyses: dict[str, dict]) -> dict[str, pd.DataFrame]:
    return {analysis_id: rows_of(analysed, analysis_id) for analysis_id in analyses}


def rows_of(analysed: AnalysedBatches, analysis_id: str) -> pd.DataFrame:
    common = {k: np.concatenate([c[k] for c in analysed.common]) for k in analysed.common[0]}
    specific = {
        f.name: np.concatenate([b[f.name] for b in analysed.columns[analysis_id]]).tolist()
        for f in IMPLEMENTATIONS[analysis_id].schema
    }
    return pd.DataFrame({**common, **specific}).sort_values("instance_id").reset_index(drop=True)


RANK_STATISTICS = ("tau_", "p_")  # Kendall tau and its p-value: see `compare` below


@dataclass(frozen=True)
class Comparison:
    value_diff: float  # the largest difference of any other numeric column
    value_column: str
    rank_diff: float  # the largest difference of a tau or p column
    rank_rows: int  # instances whose tau or p differ at all
    rows: int
    beyond: dict[str, tuple[float, int, float]]  # column -> (largest difference, rows, shift of its mean) > TOLERANCE


def compare(first: dict[str, pd.DataFrame], second: dict[str, pd.DataFrame]) -> Comparison:
    """Two runs' rows (per analysis, sorted by instance) side by side, instance by instance. Values (TVDs,
    JSDs, ...) must agree within float rounding; Kendall taus can move more: an instance's importances that
    lie within float noise of each other may rank either way in another batch shape
    (gridlab.analyses.ranking, "What it cannot do")."""
    value, column_of_value, rank, rank_rows, rows = 0.0, "", 0.0, set(), 0
    beyond: dict[str, tuple[float, int, float]] = {}
    for analysis_id, a in first.items():
        b = second[analysis_id]
        assert list(a["instance_id"]) == list(b["instance_id"])
        rows = len(a)
        for column in a.columns:
            left, right = _numbers(a[column]), _numbers(b[column])
            if left is None or right is None:
                assert a[column].equals(b[column]), (analysis_id, column)
                continue
            assert left.shape == right.shape and (np.isnan(left) == np.isnan(right)).all(), (analysis_id, column)
            differences = np.nan_to_num(np.abs(left - right))
            if not len(differences):
                continue
            if column.startswith(RANK_STATISTICS) and len(differences) == len(a):
                rank = max(rank, float(differences.max()))
                rank_rows |= set(a["instance_id"][differences > 0])
            else:
                if float(differences.max()) > value:
                    value, column_of_value = float(differences.max()), f"{analysis_id}.{column}"
                if float(differences.max()) > TOLERANCE:
                    shift = abs(float(np.nanmean(left)) - float(np.nanmean(right)))
                    beyond[f"{analysis_id}.{column}"] = (
                        float(differences.max()),
                        _rows_beyond(a[column], b[column]),
                        shift,
                    )
    return Comparison(value, column_of_value, rank, len(rank_rows), rows, beyond)


def _rows_beyond(left: pd.Series, right: pd.Series) -> int:
    """How many instances have a value (or a list item) that differs by more than TOLERANCE."""
    return sum(
        bool(np.nan_to_num(np.abs(_numbers(pd.Series([x])) - _numbers(pd.Series([y])))).max(initial=0.0) > TOLERANCE)
        for x, y in zip(left, right)
    )


def _numbers(column: pd.Series) -> np.ndarray | None:
    """A column's numbers flattened (list columns concatenated, nulls as NaN), or None for text."""
    values = [v for v in column]
    flat: list[float] = []
    for value in values:
        items = value if isinstance(value, (list, np.ndarray)) else [value]
        for item in items:
            if item is None:
                flat.append(np.nan)
            elif isinstance(item, (bool, np.bool_, int, float, np.integer, np.floating)):
                flat.append(float(item))
            else:
                return None
    return np.asarray(flat, dtype=float)


def time_shards(run: Setup, instances: int, analyses: dict[str, dict], repeats: int, device) -> dict[str, Any]:
    tables = {order: shard_table(run.data, instances, order) for order in ORDERS}
    seconds: dict[str, list[float]] = {order: [] for order in ORDERS}
    results: dict[str, AnalysedBatches] = {}
    for _ in range(repeats):
        for order in ORDERS:  # interleaved: both orders see about the same load
            started = time.perf_counter()
            results[order] = run_shard(run, tables[order], analyses, device)
            seconds[order].append(time.perf_counter() - started)
    length_frames = frames_of(results["length"], analyses)
    agreement = compare(frames_of(results["file"], analyses), length_frames)
    efficiency = {o: results[o].real_tokens / results[o].padded_tokens for o in ORDERS}
    encoder = {o: results[o].encoder_seconds / statistics.median(seconds[o]) for o in ORDERS}
    return {
        "seconds": {o: statistics.median(s) for o, s in seconds.items()},
        "agreement": agreement,
        "frames": length_frames,
        "efficiency": efficiency,
        "encoder": encoder,
        "rounds": seconds,
    }


def time_against_revision(run: Setup, instances: int, analyses: dict[str, dict], repeats: int, revision: str, args):
    """The shard run by revision's gridlab in file order and by this tree's in length order, each in a worker
    (bench/shard_worker.py) on the same weights and instances, rounds interleaved: seconds and rows."""
    here = Path(__file__).resolve().parent
    split = run.data.splits["test"]
    positions = sample_rows(split.num_rows, instances)  # file order
    lengths = sequence_lengths(split.take(pa.array(positions)))
    orders = {"before": positions, "after": positions[analysis_order(lengths)]}
    seconds: dict[str, list[float]] = {side: [] for side in orders}
    frames: dict[str, dict[str, pd.DataFrame]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        archive = subprocess.run(
            ["git", "-C", str(args.repo), "archive", "--format=tar", revision, "gridlab"],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder / "before", filter="data")
        code = {"before": folder / "before", "after": here.parent}
        torch.save(run.model.state_dict(), folder / "model.pt")
        for side, order in orders.items():
            np.save(folder / f"{side}.npy", order)
        for _ in range(repeats):
            for side in orders:  # interleaved: both sides see about the same load
                out = folder / f"{side}.pkl"
                command = [
                    sys.executable, str(here / "shard_worker.py"), "--dataset", run.dataset,
                    "--rows", str(folder / f"{side}.npy"), "--weights", str(folder / "model.pt"),
                    "--analyses", json.dumps(analyses), "--out", str(out), "--data-dir", str(args.data_dir),
                    "--cache", str(args.cache), "--threads", str(args.threads),
                ]  # fmt: skip
                subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(code[side])})
                with out.open("rb") as file:
                    result = pickle.load(file)
                seconds[side].append(result["seconds"])
                frames[side] = _worker_frames(result)
    efficiency = {side: padding_efficiency(sequence_lengths(split.take(pa.array(o)))) for side, o in orders.items()}
    return {
        "seconds": {side: statistics.median(s) for side, s in seconds.items()},
        "agreement": compare(frames["before"], frames["after"]),
        "frames": frames["after"],
        "efficiency": efficiency,
    }


def rounding_floor(
    run: Setup, instances: int, analyses: dict[str, dict], device: torch.device, reference: dict[str, pd.DataFrame]
) -> Comparison:
    """How far rows move when nothing changes but float rounding: the length-order shard of the model with
    every weight moved to the next float up, against `reference` (the same shard's rows). A column that
    moves beyond TOLERANCE here (the adversary's: 500 optimiser steps amplify the last bits of h) cannot be
    held to TOLERANCE against another revision either; its instance count and mean shift are the measure."""
    twin = copy.deepcopy(run.model)
    with torch.no_grad():
        for weight in twin.parameters():
            weight.copy_(torch.nextafter(weight, torch.full_like(weight, math.inf)))
    table = shard_table(run.data, instances, "length")
    return compare(reference, frames_of(run_shard(replace(run, model=twin), table, analyses, device), analyses))


def _worker_frames(result: dict) -> dict[str, pd.DataFrame]:
    return {
        analysis_id: pd.DataFrame({"instance_id": result["instance_id"], **{k: list(v) for k, v in columns.items()}})
        .sort_values("instance_id")
        .reset_index(drop=True)
        for analysis_id, columns in result["rows"].items()
    }


def padding_efficiency(lengths: np.ndarray, batch_size: int = 32) -> float:
    """Real over padded tokens (<sos>/<eos> counted) of batches of `batch_size` cut in the given order."""
    tokens = lengths + 2
    padded = sum(
        int(tokens[i : i + batch_size].max()) * len(tokens[i : i + batch_size])
        for i in range(0, len(tokens), batch_size)
    )
    return float(tokens.sum()) / padded


def time_epochs(run: Setup, batches: int | None, repeats: int, device: torch.device) -> dict[str, float]:
    """Training tokens per second in shuffled and in bucketed batches (median of interleaved rounds)."""
    table = run.data.splits["train"]
    if batches is not None:
        table = table.slice(0, batches * run.config.train.batch_size)
    tokens = int(sequence_lengths(table).sum())
    rates: dict[str, list[float]] = {"shuffled": [], "bucketed": []}
    for _ in range(repeats):
        for batching in rates:
            train = run.config.train.model_copy(update={"batching": batching})
            model = build_model(run.config, run.data).to(device)
            optimizer = make_optimizer(model, train)
            started = time.perf_counter()
            train_epoch(model, table, train, optimizer, device, epoch_seed=0)
            rates[batching].append(tokens / (time.perf_counter() - started))
    return {k: statistics.median(v) for k, v in rates.items()}


def _report_agreement(agreement: Comparison, floor: Callable[[], Comparison]) -> bool:
    """Print how the taus moved and each column that differs beyond TOLERANCE, beside how far they
    move with the weights one float apart (`floor`, computed on first need). Whether there was a
    real difference: a column beyond TOLERANCE of an analysis whose rows rounding alone keeps within it.
    (Rounding is judged per analysis: its columns come from one computation, and a rare discrete event,
    such as an adversary crossing the eps bound, need not show in one draw of the floor.)"""
    ranked, most = agreement.rank_rows, agreement.rank_diff
    line = f"{'':34} tau/p differ on {ranked} of {agreement.rows} instances, at most {most:.1e}"
    if agreement.rank_rows:
        line += f"; weights one float apart: {floor().rank_rows}, at most {floor().rank_diff:.1e}"
    print(f"{line} (near-tied importances ranked either way)", flush=True)
    failed = False
    for column, (difference, rows, shift) in agreement.beyond.items():
        line = f"{'':34} {column} differs by {difference:.1e} on {rows} of {agreement.rows} (mean by {shift:.1e})"
        analysis_id = column.split(".")[0]
        noise = floor().beyond
        if not any(c.startswith(f"{analysis_id}.") for c in noise):
            failed = True  # rounding leaves this analysis's rows alone: a real difference
        elif column in noise:
            moved, instances, mean_shift = noise[column]
            line += f"; weights one float apart: {moved:.1e} on {instances} (mean by {mean_shift:.1e})"
        else:
            line += "; weights one float apart: within tolerance here, other columns of the analysis not"
        print(line, flush=True)
    return failed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["sst", "imdb"])
    parser.add_argument("--instances", type=int, default=1000, help="test instances per shard (the grid default)")
    parser.add_argument("--steps", type=int, default=500, help="adversary steps (J&W: 500)")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved rounds; the table shows medians")
    parser.add_argument("--train-batches", type=int, default=None, help="batches of the timed epoch (all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cache", type=Path, default=Path("runs/cache"))
    parser.add_argument("--before", metavar="REV", help="also time this git revision's gridlab (file order)")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1], help="git repo of REV")
    args = parser.parse_args(argv)
    args.data_dir = resolve_data_dir(None)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    analyses = {**JW_SHARD, "adversarial": {**JW_SHARD["adversarial"], "steps": args.steps}}
    print(
        f"device {device}, torch threads {args.threads}, median of {args.repeats} interleaved rounds; "
        f"J&W shard: {', '.join(analyses)} (adversary {args.steps} steps)"
    )
    print(
        f"{'row':34} {'file order':>12} {'length order':>13} {'speed-up':>9} {'padding eff.':>14} "
        f"{'encoder share':>14} {'max |diff|':>11}"
    )
    failed = False
    for dataset in args.datasets:
        run = setup(dataset, args.data_dir, args.cache, device)
        n = min(args.instances, run.data.splits["test"].num_rows)
        shard = time_shards(run, n, analyses, args.repeats, device)
        s, e, c, agreement = shard["seconds"], shard["efficiency"], shard["encoder"], shard["agreement"]
        print(
            f"{f'J&W shard, {dataset}, {n} instances':34} {n / s['file']:>8.1f}/s {n / s['length']:>9.1f}/s "
            f"{s['file'] / s['length']:>8.2f}x {e['file']:>6.2f} → {e['length']:.2f} "
            f"{c['file']:>6.0%} → {c['length']:.0%} {agreement.value_diff:>11.1e}",
            flush=True,
        )
        floor = functools.cache(lambda: rounding_floor(run, n, analyses, device, shard["frames"]))
        failed |= _report_agreement(agreement, floor)
        if args.before:
            against = time_against_revision(run, n, analyses, args.repeats, args.before, args)
            s, e, agreement = against["seconds"], against["efficiency"], against["agreement"]
            print(
                f"{f'  {args.before} (file) → now (length)':34} {n / s['before']:>8.1f}/s {n / s['after']:>9.1f}/s "
                f"{s['before'] / s['after']:>8.2f}x {e['before']:>6.2f} → {e['after']:.2f} {'':>14} "
                f"{agreement.value_diff:>11.1e}",
                flush=True,
            )
            failed |= _report_agreement(agreement, floor)
        rates = time_epochs(run, args.train_batches, args.repeats, device)
        label = f"training epoch, {dataset} (tokens/s)"
        print(
            f"{label:34} {rates['shuffled']:>10.0f} {rates['bucketed']:>13.0f} "
            f"{rates['bucketed'] / rates['shuffled']:>8.2f}x   (shuffled → bucketed batches)",
            flush=True,
        )
    if failed:
        raise SystemExit(f"rows differ by more than {TOLERANCE:g} where float rounding alone does not (listed above)")


if __name__ == "__main__":
    main()
