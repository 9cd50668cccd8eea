"""`adversary_tradeoff` (Wiegreffe & Pinter §4; docs/analyses.md#adversary_tradeoff): how much a model-consistent
adversary's outputs must move for its attention to move. One unfrozen adversary per weight `lam` of the attention
term, each scored on the test split by the JSD of its attention from the base model's and the TVD of its outputs;
read beside `seed_variance` (how far another seed's attention and outputs lie), the points show whether attention
can move past a seed's at a seed's output change. Per model, one row per `lam`.

    >>> rows = run_model(context, data)   # {"lam": [0.0001, ..., 1.0], "jsd_mean": [...], "tvd_mean": [...]}

Each adversary is `adversarial_model`'s `unfrozen` variant at that `lam`, trained by the same function with the
same seeds (so the row at `adversarial_model`'s own `lam` is its `unfrozen` row); the base model's side is
computed once for all of them.
"""

from __future__ import annotations

import math

import pandas as pd

from gridlab.analyses.adversarial_model import AdversarialModelParams
from gridlab.analyses.adversarial_model.compute import (
    References,
    base_references,
    compare_on_test,
    fit_adversary,
    with_params,
)
from gridlab.analyses.adversary_tradeoff import INFO, SCHEMA, AdversaryTradeoffParams
from gridlab.analyses.base import AnalysisContext, ModelAnalysis
from gridlab.analyses.common import columns_of, measured
from gridlab.data.prepare import PreparedDataset

ID = "adversary_tradeoff"
VERSION = 1

Context = AnalysisContext[AdversaryTradeoffParams]


def adversary_context(context: Context, lam: float) -> AnalysisContext[AdversarialModelParams]:
    """`adversarial_model`'s context for its unfrozen variant at `lam`, with this analysis's training settings."""
    p = context.params
    params = AdversarialModelParams(variants=["unfrozen"], lam=lam, epochs=p.epochs, lr=p.lr, divergence=p.divergence)
    return with_params(context, params)


def point(context: Context, data: PreparedDataset, lam: float, references: References) -> dict:
    """One row: the adversary trained at `lam`, scored on the test split."""
    adversarial = adversary_context(context, lam)
    adversary, epochs_trained, best_epoch = fit_adversary(adversarial, data, "unfrozen", references)
    scores = compare_on_test(adversary, adversarial, data, references["test"])
    return {
        "lam": lam,
        **scores,
        "epochs_trained": epochs_trained,
        "best_epoch": best_epoch,
        "instances": data.splits["test"].num_rows,
    }


def run_model(context: Context, data: PreparedDataset) -> dict[str, list]:
    references = base_references(adversary_context(context, 0.0), data)
    return columns_of([point(context, data, lam, references) for lam in sorted(context.params.lams)], SCHEMA)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """The span the sweep covers; nothing for no rows (no adversary was scored)."""
    jsd, tvd = rows["jsd_mean"].astype(float), rows["tvd_mean"].astype(float)
    return measured(
        {
            "lams": float(jsd.notna().sum()) if jsd.notna().any() else math.nan,
            "jsd_mean_min": jsd.min(),
            "jsd_mean_max": jsd.max(),
            "tvd_mean_min": tvd.min(),
            "tvd_mean_max": tvd.max(),
        }
    )


class AdversaryTradeoff(ModelAnalysis[AdversaryTradeoffParams]):
    info = INFO
    version = VERSION
    run_model, summarize = staticmethod(run_model), staticmethod(summarize)
