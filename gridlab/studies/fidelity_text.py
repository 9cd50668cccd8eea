"""The fidelity verdicts as a reader sees them: rounded display frames, shared by docs/fidelity/ and the
report's fidelity section (first in index.html): per paper and table the counts first, the rows on demand
(an HTML <details> per table), the same verdicts as docs/fidelity/ decides them (`verdicts.py`).

    >>> section = fidelity_section(result)       # fidelity (counts; fidelity.csv the verdict rows), fidelity_rows,
    ...                                          # fidelity_sensitivity (a setting axis), fidelity_tolerances
    >>> verdict_display(decided.verdicts)        # the rows as text: ours ± std, ±tolerance, verdict (reduced)
"""

from __future__ import annotations

import html
import os

import pandas as pd

from gridlab.report.artifacts import Artifact, Fragment, Table
from gridlab.report.render import SectionResult, markdown_table
from gridlab.report.stats import plus_minus
from gridlab.studies.ablations import NO_ABLATION, Ablation, load_ablations
from gridlab.studies.fidelity import NOT_RUN, OUTSIDE, STALE, UNDEFINED, FidelityResult
from gridlab.studies.tolerances import TOLERANCES, Tolerance, rule_for
from gridlab.studies.verdicts import (
    FULL_SEEDS,
    HEADLINE,
    WITHIN_FULL,
    WITHIN_REDUCED,
    Decided,
    Plan,
    decide,
    headline,
    load_plan,
)
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


def summary(result: FidelityResult, decided: Decided) -> str:
    """'12 published numbers: 5 within (3 on 3+ seeds and full data, 2 reduced), 4 outside (1 with an
    ablation, 3 without one yet), 3 not run.' and the extra measurements beside them."""
    frame = decided.verdicts
    if frame.empty and decided.extras.empty:
        return "No published number matches this grid's cells and analyses."
    counts = headline(frame, by=()).iloc[0] if len(frame) else pd.Series(0, index=HEADLINE)
    within = int(counts[WITHIN_FULL] + counts[WITHIN_REDUCED])
    outside = frame[frame["verdict"] == OUTSIDE]
    without = int((outside["ablation"] == NO_ABLATION).sum())
    parts = [f"{within} within ({int(counts[WITHIN_FULL])} on {FULL_SEEDS}+ seeds and full data, "]
    parts[0] += f"{int(counts[WITHIN_REDUCED])} reduced)"
    parts.append(f"{len(outside)} outside ({len(outside) - without} with an ablation, {without} without one yet)")
    parts.append(f"{int(counts[NOT_RUN])} not run")
    for verdict, label in ((STALE, "stale (counted as not run)"), (UNDEFINED, "undefined (rows, but no value)")):
        if counts[verdict]:
            parts.append(f"{int(counts[verdict])} {label}")
    extras = f"; {counted(len(decided.extras), 'extra measurement')}" if len(decided.extras) else ""
    text = f"{counted(len(frame), 'published number')}: " + ", ".join(parts) + extras + "."
    return text + partial_text(result.partial)


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
        f" Cells of every value of {', '.join(result.axes)} are pooled in fidelity_sensitivity's rows per value; "
        "a grid that sweeps a setting tests a cause, so its rows are extra measurements, never verdicts."
        if result.axes
        else ""
    )
    return (
        "Counts per paper and table first; the rows in fidelity_rows (one per published number, for the "
        "model the paper printed it for) and fidelity.csv. within iff |ours − published| ≤ tolerance, the "
        "only rule (tolerances and their reasons in fidelity_tolerances); the authors' rerun (J&W's "
        "graph_outputs) is judged in its own column, rerun verdict, and widens nothing. Reduced: fewer than "
        f"{FULL_SEEDS} seeds, a training subset, a sample of test instances or another corpus. Ours: the "
        "section's own value, the mean across seeds ± its std across seeds. ablation: the ids of "
        "gridlab/studies/ablations.yaml that test why (their findings below the rows), 'no ablation yet' where "
        f"none has been run. Extra measurements: copies of a number onto gridlab's other models, or rows of a "
        f"grid that decides no verdict for that paper (docs/fidelity/README.md).{pooled} {NOT_JOINED}"
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


def count_line(rows: pd.DataFrame) -> str:
    counts = headline(rows, by=()).iloc[0]
    shown = [f"{int(counts[c])} {c}" for c in HEADLINE if counts[c]]
    return f"{counted(len(rows), 'published number')}: " + ", ".join(shown) + "."


def measured_text(on: object, commit: object) -> str:
    """'2026-11-28, 61f4c0f' (the date and the commit it was measured at); 'untraced' without a commit."""
    if not isinstance(on, str) or not on:
        return ""
    return f"{on}, {short_commit(commit)}" if isinstance(commit, str) and commit else f"{on}, untraced"


def short_commit(commit: str) -> str:
    """'git 61f4c0f2a9…' -> '61f4c0f' (with '-dirty' kept); 'gridlab 0.1.0' as is."""
    if commit.startswith("git "):
        head = commit[4:]
        return head[:7] + ("-dirty" if head.endswith("-dirty") else "")
    return commit


def ablation_links(ids: object, page: str | None) -> str:
    """The ablation ids of a row, as links to `page`'s anchors when given."""
    if not isinstance(ids, str) or not ids or ids == NO_ABLATION or page is None:
        return ids if isinstance(ids, str) else ""
    return ", ".join(f"[{i}]({page}#{i})" for i in ids.split(", "))


def _numbers(frame: pd.DataFrame) -> pd.DataFrame:
    places = [digits(q) for q in frame["quantity"]]
    return pd.DataFrame(
        {
            "published": [fixed(v, d) for v, d in zip(frame["published"], places)],
            "ours": [plus_minus(m, s, d) for m, s, d in zip(frame["ours"], frame["ours_std"], places)],
            "seeds": [count_text(v) for v in frame["seeds"]],
            "population": frame["population"],
            "difference": [fixed(v, d, "+") for v, d in zip(frame["difference"], places)],
            "tolerance": [f"±{fixed(v, d)}" for v, d in zip(frame["tolerance"], places)],
        },
        index=frame.index,
    )


def verdict_display(rows: pd.DataFrame, ablations: str | None = None) -> pd.DataFrame:
    """Verdict rows as text; `ablations`: the page whose anchors the ablation ids link to."""
    places = [digits(q) for q in rows["quantity"]]
    shown = pd.concat([rows[["dataset", "model", "detail", "quantity"]], _numbers(rows)], axis=1)
    shown["verdict"] = [
        f"{v} (reduced)" if reduced else v for v, reduced in zip(rows["verdict"], rows["reduced"].astype(bool))
    ]
    shown["rerun"] = [fixed(v, d) for v, d in zip(rows["rerun"], places)]
    shown["rerun verdict"] = rows["rerun_verdict"].fillna("")
    shown["ablation"] = [ablation_links(a, ablations) for a in rows["ablation"]]
    shown["grid"] = rows["grid"]
    shown["measured"] = [measured_text(on, c) for on, c in zip(rows["measured_on"], rows["commit"])]
    shown["note"] = rows["note"].fillna("")
    return shown.reset_index(drop=True)


def extra_display(rows: pd.DataFrame, ablations: str | None = None) -> pd.DataFrame:
    """Extra measurements as text: no verdict, the difference and tolerance only."""
    shown = pd.concat([rows[["table", "dataset", "model", "detail", "quantity"]], _numbers(rows)], axis=1)
    shown["measured"] = [
        f"stale: {measured_text(on, c)}" if v == STALE else measured_text(on, c)
        for v, on, c in zip(rows["verdict"], rows["measured_on"], rows["commit"])
    ]
    shown["ablation"] = [ablation_links(a, ablations) for a in rows["ablation"]]
    return shown.reset_index(drop=True)


def report_plan(file: str) -> Plan:
    """The plan a report judges one grid by: the shipped one where it lists the grid (the paper's own grids
    decide; another paper's grid gives extra measurements), else this grid deciding every paper's numbers it
    aims at (no other grid is there to decide them)."""
    plan = load_plan()
    here = _normalised(file)
    if any(_normalised(g) == here for g in plan.grids):
        return plan.model_copy(update={"grids": tuple(file if _normalised(g) == here else g for g in plan.grids)})
    papers = tuple(p.model_copy(update={"decide": (file,)}) for p in plan.papers)
    return Plan(papers=papers, grids=(file,))


def _normalised(file: str) -> str:
    return os.path.normpath(os.path.abspath(file))


def report_markdown(result: FidelityResult, decided: Decided, entries: list[Ablation]) -> str:
    """fidelity.md of a report: the counts, then per table its rows, the extra measurements, the findings."""
    parts = [f"# Fidelity: {result.grid} ({result.file})", "", summary(result, decided), ""]
    if len(decided.verdicts):
        parts += [markdown_table(counts_display(decided.verdicts)), ""]
    for table, rows in decided.verdicts.groupby(["paper", "table"], sort=False):
        parts += [f"## {table[0]}, {table[1]}", "", count_line(rows), "", markdown_table(verdict_display(rows)), ""]
    if len(decided.extras):
        parts += ["## Extra measurements", "", markdown_table(extra_display(decided.extras)), ""]
    cited = cited_ablations(decided, entries)
    if cited:
        parts += ["## Ablations cited", "", *[f"- **{e.id}** (`{e.command}`): {e.finding}" for e in cited], ""]
    parts += [caption(result), ""]
    if result.rules:
        parts += ["## Tolerances", "", markdown_table(tolerance_frame(result.rules)), ""]
    return "\n".join(parts).rstrip() + "\n"


def counts_display(verdicts: pd.DataFrame) -> pd.DataFrame:
    counts = headline(verdicts)
    return counts.drop(columns=[c for c in (UNDEFINED, STALE) if not counts[c].any()])


def cited_ablations(decided: Decided, entries: list[Ablation]) -> list[Ablation]:
    ids = set()
    for frame in (decided.verdicts, decided.extras):
        for cell in frame["ablation"].fillna(""):
            ids |= {i for i in str(cell).split(", ") if i and i != NO_ABLATION}
    return [e for e in entries if e.id in ids]


def rows_html(decided: Decided, entries: list[Ablation]) -> str:
    """The rows on demand: a <details> per paper table (its counts in the summary line), one for the extra
    measurements, one for the findings of the ablations the rows cite."""
    blocks = []
    for (paper, table), rows in decided.verdicts.groupby(["paper", "table"], sort=False):
        blocks.append(_details(f"{paper}, {table}: {count_line(rows)}", _html(verdict_display(rows))))
    if len(decided.extras):
        summary_line = f"Extra measurements: {counted(len(decided.extras), 'row')}, no verdict counted"
        blocks.append(_details(summary_line, _html(extra_display(decided.extras))))
    cited = cited_ablations(decided, entries)
    if cited:
        items = "".join(f"<li><b>{_e(e.id)}</b> (<code>{_e(e.command)}</code>): {_e(e.finding)}</li>" for e in cited)
        blocks.append(_details(f"Ablations cited: {len(cited)}", f"<ul>{items}</ul>"))
    return "\n".join(blocks) or "<p>No published number matches this grid's cells and analyses.</p>"


def _details(summary_line: str, body: str) -> str:
    return f"<details><summary>{_e(summary_line)}</summary>{body}</details>"


def _html(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(v)}</td>" for v in values) + "</tr>"
        for values in frame.itertuples(index=False, name=None)
    )
    return f'<table class="gridlab-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def fidelity_summary(result: FidelityResult) -> str:
    """The fidelity line of `gridlab report`: the counts of the verdicts its section shows."""
    return summary(result, decide([result], report_plan(result.file)))


def fidelity_section(result: FidelityResult, entries: list[Ablation] | None = None) -> SectionResult:
    """The report's first section: fidelity (the counts per paper and table; fidelity.csv the verdict rows,
    fidelity.md all of it), fidelity_rows (the rows on demand), the sensitivity break-out where the grid has
    a setting axis, and the tolerance rules with their reasons."""
    entries = load_ablations() if entries is None else entries
    decided = decide([result], report_plan(result.file))
    artifacts: list[Artifact] = [
        Table(
            SECTION_ID,
            "Fidelity: published numbers and ours, per paper and table",
            decided.verdicts,
            summary(result, decided) + " " + caption(result),
            counts_display(decided.verdicts),
            markdown=report_markdown(result, decided, entries),
        ),
        Fragment(
            f"{SECTION_ID}_rows", "Fidelity rows, per table (open one to see its rows)", rows_html(decided, entries)
        ),
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
            "Rules as data in gridlab/studies/tolerances.py; a quantity without a rule is an error.",
        )
    )
    missing = [] if len(result.frame) else ["no published number matches this grid's cells and analyses"]
    return SectionResult(SECTION_ID, TITLE, artifacts, missing)
