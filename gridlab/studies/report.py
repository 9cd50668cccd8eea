"""`gridlab report`: every section of `sections/registry.py` over a grid's Parquet rows, rendered into one
folder (default `results_dir/<grid>/report/`) by `gridlab.report.build`.

    >>> summary = build_report(expand(load_grid_file(path), str(path)))
    >>> summary.out, summary.tables, summary.figures, summary.missing, summary.fidelity, summary.conclusions

The claims table comes first (`conclusions.py`: what each paper concluded, and whether these rows support
it), then the fidelity table (`fidelity.py`: every published number the grid aims at, ours beside it,
within / outside its tolerance / not run), then the sections: the papers' and gridlab's own.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from pathlib import Path

from gridlab.grid.expand import ExpandedGrid
from gridlab.report import build
from gridlab.report.inputs import ReportInputs
from gridlab.store.provenance import gridlab_commit
from gridlab.studies import conclusions
from gridlab.studies.fidelity import fidelity
from gridlab.studies.fidelity_record import NumberRecord
from gridlab.studies.fidelity_text import fidelity_section, fidelity_summary
from gridlab.studies.record import Trace
from gridlab.studies.sections.registry import load_sections


@dataclass(frozen=True)
class ReportSummary(build.ReportSummary):
    fidelity: str = ""  # the fidelity table's verdict counts (its tables are not counted above)
    conclusions: str = ""  # the claims' overall verdict counts (nor is the claims table)


def build_report(grid: ExpandedGrid, out: Path | None = None) -> ReportSummary:
    inputs = ReportInputs.load(grid)
    # Traced as `gridlab fidelity` traces what it measures: the cells, the grid file's hash, the commit.
    trace = Trace.of(Path(grid.file), gridlab_commit(), datetime.date.today(), inputs.cell_commits)
    judged = NumberRecord.empty().carry(fidelity(inputs), [], trace)  # an empty record: nothing carried
    # The claims first (does each paper's conclusion hold on these rows?), then the fidelity table: does this
    # grid reproduce the papers' numbers, and where not, what tests why.
    claims = conclusions.claims_frame({grid.spec.name: inputs})
    summary = build.build_report(
        inputs,
        load_sections(),
        out,
        lead=[conclusions.conclusions_section(claims), fidelity_section(judged)],
        sources="; the papers' columns come from gridlab.studies.published",
    )
    return ReportSummary(
        **{f.name: getattr(summary, f.name) for f in dataclasses.fields(summary)},
        fidelity=fidelity_summary(judged),
        conclusions=conclusions.summary(claims),
    )
