"""Rationale recovery (gridlab's own, docs/analyses.md#rationale_recovery): where the tokens that decide the
label are known (the synthetic planted-token task, movie reviews with annotator rationales), how well does
each importance ranking (attention, gradient, gradient × attention, leave-one-out) put them on top?

    >>> output = SECTION.build(ReportInputs.load(expanded))

Per model: the mean ROC AUC of each ranking's scores against the rationale flags and the mean precision@k
for each k (nulls, i.e. instances without a rationale item or with non-finite scores, left out), then mean ±
std across seeds. The chance level of precision@k is about the share of rationale items in an instance
(P / T), shown beside; an AUC's chance level is 0.5.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gridlab.catalog.analyses import RANKINGS
from gridlab.report.artifacts import Figure, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.plots import facet
from gridlab.report.sections import Section
from gridlab.report.stats import ci, constant_axes, grouping_axes, merge_on, model_axes, pm, seed_table


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def computed_rankings(rows: pd.DataFrame) -> list[str]:
    """The rankings that were requested (a ranking not requested is null on every row)."""
    return [
        r
        for r in RANKINGS
        if f"auc_{r}" in rows.columns
        and (rows[f"auc_{r}"].notna().any() or rows[f"precision_at_k_{r}"].map(lambda v: not _missing(v)).any())
    ]


def precision_long(rows: pd.DataFrame, rankings: list[str]) -> pd.DataFrame:
    """One row per (instance, ranking, k) with its precision; instances whose list is null are left out."""
    keep = [*model_axes(rows), "cell_id", "seed", "instance_id"]
    records = []
    for ranking in rankings:
        for base, ks, values in zip(
            rows[keep].itertuples(index=False, name=None), rows["ks"], rows[f"precision_at_k_{ranking}"]
        ):
            if _missing(values):
                continue
            for k, value in zip(ks, values):
                records.append((*base, ranking, int(k), float(value)))
    return pd.DataFrame.from_records(records, columns=[*keep, "ranking", "k", "precision"])


def recovery_frame(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """Per configuration and ranking: auc and precision_at_<k> (mean per cell, then across seeds, with
    seed sd and interval for each), and chance_precision (mean P / T per cell over instances with P > 0)."""
    axes = model_axes(rows)
    rankings = computed_rankings(rows)
    auc = pd.concat([rows.assign(ranking=r, auc=rows[f"auc_{r}"].astype(float)) for r in rankings], ignore_index=True)
    chance = (rows["rationale_tokens"] / rows["length"]).where(rows["rationale_tokens"] > 0)
    auc = auc.assign(chance=pd.concat([chance] * len(rankings), ignore_index=True))
    table = seed_table(
        auc, [*axes, "ranking"], {"auc": ("auc", "mean"), "chance_precision": ("chance", "mean")}, spread=["auc"]
    )
    long = precision_long(rows, rankings)
    ks = sorted(long["k"].unique().tolist()) if len(long) else []
    for k in ks:
        at_k = seed_table(long[long["k"] == k], [*axes, "ranking"], {f"precision_at_{k}": ("precision", "mean")})
        table = merge_on(table, at_k.drop(columns=["n_seeds", "n_instances"]), [*axes, "ranking"])
    order = {name: i for i, name in enumerate(RANKINGS)}
    table = table.sort_values(
        [*axes, "ranking"], key=lambda c: c.map(order) if c.name == "ranking" else c, kind="stable"
    ).reset_index(drop=True)
    columns = [
        *axes,
        "ranking",
        "auc",
        "auc_seed_sd",
        "auc_ci_low",
        "auc_ci_high",
        *[
            c
            for k in ks
            for c in (
                f"precision_at_{k}",
                f"precision_at_{k}_seed_sd",
                f"precision_at_{k}_ci_low",
                f"precision_at_{k}_ci_high",
            )
        ],
        "chance_precision",
        "n_seeds",
        "n_instances",
    ]
    return table[columns], ks


def recovery_table(rows: pd.DataFrame) -> Table:
    frame, ks = recovery_frame(rows)
    shown = grouping_axes(rows)
    display = frame[[*shown, "ranking"]].copy()
    display["AUC"] = pm(frame, "auc", digits=3)
    display["AUC 95% CI"] = ci(frame, "auc", digits=3)
    for k in ks:
        display[f"P@{k}"] = pm(frame, f"precision_at_{k}", digits=3)
    display["chance P (P/T)"] = frame["chance_precision"].round(3)
    display["seeds"] = frame["n_seeds"]
    display["instances"] = frame["n_instances"]
    fixed = constant_axes(rows, shown)
    caption = (
        "How well each importance ranking recovers the known rationale tokens (items of the final "
        "attention layer; HAN: sentences). AUC: share of (rationale, other) item pairs ordered correctly, "
        "0.5 = chance. P@k: share of rationale items among the top min(k, T) items. Mean over a model's "
        "instances (those without a rationale item left out), then mean ± std across seeds; "
        "chance P: the mean share of rationale items, what a random ranking would get."
        + (f" All rows: {fixed}." if fixed else "")
    )
    return Table("rationale_recovery", "Rationale recovery: AUC and precision@k per ranking", frame, caption, display)


def auc_figure(rows: pd.DataFrame) -> Figure:
    rankings = computed_rankings(rows)

    def draw(ax, panel: pd.DataFrame) -> None:
        data = [panel[f"auc_{r}"].dropna().astype(float).to_numpy() for r in rankings]
        ax.boxplot(data, whis=1.5, showfliers=False)
        ax.axhline(0.5, color="#888888", linewidth=0.7, linestyle="--")
        ax.set_xticks(
            range(1, len(rankings) + 1),
            [r.replace("grad_x_attention", "grad×att").replace("leave_one_out", "LOO") for r in rankings],
            rotation=30,
            fontsize=7,
        )
        ax.set_ylim(0, 1.02)

    figure = facet(rows, draw, "Rationale recovery: AUC per ranking", ylabel="AUC", sharex=False)
    return Figure(
        "rationale_auc",
        "Rationale recovery: AUC per ranking",
        figure,
        "Boxplots per configuration (seeds pooled) of each instance's AUC; dashed: chance (0.5).",
    )


def build(inputs: ReportInputs) -> SectionOutput:
    rows = inputs.rows("rationale_recovery")
    if rows is None:
        return SectionOutput(
            [], ["rationale recovery needs `rationale_recovery` rows (datasets with rationales: synthetic, movies)"]
        )
    if not computed_rankings(rows):
        return SectionOutput([], ["rationale recovery: every metric is null (no instance has a rationale item)"])
    return SectionOutput([recovery_table(rows), auc_figure(rows)], [])


SECTION = Section(
    id="rationale",
    title="Rationale recovery (gridlab): do importance rankings find the known rationale?",
    analyses=("rationale_recovery",),
    build=build,
)
