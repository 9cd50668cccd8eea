"""Faithfulness and agreement of rankings (gridlab's own, docs/analyses.md#eraser and #ranking_agreement):
ERASER's AOPC per ranking side by side (DeYoung et al. 2020), and how much the rankings agree with one
another on the same instances (the "disagreement problem").

    >>> output = SECTION.build(ReportInputs.load(expanded))

- AOPC table, one row per configuration (dataset x encoder x ...) and ranking: the mean AOPC of
  comprehensiveness (higher: removing the ranking's top items hurts the prediction more) and of sufficiency
  (lower: its top items alone keep the prediction), per model over its instances, then mean ± std across
  seeds; and the integrated gradients' mean completeness gap where they ran.
- Agreement heatmap, one panel per configuration: the mean Kendall tau-b between every pair of rankings
  (per model over instances, then over seeds), the top-k overlap in the CSV beside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gridlab.catalog.analyses import RANKINGS
from gridlab.report.artifacts import Figure, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.plots import facet
from gridlab.report.sections import Section
from gridlab.report.stats import constant_axes, grouping_axes, model_axes, pm, seed_table

KINDS = ("comprehensiveness", "sufficiency")


def _computed(rows: pd.DataFrame, column: str) -> bool:
    return column in rows.columns and bool(rows[column].notna().any())


def aopc_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and ranking: aopc_comprehensiveness and aopc_sufficiency (mean per cell, then
    across seeds, with seed sd and interval), n_seeds, n_instances."""
    axes = model_axes(rows)
    rankings = [r for r in RANKINGS if _computed(rows, f"aopc_comprehensiveness_{r}")]
    long = pd.concat(
        [
            rows.assign(
                ranking=r,
                **{f"aopc_{kind}": rows[f"aopc_{kind}_{r}"].astype(float) for kind in KINDS},
            )
            for r in rankings
        ],
        ignore_index=True,
    )
    long = long[long["aopc_comprehensiveness"].notna()]
    measures = {f"aopc_{kind}": (f"aopc_{kind}", "mean") for kind in KINDS}
    table = seed_table(long, [*axes, "ranking"], measures)
    order = {name: i for i, name in enumerate(RANKINGS)}
    return table.sort_values(
        [*axes, "ranking"], key=lambda c: c.map(order) if c.name == "ranking" else c, kind="stable"
    ).reset_index(drop=True)


def aopc_table(rows: pd.DataFrame) -> Table:
    frame = aopc_frame(rows)
    shown = grouping_axes(rows)
    display = frame[[*shown, "ranking"]].copy()
    display["comprehensiveness AOPC ↑"] = pm(frame, "aopc_comprehensiveness", digits=3)
    display["sufficiency AOPC ↓"] = pm(frame, "aopc_sufficiency", digits=3)
    display["seeds"] = frame["n_seeds"]
    display["instances"] = frame["n_instances"]
    bins = sorted({float(b) for row_bins in rows["bins"] for b in row_bins})
    gap = rows["integrated_gradients_gap"].dropna().astype(float)
    fixed = constant_axes(rows, shown)
    caption = (
        "ERASER faithfulness per ranking (DeYoung et al. 2020). For bins of "
        + ", ".join(f"{100 * b:g}%" for b in bins)
        + " of the items, comprehensiveness = p(ŷ|x) − p(ŷ|x without the ranking's top items), sufficiency = "
        "p(ŷ|x) − p(ŷ|the top items only); AOPC averages the bins. Per model over its instances, then mean ± "
        "std across seeds."
        + (f" Integrated gradients' completeness gap: mean {gap.mean():.2g}, max {gap.max():.2g}." if len(gap) else "")
        + (f" All rows: {fixed}." if fixed else "")
    )
    return Table("eraser_aopc", "ERASER: comprehensiveness and sufficiency AOPC per ranking", frame, caption, display)


def agreement_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and ordered pair (first, second) of rankings computed there: tau and overlap (mean
    per cell, then across seeds), both directions listed (the matrix is symmetric), no diagonal. A pair with
    a ranking the configuration skipped (rollout on a BiLSTM) has no row."""
    axes = model_axes(rows)
    records = []
    for first in RANKINGS:
        for second in RANKINGS:
            a, b = sorted((first, second), key=RANKINGS.index)
            if a == b:
                continue
            tau, overlap = f"tau__{a}__{b}", f"overlap__{a}__{b}"
            if not _computed(rows, overlap):
                continue
            records.append(
                rows.assign(
                    first=first, second=second, tau=rows[tau].astype(float), overlap=rows[overlap].astype(float)
                )
            )
    if not records:
        return pd.DataFrame()
    long = pd.concat(records, ignore_index=True)
    long = long[long["overlap"].notna()]  # instances of a configuration that skipped one of the two
    if long.empty:
        return pd.DataFrame()
    return seed_table(long, [*axes, "first", "second"], {"tau": ("tau", "mean"), "overlap": ("overlap", "mean")})


def agreement_table(rows: pd.DataFrame, frame: pd.DataFrame) -> Table:
    """Each unordered pair once (first before second in the rankings' order); the CSV keeps both directions."""
    shown = grouping_axes(rows)
    place = {name: i for i, name in enumerate(RANKINGS)}
    once = frame[frame["first"].map(place) < frame["second"].map(place)].sort_values(
        [*model_axes(rows), "first", "second"], key=lambda c: c.map(place) if c.name in ("first", "second") else c
    )
    display = once[[*shown, "first", "second"]].copy()
    display["Kendall τ-b"] = pm(once, "tau", digits=3)
    display["top-k overlap"] = pm(once, "overlap", digits=3)
    display["seeds"] = once["n_seeds"]
    fixed = constant_axes(rows, shown)
    caption = (
        "Agreement between rankings on the same instances: Kendall τ-b of their tie-ranked scores and the "
        "shared share of their top-k items, per model over instances, then mean ± std across seeds. Each pair "
        "once; rankings a configuration skips are left out." + (f" All rows: {fixed}." if fixed else "")
    )
    return Table("ranking_agreement", "Agreement between rankings", frame, caption, display)


def agreement_figure(rows: pd.DataFrame, frame: pd.DataFrame) -> Figure:
    axes = model_axes(rows)

    def draw(ax, panel: pd.DataFrame) -> None:
        key = panel[axes].drop_duplicates().iloc[0]
        match = np.logical_and.reduce([(frame[a] == key[a]) | (frame[a].isna() & pd.isna(key[a])) for a in axes])
        cells = frame[match & frame["tau"].notna()]  # a ranking this configuration skipped has no pairs
        names = [r for r in RANKINGS if r in set(cells["first"])]
        matrix = np.eye(len(names))
        for _, row in cells.iterrows():
            matrix[names.index(row["first"]), names.index(row["second"])] = row["tau"]
        image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
        labels = [n.replace("_", " ") for n in names]
        ax.set_xticks(range(len(names)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(names)), labels, fontsize=7)
        for i in range(len(names)):
            for j in range(len(names)):
                ink = "white" if abs(matrix[i, j]) > 0.6 else "black"
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=6, color=ink)
        ax.figure.colorbar(image, ax=ax, shrink=0.7)

    # a panel wide enough for every ranking's cell to hold its two decimals at 6 pt
    figure = facet(rows, draw, "Kendall τ-b between rankings", sharex=False, max_cols=2, panel_size=(5.6, 5.0))
    return Figure(
        "ranking_agreement_heatmap",
        "Agreement between rankings (Kendall τ-b)",
        figure,
        "Mean Kendall τ-b between every pair of rankings per configuration (per model over instances, then "
        "over seeds); 1 on the diagonal.",
    )


def build(inputs: ReportInputs) -> SectionOutput:
    outputs: list = []
    notes = []
    eraser = inputs.rows("eraser")
    if eraser is None:
        notes.append("faithfulness needs `eraser` rows")
    else:
        outputs.append(aopc_table(eraser))
    agreement = inputs.rows("ranking_agreement")
    if agreement is None:
        notes.append("the agreement heatmap needs `ranking_agreement` rows")
    else:
        frame = agreement_frame(agreement)
        if len(frame):
            outputs += [agreement_table(agreement, frame), agreement_figure(agreement, frame)]
        else:
            notes.append("ranking agreement: no pair of rankings was computed")
    return SectionOutput(outputs, notes)


SECTION = Section(
    id="faithfulness",
    title="Faithfulness (gridlab): ERASER's AOPC and the agreement between rankings",
    analyses=("eraser", "ranking_agreement"),
    build=build,
)
