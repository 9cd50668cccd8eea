"""Jain & Wallace (2019), "Attention is not Explanation": attention agrees only weakly with other importance
measures in contextual encoders (§4.1), permuting it rarely changes the output (§4.2.1), and attention far from
the learned one gives the same prediction (§4.2.2).
"""

from __future__ import annotations

import math

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.studies.claims.base import (
    BILSTM,
    PRETRAINED,
    Claim,
    Finding,
    against,
    interval,
    learned,
    ordered,
    paired,
    per_configuration,
)
from gridlab.studies.sections.jain_wallace import ALL, figure4_frame, permutation_table, table2_frame

LN2 = math.log(2.0)
# Encoders whose hidden states mix the words (J&W's BiLSTM and CNN, and the later ones): each is compared with
# the non-contextual `average` encoder by jw.weak_correlation.
CONTEXTUAL = ("lstm", "gru", "cnn", "transformer", PRETRAINED)


def jw_weak_correlation(inputs: ReportInputs) -> list[Finding]:
    """Each contextual encoder against the average encoder on the same data; the encoder is named in the
    condition when the rows hold more than one contextual encoder (J&W's Table 2 has the BiLSTM and the CNN)."""
    rows = inputs.rows("importance_correlation")
    if rows is None:
        return []
    table = table2_frame(rows)
    table = table[table["pred"] == ALL]
    contextual = [encoder for encoder in CONTEXTUAL if (table["encoder"] == encoder).any()]
    findings = []
    for encoder in contextual:
        for condition, seeds, model, average, cells in paired(table, rows, "encoder", encoder, "average"):
            difference = float(model["tau_g"] - average["tau_g"])
            if math.isnan(difference):
                continue
            verdict = ordered(model, average, "tau_g", "below")
            name = "BiLSTM" if encoder == BILSTM else encoder
            detail = f"mean τ_g: {name} {interval(model, 'tau_g')}, average {interval(average, 'tau_g')}"
            shown = {"encoder": encoder, **condition} if len(contextual) > 1 else condition
            findings.append(Finding(shown, seeds, difference, verdict, detail, cells))
    return findings


def jw_permutation(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("permutation"), [BILSTM, PRETRAINED])
    if rows is None:
        return []
    table = permutation_table(rows).frame

    def decide(row: pd.Series) -> tuple[str, float, str]:
        share = row["share_below_0_01"]
        return (
            against(row, "share_below_0_01", 0.5, "above"),
            share,
            f"share of instances with Δŷ_med < 0.01: {share:.3f}",
        )

    return per_configuration(table, rows, decide)


def jw_adversarial(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("adversarial"), [BILSTM, PRETRAINED])
    if rows is None:
        return []
    table = figure4_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        median = row["jsd_eps_max_median"]
        verdict = against(row, "jsd_eps_max_median", LN2 / 2, "above")
        return verdict, median, f"median ε-max JSD {median:.3f} (bound ln 2 = {LN2:.3f}, half of it {LN2 / 2:.3f})"

    return per_configuration(table, rows, decide)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "jw.weak_correlation",
        "Jain & Wallace (2019) §4.1, Table 2",
        "Attention correlates only weakly with gradient importance in BiLSTMs, much more in non-contextual "
        "(average) encoders.",
        ("importance_correlation",),
        "a contextual encoder's mean τ_g (the BiLSTM's; also the GRU's, CNN's, transformer's or pretrained "
        "model's where the rows have them, each its own condition) minus the average encoder's mean τ_g on the same "
        "dataset, attention and other axes (per model over all test instances, mean across seeds)",
        "holds when the contextual encoder's 95% seed interval of τ_g lies wholly below the average encoder's, "
        "reversed when wholly above, partly when the intervals overlap. No threshold: §4.1 states a direction "
        "(\"gradients in 'average' embedding based models show much higher correspondence with attention\").",
        "`importance_correlation` rows of an lstm (or other contextual) cell and an average-encoder cell on the "
        "same dataset and attention",
        jw_weak_correlation,
    ),
    Claim(
        "jw.permutation",
        "Jain & Wallace (2019) §4.2.1, Fig. 3",
        "Permuting a BiLSTM's attention weights rarely changes its output.",
        ("permutation",),
        "share of test instances whose median output TVD over 100 permutations (Δŷ_med) is below 0.01, per "
        "model, mean across seeds (BiLSTM, learned attention; the pretrained transformer's last-layer [CLS] "
        "attention as a condition of its own)",
        "holds when the share is above 0.5 (a large change is 'the exception rather than the rule', §4.2.1), "
        "reversed below, partly when the seeds' 95% interval contains 0.5. 0.01 is J&W's ε for text "
        "classification, the output change they call 'effectively equivalent' (§4.2.2).",
        "`permutation` rows of a learned-attention lstm (or pretrained) cell",
        jw_permutation,
    ),
    Claim(
        "jw.adversarial",
        "Jain & Wallace (2019) §4.2.2, Fig. 4",
        "Attention far from the learned one exists with an effectively equal prediction (output TVD within ε).",
        ("adversarial",),
        "median ε-max JSD over test instances per model, mean across seeds (BiLSTM, learned attention; the "
        "pretrained transformer as a condition of its own where the adversary applies to it)",
        "holds when the median lies in the upper half of JSD's range [0, ln 2] (Fig. 4: 'mass toward the "
        "upper-bound of 0.69'), i.e. above ln 2 / 2 ≈ 0.347; reversed below; partly when the seeds' interval "
        "contains it.",
        "`adversarial` rows of a learned-attention lstm (or pretrained) cell",
        jw_adversarial,
    ),
)
