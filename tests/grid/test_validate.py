"""`gridlab validate` accepts the documented format and rejects bad grid files with one clear line each.

Each bad case is a minimal edit of a valid grid; the test checks the exit code (2), that every stderr
line has the `FILE: path.to.key: what` form, the location and the message, and that nothing was created.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gridlab.catalog.analyses import ANALYSES
from gridlab.cli import app
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file

REPO = Path(__file__).resolve().parents[2]
VALID = {
    "name": "tiny",
    "grid": {"dataset": ["sst", "synthetic"], "encoder": ["lstm", "average"], "seed": [0, 1]},
    "train": {"epochs": 2},
    "analyses": {"permutation": {"n": 10}},
}


@pytest.fixture()
def in_tmp(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRIDLAB_DATA", str(data_dir))
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def write(folder: Path, content: dict | str, name: str = "grid.yaml") -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    return path


def edited(**changes) -> dict:
    grid = yaml.safe_load(yaml.safe_dump(VALID))
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = grid
        for part in parents:
            node = node.setdefault(part, {})
        if value is DELETE:
            node.pop(leaf)
        else:
            node[leaf] = value
    return grid


DELETE = object()

# (case id, grid content, expected location, expected message fragment)
BAD_GRIDS = [
    ("yaml-syntax", "name: tiny\ngrid: {dataset: [sst\n", "line 3, column 1", "invalid YAML"),
    ("not-a-mapping", "- sst\n- imdb\n", None, "found a list (expected a mapping"),
    ("empty-file", "", None, "found an empty file"),
    (
        "duplicate-yaml-key",
        "name: tiny\nname: other\ngrid: {dataset: [sst]}\n",
        "line 2, column 1",
        "duplicate key 'name'",
    ),
    ("unknown-top-key", edited(trian={"epochs": 1}), None, "unknown key 'trian' (expected one of: name, "),
    ("missing-name", edited(name=DELETE), "name", "missing (required)"),
    ("bad-name-chars", edited(name="Jain Wallace"), "name", "not a valid name"),
    ("name-path-separator", edited(name="../escape"), "name", "must not contain path separators or '..'"),
    ("unknown-dataset", edited(grid__dataset=["sst", "imbd"]), "grid.dataset[1]", "unknown value 'imbd'"),
    ("unknown-encoder", edited(grid__encoder=["lstn"]), "grid.encoder[0]", "did you mean 'lstm'?"),
    ("empty-axis", edited(grid__seed=[]), "grid.seed", "empty axis"),
    ("duplicate-values", edited(grid__seed=[0, 1, 0]), "grid.seed", "duplicate values 0"),
    ("unknown-axis", edited(grid__encodr=["lstm"]), "grid", "unknown key 'encodr'"),
    (
        "axis-bad-type",
        edited(grid__seed=["one"]),
        "grid.seed[0]",
        "got 'one' (expected: input should be a valid integer",
    ),
    ("train-bad-type", edited(train={"epochs": "eight"}), "train.epochs", "got 'eight'"),
    ("train-out-of-range", edited(train={"batch_size": 0}), "train.batch_size", "greater than or equal to 1"),
    ("train-unknown-key", edited(train={"epoch": 3}), "train", "unknown key 'epoch'"),
    ("exclude-unknown-key", edited(exclude=[{"encodr": "average"}]), "exclude[0]", "unknown key 'encodr'"),
    ("exclude-bad-value", edited(exclude=[{"encoder": "averag"}]), "exclude[0].encoder", "did you mean 'average'?"),
    (
        "override-unknown-set-key",
        edited(overrides=[{"when": {"dataset": "sst"}, "set": {"train.batch": 8}}]),
        "overrides[0].set",
        "unknown key 'train.batch'",
    ),
    (
        "override-bad-set-value",
        edited(overrides=[{"when": {"dataset": "sst"}, "set": {"train.lr": -1}}]),
        "overrides[0].set.train.lr",
        "greater than 0",
    ),
    (
        "override-unknown-when-key",
        edited(overrides=[{"when": {"datset": "sst"}, "set": {"train.lr": 0.1}}]),
        "overrides[0].when",
        "did you mean 'dataset'?",
    ),
    ("override-missing-set", edited(overrides=[{"when": {"dataset": "sst"}}]), "overrides[0].set", "missing"),
    ("zero-cells", edited(exclude=[{"dataset": "sst"}, {"dataset": "synthetic"}]), "exclude", "no cells left"),
    ("unknown-analysis", edited(analyses={"permutaton": {"n": 5}}), "analyses", "did you mean 'permutation'?"),
    (
        "unknown-analysis-param",
        edited(analyses={"permutation": {"samples": 5}}),
        "analyses.permutation",
        "unknown key 'samples' (expected one of: n)",
    ),
    (
        "bad-analysis-param",
        edited(analyses={"erasure_multi": {"rankings": ["attention", "gradiant"]}}),
        "analyses.erasure_multi.rankings[1]",
        "did you mean 'gradient'?",
    ),
    (
        "shard-not-whole-batches",
        edited(shard_size=100),
        None,
        "shard_size 100 is not a multiple of analysis_batch_size 32",
    ),
    ("gpu-negative", edited(resources={"train": {"gpu": -1}}), "resources.train.gpu", "greater than or equal to 0"),
    (
        "resources-override-unknown-when-key",
        edited(resources={"overrides": [{"when": {"architecure": "han"}, "train": {"cpu": 2}}]}),
        "resources.overrides[0].when",
        "did you mean 'architecture'?",
    ),
    (
        "resources-override-bad-cpu",
        edited(resources={"overrides": [{"when": {"dataset": "sst"}, "train": {"cpu": 0}}]}),
        "resources.overrides[0].train.cpu",
        "greater than 0",
    ),
    ("bad-ray-address", edited(ray={"address": "http://x"}), "ray.address", "not a Ray address"),
    (
        "lambda-too-large",
        edited(grid__projection=["sparsegen"], grid__projection_lambda=[0.5, 1.5]),
        "grid.projection_lambda[1]",
        "less than 1",
    ),
    (
        "incompatible-architecture",
        edited(grid__dataset=["sick"], grid__architecture=["flat"]),
        "grid.architecture",
        "'flat' cannot run pair-task dataset 'sick' (expected pair)",
    ),
    ("partial-dataset", edited(grid__dataset=["agnews"]), "grid.dataset[0]", "partial: no train split"),
    ("missing-dataset-dir", edited(data_dir="nowhere"), "grid.dataset[0]", "gridlab data fetch sst"),
    ("instances-zero", edited(instances=0), "instances", "greater than or equal to 1"),
    ("section-as-value", edited(grid__train=[1]), "grid", "'train' is a section, not a value"),
    ("missing-grid", edited(grid=DELETE), "grid", "missing (required)"),
    (
        "seq2seq-needs-bigru",
        edited(grid__dataset=["multi30k"], grid__architecture=["seq2seq"], grid__encoder=["lstm"]),
        "grid.encoder",
        "the translation model has a BiGRU encoder, not 'lstm'",
    ),
    (
        "embeddings-file-missing",
        edited(model={"embeddings": "glove.missing.txt"}),
        "model.embeddings",
        "no word-vector file at glove.missing.txt",
    ),
    (
        "transformer-heads",
        edited(grid__encoder=["transformer"], model={"hidden_size": 10, "transformer_heads": 3}),
        "model.hidden_size",
        "not divisible by model.transformer_heads = 3",
    ),
    (
        "representation-layer-without-self-attention",
        edited(analyses={"sparsity_importance": {"representation_layer": 0}}),
        "analyses.sparsity_importance.representation_layer",
        "the flat lstm cells have no self-attention layers",
    ),
    (
        "representation-layer-above-the-stack",
        edited(grid__encoder=["transformer"], analyses={"sparsity_importance": {"representation_layer": 2}}),
        "analyses.sparsity_importance.representation_layer",
        "a 2-layer Transformer has no layer 2 (expected null, or 0 to layers - 1",
    ),
    (
        "two-ways-to-erase-h",
        edited(
            grid__encoder=["transformer"],
            analyses={"sparsity_importance": {"representation_layer": 1, "representation_erasure": "zero"}},
        ),
        "analyses.sparsity_importance",
        "representation_erasure applies at the final attention layer",
    ),
    ("infinite-lr", edited(train={"lr": float("inf")}), "train.lr", "expected: input should be a finite number"),
    (
        "nan-analysis-parameter",
        edited(analyses={"adversarial": {"lr": float("nan")}}),
        "analyses.adversarial.lr",
        "finite number",
    ),
    (
        "synthetic-inconsistent",
        edited(grid__dataset=["synthetic"], data={"synthetic": {"planted": 1, "distractors": 1}}),
        "data.synthetic",
        "distractors must be fewer than planted",
    ),
]


@pytest.mark.parametrize(("content", "where", "fragment"), [c[1:] for c in BAD_GRIDS], ids=[c[0] for c in BAD_GRIDS])
def test_bad_grid_is_rejected_with_one_line_per_problem(in_tmp: Path, content, where, fragment):
    path = write(in_tmp, content)
    result = run("validate", str(path))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines, "no error printed"
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    expected_prefix = f"{path}: {where}: " if where else f"{path}: "
    assert any(line.startswith(expected_prefix) and fragment in line for line in lines), lines
    assert "Traceback" not in result.output
    assert sorted(p.name for p in in_tmp.iterdir()) == ["grid.yaml"], "validation created files"


def test_a_results_dir_that_is_a_file_is_one_line_before_anything_starts(in_tmp: Path):
    (in_tmp / "runs").write_text("not a folder")
    path = write(in_tmp, edited(results_dir="runs/deeper"))
    for command in ("validate", "launch"):
        result = run(command, str(path))
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            f"{path}: results_dir: runs is a file, not a folder (expected a folder to write results in)"
        )
    assert (in_tmp / "runs").read_text() == "not a folder"


def test_at_least_twenty_kinds_of_bad_grid_are_covered():
    assert len({case[0] for case in BAD_GRIDS}) >= 20


def test_missing_grid_file_is_one_line(in_tmp: Path):
    result = run("validate", "absent.yaml")
    assert result.exit_code == 2
    assert result.stderr.strip() == "absent.yaml: cannot read the grid file (No such file or directory)"


def test_several_problems_are_all_reported(in_tmp: Path):
    path = write(in_tmp, edited(grid__encoder=["lstn"], train={"epochs": 0}))
    lines = run("validate", str(path)).stderr.strip().splitlines()
    assert any(": train.epochs: " in line for line in lines)
    # axis problems are found after the file-level schema passes, so fix one and see the other
    path = write(in_tmp, edited(grid__encoder=["lstn"], grid__seed=[]))
    lines = run("validate", str(path)).stderr.strip().splitlines()
    assert {line.split(": ")[1] for line in lines} == {"grid.encoder[0]", "grid.seed"}


def test_documented_example_is_accepted(in_tmp: Path):
    """The issue's example grid, with the datasets reduced to those present."""
    example = yaml.safe_load((REPO / "grids" / "example.yaml").read_text())
    example["grid"]["dataset"] = ["sst", "imdb"]
    path = write(in_tmp, example)
    result = run("validate", str(path))
    assert result.exit_code == 0, result.output
    # 2 datasets x (3 encoders x 2 attentions - 1 excluded) x 3 seeds
    assert result.stdout.strip() == f"{path}: valid: 30 cells, 3 analyses (permutation, adversarial, erasure_multi)"
    assert sorted(p.name for p in in_tmp.iterdir()) == ["grid.yaml"]


@pytest.mark.parametrize("grid", sorted((REPO / "grids").rglob("*.yaml")), ids=lambda p: p.name)
def test_shipped_grids_validate(in_tmp: Path, grid: Path):
    result = run("validate", str(grid))
    assert result.exit_code == 0, result.output


def test_shipped_grids_that_share_a_results_folder_give_shared_cells_the_same_analysis_parameters():
    """A launch refuses parts computed with other parameters (`check_part_params`): two shipped grids of one
    name (one results folder) must not ask different parameters of the cells they both hold."""
    seen: dict[tuple[str, str, str], tuple[str, dict]] = {}  # (name, cell id, analysis) -> (file, params)
    clashes = []
    for path in sorted((REPO / "grids").rglob("*.yaml")):
        grid = expand(load_grid_file(path), str(path), check_data=False)
        for cell in grid.cells:
            for analysis, params in grid.analyses.items():
                wanted = params.model_dump(mode="json")
                first = seen.setdefault((grid.spec.name, cell.id, analysis), (path.name, wanted))
                if first[1] != wanted:
                    clashes.append(f"{path.name} and {first[0]}: {analysis} of {cell.id}")
    assert not clashes, clashes


def test_shipped_grids_that_share_a_results_folder_cut_shared_cells_the_same_way():
    """A launch refuses parts cut from another sample (`check_part_shards`): two shipped grids of one name must
    not analyse a cell they both hold on different `instances` or `shard_size`."""
    seen: dict[tuple[str, str], tuple[str, tuple]] = {}  # (name, cell id) -> (file, (instances, shard_size))
    clashes = []
    for path in sorted((REPO / "grids").rglob("*.yaml")):
        grid = expand(load_grid_file(path), str(path), check_data=False)
        cut = (grid.spec.instances, grid.spec.shard_size)
        for cell in grid.cells:
            if not any(ANALYSES[a].scope != "model" and ANALYSES[a].applies(cell.config) for a in grid.analyses):
                continue
            first = seen.setdefault((grid.spec.name, cell.id), (path.name, cut))
            if first[1] != cut:
                clashes.append(f"{path.name} {cut} and {first[0]} {first[1]}: {cell.id}")
    assert not clashes, clashes


def test_partial_dataset_is_accepted_with_derived_splits(in_tmp: Path):
    path = write(
        in_tmp,
        edited(
            grid__dataset=["agnews", "snli"],
            grid__architecture=["flat", "pair"],
            exclude=[{"dataset": "agnews", "architecture": "pair"}, {"dataset": "snli", "architecture": "flat"}],
            data={"derive_splits": True},
        ),
    )
    result = run("validate", str(path))
    assert result.exit_code == 0, result.output
    assert "valid: 8 cells" in result.stdout


def test_no_match_exclude_is_a_warning_not_an_error(in_tmp: Path):
    path = write(in_tmp, edited(exclude=[{"encoder": "gru"}]))
    result = run("validate", str(path))
    assert result.exit_code == 0
    assert re.search(r"warning: .*exclude\[0\] matches no cell", result.stderr)


def test_counts_read_as_english(in_tmp: Path):
    one = write(in_tmp, {"name": "one", "grid": {"dataset": ["synthetic"]}, "analyses": {"permutation": {}}})
    result = run("validate", str(one))
    assert result.exit_code == 0 and result.stdout.strip() == f"{one}: valid: 1 cell, 1 analysis (permutation)"
    two = write(in_tmp, edited(), name="two.yaml")
    assert ": valid: 8 cells, 1 analysis (permutation)" in run("validate", str(two)).stdout


def test_every_problem_is_reported_in_one_go(in_tmp: Path):
    """Schema problems (train) and grid problems (axes, analyses) in one file: all of them at once, rather than
    one stage per attempt."""
    bad = {
        "name": "tiny",
        "grid": {"dataset": ["sst", "imbd"], "encoder": ["lstm"]},
        "train": {"lr": -1, "epochz": 3},
        "analyses": {"permutation": {"n": 0}, "erasure": {}},
    }
    result = run("validate", str(write(in_tmp, bad)))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "train.lr",
        "train",
        "grid.dataset[1]",
        "analyses.permutation.n",
        "analyses",
    ], result.output
