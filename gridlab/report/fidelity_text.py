"""The fidelity table as a reader sees it: rounded display frames, the report's fidelity section (first in
index.html; fidelity.md and fidelity.csv in the folder) and the Markdown that `gridlab fidelity` concatenates
into docs/fidelity.md.

    >>> section = fidelity_section(result)          # a SectionResult: fidelity, fidelity_sensitivity, tolerances
    >>> grid_markdown(result, level=2)              # '## Fidelity: quick (grids/quick.yaml)\\n\\n...'
"""

from __future__ import annotations

import pandas as pd

from gridlab.report.artifacts import Artifact, Table
from gridlab.report.fidelity import NOT_RUN, OUTSIDE, UNDEFINED, WITHIN, FidelityResult
from gridlab.report.render import SectionResult, markdown_table
from gridlab.report.stats import plus_minus
from gridlab.report.tolerances import TOLERANCES, Tolerance, rule_for
from gridlab.text import counted

SECTION_ID = "fidelity"
TITLE = "Fidelity: our numbers against the papers'"
NOT_JOINED = (
    "Serrano & Smith's Table 2 is shown beside ours in their section but not judged here: their datasets "
    "(Yahoo, Diao et al.'s IMDB, Amazon, Yelp) are not gridlab's. Wiegreffe & Pinter print no numbers to join."
)


def digits(quantity: str) -> int:
    """Points and BLEU to 2 decimals (the papers print 1), everything on a 0-1 scale to 3."""
    unit = rule_for(quantity).unit
    return 2 if "points" in unit or "BLEU" in unit else 3


def fixed(value: float | None, places: int, sign: str = "") -> str:
    return "–" if value is None or pd.isna(value) else f"{value:{sign}.{places}f}"


def count_text(value: float | None) -> str:
    return "–" if value is None or pd.isna(value) else str(int(value))


def display(frame: pd.DataFrame, columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """The rows as text: published as printed, ours as mean ± std across seeds, signed difference, ±width."""
    places = [digits(q) for q in frame["quantity"]]
    shown = frame[[*columns, "paper", "table", "dataset", "model", "detail", "quantity"]].copy()
    shown["published"] = [fixed(v, d) for v, d in zip(frame["published"], places)]
    shown["rerun"] = [fixed(v, d) for v, d in zip(frame["rerun"], places)]
    shown["ours"] = [plus_minus(m, s, d) for m, s, d in zip(frame["ours"], frame["ours_std"], places)]
    shown["seeds"] = [count_text(v) for v in frame["n_seeds"]]
    shown["instances"] = [count_text(v) for v in frame["n_instances"]]
    shown["difference"] = [fixed(v, d, "+") for v, d in zip(frame["difference"], places)]
    shown["tolerance"] = [f"±{fixed(v, d)}" for v, d in zip(frame["tolerance"], places)]
    shown["verdict"] = frame["verdict"]
    shown["rerun verdict"] = frame["rerun_verdict"]
    shown["ablation"] = frame["ablation"]
    shown["note"] = frame["note"]
    return shown.reset_index(drop=True)


def summary(result: FidelityResult) -> str:
    """'12 published numbers: 5 within tolerance, 4 outside (1 with an ablation, 3 without one yet), 3 not run.'"""
    counts = result.counts()
    frame = result.frame
    if frame.empty:
        return "No published number matches this grid's cells and analyses."
    outside = frame[frame["verdict"] == OUTSIDE]
    without = int((outside["ablation"] == "no ablation yet").sum())
    parts = [f"{counts[WITHIN]} within tolerance"]
    parts.append(f"{counts[OUTSIDE]} outside ({counts[OUTSIDE] - without} with an ablation, {without} without one yet)")
    parts.append(f"{counts[NOT_RUN]} not run")
    if counts[UNDEFINED]:
        parts.append(f"{counts[UNDEFINED]} undefined (rows, but no value)")
    return f"{len(frame)} published numbers: " + ", ".join(parts) + "." + partial_text(result.partial)


def partial_text(partial: dict[str, list[str]]) -> str:
    """' Left out until their shards are all written: sparsity_importance of 3 cells (...).' or ''."""
    if not partial:
        return ""
    listed = "; ".join(
        f"{analysis} of {counted(len(cells), 'cell')} ({', '.join(cells)})" for analysis, cells in partial.items()
    )
    return f" Left out until their shards are all written (a launch in flight): {listed}."


def caption(result: FidelityResult) -> str:
    pooled = (
        f" Cells of every value of {', '.join(result.axes)} are pooled here, as in the sections' tables; "
        "fidelity_sensitivity breaks each number out per value."
        if result.axes
        else ""
    )
    return (
        "One row per published number that a section joins to ours, for this grid's cells. Ours: the "
        "section's own value, the mean across seeds of a per-model statistic, ± its std across seeds; seeds: "
        "models averaged; instances: test instances over all seeds ('–' for per-model numbers). "
        "rerun: the original code's own rerun where its repository commits one (J&W's graph_outputs). "
        "difference = ours − published; within: |difference| ≤ tolerance, the only rule (tolerances and "
        "their reasons in fidelity_tolerances; the rerun is judged in its own column, rerun verdict, and "
        "widens nothing); not run: the grid's cells aim at the number but it has no rows yet; "
        "undefined: rows, but no value. ablation: the run that tests why a row is outside "
        f"(gridlab/report/ablations.yaml), 'no ablation yet' where none has been run.{pooled} {NOT_JOINED}"
    )


def tolerance_text(rule: Tolerance) -> str:
    width = f"±{rule.default:g} {rule.unit}, at most |published| (at least {rule.printed_step / 2:g})"
    if rule.seed_std_multiple is not None:
        return f"{rule.seed_std_multiple:g} × the paper's ± over its runs where printed, else {width}"
    return width


def tolerance_frame(rules: list[Tolerance] | tuple[Tolerance, ...] = TOLERANCES) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rule": [r.rule for r in rules],
            "quantities": [", ".join(r.quantities) for r in rules],
            "tolerance": [tolerance_text(r) for r in rules],
            "why": [r.reason for r in rules],
        }
    )


def sensitivity_caption(result: FidelityResult) -> str:
    return (
        f"Each published number recomputed from the cells of one value of {', '.join(result.axes)} at a time "
        "(other setting axes pooled), where the grid aims at it under two or more values: how the number "
        "moves with the setting. Same columns and tolerances as the fidelity table."
    )


def grid_markdown(result: FidelityResult, level: int = 1, tolerances: bool = True) -> str:
    """One grid's fidelity as Markdown: summary, table, caption, sensitivity per setting, tolerance rules."""
    head = "#" * level
    parts = [f"{head} Fidelity: {result.grid} ({result.file})", "", summary(result), ""]
    if len(result.frame):
        parts += [markdown_table(display(result.frame)), "", caption(result), ""]
    if len(result.sensitivity):
        parts += [f"{head}# Sensitivity to {', '.join(result.axes)}", ""]
        parts += [markdown_table(display(result.sensitivity, ("axis", "value"))), "", sensitivity_caption(result), ""]
    if tolerances and result.rules:
        parts += [f"{head}# Tolerances", "", markdown_table(tolerance_frame(result.rules)), ""]
    return "\n".join(parts).rstrip() + "\n"


def fidelity_section(result: FidelityResult) -> SectionResult:
    """The report's first section: fidelity (with fidelity.md the whole grid_markdown), its sensitivity
    break-out where the grid has a setting axis, and the tolerance rules with their reasons."""
    artifacts: list[Artifact] = [
        Table(
            SECTION_ID,
            "Fidelity: published numbers and ours",
            result.frame,
            summary(result) + " " + caption(result),
            display(result.frame),
            markdown=grid_markdown(result),
        )
    ]
    if len(result.sensitivity):
        artifacts.append(
            Table(
                f"{SECTION_ID}_sensitivity",
                f"Fidelity by {', '.join(result.axes)}",
                result.sensitivity,
                sensitivity_caption(result),
                display(result.sensitivity, ("axis", "value")),
            )
        )
    rules = result.rules or list(TOLERANCES)
    artifacts.append(
        Table(
            f"{SECTION_ID}_tolerances",
            "Tolerances: how far ours may lie from a published number, and why",
            tolerance_frame(rules),
            "Rules as data in gridlab/report/tolerances.py; a quantity without a rule is an error.",
        )
    )
    missing = [] if len(result.frame) else ["no published number matches this grid's cells and analyses"]
    return SectionResult(SECTION_ID, TITLE, artifacts, missing)
