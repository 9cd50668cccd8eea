"""The J&W SST grid end to end, as gridlab runs it against Jain & Wallace's own scripts (issue 49 item 3).

    python bench/jw_grid.py --jw-git JW_GIT --peers ../shared/perf-peers --json bench/results/jw_grid.json
    python bench/jw_grid.py --export EXPORT --epochs 2 --rounds 1          # a reduced run: fewer epochs, both sides

The six SST cells of grids/jain_wallace.yaml (BiLSTM, CNN, average x additive, dot; seed 0), every test instance.

gridlab: what a user types, `gridlab launch GRID --where dataset=sst --where seed=0`, on a copy of the J&W grid
file whose `results_dir` is a fresh folder (so its dataset and vector caches are built inside the time), as it
runs there: a local Ray, one core per trial and per analysis actor (two at a time on 2 cores), MLflow tracking,
Parquet rows, the grid's analyses (importance_correlation: gradient and leave-one-out against attention;
permutation; adversarial; token_scores). Where its time goes comes from its own records: each epoch's seconds
(Ray Tune's result logs) and each analysis shard's (shards.jsonl), and each line it prints, stamped.

J&W: their pipeline per configuration (`lstm`, `lstm_dot`, `cnn`, `cnn_dot`, `average`, `average_dot`), as
`ExperimentsBC.train_dataset` then `run_experiments_on_latest_model` run it, with remove_and_run (commented out
there) switched on: `Trainer(dataset, config).train(train, dev, n_iters=epochs)` (each epoch: train, evaluate
dev, save), `Evaluator(dataset, dirname).evaluate(test)`, then `gradient_experiment`, `permutation_experiment`,
`adversarial_experiment`, `remove_and_run_experiment`, each pickling its outputs. One process with torch's
default of one intra-op thread per CPU, as their scripts run (`--jw-threads`: one thread did better on the
shared machine under load, where two threads contend with the other work), each step timed. Substituted
(bench/jw_originals.py): their preprocessing notebook, which needs spaCy's retired `en` model; their `Dataset`
reads gridlab's SST token ids and embedding matrix from a pickle written before the clock starts, so J&W's time
leaves out their preprocessing while gridlab's includes its own. Their analyses' plots (`generate_graphs`)
are not run; gridlab's reports are not either.

Rounds alternate the order (J&W then gridlab, then gridlab then J&W) so that a drift in the load falls on both.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GRID = REPO / "grids" / "jain_wallace.yaml"
WHERE = ["dataset=sst", "seed=0"]
JW_CONFIGS = ("lstm", "lstm_dot", "cnn", "cnn_dot", "average", "average_dot")
JW_STEPS = ("train", "evaluate", "gradient", "permutation", "adversarial", "remove_and_run")


# ---- J&W's side (a process of its own) ---------------------------------------------------------------------


def jw_side(args: argparse.Namespace) -> None:
    """Run J&W's pipeline on every configuration and write each step's seconds to args.timings."""
    started = float(os.environ["JWGRID_T0"])  # the parent's clock when it spawned this interpreter
    from jw_originals import install, jw_dataset  # bench/, beside this file

    install(args.export, args.peers)
    import torch
    from Transparency.configurations import configurations
    from Transparency.Trainers.TrainerBC import Evaluator, Trainer

    torch.set_num_threads(args.jw_threads)
    timings: dict[str, Any] = {"start_up": time.time() - started, "threads": torch.get_num_threads()}
    clock = time.time()
    dataset = jw_dataset(args.vec, "sst", args.outputs)
    timings["dataset"] = time.time() - clock
    timings["instances"] = {"train": len(dataset.train_data.X), "test": len(dataset.test_data.X)}
    for name in JW_CONFIGS:
        steps: dict[str, float] = {}
        clock = time.time()
        trainer = Trainer(dataset, config=configurations[name](dataset), _type=dataset.trainer_type)
        trainer.train(dataset.train_data, dataset.dev_data, n_iters=args.epochs, save_on_metric=dataset.save_on_metric)
        steps["train"], clock = time.time() - clock, time.time()
        evaluator = Evaluator(dataset, trainer.model.dirname, _type=dataset.trainer_type)
        evaluator.evaluate(dataset.test_data, save_results=True)
        steps["evaluate"], clock = time.time() - clock, time.time()
        test = dataset.test_data
        for step, run in (
            ("gradient", evaluator.gradient_experiment),
            ("permutation", evaluator.permutation_experiment),
            ("adversarial", evaluator.adversarial_experiment),
            ("remove_and_run", evaluator.remove_and_run_experiment),
        ):
            run(test, force_run=True)
            steps[step], clock = time.time() - clock, time.time()
        timings[name] = steps
        print(f"  J&W {name}: " + ", ".join(f"{k} {v:.0f} s" for k, v in steps.items()), file=sys.stderr, flush=True)
    timings["total"] = time.time() - started
    args.timings.write_text(json.dumps(timings, indent=1))


def run_jw(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    timings = folder / "jw_timings.json"
    command = [
        sys.executable,
        __file__,
        "--jw-side",
        "--export",
        str(args.export),
        "--peers",
        str(args.peers),
        "--vec",
        str(args.vec),
        "--outputs",
        str(folder / "outputs"),
        "--epochs",
        str(args.epochs),
        "--timings",
        str(timings),
        "--jw-threads",
        str(args.jw_threads),
    ]
    threads = str(args.jw_threads)
    environment = dict(
        os.environ,
        TQDM_DISABLE="1",
        PYTHONWARNINGS="ignore",
        OMP_NUM_THREADS=threads,
        MKL_NUM_THREADS=threads,
        JWGRID_T0=repr(time.time()),
    )
    started = time.time()
    with (folder / "jw.log").open("w") as log:
        subprocess.run(command, stdout=log, stderr=log, env=environment, check=True)
    result = json.loads(timings.read_text())
    result["wall"] = time.time() - started
    return result


# ---- gridlab's side ----------------------------------------------------------------------------------------


def grid_file(args: argparse.Namespace, folder: Path) -> Path:
    """The J&W grid with a fresh results_dir (and, for a reduced run, fewer epochs)."""
    document = yaml.safe_load(GRID.read_text())
    document["results_dir"] = str(folder / "results")
    document["data_dir"] = str(args.data_dir)
    document["train"] = {**document["train"], "epochs": args.epochs, "patience": args.epochs}
    if args.max_train is not None:
        document["train"]["max_train"] = args.max_train
    if args.instances is not None:
        document["instances"] = args.instances
    path = folder / "jain_wallace_sst.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run_gridlab(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """`gridlab launch` on the six cells, every printed line stamped; then its own records of where time went."""
    from gridlab.grid.expand import expand
    from gridlab.grid.load import load_grid_file
    from gridlab.store.timings import epoch_seconds, shard_seconds

    path = grid_file(args, folder)
    command = [sys.executable, "-m", "gridlab", "launch", str(path)] + [x for w in WHERE for x in ("--where", w)]
    started = time.time()
    lines = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=folder)
    assert process.stdout is not None
    for line in process.stdout:
        lines.append([round(time.time() - started, 1), line.rstrip()])
    if process.wait() != 0:
        raise RuntimeError(f"gridlab launch failed (exit {process.returncode}): {lines[-5:]}")
    wall = time.time() - started
    workspace = expand(load_grid_file(path), str(path), check_data=False).workspace
    epochs = epoch_seconds(workspace)
    shards = shard_seconds(workspace)
    return {
        "wall": wall,
        "phases": gridlab_phases(lines, wall),
        "cells": len(epochs),
        "train_cell_seconds": {c: sum(e) for c, e in epochs.items()},
        "epochs": {c: len(e) for c, e in epochs.items()},
        "analysis_cell_seconds": {c: s for c, (_, s) in shards.items()},
        "analysis_instances": {c: n for c, (n, _) in shards.items()},
        "output": lines,
    }


# ---- the parent --------------------------------------------------------------------------------------------


class LoadSampler:
    """The 1-minute load average every `every` seconds while a side runs."""

    def __init__(self, every: float = 5.0):
        self.samples: list[float] = []
        self.every = every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            self.stop.wait(self.every)

    def __enter__(self) -> LoadSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def prepare_vec(args: argparse.Namespace, folder: Path) -> Path:
    """gridlab's SST splits and embeddings pickled for J&W's loader (stands for their preprocessing; untimed)."""
    from jw_originals import write_vec
    from jw_training import grid_cell, prepared, split_of

    from gridlab.data.batching import sample_rows, training_rows

    cell = grid_cell("sst")
    data, embeddings = prepared(cell, args.data_dir, args.cache or folder / "cache")
    train, test = data.splits["train"].num_rows, data.splits["test"].num_rows
    chosen = training_rows(train, args.max_train, cell.config.train.subset)  # the rows gridlab's cells train on
    rows = {
        "train": None if chosen is None else chosen.tolist(),
        "dev": None,
        "test": None if args.instances is None else sample_rows(test, args.instances).tolist(),
    }
    splits = {s: split_of(data.splits[s], rows[s]) for s in ("train", "dev", "test")}
    path = folder / "vec_sst.p"
    write_vec(path, splits, embeddings.numpy())
    return path


STARTED = re.compile(r"\] (\w+) [^:]*: running: started")
TRAINED = re.compile(r"\] (\w+) [^:]*: (?:trained|failed)")
SHARD = re.compile(r"shard \d+ of (\w+): \d+ instances in (\d+) s")


def union(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of the intervals."""
    covered, reach = 0.0, float("-inf")
    for begin, end in sorted(intervals):
        begin = max(begin, reach)
        if end > begin:
            covered, reach = covered + end - begin, end
    return covered


def gridlab_phases(output: list[list[Any]], wall: float) -> dict[str, float]:
    """Wall seconds of `gridlab launch` by phase, from its stamped progress lines: start-up (to the first trial
    started: imports, Ray, dataset and vectors prepared), training (some trial running), analyses (some shard
    running, no trial), and the rest (trial and actor start-up, summaries, MLflow runs, Ray's shutdown)."""
    begun: dict[str, float] = {}
    training, shards = [], []
    for stamp, line in output:
        if match := STARTED.search(line):
            begun[match.group(1)] = stamp
        elif (match := TRAINED.search(line)) and match.group(1) in begun:
            training.append((begun.pop(match.group(1)), stamp))
        elif match := SHARD.search(line):
            shards.append((stamp - float(match.group(2)), stamp))
    start_up = min((b for b, _ in training), default=wall)
    trained, busy = union(training), union(training + shards)
    return {"start_up": start_up, "training": trained, "analyses": busy - trained, "rest": wall - start_up - busy}


def summary(rounds: list[dict[str, Any]]) -> str:
    """Markdown: per round, each side's wall time and the ratio; then where each side's time went."""
    lines = ["| round | J&W s | gridlab s | J&W / gridlab | load (median, max) |", "|---|---:|---:|---:|---|"]
    for r in rounds:
        loads = r["jw"]["load"] + r["gridlab"]["load"]
        ratio = r["jw"]["wall"] / r["gridlab"]["wall"]
        lines.append(
            f"| {r['round']} | {r['jw']['wall']:.0f} | {r['gridlab']['wall']:.0f} | **{ratio:.2f}** | "
            f"{statistics.median(loads):.1f}, {max(loads):.1f} |"
        )
    for r in rounds:
        jw, grid = r["jw"], r["gridlab"]
        steps = {s: sum(jw[c][s] for c in JW_CONFIGS) for s in JW_STEPS}
        lines.append(
            f"\nround {r['round']}, J&W: start-up {jw['start_up']:.0f} s, dataset {jw['dataset']:.0f} s, "
            + ", ".join(f"{s} {v:.0f} s" for s, v in steps.items())
        )
        phases = grid["phases"]
        lines.append(
            f"round {r['round']}, gridlab: "
            + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
            + f" (wall); trials {sum(grid['train_cell_seconds'].values()):.0f} s and shards "
            + f"{sum(grid['analysis_cell_seconds'].values()):.0f} s summed over cells (two at a time)"
        )
    return "\n".join(lines)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="side-runs of each; odd rounds start with J&W")
    parser.add_argument("--sides", nargs="+", default=["jw", "gridlab"], choices=["jw", "gridlab"])
    parser.add_argument("--epochs", type=int, default=8, help="both sides (the grid's 8 by default)")
    parser.add_argument("--jw-git", type=Path, help="J&W's git dir (successar/AttentionExplanation); exported")
    parser.add_argument("--export", type=Path, help="an export made before (jw_originals.export)")
    parser.add_argument(
        "--peers", type=Path, default=Path(os.environ.get("PEERS_DIR", REPO.parent / "shared" / "perf-peers"))
    )
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("GRIDLAB_DATA", "data")))
    parser.add_argument("--folder", type=Path, help="where both sides write (default: a new temporary folder)")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    parser.add_argument("--cache", type=Path, help="gridlab's dataset cache for J&W's input (default: in --folder)")
    parser.add_argument(
        "--instances",
        type=int,
        help="test instances per model, the grid's `instances` (its "
        "fixed sample; J&W get the same rows); default: all, as the grid",
    )
    parser.add_argument("--max-train", type=int, help="training instances, the grid's train.max_train (smoke runs)")
    parser.add_argument(
        "--jw-threads", type=int, default=os.cpu_count() or 1, help="torch threads of J&W's process (default: the CPUs)"
    )
    parser.add_argument("--jw-side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--vec", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--outputs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--timings", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export is None and args.jw_git is None:
        parser.error("--jw-git JW_GIT (or --export EXPORT) is required: J&W's code is not part of gridlab")
    if args.epochs < 2:
        parser.error("--epochs: expected 2 or more (J&W's trainer saves a model from its second epoch on)")
    if not (args.peers / "shims" / "peer_shims.py").is_file():
        parser.error(f"--peers {args.peers}: expected perf-peers' folder (with shims/peer_shims.py)")
    return args


def main() -> None:
    args = arguments()
    if args.jw_side:
        jw_side(args)
        return
    folder = args.folder or Path(tempfile.mkdtemp(prefix="jwgrid-"))
    from jw_originals import exported_commit

    commit = exported_commit(args.export) if args.export is not None else ""
    if args.export is None:
        from jw_originals import export

        args.export = folder / "export"
        commit = export(args.jw_git, args.export)
    args.vec = prepare_vec(args, folder)
    rounds = []
    for number in range(1, args.rounds + 1):
        order = ("jw", "gridlab") if number % 2 else ("gridlab", "jw")
        record: dict[str, Any] = {"round": number, "order": list(order)}
        for side in (s for s in order if s in args.sides):
            side_folder = folder / f"round{number}-{side}"
            side_folder.mkdir(parents=True)
            with LoadSampler() as load:
                record[side] = (run_jw if side == "jw" else run_gridlab)(args, side_folder)
            record[side]["load"] = load.samples
            print(
                f"  round {number} {side}: {record[side]['wall']:.0f} s (load median "
                f"{statistics.median(load.samples):.1f})",
                file=sys.stderr,
                flush=True,
            )
        rounds.append(record)
    if set(args.sides) == {"jw", "gridlab"}:
        print(summary(rounds))
    if args.json is not None:
        from jw_training import _head

        out = {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "jw_commit": commit,
            "gridlab_commit": _head(),
            "cpus": os.cpu_count(),
            "epochs": args.epochs,
            "rounds": rounds,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
