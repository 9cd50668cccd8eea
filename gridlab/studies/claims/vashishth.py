"""Vashishth et al. (2019), "Attention Interpretability Across NLP Tasks": uniform attention barely changes
single-sequence classifiers and costs pair tasks and translation much (§4.1, Tables 1-3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.studies.claims.base import (
    HOLDS,
    NOT_RUN,
    PARTLY,
    REVERSED,
    Claim,
    Finding,
    per_configuration,
    side,
)
from gridlab.studies.sections.vashishth import TASK_OF_ARCHITECTURE, ablation_frame


def vashishth(task: str, claimed: Literal["none", "drop"]) -> Callable[[ReportInputs], list[Finding]]:
    """Uniform (Train+Infer) change per configuration of one task type: `none` claims no change beyond the
    seeds' interval, `drop` a change wholly below zero."""

    def decide_task(inputs: ReportInputs) -> list[Finding]:
        rows = inputs.rows("attention_ablation")
        if rows is None:
            return []
        rows = rows[rows["architecture"].map(TASK_OF_ARCHITECTURE) == task]
        if rows.empty:
            return []
        frame = ablation_frame(rows)
        frame = frame[(frame["variant"] == "uniform") & (frame["setting"] == "train+infer")]
        frame = frame.rename(columns={"mean": "change", "ci_low": "change_ci_low", "ci_high": "change_ci_high"})

        def decide(row: pd.Series) -> tuple[str, float, str]:
            if pd.isna(row["change_ci_low"]):
                return NOT_RUN, row["change"], f"{row['change']:.2f}: needs two or more seeds for the interval"
            where = side(row["change"], row["change_ci_low"], row["change_ci_high"], 0.0)
            if claimed == "none":
                verdict = REVERSED if where == "below" else HOLDS
            else:
                verdict = HOLDS if where == "below" else PARTLY if where == "within" else REVERSED
            unit = "BLEU" if row["metric"] == "bleu" else "points of accuracy"
            interval = f"[{row['change_ci_low']:.2f}, {row['change_ci_high']:.2f}]"
            return (
                verdict,
                row["change"],
                f"uniform (train+infer) minus learned: {row['change']:.2f} {unit}, 95% {interval}",
            )

        return per_configuration(frame, rows, decide)

    return decide_task


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vashishth.single_sequence",
        "Vashishth et al. (2019) §4.1, Table 1",
        "Single-sequence classifiers barely depend on attention: training and testing with uniform attention "
        "hardly changes accuracy.",
        ("attention_ablation",),
        "accuracy of the model trained with uniform attention minus the learned model's (same seed), in "
        "points, mean across seeds (Uniform Train+Infer)",
        "holds when the seeds' 95% interval of the change is not wholly below 0; reversed when it is "
        "(§4.1 contrasts a 0.1% average relative decrease here with about 50% on pair and generation tasks "
        "and states no threshold); not run with one seed.",
        "`attention_ablation` rows of flat or HAN cells with attention_mode learned and uniform, two or more seeds",
        vashishth("single", "none"),
    ),
    Claim(
        "vashishth.pair",
        "Vashishth et al. (2019) §4.1, Table 2",
        "Pair-sequence tasks depend on attention: uniform attention costs much accuracy.",
        ("attention_ablation",),
        "as vashishth.single_sequence, over pair cells",
        "holds when the seeds' 95% interval of the change is wholly below 0; partly when it contains 0; "
        "reversed when wholly above; not run with one seed.",
        "`attention_ablation` rows of pair cells with attention_mode learned and uniform, two or more seeds",
        vashishth("pair", "drop"),
    ),
    Claim(
        "vashishth.generation",
        "Vashishth et al. (2019) §4.1, Table 3",
        "Translation depends on attention: uniform attention costs much BLEU.",
        ("attention_ablation",),
        "as vashishth.single_sequence, over seq2seq cells, in BLEU",
        "as vashishth.pair.",
        "`attention_ablation` rows of seq2seq cells with attention_mode learned and uniform, two or more seeds",
        vashishth("generation", "drop"),
    ),
)
