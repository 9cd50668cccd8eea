"""Integrated Gradients (Sundararajan et al. 2017) over the input embeddings, computed by Captum, as a score
per attention item (docs/analyses.md#rankings).

    >>> scores, gap = integrated_gradients(model, batch, shared, steps=50)   # (B, T), (B,)

F is the probability of the predicted class `shared.pred` computed by the whole model: unlike the gradient
importance (alpha held constant, J&W), the attention is differentiated too, since IG explains the model as
it runs. The path goes from a baseline to the input's embeddings: the baseline zeroes every item's
embedding (a flat or pair model's tokens, a HAN document's words) and leaves `<sos>`/`<eos>` and padding as
they are, so that the items' attributions alone add up to F(x) - F(baseline) (completeness). An item's score
is its attribution summed over the embedding dimensions (and over a HAN sentence's words), signed: positive
pushes toward the predicted class. A pair model's query is not on the path (it is embedded apart).
Random attention (W&P, Vashishth) does not depend on the input, but each forward would draw it anew: along
the path it is held at the draw of the shared pass, so F is the model as it ran for this instance.

The integral is Captum's Gauss-Legendre rule with `steps` points; `gap` is |sum of the attributions -
(F(x) - F(baseline))| per instance, Captum's convergence delta, which shrinks as `steps` grows. Captum runs
the steps in forwards of about `common.tokens_per_call` slots each (its `internal_batch_size`), the
instances' rows repeated once per step, on as many instances at a time as fit in one such forward:
instances never interact, so rows do not depend on the batch.
"""

from __future__ import annotations

import torch
from captum.attr import IntegratedGradients

from gridlab.analyses.common import SharedPass, tokens_per_call
from gridlab.data.batching import Batch
from gridlab.models.classifier import AttentionClassifier


def integrated_gradients(
    model: AttentionClassifier, batch: Batch, shared: SharedPass, steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores (B, T) aligned with `shared.encoded.mask`, 0 outside it; gap (B,) float64)."""
    embedded = model.embed(batch).detach()  # (B, T, d), or (B, S, W, d) for HAN
    items = _item_slots(batch)  # (B, T), or (B, S, W)
    baseline = embedded * ~items.reshape(*items.shape, *[1] * (embedded.dim() - items.dim()))  # items zeroed, markers
    # and padding kept; a pretrained encoder's (B, T, K, d) zeroes every piece of an item word
    drawn = shared.alpha.detach() if model.attention.mode == "random" else None  # see the module's docstring
    slots = embedded[0, ..., 0].numel()  # T, or S * W
    rows_per_call = max(1, tokens_per_call(embedded.device) // max(slots, 1))
    group = min(len(embedded), rows_per_call)  # instances per Captum call: it runs at least one row each
    groups = torch.arange(len(embedded)).split(group)
    parts = [_attribute(model, batch, embedded, baseline, drawn, shared.pred, g, steps, rows_per_call) for g in groups]
    attributions, delta = torch.cat([a for a, _ in parts]), torch.cat([d for _, d in parts])
    mask = shared.encoded.mask
    per_slot = attributions.sum(-1)  # (B, T) tokens, or (B, S, W) words
    scores = per_slot.reshape(*mask.shape, -1).sum(-1)  # (B, T): a HAN sentence sums its words
    return scores * mask, delta.abs().double()


def _attribute(
    model: AttentionClassifier,
    batch: Batch,
    embedded: torch.Tensor,
    baseline: torch.Tensor,
    drawn: torch.Tensor | None,
    pred: torch.Tensor,
    instances: torch.Tensor,
    steps: int,
    rows_per_call: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Captum's attributions and convergence deltas of some instances of the batch (their rows only)."""
    instances = instances.to(embedded.device)

    def probability(x: torch.Tensor) -> torch.Tensor:
        rows = instances[torch.arange(len(x), device=x.device) % len(instances)]  # Captum stacks the steps
        encoded = model.encode(batch.rows(rows), embedded=x)
        alpha = drawn[rows] if drawn is not None else model.attend(encoded.h, encoded.mask, encoded.query)
        return torch.softmax(model.decode(encoded.h, alpha, encoded.query), dim=-1)  # (n, C)

    steps_per_call = max(1, rows_per_call // len(instances))
    with torch.enable_grad():
        attributions, delta = IntegratedGradients(probability).attribute(
            embedded[instances],
            baselines=baseline[instances],
            target=pred[instances],
            n_steps=steps,
            method="gausslegendre",
            internal_batch_size=len(instances) * steps_per_call,
            return_convergence_delta=True,
        )
    return attributions.detach(), delta.detach()


def _item_slots(batch: Batch) -> torch.Tensor:
    """The embedding slots of the items: a flat or pair batch's tokens (`mask`), a HAN batch's words."""
    return batch.mask if batch.sentences is None else batch.sentences.mask
