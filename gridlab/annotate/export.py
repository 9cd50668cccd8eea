"""Export side of the human evaluation (Vashishth et al. §4.4): a blinded, shuffled sheet and its key.

    >>> report = export_grid(expanded, out=expanded.workspace.annotation, per_cell=100)
    >>> report.items, report.cells, report.skipped

Everything comes from the `token_scores` rows (add `token_scores: {}` to the grid's analyses): the export
reads rows and loads no model. For each trained flat classifier with learned attention, `per_cell` of its
rows with more than TOP_K tokens are sampled (the same ones on every run: the generator is seeded by the
cell id). Shorter instances are left out because all of their tokens would be highlighted in both
conditions. Each instance gives two items:

- original: the model's attention alpha (`alpha`), and the model's prediction;
- permuted: alpha shuffled over the instance's own tokens (`permuted_alpha`: `torch.randperm` from
  `instance_generator(cell_id, "annotate", instance_id)`), and the prediction decoded from that permuted
  alpha with h unchanged (`permuted_pred`): the paper's permuted samples show what the model predicts with
  the permuted weights.

An item shows the instance's tokens with its TOP_K highest-weighted tokens in [[double brackets]], those
tokens in rank order, and the prediction by the dataset's class name (`class_names` in
`gridlab.data.catalog`: "negative", not the files' "0"). The items of every cell are shuffled together with a
fixed seed and numbered in that order, so neither an id nor a row tells the condition; `key.parquet` (never
handed out) maps item ids to cell, instance, condition, top token positions (indices into the instance's
`tokens`), gold label and prediction. The top tokens are the first of the row's `alpha_order` /
`permuted_order`, which follow the project's one tie rule (`gridlab.analyses.ranking.descending_order`):
weights within 1e-5 of the instance's largest weight of each other tie and go to the earlier token, so float
noise cannot reorder equal weights and the top tokens are reproducible.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from gridlab.annotate.files import INSTRUCTIONS, ITEMS, KEY
from gridlab.config.schema import CellConfig
from gridlab.data.catalog import DATASETS
from gridlab.errors import BadInput, GridlabError
from gridlab.grid.expand import ExpandedGrid
from gridlab.grid.suggest import unknown
from gridlab.report.inputs import ReportInputs
from gridlab.results.parts import write_part
from gridlab.store.atomic import write_text
from gridlab.store.models import ModelStore
from gridlab.text import counted

TOP_K = 3  # "the top three highest weighted words"
SCORES = "token_scores"  # the analysis whose rows the sheets are made of
SHUFFLE_SEED = 0
CONDITIONS = ("original", "permuted")
ITEM_COLUMNS = ("item_id", "text", "top_tokens", "prediction", "answer")
QUESTION = "Are the highlighted words relevant for the model's prediction?"

KEY_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("grid", pa.string()),
        ("cell_id", pa.string()),
        ("dataset", pa.string()),
        ("instance_id", pa.int64()),
        ("condition", pa.string()),
        ("top_positions", pa.list_(pa.int64())),  # indices into the instance's tokens, highest weight first
        ("top_weights", pa.list_(pa.float64())),  # the weights of those tokens in this condition
        ("label", pa.int64()),  # gold class index
        ("pred", pa.int64()),  # the model's class index under this condition's attention
        ("correct", pa.bool_()),
    ]
)


@dataclass(frozen=True)
class ExportReport:
    folder: Path
    items: int
    cells: list[str]
    skipped: dict[str, str] = field(default_factory=dict)  # cell id -> why it was left out


def export_grid(
    expanded: ExpandedGrid, out: Path, cells: Sequence[str] | None = None, per_cell: int = 100, force: bool = False
) -> ExportReport:
    """Sheet and key for the grid's trained flat classifiers with learned attention (or exactly `cells`)."""
    chosen, skipped = select_cells(expanded, cells)
    scores = ReportInputs.load(expanded).rows(SCORES)
    scored = set() if scores is None else set(scores["cell_id"])
    unscored = [cell_id for cell_id in chosen if cell_id not in scored]
    if scores is None or unscored:
        raise GridlabError(
            f"{', '.join(unscored)}: no {SCORES} rows to make the sheets from; add `{SCORES}: {{}}` to `analyses:` "
            f"in {expanded.file} and run `gridlab analyze {expanded.file}`"
        )
    rows = {cell_id: instances_of(scores, cell_id) for cell_id in chosen}
    report = export_cells(expanded.spec.name, rows, per_cell, out, force)
    return ExportReport(report.folder, report.items, report.cells, skipped)


def select_cells(expanded: ExpandedGrid, only: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The cells to annotate. Named cells must all qualify; otherwise the unsuitable ones are skipped."""
    by_id = {cell.id: cell for cell in expanded.cells}
    for cell_id in only or []:
        if cell_id not in by_id:
            raise BadInput(unknown("cell id", cell_id, sorted(by_id)) + " (see `gridlab plan`)")
    store = ModelStore(expanded.workspace.models)
    chosen, skipped = [], {}
    for cell in [by_id[c] for c in dict.fromkeys(only)] if only else expanded.cells:
        reason = unsuitable(cell.config) or (None if store.cell(cell.id).state() == "trained" else "not trained")
        if reason is None and not only and cell.config.dataset == "synthetic":
            reason = "synthetic (the generated task's words mean nothing to a reader; name it with --cells)"
        if reason is None:
            chosen.append(cell.id)
        elif only:
            raise GridlabError(
                f"cell {cell.id}: {reason}; only trained flat classifiers with learned attention are annotated"
            )
        else:
            skipped[cell.id] = reason
    if not chosen:
        raise GridlabError(
            f"{expanded.spec.name}: no trained flat classifier with learned attention to annotate "
            f"({counted(len(skipped), 'cell')} left out: {', '.join(sorted(set(skipped.values())))})"
        )
    return chosen, skipped


def unsuitable(config: CellConfig) -> str | None:
    if config.architecture != "flat":
        return f"architecture {config.architecture}"
    if config.attention_mode != "learned":
        return f"attention_mode {config.attention_mode}"
    return None


def instances_of(scores: pd.DataFrame, cell_id: str) -> pd.DataFrame:
    """One cell's token_scores rows, one per instance, in instance order."""
    frame = scores[scores["cell_id"] == cell_id].drop_duplicates("instance_id")
    return frame.sort_values("instance_id", kind="stable").reset_index(drop=True)


def export_cells(
    grid: str, rows: dict[str, pd.DataFrame], per_cell: int, out: Path, force: bool = False
) -> ExportReport:
    """Write items.csv, INSTRUCTIONS.md and key.parquet into `out` for `per_cell` instances of each cell."""
    if per_cell < 1:
        raise BadInput(f"--per-cell must be at least 1 (got {per_cell})")
    if (out / KEY).exists() and not force:
        raise GridlabError(
            f"{out} already holds an export ({KEY}); answers are matched to its item ids, so it is "
            "not replaced: pass --force to replace it, or --out for another folder"
        )
    items: list[dict] = []
    labels: dict[str, tuple[str, ...]] = {}
    for cell_id, frame in rows.items():
        names = class_names(frame)
        dataset = str(frame["dataset"].iloc[0])
        labels[dataset] = tuple(dict.fromkeys((*labels.get(dataset, ()), *names.values())))
        sample = frame.iloc[sample_rows(cell_id, frame, per_cell)]
        items += [{"grid": grid, **item} for item in cell_items(cell_id, sample, names)]
    if not items:
        raise GridlabError(f"no test instance of {', '.join(rows)} has more than {TOP_K} tokens")
    items = [items[i] for i in np.random.default_rng(SHUFFLE_SEED).permutation(len(items))]
    width = len(str(len(items)))
    for number, item in enumerate(items, start=1):
        item["item_id"] = f"item-{number:0{width}d}"
    write_text(out / ITEMS, sheet(items))
    write_text(out / INSTRUCTIONS, instructions(len(items), labels))
    write_part(
        out / KEY, pa.Table.from_pylist([{k: item[k] for k in KEY_SCHEMA.names} for item in items], schema=KEY_SCHEMA)
    )
    return ExportReport(out, len(items), list(rows))


def class_names(frame: pd.DataFrame) -> dict[int, str]:
    """Class index -> the name a reader sees, in index order: the rows name labels and predictions as the
    dataset's files do ("0", "neg"), and the catalog's `class_names` say what those mean ("negative")."""
    spec = DATASETS.get(str(frame["dataset"].iloc[0]))
    pairs = zip([*frame["label"], *frame["pred"]], [*frame["label_name"], *frame["pred_name"]])
    named = {int(index): spec.class_name(str(name)) if spec else str(name) for index, name in pairs}
    return dict(sorted(named.items()))


def sample_rows(cell_id: str, frame: pd.DataFrame, n: int) -> np.ndarray:
    """Positions (in instance order) of up to n rows with more than TOP_K tokens, drawn once per cell, sorted."""
    candidates = np.flatnonzero(frame["length"].to_numpy() > TOP_K)
    rng = np.random.default_rng([SHUFFLE_SEED, int(cell_id, 16)])
    return np.sort(rng.choice(candidates, size=min(n, len(candidates)), replace=False))


def cell_items(cell_id: str, sample: pd.DataFrame, names: dict[int, str]) -> list[dict]:
    """Two items (original, permuted) per sampled row, in row order."""
    items = []
    for row in sample.itertuples(index=False):
        words = list(row.items)
        label = int(row.label)
        for condition, weights, order, pred in (
            ("original", row.alpha, row.alpha_order, int(row.pred)),
            ("permuted", row.permuted_alpha, row.permuted_order, int(row.permuted_pred)),
        ):
            top = top_positions(np.asarray(weights, dtype=float), order)
            items.append(
                {
                    "cell_id": cell_id,
                    "dataset": row.dataset,
                    "instance_id": int(row.instance_id),
                    "condition": condition,
                    "top_positions": top,
                    "top_weights": [float(weights[i]) for i in top],
                    "label": label,
                    "pred": pred,
                    "correct": pred == label,
                    "text": highlight(words, top),
                    "top_tokens": ", ".join(words[i] for i in top),
                    "prediction": names.get(pred, str(pred)),
                }
            )
    return items


def top_positions(weights: np.ndarray, order: Sequence[int], k: int = TOP_K) -> list[int]:
    """The first k tokens of `order` (the row's ranking by the project's tie rule) that carry weight: a token
    with weight 0 (sparse projections) is never highlighted, so such an item may show fewer than k."""
    return [int(i) for i in order if weights[i] > 0][:k]


def highlight(tokens: Sequence[str], top: Sequence[int]) -> str:
    marked = set(top)
    return " ".join(f"[[{token}]]" if i in marked else token for i, token in enumerate(tokens))


def sheet(items: list[dict]) -> str:
    """items.csv: what annotators see, with an empty answer column."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(ITEM_COLUMNS)
    for item in items:
        writer.writerow([item["item_id"], item["text"], item["top_tokens"], item["prediction"], ""])
    return buffer.getvalue()


def instructions(n_items: int, labels: dict[str, tuple[str, ...]]) -> str:
    predictions = "\n".join(f"- {', '.join(names)}" for names in dict.fromkeys(labels.values()) if names)
    return f"""# Judging highlighted words: instructions

`items.csv` holds {n_items} items. Each is a text that a model classified, the model's `prediction`, and
the {TOP_K} words the model weighted most, highlighted in the text as [[double brackets]] and listed in
`top_tokens` (highest weight first). The text is shown as the model reads it: lower case, split into
words, numbers replaced by `qqq`.

For every item, answer one question:

> **{QUESTION}** (yes / no)

Answer `yes` if the highlighted words are relevant for predicting that label, `no` if they are not. Judge
only the highlighted words and the prediction shown, whether or not you think the prediction is right, and
judge each item on its own: the same text can appear more than once with different words highlighted.

## How to answer

1. Copy `items.csv` to `answers-<your name>.csv` (letters, digits, `-`, `_`), e.g. `answers-alice.csv`.
2. Fill the `answer` column with `yes` or `no` on every row. Keep `item_id` as it is; the other columns
   are only for reading, and rows may be in any order.
3. Save it as CSV (comma-separated, UTF-8) and send it back. Do not discuss items with other annotators.

Each prediction is one of these labels:

{predictions}
"""
