"""The ablations file: what an entry selects, how it reads in the fidelity table, and that the shipped file
only names grids that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridlab.errors import GridlabError
from gridlab.grid.expand import expand, restrict
from gridlab.grid.load import load_grid_file
from gridlab.studies.ablations import ABLATIONS_FILE, NO_ABLATION, Ablation, ablation_text, load_ablations

REPO = Path(__file__).resolve().parents[2]
ROW = {"paper": "Meister et al. (2021)", "quantity": "entropy_gh_x", "dataset": "sst", "model": "lstm + additive"}


def entry(**select) -> Ablation:
    return Ablation(
        id="meister_sst",
        paper="Meister et al. (2021)",
        quantity=["entropy_gh_x", "tau_gy_x"],
        select=select,
        grid="grids/ablations/meister_sst.yaml",
        where=["dataset=sst", "seed=0,1"],
        finding="entropy rises 0.04 with spaCy tokens",
    )


def test_an_entry_selects_by_paper_quantity_and_columns():
    assert entry().selects(ROW)
    assert entry(dataset="sst").selects(ROW) and entry(dataset=["imdb", "sst"]).selects(ROW)
    assert not entry(dataset="imdb").selects(ROW)
    assert not entry().selects({**ROW, "quantity": "adversary_jsd"})
    assert not entry().selects({**ROW, "paper": "Jain & Wallace (2019)"})
    assert entry(projection_lambda=None).selects({**ROW, "projection_lambda": float("nan")})


def test_the_ablation_cell():
    assert entry().command == "gridlab launch grids/ablations/meister_sst.yaml --where dataset=sst --where seed=0,1"
    assert ablation_text(ROW, [entry()], "outside") == "meister_sst"  # by id: the finding is written once
    assert ablation_text(ROW, [entry()], "within") == "meister_sst"  # a measured cause is shown wherever it applies
    other = Ablation.model_validate({**entry().model_dump(), "id": "meister_sst-2"})
    assert ablation_text(ROW, [entry(), other], "outside") == "meister_sst, meister_sst-2"
    assert ablation_text(ROW, [], "outside") == NO_ABLATION
    assert ablation_text(ROW, [], "within") == "" and ablation_text(ROW, [], "not run") == ""


def test_loading_a_file(tmp_path: Path):
    path = tmp_path / "ablations.yaml"
    assert load_ablations(path) == []  # absent: no entries
    path.write_text(
        "ablations:\n"
        "  - {id: a, paper: Jain & Wallace (2019), quantity: tau_g, grid: grids/a.yaml, where: dataset=sst, "
        "finding: x}\n"
    )
    (loaded,) = load_ablations(path)
    assert loaded.quantity == ("tau_g",) and loaded.where == ("dataset=sst",) and loaded.select == {}
    path.write_text("ablations:\n  - {id: a, paper: x, quantity: tau_g, grid: g.yaml, finding: x, cause: typo}\n")
    with pytest.raises(GridlabError, match="cause"):
        load_ablations(path)
    path.write_text("ablations:\n  - {paper: x, quantity: tau_g, grid: g.yaml, finding: x}\n")
    with pytest.raises(GridlabError, match="id"):
        load_ablations(path)
    path.write_text("ablations:\n" + "  - {id: a, paper: x, quantity: tau_g, grid: g.yaml, finding: x}\n" * 2)
    with pytest.raises(GridlabError, match="ids used twice: a"):
        load_ablations(path)
    path.write_text("ablations:\n  - {id: a, paper: x, quantity: tau_g, grid: g.yaml, finding: ''}\n")
    with pytest.raises(GridlabError, match="finding"):
        load_ablations(path)
    path.write_text("- just a list\n")
    with pytest.raises(GridlabError, match="ablations"):
        load_ablations(path)


def test_a_condition_split_at_its_comma_is_refused():
    with pytest.raises(ValueError, match="quote a condition"):
        Ablation.model_validate({**entry().model_dump(), "where": ["dataset=babi1", "babi2"]})


def test_the_shipped_file_names_existing_grids_and_commands_that_select_cells():
    for ablation in load_ablations(ABLATIONS_FILE):
        path = REPO / ablation.grid
        assert path.is_file(), ablation.grid
        grid = expand(load_grid_file(path), ablation.grid, check_data=False)
        assert restrict(grid, list(ablation.where)).cells, ablation.command
