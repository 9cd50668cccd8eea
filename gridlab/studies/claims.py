"""What each paper concluded, as a statistic of gridlab's rows and a rule that decides it: one `Claim` per
conclusion, each deciding every condition (a configuration, or the shared part of two compared ones) its rows
can decide. `conclusions.py` turns the findings into the claims table, its overall rows and documents.

    >>> claim = CLAIMS["ss.erasure_order"]
    >>> findings = claim.decide(ReportInputs.load(expanded))   # [] when the rows cannot decide it
    >>> findings[0].verdict, findings[0].value, findings[0].detail
    ('holds', 0.25, 'median fraction erased: gradient 0.125 (95% [0.101, 0.149]) < attention 0.250 (95% ...')

Every statistic is one the report's sections already compute (their functions are called here): per model
over its test instances, then the mean across seeds (`gridlab.report.stats`). Where a rule compares a value
with a reference, it reads the 95% t-interval across seeds: the claimed side when the whole interval lies on
it, the opposite side ("reversed") when the whole interval lies there, "partly" when it straddles. Where it
compares two models, their two intervals decide (`ordered`): apart in the claimed order, apart the other way,
or overlapping. With one seed there is no interval and the mean decides. The rules and their sources are in
docs/conclusions.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from gridlab.catalog.analyses import RANKINGS, SELF_ATTENTION_ENCODERS
from gridlab.report.inputs import ReportInputs
from gridlab.report.stats import grouping_axes, model_axes, seed_table
from gridlab.studies.sections.jain_wallace import ALL, figure4_frame, permutation_table, table2_frame
from gridlab.studies.sections.meister import entropy_frame, tau_frame
from gridlab.studies.sections.serrano_smith import contingency_frame, multi_rankings
from gridlab.studies.sections.vashishth import TASK_OF_ARCHITECTURE, ablation_frame
from gridlab.studies.sections.wiegreffe_pinter import comparison_frame, diagnostic_frame, tradeoff_frame

HOLDS, PARTLY, REVERSED, NOT_RUN = "holds", "partly", "reversed", "not run"
VERDICTS = (HOLDS, PARTLY, REVERSED, NOT_RUN)
# A recorded finding whose cells are no longer the grid's (`conclusions_record`): shown, counted as not run.
STALE = "stale"
LN2 = math.log(2.0)
SIGN = {"below": "<", "above": ">", "within": "≈"}  # how two seed intervals lie (`apart`), for reading
BILSTM = "lstm"  # J&W's BiLSTM; their "average" encoder is gridlab's `average`
# Encoders whose hidden states mix the words (J&W's BiLSTM and CNN, and the later ones): each is compared with
# the non-contextual `average` encoder by jw.weak_correlation.
PRETRAINED = "pretrained"  # a fine-tuned Hugging Face encoder: the same questions on today's models
CONTEXTUAL = ("lstm", "gru", "cnn", "transformer", PRETRAINED)
# A condition names these axes always, and the other configuration axes (settings like `model.embeddings`
# included) where they vary among the rows; then the seeds present.
SHOWN = ("dataset", "encoder", "attention")
WP_SOURCE = (
    "W&P's full text is not among the papers gridlab quotes: the wording follows docs/analyses.md and the "
    "issue that asked for these claims, and no threshold is W&P's."
)


@dataclass(frozen=True)
class Finding:
    """One condition's decision: the axes it fixes (with a list of seeds), the statistic's value, the verdict."""

    condition: dict[str, Any]  # axis -> value, in the order shown
    seeds: tuple[int, ...]
    value: float
    verdict: str
    detail: str  # the numbers the rule compared, for reading
    cells: tuple[str, ...] = ()  # the ids of the cells whose rows it read: what the record traces it to


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str  # "Jain & Wallace (2019) §4.1"
    wording: str  # the conclusion, short, in the paper's terms
    analyses: tuple[str, ...]  # whose rows it reads ("cells": the trained cells' test metrics)
    statistic: str
    rule: str  # how one condition is decided, and where its threshold comes from
    needs: str  # which analyses and cells would decide it, for a grid whose rows cannot
    decide: Callable[[ReportInputs], list[Finding]]


# ---- shared pieces -------------------------------------------------------------------------------------------


def side(mean: float, low: float, high: float, reference: float) -> str:
    """'below' / 'above' the reference when the seeds' 95% interval (or, without one, the mean) lies wholly on
    that side, 'within' when the interval contains it; '' when the mean is undefined."""
    if pd.isna(mean):
        return ""
    if pd.isna(low) or pd.isna(high):
        low = high = mean
    if high < reference:
        return "below"
    if low > reference:
        return "above"
    return "within"


def against(frame_row: pd.Series, column: str, reference: float, claimed: Literal["below", "above"]) -> str:
    """holds / reversed / partly for `column` (with its `_ci_low`/`_ci_high`) against a reference."""
    where = side(frame_row[column], frame_row.get(f"{column}_ci_low"), frame_row.get(f"{column}_ci_high"), reference)
    if not where:
        return ""
    return HOLDS if where == claimed else PARTLY if where == "within" else REVERSED


def _matching(rows: pd.DataFrame, condition: dict[str, Any]) -> pd.DataFrame:
    """The rows matching `condition` (null matches null)."""
    mask = pd.Series(True, index=rows.index)
    for axis, value in condition.items():
        if axis in rows.columns:
            column = rows[axis]
            mask &= column.isna() if _null(value) else column.eq(value)
    return rows[mask]


def seeds_of(rows: pd.DataFrame, condition: dict[str, Any]) -> tuple[int, ...]:
    """The seeds of the rows matching `condition` (null matches null)."""
    return tuple(sorted(int(s) for s in _matching(rows, condition)["seed"].dropna().unique()))


def cells_of(rows: pd.DataFrame, *conditions: dict[str, Any]) -> tuple[str, ...]:
    """The ids of the cells whose rows match any of `conditions`, sorted: the cells a finding was measured on."""
    if "cell_id" not in rows.columns:
        return ()
    return tuple(sorted({str(c) for condition in conditions for c in _matching(rows, condition)["cell_id"].dropna()}))


def _null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def shown_condition(row: pd.Series, axes: Sequence[str]) -> dict[str, Any]:
    return {axis: row[axis] for axis in axes if axis in row.index}


def per_configuration(
    table: pd.DataFrame, rows: pd.DataFrame, decide: Callable[[pd.Series], tuple[str, float, str]]
) -> list[Finding]:
    """A finding per row of `table` (one per configuration), shown by the axes that vary in `rows`."""
    findings = []
    shown = grouping_axes(rows, SHOWN)
    for _, row in table.iterrows():
        verdict, value, detail = decide(row)
        if not verdict:
            continue
        condition, model = shown_condition(row, shown), shown_condition(row, model_axes(rows))
        findings.append(Finding(condition, seeds_of(rows, model), value, verdict, detail, cells_of(rows, model)))
    return findings


def paired(
    table: pd.DataFrame, rows: pd.DataFrame, axis: str, first: Any, second: Any
) -> list[tuple[dict[str, Any], tuple[int, ...], pd.Series, pd.Series, tuple[str, ...]]]:
    """Rows of `table` with `axis` = first matched to those with `axis` = second on every other configuration
    axis: (the shared condition, the seeds of both, the first row, the second row, the cells of both)."""
    shared = [a for a in model_axes(table) if a != axis]
    shown = [a for a in grouping_axes(rows, SHOWN) if a != axis]
    one, two = table[table[axis] == first], table[table[axis] == second]
    out = []
    for _, a in one.iterrows():
        for _, b in two.iterrows():
            if all((_null(a[k]) and _null(b[k])) or a[k] == b[k] for k in shared):
                key = shown_condition(a, shared)
                both = ({**key, axis: first}, {**key, axis: second})
                seeds = sorted({*seeds_of(rows, both[0]), *seeds_of(rows, both[1])})
                out.append((shown_condition(a, shown), tuple(seeds), a, b, cells_of(rows, *both)))
    return out


def learned(rows: pd.DataFrame | None, encoders: Sequence[str] | None = None) -> pd.DataFrame | None:
    """The rows of learned-attention cells (of these encoders); None when there are none."""
    if rows is None:
        return None
    keep = rows["attention_mode"] == "learned"
    if encoders is not None:
        keep &= rows["encoder"].isin(list(encoders))
    return rows[keep] if keep.any() else None


# ---- Jain & Wallace (2019) -----------------------------------------------------------------------------------


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


# ---- Serrano & Smith (2019) ----------------------------------------------------------------------------------


def ss_single_erasure(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("erasure_single"))
    if rows is None:
        return []
    table = contingency_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        flips, margin = row["pct_top_flips"], row["top_minus_rand"]
        if pd.isna(flips) or pd.isna(margin):
            return "", math.nan, ""
        rarely = side(flips, row["pct_top_flips_ci_low"], row["pct_top_flips_ci_high"], 50.0)
        sooner = side(margin, row["top_minus_rand_ci_low"], row["top_minus_rand_ci_high"], 0.0)
        verdict = {("below", "above"): HOLDS, ("above", "below"): REVERSED}.get((rarely, sooner), PARTLY)
        detail = (
            f"erasing i* flips {interval(row, 'pct_top_flips', 1, '%')} of instances; only i* flips "
            f"{row['pct_top_only']:.1f}%, only r flips {row['pct_rand_only']:.1f}%: the difference "
            f"{interval(row, 'top_minus_rand', 1)} points"
        )
        return verdict, margin, detail

    return per_configuration(table, rows, decide)


ORDER = ("gradient", "attention", "random")  # S&S §5.4: fewest items erased first


def erasure_order_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, the median fraction of items erased before the decision flips under each ranking of
    ORDER (never flipped = 1.0: all of them went), per model then mean across seeds, with the interval."""
    eligible = rows[rows["length"] >= 2]
    filled = eligible.assign(**{f"erased_{r}": eligible[f"frac_{r}"].astype(float).fillna(1.0) for r in ORDER})
    return seed_table(filled, model_axes(rows), {f"median_{r}": (f"erased_{r}", "median") for r in ORDER})


def ss_erasure_order(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("erasure_multi"))
    if rows is None:
        return []
    params = inputs.grid.analyses.get("erasure_multi")
    requested = getattr(params, "rankings", None)
    # A ranking not requested is null on every row, like one that never flips: the grid's parameters tell them
    # apart; rows without them (a grid file since edited) count a ranking that never flipped as not run.
    ran = list(requested) if requested is not None else multi_rankings(rows)
    if not set(ORDER) <= set(ran) or not all(f"frac_{r}" in rows.columns for r in ORDER):
        return []
    table = erasure_order_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        g, a, r = (f"median_{name}" for name in ORDER)
        if any(pd.isna(row[column]) for column in (g, a, r)):
            return "", math.nan, ""
        first, second = apart(row, row, g, a), apart(row, row, a, r)
        verdict = HOLDS if first == second == "below" else REVERSED if first == second == "above" else PARTLY
        detail = (
            f"median fraction erased: gradient {interval(row, g)} {SIGN[first]} attention {interval(row, a)} "
            f"{SIGN[second]} random {interval(row, r)}"
        )
        return verdict, row[a], detail

    return per_configuration(table, rows, decide)


# ---- Wiegreffe & Pinter (2019) -------------------------------------------------------------------------------


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


# ---- Vashishth et al. (2019) ---------------------------------------------------------------------------------


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


# ---- Meister et al. (2021) -----------------------------------------------------------------------------------


def meister_input_vs_intermediate(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("sparsity_importance"))
    if rows is None:
        return []
    table = entropy_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        entropy = row["entropy_gh_x"]
        return against(row, "entropy_gh_x", 0.5, "above"), entropy, f"mean normalised entropy H(g_h(x)) {entropy:.3f}"

    return per_configuration(table, rows, decide)


def meister_sparsity(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("sparsity_importance"))
    if rows is None:
        return []
    table = tau_frame(rows)
    shared = [a for a in model_axes(table) if a not in ("projection", "projection_lambda")]
    shown = [a for a in grouping_axes(rows, SHOWN) if a not in ("projection", "projection_lambda")]
    findings = []
    for _, group in table.groupby(shared, dropna=False, sort=True):
        dense = group[group["projection"] == "softmax"]
        sparse = group[(group["projection"] != "softmax") & group["tau_gy_x"].notna()]
        if len(dense) != 1 or sparse.empty or pd.isna(dense["tau_gy_x"].iloc[0]):
            continue
        softmax = dense.iloc[0]
        differences = sparse["tau_gy_x"] - softmax["tau_gy_x"]
        sides = [apart(row, softmax, "tau_gy_x") for _, row in sparse.iterrows()]
        verdict = HOLDS if set(sides) == {"below"} else REVERSED if set(sides) == {"above"} else PARTLY
        names = [_projection(p, lam) for p, lam in zip(sparse["projection"], sparse["projection_lambda"])]
        detail = f"mean τ(α, g_y(x)): softmax {interval(softmax, 'tau_gy_x')}; " + ", ".join(
            f"{name} {interval(row, 'tau_gy_x')} ({SIGN[where]} softmax)"
            for name, (_, row), where in zip(names, sparse.iterrows(), sides)
        )
        key = shown_condition(softmax, shared)
        condition = shown_condition(softmax, shown)
        value = float(differences.max())
        findings.append(Finding(condition, seeds_of(rows, key), value, verdict, detail, cells_of(rows, key)))
    return findings


def _projection(name: str, lam: float) -> str:
    return name if pd.isna(lam) else f"{name} λ={lam:g}"


# ---- Abnar & Zuidema (2020) ----------------------------------------------------------------------------------

FLOWS = ("attention_rollout", "attention_flow")  # A&Z's two ways of following attention through the layers
REFERENCES = ("leave_one_out", "gradient")  # A&Z's blank-out and input gradients


def tau_column(first: str, second: str) -> str:
    """`ranking_agreement`'s column for a pair, named in the order of RANKINGS."""
    a, b = sorted((first, second), key=RANKINGS.index)
    return f"tau__{a}__{b}"


def _computed(rows: pd.DataFrame, column: str) -> bool:
    return column in rows.columns and bool(rows[column].notna().any())


def abnar_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, for each method M of FLOWS and reference R: `M__R`, the mean over instances of
    τ(M, R) − τ(attention, R) (per model, then across seeds with the interval), beside the two means of τ.
    A method the rows lack is left out; where a configuration skipped it its values are NaN."""
    pairs = [
        (m, r)
        for m in FLOWS
        for r in REFERENCES
        if _computed(rows, tau_column(m, r)) and _computed(rows, tau_column("attention", r))
    ]
    taus = {tau_column(a, r) for m, r in pairs for a in (m, "attention")}
    filled = rows.assign(
        **{c: rows[c].astype(float) for c in taus},
        **{
            f"{m}__{r}": rows[tau_column(m, r)].astype(float) - rows[tau_column("attention", r)].astype(float)
            for m, r in pairs
        },
    )
    measures = {c: (c, "mean") for c in taus} | {f"{m}__{r}": (f"{m}__{r}", "mean") for m, r in pairs}
    return seed_table(filled, model_axes(rows), measures, spread=[f"{m}__{r}" for m, r in pairs])


def abnar_rollout_flow(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("ranking_agreement"), SELF_ATTENTION_ENCODERS)
    if rows is None:
        return []
    table = abnar_frame(rows)

    def decide(row: pd.Series) -> tuple[str, float, str]:
        present = [
            (m, r) for m in FLOWS for r in REFERENCES if f"{m}__{r}" in row.index and not pd.isna(row[f"{m}__{r}"])
        ]
        if not all((FLOWS[0], r) in present for r in REFERENCES):  # rollout against both references, at least
            return "", math.nan, ""
        sides = [side(row[f"{m}__{r}"], row[f"{m}__{r}_ci_low"], row[f"{m}__{r}_ci_high"], 0.0) for m, r in present]
        verdict = (
            HOLDS if all(s == "above" for s in sides) else REVERSED if all(s == "below" for s in sides) else PARTLY
        )
        parts = []
        for r in REFERENCES:
            methods = [
                f"{m.removeprefix('attention_')} {row[tau_column(m, r)]:.3f}" for m in FLOWS if (m, r) in present
            ]
            parts.append(f"with {r}: attention {row[tau_column('attention', r)]:.3f}, " + ", ".join(methods))
        missing = "" if len(present) == len(FLOWS) * len(REFERENCES) else "; flow not run"
        value = min(float(row[f"{m}__{r}"]) for m, r in present)
        return verdict, value, "mean τ " + "; ".join(parts) + missing

    return per_configuration(table, rows, decide)


# ---- Neely et al. (2022) -------------------------------------------------------------------------------------


def agreement_pairs(first: pd.DataFrame, second: pd.DataFrame) -> list[str]:
    """The τ columns of ranking pairs without `random` that both sets of rows computed."""
    columns = [tau_column(a, b) for i, a in enumerate(RANKINGS) for b in RANKINGS[i + 1 :] if "random" not in (a, b)]
    return [c for c in columns if _computed(first, c) and _computed(second, c)]


def mean_agreement(rows: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per configuration: the mean over instances of each instance's mean τ over `columns` (nulls skipped),
    per model, then across seeds with the interval."""
    filled = rows.assign(agreement=rows[list(columns)].astype(float).mean(axis=1, skipna=True))
    return seed_table(filled, model_axes(rows), {"agreement": ("agreement", "mean")})


def apart(first: pd.Series, second: pd.Series, column: str, second_column: str | None = None) -> str:
    """'below' / 'above' when `first`'s 95% seed interval of `column` lies wholly below / above `second`'s (of
    `second_column`, default the same; one seed: its mean), 'within' when they overlap."""
    low, high = _bounds(first, column)
    other_low, other_high = _bounds(second, second_column or column)
    if high < other_low:
        return "below"
    if low > other_high:
        return "above"
    return "within"


def _bounds(row: pd.Series, column: str) -> tuple[float, float]:
    """The seeds' 95% interval of `column` (`<column>_ci_low/high`), or its mean twice where there is none."""
    low, high = row.get(f"{column}_ci_low", math.nan), row.get(f"{column}_ci_high", math.nan)
    return (row[column], row[column]) if pd.isna(low) or pd.isna(high) else (low, high)


def ordered(
    first: pd.Series,
    second: pd.Series,
    column: str,
    claimed: Literal["below", "above"],
    second_column: str | None = None,
) -> str:
    """holds / reversed / partly: `first`'s `column` claimed below / above `second`'s, decided by whether the
    seeds' 95% intervals lie apart (on the claimed side: holds; on the other: reversed) or overlap (partly)."""
    where = apart(first, second, column, second_column)
    return HOLDS if where == claimed else PARTLY if where == "within" else REVERSED


def neely_disagreement(inputs: ReportInputs) -> list[Finding]:
    rows = learned(inputs.rows("ranking_agreement"), [PRETRAINED, BILSTM])
    if rows is None:
        return []
    shown = [a for a in grouping_axes(rows, SHOWN) if a not in ("dataset", "encoder")]
    findings = []
    for dataset, group in rows.groupby("dataset", sort=True):
        pretrained, bilstm = group[group["encoder"] == PRETRAINED], group[group["encoder"] == BILSTM]
        columns = agreement_pairs(pretrained, bilstm)
        if pretrained.empty or bilstm.empty or not columns:
            continue
        for _, a in mean_agreement(pretrained, columns).iterrows():
            for _, b in mean_agreement(bilstm, columns).iterrows():
                if pd.isna(a["agreement"]) or pd.isna(b["agreement"]):
                    continue
                verdict = ordered(a, b, "agreement", "below")
                condition: dict[str, Any] = {"dataset": dataset}
                for axis in shown:
                    if (_null(a[axis]) and _null(b[axis])) or a[axis] == b[axis]:
                        condition[axis] = a[axis]
                    else:
                        condition |= {f"{PRETRAINED} {axis}": a[axis], f"{BILSTM} {axis}": b[axis]}
                models = (shown_condition(a, model_axes(rows)), shown_condition(b, model_axes(rows)))
                seeds = sorted({*seeds_of(rows, models[0]), *seeds_of(rows, models[1])})
                detail = (
                    f"mean pairwise τ over {len(columns)} pairs of rankings: pretrained "
                    f"{interval(a, 'agreement')}, BiLSTM {interval(b, 'agreement')}"
                )
                findings.append(
                    Finding(
                        condition,
                        tuple(seeds),
                        float(a["agreement"] - b["agreement"]),
                        verdict,
                        detail,
                        cells_of(rows, *models),
                    )
                )
    return findings


def interval(row: pd.Series, column: str, digits: int = 3, unit: str = "") -> str:
    """'0.412 (95% [0.398, 0.426])': the mean across seeds and its interval; '(one seed)' without one.
    `unit` follows the mean: '1.5% (95% [0.2, 2.8])'."""
    mean = row.get(column, math.nan)
    if pd.isna(mean):
        return "–"
    low, high = row.get(f"{column}_ci_low", math.nan), row.get(f"{column}_ci_high", math.nan)
    spread = "(one seed)" if pd.isna(low) or pd.isna(high) else f"(95% [{low:.{digits}f}, {high:.{digits}f}])"
    return f"{mean:.{digits}f}{unit} {spread}"


# ---- the declarations ----------------------------------------------------------------------------------------

CLAIM_LIST: tuple[Claim, ...] = (
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
    Claim(
        "ss.single_erasure",
        "Serrano & Smith (2019) §4.2, Table 2",
        "Erasing the highest-attention item rarely flips the decision, but flips it more often than a random item.",
        ("erasure_single",),
        "% of instances (T ≥ 2) where only i* flips minus % where only a random r flips, beside % where "
        "erasing i* flips at all (per model, mean across seeds)",
        "holds when the seeds' 95% interval of the % where erasing i* flips lies wholly below 50% ('in the vast "
        "majority of cases, erasing i* does not change the decision', §4.2) and that of only-i* minus only-r "
        "(the off-diagonal cells §4.2 compares) wholly above 0; reversed when the first lies wholly above 50% "
        "and the second wholly below 0; partly otherwise (an interval that contains its reference included).",
        "`erasure_single` rows of any learned-attention classifier",
        ss_single_erasure,
    ),
    Claim(
        "ss.erasure_order",
        "Serrano & Smith (2019) §5.4, Fig. 5",
        "Erasing by gradient flips the decision after fewer items than by attention, and attention beats random.",
        ("erasure_multi",),
        "median fraction of items erased before the decision flips (never flipped = 1.0), per model over "
        "instances with T ≥ 2, mean across seeds, for the gradient, attention and random rankings",
        "holds when the seeds' 95% interval of the gradient ranking's median lies wholly below the attention "
        "ranking's, and that one wholly below the random ranking's; reversed when both lie wholly above; partly "
        "otherwise (overlapping intervals, equal medians included). No threshold: §5.4 orders the rankings.",
        "`erasure_multi` rows with the rankings gradient, attention and random",
        ss_erasure_order,
    ),
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
    Claim(
        "meister.input_vs_intermediate",
        "Meister et al. (2021) §4, Table 1",
        "Inputs and intermediate representations are not interchangeable: each representation draws on many inputs.",
        ("sparsity_importance",),
        "mean normalised entropy of the gradient importance of the inputs for each representation, "
        "H(g_h(x)) in [0, 1], per model, mean across seeds",
        "holds when it lies in the upper half of [0, 1] ('consistently high entropy', §4; 1 = all inputs "
        "equally, 0 = one input), i.e. above 0.5; reversed below; partly when the seeds' interval contains 0.5.",
        "`sparsity_importance` rows of any learned-attention classifier",
        meister_input_vs_intermediate,
    ),
    Claim(
        "meister.sparsity",
        "Meister et al. (2021) §4, Fig. 3, Table 6",
        "Sparse attention does not track input importance better than softmax attention.",
        ("sparsity_importance",),
        "largest mean τ(α, g_y(x)) of a sparse projection (sparsemax, entmax15, sparsegen at each λ) minus "
        "softmax's, on the same dataset, encoder and attention, mean across seeds",
        "holds when every sparse projection's 95% seed interval of τ lies wholly below softmax's; reversed when "
        "every one lies wholly above; partly otherwise (an interval that overlaps softmax's included). No "
        "threshold: Fig. 3 states a direction ('a downward trend in this correlation as λ is increased').",
        "`sparsity_importance` rows of a softmax cell and a sparse-projection cell on the same dataset",
        meister_sparsity,
    ),
    Claim(
        "abnar.rollout_flow",
        "Abnar & Zuidema (2020), abstract",
        "Attention rollout and attention flow agree with input importance (blank-out, gradients) better than "
        "the raw attention weights do.",
        ("ranking_agreement",),
        "mean Kendall τ of attention rollout (and of attention flow) with leave-one-out and with gradient minus "
        "raw attention's τ with the same reference, per instance, mean per model, then across seeds "
        "(transformer and pretrained encoders, learned attention; raw attention is the `attention` ranking, the "
        "final attention layer's weights α); the value is the smallest of these differences",
        "holds when every difference lies above 0 (rollout and flow each exceed raw attention against both "
        "references); reversed when every one lies below 0 (raw attention exceeds them all); partly otherwise, "
        "a seeds' 95% interval that contains 0 included. No threshold: A&Z state a direction ('compared to raw "
        "attention, both yield higher correlations with importance scores of input tokens obtained using an "
        "ablation method and input gradients') and no margin; they report Spearman correlations, gridlab reads "
        "Kendall τ-b. A configuration without flow rows (flow is not in the analyses' default rankings: its cost "
        "grows with T³) is decided on rollout alone, and its detail says 'flow not run'.",
        "`ranking_agreement` rows of a learned-attention transformer or pretrained cell with the rankings "
        "attention, attention_rollout, leave_one_out and gradient (attention_flow as well for the full claim, "
        "as grids/faithfulness.yaml asks)",
        abnar_rollout_flow,
    ),
    Claim(
        "neely.disagreement",
        "Neely et al. (2022)",
        "Attribution methods disagree with one another on transformer models.",
        ("ranking_agreement",),
        "mean over instances of each instance's mean pairwise Kendall τ among the rankings both models computed "
        "(random excluded), per model, mean across seeds, on the pretrained encoder; the value is it minus the "
        "BiLSTM's (lstm) on the same dataset",
        "holds when the pretrained encoder's 95% seed interval lies wholly below the BiLSTM's (the rankings "
        "disagree more on the transformer); reversed when wholly above; partly when the intervals overlap (one "
        "seed: its mean). This is gridlab's operational reading: Neely et al. report low agreement between "
        "explanation methods on fine-tuned transformers and do not compare them with BiLSTMs; the comparison "
        "with the BiLSTM is the one issue 46 asked for, and no threshold is the paper's.",
        "`ranking_agreement` rows of a learned-attention pretrained cell and a learned-attention lstm cell on "
        "the same dataset, in one grid, with two or more rankings besides random",
        neely_disagreement,
    ),
)
CLAIMS: dict[str, Claim] = {claim.id: claim for claim in CLAIM_LIST}
