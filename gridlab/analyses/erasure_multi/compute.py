"""`erasure_multi` (docs/analyses.md#erasure_multi, Serrano & Smith 2019 §5): how many attention weights must
be erased, top of a ranking first, before the decision flips; and, beyond the paper, the exact minimal
flipping set.

    >>> context = AnalysisContext(cell_id, model.eval(), torch.device("cpu"), ErasureMultiParams())
    >>> columns = erasure_multi.run(context, forward_once(model, batch))
    >>> columns["removed_gradient"]          # object array (B,): ints, None where the decision never flips

Rankings (S&S §5.2), each a descending order over an instance's T unmasked positions. The three importance
rankings go by the tie rule of `gridlab.analyses.ranking` (values within 1e-5 of the instance's largest
|value| of each other tie) and break ties by position, the earlier first, so rows are deterministic and float
noise, which differs with the batch and the thread count, cannot reorder mathematically equal weights:
- `attention`: alpha_t.
- `random`: a permutation drawn from `instance_generator(cell_id, ID, instance_id)`.
- `gradient`: d d / d alpha_t with d = max_i softmax(logits)_i, taken once on the unmodified instance with h
  (and the query) held fixed. Signed, as in the paper: "in descending order", not by magnitude. It is
  computed divided by d (1 - d), which keeps the order and survives confident predictions where d is 1.0
  in float32 and the plain gradient is exactly 0.
- `grad_x_attention`: that gradient times alpha_t.
Any other ranking of `importance.scores` (leave-one-out, norm-based attention, integrated gradients, rollout
and flow) is accepted too, ranked by the same tie rule (leave-one-out with its TVD floor); rollout and flow
are skipped (null) on cells without a Transformer encoder.

For k = 1..T the top k weights are zeroed and the rest renormalised; `removed_<R>` is the first k whose
argmax differs from the original prediction, `frac_<R>` = k / T. At k = T nothing is left and the context is
the zero vector (S&S §5.3). When the remaining weights sum to 0 although items remain (a sparse projection
gave them no weight), there is nothing to renormalise either and the context is the zero vector too.
Both columns are null when no k flips (§5.3 excludes these) and for T = 1 (§5.3: one possible ordering).
Every ranking always has its columns, so the schema is fixed; rankings not in `params.rankings` are null.
A null is thus either "never flipped" or "not tried": `measured` lists what was tried on the instance (the
requested rankings that apply, for T >= 2; `exact` for 2 <= T <= `exact_max_len`), and `summarize` counts
flips among those instances only, with no number for what no instance tried.

`removed_exact` is the size of the smallest set of positions whose erasure flips the decision (the "gold
standard" §5.1 calls prohibitive), found by trying every subset of size s = 1, 2, ... batched per size;
null for T = 1, for T > `params.exact_max_len` and when no subset flips. Each ranking's k-prefix is one of
those subsets, so removed_exact <= removed_<R> whenever the ranking flips.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from typing import cast

import numpy as np
import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, decode_many, linear_output
from gridlab.analyses.erasure_multi import INFO, ErasureMultiParams
from gridlab.analyses.importance.scores import RankingScores, applicable, random_keys, random_order, ranking_scores
from gridlab.analyses.ranking import tie_ranks
from gridlab.catalog.analyses import ERASURE_RANKINGS, RANKINGS
from gridlab.models.classifier import AttentionClassifier, Encoded

ID = "erasure_multi"
VERSION = 1
OWN_RANKINGS = frozenset(ERASURE_RANKINGS)  # S&S's four, computed here; the others by `importance.scores`

# Elements per (rows, max(T, m)) block handed to one decoder call: bounds memory on long documents.
_BLOCK = 1 << 22


@torch.no_grad()
def run(context: AnalysisContext[ErasureMultiParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Batched: every k of a ranking at once (suffix sums of alpha_t W h_t where the output is linear in the
    context, else one decoder call per chunk of instances), and one decoder call per subset size (per chunk).
    Without autograd's records (the model's weights require gradients; the rankings that need a gradient
    turn it on for themselves): 12 % of a T = 20 batch's time."""
    model, params = context.classifier, context.params
    lengths = shared.lengths
    rankings = applicable(model, params.rankings)
    gradient = _decision_gradient(model, shared) if {"gradient", "grad_x_attention"} & set(rankings) else None
    others = _other_scores(context, shared, rankings)
    counts: dict[str, torch.Tensor | None] = {name: None for name in (*RANKINGS, "exact")}
    linear = linear_output(model)
    projected = None if linear is None else _item_logits(shared.encoded.h, *linear)
    for name in rankings:
        counts[name] = _first_flips(
            model, shared, _ranking_keys(context.cell_id, shared, name, gradient, others), projected
        )
    if params.exact_max_len > 0:
        counts["exact"] = _exact_sizes(model, shared, params.exact_max_len)
    return _columns(counts, lengths) | {"measured": _measured(rankings, params.exact_max_len, lengths)}


def reference(context: AnalysisContext[ErasureMultiParams], shared: SharedPass) -> dict[str, np.ndarray]:
    """Per instance: each ranking erased one more item at a time with one decode each (the shape of S&S's
    code), and a brute force over all subsets, one decode per subset size."""
    model, params = context.classifier, context.params
    lengths = shared.lengths
    rankings = applicable(model, params.rankings)
    others = _other_scores(context, shared, rankings)
    counts = {name: torch.zeros_like(lengths) for name in (*RANKINGS, "exact")}  # 0 = null
    for b in range(len(lengths)):
        positions = shared.encoded.mask[b].nonzero().squeeze(1).tolist()
        if len(positions) < 2:
            continue
        for name in rankings:
            order = _reference_order(context.cell_id, model, shared, b, positions, name, others)
            counts[name][b] = _reference_ranking(model, shared, b, order)
        if len(positions) <= params.exact_max_len:
            counts["exact"][b] = _reference_exact(model, shared, b, positions)
    return _columns(counts, lengths) | {"measured": _measured(rankings, params.exact_max_len, lengths)}


# ---- rankings -------------------------------------------------------------------------------------------


def _decision_gradient(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """(B, T) d d / d alpha_t up to a positive factor per instance, h and query fixed; one backward for the
    whole batch (instances do not interact in `decode`)."""
    encoded = shared.encoded
    with torch.enable_grad():
        alpha = shared.alpha.detach().clone().requires_grad_(True)
        query = None if encoded.query is None else encoded.query.detach()
        logits = model.decode(encoded.h.detach(), alpha, query)  # (B, C)
        (gradient,) = torch.autograd.grad(logits, alpha, _decision_direction(logits.detach(), shared.pred))
    return gradient  # autograd.grad rather than backward: the parameters keep no .grad


def _decision_direction(logits: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """(B, C) the gradient of d = softmax(logits)_pred with respect to the logits, divided by d (1 - d) > 0.

    d (e_pred - p) = d (1 - d) (e_pred - q), q the softmax over the other classes (0 at pred). Dividing by
    d (1 - d) changes no ranking, and unlike the plain gradient this does not vanish when a confident
    prediction rounds d to 1 in float32, where every position would tie and the ranking would fall back to
    position order.
    """
    chosen = torch.nn.functional.one_hot(pred, logits.shape[-1]).bool()  # (B, C)
    others = torch.softmax(logits.masked_fill(chosen, float("-inf")), dim=-1)  # (B, C)
    return chosen.to(logits.dtype) - others


def _other_scores(
    context: AnalysisContext[ErasureMultiParams], shared: SharedPass, rankings: list[str]
) -> RankingScores:
    """The scores of the rankings beyond S&S's four (`importance.scores`), for the ones requested."""
    names = [r for r in rankings if r not in OWN_RANKINGS]
    return ranking_scores(context.classifier, context.cell_id, shared, names, ID, context.params.ig_steps)


def _ranking_keys(
    cell_id: str, shared: SharedPass, name: str, gradient: torch.Tensor | None, others: RankingScores
) -> torch.Tensor:
    """(B, T) keys whose descending stable sort is the ranking: the tie ranks of the importances (ties then
    keep position order), or the random order's; an importance without a rank (non-finite) gets -1 and
    sorts after the ranked ones, padding -inf and last."""
    mask = shared.encoded.mask
    if name == "random":
        return random_keys(cell_id, ID, shared).masked_fill(~mask, float("-inf"))
    floor: torch.Tensor | float = 0.0
    if name == "attention":
        values = shared.alpha
    elif name in others.values:
        values, floor = others.values[name], others.floors[name]
    elif gradient is None:
        raise ValueError(f"the {name} ranking needs the decision gradient")
    elif name == "gradient":
        values = gradient
    else:
        values = gradient * shared.alpha
    return tie_ranks(values, mask, floor).nan_to_num(-1.0).masked_fill(~mask, float("-inf"))


def _first_flips(
    model: AttentionClassifier,
    shared: SharedPass,
    keys: torch.Tensor,
    projected: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """(B,) the first k whose top-k erasure flips the decision, 0 where none does (or T = 1). With `projected`
    (`_item_logits`, for a classifier linear in the context) every k at once from suffix sums; otherwise the
    T erased weightings of each instance decoded in one call (per block of instances)."""
    order = torch.sort(keys, dim=-1, descending=True, stable=True).indices  # (B, T) padding last
    lengths = shared.lengths
    steps = int(lengths.max())
    if projected is not None:
        decisions = _erased_decisions_linear(shared, order, steps, *projected)
    else:
        decisions = _erased_decisions_decoded(model, shared, order, steps)
    ks = torch.arange(1, steps + 1, device=order.device)  # (K,)
    flipped = (decisions != shared.pred[:, None]) & (ks[None, :] <= lengths[:, None]) & (lengths[:, None] > 1)
    return torch.where(flipped.any(-1), flipped.int().argmax(-1) + 1, 0)  # argmax: the first True


def _item_logits(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """What each item adds to the logits of a classifier linear in the context, W h_t (B, T, C), and b. With
    two classes only their difference decides: (w_1 - w_0) . h_t (B, T, 1) and b_1 - b_0, one column."""
    if len(weight) == 2:
        return (h @ (weight[1] - weight[0]))[..., None], (bias[1] - bias[0])[None]
    return h @ weight.t(), bias


def _erased_decisions_linear(
    shared: SharedPass, order: torch.Tensor, steps: int, projected: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """(B, K) the decision with the top k = 1..K of `order` erased, for logits = sum_t alpha_t W h_t / sum_t
    alpha_t + b over the kept t (`_item_logits`; one column: the margin of class 1 over class 0). The kept
    items are a suffix of the order, so their sums are suffix sums: O(B T C) instead of K decodes of O(B T C)
    each. Summed from the end, not subtracted from the total, so a kept mass that is tiny beside the erased
    one keeps its precision; a kept mass of 0 is the zero context."""
    alpha = shared.alpha.to(projected.dtype).gather(1, order)  # (B, T) in ranking order, padding (0) last
    weighted = alpha[..., None] * projected.gather(1, order[..., None].expand(-1, -1, projected.shape[-1]))
    # one column of (alpha, alpha W h) per place, then a zero place: k = T of the longest keeps nothing
    places = torch.nn.functional.pad(torch.cat([alpha[..., None], weighted], -1), (0, 0, 0, 1))  # (B, T + 1, 1 + C)
    kept = places.flip(1).cumsum(1).flip(1)[:, 1 : steps + 1]  # (B, K, 1 + C) sums over places >= k
    mass = kept[..., :1]
    logits = kept[..., 1:] / torch.where(mass > 0, mass, 1.0) + bias  # (B, K, C), or the margin (B, K, 1)
    return (logits[..., 0] > 0).long() if logits.shape[-1] == 1 else logits.argmax(-1)  # a tie: class 0


def _erased_decisions_decoded(
    model: AttentionClassifier, shared: SharedPass, order: torch.Tensor, steps: int
) -> torch.Tensor:
    """(B, K) the decision with the top k = 1..K of `order` erased, each weighting decoded by the model."""
    places = torch.arange(order.shape[1], device=order.device).expand_as(order)
    rank = torch.empty_like(order).scatter_(1, order, places)  # (B, T) place of each position in the order
    ks = torch.arange(1, steps + 1, device=order.device)  # (K,)
    rows_per_call = max(1, _BLOCK // (steps * max(order.shape[1], shared.encoded.h.shape[-1])))
    decisions = []
    for start in range(0, order.shape[0], rows_per_call):
        rows = slice(start, start + rows_per_call)
        part = shared if rows_per_call >= order.shape[0] else _restrict(shared, rows)  # one call: no copies
        removed = rank[rows, None, :] < ks[None, :, None]  # (b, K, T) the top k positions of row k-1
        decisions.append(decode_many(model, part, _erase(part.alpha, removed)).argmax(-1))  # (b, K)
    return torch.cat(decisions)


# ---- exact minimal flipping set -------------------------------------------------------------------------


def _exact_sizes(model: AttentionClassifier, shared: SharedPass, limit: int) -> torch.Tensor:
    """(B,) the smallest number of erased positions that flips the decision, 0 where none does or T is
    out of range. Instances are grouped by T (one subset table each); a group tries size s = 1, 2, ... on
    its still unresolved instances and stops when all are resolved."""
    lengths = shared.lengths
    sizes = torch.zeros_like(lengths)
    eligible = (lengths > 1) & (lengths <= limit)
    for length in sorted(set(lengths[eligible].tolist())):
        rows = (lengths == length).nonzero().squeeze(1)  # (G,)
        positions = shared.encoded.mask[rows].nonzero()[:, 1].reshape(len(rows), length)  # (G, T_b) unmasked
        for s in range(1, length + 1):
            flipped = _any_subset_flips(model, shared, rows, positions, _subset_table(length, s))  # (G,)
            sizes[rows[flipped]] = s
            rows, positions = rows[~flipped], positions[~flipped]
            if len(rows) == 0:
                break
    return sizes


@functools.lru_cache(maxsize=256)
def _subset_table(length: int, size: int) -> torch.Tensor:
    """(S, length) bool: row j marks the j-th subset of `size` positions (itertools order), S = C(length, size)."""
    chosen = torch.tensor(list(itertools.combinations(range(length), size)), dtype=torch.long)  # (S, size)
    return torch.zeros(len(chosen), length, dtype=torch.bool).scatter_(1, chosen, True)


def _any_subset_flips(
    model: AttentionClassifier, shared: SharedPass, rows: torch.Tensor, positions: torch.Tensor, table: torch.Tensor
) -> torch.Tensor:
    """(G,) whether erasing any subset of `table` (S, T_b) of the instances `rows` flips their decision."""
    table = table.to(positions.device)
    group, width = len(rows), shared.encoded.mask.shape[1]
    sub = _restrict(shared, rows)
    per_call = max(1, _BLOCK // (group * max(width, shared.encoded.h.shape[-1])))
    flipped = torch.zeros(group, dtype=torch.bool, device=rows.device)
    for start in range(0, len(table), per_call):
        chunk = table[start : start + per_call]  # (S_c, T_b)
        index = positions[:, None, :].expand(group, len(chunk), -1)  # (G, S_c, T_b) padded position of each
        removed = torch.zeros(group, len(chunk), width, dtype=torch.bool, device=rows.device)
        removed.scatter_(2, index, chunk[None].expand(group, -1, -1))  # (G, S_c, T)
        probs = decode_many(model, sub, _erase(sub.alpha, removed))  # (G, S_c, C)
        flipped |= (probs.argmax(-1) != sub.pred[:, None]).any(-1)
    return flipped


# ---- shared pieces --------------------------------------------------------------------------------------


def _erase(alpha: torch.Tensor, removed: torch.Tensor) -> torch.Tensor:
    """alpha (B, T), removed (B, K, T) -> (B, K, T): erased weights zeroed, the rest renormalised; a row with
    nothing left to renormalise (sum 0) stays zero, which `decode_many` turns into the zero context."""
    kept = alpha[:, None, :].masked_fill(removed, 0.0)  # (B, K, T)
    total = kept.sum(-1, keepdim=True)  # (B, K, 1)
    return kept / torch.where(total > 0, total, 1.0)


def _restrict(shared: SharedPass, rows: slice | torch.Tensor) -> SharedPass:
    """The pass of some instances only. `batch` stays whole: `decode_many` reads only `encoded`, and this
    module reads `batch` before restricting."""
    e = shared.encoded
    encoded = Encoded(e.h[rows], e.mask[rows], None if e.query is None else e.query[rows])
    return SharedPass(
        shared.batch, encoded, shared.alpha[rows], shared.logits[rows], shared.probs[rows], shared.pred[rows]
    )


def _columns(counts: Mapping[str, torch.Tensor | None], lengths: torch.Tensor) -> dict[str, np.ndarray]:
    """Counts (B,) with 0 meaning null -> `removed_*` / `frac_*` object arrays with None for null."""
    t = lengths.cpu().numpy()
    nulls = np.full(len(t), None, dtype=object)
    columns = {}
    for name, count in counts.items():
        if count is None:  # a ranking not asked for: all null
            columns[f"removed_{name}"], columns[f"frac_{name}"] = nulls.copy(), nulls.copy()
            continue
        values = count.cpu().numpy()
        columns[f"removed_{name}"] = _nulls_where(values.astype(object), values == 0)  # Python ints, None
        columns[f"frac_{name}"] = _nulls_where((values / t).astype(object), values == 0)  # Python floats, None
    return columns


def _measured(rankings: list[str], exact_max_len: int, lengths: torch.Tensor) -> np.ndarray:
    """(B,) object array: per instance, the rankings (and `exact`) tried on it; none for T = 1."""
    tried = []
    for length in lengths.tolist():
        exact = ["exact"] if 2 <= length <= exact_max_len else []
        tried.append([*rankings, *exact] if length >= 2 else [])
    column = np.empty(len(tried), dtype=object)
    column[:] = tried
    return column


def _nulls_where(values: np.ndarray, null: np.ndarray) -> np.ndarray:
    values[null] = None
    return values


# ---- reference ------------------------------------------------------------------------------------------


def _reference_order(
    cell_id: str,
    model: AttentionClassifier,
    shared: SharedPass,
    b: int,
    positions: list[int],
    name: str,
    scores: RankingScores,
) -> list[int]:
    """Instance b's positions, most important first: the tie rule on the instance's own scores, then
    Python's stable sort (ties keep position order). The rankings beyond S&S's four take the batch's scores
    (`importance.scores` has their own oracles); the erasure that follows is what this reference checks."""
    if name == "random":
        instance_id = int(shared.batch.instance_ids[b])
        return [positions[i] for i in random_order(cell_id, ID, instance_id, len(positions))]
    weights = shared.alpha[b].tolist()
    floor = 0.0
    if name == "attention":
        score = weights
    elif name in scores.values:
        score = scores.values[name][b].tolist()
        instance_floor = scores.floors[name]
        floor = float(instance_floor[b]) if isinstance(instance_floor, torch.Tensor) else instance_floor
    else:
        encoded = shared.encoded
        alpha = shared.alpha[b : b + 1].detach().clone().requires_grad_(True)
        query = None if encoded.query is None else encoded.query[b : b + 1]
        with torch.enable_grad():
            logits = model.decode(encoded.h[b : b + 1], alpha, query)[0]  # (C,)
            pred = int(shared.pred[b])
            # d (1 - d) is factored out of d's gradient (see _decision_direction): e_pred minus the softmax
            # over the other classes
            others = [c for c in range(len(logits)) if c != pred]
            direction = torch.zeros_like(logits)
            direction[others] = -torch.softmax(logits.detach()[others], dim=0)
            direction[pred] = 1.0
            (logits * direction).sum().backward()
        gradient = cast(torch.Tensor, alpha.grad)[0].tolist()  # backward() above filled it
        score = gradient if name == "gradient" else [g * a for g, a in zip(gradient, weights)]
    mask = shared.encoded.mask[b : b + 1].cpu()
    rank = tie_ranks(torch.tensor([score], dtype=torch.float64), mask, floor)[0].nan_to_num(-1.0).tolist()
    return sorted(positions, key=lambda p: -rank[p])


def _reference_decode(model: AttentionClassifier, shared: SharedPass, b: int, alphas: torch.Tensor) -> torch.Tensor:
    """alphas (K, T) for instance b -> predicted classes (K,)."""
    encoded = shared.encoded
    h = encoded.h[b : b + 1].expand(len(alphas), -1, -1)  # (K, T, m)
    query = None if encoded.query is None else encoded.query[b : b + 1].expand(len(alphas), -1)
    return model.decode(h, alphas, query).argmax(-1)


def _renormalised(alpha: torch.Tensor, erased: list[int]) -> torch.Tensor:
    kept = alpha.clone()
    kept[erased] = 0.0
    total = kept.sum()
    return kept / total if total > 0 else kept


def _reference_ranking(model: AttentionClassifier, shared: SharedPass, b: int, order: list[int]) -> int:
    for k in range(1, len(order) + 1):
        alpha = _renormalised(shared.alpha[b], order[:k])
        if _reference_decode(model, shared, b, alpha[None]).item() != shared.pred[b].item():
            return k
    return 0


def _reference_exact(model: AttentionClassifier, shared: SharedPass, b: int, positions: list[int]) -> int:
    for size in range(1, len(positions) + 1):
        alphas = torch.stack(
            [_renormalised(shared.alpha[b], list(subset)) for subset in itertools.combinations(positions, size)]
        )  # (S, T)
        if (_reference_decode(model, shared, b, alphas) != shared.pred[b]).any():
            return size
    return 0


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model and ranking (S&S Fig. 5-6): the share of the instances a ranking was tried on whose decision
    flips, and the median fraction removed before the first flip among those (nulls excluded, as S&S §5.3).
    A ranking no instance tried (not requested, not applicable, `exact` off or every instance too long) has
    no entry: a 0 would read as "never flipped"."""
    summary: dict[str, float] = {}
    tried = _tried(rows)
    for name in (*RANKINGS, "exact"):
        on = tried.apply(lambda names, name=name: name in names)
        if not on.any():
            continue
        fractions = rows.loc[on, f"frac_{name}"].dropna().astype(float)
        summary[f"flipped_{name}"] = len(fractions) / int(on.sum())
        if len(fractions):
            summary[f"frac_{name}_median"] = float(fractions.median())
    return summary


def _tried(rows: pd.DataFrame) -> pd.Series:
    """Per row, the names tried on it: its `measured`; for a row of a part written before that column, the
    rankings with a value on any such row of the cell (T >= 2), `exact` left out (its length limit is not
    in the rows)."""
    measured = rows["measured"] if "measured" in rows.columns else pd.Series(None, index=rows.index, dtype=object)
    legacy = measured.isna()
    if not legacy.any():
        return measured.map(set)
    old = rows[legacy]
    seen = {name for name in RANKINGS if old[f"frac_{name}"].notna().any()}
    fallback = old["length"].map(lambda length: seen if length >= 2 else set())
    return measured.where(~legacy, fallback).map(set)


class ErasureMulti(InstanceAnalysis[ErasureMultiParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
