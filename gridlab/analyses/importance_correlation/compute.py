"""`importance_correlation` — Jain & Wallace §4.1, Algorithm 1 (docs/analyses.md#importance_correlation):
does attention rank the inputs as the gradient and leave-one-out importance measures do?

    >>> context = AnalysisContext(cell_id, model.eval(), device, NoParams())
    >>> columns = importance_correlation.run(context, forward_once(model, batch))
    >>> columns["tau_g"], columns["p_g"]          # (B,) floats or None: Kendall tau-b of alpha with g, its p
    >>> columns["tau_loo"], columns["p_loo"]      # (B,) the same with leave-one-out TVDs

Per instance, over the items of the final attention layer (`shared.encoded.mask`: tokens, the premise's
tokens for pair tasks, sentences for HAN): `g_t = |grad_{e_t} y . e_t|` with alpha held constant and
`d_t = TVD(y(x_-t), y(x))` with item t deleted (see `gridlab.analyses.importance` for both, batched), then
`scipy.stats.kendalltau(alpha, g, variant="b")` and likewise with d, with the two-sided p-values scipy gives.

The columns are float64 in the schema; the arrays `run` returns are object arrays holding None (an Arrow
null, as every analysis writes a missing value; never NaN) where tau-b is undefined: fewer than 2 items, a
constant alpha (uniform attention) or a constant importance vector (all its values tie under the rule below;
tau-b's denominator is 0, scipy would return NaN with a warning), or a non-finite importance value (uniform
or random attention over an empty shortened sequence gives 0/0). The g and d pairs are null independently.

alpha, g and d are ranked by the tie rule of `gridlab.analyses.ranking` before tau is taken: per instance,
values within 1e-5 of the instance's largest |value| of each other tie (for d also within 2e-6 of 1 - y, the
probability mass the TVD is taken from). Mathematically tied items (deleting either copy of a repeated token
under the order-free `average`/`noenc` encoders) then tie in every computation, where float32 noise would
otherwise order them differently from one batch composition or thread count to the next. Tau-b and its p-value
depend on ranks and ties only, so the tie ranks stand in for the values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from scipy.stats import kendalltau

from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import SharedPass, measured
from gridlab.analyses.importance import (
    gradient_importance,
    leave_one_out,
    reference_gradient_importance,
    reference_leave_one_out,
)
from gridlab.analyses.importance_correlation import INFO, SCHEMA
from gridlab.analyses.ranking import tie_ranks, tvd_floor
from gridlab.catalog.analyses import NoParams

ID = "importance_correlation"
VERSION = 1


def run(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """One backward for the gradients and chunked batched forwards for all deletions; scipy per instance."""
    model = context.classifier
    g = gradient_importance(model, shared.batch, shared)
    d = leave_one_out(model, shared.batch, shared)
    return correlation_columns(shared.alpha, shared.encoded.mask, g, d, tvd_floor(shared.probs, shared.pred))


def reference(context: AnalysisContext, shared: SharedPass) -> dict[str, np.ndarray]:
    """Algorithm 1 as written: each instance alone, one backward each, one forward per deleted item."""
    model = context.classifier
    g = reference_gradient_importance(model, shared)
    d = reference_leave_one_out(model, shared)
    return correlation_columns(shared.alpha, shared.encoded.mask, g, d, tvd_floor(shared.probs, shared.pred))


def correlation_columns(
    alpha: torch.Tensor, mask: torch.Tensor, g: torch.Tensor, d: torch.Tensor, d_floor: torch.Tensor
) -> dict[str, np.ndarray]:
    """alpha, g, d (B, T), mask (B, T) and d's tie floor (B,) (`ranking.tvd_floor`) -> the SCHEMA columns,
    each a (B,) object array of floats and None. The vectors are tie-ranked first (batched), then scipy runs
    per instance."""
    weights, gradient = _numpy(tie_ranks(alpha, mask)), _numpy(tie_ranks(g, mask))  # (B, T) each, NaN: no rank
    loo = _numpy(tie_ranks(d, mask, d_floor))  # (B, T)
    rows = []
    for a, b, c, present in zip(weights, gradient, loo, mask.cpu().numpy()):
        rows.append((*kendall(a[present], b[present]), *kendall(a[present], c[present])))
    return {name: np.array([row[i] for row in rows], dtype=object) for i, name in enumerate(SCHEMA.names)}


def kendall(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | tuple[None, None]:
    """(tau-b, two-sided p) of two equally long vectors, taken as they are (the analyses pass `tie_ranks`);
    (None, None) where tau-b is undefined: under 2 items, a NaN or infinite value, or a constant vector."""
    if len(a) < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()) or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None, None
    result = kendalltau(a, b, variant="b")
    return float(result.statistic), float(result.pvalue)


def _numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().double().cpu().numpy()


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model, J&W Table 2's numbers: mean and std of tau and the share significant (p < 0.05), for the
    gradient and leave-one-out, over all instances and per predicted class (their class 0 / class 1)."""
    summary: dict[str, float] = {}
    groups = [("", rows)] + [(f"_class{int(k)}", g) for k, g in rows.groupby("pred")]
    for suffix, group in groups:
        for measure in ("g", "loo"):
            tau = group[f"tau_{measure}"].dropna().astype(float)
            p = group[f"p_{measure}"].dropna().astype(float)
            summary[f"tau_{measure}_mean{suffix}"] = tau.mean()
            summary[f"tau_{measure}_std{suffix}"] = tau.std(ddof=0)
            summary[f"sig_{measure}{suffix}"] = (p < 0.05).mean()
    return measured(summary)  # a class the model never predicts has no rows, a measure never defined no entry


class ImportanceCorrelation(InstanceAnalysis[NoParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
