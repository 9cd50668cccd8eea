"""Meister et al. (2021), "Is Sparse Attention more Interpretable?": inputs and intermediate representations
are not interchangeable (§4, Table 1), and sparse attention does not track input importance better (Fig. 3).
"""

from __future__ import annotations

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.report.stats import grouping_axes, model_axes
from gridlab.studies.claims.base import (
    HOLDS,
    PARTLY,
    REVERSED,
    SHOWN,
    SIGN,
    Claim,
    Finding,
    against,
    apart,
    cells_of,
    interval,
    learned,
    per_configuration,
    seeds_of,
    shown_condition,
)
from gridlab.studies.sections.meister import entropy_frame, tau_frame


def meister_input_vs_intermediate(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("sparsity_importance"))
    if rows is None:
        return []
    table = entropy_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        entropy = row["entropy_gh_x"]
        return against(row, "entropy_gh_x", 0.5, "above"), entropy, f"mean normalised entropy H(g_h(x)) {entropy:.3f}"

    return per_configuration(table, rows, decide)


def meister_sparsity(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("sparsity_importance"))
    if rows is None:
        return []
    table = tau_frame(rows)
    shared = [a for a in model_axes(table) if a not in ("projection", "projection_lambda")]
    shown = [a for a in grouping_axes(rows, SHOWN) if a not in ("projection", "projection_lambda")]
    findings = []
    for _, group in table.groupby(shared, dropna=False, sort=True):
        dense = group[group["projection"] == "softmax"]
        sparse = group[(group["projection"] != "softmax") & group["tau_gy_x"].notna()]
        if len(dense) != 1 or sparse.empty or pd.isna(dense["tau_gy_x"].iloc[0]):
            continue
        softmax = dense.iloc[0]
        differences = sparse["tau_gy_x"] - softmax["tau_gy_x"]
        sides = [apart(row, softmax, "tau_gy_x") for _, row in sparse.iterrows()]
        verdict = HOLDS if set(sides) == {"below"} else REVERSED if set(sides) == {"above"} else PARTLY
        names = [_projection(p, lam) for p, lam in zip(sparse["projection"], sparse["projection_lambda"])]
        detail = f"mean τ(α, g_y(x)): softmax {interval(softmax, 'tau_gy_x')}; " + ", ".join(
            f"{name} {interval(row, 'tau_gy_x')} ({SIGN[where]} softmax)"
            for name, (_, row), where in zip(names, sparse.iterrows(), sides)
        )
        key = shown_condition(softmax, shared)
        condition = shown_condition(softmax, shown)
        value = float(differences.max())
        findings.append(Finding(condition, seeds_of(rows, key), value, verdict, detail, cells_of(rows, key)))
    return findings


def _projection(name: str, lam: float) -> str:
    return name if pd.isna(lam) else f"{name} λ={lam:g}"


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "meister.input_vs_intermediate",
        "Meister et al. (2021) §4, Table 1",
        "Inputs and intermediate representations are not interchangeable: each representation draws on many inputs.",
        ("sparsity_importance",),
        "mean normalised entropy of the gradient importance of the inputs for each representation, "
        "H(g_h(x)) in [0, 1], per model, mean across seeds",
        "holds when it lies in the upper half of [0, 1] ('consistently high entropy', §4; 1 = all inputs "
        "equally, 0 = one input), i.e. above 0.5; reversed below; partly when the seeds' interval contains 0.5.",
        "`sparsity_importance` rows of any learned-attention classifier",
        meister_input_vs_intermediate,
    ),
    Claim(
        "meister.sparsity",
        "Meister et al. (2021) §4, Fig. 3, Table 6",
        "Sparse attention does not track input importance better than softmax attention.",
        ("sparsity_importance",),
        "largest mean τ(α, g_y(x)) of a sparse projection (sparsemax, entmax15, sparsegen at each λ) minus "
        "softmax's, on the same dataset, encoder and attention, mean across seeds",
        "holds when every sparse projection's 95% seed interval of τ lies wholly below softmax's; reversed when "
        "every one lies wholly above; partly otherwise (an interval that overlaps softmax's included). No "
        "threshold: Fig. 3 states a direction ('a downward trend in this correlation as λ is increased').",
        "`sparsity_importance` rows of a softmax cell and a sparse-projection cell on the same dataset",
        meister_sparsity,
    ),
)
