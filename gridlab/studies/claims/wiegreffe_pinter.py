"""Wiegreffe & Pinter (2019), "Attention is not not Explanation": its four tests as claims: the uniform
baseline, the seeds' own spread, the diagnostic MLP (with the model's attention and with an adversary's), and the
model-consistent adversary (against J&W's search, and its trade-off against the seeds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from gridlab.report.inputs import ReportInputs
from gridlab.report.stats import grouping_axes, model_axes, seed_table
from gridlab.studies.claims.base import (
    HOLDS,
    NOT_RUN,
    PARTLY,
    REVERSED,
    SHOWN,
    Claim,
    Finding,
    against,
    apart,
    cells_of,
    interval,
    learned,
    ordered,
    paired,
    per_configuration,
    seeds_of,
    shown_condition,
    side,
)
from gridlab.studies.sections.wiegreffe_pinter import comparison_frame, diagnostic_frame, tradeoff_frame

WP_SOURCE = (
    "W&P's full text is not among the papers gridlab quotes: the wording follows docs/analyses.md and the "
    "issue that asked for these claims, and no threshold is W&P's."
)


def wp_uniform_baseline(inputs: ReportInputs) -> list[Finding]:
    cells = inputs.cells
    if cells is None or cells.empty or "test_accuracy" not in cells.columns:
        return []
    table = seed_table(cells, model_axes(cells), {"accuracy": ("test_accuracy", "mean")})
    findings = []
    for condition, seeds, model, uniform, measured in paired(table, cells, "attention_mode", "learned", "uniform"):
        gap = float(model["accuracy"] - uniform["accuracy"])
        if math.isnan(gap):
            continue
        low = model["accuracy_ci_low"]
        if pd.isna(low):
            verdict, interval = NOT_RUN, "the learned model needs two or more seeds for its interval"
        else:
            verdict = HOLDS if uniform["accuracy"] >= low else REVERSED
            interval = f"learned 95% interval from {low:.4f}"
        detail = f"test accuracy: learned {model['accuracy']:.4f}, uniform {uniform['accuracy']:.4f}; {interval}"
        findings.append(Finding(condition, seeds, gap, verdict, detail, measured))
    return findings


def wp_seed_variance(inputs: ReportInputs) -> list[Finding]:
    seeds, adversarial = inputs.rows("seed_variance"), learned(inputs.rows("adversarial"))
    if seeds is None or adversarial is None:
        return []
    table = comparison_frame(seeds, adversarial, None)
    if "adversarial_above_seed" not in table.columns:
        return []

    def decide(row: pd.Series) -> tuple[str, float, str]:
        share = row["adversarial_above_seed"]
        detail = (
            f"adversarial JSD above the seed JSD on {share:.3f} of instances; median JSD: seed "
            f"{row['seed_jsd_max_median']:.3f}, adversarial {row['adversarial_jsd_median']:.3f}"
        )
        return against(row, "adversarial_above_seed", 0.5, "below"), share, detail

    return per_configuration(table, adversarial, decide)


def diagnostic_variants(rows: pd.DataFrame, required: Sequence[str], optional: Sequence[str] = ()) -> pd.DataFrame:
    """Per model configuration, the diagnostic MLP's test accuracy (`<variant>_accuracy`, with its interval)
    of each variant side by side: the configurations that have every `required` variant, with the `optional`
    ones where they have them."""
    frame = diagnostic_frame(rows, None)
    by = model_axes(rows)
    columns = ["accuracy", "accuracy_ci_low", "accuracy_ci_high"]

    def variant(name: str) -> pd.DataFrame:
        return frame[frame["variant"] == name][[*by, *columns]].rename(columns={c: f"{name}_{c}" for c in columns})

    first, *others = required
    table = variant(first)
    for name in others:
        table = table.merge(variant(name), on=by)  # null keys match null keys
    for name in optional:
        table = table.merge(variant(name), on=by, how="left")
    return table


def wp_diagnostic(inputs: ReportInputs) -> list[Finding]:
    rows = inputs.rows("diagnostic_mlp")
    if rows is None:
        return []
    table = diagnostic_variants(rows, ["base", "uniform"], ["learned"])
    if table.empty:
        return []

    def decide(row: pd.Series) -> tuple[str, float, str]:
        base, uniform = row["base_accuracy"], row["uniform_accuracy"]
        if pd.isna(base) or pd.isna(uniform):
            return "", math.nan, ""
        verdict = ordered(row, row, "base_accuracy", "above", "uniform_accuracy")
        if verdict == HOLDS and not pd.isna(row.get("learned_accuracy", math.nan)):
            if apart(row, row, "base_accuracy", "learned_accuracy") == "below":
                verdict = PARTLY  # above uniform, yet below the MLP's own attention
        detail = (
            f"MLP test accuracy: base attention {interval(row, 'base_accuracy', 4)}, uniform "
            f"{interval(row, 'uniform_accuracy', 4)}, its own learned {interval(row, 'learned_accuracy', 4)}"
        )
        return verdict, base - uniform, detail

    return per_configuration(table, rows, decide)


def wp_diagnostic_adversary(inputs: ReportInputs) -> list[Finding]:
    rows = inputs.rows("diagnostic_mlp")
    if rows is None:
        return []
    table = diagnostic_variants(rows, ["base", "adversary"])
    if table.empty:
        return []

    def decide(row: pd.Series) -> tuple[str, float, str]:
        base, adversary = row["base_accuracy"], row["adversary_accuracy"]
        if pd.isna(base) or pd.isna(adversary):
            return "", math.nan, ""
        verdict = ordered(row, row, "base_accuracy", "above", "adversary_accuracy")
        detail = (
            f"MLP test accuracy: base attention {interval(row, 'base_accuracy', 4)}, the adversary's "
            f"{interval(row, 'adversary_accuracy', 4)}"
        )
        return verdict, base - adversary, detail

    return per_configuration(table, rows, decide)


def wp_consistent_adversary(inputs: ReportInputs) -> list[Finding]:
    adversaries, adversarial = inputs.rows("adversarial_model"), learned(inputs.rows("adversarial"))
    if adversaries is None or adversarial is None:
        return []
    adversaries = adversaries[adversaries["variant"] == "unfrozen"]
    if adversaries.empty:
        return []
    table = comparison_frame(None, adversarial, adversaries)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        trained, search = row.get("adversary_unfrozen_jsd", math.nan), row["adversarial_jsd_mean"]
        if pd.isna(trained) or pd.isna(search):
            return "", math.nan, ""
        verdict = ordered(row, row, "adversary_unfrozen_jsd", "below", "adversarial_jsd_mean")
        detail = (
            f"mean JSD: trained adversary {interval(row, 'adversary_unfrozen_jsd')}, J&W's search "
            f"{interval(row, 'adversarial_jsd_mean')}"
        )
        return verdict, trained - search, detail

    return per_configuration(table, adversarial, decide)


def wp_adversary_tradeoff(inputs: ReportInputs) -> list[Finding]:
    tradeoff, seeds = learned(inputs.rows("adversary_tradeoff")), inputs.rows("seed_variance")
    if tradeoff is None or seeds is None:
        return []
    frame = tradeoff_frame(tradeoff, seeds).dropna(subset=["jsd_excess", "tvd_excess"])
    by = model_axes(tradeoff)
    return [
        tradeoff_finding(points.sort_values("lam"), tradeoff)
        for _, points in frame.groupby(by, dropna=False, sort=True)
    ]


def tradeoff_finding(points: pd.DataFrame, rows: pd.DataFrame) -> Finding:
    """One configuration's adversaries (one row per lam, rising): does one lie past the seeds' attention distance
    at no more than the seeds' output change?"""

    def where(point: pd.Series, column: str) -> str:
        return side(point[column], point[f"{column}_ci_low"], point[f"{column}_ci_high"], 0.0)

    sides = [(where(p, "jsd_excess"), where(p, "tvd_excess")) for _, p in points.iterrows()]
    if any(j == "above" and t != "above" for j, t in sides):
        verdict = HOLDS
    elif any(j != "below" and t != "above" for j, t in sides):
        verdict = PARTLY
    else:
        verdict = REVERSED
    within = points[[t != "above" for _, t in sides]]  # the adversaries whose outputs move no more than a seed's
    value = float(within["jsd_excess"].max()) if len(within) else math.nan
    first = points.iloc[0]
    detail = (
        "; ".join(
            f"lam {p['lam']:g}: JSD − seed's {interval(p, 'jsd_excess')}, TVD − seed's {interval(p, 'tvd_excess')}"
            for _, p in points.iterrows()
        )
        + f" (the seeds' own: JSD {first['seed_jsd']:.3f}, TVD {first['seed_tvd']:.3f})"
    )
    if math.isnan(value):
        detail = "no lam keeps the outputs within the seeds' TVD; " + detail
    condition, model = shown_condition(first, grouping_axes(rows, SHOWN)), shown_condition(first, model_axes(rows))
    return Finding(condition, seeds_of(rows, model), value, verdict, detail, cells_of(rows, model))


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "wp.uniform_baseline",
        "Wiegreffe & Pinter (2019) §3, uniform baseline",
        "On some tasks a model with uniform attention does as well as the learned one: attention is not "
        "needed there, so tests of it say little.",
        ("cells",),
        "test accuracy of the learned-attention model minus the uniform-attention model's (same other axes), "
        "mean across seeds",
        "holds when the uniform model's mean accuracy is at or above the lower end of the learned model's 95% "
        "interval across seeds (no difference beyond seed variation); reversed when below; not run with one "
        "learned seed. No threshold: the seeds' interval decides. " + WP_SOURCE,
        "trained cells with attention_mode learned and uniform on the same dataset, two or more seeds",
        wp_uniform_baseline,
    ),
    Claim(
        "wp.seed_variance",
        "Wiegreffe & Pinter (2019) §3.2, seed variance",
        "Models that differ only in their seed can already put attention far apart: where they do, J&W's "
        "adversarial attention is no further away than another seed's, and says little.",
        ("seed_variance", "adversarial"),
        "share of test instances whose ε-max adversarial JSD exceeds the JSD from the most distant other "
        "seed's attention, per model, mean across seeds",
        "holds when the share is below 0.5 (the adversary is no further than a seed on most instances), "
        "reversed above, partly when the seeds' interval contains 0.5. " + WP_SOURCE + " 0.5 ('most instances') "
        "is gridlab's reading.",
        "`seed_variance` (two or more seeds per configuration) and `adversarial` rows of the same cells",
        wp_seed_variance,
    ),
    Claim(
        "wp.diagnostic",
        "Wiegreffe & Pinter (2019) §4.4, diagnostic MLP",
        "A model's attention, frozen into an MLP without context, helps it: better than uniform weights and "
        "about as good as the MLP's own learned attention.",
        ("diagnostic_mlp",),
        "MLP test accuracy with the base model's attention minus with uniform weights, mean across seeds",
        "holds when base's 95% seed interval lies wholly above uniform's and not wholly below the MLP's own "
        "learned attention's; partly when the base and uniform intervals overlap, or base is above uniform but "
        "below learned; reversed when base's lies wholly below uniform's. No threshold: the variants are "
        "ordered. " + WP_SOURCE,
        "`diagnostic_mlp` rows (flat classifiers) with variants base and uniform",
        wp_diagnostic,
    ),
    Claim(
        "wp.diagnostic_adversary",
        "Wiegreffe & Pinter (2019) §4.4, diagnostic MLP, and abstract",
        "Adversarial attention that gives the model's predictions does not carry the model's information: frozen "
        "into the diagnostic MLP it does worse than the model's own attention ('even when reliable adversarial "
        "distributions can be found, they don't perform well on the simple diagnostic').",
        ("diagnostic_mlp",),
        "MLP test accuracy with the base model's attention minus with the attention of a model-consistent "
        "adversary of it (W&P §4: a fresh model trained to match the base model's outputs while its attention "
        "moves away, `adversarial_model`'s unfrozen variant), mean across seeds",
        "holds when base's 95% seed interval lies wholly above the adversary's, reversed when wholly below, "
        "partly when they overlap. No threshold: the two are ordered. " + WP_SOURCE + " The quoted sentence is "
        "W&P's abstract.",
        "`diagnostic_mlp` rows (flat classifiers) with variants base and adversary",
        wp_diagnostic_adversary,
    ),
    Claim(
        "wp.consistent_adversary",
        "Wiegreffe & Pinter (2019) §4, model-consistent adversary",
        "An adversary trained as a whole model cannot move attention as far as J&W's per-instance search: "
        "the per-instance adversaries overstate how free attention is.",
        ("adversarial_model", "adversarial"),
        "mean JSD of the trained (unfrozen) adversary's attention from the base model's minus the mean ε-max "
        "JSD of J&W's search, mean across seeds",
        "holds when the trained adversary's 95% seed interval lies wholly below the search's, reversed when "
        "wholly above, partly when they overlap. No threshold: the two are ordered. " + WP_SOURCE,
        "`adversarial_model` rows (variant unfrozen) and `adversarial` rows of the same learned cells",
        wp_consistent_adversary,
    ),
    Claim(
        "wp.adversary_tradeoff",
        "Wiegreffe & Pinter (2019) §4, the adversary's trade-off, and abstract",
        "A model-consistent adversary can find attention further from the model's than another seed's while its "
        "predictions move no more than another seed's do ('reliable adversarial distributions can be found').",
        ("adversary_tradeoff", "seed_variance"),
        "per weight lam of the attention term, the adversary's mean JSD from the base model's attention minus "
        "the same model's mean JSD from its other seeds' (JSD excess), and likewise for the outputs' TVD (TVD "
        "excess), per model, then across seeds; the value is the largest JSD excess among the lams whose TVD "
        "excess is not wholly above 0 (NaN when there is none)",
        "holds when at some lam the JSD excess's 95% seed interval lies wholly above 0 and the TVD excess's does "
        "not; partly when no lam does that but at some lam the JSD excess's interval is not wholly below 0 and "
        "the TVD excess's not wholly above 0; reversed otherwise (every adversary either stays nearer than a "
        "seed's attention or moves the outputs further than a seed does). No threshold: the seeds are the "
        "reference. " + WP_SOURCE + " The quoted words are W&P's abstract.",
        "`adversary_tradeoff` rows and `seed_variance` rows (two or more seeds) of the same learned cells",
        wp_adversary_tradeoff,
    ),
)
