"""Wiegreffe & Pinter (2019), "Attention is not not Explanation": adversarial attention judged against the
variance between seeds, and their diagnostic MLP guided by a model's frozen attention.

    >>> output = SECTION.build(ReportInputs.load(expanded))   # wp_seed_vs_adversarial, wp_jsd_cdf, wp_diagnostic_mlp

Seed variance against adversaries (rows of `seed_variance`, `adversarial`, `adversarial_model`; any subset).
Per cell over its test instances: the median and mean of `jsd_seed_max` (JSD of the cell's attention from the
most distant other seed's on the same instance), the means of `jsd_seed_mean` and `tvd_seed_mean`; the
median and mean of J&W's eps-max adversarial JSD `jsd_eps_max`; the share of instances (present in both)
whose adversarial JSD exceeds the seed JSD; and each W&P adversary's mean JSD (`adversarial_model`,
`jsd_mean` per variant). Each is then summarised across seeds (`gridlab.report.stats`). W&P's point: an
adversarial distribution is only remarkable when it lies further away than retraining with another seed.
The figure shows per configuration the empirical CDFs of `jsd_seed_max` and `jsd_eps_max` (instances of
all seeds pooled) and each adversary variant's mean JSD as a dashed line; JSD in nats, at most ln 2.

The adversary's trade-off (rows of `adversary_tradeoff`, read by `seed_variance`): per configuration and
weight `lam`, the model-consistent adversary's mean JSD and TVD from the base model beside the model's from its
other seeds, as a table and as W&P's JSD-against-TVD figure.

Diagnostic MLP (rows of `diagnostic_mlp`): test accuracy and macro F1 of the MLP over non-contextual
embeddings weighted uniformly, by its own learned attention, by the base model's frozen attention ("base") or
by a model-consistent adversary's ("adversary"), across seeds, beside the base model's own test accuracy (the
cells' `test_accuracy`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gridlab.report.artifacts import Artifact, Figure, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.plots import COLOURS, facet
from gridlab.report.stats import (
    MODEL_AXES,
    ci,
    configuration_axes,
    constant_axes,
    grouping_axes,
    model_axes,
    numbers,
    pm,
    seed_table,
)
from gridlab.studies.sections import PaperSection

LN2 = math.log(2.0)
VARIANTS = ("uniform", "learned", "base", "adversary")
BY = list(MODEL_AXES)


def build(inputs: ReportInputs) -> SectionOutput:
    artifacts: list[Artifact] = []
    missing: list[str] = []
    seeds, adversarial = inputs.rows("seed_variance"), inputs.rows("adversarial")
    adversaries = inputs.rows("adversarial_model")
    if seeds is None:
        missing.append("W&P seed baseline needs `seed_variance` rows (a grid with several seeds)")
    elif (pd.to_numeric(seeds["other_seeds"]) == 0).all():
        missing.append("W&P seed baseline: no cell has another seed to compare with (add seeds to the grid)")
    if adversarial is None:
        missing.append("W&P comparison with J&W's adversarial attention needs `adversarial` rows")
    if adversaries is None:
        missing.append("W&P model-consistent adversaries need `adversarial_model` rows")
    if any(rows is not None for rows in (seeds, adversarial, adversaries)):
        artifacts.append(comparison_table(seeds, adversarial, adversaries))
    if seeds is not None or adversarial is not None:
        artifacts.append(cdf_figure(seeds, adversarial, adversaries))
    tradeoff = inputs.rows("adversary_tradeoff")
    if tradeoff is not None:
        frame = tradeoff_frame(tradeoff, seeds)
        artifacts += [tradeoff_table(frame), tradeoff_figure(frame)]
    else:
        missing.append("W&P adversary trade-off needs `adversary_tradeoff` rows (with `seed_variance` to read it by)")
    mlp = inputs.rows("diagnostic_mlp")
    if mlp is not None:
        artifacts.append(diagnostic_table(mlp, inputs.cells))
    else:
        missing.append("W&P diagnostic MLP table needs `diagnostic_mlp` rows (flat classifiers)")
    return SectionOutput(artifacts, missing)


# ---- seed variance against adversaries ----------------------------------------------------------------------


def comparison_frame(seeds, adversarial, adversaries) -> pd.DataFrame:
    """Model axes + one column group per statistic (mean across seeds, <m>_seed_sd, <m>_ci_low/high) and
    n_seeds, from whichever of the three analyses have rows (null keys join null keys)."""
    present = [f for f in (seeds, adversarial, adversaries) if f is not None]
    by = model_axes(present[0]) if present else BY
    parts = []
    if seeds is not None:
        parts.append(
            seed_table(
                seeds,
                by,
                {
                    "seed_jsd_max_median": ("jsd_seed_max", "median"),
                    "seed_jsd_max_mean": ("jsd_seed_max", "mean"),
                    "seed_jsd_mean": ("jsd_seed_mean", "mean"),
                    "seed_tvd_mean": ("tvd_seed_mean", "mean"),
                },
                spread=["seed_jsd_max_median", "seed_jsd_max_mean"],
            )
        )
    if adversarial is not None:
        parts.append(
            seed_table(
                adversarial,
                by,
                {"adversarial_jsd_median": ("jsd_eps_max", "median"), "adversarial_jsd_mean": ("jsd_eps_max", "mean")},
                spread=["adversarial_jsd_median", "adversarial_jsd_mean"],
            )
        )
    if seeds is not None and adversarial is not None:
        both = adversarial.merge(seeds[["cell_id", "instance_id", "jsd_seed_max"]], on=["cell_id", "instance_id"])
        above = both["jsd_eps_max"].astype(float) > both["jsd_seed_max"].astype(float)
        both["above"] = above.astype(float).where(both["jsd_seed_max"].notna() & both["jsd_eps_max"].notna())
        if len(both):
            parts.append(seed_table(both, by, {"adversarial_above_seed": ("above", "mean")}))
    if adversaries is not None:
        for variant, group in adversaries.groupby("variant", sort=True):
            parts.append(seed_table(group, by, {f"adversary_{variant}_jsd": ("jsd_mean", "mean")}))
    frame: pd.DataFrame | None = None
    n_seeds: list[str] = []
    for i, part in enumerate(parts):
        part = part.drop(columns="n_instances").rename(columns={"n_seeds": f"_n{i}"})
        n_seeds.append(f"_n{i}")
        frame = part if frame is None else frame.merge(part, on=by, how="outer")
    assert frame is not None, "called only when one of the three analyses has rows"
    frame["n_seeds"] = frame[n_seeds].max(axis=1).astype(int)
    return frame.drop(columns=n_seeds).sort_values(by, kind="stable").reset_index(drop=True)


def comparison_table(seeds, adversarial, adversaries) -> Table:
    frame = comparison_frame(seeds, adversarial, adversaries)
    display = frame[[a for a in grouping_axes(frame) if a in configuration_axes(frame)]].copy()
    shown = (
        ("seed_jsd_max_median", "seed JSD (median)"),
        ("seed_jsd_max_mean", "seed JSD (mean)"),
        ("adversarial_jsd_median", "J&W adversarial JSD (median)"),
        ("adversarial_jsd_mean", "J&W adversarial JSD (mean)"),
    )
    for column, name in shown:
        if column in frame:
            display[name] = pm(frame, column, digits=3)
    if "adversarial_above_seed" in frame:
        display["share adversarial > seed"] = pm(frame, "adversarial_above_seed")
    for column in [c for c in frame.columns if c.startswith("adversary_") and c.endswith("_jsd")]:
        variant = column[len("adversary_") : -len("_jsd")]
        display[f"W&P adversary JSD ({variant})"] = pm(frame, column, digits=3)
    display["seeds"] = frame["n_seeds"]
    fixed = constant_axes(frame, grouping_axes(frame))
    caption = (
        "Per configuration, statistics per model over its test instances, then mean ± std across seeds: "
        "seed JSD = JSD of the attention from the most distant other seed's model on the same instance "
        "(`seed_variance`, jsd_seed_max); J&W adversarial JSD = ε-max JSD (`adversarial`); share adversarial > "
        "seed = instances whose adversarial JSD exceeds their seed JSD; W&P adversary JSD = mean JSD of a "
        "trained adversary's attention from the base model's (`adversarial_model`). JSD in nats (≤ ln 2 ≈ 0.69)."
        + (f" All rows: {fixed}." if fixed else "")
    )
    return Table("wp_seed_vs_adversarial", "W&P: seed variance against adversarial attention", frame, caption, display)


def cdf_figure(seeds, adversarial, adversaries) -> Figure:
    """One panel per configuration: ECDFs of jsd_seed_max and jsd_eps_max, adversaries' mean JSD as lines."""
    sources = [
        rows.assign(_source=name)
        for name, rows in (("seed", seeds), ("adversarial", adversarial), ("adversary", adversaries))
        if rows is not None
    ]
    frame = pd.concat(sources, ignore_index=True)
    pooled = frame[frame["_source"] != "adversary"]
    axes = grouping_axes(pooled)
    figure = facet(
        frame,
        _cdfs,
        "Attention JSD: seeds vs adversaries",
        xlabel="JSD (nats)",
        ylabel="share of instances ≤ x",
        axes=axes,
        sharex=True,
        legend=True,
    )
    return Figure(
        "wp_jsd_cdf",
        "W&P: seed variance against adversarial JSD",
        figure,
        (
            "Empirical CDFs over test instances (seeds pooled) of the JSD between a model's attention and the most "
            "distant other seed's (seed_variance) and of J&W's ε-max adversarial JSD (adversarial); dashed lines: the "
            "mean JSD of W&P's trained adversaries (adversarial_model, mean across seeds). "
            "An adversarial curve right of "
            "the seed curve moves attention further than retraining with another seed does."
        ),
    )


def _cdfs(ax, rows: pd.DataFrame) -> None:
    for i, (source, column, label) in enumerate(
        (
            ("seed", "jsd_seed_max", "other seeds (max JSD)"),
            ("adversarial", "jsd_eps_max", "J&W adversarial (ε-max JSD)"),
        )
    ):
        values = (
            np.sort(rows.loc[rows["_source"] == source, column].dropna().astype(float).to_numpy())
            if column in rows
            else np.zeros(0)
        )
        if len(values):
            ax.step(
                np.concatenate([[0.0], values]),
                np.arange(len(values) + 1) / len(values),
                where="post",
                color=COLOURS[i],
                label=label,
            )
    adversaries = rows[rows["_source"] == "adversary"]
    for i, (variant, group) in enumerate(adversaries.groupby("variant", sort=True) if len(adversaries) else []):
        jsd = group.groupby("cell_id")["jsd_mean"].mean().mean()  # per cell, then across seeds
        ax.axvline(jsd, linestyle="--", color=COLOURS[2 + i], label=f"W&P adversary, {variant} (mean JSD)")
    ax.set_xlim(0.0, LN2 * 1.02)
    ax.set_ylim(0.0, 1.0)


# ---- the adversary's trade-off --------------------------------------------------------------------------------

TRADEOFF_MEASURES = ("jsd", "tvd", "seed_jsd", "seed_tvd", "jsd_excess", "tvd_excess")


def tradeoff_frame(tradeoff: pd.DataFrame, seeds: pd.DataFrame | None) -> pd.DataFrame:
    """Per configuration and `lam`: the adversary's mean JSD and TVD from the base model, the same model's mean
    JSD and TVD from its other seeds (`seed_variance`: jsd_seed_mean, tvd_seed_mean) and the adversary's excess
    over them (`jsd_excess`, `tvd_excess`, computed per model before the seeds are pooled), each across seeds
    with its 95% interval. Without `seed_variance` rows the seed and excess columns are NaN."""
    by = model_axes(tradeoff)
    per_model = tradeoff.assign(jsd=tradeoff["jsd_mean"].astype(float), tvd=tradeoff["tvd_mean"].astype(float))
    if seeds is not None and (pd.to_numeric(seeds["other_seeds"]) > 0).any():
        compared = seeds[pd.to_numeric(seeds["other_seeds"]) > 0]
        seed_means = compared.groupby("cell_id").agg(
            seed_jsd=("jsd_seed_mean", lambda v: v.astype(float).mean()),
            seed_tvd=("tvd_seed_mean", lambda v: v.astype(float).mean()),
        )
        per_model = per_model.merge(seed_means, left_on="cell_id", right_index=True, how="left")
    else:
        per_model = per_model.assign(seed_jsd=np.nan, seed_tvd=np.nan)
    per_model = per_model.assign(
        jsd_excess=per_model["jsd"] - per_model["seed_jsd"], tvd_excess=per_model["tvd"] - per_model["seed_tvd"]
    )
    table = seed_table(per_model, [*by, "lam"], {m: (m, "mean") for m in TRADEOFF_MEASURES})
    return table.drop(columns="n_instances").sort_values([*by, "lam"], kind="stable").reset_index(drop=True)


def tradeoff_table(frame: pd.DataFrame) -> Table:
    display = frame[[a for a in grouping_axes(frame) if a in configuration_axes(frame)]].copy()
    display["lam"] = [f"{lam:g}" for lam in frame["lam"]]
    shown = (
        ("jsd", "adversary JSD"),
        ("seed_jsd", "seed JSD"),
        ("tvd", "adversary TVD"),
        ("seed_tvd", "seed TVD"),
    )
    for column, name in shown:
        display[name] = pm(frame, column, digits=3)
    for column, name in (("jsd_excess", "JSD − seed's"), ("tvd_excess", "TVD − seed's")):
        display[f"{name} 95% CI"] = ci(frame, column, digits=3)
    display["seeds"] = frame["n_seeds"]
    caption = (
        "W&P's model-consistent adversary (`adversary_tradeoff`: a fresh model trained to match the base model's "
        "outputs, TVD, while its attention moves away, weighted by lam) at each lam: mean over test instances of "
        "the JSD of its attention and the TVD of its outputs from the base model's, beside the same model's mean "
        "JSD and TVD from its other seeds (`seed_variance`); mean ± std across seeds, and the 95% t-interval of "
        "the adversary's excess over the seeds' (per model, then across seeds). An adversary whose JSD lies "
        "beyond the seeds' at a TVD within theirs has found attention as different as another seed's, at "
        "another seed's output change. JSD in nats (≤ ln 2 ≈ 0.69)."
    )
    return Table(
        "wp_adversary_tradeoff",
        "W&P: the adversary's attention distance against its output change",
        frame,
        caption,
        display,
    )


def tradeoff_figure(frame: pd.DataFrame) -> Figure:
    figure = facet(
        frame,
        _tradeoff_curve,
        "Adversary's attention JSD against output TVD, by lam",
        xlabel="JSD from the base model's attention (nats)",
        ylabel="TVD from the base model's outputs",
        axes=[a for a in grouping_axes(frame) if a in configuration_axes(frame)],
        legend=True,
    )
    return Figure(
        "wp_tradeoff_curve",
        "W&P: the adversary's trade-off",
        figure,
        (
            "Per configuration, the model-consistent adversary at each lam (mean across seeds, lam written by each "
            "point, joined in rising lam) and the seeds' point: the mean JSD and TVD of a model from its other "
            "seeds. Points right of the seeds' and not above them are attention as far from the model's as "
            "another seed's at no larger output change."
        ),
    )


def _tradeoff_curve(ax, rows: pd.DataFrame) -> None:
    rows = rows.sort_values("lam")
    ax.plot(rows["jsd"], rows["tvd"], marker="o", color=COLOURS[3], label="adversary (by lam)")
    for _, row in rows.iterrows():
        if not (pd.isna(row["jsd"]) or pd.isna(row["tvd"])):
            ax.annotate(
                f"{row['lam']:g}", (row["jsd"], row["tvd"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
    seeds = rows[["seed_jsd", "seed_tvd"]].dropna().head(1)
    if len(seeds):
        ax.scatter(seeds["seed_jsd"], seeds["seed_tvd"], marker="^", color=COLOURS[0], label="other seeds", zorder=3)
    ax.set_xlim(0.0, LN2 * 1.1)  # room for the lam labels of points at the bound
    ax.set_ylim(bottom=0.0)


# ---- diagnostic MLP -------------------------------------------------------------------------------------------


def diagnostic_frame(rows: pd.DataFrame, cells: pd.DataFrame | None) -> pd.DataFrame:
    by = model_axes(rows)
    table = seed_table(rows, [*by, "variant"], {"accuracy": ("accuracy", "mean"), "f1_macro": ("f1_macro", "mean")})
    table = table.drop(columns="n_instances")
    if cells is not None and len(cells) and "test_accuracy" in cells.columns:
        model = seed_table(cells, by, {"model_accuracy": ("test_accuracy", "mean")}, spread=[])
        table = table.merge(model[[*by, "model_accuracy"]], on=by, how="left")
    else:
        table["model_accuracy"] = np.nan
    order = {v: i for i, v in enumerate(VARIANTS)}
    table = table.assign(_o=table["variant"].map(order)).sort_values([*BY, "_o"], kind="stable")
    return table.drop(columns="_o").reset_index(drop=True)


def diagnostic_table(rows: pd.DataFrame, cells: pd.DataFrame | None) -> Table:
    frame = diagnostic_frame(rows, cells)
    display = frame[[a for a in grouping_axes(frame) if a in configuration_axes(frame)] + ["variant"]].copy()
    for column, name in (("accuracy", "accuracy"), ("f1_macro", "macro F1")):
        display[name] = pm(frame, column, digits=3)
        display[f"{name} 95% CI"] = ci(frame, column, digits=3)
    display["seeds"] = frame["n_seeds"]
    display["model accuracy"] = numbers(frame["model_accuracy"], 3)
    caption = (
        "W&P's diagnostic MLP over non-contextual embeddings: tokens weighted uniformly ('uniform'), by the "
        "MLP's own trained attention ('learned'), by the base model's frozen attention ('base') or by the "
        "frozen attention of a model-consistent adversary of it ('adversary'). Test accuracy and macro F1: "
        "mean ± std across seeds, 95% t-interval; model accuracy: the base model's own test accuracy, mean "
        "across seeds. W&P read 'base' above 'uniform' as attention carrying information the model uses, and "
        "'adversary' below 'base' as adversarial attention that does not carry it."
    )
    return Table(
        "wp_diagnostic_mlp",
        "W&P: diagnostic MLP with uniform, learned, the model's and an adversary's attention",
        frame,
        caption,
        display,
    )


SECTION = PaperSection(
    id="wiegreffe_pinter",
    title="Wiegreffe & Pinter (2019), Attention is not not Explanation",
    analyses=("seed_variance", "adversarial", "adversarial_model", "adversary_tradeoff", "diagnostic_mlp"),
    build=build,
    reads_cells=True,
)
