"""`token_scores` (docs/analyses.md#token_scores): every instance's items with their scores, so that the
report's heatmaps and the human-evaluation sheets read rows instead of reloading models.

    >>> columns = token_scores.run(context, forward_once(model, batch))
    >>> columns["items"][0], columns["alpha"][0]    # the instance's items and alpha over them

Per instance, over its attention items in order (the tokens of a flat or pair model's premise, each
sentence of a HAN model as one item, its tokens joined by spaces; `<sos>`, `<eos>` and padding are outside
the mask and never listed):

- `alpha`: the model's attention; `gradient` and `leave_one_out`: J&W's importances
  (`gridlab.analyses.importance`), the same numbers `importance_correlation` ranks;
- `permuted_alpha` and `permuted_pred`: alpha shuffled over the instance's own items by
  `torch.randperm` from `instance_generator(cell_id, "annotate", instance_id)`, and the class decoded from
  it with h unchanged (Vashishth §4.4's permuted condition, which `gridlab annotate export` shows);
- `alpha_order` and `permuted_order`: the items by descending weight under the project's one tie rule
  (`ranking.descending_order`: weights within 1e-5 of the instance's largest tie, the earlier item first),
  so that whoever reads the top items from rows needs no second implementation of the rule;
- `query` (pair tasks, else null), `label_name`, `pred_name` and `confidence` (the predicted class's
  probability), so that a row reads on its own.

The items come from the prepared split (`AnalysisContext.split_rows`, row i = instance i), so a word outside
the vocabulary is shown as written, not as `<unk>`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, instance_generator, measured, object_column
from gridlab.analyses.importance import (
    gradient_importance,
    leave_one_out,
    reference_gradient_importance,
    reference_leave_one_out,
)
from gridlab.analyses.ranking import descending_order
from gridlab.analyses.token_scores import INFO
from gridlab.catalog.analyses import NoParams

ID = "token_scores"
VERSION = 1
PERMUTATION_STREAM = "annotate"  # the permutations' generator stream: the annotation sheets' since they began


def run(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """Every score of the batch at once; only the slicing into one list per instance loops over rows."""
    model = context.classifier
    return _columns(
        context, shared, gradient_importance(model, shared.batch, shared), leave_one_out(model, shared.batch, shared)
    )


def reference(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """`run` with the importances' per-instance oracles (`reference_gradient_importance`, `..._leave_one_out`)."""
    model = context.classifier
    return _columns(
        context, shared, reference_gradient_importance(model, shared), reference_leave_one_out(model, shared)
    )


def _columns(
    context: AnalysisContext, shared: SharedPass, gradient: torch.Tensor, leave_one_out: torch.Tensor
) -> dict[str, np.ndarray]:
    permuted = permuted_attention(shared, context.cell_id)  # (B, T)
    with torch.no_grad():
        permuted_pred = context.classifier.decode(shared.encoded.h, permuted, shared.encoded.query).argmax(-1)
    scores = {
        "alpha": shared.alpha,
        "gradient": gradient,
        "leave_one_out": leave_one_out,
        "permuted_alpha": permuted,
    }
    mask = shared.encoded.mask.cpu()
    columns = {
        name: object_column([row[keep].tolist() for row, keep in zip(values.detach().double().cpu(), mask)])
        for name, values in scores.items()
    }
    texts = _texts(context, shared)
    _check_items(context.cell_id, shared, texts["items"])
    columns |= {name: object_column(values) for name, values in texts.items()}
    columns["alpha_order"] = item_order(shared.alpha, shared.encoded.mask)
    columns["permuted_order"] = item_order(permuted, shared.encoded.mask)
    columns["confidence"] = shared.probs.gather(-1, shared.pred[:, None])[:, 0].double().cpu().numpy()
    columns["permuted_pred"] = permuted_pred.cpu().numpy().astype(np.int64)
    return columns


def permuted_attention(shared: SharedPass, cell_id: str) -> torch.Tensor:
    """(B, T): each row's weights shuffled among its own items; item j gets the weight of item order[j]."""
    permuted = torch.zeros_like(shared.alpha)  # (B, T)
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        positions = shared.encoded.mask[b].nonzero().squeeze(-1)
        order = torch.randperm(len(positions), generator=instance_generator(cell_id, PERMUTATION_STREAM, instance_id))
        permuted[b, positions] = shared.alpha[b, positions[order.to(positions.device)]]
    return permuted


def item_order(weights: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    """(B,) lists of item indices (0 = the instance's first item), highest weight first (`descending_order`)."""
    order = descending_order(weights.detach(), mask).cpu()  # (B, T) slots, padding last
    item_of_slot = mask.long().cumsum(-1).cpu() - 1  # (B, T) the item index of each unmasked slot
    items = item_of_slot.gather(-1, order)
    return object_column([row[: int(n)].tolist() for row, n in zip(items, mask.sum(-1).tolist())])


def attention_items(tokens: list[str], sentence_starts: list[int] | None) -> list[str]:
    """One label per attention position: the tokens, or for a HAN model each non-empty sentence's tokens
    (as `batching.split_sentences` cuts them)."""
    if sentence_starts is None:
        return list(tokens)
    cuts = [0, *sentence_starts[1:], len(tokens)]
    return [" ".join(tokens[start:stop]) for start, stop in itertools.pairwise(cuts) if stop > start]


def _texts(context: AnalysisContext, shared: SharedPass) -> dict[str, list]:
    """The batch's items, query and class names, from the split's prepared rows."""
    ids = shared.batch.instance_ids.tolist()
    table = context.rows.take(pa.array(ids, pa.int64())).to_pydict()  # instance_id is the row index
    han = hasattr(context.classifier, "word_attention")
    names = context.label_names
    return {
        "items": [attention_items(t, s if han else None) for t, s in zip(table["tokens"], table["sentence_starts"])],
        "query": [" ".join(q) for q in table["query_tokens"]] if "query_tokens" in table else [None] * len(ids),
        "label_name": [_name(names, int(label)) for label in shared.batch.labels.tolist()],
        "pred_name": [_name(names, int(pred)) for pred in shared.pred.tolist()],
    }


def _check_items(cell_id: str, shared: SharedPass, items: list[list[str]]) -> None:
    lengths = shared.lengths.tolist()
    for instance_id, labels, length in zip(shared.batch.instance_ids.tolist(), items, lengths):
        if len(labels) != length:
            raise ValueError(
                f"cell {cell_id} instance {instance_id}: {len(labels)} items, {length} attention positions"
            )


def _name(names: tuple[str, ...], index: int) -> str:
    return names[index] if 0 <= index < len(names) else str(index)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model: how often the prediction survives one permutation of its attention (Vashishth §4.4's
    permuted condition, before any annotator looks at it)."""
    permuted = rows.dropna(subset=["permuted_pred"])
    return measured({"permuted_pred_unchanged": (permuted["permuted_pred"] == permuted["pred"]).mean()})


class TokenScores(InstanceAnalysis[NoParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
