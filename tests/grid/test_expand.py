"""Cell expansion: stable content ids, excludes and overrides, and collapse of equal models."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

from gridlab.config.schema import CellConfig
from gridlab.grid.expand import cell_id, expand, restrict
from gridlab.grid.load import load_grid_file


def grid_from(tmp_path: Path, text: str, name: str = "g.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return expand(load_grid_file(path), str(path), check_data=False)


def test_cell_id_is_sha256_of_canonical_resolved_json():
    config = CellConfig(dataset="sst")
    cell = config.model_dump(mode="json")
    del cell["data"]["test_fraction"], cell["data"]["drop_titles"]  # added later: left out at their neutral value
    del cell["data"]["babi_labels"]
    del cell["data"]["inword_punctuation"], cell["train"]["attention_weight_decay"], cell["model"]["query_embedding"]
    del cell["train"]["attention_lr_scale"], cell["model"]["word_attention_mode"], cell["model"]["average_activation"]
    del cell["model"]["pair_output"]
    del cell["model"]["pretrained"], cell["model"]["max_pieces"], cell["train"]["optimizer"], cell["train"]["warmup"]
    del cell["train"]["subset"]  # no max_train: which subset does not apply
    canonical = json.dumps({"schema": 1, "cell": cell}, sort_keys=True, separators=(",", ":"))
    assert cell_id(config) == hashlib.sha256(canonical.encode()).hexdigest()[:12]
    # the documented canonical form: sorted keys, no spaces, defaults present
    assert canonical.startswith('{"cell":{"architecture":"flat","attention":"additive","attention_mode":"learned",')
    assert '"lr":0.001' in canonical and '"weight_decay":1e-05' in canonical


def test_a_setting_added_later_keeps_the_ids_already_handed_out():
    # ids of the J&W grid's AG News BiLSTM cells (additive) as they have been handed out: their results folders
    # must still match after a schema field is added (the SST cells took new ids with J&W's length filter)
    grid = expand(load_grid_file(Path("grids/jain_wallace.yaml")), "grids/jain_wallace.yaml", check_data=False)
    ids = {c.id for c in grid.cells if c.config.dataset == "agnews" and c.config.encoder == "lstm"}
    assert {"217c926f7b30", "289063f75d02", "e70a18225fd0"} <= ids
    resplit = CellConfig(dataset="20news", data={"test_fraction": 0.2})
    assert cell_id(resplit) != cell_id(CellConfig(dataset="20news"))
    untitled = CellConfig(dataset="agnews", data={"drop_titles": True})
    assert cell_id(untitled) != cell_id(CellConfig(dataset="agnews"))
    separated = CellConfig(dataset="20news", data={"inword_punctuation": "separate"})
    assert cell_id(separated) != cell_id(CellConfig(dataset="20news"))
    activation = "grids/ablations/average_activation.yaml"  # its ReLU bAbI cells: the J&W grid's before babi_labels
    cells = expand(load_grid_file(Path(activation)), activation, check_data=False).cells
    babi = {c.id for c in cells if c.config.dataset == "babi1" and c.config.model.average_activation == "relu"}
    assert babi == {"34ce131de683", "42353f70cf0c", "75d1c0e36f51"}
    worded = CellConfig(dataset="babi1", architecture="pair", data={"babi_labels": "vocabulary"})
    assert cell_id(worded) != cell_id(CellConfig(dataset="babi1", architecture="pair"))


def test_carving_by_premise_renames_only_the_cells_whose_splits_it_changes(tmp_path: Path):
    """Pair datasets carved from pooled rows get new ids (their splits changed); every other cell keeps its id,
    and `carve_unit: instance` finds the cells trained on the pair-by-pair carve."""
    carves = "data.carve_unit: [instance, premise]"
    text = f"name: c\ngrid: [{{dataset: [snli], architecture: [pair], {carves}}}, {{dataset: [sst], {carves}}}]\n"
    cells = grid_from(tmp_path, text + "data: {derive_splits: true}\n").cells
    ids = {(c.config.dataset, c.axes["data.carve_unit"]): c.id for c in cells}
    assert [c.config.data.carve_unit for c in cells if c.config.dataset == "sst"] == ["instance"]  # one cell
    assert ids["snli", "instance"] != ids["snli", "premise"]
    snli = "name: c\ngrid: {dataset: [snli], architecture: [pair]}\n"
    old = grid_from(tmp_path, snli + "data: {derive_splits: true}\n", "old.yaml").cells
    assert [c.id for c in old] == [ids["snli", "premise"]]  # the default carves by premise
    unpooled = {c.config.data.carve_unit for c in grid_from(tmp_path, snli, "u.yaml").cells}
    assert unpooled == {"instance"}  # splits read as released: the setting does not apply


def test_a_max_train_sample_is_a_new_cell_and_a_head_keeps_the_old_id():
    """`max_train` took the first rows before it took a sample: results trained on a head (one class on a
    split sorted by label) must not be reused for a sample, and the `head` setting still finds them."""
    head = CellConfig(dataset="imdb", train={"max_train": 5000, "subset": "head"})
    sample = CellConfig(dataset="imdb", train={"max_train": 5000})
    old = head.model_dump(mode="json")
    del old["data"]["test_fraction"], old["data"]["drop_titles"], old["train"]["attention_lr_scale"]
    del old["data"]["inword_punctuation"], old["train"]["attention_weight_decay"], old["model"]["query_embedding"]
    del old["model"]["word_attention_mode"], old["train"]["subset"], old["model"]["average_activation"]
    del old["model"]["pair_output"], old["data"]["babi_labels"]
    del old["model"]["pretrained"], old["model"]["max_pieces"], old["train"]["optimizer"], old["train"]["warmup"]
    canonical = json.dumps({"schema": 1, "cell": old}, sort_keys=True, separators=(",", ":"))
    assert cell_id(head) == hashlib.sha256(canonical.encode()).hexdigest()[:12]
    assert cell_id(sample) != cell_id(head)
    assert cell_id(CellConfig(dataset="imdb", train={"subset": "head"})) == cell_id(CellConfig(dataset="imdb"))


def test_ids_ignore_key_order_and_number_spelling(tmp_path: Path):
    a = grid_from(
        tmp_path, "name: a\ngrid: {dataset: [sst], encoder: [lstm, cnn]}\ntrain: {lr: 0.001, epochs: 8}\n", "a.yaml"
    )
    b = grid_from(
        tmp_path, "train: {epochs: 8.0, lr: 1.0e-3}\ngrid: {encoder: [lstm, cnn], dataset: [sst]}\nname: b\n", "b.yaml"
    )
    assert [c.id for c in a.cells] == [c.id for c in b.cells]


def test_ids_do_not_depend_on_where_results_go(tmp_path: Path):
    a = grid_from(tmp_path, "name: a\ngrid: {dataset: [sst]}\n", "a.yaml")
    b = grid_from(
        tmp_path,
        "name: b\nresults_dir: elsewhere\ninstances: 5\nresources: {train: {cpu: 2}}\n"
        "analyses: {permutation: {}}\ngrid: {dataset: [sst]}\n",
        "b.yaml",
    )
    assert a.cells[0].id == b.cells[0].id


@pytest.mark.parametrize(
    "setting",
    [
        "train: {lr: 0.01}",
        "model: {hidden_size: 64}",
        "data: {min_count: 2}",
        "train: {max_train: 100}",
        "data: {derive_splits: true}",
    ],
)
def test_every_model_setting_changes_the_id(tmp_path: Path, setting: str):
    base = grid_from(tmp_path, "name: a\ngrid: {dataset: [sst]}\n", "a.yaml")
    changed = grid_from(tmp_path, f"name: a\ngrid: {{dataset: [sst]}}\n{setting}\n", "b.yaml")
    assert base.cells[0].id != changed.cells[0].id


def test_dataset_defaults_are_filled_in_and_inapplicable_keys_blanked(tmp_path: Path):
    grid = grid_from(
        tmp_path,
        "name: a\ngrid: {dataset: [sst, babi1, synthetic], architecture: [flat, pair]}\n"
        "exclude: [{dataset: [sst, synthetic], architecture: pair}, {dataset: babi1, architecture: flat}]\n"
        "data: {babi_size: 1k, babi_labels: vocabulary}\n",
    )
    by_dataset = {c.config.dataset: c.config.data for c in grid.cells}
    assert by_dataset["sst"].min_count == 1 and by_dataset["sst"].min_length == 5
    assert by_dataset["sst"].babi_size is None and by_dataset["sst"].synthetic is None
    assert by_dataset["babi1"].babi_size == "1k"
    assert by_dataset["sst"].babi_labels == "answers" and by_dataset["babi1"].babi_labels == "vocabulary"
    assert by_dataset["synthetic"].synthetic.n_classes == 2
    assert by_dataset["sst"].dev_fraction is None  # SST has an official dev split


def test_equal_models_collapse_into_one_cell(tmp_path: Path):
    grid = grid_from(
        tmp_path, "name: a\ngrid: {dataset: [sst], projection: [softmax, sparsegen], projection_lambda: [0, 0.5]}\n"
    )
    described = sorted((c.config.projection, c.config.projection_lambda) for c in grid.cells)
    assert described == [("softmax", None), ("sparsegen", 0.0), ("sparsegen", 0.5)]
    assert grid.collapsed == 1


def test_exclude_any_of_and_overrides_in_order(tmp_path: Path):
    grid = grid_from(
        tmp_path,
        """
name: a
grid: {dataset: [sst, synthetic], encoder: [lstm, cnn, average], seed: [0, 1]}
exclude:
  - {encoder: [cnn, average], seed: 1}
overrides:
  - when: {dataset: synthetic}
    set: {train.epochs: 2, train.batch_size: 8}
  - when: {train.batch_size: 8, encoder: lstm}
    set: {train.epochs: 3}
""",
    )
    assert len(grid.cells) == 2 * (3 + 1)
    epochs = {(c.config.dataset, c.config.encoder, c.config.seed): c.config.train.epochs for c in grid.cells}
    assert epochs[("synthetic", "lstm", 0)] == 3  # the second override sees the first one's batch size
    assert epochs[("synthetic", "cnn", 0)] == 2
    assert epochs[("sst", "lstm", 1)] == 8
    assert not any(c.config.seed == 1 and c.config.encoder != "lstm" for c in grid.cells)


def test_resources_overrides_pick_each_cells_trial_resources_and_leave_its_id(tmp_path: Path):
    body = "name: a\ngrid: {dataset: [sst], architecture: [flat, han], encoder: [lstm, cnn]}\n"
    plain = grid_from(tmp_path, body, "plain.yaml")
    grid = grid_from(
        tmp_path,
        body
        + """
resources:
  train: {cpu: 1}
  overrides:
    - when: {architecture: han}
      train: {cpu: 2}
    - when: {architecture: han, encoder: cnn}   # the last entry that matches wins
      train: {cpu: 1.5, gpu: 0.5}
    - when: {dataset: imdb}
      train: {cpu: 4}
""",
        "overridden.yaml",
    )
    assert [c.id for c in grid.cells] == [c.id for c in plain.cells]
    given = {(c.config.architecture, c.config.encoder): grid.train_resources(c.id) for c in grid.cells}
    assert {k: (r.cpu, r.gpu) for k, r in given.items()} == {
        ("flat", "lstm"): (1, 0),
        ("flat", "cnn"): (1, 0),
        ("han", "lstm"): (2, 0),
        ("han", "cnn"): (1.5, 0.5),
    }
    assert grid.warnings == ["resources.overrides[2] matches no cell"]


def test_dotted_axes_reach_nested_settings(tmp_path: Path):
    grid = grid_from(
        tmp_path, "name: a\ngrid: {dataset: [synthetic], data.synthetic.n_classes: [2, 4], train.lr: [0.01, 0.001]}\n"
    )
    assert sorted((c.config.data.synthetic.n_classes, c.config.train.lr) for c in grid.cells) == [
        (2, 0.001),
        (2, 0.01),
        (4, 0.001),
        (4, 0.01),
    ]
    assert grid.axis_paths == ["dataset", "data.synthetic.n_classes", "train.lr"]


def test_scalar_axis_is_a_one_value_axis(tmp_path: Path):
    grid = grid_from(tmp_path, "name: a\ngrid: {dataset: sst, seed: 3}\n")
    assert [(c.config.dataset, c.config.seed) for c in grid.cells] == [("sst", 3)]


def test_shipped_quick_grid_ids_are_stable_across_loads():
    path = Path(__file__).resolve().parents[2] / "grids" / "quick.yaml"
    first = expand(load_grid_file(path), str(path), check_data=False)
    second = expand(load_grid_file(path), str(path), check_data=False)
    assert [c.id for c in first.cells] == [c.id for c in second.cells]
    assert yaml.safe_load(path.read_text())["name"] == first.spec.name


def test_a_list_of_blocks_is_the_union_of_their_cells(tmp_path: Path):
    grid = grid_from(
        tmp_path,
        """
name: a
grid:
  - {dataset: [sst], encoder: [lstm, cnn]}
  - {dataset: [babi1], architecture: [pair], encoder: [lstm]}
  - {dataset: [sst], encoder: [lstm]}
""",
    )
    described = sorted((c.config.dataset, c.config.architecture, c.config.encoder) for c in grid.cells)
    assert described == [("babi1", "pair", "lstm"), ("sst", "flat", "cnn"), ("sst", "flat", "lstm")]
    assert grid.collapsed == 1  # sst/lstm is in two blocks: one cell
    assert grid.axis_paths == ["dataset", "encoder", "architecture"]


def test_problems_in_a_block_name_the_block(tmp_path: Path):
    from gridlab.errors import GridFileError

    with pytest.raises(GridFileError) as caught:
        grid_from(tmp_path, "name: a\ngrid:\n  - {dataset: [sst]}\n  - {dataset: [sst], encoder: [lstn]}\n  - {}\n")
    lines = caught.value.lines()
    assert any(": grid[1].encoder[0]: unknown value 'lstn'" in line for line in lines)
    assert any(": grid[2]: expected a non-empty mapping" in line for line in lines)


def test_full_grid_is_the_union_of_the_paper_grids():
    grids = Path(__file__).resolve().parents[2] / "grids"

    def ids(name: str) -> set[str]:
        path = grids / name
        return {c.id for c in expand(load_grid_file(path), str(path), check_data=False).cells}

    papers = set().union(
        *(ids(f"{p}.yaml") for p in ("jain_wallace", "serrano_smith", "meister", "vashishth", "wiegreffe_pinter"))
    )
    assert ids("full.yaml") == papers


PAPER_GRIDS = {"J&W": "jain_wallace", "Meister": "meister", "Vashishth": "vashishth", "S&S": "serrano_smith"}


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).resolve().parents[2] / "grids").glob("*/*.yaml")), ids=lambda p: p.name
)
def test_a_grid_that_says_it_shares_a_paper_grids_cells_does(path: Path):
    """An ablation's header says "... are the J&W grid's own" where its cells are that grid's (trained once, and
    the ablation compares against the very models the fidelity table reads), or "none ... is the J&W grid's own";
    a setting added to either grid later silently breaks such a sentence."""
    header = " ".join(line.lstrip("# ") for line in path.read_text().splitlines() if line.startswith("#"))
    for claim in re.finditer(r"(\bnone\b[^.;:]*?)?\bthe (J&W|Meister|Vashishth|S&S) grid's own", header):
        paper = path.parents[1] / f"{PAPER_GRIDS[claim.group(2)]}.yaml"
        theirs = {c.id for c in expand(load_grid_file(paper), str(paper), check_data=False).cells}
        ours = {c.id for c in expand(load_grid_file(path), str(path), check_data=False).cells}
        assert bool(ours & theirs) != bool(claim.group(1)), claim.group(0)


def test_a_where_path_given_twice_adds_its_values(tmp_path: Path):
    grid = grid_from(tmp_path, "name: g\ngrid: {dataset: [sst, imdb, 20news], seed: [0, 1]}\n")
    twice = restrict(grid, ["dataset=sst", "dataset=20news", "seed=1"])
    assert twice == restrict(grid, ["dataset=sst,20news", "seed=1"])
    assert sorted(c.config.dataset for c in twice.cells) == ["20news", "sst"]
