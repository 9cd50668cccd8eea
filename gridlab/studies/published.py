"""The papers' published numbers, as data, so a report section can put them beside gridlab's own rows.

    >>> from gridlab.studies.published import published, TABLE_KEYS
    >>> paper = published("jw_table2")            # a fresh DataFrame each call
    >>> paper.query("dataset == 'sst' and encoder == 'lstm' and measure == 'tau_g'")[["pred", "mean", "std"]]

Only numbers printed in the papers (their text extractions, listed in the shared papers folder's INDEX.md), or in
slides that reproduce a table the extraction lacks, are here (the headline ones are listed in
docs/analyses.md#published-headline-numbers), typed as printed (a figure's number only where the text states
it, with a `note`). Where the extracted text is garbled an entry is left out, never guessed (noted per table
below).

The numbers live in one CSV file per paper in `gridlab/studies/published_data/` (`jain_wallace.csv`,
`serrano_smith.csv`, `vashishth.csv`, `meister.csv`; shipped as package data), one row per printed number:
`table` (the table or figure, as the frames cite it), `page` (the paper's page, where the text extraction
shows it; empty otherwise), `row` and `column` (the paper's own labels as printed, header levels joined by
" > "), `field` (the frame column the number fills: `value`, `mean`, `std`, ...), `value` (as printed), then
the key columns of the frame row it belongs to (`dataset`, `encoder`, `measure`, `setting`, ...; empty is
null). Numbers whose keys agree make one frame row, in the order the file first names them. To add a number,
add its row to the paper's file; a new table also needs an entry in `_TABLES` below (its key, file, `table`
label and frame columns), and `published()` refuses a file naming a table that no entry claims. Every frame
has the citation columns `paper` (authors and year) and `table` (the table or figure in that paper, and where it
was read when not in the paper's own text), and, where the rows name a model or a dataset, gridlab's ids for
them (`dataset`, `encoder`, `attention`, `projection`, `architecture`, `attention_mode`) so a section can
join on them; the paper's own wording is kept beside (`dataset_paper`, `model_paper`, `class_paper`). A
dataset that gridlab does not have keeps a slug of the paper's name (`adr_tweets`, `yelp`, ...) so it never
joins onto one of ours.

Table keys and their columns (besides `paper`, `table`):

- `jw_table1` — Jain & Wallace (2019) Table 1, test performance of the BiLSTM model with learned softmax
  attention (either attention function), flat for single sequences and pair for QA and NLI:
  dataset, dataset_paper, encoder, projection, architecture, attention_mode, metric ("f1" | "accuracy" |
  "micro_f1"), value.
- `jw_table2` — Jain & Wallace (2019) Table 2, Kendall tau of attention with gradient (tau_g) and
  leave-one-out (tau_loo) importance, additive attention, per predicted class:
  dataset, dataset_paper, encoder ("lstm" | "average"), attention, projection, architecture, attention_mode,
  pred (gridlab class index as a string "0", "1", or "all" for the paper's "Overall"; SNLI's printed 0/1/2
  are J&W's answer indices, the sorted label names of their code, so 0 contradiction = gridlab's "2"),
  class_paper (as printed), class_name, measure ("tau_g" | "tau_loo"),
  mean, std, sig_frac (share of instances with p < 0.05).
- `jw_figure4` — Jain & Wallace (2019) Figure 4 (§4.2.2), the histogram of eps-max JSD of adversarial from
  original attention: dataset, dataset_paper, encoder, attention, projection, architecture, attention_mode,
  model_paper, section, measure ("jsd_eps_max_median"), value, note. The figure prints no statistic; the
  text says its "mass [lies] toward the upper-bound of 0.69", so the value is that bound, read as where the
  median lies, and `note` says so. Only SST BiLSTM is kept: the extraction lacks the panel labels (below).
- `ss_table2` — Serrano & Smith (2019) Table 2, decision-flip contingency for HANrnn (HAN, GRU encoder),
  % of test instances: dataset, dataset_paper, encoder, attention, architecture, pct_both, pct_top_only
  (i* flips, r does not), pct_rand_only (r flips, i* does not), pct_neither. The paper's text extraction
  lacks the table; the four cells are read from Kovács (2021) slides, which reproduce it, and agree with the
  two off-diagonal cells docs/analyses.md#published-headline-numbers lists. S&S's datasets are not
  gridlab's (their IMDB is Diao et al.'s 10-class reviews), so every dataset keeps S&S's own slug.
- `vashishth_table1` / `vashishth_table2` / `vashishth_table3` — Vashishth et al. (2019) Tables 1–3
  (single sequence, pair sequence, translation): accuracy (BLEU for translation) of the base model and its
  change, in points, with attention replaced by uniform / random weights at training and inference
  ("train+infer") or at inference only ("infer"), or permuted at inference:
  task ("single" | "pair" | "translation"), dataset, dataset_paper, model_paper, architecture, attention,
  variant ("learned" | "uniform" | "random" | "permute"), setting ("base" | "train+infer" | "infer"),
  value (base accuracy, or its change), std (base rows only). bAbI columns "babI 0/1/2" are the tasks with
  one, two and three supporting facts (their §2), gridlab's babi1/2/3.
- `meister_table1` — Meister et al. (2021) Table 1, normalised entropy of the gradient importance of the
  inputs for an intermediate representation, H~(g_{h_p}(x)) (gridlab's `entropy_gh_x`):
  dataset, encoder, attention, projection, model_paper, measure ("entropy_gh_x"), mean, std.
- `meister_table2` — Meister et al. (2021) Table 2, correlation of the sparsegen lambda with the
  entropy of the input gradient importance H~(g_y(x)) (`entropy_gy_x`):
  dataset, encoder, attention, projection ("sparsegen"), model_paper, measure, value.
- `meister_table3` — Meister et al. (2021) Table 3, baseline test accuracy: dataset, encoder, attention,
  projection, model_paper, train_size, test_size, accuracy.
- `meister_table5` — Meister et al. (2021) Table 5, JSD of adversarial from base attention for W&P-style
  adversaries: dataset, encoder, attention, model_paper, adversary ("frozen" | "unfrozen"), jsd. The
  accuracy column is left out: the extraction runs each accuracy into its coloured difference from the
  baseline ("0.7614", "0.71 18"), which cannot be split without guessing.
- `meister_table6` — Meister et al. (2021) Table 6, mean Kendall tau of attention with gradient and
  leave-one-out importance of inputs (x) and intermediate representations (I):
  dataset, encoder, attention, projection, model_paper, measure ("tau_gy_x" | "tau_dy_x" | "tau_gy_h" |
  "tau_dy_h", gridlab's `sparsity_importance` columns), mean, std.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

JW = "Jain & Wallace (2019)"
SS = "Serrano & Smith (2019)"
VA = "Vashishth et al. (2019)"
ME = "Meister et al. (2021)"
WP = "Wiegreffe & Pinter (2019)"

# Papers a grid reproduces whose own tables are not typed in here, and why: their rows are judged only on the
# numbers of other papers that their cells share (the W&P grid's seeds 0-2 are J&W's models).
PAPERS_WITHOUT_NUMBERS = {
    WP: "the paper's text is not among the shared papers (only Kovács's slides summarise it, without numbers) and "
    "its repository (sarahwie/attention) commits no results, so none of its tables is typed in",
}

DATA_DIR = Path(__file__).with_name("published_data")

# The columns every CSV row carries besides its keys: where the number was printed, and the number itself.
CITATION_COLUMNS = ("table", "page", "row", "column", "field", "value")
_REQUIRED = ("table", "row", "column", "field", "value")


@dataclass(frozen=True)
class _Table:
    """How one table key's frame is rebuilt from its paper's CSV rows."""

    paper: str
    file: str  # in DATA_DIR
    table: str  # the rows' `table` label, cited as the frame's `table`
    columns: tuple[str, ...]  # the frame's columns, in order, before `paper` and `table`
    numbers: tuple[str, ...]  # those filled from `value`, named by each row's `field`; the rest are keys
    integers: tuple[str, ...] = ()  # numbers parsed as int (the others as float)
    shared: tuple[str, ...] = ()  # numbers printed once per `shared_on` value, copied onto each of its rows
    shared_on: tuple[str, ...] = ()


_MODEL = ("dataset", "encoder", "attention", "projection", "model_paper")
_FLAT = ("encoder", "attention", "projection", "architecture", "attention_mode")
_VA = ("task", "dataset", "dataset_paper", "model_paper", "architecture", "attention", "variant", "setting")

_TABLES: dict[str, _Table] = {
    "jw_table1": _Table(
        JW,
        "jain_wallace.csv",
        "Table 1 (test performance, LSTM)",
        ("dataset", "dataset_paper", "encoder", "projection", "architecture", "attention_mode", "metric", "value"),
        ("value",),
    ),
    "jw_table2": _Table(
        JW,
        "jain_wallace.csv",
        "Table 2",
        ("dataset", "dataset_paper", *_FLAT, "pred", "class_paper", "class_name", "measure", "mean", "std", "sig_frac"),
        ("mean", "std", "sig_frac"),
    ),
    "jw_figure4": _Table(
        JW,
        "jain_wallace.csv",
        "Figure 4",
        ("dataset", "dataset_paper", *_FLAT, "model_paper", "section", "measure", "value", "note"),
        ("value",),
    ),
    "ss_table2": _Table(
        SS,
        "serrano_smith.csv",
        "Table 2 (HANrnn; read from Kovács 2021 slides)",
        ("dataset", "dataset_paper", "encoder", "attention", "architecture")
        + ("pct_both", "pct_top_only", "pct_rand_only", "pct_neither"),
        ("pct_both", "pct_top_only", "pct_rand_only", "pct_neither"),
    ),
    **{
        f"vashishth_table{n}": _Table(VA, "vashishth.csv", f"Table {n}", (*_VA, "value", "std"), ("value", "std"))
        for n in (1, 2, 3)
    },
    "meister_table1": _Table(ME, "meister.csv", "Table 1", (*_MODEL, "measure", "mean", "std"), ("mean", "std")),
    "meister_table2": _Table(ME, "meister.csv", "Table 2", (*_MODEL, "measure", "value"), ("value",)),
    "meister_table3": _Table(
        ME,
        "meister.csv",
        "Table 3",
        (*_MODEL, "train_size", "test_size", "accuracy"),  # projection: not stated (null)
        ("train_size", "test_size", "accuracy"),
        integers=("train_size", "test_size"),
        shared=("train_size", "test_size"),  # printed once per dataset, for both models
        shared_on=("dataset",),
    ),
    "meister_table5": _Table(
        ME,
        "meister.csv",
        "Table 5 (JSD only)",
        ("dataset", "encoder", "attention", "model_paper", "adversary", "jsd"),
        ("jsd",),
    ),
    "meister_table6": _Table(ME, "meister.csv", "Table 6", (*_MODEL, "measure", "mean", "std"), ("mean", "std")),
}

TABLE_KEYS: tuple[str, ...] = tuple(_TABLES)


@functools.cache
def _rows(file: str) -> tuple[dict[str, str], ...]:
    """A paper's CSV rows as strings (read once), checked: the citation cells filled, every table claimed."""
    frame = pd.read_csv(DATA_DIR / file, dtype=str, keep_default_na=False)
    rows = tuple({str(k): str(v) for k, v in record.items()} for record in frame.to_dict("records"))
    claimed = {spec.table for spec in _TABLES.values() if spec.file == file}
    for line, row in enumerate(rows, start=2):
        empty = [c for c in _REQUIRED if not row.get(c, "").strip()]
        if empty:
            raise ValueError(f"{file}:{line}: empty {', '.join(empty)}")
        if row["table"] not in claimed:
            raise ValueError(f"{file}:{line}: table {row['table']!r} is not one of _TABLES' ({sorted(claimed)})")
    return rows


def _build(spec: _Table) -> pd.DataFrame:
    keys = [c for c in spec.columns if c not in spec.numbers]
    records: dict[tuple[str | None, ...], dict[str, Any]] = {}
    shared: dict[tuple[str, tuple[str | None, ...]], int | float] = {}
    for line, row in enumerate(_rows(spec.file), start=2):
        if row["table"] != spec.table:
            continue
        field = row["field"]
        if field not in spec.numbers:
            raise ValueError(f"{spec.file}:{line}: field {field!r} is not one of {spec.table!r}'s {spec.numbers}")
        value = int(row["value"]) if field in spec.integers else float(row["value"])
        if field in spec.shared:
            shared[(field, tuple(row[k] or None for k in spec.shared_on))] = value
            continue
        ident = tuple(row[k] or None for k in keys)
        record = records.setdefault(ident, {c: None for c in spec.columns} | dict(zip(keys, ident)))
        if record[field] is not None:
            raise ValueError(f"{spec.file}:{line}: a second {field!r} for {dict(zip(keys, ident))}")
        record[field] = value
    for record in records.values():
        for field in spec.shared:
            record[field] = shared[(field, tuple(record[k] for k in spec.shared_on))]
    return _cite(pd.DataFrame.from_records(list(records.values())), spec.paper, spec.table)


def _cite(frame: pd.DataFrame, paper: str, table: str) -> pd.DataFrame:
    frame = frame.copy()
    frame["paper"] = paper
    frame["table"] = table
    return frame


def published(table_key: str) -> pd.DataFrame:
    """The published numbers of one paper table (a new frame each call; see the module docstring for the
    columns). An unknown key raises KeyError naming the valid ones."""
    if table_key not in _TABLES:
        raise KeyError(f"unknown published table {table_key!r} (expected one of: {', '.join(TABLE_KEYS)})")
    return _build(_TABLES[table_key])


def citation(table_key: str) -> str:
    """'Jain & Wallace (2019), Table 2' (or 'Figure 4'): for captions."""
    frame = published(table_key)
    return f"{frame['paper'].iloc[0]}, {frame['table'].iloc[0]}"
