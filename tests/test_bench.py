"""The benchmark scripts keep working (smoke runs on tiny sizes; they measure nothing here)."""

from __future__ import annotations

import csv
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model

REPO = Path(__file__).resolve().parent.parent
TINY = ["--lengths", "6", "--instances", "4", "--loop-instances", "2", "--threads", "1", "--repeats", "1"]


def bench_rows(*arguments: str) -> list[list[str]]:
    command = [sys.executable, str(REPO / "bench" / "analyses.py"), *TINY, *arguments]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("analysis"))
    return [line.split() for line in lines[header + 1 :]]


def test_bench_prints_a_row_per_analysis_and_length():
    rows = bench_rows("--analyses", "permutation", "erasure_multi")
    assert [(row[0], row[1]) for row in rows] == [("permutation", "6"), ("erasure_multi", "6")]
    assert all(float(row[2]) > 0 and float(row[3]) > 0 for row in rows)


@pytest.mark.parametrize("encoder", ["lstm", "cnn"])
def test_bench_measures_the_importance_halves_alone(encoder):
    rows = bench_rows("--encoder", encoder, "--only", "gradient", "leave_one_out")
    assert [row[0] for row in rows] == ["gradient", "leave_one_out"]
    assert all(float(row[2]) > 0 and float(row[3]) > 0 and row[4].endswith("x") for row in rows)
    # the encoder pass of a batch and its share of the row, measured in the same run
    assert all(float(row[5]) > 0 and 0 < float(row[6].rstrip("%")) <= 100 for row in rows)


def test_bench_profiles_a_row_on_request():
    command = [sys.executable, str(REPO / "bench" / "analyses.py"), *TINY, "--only", "permutation", "--profile"]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    assert "Self CPU" in output and "aten::" in output


def test_the_end_to_end_rows_run_both_orders_on_real_data(shipped_sst: Path, tmp_path: Path):
    command = [sys.executable, str(REPO / "bench" / "analyses.py"), "--end-to-end", "--datasets", "sst"]
    command += ["--instances", "40", "--steps", "5", "--repeats", "1", "--train-batches", "3", "--threads", "1"]
    command += ["--cache", str(tmp_path / "cache"), "--before", "HEAD"]  # HEAD's gridlab in a worker, file order
    environment = {**os.environ, "GRIDLAB_DATA": str(shipped_sst)}  # SST: the shipped release
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600, env=environment).stdout
    shard = next(line for line in output.splitlines() if line.startswith("J&W shard, sst, 40 instances"))
    file_rate, length_rate = (float(x) for x in re.findall(r"([\d.]+)/s", shard))
    assert file_rate > 0 and length_rate > 0
    before, after = (float(x) for x in re.search(r"([\d.]+) → ([\d.]+)", shard).groups())
    assert 0 < before <= after <= 1  # length order never pads more than file order
    against = next(line for line in output.splitlines() if line.strip().startswith("HEAD (file) → now (length)"))
    head_rate, now_rate = (float(x) for x in re.findall(r"([\d.]+)/s", against))
    assert head_rate > 0 and now_rate > 0
    assert float(against.split()[-1]) <= 1e-5  # the same rows from both workers
    assert any(line.startswith("training epoch, sst") for line in output.splitlines())


def _bench(name: str) -> ModuleType:
    """bench/<name>.py as a module (bench/ is scripts, not a package)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_weights_one_float_apart_move_rows_by_rounding_alone(shipped_sst: Path, tmp_path: Path):
    shard = _bench("shard")
    cpu = torch.device("cpu")
    run = shard.setup("sst", shipped_sst, tmp_path / "cache", cpu)
    analyses = {"permutation": {"n": 5}}
    table = shard.shard_table(run.data, 16, "length")
    reference = shard.frames_of(shard.run_shard(run, table, analyses, cpu), analyses)
    floor = shard.rounding_floor(run, 16, analyses, cpu, reference)
    assert 0 < floor.value_diff <= shard.TOLERANCE and not floor.beyond  # moved, and only by rounding


def test_a_difference_fails_the_bench_unless_rounding_moves_the_same_analysis():
    shard = _bench("shard")

    def comparison(*columns: str):
        return shard.Comparison(0.5, columns[0], 0.0, 0, 100, {c: (0.5, 3, 1e-4) for c in columns})

    adversary_moved = comparison("adversarial.alpha_eps_max")
    assert not shard._report_agreement(comparison("adversarial.jsd_eps_max"), lambda: adversary_moved)
    assert shard._report_agreement(comparison("permutation.tvd_median"), lambda: adversary_moved)
    assert shard._report_agreement(comparison("adversarial.jsd_eps_max"), lambda: comparison("permutation.tvd_median"))


def test_the_gh_x_positions_bench_compares_every_n_with_every_position(tmp_path: Path):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import gh_x_positions  # bench/gh_x_positions.py
    finally:
        sys.path.remove(str(REPO / "bench"))
    synthetic = SyntheticConfig(n_train=20, n_dev=5, n_test=12, min_length=6, max_length=14)
    data = load_dataset("synthetic", tmp_path, tmp_path / "cache", DataConfig(synthetic=synthetic))
    config = CellConfig(dataset="synthetic", encoder="lstm", model=ModelConfig(embedding_dim=8, hidden_size=8))
    model = build_model(config, data).eval()
    lines = gh_x_positions.compare(model, data.splits["test"], [64, 3], batch_size=4)
    rows = [line.strip("|").split("|") for line in lines[2:]]
    assert [int(row[2]) for row in rows] == [64, 3] * 3
    for row in rows:
        difference = float(row[5])
        assert difference == 0.0 if int(row[2]) == 64 else difference > 0  # 64 covers every item of <= 14


def test_the_adversary_bench_runs_both_sides(shipped_sst: Path):
    command = [sys.executable, str(REPO / "bench" / "adversary.py"), "--dataset", "sst", "--instances", "40"]
    command += ["--epochs", "1", "--repeats", "1", "--encoders", "lstm"]
    environment = {**os.environ, "GRIDLAB_DATA": str(shipped_sst)}  # SST: the shipped release
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300, env=environment).stdout
    row = output.splitlines()[-1].split()
    assert row[:2] == ["lstm", "40"] and float(row[2]) > 0 and float(row[3]) > 0


def floor_rows(tmp_path: Path, *arguments: str) -> list[dict[str, str]]:
    out = tmp_path / "floors.csv"
    command = [sys.executable, str(REPO / "bench" / "floors.py"), "--lengths", "6", "--batch", "4"]
    command += ["--repeats", "1", "--min-time", "0.01", "--csv", str(out), *arguments]
    subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    with out.open() as rows:
        return list(csv.DictReader(rows))


def test_each_floor_computes_what_gridlab_computes(tmp_path: Path):
    """The floors are the same analyses in plain torch: where nothing is drawn at random, the same numbers."""
    rows = {
        row["analysis"]: row for row in floor_rows(tmp_path, "--only", "gradient", "leave_one_out", "erasure_multi")
    }
    for name in ("gradient", "leave_one_out"):
        assert float(re.search(r"max diff ([\d.e+-]+)", rows[name]["check"]).group(1)) < 1e-4
    assert rows["erasure_multi"]["check"].endswith("same first flip 4/4")
    for row in rows.values():  # a time, a ratio and where each side spends it, measured
        assert float(row["gridlab_ms"]) > 0 and float(row["floor_ms"]) > 0 and float(row["ratio"]) > 0
        assert float(row["gridlab_encoder_ms"]) > 0 and 0 <= float(row["floor_outside_ops"]) <= 1


def test_the_floors_of_the_drawn_and_local_analyses_run(tmp_path: Path):
    rows = floor_rows(tmp_path, "--only", "permutation", "adversarial", "leave_one_out_cnn")
    assert [row["analysis"] for row in rows] == ["permutation", "adversarial", "leave_one_out_cnn"]
    cnn = rows[2]["check"]
    assert float(re.search(r"max diff ([\d.e+-]+)", cnn).group(1)) < 1e-4
    assert all(float(row["ratio_min"]) <= float(row["ratio"]) <= float(row["ratio_max"]) for row in rows)


@pytest.mark.slow
def test_the_device_script_runs_every_step_on_the_cpu(tmp_path: Path):
    """`bench/device.sh --dry-run`: the script the first GPU will run, end to end on tiny sizes (a local Ray
    for its grid); without a perf-peers export that step says it was not run."""
    environment = {**os.environ, "PYTHON": sys.executable, "PEERS_EXPORT": ""}
    command = ["bash", str(REPO / "bench" / "device.sh"), "--dry-run", str(tmp_path / "out")]
    subprocess.run(command, capture_output=True, text=True, check=True, timeout=1200, env=environment)
    with (tmp_path / "out" / "steps.csv").open() as steps:
        status = {row["step"]: row["status"] for row in csv.DictReader(steps)}
    assert status.pop("peers") == "skipped"
    assert set(status) == {"environment", "gpu_tests", "floors", "analyses_lstm", "analyses_cnn", "grid", "grid_status"}
    assert set(status.values()) == {"0"}
    table = (tmp_path / "out" / "README.md").read_text()
    assert "| adversarial | 6 |" in table and "not run: set PEERS_EXPORT" in table


def test_the_gpu_estimate_counts_the_recurrences_sequential_steps():
    arithmetic = _bench("gpu_arithmetic")
    assert arithmetic.recurrent_steps([[5, 6, 7], [5] * 9], None) == 11  # the longest review and <sos>, <eos>
    words = arithmetic.WORD_CHUNK_ROWS
    # a HAN batch: 2 documents of 65 and 2 sentences; the longest sentence of each chunk of sentences, longest
    # first, then the most sentences
    documents = [[1] * (7 + 64 * 3), [1] * 10]
    starts = [[0, 7, *range(10, 10 + 63 * 3, 3)], [0, 4]]
    assert sum(len(s) for s in starts) == words + 3
    assert arithmetic.recurrent_steps(documents, starts) == 7 + 3 + 65  # chunks led by 7 and by a 3, then 65


def test_the_gpu_estimate_bounds_leave_one_out_by_whole_reruns():
    arithmetic = _bench("gpu_arithmetic")
    short = arithmetic.loo_steps(np.array([4.0]), state_width=2)  # one chunk holds all 4 deletions
    assert short == 5
    chunk = arithmetic.LOO_CHUNK_ELEMENTS
    long = arithmetic.loo_steps(np.array([1024.0]), state_width=chunk // (1024 * 256))  # 256 deletions a chunk
    assert long == 4 * 1025
