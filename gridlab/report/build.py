"""A report over a grid's Parquet rows: every section it is given, rendered into one folder (default
`results_dir/<grid>/report/`), after the results its caller made before them (`lead`: the claims and fidelity
tables of `gridlab.studies.report`, which builds `gridlab report`).

    >>> summary = build_report(ReportInputs.load(grid), load_sections())
    >>> summary.out, summary.tables, summary.figures, summary.missing

A section none of whose analyses has rows is listed under "missing" (with what to run), not rendered empty; a
section that has rows but fails raises, and no report is written: a report that silently drops a paper would
read as if that paper's analyses had nothing to show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gridlab.catalog.analyses import ANALYSES
from gridlab.report.artifacts import Figure, Fragment, Provenance, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.render import SectionResult, render_report
from gridlab.report.sections import Section
from gridlab.store.provenance import grid_hash, gridlab_commit
from gridlab.text import counted


@dataclass(frozen=True)
class ReportSummary:
    out: Path
    tables: int
    figures: int
    fragments: int
    sections: list[str]  # ids of the rendered sections
    missing: list[str]  # "<section title>: <what is missing and how to get it>"

    @property
    def index(self) -> Path:
        return self.out / "index.html"


def analysis_missing(analysis_id: str, inputs: ReportInputs) -> str:
    """Why an analysis has no rows, and what to run."""
    grid_file = inputs.grid.file
    if not inputs.requested(analysis_id):
        return (
            f"{analysis_id}: not run — add `{analysis_id}: {{}}` to `analyses:` in {grid_file} "
            f"and run `gridlab analyze {grid_file}`"
        )
    info = ANALYSES.get(analysis_id)
    configs = [cell.config for cell in inputs.grid.cells]
    if info is not None and configs and not any(info.applies(c) for c in configs):
        return f"{analysis_id}: requested, but it applies to no cell of this grid (it needs {info.needs})"
    return (
        f"{analysis_id}: requested, but no rows yet — run `gridlab analyze {grid_file}` "
        "(or `gridlab launch`, which trains what is left first)"
    )


def cells_read(inputs: ReportInputs, analyses: Sequence[str], trained: bool = False) -> tuple[str, ...]:
    """The cells with rows in any of `analyses`, with every trained cell too when `trained` (or no analyses:
    the reader reads the cells' test metrics), sorted."""
    frames = [rows for a in analyses if (rows := inputs.rows(a)) is not None]
    if trained or not analyses:
        frames.append(inputs.cells)
    return tuple(sorted({str(c) for rows in frames for c in rows["cell_id"].dropna()}))


def provenance(inputs: ReportInputs) -> Provenance:
    grid = inputs.grid
    return Provenance(str(grid.file), grid_hash(Path(grid.file)), gridlab_commit(), dict(inputs.cell_commits))


def run_section(section: Section, inputs: ReportInputs) -> SectionResult:
    absent = [a for a in section.analyses if inputs.rows(a) is None]
    lines = [analysis_missing(a, inputs) for a in absent]
    lines += [
        f"{a}: {counted(len(cells), 'cell')} left out until all their shards are written ({', '.join(cells)})"
        for a in section.analyses
        if (cells := inputs.partial(a))
    ]
    if section.analyses and len(absent) == len(section.analyses):
        return SectionResult(section.id, section.title, [], lines, rendered=False)
    output = section.build(inputs)
    if not isinstance(output, SectionOutput):
        raise TypeError(f"section {section.id}: build returned {type(output).__name__}, not a SectionOutput")
    # The generic line already says an absent analysis is not run and how to run it; a section's own
    # "<analysis>: not run ..." line for the same analysis would only repeat it.
    covered = tuple(f"{a}: not run" for a in absent)
    lines += [line for line in output.missing if line not in lines and not line.startswith(covered)]
    if not output.artifacts:  # its analyses ran, yet there is nothing to show: say so, do not render it empty
        return SectionResult(section.id, section.title, [], lines or ["no artifacts for these rows"], rendered=False)
    return SectionResult(
        section.id,
        section.title,
        list(output.artifacts),
        lines,
        cells=cells_read(inputs, section.analyses, section.reads_cells),
    )


def build_report(
    inputs: ReportInputs,
    sections: Sequence[Section],
    out: Path | None = None,
    lead: Sequence[SectionResult] = (),
    sources: str = "",
) -> ReportSummary:
    """Every section over `inputs`, after `lead` (shown first, as given, and not counted in the summary);
    `sources` ends the introduction's sentence on where the numbers come from."""
    grid = inputs.grid
    out = Path(out) if out is not None else grid.workspace.report
    results = [run_section(section, inputs) for section in sections]
    trained = len(inputs.cells)
    intro = (
        f"Grid {grid.spec.name} ({grid.file}): {trained} of {len(grid.cells)} cells trained; "
        f"rows from {grid.workspace.analyses}. Every number in the tables is computed from those rows, "
        f"per model first and then across seeds{sources}."
    )
    # The lead (the claims and fidelity tables) reads every analysis's rows and the cells' test metrics.
    every = cells_read(inputs, ())
    lead = [section if section.cells else dataclasses.replace(section, cells=every) for section in lead]
    title = f"gridlab report: {grid.spec.name}"
    render_report([*lead, *results], out, title=title, intro=intro, provenance=provenance(inputs))
    artifacts = [a for r in results for a in r.artifacts]
    return ReportSummary(
        out=out,
        tables=sum(isinstance(a, Table) for a in artifacts),
        figures=sum(isinstance(a, Figure) for a in artifacts),
        fragments=sum(isinstance(a, Fragment) for a in artifacts),
        sections=[r.id for r in results if r.rendered],
        missing=[f"{r.title}: {line}" for r in results for line in r.missing],
    )
