"""`erasure_single` — Serrano & Smith §4 (docs/analyses.md#erasure_single): erase the highest attention
weight, or one random other weight, renormalise, and compare the outputs (their Fig. 3-4 and the flip
contingency Table 2).

    >>> context = AnalysisContext(cell_id, model.eval(), device, NoParams())
    >>> columns = erasure_single.run(context, forward_once(model, batch))
    >>> columns["delta_js"]              # (B,) object array: JS(p, q_i*) - JS(p, q_r), None where T = 1

- i* = argmax alpha under the tie rule of `gridlab.analyses.ranking` (weights within 1e-5 of the largest of
  each other tie): tied maxima (uniform attention, repeated tokens) resolve to the first position, so float
  noise, which differs with the batch and the thread count, cannot pick another.
- r is uniform over the T - 1 other unmasked positions (S&S §4.1; their appendix excludes i*), one
  `torch.randint` from `instance_generator(cell_id, "erasure_single", instance_id)`.
- Erasing sets the weight to 0 and divides the rest by their sum. When nothing is left (a sparse alpha that
  put all its mass on i*) the zero vector is the context, as S&S §5 does when no item remains.
- JS is the natural-log JSD of docs/analyses.md#distances, in [0, ln 2]; a flip is argmax(q) != argmax(p).
- `top_index` / `rand_index` count unmasked positions from 0 (the token's index in the instance, without
  `<sos>`), so they do not depend on padding or markers.

Instances with T < 2 are skipped, as S&S do (r must differ from i*): every column is an object array whose
entries are Python scalars, and None (a null in Parquet via `results.parts.rows_table`) on skipped rows,
never NaN. Float columns are float64, flips bool, indices int64 (see SCHEMA).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, decode_many, instance_generator, jsd, measured
from gridlab.analyses.erasure_single import INFO
from gridlab.analyses.ranking import descending_order, tie_ranks
from gridlab.catalog.analyses import NoParams

ID = "erasure_single"
VERSION = 1


def draw_rand_rank(cell_id: str, instance_id: int, length: int, top_rank: int) -> int:
    """r's rank among the `length` unmasked positions: uniform over all ranks except `top_rank`."""
    generator = instance_generator(cell_id, ID, instance_id)
    drawn = int(torch.randint(length - 1, (1,), generator=generator))
    return drawn + int(drawn >= top_rank)  # skip over i*


def _nullable(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Object array: `values` as Python scalars where `keep`, None elsewhere."""
    return np.where(keep, values.astype(object), np.array(None, dtype=object))


def _columns(
    js: np.ndarray, weights: np.ndarray, flips: np.ndarray, ranks: np.ndarray, keep: np.ndarray
) -> dict[str, np.ndarray]:
    """Per instance (top, rand) pairs, each (B, 2) -> the SCHEMA columns, None where not `keep`."""
    js, weights = js.astype(np.float64), weights.astype(np.float64)
    values = {
        "js_top": js[:, 0],
        "js_rand": js[:, 1],
        "delta_js": js[:, 0] - js[:, 1],
        "delta_alpha": weights[:, 0] - weights[:, 1],
        "flip_top": flips[:, 0].astype(bool),
        "flip_rand": flips[:, 1].astype(bool),
        "top_index": ranks[:, 0].astype(np.int64),
        "rand_index": ranks[:, 1].astype(np.int64),
    }
    return {name: _nullable(column, keep) for name, column in values.items()}


@torch.no_grad()
def run(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    mask, alpha = shared.encoded.mask, shared.alpha
    lengths = shared.lengths.tolist()
    top = descending_order(alpha, mask)[:, 0]  # (B,) the first slot of the highest tie group (an item)
    ranks = mask.long().cumsum(-1) - 1  # (B, T) each position's rank among the unmasked ones
    top_rank = ranks.gather(-1, top.unsqueeze(-1)).squeeze(-1)  # (B,)
    rand_rank = torch.tensor(
        [
            draw_rand_rank(context.cell_id, instance_id, length, rank) if length >= 2 else rank
            for instance_id, length, rank in zip(shared.batch.instance_ids.tolist(), lengths, top_rank.tolist())
        ],
        device=mask.device,
    )  # (B,): for skipped instances r = i*, computed and then nulled
    rand = (mask & (ranks == rand_rank.unsqueeze(-1))).long().argmax(-1)  # (B,) position of that rank
    erased_at = torch.stack([top, rand], dim=1)  # (B, 2)
    alphas = alpha.unsqueeze(1).repeat(1, 2, 1).scatter_(-1, erased_at.unsqueeze(-1), 0.0)  # (B, 2, T)
    total = alphas.sum(-1, keepdim=True)  # (B, 2, 1)
    alphas = alphas / torch.where(total > 0, total, torch.ones_like(total))  # nothing left: the zero context
    q = decode_many(context.classifier, shared, alphas)  # (B, 2, C)
    return _columns(
        js=jsd(shared.probs.unsqueeze(1), q).double().cpu().numpy(),
        weights=alpha.gather(-1, erased_at).double().cpu().numpy(),
        flips=(q.argmax(-1) != shared.pred.unsqueeze(-1)).cpu().numpy(),
        ranks=torch.stack([top_rank, rand_rank], dim=1).cpu().numpy(),
        keep=np.asarray(lengths) >= 2,
    )


@torch.no_grad()
def reference(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """S&S §4 per instance: two erasures, two decodes."""
    model = context.classifier
    h, mask, query = shared.encoded.h, shared.encoded.mask, shared.encoded.query
    b_size = mask.shape[0]
    js, weights, flips, ranks = (np.zeros((b_size, 2)) for _ in range(4))
    keep = np.zeros(b_size, dtype=bool)
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        positions = mask[b].nonzero().squeeze(-1)  # (T_b,)
        if len(positions) < 2:
            continue
        keep[b] = True
        top_rank = int(tie_ranks(shared.alpha[b : b + 1], mask[b : b + 1])[0, positions].argmax())  # the first
        rand_rank = draw_rand_rank(context.cell_id, instance_id, len(positions), top_rank)
        for column, rank in enumerate((top_rank, rand_rank)):
            position = positions[rank]
            erased = shared.alpha[b].clone()
            erased[position] = 0.0
            if erased.sum() > 0:
                erased = erased / erased.sum()
            logits = model.decode(h[b : b + 1], erased[None], None if query is None else query[b : b + 1])
            q = torch.softmax(logits, -1)[0]
            js[b, column] = float(jsd(shared.probs[b], q))
            weights[b, column] = float(shared.alpha[b, position])
            flips[b, column] = int(q.argmax()) != int(shared.pred[b])
            ranks[b, column] = rank
    return _columns(js, weights, flips, ranks, keep)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model: S&S Table 2's flip contingency (shares of the instances erased, T >= 2) and the share of
    negative delta JS; no entry without such instances (a share of none is not 0)."""
    kept = rows.dropna(subset=["flip_top", "flip_rand"])
    top, rand = kept["flip_top"].astype(bool), kept["flip_rand"].astype(bool)
    delta_js = kept["delta_js"].dropna().astype(float)
    return measured(
        {
            "flip_top_only": (top & ~rand).mean(),
            "flip_rand_only": (~top & rand).mean(),
            "flip_both": (top & rand).mean(),
            "flip_neither": (~top & ~rand).mean(),
            "delta_js_negative": (delta_js < 0).mean(),
        }
    )


class ErasureSingle(InstanceAnalysis[NoParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
