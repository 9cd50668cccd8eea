"""The per-model summaries section: one table per analysis with summary numbers, a row per trained cell,
the configuration axes that vary as columns (a dotted setting such as `model.embedding_dim` included), the
summary's `<analysis>.<metric>` columns under their metric names, never mistaken for settings."""

from __future__ import annotations

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.report.render import markdown_table
from gridlab.report.sections import summaries

SPEC = {
    "name": "s",
    "grid": {"dataset": ["synthetic"], "encoder": ["lstm"], "model.embedding_dim": [8, 16], "seed": [0, 1]},
    "analyses": {"permutation": {"n": 10}, "erasure_single": {}},
}


def test_one_table_per_analysis_with_the_cells_settings(synthetic_grid):
    grid = synthetic_grid(SPEC)
    cells = grid.expanded.cells
    for cell in cells:
        grid.write_trained(cell, test_accuracy=0.5)
    records = [
        {"grid": "s", "cell_id": cell.id, "permutation.tvd_median_median": 0.1 * n, "permutation.instances": 10.0}
        for n, cell in enumerate(cells)
    ]
    path = grid.expanded.workspace.summary
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame.from_records(records).to_parquet(path)

    output = summaries.SECTION.build(ReportInputs(grid.expanded))
    (table,) = output.artifacts  # erasure_single has no summary numbers: no table for it
    assert table.id == "summary_permutation"
    frame = table.frame
    assert list(frame.columns) == [
        "cell_id",
        "dataset",
        "encoder",
        "model.embedding_dim",
        "seed",
        "tvd_median_median",
        "instances",
    ]
    expected = {r["cell_id"]: r["permutation.tvd_median_median"] for r in records}
    assert dict(zip(frame["cell_id"], frame["tvd_median_median"])) == expected
    by_cell = {c.id: (str(c.config.model.embedding_dim), c.config.seed) for c in cells}  # settings as text
    assert dict(zip(frame["cell_id"], zip(frame["model.embedding_dim"], frame["seed"]))) == by_cell


def test_without_a_summary(synthetic_grid):
    output = summaries.SECTION.build(ReportInputs(synthetic_grid(SPEC).expanded))
    assert output.artifacts == [] and "no summary.parquet yet" in output.missing[0]


def test_a_number_a_cell_did_not_measure_is_blank_never_zero(synthetic_grid):
    """summary.parquet holds a null where a cell did not measure a number (its grid did not ask for that
    ranking); a number no cell of this grid measured (only a cell outside it did) is no column at all."""
    grid = synthetic_grid(SPEC)
    cells = grid.expanded.cells
    for cell in cells:
        grid.write_trained(cell, test_accuracy=0.5)
    records = [
        {"grid": "s", "cell_id": cell.id, "erasure_single.flip_both": 0.25}
        | ({"erasure_single.delta_js_negative": 0.5} if n == 0 else {})
        for n, cell in enumerate(cells)
    ] + [{"grid": "s", "cell_id": "elsewhere", "erasure_single.flip_neither": 0.75}]
    path = grid.expanded.workspace.summary
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame.from_records(records).to_parquet(path)

    (table,) = summaries.SECTION.build(ReportInputs(grid.expanded)).artifacts
    assert "flip_neither" not in table.frame.columns
    first = cells[0].id
    shown = dict(zip(table.frame["cell_id"], table.frame["delta_js_negative"]))
    assert shown[first] == 0.5 and all(pd.isna(v) for cell_id, v in shown.items() if cell_id != first)
    lines = markdown_table(table.frame).splitlines()[2:]
    assert sum(line.split(" | ")[-1] == "– |" for line in lines) == len(cells) - 1  # blank, not 0.000
