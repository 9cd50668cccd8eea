"""export -> fill -> score through the CLI, on a tiny model published without Ray: the sheet is blinded and
shuffled, its top tokens are the model's top attention for the instance (recomputed here one instance at a
time, with `<sos>` at position 0), the permuted items follow their permutation, and the scores come out of
the filled sheets."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from gridlab.analyses.common import instance_generator
from gridlab.analyses.ranking import descending_order
from gridlab.annotate.export import ITEM_COLUMNS, TOP_K, top_positions
from gridlab.cli import app
from gridlab.data.batching import collate

PER_CELL = 10


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def exported(annotated_grid) -> Path:
    learned = annotated_grid.learned.id  # the generated task is annotated only when named
    result = run("annotate", "export", annotated_grid.path, "--per-cell", PER_CELL, "--cells", learned)
    assert result.exit_code == 0, result.output
    assert f"{2 * PER_CELL} items from 1 cell written" in result.output
    return annotated_grid.expanded.results_dir / "annotation"


def test_without_named_cells_the_generated_task_is_left_out(annotated_grid, tmp_path: Path):
    result = run("annotate", "export", annotated_grid.path, "--out", tmp_path / "auto")
    assert result.exit_code == 1, result.output
    assert "no trained flat classifier with learned attention to annotate (3 cells left out:" in result.output
    assert "synthetic (the generated task's words mean nothing to a reader; name it with --cells)" in result.output
    assert not (tmp_path / "auto").exists()


def read_items(folder: Path) -> list[dict]:
    with (folder / "items.csv").open(newline="") as stream:
        return list(csv.DictReader(stream))


def test_the_sheet_is_blinded_and_shuffled(exported: Path, annotated_grid):
    items = read_items(exported)
    key = pd.read_parquet(exported / "key.parquet")
    assert list(items[0]) == list(ITEM_COLUMNS) and all(item["answer"] == "" for item in items)
    assert [i["item_id"] for i in items] == list(key["item_id"]) == sorted(key["item_id"])
    assert set(key["cell_id"]) == {annotated_grid.learned.id} and set(key["grid"]) == {"h"}
    counts = key.groupby("instance_id")["condition"].agg(sorted)
    assert len(counts) == PER_CELL and all(c == ["original", "permuted"] for c in counts)
    assert list(key["condition"]) != sorted(key["condition"])  # shuffled, not all originals first
    lengths = key["instance_id"].map(lambda i: len(annotated_grid.data.splits["test"]["tokens"][i]))
    assert (lengths > TOP_K).all()  # shorter instances would be highlighted entirely in both conditions
    assert (exported / "INSTRUCTIONS.md").read_text().count("relevant for the model's prediction") == 1


def attention_of(model, data, instance_id: int) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """One instance alone: its tokens, the weights on them (alpha after `<sos>` at position 0) and h."""
    table = data.splits["test"]
    tokens = table["tokens"][instance_id].as_py()
    batch = collate(
        {
            "ids": [table["ids"][instance_id].as_py()],
            "label": [table["label"][instance_id].as_py()],
            "instance_id": [instance_id],
        }
    )
    with torch.no_grad():
        encoded = model.encode(batch)
        alpha = model.attend(encoded.h, encoded.mask, encoded.query)  # (1, T + 2)
    assert alpha[0, 0] == 0 and alpha[0, len(tokens) + 1] == 0  # <sos>, <eos>: outside the mask
    return tokens, alpha[0, 1 : len(tokens) + 1].double(), encoded


def top3_order(weights: torch.Tensor) -> list[int]:
    """The project's tie rule (`ranking.descending_order`): tied weights go to the earlier token."""
    return [int(i) for i in descending_order(weights[None], torch.ones(1, len(weights), dtype=torch.bool))[0]]


def top3(weights: torch.Tensor) -> list[int]:
    return top3_order(weights)[:TOP_K]


def test_top_positions_follow_the_tie_rule():
    def top_positions_of(weights: list[float]) -> list[int]:  # with the order token_scores writes beside them
        return top_positions(np.array(weights), top3_order(torch.tensor(weights, dtype=torch.float64)))

    # 0.3 and 0.3 + 1e-9 tie (within 1e-5 of the largest weight): the earlier token first, not the larger one
    assert top_positions_of([0.3, 0.3 + 1e-9, 0.31, 0.1]) == [2, 0, 1]
    assert top_positions_of([0.1, 0.2, 0.3, 0.4]) == [3, 2, 1]
    # a zero weight (sparse projections) is never highlighted, even where it ties a tiny positive weight
    assert top_positions_of([0.0, 0.6, 0.0, 0.4]) == [1, 3]
    assert top_positions_of([0.5, 0.4, 0.0, 1e-7]) == [0, 1, 3]


def test_top_tokens_are_the_models_top_attention_and_follow_the_permutation(exported: Path, annotated_grid):
    items = {i["item_id"]: i for i in read_items(exported)}
    key = pd.read_parquet(exported / "key.parquet")
    model, data, cell_id = annotated_grid.model, annotated_grid.data, annotated_grid.learned.id
    flipped = 0
    for instance_id, rows in key.groupby("instance_id"):
        tokens, weights, encoded = attention_of(model, data, int(instance_id))
        original = rows[rows["condition"] == "original"].iloc[0]
        permuted = rows[rows["condition"] == "permuted"].iloc[0]
        assert list(original["top_positions"]) == top3(weights)
        np.testing.assert_allclose(original["top_weights"], weights[top3(weights)].numpy(), rtol=1e-5)

        order = torch.randperm(len(tokens), generator=instance_generator(cell_id, "annotate", int(instance_id)))
        moved = weights[order]  # token j now carries the weight of token order[j]
        assert list(permuted["top_positions"]) == top3(moved)
        assert [int(order[j]) for j in permuted["top_positions"]] == top3(weights)  # the same weights, moved

        full = torch.zeros(1, len(tokens) + 2)
        full[0, 1 : len(tokens) + 1] = moved.float()
        with torch.no_grad():
            pred = int(model.decode(encoded.h, full, encoded.query).argmax(-1))
        assert permuted["pred"] == pred and permuted["correct"] == (pred == permuted["label"])
        flipped += pred != original["pred"]

        for row in (original, permuted):
            item = items[row["item_id"]]
            top = list(row["top_positions"])
            assert item["top_tokens"] == ", ".join(tokens[p] for p in top)
            shown = item["text"].split(" ")
            assert len(shown) == len(tokens)
            assert [i for i, word in enumerate(shown) if word.startswith("[[")] == sorted(top)
            assert [w.strip("[]") for w in shown] == tokens
            assert item["prediction"] == data.label_names[row["pred"]]
    assert flipped > 0  # the permuted predictions are the model's own under the permuted weights


def fill(items: list[dict], path: Path, answer) -> None:
    with path.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(ITEM_COLUMNS))
        writer.writeheader()
        for n, item in enumerate(reversed(items)):  # any row order is fine
            writer.writerow({**item, "answer": answer(n, item)})


def test_export_fill_score_round_trip(exported: Path, annotated_grid, tmp_path: Path):
    folder = tmp_path / "round"
    shutil.copytree(exported, folder)
    items = read_items(folder)
    key = pd.read_parquet(folder / "key.parquet").set_index("item_id")
    condition = key["condition"].to_dict()
    ann = {i["item_id"]: "yes" if condition[i["item_id"]] == "original" else "no" for i in items}
    bob = {k: ("no" if v == "yes" else "yes") if n < 3 else v for n, (k, v) in enumerate(sorted(ann.items()))}
    fill(items, folder / "answers-ann.csv", lambda n, item: ann[item["item_id"]])
    fill(items, folder / "answers-bob.csv", lambda n, item: bob[item["item_id"]].upper())

    result = run("annotate", "score", annotated_grid.path, "--dir", folder)
    assert result.exit_code == 0, result.output
    assert "Cohen's kappa" in result.output and "| synthetic | ann | bob | 20 |" in result.output

    a, b = np.array([ann[k] for k in sorted(ann)]), np.array([bob[k] for k in sorted(ann)])
    p_o = float(np.mean(a == b))
    p_e = float(np.mean(a == "yes") * np.mean(b == "yes") + np.mean(a == "no") * np.mean(b == "no"))
    kappa = pd.read_csv(folder / "kappa.csv").iloc[0]
    assert kappa["agreement"] == pytest.approx(17 / 20) and kappa["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))

    conditions = pd.read_csv(folder / "condition_answers.csv").set_index(["annotator", "condition"])
    assert conditions.loc[("ann", "original"), ["yes", "no"]].tolist() == [PER_CELL, 0]
    assert conditions.loc[("ann", "permuted"), ["yes", "no"]].tolist() == [0, PER_CELL]
    paired = pd.read_csv(folder / "paired_answers.csv").set_index(["annotator", "original"])
    assert paired.loc[("ann", "yes"), ["permuted_yes", "permuted_no"]].tolist() == [0, PER_CELL]
    correct = pd.read_csv(folder / "meaningful_vs_correct.csv").set_index(["annotator", "condition", "meaningful"])
    permuted_correct = int(key.loc[key["condition"] == "permuted", "correct"].sum())
    assert correct.loc[("ann", "permuted", "no"), ["correct", "incorrect"]].tolist() == [
        permuted_correct,
        PER_CELL - permuted_correct,
    ]


def test_bad_answers_fail_with_their_lines_and_write_nothing(exported: Path, annotated_grid, tmp_path: Path):
    folder = tmp_path / "bad"
    shutil.copytree(exported, folder)
    items = read_items(folder)
    fill(items, folder / "answers-ann.csv", lambda n, item: "yes")
    fill(items[1:], folder / "answers-bob.csv", lambda n, item: "perhaps" if n == 0 else "no")
    result = run("annotate", "score", annotated_grid.path, "--dir", folder)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"answers-bob.csv: line 2 ({items[-1]['item_id']}): answer 'perhaps' is not valid; expected yes or no",
        (
            f"answers-bob.csv: 1 of {2 * PER_CELL} items have no row: {items[0]['item_id']} (expected one row per "
            "item of items.csv)"
        ),
    ]
    assert not list(folder.glob("kappa.csv")) and not list(folder.glob("*_answers.csv"))


def test_an_export_is_not_replaced_without_force(exported: Path, annotated_grid, tmp_path: Path):
    result = run(
        "annotate", "export", annotated_grid.path, "--per-cell", PER_CELL, "--cells", annotated_grid.learned.id
    )
    assert result.exit_code == 1 and "already holds an export (key.parquet)" in result.output
    again = tmp_path / "again"
    result = run(
        "annotate",
        "export",
        annotated_grid.path,
        "--per-cell",
        PER_CELL,
        "--out",
        again,
        "--cells",
        annotated_grid.learned.id,
    )
    assert result.exit_code == 0, result.output
    assert (again / "items.csv").read_text() == (exported / "items.csv").read_text()  # same seed, same sheet
    pd.testing.assert_frame_equal(pd.read_parquet(again / "key.parquet"), pd.read_parquet(exported / "key.parquet"))
    uniform = next(c.id for c in annotated_grid.expanded.cells if c.config.attention_mode == "uniform")
    result = run("annotate", "export", annotated_grid.path, "--out", tmp_path / "u", "--cells", uniform)
    assert result.exit_code == 1
    assert f"cell {uniform}: attention_mode uniform; only trained flat classifiers" in result.output
    assert not (tmp_path / "u").exists()


def test_without_token_scores_rows_the_export_says_what_to_run(annotated_grid, tmp_path: Path):
    scores = annotated_grid.expanded.workspace.analysis("token_scores")
    aside = tmp_path / "aside"
    scores.rename(aside)
    try:
        result = run(
            "annotate", "export", annotated_grid.path, "--out", tmp_path / "sheet", "--cells", annotated_grid.learned.id
        )
    finally:
        aside.rename(scores)
    assert result.exit_code == 1
    assert f"{annotated_grid.learned.id}: no token_scores rows to make the sheets from" in result.output
    assert "gridlab analyze" in result.output and not (tmp_path / "sheet").exists()
