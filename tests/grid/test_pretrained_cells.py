"""Cells of the pretrained encoder: the settings it adds leave every other cell's id as it was, the sizes its
model fixes are blanked, and what it cannot run is one validation line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridlab.errors import GridFileError
from gridlab.grid.expand import expand
from gridlab.grid.load import load_grid_file
from tests.models.conftest import write_tiny_bert


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("bert"))


def cells(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "g.yaml"
    path.write_text(text)
    return {c.config.encoder: c.id for c in expand(load_grid_file(path), str(path), check_data=False).cells}


def test_naming_a_pretrained_model_keeps_the_other_cells_ids(tmp_path: Path, bert: Path):
    before = cells(tmp_path, "name: g\ngrid: {dataset: [sst], encoder: [lstm]}\n")
    after = cells(
        tmp_path,
        f"name: g\ngrid: {{dataset: [sst], encoder: [lstm, pretrained]}}\n"
        f"model: {{pretrained: {bert}, max_pieces: 64}}\n"
        "overrides: [{when: {encoder: pretrained}, set: {attention: dot}}]\n",
    )
    assert after["lstm"] == before["lstm"] and after["pretrained"] != before["lstm"]


def test_sizes_the_pretrained_model_fixes_do_not_change_its_cell(tmp_path: Path, bert: Path):
    base = f"name: g\ngrid: {{dataset: [sst], encoder: [pretrained], attention: [dot]}}\nmodel: {{pretrained: {bert}"
    assert cells(tmp_path, base + "}\n") == cells(tmp_path, base + ", embedding_dim: 50, hidden_size: 64}\n")


def test_what_the_pretrained_encoder_cannot_run_is_one_line_each(tmp_path: Path):
    path = tmp_path / "g.yaml"
    path.write_text("name: g\ngrid: {dataset: [sst], encoder: [pretrained], attention: [additive]}\n")
    with pytest.raises(GridFileError) as caught:
        expand(load_grid_file(path), str(path), check_data=False)
    lines = caught.value.lines()
    assert any("grid.attention: 'additive' cannot go with encoder pretrained" in line for line in lines)
    assert any("model.pretrained: missing for encoder pretrained" in line for line in lines)
    path.write_text(
        "name: g\ngrid: {dataset: [sst], encoder: [pretrained], attention: [dot]}\nmodel: {pretrained: /nowhere}\n"
    )
    with pytest.raises(GridFileError) as caught:
        expand(load_grid_file(path), str(path), check_data=False)
    assert any("model.pretrained: no Hugging Face model folder at /nowhere" in line for line in caught.value.lines())


def test_the_pretrained_cell_reads_every_splits_words_and_the_others_train_s(tmp_path: Path, bert: Path):
    path = tmp_path / "g.yaml"
    path.write_text(
        f"name: g\ngrid: {{dataset: [sst], encoder: [lstm, pretrained]}}\nmodel: {{pretrained: {bert}}}\n"
        "overrides: [{when: {encoder: pretrained}, set: {attention: dot}}]\n"
    )
    grid = expand(load_grid_file(path), str(path), check_data=False)
    assert {c.config.encoder: c.config.data.vocabulary for c in grid.cells} == {"lstm": "train", "pretrained": "all"}
    base = (
        f"name: g\ngrid: {{dataset: [sst], encoder: [pretrained], attention: [dot]}}\nmodel: {{pretrained: {bert}}}\n"
    )
    assert cells(tmp_path, base + "data: {vocabulary: train}\n") != cells(tmp_path, base)  # a grid may ask for it
    lstm = "name: g\ngrid: {dataset: [sst], encoder: [lstm]}\n"
    assert cells(tmp_path, lstm + "data: {vocabulary: train}\n") == cells(tmp_path, lstm)  # as before the setting
