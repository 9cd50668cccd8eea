"""Scoring side of the human evaluation (Vashishth et al. §4.4): answer sheets -> agreement and 2x2 tables.

    >>> scores = score_folder(Path("runs/vashishth/annotation"), grid="vashishth")
    >>> scores.kappa                    # Cohen's kappa per pair of annotators (the paper: 0.84 IMDB, 0.82 bAbI)
    >>> write_scores(folder, scores)    # kappa.csv, condition_answers.csv, paired_answers.csv,
    ...                                 # meaningful_vs_correct.csv

Every `answers-<name>.csv` of the folder is checked against `key.parquet` before anything is computed:
each row's item_id must be one of the export's, answered once, with yes or no, and every item must be
answered. All problems of all sheets are reported together (file, line, what was expected) and nothing
is written. Tables are per dataset (the paper reports one task at a time), plus `all` when the export
spans several datasets; `annotator = all` pools every annotator's judgments.

- kappa: observed agreement and Cohen's kappa (1960) for each pair of annotators; null when chance
  agreement is 1 (both gave one and the same answer to every item), where kappa is undefined.
- condition answers: yes / no counts for original and permuted attention.
- paired answers: per instance, the answer for its original item against the answer for its permuted one.
- meaningful vs correct: the paper's Figure 5, per condition: the answer (attention meaningful) against
  whether the prediction shown (under that condition's attention) is the gold label, in counts and in
  percent of the condition's judgments.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gridlab.annotate.files import ANSWERS_GLOB, KEY
from gridlab.errors import GridlabError
from gridlab.store.atomic import write_text

ANSWERS = ("yes", "no")
NAME = re.compile(r"answers-(?P<name>[A-Za-z0-9_-]+)\.csv")
MAX_LISTED = 10
OUTPUTS = {
    "kappa": "kappa.csv",
    "conditions": "condition_answers.csv",
    "paired": "paired_answers.csv",
    "correctness": "meaningful_vs_correct.csv",
}


class AnswersError(GridlabError):
    """Answer sheets that do not fit the key: one line per problem, each naming its file and line."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))

    def lines(self) -> list[str]:
        return self.problems


@dataclass(frozen=True)
class Scores:
    annotators: list[str]
    items: int
    kappa: pd.DataFrame
    conditions: pd.DataFrame
    paired: pd.DataFrame
    correctness: pd.DataFrame


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two annotators' labels for the same items: (p_o - p_e) / (1 - p_e), with p_e from
    each annotator's own label frequencies. None when p_e = 1 (kappa is undefined)."""
    left, right = np.asarray(a), np.asarray(b)
    if left.shape != right.shape or left.size == 0:
        raise ValueError("kappa needs two equally long, non-empty sequences of labels")
    observed = float(np.mean(left == right))
    expected = float(sum(np.mean(left == c) * np.mean(right == c) for c in np.union1d(left, right)))
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def read_key(folder: Path, grid: str | None = None) -> pd.DataFrame:
    path = folder / KEY
    if not path.is_file():
        raise GridlabError(
            f"no {KEY} in {folder}: run `gridlab annotate export` first (answers are matched to its item ids)"
        )
    key = pd.read_parquet(path)
    if grid is not None and set(key["grid"]) != {grid}:
        raise GridlabError(f"{path} was exported for grid {', '.join(sorted(set(key['grid'])))}, not {grid}")
    return key


def read_answers(folder: Path, key: pd.DataFrame) -> dict[str, dict[str, str]]:
    """annotator -> item_id -> yes/no, from every answers-<name>.csv of the folder, or an AnswersError."""
    paths = sorted(folder.glob(ANSWERS_GLOB))
    if not paths:
        raise GridlabError(
            f"no {ANSWERS_GLOB} in {folder}: each annotator copies items.csv to "
            "answers-<name>.csv and fills the answer column"
        )
    known = list(key["item_id"])
    answers, problems = {}, []
    for path in paths:
        match = NAME.fullmatch(path.name)
        if match is None:
            problems.append(
                f"{path.name}: not a valid sheet name (expected answers-<name>.csv, the name made of "
                "letters, digits, '-' and '_')"
            )
            continue
        sheet, found = read_sheet(path, known)
        answers[match["name"]] = sheet
        problems += found
    if problems:
        raise AnswersError(problems)
    return answers


def read_sheet(path: Path, known: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """One sheet's answers and its problems. Lines are the file's, the header being line 1."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as stream:  # -sig: spreadsheets often add a BOM
            reader = csv.DictReader(stream)
            missing = [c for c in ("item_id", "answer") if c not in (reader.fieldnames or [])]
            if missing:
                columns = " or ".join(repr(c) for c in missing)
                return {}, [
                    (
                        f"{path.name}: line 1: no {columns} column (expected the header of items.csv: "
                        "item_id,text,top_tokens,prediction,answer, comma-separated)"
                    )
                ]
            rows = [(reader.line_num, row) for row in reader]
    except UnicodeDecodeError:
        return {}, [f"{path.name}: not UTF-8 text (save the sheet as CSV UTF-8)"]
    except csv.Error as error:
        return {}, [f"{path.name}: not readable as CSV: {error}"]
    known_set = set(known)
    answers: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems: list[str] = []
    for line, row in rows:
        item, raw = (row.get("item_id") or "").strip(), (row.get("answer") or "").strip()
        if not item and not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue  # an empty row
        where = f"{path.name}: line {line}"
        if item not in known_set:
            problems.append(f"{where}: unknown item_id '{item}' (expected an item_id of this export's items.csv)")
            continue
        if item in first_line:
            problems.append(
                f"{where}: {item} is answered again (first on line {first_line[item]}); expected one row per item"
            )
            continue
        first_line[item] = line
        if raw.lower() not in ANSWERS:
            what = "no answer" if not raw else f"answer '{raw}' is not valid"
            problems.append(f"{where} ({item}): {what}; expected yes or no")
            continue
        answers[item] = raw.lower()
    unanswered = [item for item in known if item not in first_line]
    if unanswered:
        listed = ", ".join(unanswered[:MAX_LISTED]) + (", …" if len(unanswered) > MAX_LISTED else "")
        problems.append(
            f"{path.name}: {len(unanswered)} of {len(known)} items have no row: {listed} (expected "
            "one row per item of items.csv)"
        )
    return answers, problems


def score_folder(folder: Path, grid: str | None = None) -> Scores:
    key = read_key(folder, grid)
    return score(key, read_answers(folder, key))


def score(key: pd.DataFrame, answers: dict[str, dict[str, str]]) -> Scores:
    """The tables from validated answers (every annotator answered every item of the key)."""
    annotators = sorted(answers)
    judgments = pd.concat(
        [key.assign(annotator=name, answer=key["item_id"].map(answers[name])) for name in annotators], ignore_index=True
    )
    datasets = sorted(key["dataset"].unique())
    scopes = [(d, judgments[judgments["dataset"] == d]) for d in datasets]
    if len(datasets) > 1:
        scopes.append(("all", judgments))
    pooled = [*annotators, "all"] if len(annotators) > 1 else annotators
    per = [
        (dataset, who, frame if who == "all" else frame[frame["annotator"] == who])
        for dataset, frame in scopes
        for who in pooled
    ]
    return Scores(
        annotators=annotators,
        items=len(key),
        kappa=pd.DataFrame(
            [_kappa_row(d, frame, a, b) for d, frame in scopes for a, b in itertools.combinations(annotators, 2)],
            columns=["dataset", "annotator_a", "annotator_b", "items", "agreement", "kappa"],
        ),
        conditions=pd.DataFrame([row for d, who, f in per for row in _condition_rows(d, who, f)]),
        paired=pd.DataFrame([row for d, who, f in per for row in _paired_rows(d, who, f)]),
        correctness=pd.DataFrame([row for d, who, f in per for row in _correctness_rows(d, who, f)]),
    )


def _kappa_row(dataset: str, frame: pd.DataFrame, a: str, b: str) -> dict:
    pair = frame.pivot(index="item_id", columns="annotator", values="answer")[[a, b]]
    return {
        "dataset": dataset,
        "annotator_a": a,
        "annotator_b": b,
        "items": len(pair),
        "agreement": float((pair[a] == pair[b]).mean()),
        "kappa": cohen_kappa(pair[a], pair[b]),
    }


def _condition_rows(dataset: str, who: str, frame: pd.DataFrame) -> list[dict]:
    rows = []
    for condition in ("original", "permuted"):
        answers = frame.loc[frame["condition"] == condition, "answer"]
        yes, no = int((answers == "yes").sum()), int((answers == "no").sum())
        rows.append(
            {
                "dataset": dataset,
                "annotator": who,
                "condition": condition,
                "yes": yes,
                "no": no,
                "yes_fraction": yes / (yes + no) if yes + no else None,
            }
        )
    return rows


def _paired_rows(dataset: str, who: str, frame: pd.DataFrame) -> list[dict]:
    """Original answer (rows) x permuted answer (columns), one count per (annotator, instance)."""
    pairs = frame.pivot(index=["annotator", "cell_id", "instance_id"], columns="condition", values="answer")
    return [
        {
            "dataset": dataset,
            "annotator": who,
            "original": original,
            **{
                f"permuted_{p}": int(((pairs["original"] == original) & (pairs["permuted"] == p)).sum())
                for p in ANSWERS
            },
        }
        for original in ANSWERS
    ]


def _correctness_rows(dataset: str, who: str, frame: pd.DataFrame) -> list[dict]:
    """Figure 5 of the paper: attention meaningful (the answer) x prediction correct, per condition."""
    rows = []
    for condition in ("original", "permuted"):
        part = frame[frame["condition"] == condition]
        total = len(part)
        for meaningful in ANSWERS:
            chosen = part[part["answer"] == meaningful]
            correct, incorrect = int(chosen["correct"].sum()), int((~chosen["correct"]).sum())
            rows.append(
                {
                    "dataset": dataset,
                    "annotator": who,
                    "condition": condition,
                    "meaningful": meaningful,
                    "correct": correct,
                    "incorrect": incorrect,
                    "correct_pct": 100.0 * correct / total if total else None,
                    "incorrect_pct": 100.0 * incorrect / total if total else None,
                }
            )
    return rows


def write_scores(folder: Path, scores: Scores) -> list[Path]:
    """One CSV per table, each written atomically; returns their paths."""
    written = []
    for attribute, name in OUTPUTS.items():
        path = folder / name
        write_text(path, getattr(scores, attribute).to_csv(index=False, lineterminator="\n"))
        written.append(path)
    return written


TITLES = {
    "kappa": (
        "Agreement between annotators (Cohen's kappa)",
        ("kappa is empty where it is undefined (both annotators gave one and the same answer throughout)."),
    ),
    "conditions": ("Answers by condition", "Are the highlighted words relevant for the model's prediction?"),
    "paired": (
        "Original against permuted attention, per instance",
        (
            "Rows: the answer for the instance's item with original attention; columns: the answer for its "
            "item with permuted attention."
        ),
    ),
    "correctness": (
        "Attention meaningful against prediction correct (Vashishth et al., Figure 5)",
        (
            "Per condition; the prediction is the model's under that condition's attention; "
            "percentages are of the condition's judgments."
        ),
    ),
}


def markdown(scores: Scores) -> str:
    parts = [f"# Human evaluation: {scores.items} items, annotators {', '.join(scores.annotators)}"]
    for attribute, (title, caption) in TITLES.items():
        frame = getattr(scores, attribute)
        if frame.empty:
            parts.append(f"## {title}\n\nNeeds at least two annotators.")
            continue
        parts.append(f"## {title}\n\n{caption}\n\n{markdown_table(frame)}")
    return "\n\n".join(parts) + "\n"


def markdown_table(frame: pd.DataFrame) -> str:
    def cell(column: str, value) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return "n/a"
        if isinstance(value, float):
            return f"{value:.1f}" if column.endswith("_pct") else f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += [
        "| " + " | ".join(cell(c, v) for c, v in zip(frame.columns, row)) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join(lines)
