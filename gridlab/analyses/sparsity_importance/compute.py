"""`sparsity_importance` — Meister et al. §3–4, Appendix A (docs/analyses.md#sparsity_importance): how
dispersed is feature importance (FI), and how does attention rank the items against it?

    >>> context = AnalysisContext(cell_id, model.eval(), device, SparsityParams())
    >>> columns = sparsity_importance.run(context, forward_once(model, batch))
    >>> columns["entropy_gy_x"], columns["tau_gy_x"]   # (B,) floats or None
    >>> normalised_entropy(np.array([0.5, 0.5]))       # 1.0

Per instance, over the items of the final attention layer (`shared.encoded.mask`: tokens, the premise's
tokens for pair tasks, sentences for HAN), five FI distributions, each a non-negative vector normalised to
sum 1 over the items (their Eq. 4–6):

- `gy_x`: g_y(x_i) = ||d y / d X_i||_2, X_i the embedding of item i (for HAN the L2 norm over all the
  sentence's word embeddings), y the probability of the predicted class `shared.pred`. The gradient is
  `importance.input_gradient`'s: alpha is held at `shared.alpha` (J&W's framework, which Meister et al.
  build on), so this is the same derivative as gridlab's gradient importance, only L2-normed.
- `gy_h`: g_y(h_i) = ||d y / d h_i||_2 with alpha = `model.attend(h)` recomputed from h and NOT detached:
  with alpha constant, d y / d h_i = alpha_i W^T d y / d c, a multiple of alpha_i, and tau with alpha would be
  1 by construction.
- `gh_x`: g_{h_p}(x_i) = ||d ||h_p||_2 / d X_i||_2 for every item p; the column is the mean over p of the
  normalised entropies (their Table 1). One backward per p over the whole batch (instances never interact,
  so the gradient of the batch's summed ||h_p|| is each instance's own): T backwards per batch, which is
  O(T^2) work, as the Jacobian it is. The parameter `gh_x_positions` = N averages over at most N items p
  evenly spaced over the instance (`sampled_ranks`) instead: N backwards, an estimate of the same mean for
  long documents (20News, IMDB), exact where an instance has at most N items.
- `dy_x`: D_y(x_i) = |y - y_-i| with item i deleted, `importance.leave_one_out`. That is the TVD of the
  output distributions, which equals |y - y_-i| for two classes and is used as is for more.
- `dy_h`: D_y(h_i), the same TVD with representation i erased at the attention layer: alpha_i set to 0 and
  the rest renormalised (for a softmax projection exactly attention recomputed without h_i), all T erasures
  of a batch decoded in one `decode_many` call. Erasing the only weighted item leaves alpha = 0, the zero
  context.

The parameter `representation_layer` = k (flat Transformer cells) takes h to be the input of self-attention
layer k instead (0: the projected embeddings plus positions) in all three measures of h: g_y(h_i) through
every layer from k and the final attention, g_{h_p}(x_i) of that h_p, D_y(h_i) with item i deleted from layer
k on (taken out of every key set of those layers and of the final attention; `layer_erasure`, deletions
batched in chunks). Meister et al. do not say which of a Transformer's representations they mean. At the
final layer an item a sparse projection leaves out is read by nothing, so erasing it changes nothing and all
such items tie at D_y(h) = 0 with their weight 0; inside the stack the other items still read it.
`representation_erasure` = "zero" keeps h at the final layer but erases h_i by replacing it with the zero
vector, the attention recomputed over every item (`zeroed_representation_erasure`): item i then weighs in
with the zero vector's score.

Columns: the normalised entropies H~(p) = -sum p log p / log n (0 for n = 1) of the five, and Kendall tau-b of
alpha with gy_x, dy_x, gy_h and dy_h (`importance_correlation.kendall` of the vectors' `ranking.tie_ranks`:
values within 1e-5 of the instance's largest |value| of each other tie, the TVDs dy_x and dy_h also within
2e-6 of 1 - y; normalising does not change ranks). Arrays are object arrays of floats and None (an Arrow null;
never NaN). Every column is null where T < 2 (a single item trivially holds all importance); an entropy is
also null where its FI vector sums to 0 or is not finite (nothing to normalise; `entropy_gh_x` averages over
the p whose vector is defined), a tau where `kendall` finds tau-b undefined (e.g. uniform attention).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, column_means, decode_many, self_attention, tokens_per_call
from gridlab.analyses.importance import (
    input_gradient,
    instance_rows,
    leave_one_out,
    prediction_gradient,
    reference_leave_one_out,
    tvd_beside,
)
from gridlab.analyses.importance_correlation.compute import kendall
from gridlab.analyses.ranking import tie_ranks, tvd_floor
from gridlab.analyses.sparsity_importance import INFO, MEASURES, SCHEMA, SparsityParams
from gridlab.data.batching import Batch, collate
from gridlab.data.vocab import PAD_ID
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.transformer import TransformerEncoder

ID = "sparsity_importance"
VERSION = 1


# ---- the measures, batched -------------------------------------------------------------------------------


def input_gradient_norms(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> torch.Tensor:
    """(B, T) ||d y / d X_i||_2 per item (alpha held at `shared.alpha`), 0 outside the mask."""
    gradient, _ = input_gradient(model, batch, shared)  # (B, T, d) or HAN (B, S, W, d)
    mask = shared.encoded.mask
    return gradient.reshape(*mask.shape, -1).norm(dim=-1) * mask


def representation_gradient_norms(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """(B, T) ||d y / d h_i||_2 with alpha recomputed from h (not detached), 0 outside the mask."""
    encoded = shared.encoded
    with torch.enable_grad():
        h = encoded.h.detach().requires_grad_(True)  # (B, T, m)
        logits = model.decode(h, model.attend(h, encoded.mask, encoded.query), encoded.query)  # (B, C)
        direction = prediction_gradient(logits.detach(), shared.pred)  # (B, C)
        (gradient,) = torch.autograd.grad(logits, h, grad_outputs=direction)
    return gradient.norm(dim=-1) * encoded.mask


def sampled_ranks(counts: torch.Tensor, limit: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """counts (B,) items per instance -> (ranks, valid) (B, K): the items p whose g_h(x) enters entropy_gh_x,
    as ranks among the instance's items. Every item where `limit` is None or not below the count, else `limit`
    items evenly spaced (the k-th at floor((k + 1/2) n / limit), integer arithmetic): a function of the
    instance alone, so the same under any batching."""
    width = int(counts.max()) if counts.numel() else 0
    n = counts[:, None]  # (B, 1)
    if limit is None or width <= limit:
        k = torch.arange(width, device=counts.device).expand(len(counts), -1)  # (B, width)
        return k, k < n
    k = torch.arange(limit, device=counts.device)[None, :]  # (1, limit)
    return torch.where(n > limit, ((2 * k + 1) * n) // (2 * limit), k), k < n


def representation_input_gradient_norms(
    model: AttentionClassifier, batch: Batch, shared: SharedPass, limit: int | None = None, layer: int | None = None
) -> torch.Tensor:
    """(B, T_p, T_i) ||d ||h_p||_2 / d X_i||_2 (h as `representations` takes it), 0 where i is outside the mask
    or p is not one of the `sampled_ranks` items: one backward per sampled rank, every instance's p of that
    rank at once."""
    mask = shared.encoded.mask  # (B, T)
    out = torch.zeros(*mask.shape, mask.shape[1], dtype=shared.encoded.h.dtype, device=mask.device)
    items = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)  # (B, T) the items' slots first, in order
    ranks, valid = sampled_ranks(mask.sum(1), limit)
    slots = items.gather(1, ranks.clamp_max(mask.shape[1] - 1))  # (B, K)
    rows = torch.arange(mask.shape[0], device=mask.device)
    with torch.enable_grad():
        embedded = model.embed(batch).detach().requires_grad_(True)
        norms = representations(model, batch, embedded, layer).norm(dim=-1)  # (B, T)
        for k in range(ranks.shape[1]):
            selector = torch.zeros_like(norms)
            selector[rows, slots[:, k]] = valid[:, k].to(norms.dtype)
            (gradient,) = torch.autograd.grad(norms, embedded, grad_outputs=selector, retain_graph=True)
            chosen = rows[valid[:, k]]
            out[chosen, slots[chosen, k]] = gradient.reshape(*mask.shape, -1).norm(dim=-1)[chosen] * mask[chosen]
    return out


def erased_alphas(alpha: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """alpha (B, T) -> (B, T, T): row i is alpha with alpha_i = 0, renormalised (all zero if nothing is left)."""
    t = alpha.shape[1]
    kept = alpha[:, None, :] * ~torch.eye(t, dtype=torch.bool, device=alpha.device)  # (B, T, T)
    kept = kept * mask[:, None, :]
    total = kept.sum(-1, keepdim=True)  # (B, T, 1)
    return torch.where(total > 0, kept / total.clamp_min(torch.finfo(alpha.dtype).tiny), 0.0)


@torch.no_grad()
def representation_erasure(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """(B, T) D_y(h_i) = TVD(y with h_i erased at the attention layer, y), 0 outside the mask."""
    probs = decode_many(model, shared, erased_alphas(shared.alpha, shared.encoded.mask))  # (B, T, C)
    return tvd_beside(probs, shared.probs[:, None, :], shared.pred) * shared.encoded.mask


def representations(
    model: AttentionClassifier, batch: Batch, embedded: torch.Tensor, layer: int | None
) -> torch.Tensor:
    """(B, T, m) h from the embeddings: what the final attention layer weighs (`layer` None), or the input of a
    Transformer's self-attention layer `layer`."""
    if layer is None:
        return model.encode(batch, embedded=embedded).h
    encoder = self_attention(model)
    return encoder.run_layers(encoder.project(embedded), batch.ids != PAD_ID, stop=layer)


@torch.no_grad()
def zeroed_representation_erasure(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """(B, T) D_y(h_i) = TVD(y with h_i replaced by the zero vector, y), 0 outside the mask: item i's score
    becomes the zero vector's and the projection runs again over every item (all T variants of a batch in one
    projection and one `decode_many` call); the zero vector adds nothing to the context, whatever its weight.
    An attention that does not read h (uniform, random) keeps its weights."""
    encoded, attention = shared.encoded, model.attention
    b, t = encoded.mask.shape
    itself = torch.eye(t, dtype=torch.bool, device=encoded.mask.device)  # (T, T) row i: the variant erasing i
    alphas = shared.alpha[:, None, :].expand(b, t, t)
    if attention.mode == "learned":
        scores = attention.scores(encoded.h, encoded.query)  # (B, T)
        zero = attention.scores(torch.zeros_like(encoded.h[:, :1]), encoded.query)  # (B, 1)
        variants = torch.where(itself, zero[:, :, None], scores[:, None, :])  # (B, T, T)
        masks = encoded.mask[:, None, :].expand(b, t, t)
        alphas = attention.from_scores(variants.reshape(b * t, t), masks.reshape(b * t, t)).reshape(b, t, t)
    probs = decode_many(model, shared, alphas.masked_fill(itself, 0.0))  # (B, T, C)
    return tvd_beside(probs, shared.probs[:, None, :], shared.pred) * encoded.mask


def layer_input(model: AttentionClassifier, batch: Batch, layer: int) -> tuple[TransformerEncoder, torch.Tensor]:
    """A Transformer cell's self-attention stack and the input of its layer `layer` (B, T, hidden)."""
    return self_attention(model), representations(model, batch, model.embed(batch), layer)


def layer_gradient_norms(model: AttentionClassifier, batch: Batch, shared: SharedPass, layer: int) -> torch.Tensor:
    """(B, T) ||d y / d h_i||_2, h the input of self-attention layer `layer`, every layer above it and the final
    attention recomputed from h; 0 outside the mask."""
    mask = shared.encoded.mask
    with torch.enable_grad():
        encoder, state = layer_input(model, batch, layer)
        state = state.detach().requires_grad_(True)
        h = encoder.run_layers(state, batch.ids != PAD_ID, start=layer)
        logits = model.decode(h, model.attend(h, mask))  # (B, C)
        direction = prediction_gradient(logits.detach(), shared.pred)
        (gradient,) = torch.autograd.grad(logits, state, grad_outputs=direction)
    return gradient.norm(dim=-1) * mask


@torch.no_grad()
def layer_erasure(model: AttentionClassifier, batch: Batch, shared: SharedPass, layer: int) -> torch.Tensor:
    """(B, T) D_y(h_i) = TVD(y with item i deleted from self-attention layer `layer` on and from the final
    attention, y), 0 outside the mask. Each deletion is a row of a batched call (chunked, each chunk as wide as
    its longest row): the item leaves every key set, so no other item reads it."""
    mask, tokens = shared.encoded.mask, batch.ids != PAD_ID
    encoder, state = layer_input(model, batch, layer)
    rows, items = mask.nonzero(as_tuple=True)  # (N,) each: one deletion per item
    probs = torch.zeros(*mask.shape, shared.probs.shape[-1], dtype=shared.probs.dtype, device=mask.device)
    step = max(1, tokens_per_call(mask.device) // mask.shape[1])
    for start in range(0, len(rows), step):
        r, i = rows[start : start + step], items[start : start + step]
        width = int(batch.lengths[r].max())
        kept = torch.ones(len(r), width, dtype=torch.bool, device=mask.device)
        kept[torch.arange(len(r), device=mask.device), i] = False
        h = encoder.run_layers(state[r, :width], tokens[r, :width] & kept, start=layer)
        logits = model.decode(h, model.attend(h, mask[r, :width] & kept))
        probs[r, i] = torch.softmax(logits, dim=-1).to(probs.dtype)
    return tvd_beside(probs, shared.probs[:, None, :], shared.pred) * mask


def representation_importance(
    model: AttentionClassifier, batch: Batch, shared: SharedPass, layer: int | None, erasure: str = "renormalise"
) -> dict[str, torch.Tensor]:
    """{"gy_h", "dy_h"} (B, T), h the final attention layer's input (`layer` None; h_i erased as `erasure`
    says) or the input of a Transformer's self-attention layer `layer` (h_i deleted from it on)."""
    if layer is None:
        erase = zeroed_representation_erasure if erasure == "zero" else representation_erasure
        return {"gy_h": representation_gradient_norms(model, shared), "dy_h": erase(model, shared)}
    return {
        "gy_h": layer_gradient_norms(model, batch, shared, layer),
        "dy_h": layer_erasure(model, batch, shared, layer),
    }


# ---- entropies and columns -------------------------------------------------------------------------------


def normalised_entropy(p: np.ndarray) -> float:
    """H~(p) = -sum p log p / log n for a distribution p (n,), with 0 log 0 = 0; 0 for n = 1."""
    if len(p) <= 1:
        return 0.0
    positive = p[p > 0]
    return float(min(max(-(positive * np.log(positive)).sum() / math.log(len(p)), 0.0), 1.0))


def normalise(importance: np.ndarray) -> np.ndarray | None:
    """Non-negative importances (n,) -> their shares of the total, or None where there is no finite total."""
    total = importance.sum()
    if not np.isfinite(importance).all() or total <= 0:
        return None
    return importance / total


def entropy_of(importance: np.ndarray) -> float | None:
    shares = normalise(importance)
    return None if shares is None else normalised_entropy(shares)


def mean_entropy(importances: np.ndarray) -> float | None:
    """(P, n) one importance vector per p -> the mean normalised entropy over the p that are defined."""
    entropies = [e for e in (entropy_of(row) for row in importances) if e is not None]
    return float(np.mean(entropies)) if entropies else None


def sparsity_columns(
    alpha: torch.Tensor,
    mask: torch.Tensor,
    measures: dict[str, torch.Tensor],
    gh_x: torch.Tensor,
    floor: torch.Tensor,
) -> dict[str, np.ndarray]:
    """alpha, mask (B, T), `measures` {name in MEASURES: (B, T)}, gh_x (B, T, T) and the TVDs' tie `floor` (B,)
    (`ranking.tvd_floor`) -> the SCHEMA columns."""
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    present = mask.cpu().numpy()
    values = {name: _numpy(x) for name, x in measures.items()}
    floors = {"dy_x": floor, "dy_h": floor}  # the TVDs; gradient norms have no floor
    ranks = {name: _numpy(tie_ranks(x, mask, floors.get(name, 0.0))) for name, x in measures.items()}  # (B, T)
    weights = _numpy(tie_ranks(alpha, mask))  # (B, T)
    per_p = _numpy(gh_x)
    for b in range(len(weights)):
        items = present[b]
        defined = items.sum() >= 2
        for name in MEASURES:
            columns[f"entropy_{name}"].append(entropy_of(values[name][b, items]) if defined else None)
            columns[f"tau_{name}"].append(kendall(weights[b, items], ranks[name][b, items])[0] if defined else None)
        columns["entropy_gh_x"].append(mean_entropy(per_p[b][np.ix_(items, items)]) if defined else None)
    return {name: np.array(column, dtype=object) for name, column in columns.items()}


def _numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().double().cpu().numpy()


# ---- the analysis ----------------------------------------------------------------------------------------


def run(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """Two backwards for g_y, T for g_h, chunked batched deletions for D_y(x), one decode for D_y(h)."""
    model, batch, params = context.classifier, shared.batch, context.params
    measures = {
        "gy_x": input_gradient_norms(model, batch, shared),
        "dy_x": leave_one_out(model, batch, shared),
        **representation_importance(model, batch, shared, params.representation_layer, params.representation_erasure),
    }
    gh_x = representation_input_gradient_norms(model, batch, shared, params.gh_x_positions, params.representation_layer)
    return sparsity_columns(shared.alpha, shared.encoded.mask, measures, gh_x, tvd_floor(shared.probs, shared.pred))


def reference(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """The same measures one instance at a time (rebuilt with `collate`), by plain autograd through the
    softmax, one backward per p, one decode per erased representation."""
    model, mask, params = context.classifier, shared.encoded.mask, context.params
    b_size, t = mask.shape
    measures = {name: torch.zeros(b_size, t, dtype=torch.float64) for name in ("gy_x", "gy_h", "dy_h")}
    measures["dy_x"] = reference_leave_one_out(model, shared).double()
    gh_x = torch.zeros(b_size, t, t, dtype=torch.float64)
    for b in range(b_size):
        rows = instance_rows(shared.batch, b)
        alone = collate(rows, sentences="sentence_starts" in rows).to(mask.device)
        slots = mask[b].nonzero()[:, 0]  # (n,) where the instance's items sit in the batch
        values_of = _reference_instance(model, alone, int(shared.pred[b]), params)
        if params.representation_layer is not None:
            values_of |= _reference_layer(model, alone, int(shared.pred[b]), params.representation_layer)
        for name, values in values_of.items():
            if name == "gh_x":
                gh_x[b, slots[:, None], slots[None, :]] = values
            else:
                measures[name][b, slots] = values
    return sparsity_columns(shared.alpha, mask, measures, gh_x, tvd_floor(shared.probs, shared.pred))


def _reference_instance(
    model: AttentionClassifier, alone: Batch, pred: int, params: SparsityParams
) -> dict[str, torch.Tensor]:
    """One instance's gy_x, gy_h, dy_h (n,) and gh_x (n, n) over its n items (rows of p not sampled zero;
    gh_x of h as `representations` takes it, gy_h and dy_h of the final attention layer's input)."""
    with torch.enable_grad():
        embedded = model.embed(alone).detach().requires_grad_(True)
        encoded = model.encode(alone, embedded=embedded)
        items = encoded.mask[0]  # (T,)
        alpha = model.attend(encoded.h, encoded.mask, encoded.query)
        y = torch.softmax(model.decode(encoded.h, alpha.detach(), encoded.query), -1)[0, pred]
        (gradient,) = torch.autograd.grad(y, embedded, retain_graph=True)
        gy_x = gradient[0].reshape(len(items), -1).norm(dim=-1)[items]

        h = encoded.h.detach().requires_grad_(True)
        y_h = torch.softmax(model.decode(h, model.attend(h, encoded.mask, encoded.query), encoded.query), -1)
        (gradient_h,) = torch.autograd.grad(y_h[0, pred], h)
        gy_h = gradient_h[0].norm(dim=-1)[items]

        slots = items.nonzero()[:, 0]
        gh_x = [torch.zeros(len(slots), dtype=embedded.dtype) for _ in slots]
        ranks, _ = sampled_ranks(torch.tensor([len(slots)]), params.gh_x_positions)
        layer = params.representation_layer
        h_p = encoded.h if layer is None else representations(model, alone, embedded, layer)
        for rank in ranks[0].tolist():
            (g,) = torch.autograd.grad(h_p[0, slots[rank]].norm(), embedded, retain_graph=True)
            gh_x[rank] = g[0].reshape(len(items), -1).norm(dim=-1)[items]
    with torch.no_grad():
        original = torch.softmax(model.decode(encoded.h, alpha, encoded.query), -1)[0]
        dy_h = []
        for i in items.nonzero()[:, 0].tolist():
            if params.representation_erasure == "zero":  # h_i itself zeroed, attention recomputed by the model
                h = encoded.h.clone()
                h[0, i] = 0.0
                probs = torch.softmax(model.decode(h, model.attend(h, encoded.mask, encoded.query), encoded.query), -1)
            else:
                erased = alpha.clone()
                erased[0, i] = 0.0
                total = erased.sum()
                erased = erased / total if total > 0 else erased
                probs = torch.softmax(model.decode(encoded.h, erased, encoded.query), -1)
            dy_h.append(0.5 * (probs[0] - original).abs().sum())
    return {"gy_x": gy_x.double(), "gy_h": gy_h.double(), "dy_h": _stacked(dy_h, (0,)), "gh_x": _stacked(gh_x, (0, 0))}


def _reference_layer(model: AttentionClassifier, alone: Batch, pred: int, layer: int) -> dict[str, torch.Tensor]:
    """One instance's gy_h and dy_h (n,) with h the input of self-attention layer `layer`: each item deleted
    from the sequence (not masked) and the layers above it run on what is left."""
    encoder, state = layer_input(model, alone, layer)  # (1, T, hidden)
    tokens, mask = alone.ids != PAD_ID, alone.mask  # (1, T)
    with torch.enable_grad():
        state = state.detach().requires_grad_(True)
        h = encoder.run_layers(state, tokens, start=layer)
        probs = torch.softmax(model.decode(h, model.attend(h, mask)), -1)[0]
        (gradient,) = torch.autograd.grad(probs[pred], state)
    dy_h = []
    with torch.no_grad():
        for i in mask[0].nonzero()[:, 0].tolist():
            kept = torch.arange(mask.shape[1], device=mask.device) != i
            h = encoder.run_layers(state[:, kept], tokens[:, kept], start=layer)
            erased = torch.softmax(model.decode(h, model.attend(h, mask[:, kept])), -1)[0]
            dy_h.append(0.5 * (erased - probs).abs().sum())
    return {"gy_h": gradient[0].norm(dim=-1)[mask[0]].double(), "dy_h": _stacked(dy_h, (0,))}


def _stacked(values: list[torch.Tensor], empty: tuple[int, ...]) -> torch.Tensor:
    """The values stacked in float64, or a float64 tensor of shape `empty` where there are none."""
    return torch.stack(values).double() if values else torch.zeros(empty, dtype=torch.float64)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model, the mean of each column over the instances where it is defined (NaN if nowhere)."""
    return column_means(rows, SCHEMA.names)


class SparsityImportance(InstanceAnalysis[SparsityParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
