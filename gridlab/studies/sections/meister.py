"""Meister et al. (2021), "Is Sparse Attention more Interpretable?": their Table 1 (entropy of the input
importance of intermediate representations), Table 2 (correlation of the sparsegen lambda with entropy),
Table 6 (Kendall tau of attention with each feature-importance measure), Fig. 3 (tau against lambda),
Table 5 (frozen and unfrozen adversarial models) and Table 3's baseline test accuracy.

    >>> output = SECTION.build(ReportInputs.load(expanded))   # meister_table1/2/3/5/6, meister_fig3

Rows: `sparsity_importance` (per instance), `adversarial_model` (per model) and the cells' test metrics
(Table 3: the paper's baseline is its softmax model, joined to ours with projection softmax). Every
statistic is computed per cell first, then across seeds (`gridlab.report.stats`): a value is the mean
across seeds of the cells' means, with the std and 95% t-interval across seeds; `<m>_sd` is the std over a
model's instances (the paper's "±"), averaged across seeds.

Table 2: within each configuration but lambda (dataset, encoder, attention, architecture, attention mode),
each sparsegen cell is one point (its lambda, its mean entropy over instances; seeds are separate points).
We give Kendall tau-b (the correlation the paper's footnote 2 names), Pearson r and Spearman rho of lambda
with every entropy column; the paper's Table 2 is the entropy of g_y(x) (`entropy_gy_x`). How the paper
pooled its points is not stated.

Published numbers (`gridlab.studies.published`, meister_table1/2/5/6) are joined on dataset, encoder and
attention ("BiLSTM": lstm with additive attention; "Transformer": transformer with dot attention),
projection where the paper names one, and the adversary variant. Table 5's accuracies are not in
`published` (the text extraction runs them into their coloured differences), so only its JSD stands beside ours.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from gridlab.report.artifacts import Artifact, Figure, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.plots import COLOURS, facet
from gridlab.report.stats import (
    MODEL_AXES,
    accuracy_table,
    ci,
    constant_axes,
    grouping_axes,
    merge_on,
    numbers,
    per_cell,
    pm,
    seed_summary,
    seed_table,
)
from gridlab.studies.comparison import Comparison, long_rows
from gridlab.studies.published import citation, published
from gridlab.studies.sections import PaperSection

MEASURES = ("tau_gy_x", "tau_dy_x", "tau_gy_h", "tau_dy_h")
ENTROPIES = ("entropy_gy_x", "entropy_dy_x", "entropy_gy_h", "entropy_dy_h", "entropy_gh_x")
SYMBOLS = {"tau_gy_x": "g_y(x)", "tau_dy_x": "D_y(x)", "tau_gy_h": "g_y(h)", "tau_dy_h": "D_y(h)"}
SWEEP = tuple(a for a in MODEL_AXES if a not in ("projection", "projection_lambda"))  # a lambda sweep shares these
MIN_SWEEP_LAMBDAS = 3  # over two lambda values any rank correlation is +-1: a sweep cut short says nothing
PAPER_MODEL = ("dataset", "encoder", "attention")
NAN = math.nan


def build(inputs: ReportInputs) -> SectionOutput:
    artifacts: list[Artifact] = []
    missing: list[str] = []
    rows = inputs.rows("sparsity_importance")
    if rows is not None:
        artifacts += [entropy_table(rows), tau_table(rows)]
        sweep = lambda_table(rows)
        if len(sweep):
            artifacts += [sweep_table(sweep), lambda_figure(rows)]
        else:
            missing.append(
                f"Meister Table 2 and Fig. 3 need sparsegen cells with at least {MIN_SWEEP_LAMBDAS} "
                "projection_lambda values (a grid axis `projection_lambda` with projection sparsegen)"
            )
    else:
        missing.append("Meister Tables 1, 2, 6 and Fig. 3 need `sparsity_importance` rows")
    adversaries = inputs.rows("adversarial_model")
    if adversaries is not None:
        artifacts.append(adversary_table(adversaries))
    else:
        missing.append("Meister Table 5 needs `adversarial_model` rows")
    baseline = baseline_frame(inputs.cells)
    if baseline is not None:
        artifacts.append(baseline_table(baseline))
    return SectionOutput(artifacts, missing)


def _shown(frame: pd.DataFrame, extra: tuple[str, ...] = ()) -> list[str]:
    return [*[a for a in grouping_axes(frame) if a in MODEL_AXES], *extra]


# ---- Tables 1 and 6 -----------------------------------------------------------------------------------------


def entropy_frame(rows: pd.DataFrame) -> pd.DataFrame:
    table = seed_table(
        rows,
        list(MODEL_AXES),
        {"entropy_gh_x": ("entropy_gh_x", "mean"), "entropy_gh_x_sd": ("entropy_gh_x", "std")},
        spread=["entropy_gh_x"],
    )
    paper = published("meister_table1")[[*PAPER_MODEL, "projection", "mean", "std"]]
    return merge_on(
        table, paper.rename(columns={"mean": "paper_mean", "std": "paper_std"}), [*PAPER_MODEL, "projection"]
    )


def entropy_table(rows: pd.DataFrame) -> Table:
    frame = entropy_frame(rows)
    display = frame[_shown(frame)].copy()
    display["H(g_h(x))"] = pm(frame, "entropy_gh_x", "entropy_gh_x_sd")
    display["seed sd"] = frame["entropy_gh_x_seed_sd"].round(3)
    display["95% CI"] = ci(frame, "entropy_gh_x")
    display["seeds"] = frame["n_seeds"]
    display["paper"] = pm(frame, "paper_mean", "paper_std")
    caption = (
        "Normalised entropy of the gradient importance of the inputs for each intermediate representation, "
        "H~(g_{h_p}(x)) (entropy_gh_x, mean over p): mean ± std over a model's instances, averaged across "
        "seeds; seed sd and 95% CI: across seeds of the per-seed mean. "
        f"Paper: {citation('meister_table1')} (BiLSTM = lstm + additive, Transformer = transformer + dot)."
        + _fixed(frame)
    )
    return Table(
        "meister_table1", "Meister Table 1: entropy of the input importance of representations", frame, caption, display
    )


def tau_frame(rows: pd.DataFrame) -> pd.DataFrame:
    measures = {}
    for m in MEASURES:
        measures[m] = (m, "mean")
        measures[f"{m}_sd"] = (m, "std")
    table = seed_table(rows, list(MODEL_AXES), measures, spread=list(MEASURES))
    paper = published("meister_table6")
    wide = None
    for m in MEASURES:
        part = paper[paper["measure"] == m][[*PAPER_MODEL, "projection", "mean", "std"]].rename(
            columns={"mean": f"paper_{m}", "std": f"paper_{m}_sd"}
        )
        wide = part if wide is None else wide.merge(part, on=[*PAPER_MODEL, "projection"], how="outer")
    return merge_on(table, wide, [*PAPER_MODEL, "projection"])


def tau_table(rows: pd.DataFrame) -> Table:
    frame = tau_frame(rows)
    display = frame[_shown(frame)].copy()
    for m in MEASURES:
        display[SYMBOLS[m]] = pm(frame, m, f"{m}_sd")
    for m in MEASURES:
        display[f"{SYMBOLS[m]} 95% CI"] = ci(frame, m)
    display["seeds"] = frame["n_seeds"]
    for m in MEASURES:
        display[f"paper {SYMBOLS[m]}"] = pm(frame, f"paper_{m}", f"paper_{m}_sd")
    caption = (
        "Kendall τ-b of attention with the gradient (g) and leave-one-out (D) importance of the inputs (x) and "
        "of the intermediate representations (h): mean ± std over a model's instances, averaged across "
        "seeds; 95% CI: t-interval across seeds of the per-seed mean. "
        f"Paper: {citation('meister_table6')} (their I is our h)." + _fixed(frame)
    )
    return Table(
        "meister_table6", "Meister Table 6: Kendall τ of attention with feature importance", frame, caption, display
    )


def _fixed(frame: pd.DataFrame) -> str:
    fixed = constant_axes(frame, grouping_axes(frame))
    return f" All rows: {fixed}." if fixed else ""


# ---- Table 2 and Fig. 3 -------------------------------------------------------------------------------------


def sparsegen(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[(rows["projection"] == "sparsegen") & rows["projection_lambda"].notna()]


def correlations(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Kendall tau-b, Pearson r and Spearman rho of y with x over the points where both are defined; NaN
    where either is constant."""
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"kendall_tau_b": NAN, "pearson_r": NAN, "spearman_rho": NAN, "n_cells": len(x)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two points: scipy warns that r is trivially +-1
        return {
            "kendall_tau_b": float(scipy_stats.kendalltau(x, y, variant="b").statistic),
            "pearson_r": float(scipy_stats.pearsonr(x, y).statistic),
            "spearman_rho": float(scipy_stats.spearmanr(x, y).statistic),
            "n_cells": len(x),
        }


def lambda_table(rows: pd.DataFrame) -> pd.DataFrame:
    """SWEEP + entropy + correlations of lambda with each cell's mean entropy + the paper's Table 2."""
    sparse = sparsegen(rows)
    records = []
    for entropy in ENTROPIES:
        cells = per_cell(sparse, [*SWEEP, "projection_lambda", "seed"], entropy)
        for key, group in cells.groupby(list(SWEEP), dropna=False, sort=True):
            lambdas = group["projection_lambda"].to_numpy(dtype=float)
            if len(np.unique(lambdas)) < MIN_SWEEP_LAMBDAS:
                continue
            records.append(
                {
                    **dict(zip(SWEEP, key)),
                    "entropy": entropy,
                    **correlations(lambdas, group[entropy].to_numpy(dtype=float)),
                    "n_lambdas": len(np.unique(lambdas)),
                }
            )
    frame = pd.DataFrame.from_records(
        records, columns=[*SWEEP, "entropy", "kendall_tau_b", "pearson_r", "spearman_rho", "n_cells", "n_lambdas"]
    )
    paper = published("meister_table2")[[*PAPER_MODEL, "value"]].assign(entropy="entropy_gy_x")
    frame = merge_on(frame, paper.rename(columns={"value": "paper_correlation"}), [*PAPER_MODEL, "entropy"])
    order = {e: i for i, e in enumerate(ENTROPIES)}
    return (
        frame.assign(_o=frame["entropy"].map(order))
        .sort_values([*SWEEP, "_o"], kind="stable")
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def sweep_table(frame: pd.DataFrame) -> Table:
    shown = [a for a in SWEEP if a in ("dataset", "encoder") or frame[a].nunique(dropna=False) > 1]
    display = frame[[*shown, "entropy"]].copy()
    for column in ("kendall_tau_b", "pearson_r", "spearman_rho"):
        display[column] = frame[column].round(3)
    display["cells"] = frame["n_cells"]
    display["λ values"] = frame["n_lambdas"]
    display["paper"] = numbers(frame["paper_correlation"], 3)
    caption = (
        "Correlation of the sparsegen λ with each entropy of normalised importance, over the sparsegen cells "
        "of each configuration: one point per cell (its λ and its mean entropy over test instances; seeds are "
        "separate points). Kendall τ-b is the paper's correlation (its footnote 2); Pearson r and Spearman ρ "
        f"beside. Paper: {citation('meister_table2')}, entropy of g_y(x) (entropy_gy_x) only."
    )
    return Table("meister_table2", "Meister Table 2: correlation of sparsegen λ with entropy", frame, caption, display)


def lambda_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """SWEEP + projection_lambda + measure + mean, std, n_seeds, ci_low, ci_high: the points of Fig. 3."""
    sparse = sparsegen(rows)
    parts = [seed_summary(sparse, [*SWEEP, "projection_lambda"], m).assign(measure=m) for m in MEASURES]
    return pd.concat(parts, ignore_index=True)


def _tau_lines(ax, points: pd.DataFrame) -> None:
    for i, m in enumerate(MEASURES):
        line = points[points["measure"] == m].sort_values("projection_lambda")
        error = np.vstack([line["mean"] - line["ci_low"], line["ci_high"] - line["mean"]])
        ax.errorbar(
            line["projection_lambda"],
            line["mean"],
            yerr=np.nan_to_num(error),
            color=COLOURS[i % 2],
            linestyle="-" if m.endswith("_x") else "--",
            marker="o",
            markersize=3,
            capsize=2,
            label=SYMBOLS[m],
        )
    ax.set_xscale("symlog", linthresh=1.0)  # log-scaled below -1, as the paper's axis for lambda < 0
    lambdas = sorted(points["projection_lambda"].dropna().unique())
    ax.set_xticks(lambdas, [f"{lam:g}" for lam in lambdas])


def lambda_figure(rows: pd.DataFrame) -> Figure:
    points = lambda_frame(rows)
    axes = [a for a in SWEEP if a in ("dataset", "encoder") or points[a].nunique(dropna=False) > 1]
    figure = facet(
        points,
        _tau_lines,
        "Kendall τ against sparsegen λ",
        xlabel="sparsegen λ (symlog)",
        ylabel="Kendall τ",
        axes=axes,
        sharex=False,
        legend=True,
    )
    return Figure(
        "meister_fig3",
        "Meister Fig. 3: Kendall τ of attention with importance against λ",
        figure,
        "Sparsegen cells: mean across seeds of each cell's mean Kendall τ-b of attention with the gradient "
        "(g) and leave-one-out (D) importance of the inputs (x, solid) and of the intermediate "
        "representations (h, dashed); error bars: 95% t-interval across seeds. The paper (IMDb) finds τ "
        "with input importance falling as λ (sparsity) grows.",
    )


# ---- Table 5 ------------------------------------------------------------------------------------------------


def adversary_frame(rows: pd.DataFrame) -> pd.DataFrame:
    measures = {c: (c, "mean") for c in ("jsd_mean", "accuracy", "base_accuracy", "accuracy_delta")}
    table = seed_table(rows, [*MODEL_AXES, "variant"], measures).drop(columns="n_instances")
    paper = published("meister_table5")[[*PAPER_MODEL, "adversary", "jsd"]]
    return merge_on(
        table, paper.rename(columns={"adversary": "variant", "jsd": "paper_jsd"}), [*PAPER_MODEL, "variant"]
    )


def adversary_table(rows: pd.DataFrame) -> Table:
    frame = adversary_frame(rows)
    display = frame[_shown(frame, ("variant",))].copy()
    for column, name, digits in (
        ("jsd_mean", "JSD", 3),
        ("accuracy", "accuracy", 3),
        ("accuracy_delta", "Δ accuracy", 3),
    ):
        display[name] = pm(frame, column, digits=digits)
    display["base accuracy"] = frame["base_accuracy"].round(3)
    display["seeds"] = frame["n_seeds"]
    display["paper JSD"] = numbers(frame["paper_jsd"], 2)
    caption = (
        "W&P-style adversaries (`adversarial_model`): 'frozen' starts from the base model's parameters, "
        "'unfrozen' trains a fresh model. JSD of the adversary's attention from the base model's (mean over "
        "test instances, nats; at most ln 2 ≈ 0.69), the adversary's test accuracy and its difference from the "
        "base model's: mean ± std across seeds. "
        f"Paper: {citation('meister_table5')}; its accuracies are not in gridlab.studies.published (garbled "
        "in the text extraction)." + _fixed(frame)
    )
    return Table("meister_table5", "Meister Table 5: frozen and unfrozen adversarial models", frame, caption, display)


# ---- Table 3 ------------------------------------------------------------------------------------------------


def baseline_frame(cells: pd.DataFrame) -> pd.DataFrame | None:
    """Our test accuracy per model across seeds, beside Table 3's (printed for the softmax baselines only);
    None when no cell is trained."""
    table = accuracy_table(cells, list(MODEL_AXES))
    if table is None:
        return None
    paper = baseline_published()[[*PAPER_JOIN, "published"]].rename(columns={"published": "paper_accuracy"})
    return merge_on(table, paper, list(PAPER_JOIN))


def baseline_table(frame: pd.DataFrame) -> Table:
    display = frame[_shown(frame)].copy()
    display["test accuracy"] = pm(frame, "test_accuracy", digits=3)
    display["seeds"] = frame["n_seeds"]
    display["paper"] = numbers(frame["paper_accuracy"], 2)
    caption = (
        "Test accuracy of each trained model (the weights its dev selection kept): mean ± std across seeds. "
        f"Paper: {citation('meister_table3')}, for the softmax baselines (BiLSTM = lstm + additive, "
        "Transformer = transformer + dot)." + _fixed(frame)
    )
    return Table("meister_table3", "Meister Table 3: baseline test accuracy", frame, caption, display)


# ---- the fidelity table's comparisons ------------------------------------------------------------------------

PAPER_JOIN = (*PAPER_MODEL, "projection")


def entropy_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    rows = inputs.rows("sparsity_importance")
    if rows is None:
        return None
    return long_rows(entropy_frame(rows), MODEL_AXES, {"entropy_gh_x": ("entropy_gh_x", "entropy_gh_x_seed_sd")})


def entropy_published() -> pd.DataFrame:
    paper = published("meister_table1")
    return paper[list(PAPER_JOIN)].assign(quantity=paper["measure"], published=paper["mean"])


def tau_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    rows = inputs.rows("sparsity_importance")
    if rows is None:
        return None
    return long_rows(tau_frame(rows), MODEL_AXES, {m: (m, f"{m}_seed_sd") for m in MEASURES})


def tau_published() -> pd.DataFrame:
    paper = published("meister_table6")
    return paper[list(PAPER_JOIN)].assign(quantity=paper["measure"], published=paper["mean"])


def sweep_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    """Ours is one correlation per configuration over its cells, not a mean across seeds: no seed spread."""
    rows = inputs.rows("sparsity_importance")
    if rows is None:
        return None
    frame = lambda_table(rows)
    frame = frame[frame["entropy"] == "entropy_gy_x"].reset_index(drop=True)
    long = long_rows(
        frame, SWEEP, {"corr_lambda_entropy_gy_x": ("kendall_tau_b", None)}, n_seeds=None, n_instances=None
    )
    notes = [f"ours: Kendall τ-b over {c} cells, {n} λ values" for c, n in zip(frame["n_cells"], frame["n_lambdas"])]
    return long.assign(note=notes)


def sweep_published() -> pd.DataFrame:
    paper = published("meister_table2")
    return paper[list(PAPER_JOIN)].assign(quantity=paper["measure"], published=paper["value"])


def baseline_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    frame = baseline_frame(inputs.cells)
    if frame is None:
        return None
    quantities = {"test_performance": ("test_accuracy", "test_accuracy_seed_sd")}
    return long_rows(frame, MODEL_AXES, quantities, n_instances=None)


def baseline_published() -> pd.DataFrame:
    """Table 3's accuracies, stated for the models' baselines: softmax attention."""
    paper = published("meister_table3")
    baselines = paper[list(PAPER_MODEL)].assign(projection="softmax")
    return baselines.assign(quantity="test_performance", published=paper["accuracy"])


def adversary_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    rows = inputs.rows("adversarial_model")
    if rows is None:
        return None
    frame = adversary_frame(rows)
    return long_rows(frame, [*MODEL_AXES, "variant"], {"adversary_jsd": ("jsd_mean", "jsd_mean_seed_sd")})


def adversary_published() -> pd.DataFrame:
    paper = published("meister_table5")
    return paper[list(PAPER_MODEL)].assign(variant=paper["adversary"], quantity="adversary_jsd", published=paper["jsd"])


def adversary_admit(frame: pd.DataFrame, configs: pd.DataFrame, inputs: ReportInputs) -> pd.DataFrame:
    """Only the adversary variants the grid's `adversarial_model` trains."""
    variants = getattr(inputs.grid.analyses.get("adversarial_model"), "variants", ("frozen", "unfrozen"))
    return frame[frame["variant"].isin(list(variants))]


COMPARISONS = (
    Comparison(
        "meister_table1",
        ("sparsity_importance",),
        keys=MODEL_AXES,
        join=PAPER_JOIN,
        paper=entropy_published,
        ours=entropy_ours,
    ),
    Comparison(
        "meister_table2",
        ("sparsity_importance",),
        keys=SWEEP,
        join=PAPER_JOIN,
        paper=sweep_published,
        ours=sweep_ours,
    ),
    Comparison(
        "meister_table3",
        ("sparsity_importance", "adversarial_model"),
        keys=MODEL_AXES,
        join=PAPER_JOIN,
        paper=baseline_published,
        ours=baseline_ours,
        reads_models=True,
    ),
    Comparison(
        "meister_table5",
        ("adversarial_model",),
        keys=MODEL_AXES,
        join=PAPER_MODEL,
        paper=adversary_published,
        ours=adversary_ours,
        extra=("variant",),
        admit=adversary_admit,
        # Printed per encoder only, in App. C, which verifies W&P's adversarial experiments (§4 of W&P, on
        # softmax attention) for the baseline models; the other projections are gridlab's extra models.
        printed_for={"projection": "softmax"},
    ),
    Comparison(
        "meister_table6",
        ("sparsity_importance",),
        keys=MODEL_AXES,
        join=PAPER_JOIN,
        paper=tau_published,
        ours=tau_ours,
    ),
)

SECTION = PaperSection(
    id="meister",
    title="Meister et al. (2021), Is Sparse Attention more Interpretable?",
    analyses=("sparsity_importance", "adversarial_model"),
    build=build,
    reads_cells=True,
    comparisons=COMPARISONS,
)
