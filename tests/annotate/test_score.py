"""Scoring without a model: Cohen's kappa against hand-computed values, the 2x2 tables on a hand-made key,
and the answer sheets' validation (file, line and what was expected)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gridlab.annotate.score import AnswersError, cohen_kappa, read_answers, read_sheet, score, write_scores
from gridlab.errors import GridlabError


def test_kappa_of_two_annotators_on_ten_items():
    # agree on 8 of 10 (p_o = 0.8); each says yes 6 times (p_e = 0.6^2 + 0.4^2 = 0.52)
    a = ["yes"] * 6 + ["no"] * 4
    b = ["yes"] * 5 + ["no", "yes"] + ["no"] * 3
    assert cohen_kappa(a, b) == pytest.approx((0.8 - 0.52) / (1 - 0.52))  # = 7/12
    assert cohen_kappa(a, b) == pytest.approx(7 / 12)


def test_kappa_of_a_classic_table():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_edge_cases():
    assert cohen_kappa(["yes", "no", "no"], ["yes", "no", "no"]) == pytest.approx(1.0)
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)
    assert cohen_kappa(["yes"] * 4, ["yes"] * 4) is None  # chance agreement 1: undefined, not NaN
    with pytest.raises(ValueError):
        cohen_kappa(["yes"], ["yes", "no"])


def hand_key() -> pd.DataFrame:
    """Two instances, an original and a permuted item each; the permuted prediction of instance 1 is wrong."""
    return pd.DataFrame(
        {
            "item_id": ["item-1", "item-2", "item-3", "item-4"],
            "grid": "h",
            "cell_id": "c0",
            "dataset": "sst",
            "instance_id": [0, 1, 1, 0],
            "condition": ["original", "original", "permuted", "permuted"],
            "correct": [True, True, False, True],
        }
    )


def test_two_by_two_tables_count_by_hand():
    answers = {
        "ann": {"item-1": "yes", "item-2": "yes", "item-3": "no", "item-4": "yes"},
        "bob": {"item-1": "yes", "item-2": "no", "item-3": "no", "item-4": "no"},
    }
    scores = score(hand_key(), answers)
    kappa = scores.kappa.iloc[0]
    # ann yes 3/4, bob yes 1/4: p_o = 0.5, p_e = 0.75*0.25 + 0.25*0.75 = 0.375, kappa = 0.125/0.625 = 0.2
    assert (kappa["annotator_a"], kappa["annotator_b"], kappa["items"]) == ("ann", "bob", 4)
    assert kappa["agreement"] == pytest.approx(0.5) and kappa["kappa"] == pytest.approx(0.2)

    conditions = scores.conditions.set_index(["annotator", "condition"])[["yes", "no"]]
    assert conditions.loc[("ann", "original")].tolist() == [2, 0]
    assert conditions.loc[("ann", "permuted")].tolist() == [1, 1]
    assert conditions.loc[("bob", "original")].tolist() == [1, 1]
    assert conditions.loc[("bob", "permuted")].tolist() == [0, 2]
    assert conditions.loc[("all", "permuted")].tolist() == [1, 3]

    paired = scores.paired.set_index(["annotator", "original"])[["permuted_yes", "permuted_no"]]
    assert paired.loc[("ann", "yes")].tolist() == [1, 1]  # instance 0: yes/yes, instance 1: yes/no
    assert paired.loc[("ann", "no")].tolist() == [0, 0]
    assert paired.loc[("bob", "yes")].tolist() == [0, 1]  # instance 0: yes/no
    assert paired.loc[("bob", "no")].tolist() == [0, 1]  # instance 1: no/no
    assert paired.loc[("all", "yes")].tolist() == [1, 2]

    correct = scores.correctness.set_index(["annotator", "condition", "meaningful"])
    assert correct.loc[("ann", "permuted", "yes"), ["correct", "incorrect"]].tolist() == [1, 0]
    assert correct.loc[("ann", "permuted", "no"), ["correct", "incorrect"]].tolist() == [0, 1]
    assert correct.loc[("ann", "permuted", "no"), "incorrect_pct"] == pytest.approx(50.0)
    assert correct.loc[("bob", "original", "no"), ["correct", "incorrect"]].tolist() == [1, 0]
    assert correct.loc[("all", "original", "yes"), "correct_pct"] == pytest.approx(75.0)


def test_one_annotator_has_tables_but_no_kappa(tmp_path: Path):
    scores = score(hand_key(), {"ann": {"item-1": "yes", "item-2": "yes", "item-3": "yes", "item-4": "yes"}})
    assert scores.kappa.empty and set(scores.conditions["annotator"]) == {"ann"}
    written = write_scores(tmp_path, scores)
    assert [p.name for p in written] == [
        "kappa.csv",
        "condition_answers.csv",
        "paired_answers.csv",
        "meaningful_vs_correct.csv",
    ]
    assert pd.read_csv(tmp_path / "condition_answers.csv")["yes"].tolist() == [2, 2]


SHEET_HEADER = "item_id,text,top_tokens,prediction,answer\n"


def test_every_problem_of_a_sheet_is_named_with_its_line(tmp_path: Path):
    path = tmp_path / "answers-carol.csv"
    path.write_text(
        SHEET_HEADER
        + "item-1,a [[b]] c,b,pos,Yes\n"  # line 2: fine (case and spaces do not matter)
        + "item-9,x,x,pos,yes\n"  # line 3: unknown id
        + 'item-2,"a, b",b,neg,\n'  # line 4: empty answer
        + "item-3,a,b,neg,maybe\n"  # line 5: not yes/no
        + ",,,,\n"  # line 6: an empty row is ignored
        + "item-1,a,b,pos,no\n"
    )  # line 7: answered twice; item-4 has no row
    answers, problems = read_sheet(path, ["item-1", "item-2", "item-3", "item-4"])
    assert answers == {"item-1": "yes"}
    assert problems == [
        "answers-carol.csv: line 3: unknown item_id 'item-9' (expected an item_id of this export's items.csv)",
        "answers-carol.csv: line 4 (item-2): no answer; expected yes or no",
        "answers-carol.csv: line 5 (item-3): answer 'maybe' is not valid; expected yes or no",
        "answers-carol.csv: line 7: item-1 is answered again (first on line 2); expected one row per item",
        "answers-carol.csv: 1 of 4 items have no row: item-4 (expected one row per item of items.csv)",
    ]


def test_a_sheet_without_the_columns_or_with_a_bom(tmp_path: Path):
    bad = tmp_path / "answers-dan.csv"
    bad.write_text("item_id;answer\nitem-1;yes\n")  # semicolons: one column named 'item_id;answer'
    assert read_sheet(bad, ["item-1"])[1] == [
        (
            "answers-dan.csv: line 1: no 'item_id' or 'answer' column (expected the header of items.csv: "
            "item_id,text,top_tokens,prediction,answer, comma-separated)"
        )
    ]
    bom = tmp_path / "answers-eve.csv"
    bom.write_bytes("\ufeffitem_id,answer\nitem-1,no\n".encode())  # as spreadsheets save "CSV UTF-8"
    assert read_sheet(bom, ["item-1"]) == ({"item-1": "no"}, [])


def test_read_answers_collects_every_sheet_and_names(tmp_path: Path):
    key = hand_key()
    (tmp_path / "answers-ok.csv").write_text(SHEET_HEADER + "".join(f"item-{i},t,t,p,no\n" for i in range(1, 5)))
    (tmp_path / "answers-b@d.csv").write_text(SHEET_HEADER)
    (tmp_path / "answers-short.csv").write_text(SHEET_HEADER + "item-1,t,t,p,yes\n")
    with pytest.raises(AnswersError) as raised:
        read_answers(tmp_path, key)
    assert raised.value.lines() == [
        (
            "answers-b@d.csv: not a valid sheet name (expected answers-<name>.csv, the name made of letters, "
            "digits, '-' and '_')"
        ),
        (
            "answers-short.csv: 3 of 4 items have no row: item-2, item-3, item-4 (expected one row per item of "
            "items.csv)"
        ),
    ]
    (tmp_path / "answers-b@d.csv").unlink()
    (tmp_path / "answers-short.csv").unlink()
    assert read_answers(tmp_path, key) == {"ok": {f"item-{i}": "no" for i in range(1, 5)}}
    for path in tmp_path.glob("answers-*.csv"):
        path.unlink()
    with pytest.raises(GridlabError, match="no answers-\\*.csv in"):
        read_answers(tmp_path, key)
