"""Export side of the human evaluation (Vashishth et al. §4.4): a blinded, shuffled sheet and its key.

    >>> report = export_grid(expanded, out=expanded.workspace.annotation, per_cell=100)
    >>> report.items, report.cells, report.skipped

For each trained flat classifier with learned attention, `per_cell` test instances with more than TOP_K
tokens are sampled (the same ones on every run: the generator is seeded by the cell id). Shorter instances
are left out because all of their tokens would be highlighted in both conditions. Each instance gives two
items:

- original: the model's attention alpha, and the model's prediction;
- permuted: alpha shuffled over the instance's own tokens by `torch.randperm` from
  `instance_generator(cell_id, "annotate", instance_id)` (`<sos>`/`<eos>` and padding are outside the mask
  and keep weight 0), and the prediction decoded from that permuted alpha with h unchanged: the paper's
  permuted samples show what the model predicts with the permuted weights.

An item shows the instance's tokens with its TOP_K highest-weighted tokens in [[double brackets]], those
tokens in rank order, and the prediction as the dataset's label name. The items of every cell are shuffled
together with a fixed seed and numbered in that order, so neither an id nor a row tells the condition;
`key.parquet` (never handed out) maps item ids to cell, instance, condition, top token positions (indices
into the instance's `tokens`), gold label and prediction. The top tokens follow the project's one tie rule
(`gridlab.analyses.ranking.descending_order`): weights within 1e-5 of the instance's largest weight of each
other tie and go to the earlier token, so float noise cannot reorder equal weights and the top tokens are
reproducible.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gridlab.analyses.common import SharedPass, forward_once, instance_generator
from gridlab.analyses.ranking import descending_order
from gridlab.annotate.files import INSTRUCTIONS, ITEMS, KEY
from gridlab.config.schema import CellConfig
from gridlab.data.batching import iterate_batches
from gridlab.errors import GridlabError
from gridlab.execution.runner import LoadedCell, ShardRunner
from gridlab.grid.expand import ExpandedGrid
from gridlab.grid.suggest import unknown
from gridlab.models.classifier import AttentionClassifier
from gridlab.results.parts import write_part
from gridlab.store.atomic import write_text
from gridlab.store.models import ModelStore

TOP_K = 3  # "the top three highest weighted words"
STREAM = "annotate"  # the instance_generator stream of the permutations
SHUFFLE_SEED = 0
SPLIT = "test"
BATCH_SIZE = 32
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
    runner = ShardRunner(expanded.results_dir, expanded.data_dir, expanded.results.cache, torch.device("cpu"))
    report = export_cells(expanded.spec.name, runner, chosen, per_cell, out, force)
    return ExportReport(report.folder, report.items, report.cells, skipped)


def select_cells(expanded: ExpandedGrid, only: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The cells to annotate. Named cells must all qualify; otherwise the unsuitable ones are skipped."""
    by_id = {cell.id: cell for cell in expanded.cells}
    for cell_id in only or []:
        if cell_id not in by_id:
            raise GridlabError(unknown("cell id", cell_id, sorted(by_id)) + " (see `gridlab plan`)")
    store = ModelStore(expanded.workspace.models)
    chosen, skipped = [], {}
    for cell in [by_id[c] for c in dict.fromkeys(only)] if only else expanded.cells:
        reason = unsuitable(cell.config) or (None if store.cell(cell.id).state() == "trained" else "not trained")
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
            f"({len(skipped)} cells left out: {', '.join(sorted(set(skipped.values())))})"
        )
    return chosen, skipped


def unsuitable(config: CellConfig) -> str | None:
    if config.architecture != "flat":
        return f"architecture {config.architecture}"
    if config.attention_mode != "learned":
        return f"attention_mode {config.attention_mode}"
    return None


def export_cells(
    grid: str, runner: ShardRunner, cell_ids: Sequence[str], per_cell: int, out: Path, force: bool = False
) -> ExportReport:
    """Write items.csv, INSTRUCTIONS.md and key.parquet into `out` for `per_cell` instances of each cell."""
    if per_cell < 1:
        raise GridlabError(f"--per-cell must be at least 1 (got {per_cell})")
    if (out / KEY).exists() and not force:
        raise GridlabError(
            f"{out} already holds an export ({KEY}); answers are matched to its item ids, so it is "
            "not replaced: pass --force to replace it, or --out for another folder"
        )
    items: list[dict] = []
    labels: dict[str, tuple[str, ...]] = {}
    for cell_id in cell_ids:
        cell = runner.load(cell_id)
        labels[cell.config.dataset] = cell.data.label_names
        rows = sample_rows(cell_id, cell.data.splits[SPLIT], per_cell)
        items += [{"grid": grid, **item} for item in cell_items(cell_id, cell, rows)]
    if not items:
        raise GridlabError(f"no test instance of {', '.join(cell_ids)} has more than {TOP_K} tokens")
    items = [items[i] for i in np.random.default_rng(SHUFFLE_SEED).permutation(len(items))]
    width = len(str(len(items)))
    for number, item in enumerate(items, start=1):
        item["item_id"] = f"item-{number:0{width}d}"
    write_text(out / ITEMS, sheet(items))
    write_text(out / INSTRUCTIONS, instructions(len(items), labels))
    write_part(
        out / KEY, pa.Table.from_pylist([{k: item[k] for k in KEY_SCHEMA.names} for item in items], schema=KEY_SCHEMA)
    )
    return ExportReport(out, len(items), list(cell_ids))


def sample_rows(cell_id: str, table: pa.Table, n: int) -> np.ndarray:
    """Row indices of up to n test instances with more than TOP_K tokens, drawn once per cell, sorted."""
    lengths = pc.list_value_length(table["tokens"]).to_numpy(zero_copy_only=False)
    candidates = np.flatnonzero(lengths > TOP_K)
    rng = np.random.default_rng([SHUFFLE_SEED, int(cell_id, 16)])
    return np.sort(rng.choice(candidates, size=min(n, len(candidates)), replace=False))


@torch.no_grad()
def cell_items(cell_id: str, cell: LoadedCell, rows: np.ndarray) -> list[dict]:
    """Two items (original, permuted) per row of the cell's test split, in row order."""
    table = cell.data.splits[SPLIT].take(pa.array(rows, pa.int64()))
    tokens = table["tokens"].to_pylist()
    names = cell.data.label_names
    model = cell.model
    if not isinstance(model, AttentionClassifier):  # select_cells keeps flat classifiers only
        raise GridlabError(f"cell {cell_id}: only classifiers are annotated, not {type(model).__name__}")
    items, offset = [], 0
    for batch in iterate_batches(table, BATCH_SIZE):
        shared = forward_once(model, batch)
        permuted = permuted_alpha(shared, cell_id)  # (B, T)
        permuted_pred = model.decode(shared.encoded.h, permuted, shared.encoded.query).argmax(-1)  # (B,)
        for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
            words = tokens[offset + b]
            positions = token_positions(shared, b)
            if len(positions) != len(words):  # the mask must cover exactly the stored tokens
                raise RuntimeError(
                    f"cell {cell_id}, instance {instance_id}: {len(positions)} attention positions "
                    f"for {len(words)} tokens"
                )
            label = int(shared.batch.labels[b])
            for condition, alpha, pred in (
                ("original", shared.alpha[b], int(shared.pred[b])),
                ("permuted", permuted[b], int(permuted_pred[b])),
            ):
                weights = alpha[positions].double().cpu().numpy()  # (T_b,) one weight per token
                top = top_positions(weights)
                items.append(
                    {
                        "cell_id": cell_id,
                        "dataset": cell.config.dataset,
                        "instance_id": instance_id,
                        "condition": condition,
                        "top_positions": top,
                        "top_weights": [float(weights[i]) for i in top],
                        "label": label,
                        "pred": pred,
                        "correct": pred == label,
                        "text": highlight(words, top),
                        "top_tokens": ", ".join(words[i] for i in top),
                        "prediction": names[pred] if names else str(pred),
                    }
                )
        offset += batch.size
    return items


def token_positions(shared: SharedPass, row: int) -> torch.Tensor:
    """(T_b,) batch positions of row's tokens, in order: the mask excludes `<sos>` (position 0), `<eos>` and
    padding, so the j-th unmasked position holds the instance's j-th token."""
    return shared.encoded.mask[row].nonzero().squeeze(-1)


def permuted_alpha(shared: SharedPass, cell_id: str) -> torch.Tensor:
    """(B, T): each row's weights shuffled among its own tokens; token j gets the weight of token order[j]."""
    permuted = torch.zeros_like(shared.alpha)  # (B, T)
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        positions = token_positions(shared, b)
        order = torch.randperm(len(positions), generator=instance_generator(cell_id, STREAM, instance_id))
        permuted[b, positions] = shared.alpha[b, positions[order.to(positions.device)]]
    return permuted


def top_positions(weights: np.ndarray, k: int = TOP_K) -> list[int]:
    """Indices of the k largest weights (T_b,), largest first, by the tie rule of `ranking.descending_order`
    (tied weights go to the earlier token). A token with weight 0 (sparse projections) is never highlighted,
    so such an item may show fewer than k."""
    values = torch.as_tensor(weights)[None]  # (1, T_b): every slot is a token
    order = descending_order(values, torch.ones(values.shape, dtype=torch.bool))[0].tolist()
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
