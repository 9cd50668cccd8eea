"""The benches against Jain & Wallace's own trainer and pipeline (bench/jw_training.py, bench/jw_grid.py).

gridlab's half is tested everywhere; J&W's code is not part of gridlab, so the tests that run it need a clone or
mirror of successar/AttentionExplanation ($JW_GIT) and perf-peers' shims ($PEERS_DIR), and skip, saying so,
without them."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gridlab.data.batching import SOS_ID
from gridlab.data.vocab import EOS_ID
from gridlab.grid.expand import expand, restrict
from gridlab.grid.load import load_grid_file

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
JW_GIT = Path(os.environ.get("JW_GIT", "")) if os.environ.get("JW_GIT") else None
PEERS = Path(os.environ.get("PEERS_DIR", REPO.parent / "shared" / "perf-peers"))
needs_jw = pytest.mark.skipif(
    JW_GIT is None or not (JW_GIT / "HEAD").is_file() or not (PEERS / "shims" / "peer_shims.py").is_file(),
    reason="J&W's code is not here: set JW_GIT to a git dir of successar/AttentionExplanation and PEERS_DIR to "
    f"perf-peers (JW_GIT={JW_GIT}, PEERS_DIR={PEERS})",
)


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import jw_grid
    import jw_originals
    import jw_training

    return jw_grid, jw_training, jw_originals


def test_the_grid_side_launches_the_six_sst_cells_of_the_jw_grid(bench, tmp_path: Path):
    jw_grid, _, _ = bench
    args = jw_grid.argparse.Namespace(data_dir=tmp_path / "data", epochs=3, max_train=None, instances=40)
    path = jw_grid.grid_file(args, tmp_path)
    grid = restrict(expand(load_grid_file(path), str(path), check_data=False), jw_grid.WHERE)
    cells = {(c.config.encoder, c.config.attention) for c in grid.cells}
    assert cells == {(e, a) for e in ("lstm", "cnn", "average") for a in ("additive", "dot")}
    assert all(c.config.dataset == "sst" and c.config.seed == 0 for c in grid.cells)
    assert {c.config.train.epochs for c in grid.cells} == {3} and grid.spec.instances == 40
    assert yaml.safe_load(path.read_text())["results_dir"] == str(tmp_path / "results")  # fresh, not runs/
    assert set(grid.analyses) == set(load_grid_file(jw_grid.GRID).analyses)  # the J&W analyses, unchanged


def test_the_training_cell_is_the_jw_grids_bilstm(bench):
    _, jw_training, _ = bench
    cell = jw_training.grid_cell("imdb")
    assert (cell.config.encoder, cell.config.attention, cell.config.seed) == ("lstm", "additive", 0)
    assert (cell.config.train.batch_size, cell.config.train.lr, cell.config.train.amsgrad) == (32, 1e-3, True)


def test_both_sides_train_on_the_same_fixed_rows(bench):
    _, jw_training, _ = bench
    rows = jw_training.train_rows(100, 10)
    assert rows == sorted(rows) and len(set(rows)) == 10 and rows == jw_training.train_rows(100, 10)
    assert rows != list(range(10))  # a random sample, not the head (IMDB is sorted by label)
    assert jw_training.train_rows(5, 10) == list(range(5))


def test_jw_reads_gridlabs_ids_between_their_specials(bench, tmp_path: Path):
    import numpy as np

    _, _, jw_originals = bench
    embeddings = np.zeros((7, 3), dtype=np.float32)
    jw_originals.write_vec(tmp_path / "vec.p", {"train": ([[4, 5], [6]], [0, 1])}, embeddings)
    vec = pickle.loads((tmp_path / "vec.p").read_bytes())
    assert vec.seq_text["train"] == [[SOS_ID, 4, 5, EOS_ID], [SOS_ID, 6, EOS_ID]]
    assert (SOS_ID, EOS_ID) == (2, 3)  # J&W's BatchHolder masks the first and last position of every row
    assert vec.label["train"] == [0, 1] and (vec.vocab_size, vec.word_dim) == (7, 3)


def test_the_benches_refuse_to_run_without_jw_code(tmp_path: Path):
    for script in ("jw_training.py", "jw_grid.py"):
        done = subprocess.run([sys.executable, str(BENCH / script)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "--jw-git" in done.stderr


@needs_jw
def test_one_interleaved_epoch_of_each_trainer(shipped_sst: Path, tmp_path: Path):
    command = [
        sys.executable,
        str(BENCH / "jw_training.py"),
        "--jw-git",
        str(JW_GIT),
        "--peers",
        str(PEERS),
        "--datasets",
        "sst",
        "--rounds",
        "1",
        "--subset",
        "64",
        "--cache",
        str(tmp_path / "cache"),
        "--data-dir",
        str(shipped_sst),
        "--json",
        str(tmp_path / "out.json"),
    ]
    subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    (result,) = json.loads((tmp_path / "out.json").read_text())["results"]
    assert result["instances"]["gridlab"] == 64 and 62 <= result["instances"]["jw"] <= 64  # their filter
    (round_,) = result["rounds"]
    assert round_["per_s"]["jw"] > 0 and round_["per_s"]["gridlab"] > 0
    assert round_["ratio"] == pytest.approx(round_["per_s"]["gridlab"] / round_["per_s"]["jw"])


def test_the_launch_wall_time_splits_into_phases_from_its_stamped_lines(bench):
    jw_grid, _, _ = bench
    output = [
        [20.0, "[00:00] aaaa sst/lstm/dot/seed 0: running: started | 0 trained"],
        [21.0, "[00:01] bbbb sst/lstm/additive/seed 0: running: started | 0 trained"],
        [50.0, "[00:30] aaaa sst/lstm/dot/seed 0: trained: test_accuracy 0.8 | 1 trained"],
        [60.0, "[00:40] bbbb sst/lstm/additive/seed 0: trained: test_accuracy 0.8 | 2 trained"],
        [70.0, "analyses: 1/2 shards; shard 0 of aaaa: 256 instances in 8 s, padding efficiency 0.9"],
        [75.0, "analyses: 2/2 shards; shard 0 of bbbb: 256 instances in 12 s, padding efficiency 0.9"],
    ]
    phases = jw_grid.gridlab_phases(output, wall=80.0)
    # training 20-60; shards 62-70 and 63-75 (union 13 s); the rest 80 - 20 - 53
    assert phases == {"start_up": 20.0, "training": 40.0, "analyses": 13.0, "rest": 7.0}
    assert jw_grid.union([(0, 2), (1, 3), (5, 6)]) == 4.0
