"""Jain & Wallace (2019), "Attention is not Explanation": their Table 2 (Kendall tau of attention with
gradient and leave-one-out importance, per predicted class) beside the paper's numbers, the histograms of
Fig. 2, permutation (Fig. 3) and adversarial attention (Figs. 4-5), and test performance beside Table 1.

Fig. 4 has no printed statistic; its text puts the eps-max JSD mass "toward the upper-bound of 0.69", and
that bound is the published number the fidelity table holds our median against. Two selection rules are
shown side by side because J&W's own code disagrees with their paper: Algorithm 3 (and gridlab's
`jsd_eps_max`) keeps a candidate whose output TVD is within eps (0.01 for classification), while the code
that drew the figure keeps candidates up to TVD 0.05, which can only raise the eps-max JSD. The 0.05 value
is recomputed from the rows' `candidate_jsd` / `candidate_tvd`; rows written before those columns existed
leave it empty, and the caption says so.

    >>> output = SECTION.build(ReportInputs.load(expanded))      # SectionOutput with tables and figures

Every instance statistic is computed per cell (= per seed) and then aggregated across seeds
(`gridlab.report.stats`); histograms and scatter plots pool the instances of all seeds of a configuration.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gridlab.report.artifacts import Artifact, Figure, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.plots import class_histogram, facet, scatter
from gridlab.report.stats import (
    MODEL_AXES,
    accuracy_table,
    ci,
    constant_axes,
    grouping_axes,
    merge_on,
    model_axes,
    plus_minus,
    pm,
    seed_table,
)
from gridlab.studies.comparison import Comparison, long_rows
from gridlab.studies.published import citation, published
from gridlab.studies.reruns import KEYS as RERUN_KEYS
from gridlab.studies.reruns import reruns
from gridlab.studies.sections import PaperSection

SIGNIFICANCE = 0.05  # J&W's "Sig. Frac.": share of instances with p < 0.05
ALL = "all"  # the class label of the rows over every instance of a model (J&W's "Overall")
PAPER_KEYS = ("dataset", "encoder", "attention", "projection", "architecture", "attention_mode", "pred")
# Table 1 is their BiLSTM with learned softmax attention, additive and dot alike (uniform- or random-trained
# models, HANs and sparse projections are other models, never judged against it)
TABLE1_KEYS = ("dataset", "encoder", "projection", "architecture", "attention_mode")
FIGURE4_KEYS = PAPER_KEYS[:-1]  # Fig. 4's panels are per model, not per class
PLOTTING_TVD = 0.05  # J&W's plot_multi_adversarial drops a candidate only when its output TVD exceeds this
CANDIDATES = ("candidate_jsd", "candidate_tvd")


def significant(p: pd.Series) -> pd.Series:
    """1.0 where p < 0.05, 0.0 where not, NaN where p is null (tau undefined)."""
    values = pd.to_numeric(p, errors="coerce").astype(float)
    return (values < SIGNIFICANCE).astype(float).where(values.notna())


def class_order(pred: pd.Series) -> pd.Series:
    """Sort key for the class column: numeric classes in order, then 'all'."""
    return pred.map(lambda v: math.inf if v == ALL else float(v))


def table2_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, predicted class) and per configuration over all classes: tau means,
    instance std, significant shares, each a mean across seeds of its per-cell value, with seed spread."""
    by = [*model_axes(rows), "pred"]
    frame = rows.assign(
        pred=rows["pred"].astype(int).astype(str), sig_g=significant(rows["p_g"]), sig_loo=significant(rows["p_loo"])
    )
    both = pd.concat([frame, frame.assign(pred=ALL)], ignore_index=True)
    measures = {
        "tau_g": ("tau_g", "mean"),
        "tau_g_sd": ("tau_g", "std"),
        "sig_g": ("sig_g", "mean"),
        "tau_loo": ("tau_loo", "mean"),
        "tau_loo_sd": ("tau_loo", "std"),
        "sig_loo": ("sig_loo", "mean"),
    }
    table = seed_table(both, by, measures, spread=["tau_g", "sig_g", "tau_loo", "sig_loo"])
    table = merge_on(table, paper_table2(), [k for k in PAPER_KEYS if k in table.columns])
    order = table.assign(_class=class_order(table["pred"]))
    return order.sort_values([*model_axes(rows), "_class"], kind="stable").drop(columns="_class").reset_index(drop=True)


def paper_table2() -> pd.DataFrame:
    """J&W Table 2, one row per (model, class), columns paper_tau_g, paper_tau_g_sd, paper_sig_g, ... ."""
    paper = published("jw_table2").dropna(subset=["pred"])
    keys = list(PAPER_KEYS)
    wide = None
    for measure, short in (("tau_g", "g"), ("tau_loo", "loo")):
        part = paper[paper["measure"] == measure][[*keys, "mean", "std", "sig_frac"]].rename(
            columns={"mean": f"paper_tau_{short}", "std": f"paper_tau_{short}_sd", "sig_frac": f"paper_sig_{short}"}
        )
        wide = part if wide is None else wide.merge(part, on=keys, how="outer")
    return wide


def table2(rows: pd.DataFrame) -> Table:
    frame = table2_frame(rows)
    shown = grouping_axes(rows)
    display = frame[shown].copy()
    display["class"] = frame["pred"]
    for short, name in (("g", "τ_g"), ("loo", "τ_loo")):
        display[name] = pm(frame, f"tau_{short}", f"tau_{short}_sd")
        display[f"{name} 95% CI"] = ci(frame, f"tau_{short}")
        display[f"sig {name}"] = [plus_minus(v, None) for v in frame[f"sig_{short}"]]
    display["seeds"] = frame["n_seeds"]
    display["instances"] = frame["n_instances"]
    for short, name in (("g", "τ_g"), ("loo", "τ_loo")):
        display[f"J&W {name}"] = pm(frame, f"paper_tau_{short}", f"paper_tau_{short}_sd")
        display[f"J&W sig {name}"] = frame[f"paper_sig_{short}"]
    fixed = constant_axes(rows, shown)
    caption = (
        "Kendall τ-b of attention with gradient importance (τ_g) and leave-one-out importance (τ_loo), per "
        "configuration and predicted class ('all': every instance). τ: mean ± std over a model's test "
        "instances (J&W's Mean ± Std.), averaged over seeds; 95% CI: t-interval across seeds of the per-seed "
        "mean ('–' with one seed); sig: share of instances with p < 0.05, averaged over seeds. Undefined τ "
        "(a constant vector, T < 2) is left out. "
        f"J&W columns: {citation('jw_table2')}, where dataset, encoder, attention and class match "
        "(their SNLI classes 0/1/2 are contradiction/entailment/neutral, the sorted label names of their code)."
        + (f" All rows: {fixed}." if fixed else "")
    )
    return Table(
        "jw_table2", "J&W Table 2: attention vs gradient and leave-one-out importance", frame, caption, display
    )


def table1_frame(cells: pd.DataFrame) -> pd.DataFrame | None:
    """Our test accuracy per configuration (across seeds) beside J&W Table 1's BiLSTM test performance;
    None when no cell is trained."""
    frame = accuracy_table(cells, model_axes(cells))
    if frame is None:
        return None
    paper = published("jw_table1")[[*TABLE1_KEYS, "metric", "value"]].rename(
        columns={"metric": "paper_metric", "value": "paper_value"}
    )
    return merge_on(frame, paper, [k for k in TABLE1_KEYS if k in frame.columns])


def table1(inputs: ReportInputs) -> Table | None:
    cells = inputs.cells
    frame = table1_frame(cells)
    if frame is None:
        return None
    shown = grouping_axes(cells)
    display = frame[shown].copy()
    display["test accuracy"] = pm(frame, "test_accuracy", digits=3)
    display["95% CI"] = ci(frame, "test_accuracy", digits=3)
    display["seeds"] = frame["n_seeds"]
    display["J&W (BiLSTM)"] = [
        ("–" if pd.isna(v) else f"{v:.2f} ({m})") for v, m in zip(frame["paper_value"], frame["paper_metric"])
    ]
    caption = (
        "Test accuracy of each configuration's best-dev-epoch model: mean ± std across seeds, 95% t-interval. "
        f"J&W: {citation('jw_table1')}, their BiLSTM only; their metric is F1 for classification "
        "(accuracy for QA, micro-F1 for NLI), so the comparison is rough."
    )
    return Table("jw_table1", "Test performance (J&W Table 1)", frame, caption, display)


def permutation_table(rows: pd.DataFrame) -> Table:
    by = model_axes(rows)
    frame = rows.assign(small=(rows["tvd_median"].astype(float) < 0.01).astype(float))
    table = seed_table(
        frame,
        by,
        {
            "tvd_median_median": ("tvd_median", "median"),
            "tvd_median_mean": ("tvd_median", "mean"),
            "share_below_0_01": ("small", "mean"),
            "tvd_max_mean": ("tvd_max", "mean"),
        },
        spread=["tvd_median_median", "share_below_0_01"],
    )
    shown = grouping_axes(rows)
    display = table[shown].copy()
    display["median Δŷ_med"] = pm(table, "tvd_median_median", digits=3)
    display["mean Δŷ_med"] = table["tvd_median_mean"]
    display["share Δŷ_med < 0.01"] = pm(table, "share_below_0_01")
    display["mean max TVD"] = table["tvd_max_mean"]
    display["seeds"] = table["n_seeds"]
    caption = (
        "Permuting attention 100 times per instance (J&W §4.2.1): Δŷ_med is an instance's median output "
        "TVD over its permutations. Per model: the median and mean of Δŷ_med over instances, the share of "
        "instances with Δŷ_med < 0.01, the mean of the largest TVD; then mean ± std across seeds."
    )
    return Table("jw_permutation", "J&W §4.2.1: output change under permuted attention", table, caption, display)


def adversarial_table(rows: pd.DataFrame) -> Table:
    by = model_axes(rows)
    frame = rows.assign(far=(rows["jsd_eps_max"].astype(float) > 0.5).astype(float))
    table = seed_table(
        frame,
        by,
        {
            "jsd_eps_max_mean": ("jsd_eps_max", "mean"),
            "jsd_eps_max_median": ("jsd_eps_max", "median"),
            "share_above_0_5": ("far", "mean"),
            "tvd_at_jsd_mean": ("tvd_at_jsd", "mean"),
        },
        spread=["jsd_eps_max_mean", "share_above_0_5"],
    )
    shown = grouping_axes(rows)
    display = table[shown].copy()
    display["mean ε-max JSD"] = pm(table, "jsd_eps_max_mean", digits=3)
    display["median ε-max JSD"] = table["jsd_eps_max_median"]
    display["share JSD > 0.5"] = pm(table, "share_above_0_5")
    display["mean TVD at it"] = table["tvd_at_jsd_mean"]
    display["seeds"] = table["n_seeds"]
    caption = (
        "Adversarial attention (J&W §4.2.2): ε-max JSD is the largest JSD from the original attention "
        "among the k adversaries whose output TVD stays within ε (0 if none); the bound is ln 2 ≈ 0.69. "
        "Per model: mean and median over instances, share above 0.5, mean TVD of the chosen adversary; "
        "then mean ± std across seeds."
    )
    return Table("jw_adversarial", "J&W §4.2.2: adversarial attention (ε-max JSD)", table, caption, display)


def jsd_within(jsds: object, tvds: object, threshold: float) -> float:
    """Algorithm 3's pick at another threshold: the largest candidate JSD whose output TVD is <= threshold,
    0.0 when none is; NaN when the row has no candidate lists (written before they were stored)."""
    if not (_is_list(jsds) and _is_list(tvds)):
        return math.nan
    divergences = np.asarray(jsds, dtype=float)
    kept = divergences[np.asarray(tvds, dtype=float) <= threshold]
    return float(kept.max()) if kept.size else 0.0


def _is_list(value: object) -> bool:
    """Parquet list cells come back as arrays; a missing one as None, or NaN after concatenating old parts."""
    return isinstance(value, (list, tuple, np.ndarray))


def at_plotting_threshold(rows: pd.DataFrame) -> pd.Series:
    """Per instance, the eps-max JSD J&W's plotting code would draw (TVD <= 0.05); all NaN without the
    candidate columns, so the statistics over it come out NaN rather than failing."""
    if not set(CANDIDATES) <= set(rows.columns):
        return pd.Series(math.nan, index=rows.index, dtype=float)
    values = [jsd_within(j, t, PLOTTING_TVD) for j, t in zip(rows["candidate_jsd"], rows["candidate_tvd"])]
    return pd.Series(values, index=rows.index, dtype=float)


def figure4_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The eps-max JSD per configuration at the paper's rule (TVD <= eps, `jsd_eps_max`) and at the plotting
    code's (TVD <= 0.05): median and mean over a cell's instances, then mean (and spread) across seeds, with
    the bound J&W's Fig. 4 text names (`paper_jsd_median`) where they show the model."""
    frame = rows.assign(jsd_plot=at_plotting_threshold(rows))
    measures = {
        "jsd_eps_max_median": ("jsd_eps_max", "median"),
        "jsd_eps_max_mean": ("jsd_eps_max", "mean"),
        "jsd_plot_median": ("jsd_plot", "median"),
        "jsd_plot_mean": ("jsd_plot", "mean"),
    }
    by = model_axes(rows)
    table = seed_table(frame, by, measures, spread=["jsd_eps_max_median", "jsd_plot_median"])
    table = merge_on(table, _with_candidates(frame, by), by)
    paper = published("jw_figure4")[[*FIGURE4_KEYS, "value"]].rename(columns={"value": "paper_jsd_median"})
    return merge_on(table, paper, [k for k in FIGURE4_KEYS if k in table.columns])


def _with_candidates(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per configuration, how many instances the 0.05 rule could be computed for (`n_with_candidates`)."""
    covered = frame.assign(n_with_candidates=frame["jsd_plot"].notna().astype(int))
    return covered.groupby(by, dropna=False, sort=True)["n_with_candidates"].sum().reset_index()


def candidates_caveat(frame: pd.DataFrame) -> str:
    """The caption's word on the 0.05 columns: empty when every instance has candidates, else which lack them."""
    covered, total = int(frame["n_with_candidates"].sum()), int(frame["n_instances"].sum())
    if covered == total:
        return ""
    if covered == 0:
        return (
            " These rows predate the `candidate_jsd` / `candidate_tvd` columns, so the TVD ≤ 0.05 columns are "
            "empty ('–'); rerunning the adversarial analysis fills them."
        )
    return (
        f" Only {covered} of {total} instances carry candidate columns (the others' rows predate them): the "
        "TVD ≤ 0.05 columns are over those."
    )


def figure4_table(rows: pd.DataFrame) -> Table:
    frame = figure4_frame(rows)
    shown = grouping_axes(rows)
    display = frame[shown].copy()
    display["median, TVD ≤ ε"] = pm(frame, "jsd_eps_max_median", digits=3)
    display["median, TVD ≤ 0.05"] = pm(frame, "jsd_plot_median", digits=3)
    display["mean, TVD ≤ ε"] = [plus_minus(v, None, 3) for v in frame["jsd_eps_max_mean"]]
    display["mean, TVD ≤ 0.05"] = [plus_minus(v, None, 3) for v in frame["jsd_plot_mean"]]
    display["J&W Fig. 4"] = ["–" if pd.isna(v) else f"toward {v:.2f}" for v in frame["paper_jsd_median"]]
    display["seeds"] = frame["n_seeds"]
    display["instances"] = frame["n_instances"]
    fixed = constant_axes(rows, shown)
    caption = (
        "ε-max JSD under two selection rules: the paper's Algorithm 3 keeps the most distant of the k "
        "adversaries whose output TVD is within ε (0.01 for classification, 0.05 for pair tasks; gridlab's "
        "`jsd_eps_max`), J&W's plotting code keeps them up to TVD 0.05 (recomputed from every candidate's JSD "
        "and TVD); 0 when none qualifies. Median and mean over a model's instances, then mean ± std across "
        f"seeds. J&W column: {citation('jw_figure4')}, a histogram with no printed statistic; its text says the "
        "mass lies toward the upper bound 0.69 (ln 2), the number shown."
        + candidates_caveat(frame)
        + (f" All rows: {fixed}." if fixed else "")
    )
    return Table("jw_fig4_selection", "J&W Fig. 4: ε-max JSD at ε and at TVD ≤ 0.05", frame, caption, display)


def figure2(rows: pd.DataFrame, column: str, symbol: str) -> Figure:
    figure = facet(
        rows,
        class_histogram(column, np.linspace(-1, 1, 41)),
        f"Kendall {symbol} by predicted class",
        xlabel=symbol,
        ylabel="instances",
        legend=True,
    )
    return Figure(
        f"jw_fig2_{column}",
        f"J&W Fig. 2: histogram of {symbol}",
        figure,
        f"Kendall {symbol} of attention with {'gradient' if column == 'tau_g' else 'leave-one-out'} "
        "importance, one panel per configuration (seeds pooled), one colour per predicted class.",
    )


def build(inputs: ReportInputs) -> SectionOutput:
    artifacts: list[Artifact] = []
    missing: list[str] = []
    correlation = inputs.rows("importance_correlation")
    if correlation is not None:
        artifacts += [
            table2(correlation),
            figure2(correlation, "tau_g", "τ_g"),
            figure2(correlation, "tau_loo", "τ_loo"),
        ]
    else:
        missing.append("J&W Table 2 and Fig. 2 need `importance_correlation` rows")
    accuracy = table1(inputs)
    if accuracy is not None:
        artifacts.append(accuracy)
    permuted = inputs.rows("permutation")
    if permuted is not None:
        artifacts.append(permutation_table(permuted))
        artifacts.append(
            Figure(
                "jw_fig3",
                "J&W Fig. 3: median output change under permutation vs max attention",
                facet(
                    permuted,
                    scatter("tvd_median", "max_attention"),
                    "Permutation: median TVD vs max attention",
                    xlabel="median TVD (Δŷ_med)",
                    ylabel="max attention",
                    sharex=False,
                    legend=True,
                ),
                "Each point is an instance (seeds pooled): the median output TVD over 100 "
                "permutations of its attention (x) against its largest attention weight (y).",
            )
        )
    else:
        missing.append("J&W Fig. 3 needs `permutation` rows")
    adversarial = inputs.rows("adversarial")
    if adversarial is not None:
        artifacts.append(adversarial_table(adversarial))
        artifacts.append(figure4_table(adversarial))
        artifacts.append(
            Figure(
                "jw_fig4",
                "J&W Fig. 4: histogram of ε-max JSD",
                facet(
                    adversarial,
                    class_histogram("jsd_eps_max", np.linspace(0, math.log(2), 31)),
                    "Adversarial attention: ε-max JSD",
                    xlabel="ε-max JSD",
                    ylabel="instances",
                    legend=True,
                ),
                "Per configuration (seeds pooled), by predicted class; the bound is ln 2 ≈ 0.69.",
            )
        )
        artifacts.append(
            Figure(
                "jw_fig5",
                "J&W Fig. 5: ε-max JSD vs max attention",
                facet(
                    adversarial,
                    scatter("jsd_eps_max", "max_attention"),
                    "Adversarial attention: ε-max JSD vs max attention",
                    xlabel="ε-max JSD",
                    ylabel="max attention",
                    legend=True,
                ),
                "Each point is an instance (seeds pooled).",
            )
        )
    else:
        missing.append("J&W Figs. 4–5 need `adversarial` rows")
    return SectionOutput(artifacts, missing)


# ---- the fidelity table's comparisons ------------------------------------------------------------------------

ANALYSES = ("importance_correlation", "permutation", "adversarial")
TABLE2_QUANTITIES = {  # quantity -> (column of table2_frame, its std across seeds)
    "tau_g": ("tau_g", "tau_g_seed_sd"),
    "sig_frac_g": ("sig_g", "sig_g_seed_sd"),
    "tau_loo": ("tau_loo", "tau_loo_seed_sd"),
    "sig_frac_loo": ("sig_loo", "sig_loo_seed_sd"),
}


def table2_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    rows = inputs.rows("importance_correlation")
    if rows is None:
        return None
    return long_rows(table2_frame(rows), [*model_axes(rows), "pred"], TABLE2_QUANTITIES)


def table2_published() -> pd.DataFrame:
    """J&W Table 2 as fidelity numbers: the mean τ and the share of significant instances per class, with the
    authors' own rerun beside them where their repository commits it (`reruns`)."""
    paper = published("jw_table2").dropna(subset=["pred"])
    short = paper["measure"].str.removeprefix("tau_")
    means = paper[list(PAPER_KEYS)].assign(quantity=paper["measure"], published=paper["mean"])
    shares = paper[list(PAPER_KEYS)].assign(quantity="sig_frac_" + short, published=paper["sig_frac"])
    numbers = pd.concat([means, shares]).sort_index(kind="stable").reset_index(drop=True)  # as printed, row by row
    return numbers.merge(reruns("jw_table2"), on=list(RERUN_KEYS), how="left")


def table1_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    frame = table1_frame(inputs.cells)
    if frame is None:
        return None
    quantities = {"test_performance": ("test_accuracy", "test_accuracy_seed_sd")}
    return long_rows(frame, model_axes(inputs.cells), quantities, n_instances=None)


def table1_published() -> pd.DataFrame:
    paper = published("jw_table1")
    return pd.DataFrame(
        {
            **{key: paper[key] for key in TABLE1_KEYS},
            "quantity": "test_performance",
            "published": paper["value"],
            "note": [f"J&W: {m.replace('_', '-')}; ours: accuracy" for m in paper["metric"]],
        }
    )


def figure4_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    """Our median eps-max JSD (the paper's rule) per model, the plotting code's value in the row's note."""
    rows = inputs.rows("adversarial")
    if rows is None:
        return None
    frame = figure4_frame(rows)
    quantities = {"jsd_eps_max_median": ("jsd_eps_max_median", "jsd_eps_max_median_seed_sd")}
    ours = long_rows(frame, model_axes(rows), quantities)
    ours["note"] = [plotting_note(v) for v in frame["jsd_plot_median"]]
    return ours


def plotting_note(value: float) -> str:
    """The ablation's number beside the paper's rule: what the same rows give at J&W's plotting threshold."""
    if pd.isna(value):
        return f"at J&W's plotting threshold TVD ≤ {PLOTTING_TVD:g}: not computable (rows lack candidate columns)"
    return f"at J&W's plotting threshold TVD ≤ {PLOTTING_TVD:g}: {value:.3f}"


def figure4_published() -> pd.DataFrame:
    paper = published("jw_figure4")
    return paper[list(FIGURE4_KEYS)].assign(quantity=paper["measure"], published=paper["value"], note=paper["note"])


COMPARISONS = (
    Comparison(
        "jw_table2",
        ("importance_correlation",),
        keys=MODEL_AXES,
        join=PAPER_KEYS[:-1],
        paper=table2_published,
        ours=table2_ours,
        extra=("pred",),
    ),
    Comparison(
        "jw_table1",
        ANALYSES,
        keys=MODEL_AXES,
        join=TABLE1_KEYS,
        paper=table1_published,
        ours=table1_ours,
        # Printed per dataset for the BiLSTM; J&W's experiments are those of additive (tanh) attention
        # (Table 2, their graph_outputs), so the dot-attention twin is gridlab's extra model.
        printed_for={"attention": "additive"},
        reads_models=True,
    ),
    Comparison(
        "jw_figure4",
        ("adversarial",),
        keys=MODEL_AXES,
        join=FIGURE4_KEYS,
        paper=figure4_published,
        ours=figure4_ours,
    ),
)

SECTION = PaperSection(
    id="jain_wallace",
    title="Jain & Wallace (2019), Attention is not Explanation",
    analyses=ANALYSES,
    build=build,
    reads_cells=True,
    comparisons=COMPARISONS,
)
