"""Vashishth et al. (2019), "Attention Interpretability Across NLP Tasks": their Tables 1-3 (accuracy or
BLEU change when attention is uniform, random or permuted), Fig. 2 (output change under permutation by
maximum attention, per task type) and Fig. 4 (accuracy with self-attention layers permuted cumulatively).

    >>> output = SECTION.build(ReportInputs.load(expanded))   # vashishth_table1..3, vashishth_fig2/fig4 (+ data)

Tables 1-3 (rows of `attention_ablation`), one per task type: single sequence (flat and HAN classifiers),
pair (architecture pair) and generation (seq2seq). Per configuration (the model axes but attention_mode):
- base: the learned-attention model's own test accuracy (BLEU for translation);
- infer: a learned model (attention_mode learned) with alpha replaced at inference, its row's `delta`;
- train+infer: the model trained with uniform/random attention (attention_mode uniform/random), its own
  `learned` row's value minus the learned-mode cell's `learned` value with the same other axes and seed:
  the difference is taken per seed, then summarised across seeds;
- permute: infer only, as in the paper.
Accuracies and their changes are in percentage points (the paper's unit); BLEU as sacrebleu gives it
(0-100). Each number is a mean across seeds, with the sample std, the 95% t-interval and the seed count
(`gridlab.report.stats`). The paper's numbers (`gridlab.studies.published`, vashishth_table1..3) are joined
on dataset, architecture, attention and variant/setting for recurrent encoders (lstm, gru: their Bi-RNN)
with softmax projection; models the published tables leave without a gridlab attention id (Rocktäschel et
al., Luong et al.) and datasets gridlab lacks do not join.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from gridlab.report.artifacts import Artifact, Figure, SectionOutput, Table
from gridlab.report.inputs import ReportInputs
from gridlab.report.plots import COLOURS, facet, panel_label
from gridlab.report.stats import (
    MODEL_AXES,
    across_seeds,
    bracket,
    constant_axes,
    grouping_axes,
    merge_on,
    per_cell,
    pm,
    seed_summary,
)
from gridlab.studies.comparison import Comparison, long_rows
from gridlab.studies.published import citation, published
from gridlab.studies.sections import PaperSection

TASK_OF_ARCHITECTURE = {"flat": "single", "han": "single", "pair": "pair", "seq2seq": "generation"}
TABLES = {  # task type -> (table number, title, published key)
    "single": (1, "single sequence tasks", "vashishth_table1"),
    "pair": (2, "pair sequence tasks", "vashishth_table2"),
    "generation": (3, "generation (translation)", "vashishth_table3"),
}
ORDER = (
    ("learned", "base"),
    ("uniform", "train+infer"),
    ("uniform", "infer"),
    ("random", "train+infer"),
    ("random", "infer"),
    ("permute", "infer"),
)
SHOWN = {
    ("learned", "base"): "base",
    ("uniform", "train+infer"): "Uniform (Train+Infer)",
    ("uniform", "infer"): "Uniform (Infer)",
    ("random", "train+infer"): "Random (Train+Infer)",
    ("random", "infer"): "Random (Infer)",
    ("permute", "infer"): "Permute (Infer)",
}
RECURRENT = ("lstm", "gru")
MODEL = tuple(a for a in MODEL_AXES if a != "attention_mode")  # a learned model and its uniform/random twins
KEYS = (*MODEL, "metric", "variant", "setting")
BINS = (0.0, 0.25, 0.5, 0.75, 1.0)  # Fig. 2's maximum-attention ranges
BIN_LABELS = tuple(f"{lo:g}-{hi:g}" for lo, hi in itertools.pairwise(BINS))


def build(inputs: ReportInputs) -> SectionOutput:
    artifacts: list[Artifact] = []
    missing: list[str] = []
    ablation = inputs.rows("attention_ablation")
    if ablation is not None:
        tables, notes = ablation_tables(ablation)
        artifacts += tables
        missing += notes
    else:
        missing.append("Vashishth Tables 1-3 need `attention_ablation` rows")
    permutation = inputs.rows("permutation")
    learned = None if permutation is None else permutation[permutation["attention_mode"] == "learned"]
    if learned is not None and len(learned):
        artifacts += permutation_artifacts(learned)
        missing.append("Vashishth Fig. 2, generation tasks: `permutation` applies to classifiers only")
    else:
        missing.append("Vashishth Fig. 2 needs `permutation` rows of learned-attention cells")
    layers = inputs.rows("layer_permutation")
    if layers is not None:
        artifacts += layer_artifacts(layers)
    else:
        missing.append("Vashishth Fig. 4 needs `layer_permutation` rows (transformer encoders only)")
    return SectionOutput(artifacts, missing)


# ---- Tables 1-3 ---------------------------------------------------------------------------------------------


def ablation_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Every number of Tables 1-3: KEYS + mean, std, n_seeds, ci_low, ci_high (across seeds) + the paper's
    paper_value / paper_std; accuracy in percentage points."""
    rows = rows.assign(
        **{c: rows[c].astype(float) * np.where(rows["metric"] == "accuracy", 100.0, 1.0) for c in ("value", "delta")}
    )
    learned = rows[rows["attention_mode"] == "learned"]
    by = [*MODEL, "seed", "metric"]
    base = per_cell(learned[learned["mode"] == "learned"], by, "value")
    parts = [across_seeds(base, [*MODEL, "metric"], "value").assign(variant="learned", setting="base")]
    infer = per_cell(learned[learned["mode"] != "learned"], [*by, "mode"], "delta")
    parts.append(
        across_seeds(infer, [*MODEL, "metric", "mode"], "delta")
        .rename(columns={"mode": "variant"})
        .assign(setting="infer")
    )
    trained = rows[rows["attention_mode"].isin(["uniform", "random"]) & (rows["mode"] == "learned")]
    own = per_cell(trained, [*by, "attention_mode"], "value")
    paired = own.merge(base.drop(columns="cell_id"), on=by, suffixes=("", "_learned"))  # null keys match
    paired["change"] = paired["value"] - paired["value_learned"]
    parts.append(
        across_seeds(paired, [*MODEL, "metric", "attention_mode"], "change")
        .rename(columns={"attention_mode": "variant"})
        .assign(setting="train+infer")
    )
    frame = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
    frame = frame[[*KEYS, "mean", "std", "n_seeds", "ci_low", "ci_high"]]
    frame = merge_on(
        frame, paper(), ["dataset", "encoder", "projection", "architecture", "attention", "variant", "setting"]
    )
    rank = {key: i for i, key in enumerate(ORDER)}
    frame["_order"] = [rank.get(k, len(rank)) for k in zip(frame["variant"], frame["setting"])]
    return frame.sort_values([*MODEL, "_order"], kind="stable").drop(columns="_order").reset_index(drop=True)


def paper() -> pd.DataFrame:
    """Vashishth Tables 1-3 as join rows: one copy per recurrent encoder, softmax projection. Rows without a
    gridlab attention id are models gridlab does not build (`unmodelled_published`)."""
    numbers = _tables().dropna(subset=["attention"])
    numbers = numbers[["dataset", "architecture", "attention", "variant", "setting", "value", "std"]]
    numbers = numbers.rename(columns={"value": "paper_value", "std": "paper_std"}).assign(projection="softmax")
    return pd.concat([numbers.assign(encoder=e) for e in RECURRENT], ignore_index=True)


def ablation_tables(rows: pd.DataFrame) -> tuple[list[Table], list[str]]:
    frame = ablation_frame(rows)
    task = frame["architecture"].map(TASK_OF_ARCHITECTURE)
    tables, missing = [], []
    for name, (number, title, key) in TABLES.items():
        part = frame[task == name].reset_index(drop=True)
        label = f"Vashishth Table {number} ({title})"
        if len(part) == 0:
            missing.append(f"{label}: no {name}-task cells with `attention_ablation` rows")
            continue
        if not (part["setting"] == "train+infer").any():
            missing.append(f"{label}, Train+Infer: needs cells with attention_mode uniform/random beside learned ones")
        tables.append(
            Table(
                f"vashishth_table{number}",
                f"Vashishth Table {number}: altered attention, {title}",
                part,
                _caption(part, key),
                _display(part),
            )
        )
    return tables, missing


def _display(frame: pd.DataFrame) -> pd.DataFrame:
    shown = [a for a in grouping_axes(frame) if a in MODEL]
    display = frame[shown].copy()
    display["variant"] = [SHOWN.get(k, f"{k[0]} ({k[1]})") for k in zip(frame["variant"], frame["setting"])]
    display["ours"] = pm(frame, "mean", "std", digits=1)
    display["95% CI"] = [bracket(lo, hi, 1) for lo, hi in zip(frame["ci_low"], frame["ci_high"])]
    display["seeds"] = frame["n_seeds"]
    display["paper"] = pm(frame, "paper_value", "paper_std", digits=1)
    return display


def _caption(frame: pd.DataFrame, key: str) -> str:
    fixed = constant_axes(frame, grouping_axes(frame))
    return (
        "Test accuracy (percentage points; BLEU for translation) of the learned-attention model ('base') and "
        "its change when attention is uniform or random during training and inference ('Train+Infer': the model "
        "trained that way minus the learned model of the same seed) or only at inference ('Infer'), or permuted "
        "at inference. Mean ± std across seeds, 95% t-interval across seeds. "
        f"Paper: {citation(key)}, for recurrent encoders (their Bi-RNN) with softmax attention."
        + (f" All rows: {fixed}." if fixed else "")
    )


# ---- Fig. 2 ---------------------------------------------------------------------------------------------------


def max_attention_bin(values: pd.Series) -> pd.Series:
    """Each value's range label: [0, 0.25], (0.25, 0.5], (0.5, 0.75], (0.75, 1]."""
    index = np.clip(np.searchsorted(BINS, values.astype(float).to_numpy(), side="left") - 1, 0, len(BIN_LABELS) - 1)
    return pd.Series(np.asarray(BIN_LABELS)[index], index=values.index)


def permutation_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per task type, dataset and maximum-attention range: instances, and the median and mean of their
    median permutation TVD (encoders and seeds pooled, as the figure)."""
    frame = rows.assign(
        task=rows["architecture"].map(TASK_OF_ARCHITECTURE),
        max_attention_bin=max_attention_bin(rows["max_attention"]),
        tvd_median=rows["tvd_median"].astype(float),
    )
    grouped = frame.groupby(["task", "dataset", "max_attention_bin"], sort=True)["tvd_median"]
    return grouped.agg(instances="count", median="median", mean="mean").reset_index()


def _violins(ax, rows: pd.DataFrame) -> None:
    """Horizontal violins of median TVD, one per maximum-attention range (a dot where fewer than 2 values)."""
    bins = max_attention_bin(rows["max_attention"])
    for position, label in enumerate(BIN_LABELS):
        values = rows.loc[bins == label, "tvd_median"].astype(float).dropna().to_numpy()
        if len(np.unique(values)) >= 2:
            ax.violinplot([values], positions=[position], orientation="horizontal", showmedians=True)
        elif len(values):
            ax.plot(values, [position] * len(values), "o", color=COLOURS[0], markersize=3)
    ax.set_yticks(range(len(BIN_LABELS)), BIN_LABELS)
    ax.set_ylim(-0.6, len(BIN_LABELS) - 0.4)


def permutation_artifacts(rows: pd.DataFrame) -> list:
    frame = rows.assign(task=rows["architecture"].map(TASK_OF_ARCHITECTURE))
    figure = facet(
        frame,
        _violins,
        "Median TVD under permutation, by max attention",
        xlabel="median TVD under permutation",
        ylabel="max attention",
        axes=["task", "dataset"],
        sharex=True,
    )
    return [
        Table(
            "vashishth_fig2_data",
            "Vashishth Fig. 2 (numbers): median permutation TVD by maximum attention",
            permutation_frame(rows),
            "Per task type, dataset and maximum-attention range: the instances and the "
            "median and mean of their median TVD over the permutations (learned-attention cells; encoders and "
            "seeds pooled).",
        ),
        Figure(
            "vashishth_fig2",
            "Vashishth Fig. 2: output change under permuted attention, per task type",
            figure,
            "Each instance's median output TVD over random permutations of its attention (`permutation`), by its "
            "largest attention weight; one panel per task type and dataset, learned-attention cells, encoders and "
            "seeds pooled. The paper finds single-sequence panels far left of pair and generation ones.",
        ),
    ]


# ---- Fig. 4 ---------------------------------------------------------------------------------------------------


def layer_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Model axes + layers_permuted + accuracy across seeds (mean, std, n_seeds, ci_low, ci_high)."""
    return seed_summary(rows, [*MODEL_AXES, "layers_permuted"], "accuracy")


def layer_artifacts(rows: pd.DataFrame) -> list:
    frame = layer_frame(rows)
    shown = [a for a in grouping_axes(frame) if a in MODEL_AXES]
    figure = MplFigure(figsize=(5.2, 3.6), layout="constrained")
    ax = figure.subplots()
    for i, (key, group) in enumerate(frame.groupby(list(MODEL_AXES), dropna=False, sort=True)):
        group = group.sort_values("layers_permuted")
        colour = COLOURS[i % len(COLOURS)]
        error = np.vstack([group["mean"] - group["ci_low"], group["ci_high"] - group["mean"]])
        label = panel_label({a: v for a, v in zip(MODEL_AXES, key) if a in shown})
        ax.errorbar(
            group["layers_permuted"],
            group["mean"],
            yerr=np.nan_to_num(error),
            marker="o",
            color=colour,
            capsize=2,
            label=label or None,
        )
        base = group.loc[group["layers_permuted"] == 0, "mean"]
        if len(base):
            ax.axhline(float(base.iloc[0]), linestyle=":", color=colour)
    layers = sorted(frame["layers_permuted"].unique())
    ax.set_xticks(layers, [str(int(k)) for k in layers])
    ax.set_xlabel("layers permuted (1..k, cumulatively)")
    ax.set_ylabel("test accuracy")
    if shown:
        ax.legend(fontsize=7, frameon=False)
    display = frame[shown + ["layers_permuted"]].copy()
    display["accuracy"] = pm(frame, "mean", "std", digits=3)
    display["95% CI"] = [bracket(lo, hi, 3) for lo, hi in zip(frame["ci_low"], frame["ci_high"])]
    display["seeds"] = frame["n_seeds"]
    return [
        Table(
            "vashishth_fig4_data",
            "Vashishth Fig. 4 (numbers): accuracy with self-attention layers permuted",
            frame,
            "Test accuracy with the self-attention weights of layers 1..k permuted at inference "
            "(`layer_permutation`; k = 0 is the unpermuted model): mean ± std across seeds, 95% t-interval.",
            display,
        ),
        Figure(
            "vashishth_fig4",
            "Vashishth Fig. 4: accuracy against cumulatively permuted layers",
            figure,
            "One line per transformer configuration (error bars: 95% t-interval across seeds); the dotted line "
            "of the same colour is its unpermuted accuracy, as the paper's dotted base lines.",
        ),
    ]


# ---- the fidelity table's comparisons ------------------------------------------------------------------------


def quantity_of(metric: pd.Series, setting: pd.Series) -> pd.Series:
    """'accuracy' / 'bleu' for a base number, 'accuracy_change' / 'bleu_change' for the others."""
    return metric.where(setting == "base", metric + "_change")


def ablation_ours(inputs: ReportInputs) -> pd.DataFrame | None:
    rows = inputs.rows("attention_ablation")
    if rows is None:
        return None
    frame = ablation_frame(rows)
    long = long_rows(frame, [*MODEL, "variant", "setting"], {"value": ("mean", "std")}, n_instances=None)
    return long.assign(quantity=quantity_of(frame["metric"], frame["setting"]).to_numpy())


def _tables() -> pd.DataFrame:
    return pd.concat([published(key) for _, _, key in TABLES.values()], ignore_index=True)


def unmodelled_published() -> pd.DataFrame:
    """The numbers of Rocktäschel et al.'s pair model (conditional encoding, word-by-word attention) and of
    Luong et al.'s decoder attention, which gridlab does not build."""
    numbers = _tables()
    numbers = numbers[numbers["attention"].isna()]
    metric = pd.Series(np.where(numbers["architecture"] == "seq2seq", "bleu", "accuracy"), index=numbers.index)
    return pd.DataFrame(
        {
            "dataset": numbers["dataset"],
            "model_paper": numbers["model_paper"],
            "quantity": quantity_of(metric, numbers["setting"]),
            "published": numbers["value"],
            "table": numbers["architecture"].map(TASK_OF_ARCHITECTURE).map(lambda t: f"Table {TABLES[t][0]}"),
        }
    ).reset_index(drop=True)


def ablation_published() -> pd.DataFrame:
    """Vashishth Tables 1-3 as fidelity numbers; the base rows' ± is the paper's spread over its runs."""
    numbers = paper()
    metric = pd.Series(np.where(numbers["architecture"] == "seq2seq", "bleu", "accuracy"), index=numbers.index)
    task = numbers["architecture"].map(TASK_OF_ARCHITECTURE)
    sentence_level = (numbers["architecture"] == "han") & (numbers["setting"] != "base")
    return numbers.assign(
        table=task.map(lambda t: f"Table {TABLES[t][0]}"),
        quantity=quantity_of(metric, numbers["setting"]),
        published=numbers["paper_value"],
        published_seed_std=numbers["paper_std"].astype(float),
        note=np.where(sentence_level, HAN_NOTE, ""),
    )


# Vashishth's HAN rows change even on SST, whose documents are single sentences: they act on the word-level
# attention too. gridlab's HAN rows do likewise (attention_ablation version 2; model.word_attention_mode
# as_cell for the Train+Infer cells); rows of version 1 replaced the sentence level only.
HAN_NOTE = (
    "word and sentence attention both replaced (Infer) or fixed (Train+Infer), as Vashishth's §3.1 HAN "
    "attends at both levels"
)


def ablation_admit(frame: pd.DataFrame, configs: pd.DataFrame, inputs: ReportInputs) -> pd.DataFrame:
    """Every number needs the learned-attention model; Train+Infer also its uniform/random twin, Infer only
    the modes the grid's `attention_ablation` asks for. Rows keep the paper's order."""
    present = configs[[*MODEL, "attention_mode"]].drop_duplicates()
    learned = present.loc[present["attention_mode"] == "learned", list(MODEL)].drop_duplicates()
    frame = frame.merge(learned, on=list(MODEL))
    twins = present.rename(columns={"attention_mode": "variant"}).assign(_twin=True)
    twin = frame.merge(twins, on=[*MODEL, "variant"], how="left")["_twin"].eq(True).to_numpy()
    modes = getattr(inputs.grid.analyses.get("attention_ablation"), "modes", ("uniform", "random", "permute"))
    setting = frame["setting"].to_numpy()
    keep = (setting == "base") | ((setting == "infer") & frame["variant"].isin(list(modes)).to_numpy())
    return frame[keep | ((setting == "train+infer") & twin)].reset_index(drop=True)


COMPARISONS = (
    Comparison(
        "vashishth_table1",  # and Tables 2-3: one join over the three (`paper`)
        ("attention_ablation",),
        keys=MODEL,
        join=("dataset", "encoder", "projection", "architecture", "attention"),
        paper=ablation_published,
        ours=ablation_ours,
        extra=("variant", "setting"),
        admit=ablation_admit,
        unmodelled=unmodelled_published,
        replicated_over=("encoder",),
    ),
)

SECTION = PaperSection(
    id="vashishth",
    title="Vashishth et al. (2019), Attention Interpretability Across NLP Tasks",
    analyses=("attention_ablation", "permutation", "layer_permutation"),
    build=build,
    comparisons=COMPARISONS,
)
