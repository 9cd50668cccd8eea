"""One training epoch of gridlab against Jain & Wallace's own trainer, on the same model, data and optimiser
(issue 49 item 2): interleaved rounds, samples per second per side and the ratio of each round.

    python bench/jw_training.py --jw-git JW_GIT --peers ../shared/perf-peers            # SST and IMDB (2,000)
    python bench/jw_training.py --datasets sst --rounds 3 --json bench/results/jw_training.json

The model is the J&W grid's BiLSTM + additive cell (grids/jain_wallace.yaml, seed 0: GloVe 6B 50d, 128 per
direction, attention 128, batches of 32 bucketed by length, Adam 1e-3 AMSGrad, weight decay 1e-5 off the
attention). J&W's side is their `Model` built from their `configurations['lstm']` and trained by their
`Model.train` (one call: one epoch, batches of 32 sorted by noisy length, their three AMSGrad optimisers),
run unchanged through bench/jw_originals.py; its data is gridlab's token ids and embedding matrix through their
own `Dataset` class. gridlab's side is `gridlab.training.loop.train_epoch`, the loop its trainable runs. Each
side works in its own process with one torch thread; the parent asks for one epoch of each in turn, so both
epochs of a round see about the same load. Each side keeps training its own model from round to round.

Not the same work, by design of each: J&W's model has one sigmoid output (BCE, weighted by their balanced
`pos_weight`), gridlab's two softmax outputs (cross-entropy); their filter drops the longest training
instance(s) (a strict `<` on the maximum), so each side's rate is its own instances over its own time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GRID = REPO / "grids" / "jain_wallace.yaml"
SIDES = ("jw", "gridlab")
DEFAULT_SUBSET = {"imdb": 2000}  # an IMDB epoch (25,000 reviews) takes too long a side on 2 busy cores


# ---- the cell and its data, as gridlab prepares them (both workers) ----------------------------------------


def grid_cell(dataset: str, encoder: str = "lstm", attention: str = "additive"):
    """The J&W grid's cell for (dataset, encoder, attention), seed 0, with its overrides applied."""
    from gridlab.grid.expand import expand, restrict
    from gridlab.grid.load import load_grid_file

    grid = expand(load_grid_file(GRID), str(GRID), check_data=False)
    where = [f"dataset={dataset}", f"encoder={encoder}", f"attention={attention}", "seed=0"]
    (cell,) = restrict(grid, where).cells
    return cell


def prepared(cell, data_dir: Path, cache_dir: Path):
    """gridlab's prepared dataset and the cell's initial embedding matrix (vocab, dim)."""
    from gridlab.data.prepare import load_dataset
    from gridlab.models.embeddings import initial_embeddings

    data = load_dataset(cell.config.dataset, data_dir, cache_dir, cell.config.data)
    return data, initial_embeddings(cell.config, data, data_dir, cache_dir)


def train_rows(count: int, size: int | None) -> list[int]:
    """The training rows both sides use: all, or a fixed random `size` of them (seed 0)."""
    import numpy as np

    if size is None or size >= count:
        return list(range(count))
    return sorted(np.random.default_rng(0).permutation(count)[:size].tolist())


def split_of(table, rows: list[int] | None = None) -> tuple[list[list[int]], list[int]]:
    import pyarrow as pa

    if rows is not None:
        table = table.take(pa.array(rows))
    return table.column("ids").to_pylist(), table.column("label").to_pylist()


# ---- the two sides -----------------------------------------------------------------------------------------


class JWSide:
    """J&W's `Model` (their lstm configuration) trained by their own `Model.train`, one call an epoch."""

    def __init__(self, args: argparse.Namespace, folder: Path):
        from jw_originals import install, jw_dataset, write_vec  # bench/, beside this file

        install(args.export, args.peers)
        from Transparency.configurations import configurations
        from Transparency.model import Binary_Classification

        cell = grid_cell(args.dataset)
        data, embeddings = prepared(cell, args.data_dir, args.cache)
        train = split_of(data.splits["train"], train_rows(data.splits["train"].num_rows, args.subset))
        splits = {"train": train, "dev": split_of(data.splits["dev"]), "test": split_of(data.splits["test"])}
        write_vec(folder / "vec.p", splits, embeddings.numpy())
        self.dataset = jw_dataset(folder / "vec.p", args.dataset, folder / "outputs")
        config = configurations["lstm"](self.dataset)
        self.model = Binary_Classification.Model(config, pre_embed=self.dataset.vec.embeddings)
        self.instances = len(self.dataset.train_data.X)

    def epoch(self) -> float:
        started = time.perf_counter()
        self.model.train(self.dataset.train_data.X, self.dataset.train_data.y)
        return time.perf_counter() - started


class GridlabSide:
    """The cell's model and optimiser as gridlab's trainer builds them; `train_epoch` an epoch."""

    def __init__(self, args: argparse.Namespace, folder: Path):
        import pyarrow as pa
        import torch

        from gridlab.models.factory import build_model
        from gridlab.training.loop import make_optimizer

        self.cell = grid_cell(args.dataset)
        data, embeddings = prepared(self.cell, args.data_dir, args.cache)
        table = data.splits["train"]
        self.table = table.take(pa.array(train_rows(table.num_rows, args.subset)))
        self.model = build_model(self.cell.config, data, embeddings)
        self.optimizer = make_optimizer(self.model, self.cell.config.train)
        self.device = torch.device("cpu")
        self.instances = self.table.num_rows
        self.epochs = 0

    def epoch(self) -> float:
        from gridlab.training.loop import train_epoch

        self.epochs += 1
        started = time.perf_counter()
        train_epoch(
            self.model,
            self.table,
            self.cell.config.train,
            self.optimizer,
            self.device,
            epoch_seed=self.cell.config.seed * 1000 + self.epochs,
        )
        return time.perf_counter() - started


def worker(args: argparse.Namespace) -> None:
    """Serve `epoch` requests on stdin: one line of JSON back per epoch (seconds, instances)."""
    import torch

    torch.set_num_threads(1)
    reply, sys.stdout = sys.stdout, sys.stderr  # their code prints; keep the protocol channel clean
    with tempfile.TemporaryDirectory(prefix=f"jwtrain-{args.worker}-") as folder:
        side = (JWSide if args.worker == "jw" else GridlabSide)(args, Path(folder))
        reply.write(json.dumps({"instances": side.instances}) + "\n")
        reply.flush()
        for _ in sys.stdin:
            reply.write(json.dumps({"seconds": side.epoch(), "instances": side.instances}) + "\n")
            reply.flush()


# ---- the parent --------------------------------------------------------------------------------------------


class Worker:
    def __init__(self, side: str, args: argparse.Namespace, log):
        environment = dict(
            os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TQDM_DISABLE="1", PYTHONWARNINGS="ignore"
        )
        command = [
            sys.executable,
            __file__,
            "--worker",
            side,
            "--datasets",
            args.dataset,
            "--export",
            str(args.export),
            "--peers",
            str(args.peers),
            "--data-dir",
            str(args.data_dir),
            "--cache",
            str(args.cache),
        ] + ([] if args.subset is None else ["--subset", str(args.subset)])
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=environment
        )

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("a worker died: see its log")
        return json.loads(line)

    def epoch(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("epoch\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def measure(args: argparse.Namespace, dataset: str, log) -> dict[str, Any]:
    """`args.rounds` rounds of (J&W epoch, gridlab epoch) on one dataset; every round's figures."""
    args.dataset = dataset
    workers = {side: Worker(side, args, log) for side in SIDES}
    try:
        instances = {side: w.read()["instances"] for side, w in workers.items()}  # both ready
        rounds = []
        for number in range(args.rounds):
            load = load1()
            seconds = {side: workers[side].epoch()["seconds"] for side in SIDES}
            rate = {side: instances[side] / seconds[side] for side in SIDES}
            rounds.append(
                {
                    "round": number + 1,
                    "load1": load,
                    "seconds": seconds,
                    "per_s": rate,
                    "ratio": rate["gridlab"] / rate["jw"],
                }
            )
            print(
                f"  {dataset} round {number + 1}: J&W {rate['jw']:.1f}/s, gridlab {rate['gridlab']:.1f}/s "
                f"(x{rounds[-1]['ratio']:.2f}, load {load:.2f})",
                file=sys.stderr,
                flush=True,
            )
    finally:
        for w in workers.values():
            w.close()
    ratios = [r["ratio"] for r in rounds]
    return {
        "dataset": dataset,
        "subset": args.subset,
        "instances": instances,
        "rounds": rounds,
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "per_s_median": {s: statistics.median(r["per_s"][s] for r in rounds) for s in SIDES},
    }


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| dataset | instances (J&W / gridlab) | J&W samples/s | gridlab samples/s | gridlab / J&W [min-max] |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        n, rate = r["instances"], r["per_s_median"]
        lines.append(
            f"| {r['dataset']} | {n['jw']:,} / {n['gridlab']:,} | {rate['jw']:.1f} | {rate['gridlab']:.1f} "
            f"| **{r['ratio_median']:.2f}** [{r['ratio_min']:.2f}-{r['ratio_max']:.2f}] |"
        )
    return "\n".join(lines)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["sst", "imdb"], choices=["sst", "imdb"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--subset",
        type=int,
        help="training instances of every dataset (a fixed random subset); default: all of SST, 2,000 of IMDB",
    )
    parser.add_argument("--jw-git", type=Path, help="J&W's git dir (successar/AttentionExplanation); exported")
    parser.add_argument("--export", type=Path, help="an export made before (jw_originals.export)")
    parser.add_argument(
        "--peers", type=Path, default=Path(os.environ.get("PEERS_DIR", REPO.parent / "shared" / "perf-peers"))
    )
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("GRIDLAB_DATA", "data")))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "jwbench-cache")
    parser.add_argument("--json", type=Path, help="write every round here")
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is None and args.export is None and args.jw_git is None:
        parser.error("--jw-git JW_GIT (or --export EXPORT) is required: J&W's code is not part of gridlab")
    if not (args.peers / "shims" / "peer_shims.py").is_file():
        parser.error(f"--peers {args.peers}: expected perf-peers' folder (with shims/peer_shims.py)")
    return args


def main() -> None:
    args = arguments()
    if args.worker is not None:
        args.dataset = args.datasets[0]
        worker(args)
        return
    from jw_originals import exported_commit

    commit = exported_commit(args.export) if args.export is not None else ""
    if args.export is None:
        from jw_originals import export

        args.export = Path(tempfile.mkdtemp(prefix="jw-export-"))
        commit = export(args.jw_git, args.export)
    subset = args.subset
    results = []
    with tempfile.NamedTemporaryFile("w", prefix="jwtrain-", suffix=".log", delete=False) as log:
        print(
            f"# J&W training bench: 1 torch thread per side, {args.rounds} rounds; worker log {log.name}",
            file=sys.stderr,
        )
        for dataset in args.datasets:
            args.subset = subset if subset is not None else DEFAULT_SUBSET.get(dataset)
            results.append(measure(args, dataset, log))
    print(table(results))
    if args.json is not None:
        record = {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "jw_commit": commit,
            "gridlab_commit": _head(),
            "cpus": os.cpu_count(),
            "results": results,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")


def _head() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
