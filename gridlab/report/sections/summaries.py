"""Every analysis's per-model summary, one table per analysis: what `summarize` computed for each trained
cell (summary.parquet), so that an analysis no paper section reads, a plug-in's included, still shows in
the report.

    >>> out = SECTION.build(inputs)    # Table "summary_<analysis>" for each analysis with summary columns

Rows are cells (one per seed); the configuration axes that vary are columns, the constant ones are named
in the caption. Numbers are as summary.parquet holds them: the paper sections aggregate across seeds. A
cell that did not measure a number (a ranking it was not asked for) shows a blank, never 0.
"""

from __future__ import annotations

from gridlab.report.artifacts import Artifact, SectionOutput, Table
from gridlab.report.sections import Section
from gridlab.report.stats import configuration_axes, constant_axes, grouping_axes
from gridlab.store.layout import SUMMARY


def build(inputs) -> SectionOutput:
    summary = inputs.summary
    if summary is None or summary.empty:
        return SectionOutput([], [f"summaries: no {SUMMARY} yet (written by `gridlab launch` and `analyze`)"])
    cells = inputs.cells  # one row per trained cell: its axes and the settings that vary in the grid
    configuration = cells[[c for c in ("cell_id", *configuration_axes(cells), "seed") if c in cells.columns]]
    tables: list[Artifact] = []
    for analysis_id in inputs.grid.analyses:
        metrics = [c for c in summary.columns if c.startswith(f"{analysis_id}.")]
        values = summary[["cell_id", *metrics]].dropna(subset=metrics, how="all") if metrics else summary.iloc[0:0]
        rows = configuration.merge(values, on="cell_id")
        if rows.empty:
            continue
        # a number none of these cells measured (a ranking only cells outside the grid asked for) is no column;
        # one that some did shows blank ('–') for the others, never 0
        metrics = [m for m in metrics if rows[m].notna().any()]
        axes = [*grouping_axes(rows[configuration.columns]), "seed"]
        frame = rows[["cell_id", *axes, *metrics]].rename(columns=lambda c: c.removeprefix(f"{analysis_id}."))
        frame = frame.sort_values([*axes, "cell_id"], kind="stable").reset_index(drop=True)
        constant = constant_axes(rows[configuration.columns], axes)
        tables.append(
            Table(
                f"summary_{analysis_id}",
                f"{analysis_id}: per-model summary",
                frame,
                caption=f"One row per trained cell{f' ({constant})' if constant else ''}; "
                f"the numbers of the analysis's `summarize`, as {SUMMARY} holds them.",
            )
        )
    return SectionOutput(tables)


SECTION = Section(
    id="summaries",
    title="Every analysis, per model",
    analyses=(),  # reads summary.parquet: shown for any grid whose analyses have run
    build=build,
)
