"""The same questions asked of transformers by later papers: Abnar & Zuidema (2020), attention rollout and
flow agree with input importance better than raw attention; Neely et al. (2022), attribution methods disagree
with one another on transformers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from gridlab.catalog.analyses import RANKINGS, SELF_ATTENTION_ENCODERS
from gridlab.report.inputs import ReportInputs
from gridlab.report.stats import grouping_axes, is_null, model_axes, seed_table
from gridlab.studies.claims.base import (
    BILSTM,
    HOLDS,
    PARTLY,
    PRETRAINED,
    REVERSED,
    SHOWN,
    Claim,
    Finding,
    cells_of,
    interval,
    learned,
    ordered,
    per_configuration,
    seeds_of,
    shown_condition,
    side,
)

# ---- Abnar & Zuidema (2020) ----------------------------------------------------------------------------------

FLOWS = ("attention_rollout", "attention_flow")  # A&Z's two ways of following attention through the layers
REFERENCES = ("leave_one_out", "gradient")  # A&Z's blank-out and input gradients


def tau_column(first: str, second: str) -> str:
    """`ranking_agreement`'s column for a pair, named in the order of RANKINGS."""
    a, b = sorted((first, second), key=RANKINGS.index)
    return f"tau__{a}__{b}"


def _computed(rows: pd.DataFrame, column: str) -> bool:
    return column in rows.columns and bool(rows[column].notna().any())


def abnar_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, for each method M of FLOWS and reference R: `M__R`, the mean over instances of
    τ(M, R) − τ(attention, R) (per model, then across seeds with the interval), beside the two means of τ.
    A method the rows lack is left out; where a configuration skipped it its values are NaN."""
    pairs = [
        (m, r)
        for m in FLOWS
        for r in REFERENCES
        if _computed(rows, tau_column(m, r)) and _computed(rows, tau_column("attention", r))
    ]
    taus = {tau_column(a, r) for m, r in pairs for a in (m, "attention")}
    filled = rows.assign(
        **{c: rows[c].astype(float) for c in taus},
        **{
            f"{m}__{r}": rows[tau_column(m, r)].astype(float) - rows[tau_column("attention", r)].astype(float)
            for m, r in pairs
        },
    )
    measures = {c: (c, "mean") for c in taus} | {f"{m}__{r}": (f"{m}__{r}", "mean") for m, r in pairs}
    return seed_table(filled, model_axes(rows), measures, spread=[f"{m}__{r}" for m, r in pairs])


def abnar_rollout_flow(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("ranking_agreement"), SELF_ATTENTION_ENCODERS)
    if rows is None:
        return []
    table = abnar_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        present = [
            (m, r) for m in FLOWS for r in REFERENCES if f"{m}__{r}" in row.index and not pd.isna(row[f"{m}__{r}"])
        ]
        if not all((FLOWS[0], r) in present for r in REFERENCES):  # rollout against both references, at least
            return "", math.nan, ""
        sides = [side(row[f"{m}__{r}"], row[f"{m}__{r}_ci_low"], row[f"{m}__{r}_ci_high"], 0.0) for m, r in present]
        verdict = (
            HOLDS if all(s == "above" for s in sides) else REVERSED if all(s == "below" for s in sides) else PARTLY
        )
        parts = []
        for r in REFERENCES:
            methods = [
                f"{m.removeprefix('attention_')} {row[tau_column(m, r)]:.3f}" for m in FLOWS if (m, r) in present
            ]
            parts.append(f"with {r}: attention {row[tau_column('attention', r)]:.3f}, " + ", ".join(methods))
        missing = "" if len(present) == len(FLOWS) * len(REFERENCES) else "; flow not run"
        value = min(float(row[f"{m}__{r}"]) for m, r in present)
        return verdict, value, "mean τ " + "; ".join(parts) + missing

    return per_configuration(table, rows, decide)


# ---- Neely et al. (2022) -------------------------------------------------------------------------------------


def agreement_pairs(first: pd.DataFrame, second: pd.DataFrame) -> list[str]:
    """The τ columns of ranking pairs without `random` that both sets of rows computed."""
    columns = [tau_column(a, b) for i, a in enumerate(RANKINGS) for b in RANKINGS[i + 1 :] if "random" not in (a, b)]
    return [c for c in columns if _computed(first, c) and _computed(second, c)]


def mean_agreement(rows: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per configuration: the mean over instances of each instance's mean τ over `columns` (nulls skipped),
    per model, then across seeds with the interval."""
    filled = rows.assign(agreement=rows[list(columns)].astype(float).mean(axis=1, skipna=True))
    return seed_table(filled, model_axes(rows), {"agreement": ("agreement", "mean")})


def neely_disagreement(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("ranking_agreement"), [PRETRAINED, BILSTM])
    if rows is None:
        return []
    shown = [a for a in grouping_axes(rows, SHOWN) if a not in ("dataset", "encoder")]
    findings = []
    for dataset, group in rows.groupby("dataset", sort=True):
        pretrained, bilstm = group[group["encoder"] == PRETRAINED], group[group["encoder"] == BILSTM]
        columns = agreement_pairs(pretrained, bilstm)
        if pretrained.empty or bilstm.empty or not columns:
            continue
        for _, a in mean_agreement(pretrained, columns).iterrows():
            for _, b in mean_agreement(bilstm, columns).iterrows():
                if pd.isna(a["agreement"]) or pd.isna(b["agreement"]):
                    continue
                verdict = ordered(a, b, "agreement", "below")
                condition: dict[str, Any] = {"dataset": dataset}
                for axis in shown:
                    if (is_null(a[axis]) and is_null(b[axis])) or a[axis] == b[axis]:
                        condition[axis] = a[axis]
                    else:
                        condition |= {f"{PRETRAINED} {axis}": a[axis], f"{BILSTM} {axis}": b[axis]}
                models = (shown_condition(a, model_axes(rows)), shown_condition(b, model_axes(rows)))
                seeds = sorted({*seeds_of(rows, models[0]), *seeds_of(rows, models[1])})
                detail = (
                    f"mean pairwise τ over {len(columns)} pairs of rankings: pretrained "
                    f"{interval(a, 'agreement')}, BiLSTM {interval(b, 'agreement')}"
                )
                findings.append(
                    Finding(
                        condition,
                        tuple(seeds),
                        float(a["agreement"] - b["agreement"]),
                        verdict,
                        detail,
                        cells_of(rows, *models),
                    )
                )
    return findings


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "abnar.rollout_flow",
        "Abnar & Zuidema (2020), abstract",
        "Attention rollout and attention flow agree with input importance (blank-out, gradients) better than "
        "the raw attention weights do.",
        ("ranking_agreement",),
        "mean Kendall τ of attention rollout (and of attention flow) with leave-one-out and with gradient minus "
        "raw attention's τ with the same reference, per instance, mean per model, then across seeds "
        "(transformer and pretrained encoders, learned attention; raw attention is the `attention` ranking, the "
        "final attention layer's weights α); the value is the smallest of these differences",
        "holds when every difference lies above 0 (rollout and flow each exceed raw attention against both "
        "references); reversed when every one lies below 0 (raw attention exceeds them all); partly otherwise, "
        "a seeds' 95% interval that contains 0 included. No threshold: A&Z state a direction ('compared to raw "
        "attention, both yield higher correlations with importance scores of input tokens obtained using an "
        "ablation method and input gradients') and no margin; they report Spearman correlations, gridlab reads "
        "Kendall τ-b. A configuration without flow rows (flow is not in the analyses' default rankings: its cost "
        "grows with T³) is decided on rollout alone, and its detail says 'flow not run'.",
        "`ranking_agreement` rows of a learned-attention transformer or pretrained cell with the rankings "
        "attention, attention_rollout, leave_one_out and gradient (attention_flow as well for the full claim, "
        "as grids/faithfulness.yaml asks)",
        abnar_rollout_flow,
    ),
    Claim(
        "neely.disagreement",
        "Neely et al. (2022)",
        "Attribution methods disagree with one another on transformer models.",
        ("ranking_agreement",),
        "mean over instances of each instance's mean pairwise Kendall τ among the rankings both models computed "
        "(random excluded), per model, mean across seeds, on the pretrained encoder; the value is it minus the "
        "BiLSTM's (lstm) on the same dataset",
        "holds when the pretrained encoder's 95% seed interval lies wholly below the BiLSTM's (the rankings "
        "disagree more on the transformer); reversed when wholly above; partly when the intervals overlap (one "
        "seed: its mean). This is gridlab's operational reading: Neely et al. report low agreement between "
        "explanation methods on fine-tuned transformers and do not compare them with BiLSTMs; the comparison "
        "with the BiLSTM is the one issue 46 asked for, and no threshold is the paper's.",
        "`ranking_agreement` rows of a learned-attention pretrained cell and a learned-attention lstm cell on "
        "the same dataset, in one grid, with two or more rankings besides random",
        neely_disagreement,
    ),
)
