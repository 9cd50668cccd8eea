"""The fidelity table from hand-made rows of a real grid: one row per published number the grid aims at,
ours from the section's own frame, verdicts within / outside / not run / undefined against the quantity's
tolerance, the ablation column, and the break-out by a setting axis (model.embeddings)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gridlab.report.inputs import ReportInputs
from gridlab.studies.ablations import NO_ABLATION, Ablation
from gridlab.studies.fidelity import (
    DIFFERS_FROM_RERUN,
    FULL,
    MATCHES_RERUN,
    NOT_RUN,
    OUTSIDE,
    STALE,
    UNDEFINED,
    WITHIN,
    fidelity,
    out_of_reach,
    rerun_verdict_for,
    verdict_for,
)
from gridlab.studies.fidelity_text import fidelity_summary
from gridlab.studies.reruns import KEYS as RERUN_KEYS
from gridlab.studies.reruns import reruns
from gridlab.studies.sections.jain_wallace import figure4_frame, table2_frame, table2_published
from gridlab.studies.tolerances import CAPPED, DEFAULT, PAPER_SPREAD, TOLERANCES, Width, rule_for, tolerance_for

JW_GRID = {
    "name": "fidelity-jw",
    "grid": {"dataset": ["sst", "imdb"], "encoder": ["lstm"], "attention": ["additive"], "seed": [0, 1]},
    "analyses": {"importance_correlation": {}},
}


EMBEDDINGS_GRID = {
    "name": "fidelity-embeddings",
    "grid": {
        "dataset": ["sst"],
        "encoder": ["lstm"],
        "attention": ["additive"],
        "model.embeddings": [None, "word2vec"],
        "seed": [0],
    },
    "analyses": {"importance_correlation": {}},
}


def instances(pred: int, tau_g: list, p_g: list, tau_loo: list, p_loo: list, start: int = 0) -> list[dict]:
    return [
        {
            "instance_id": start + i,
            "length": 8,
            "label": pred,
            "pred": pred,
            "max_attention": 0.5,
            "tau_g": g,
            "p_g": pg,
            "tau_loo": loo,
            "p_loo": pl,
        }
        for i, (g, pg, loo, pl) in enumerate(zip(tau_g, p_g, tau_loo, p_loo))
    ]


def jw_rows(seed: int) -> list[dict]:
    """SST, one seed. Class 0: mean tau_g 0.40 (seed 0) / 0.44 (seed 1), 3 of 5 significant; tau_loo 0.41,
    2 of 5 significant. Class 1: tau_g 0.60, all significant; tau_loo undefined on every instance."""
    shift = 0.04 * seed
    significant_g, significant_loo = [0.01, 0.01, 0.01, 0.2, 0.2], [0.01, 0.01, 0.2, 0.2, 0.2]
    taus = [0.36 + shift, 0.38 + shift, 0.40 + shift, 0.42 + shift, 0.44 + shift]
    class0 = instances(0, taus, significant_g, [0.41] * 5, significant_loo)
    class1 = instances(1, [0.60] * 5, [0.01] * 5, [None] * 5, [None] * 5, start=5)
    return class0 + class1


@pytest.fixture
def jw(synthetic_grid):
    grid = synthetic_grid(JW_GRID)
    for cell in grid.cells(dataset="sst"):
        grid.write_rows("importance_correlation", cell, jw_rows(cell.config.seed))
        grid.write_trained(cell, test_accuracy=0.80 + 0.03 * cell.config.seed)
    return grid


def row(frame: pd.DataFrame, dataset: str, quantity: str, detail: str = "") -> pd.Series:
    found = frame[(frame["dataset"] == dataset) & (frame["quantity"] == quantity) & (frame["detail"] == detail)]
    assert len(found) == 1, (dataset, quantity, detail, frame[["dataset", "quantity", "detail"]])
    return found.iloc[0]


def test_one_row_per_published_number_the_grid_aims_at(jw):
    frame = fidelity(ReportInputs.load(jw.expanded), entries=[]).frame
    # J&W Table 2 for the BiLSTM on SST and IMDB: tau_g, sig, tau_loo, sig per class; Table 1 once per dataset
    assert len(frame) == 2 * (2 * 4 + 1)
    assert set(frame["paper"]) == {"Jain & Wallace (2019)"}
    assert list(frame["table"].unique()) == ["Table 2", "Table 1 (test performance, LSTM)"]
    assert not frame.duplicated(["dataset", "model", "detail", "quantity"]).any()
    assert set(frame["model"]) == {"lstm + additive"}


def test_verdicts_inside_outside_not_run_and_undefined(jw):
    frame = fidelity(ReportInputs.load(jw.expanded), entries=[]).frame
    tau = row(frame, "sst", "tau_g", "class 0")
    assert tau["verdict"] == WITHIN
    assert tau["ours"] == pytest.approx(0.42) and tau["published"] == 0.40
    assert tau["ours_std"] == pytest.approx(math.sqrt(2) * 0.02) and tau["n_seeds"] == 2
    assert tau["n_instances"] == 10 and tau["difference"] == pytest.approx(0.02)
    assert (tau["rule"], tau["tolerance"]) == ("kendall_tau", 0.07)
    assert row(frame, "sst", "sig_frac_g", "class 0")["verdict"] == WITHIN  # 0.60 vs 0.59
    assert row(frame, "sst", "sig_frac_loo", "class 0")["verdict"] == WITHIN  # 0.40 vs 0.47, rule 0.10
    edge = row(frame, "sst", "tau_loo", "class 0")  # 0.41 vs 0.34: a difference of exactly the tolerance
    assert edge["difference"] == pytest.approx(0.07) and edge["verdict"] == WITHIN
    far = row(frame, "sst", "tau_g", "class 1")  # 0.60 vs 0.38
    assert far["verdict"] == OUTSIDE and far["difference"] == pytest.approx(0.22)
    assert row(frame, "sst", "tau_loo", "class 1")["verdict"] == UNDEFINED  # rows, but tau_loo never defined
    accuracy = row(frame, "sst", "test_performance")  # 0.815 vs J&W's F1 0.81
    assert accuracy["verdict"] == WITHIN and accuracy["note"] == "J&W: f1; ours: accuracy"
    imdb = frame[frame["dataset"] == "imdb"]
    assert (imdb["verdict"] == NOT_RUN).all() and imdb["ours"].isna().all()
    assert imdb["published"].notna().all() and imdb["tolerance"].notna().all()


def test_a_cell_with_some_of_its_shards_written_is_left_out_until_complete(synthetic_grid):
    # 10 analysed instances in shards of 5: seed 0 has both parts, seed 1 only its first (a launch in flight)
    grid = synthetic_grid(
        {
            **JW_GRID,
            "grid": {**JW_GRID["grid"], "dataset": ["sst"]},
            "instances": 10,
            "shard_size": 5,
            "analysis_batch_size": 5,
        }
    )
    rows = {seed: jw_rows(seed) for seed in (0, 1)}
    for cell in grid.cells():
        grid.write_trained(cell, test_rows=1725, test_accuracy=0.8)
        grid.write_rows("importance_correlation", cell, rows[cell.config.seed][:5], shard=0)
    complete, partial = grid.cells(seed=0)[0], grid.cells(seed=1)[0]
    grid.write_rows("importance_correlation", complete, rows[0][5:], shard=1)
    inputs = ReportInputs.load(grid.expanded)
    assert set(inputs.rows("importance_correlation")["cell_id"]) == {complete.id}
    assert inputs.partial("importance_correlation") == [partial.id]
    result = fidelity(inputs, entries=[])
    tau = row(result.frame, "sst", "tau_g", "class 0")
    assert tau["n_seeds"] == 1 and tau["ours"] == pytest.approx(0.40)  # seed 0's alone, not seed 1's first half
    assert f"importance_correlation of 1 cell ({partial.id})" in fidelity_summary(result)
    assert tau["measured_cells"] == complete.id and tau["cells"] == " ".join(sorted([complete.id, partial.id]))
    assert inputs.restrict([complete.id]).partial("importance_correlation") == []


def test_the_verdict_is_one_rule_and_the_rerun_widens_nothing():
    # J&W SST BiLSTM class 0: printed 0.40, the authors' rerun 0.343; tolerance 0.07
    assert verdict_for(0.30, 0.40, 0.07) == (pytest.approx(-0.10), OUTSIDE)
    assert verdict_for(0.314, 0.40, 0.07)[1] == OUTSIDE  # -0.086: near the rerun, still outside
    assert verdict_for(0.33, 0.40, 0.07)[1] == WITHIN and verdict_for(0.47, 0.40, 0.07)[1] == WITHIN
    assert verdict_for(None, 0.40, 0.07) == (pytest.approx(math.nan, nan_ok=True), UNDEFINED)
    assert rerun_verdict_for(0.314, 0.343, 0.07) == MATCHES_RERUN  # the rerun has its own verdict
    assert rerun_verdict_for(0.45, 0.343, 0.07) == DIFFERS_FROM_RERUN
    assert rerun_verdict_for(0.45, None, 0.07) == "" and rerun_verdict_for(None, 0.343, 0.07) == ""


def test_every_rerun_joins_a_published_number(jw):
    published = table2_published()
    committed = reruns("jw_table2")
    joined = committed.merge(published, on=list(RERUN_KEYS), how="left", suffixes=("", "_joined"))
    assert len(joined) == len(committed) == 56 and joined["published"].notna().all()
    # tau_g and its significant share, 2 encoders: 4 datasets x 2 classes, 3 bAbI tasks overall, SNLI's 3 classes
    assert published["rerun"].notna().sum() == 2 * 2 * (4 * 2 + 3 + 3)
    snli = published.query("dataset == 'snli' and encoder == 'lstm' and quantity == 'tau_g'").set_index("pred")
    assert snli.loc["2", ["published", "rerun"]].tolist() == pytest.approx([0.36, 0.3059028])  # their 0: contradiction
    frame = fidelity(ReportInputs.load(jw.expanded), entries=[]).frame
    assert row(frame, "sst", "tau_g", "class 0")["rerun"] == pytest.approx(0.3432481)
    assert math.isnan(row(frame, "sst", "tau_loo", "class 0")["rerun"])  # committed for all classes only


def test_ours_is_the_sections_own_number(jw):
    inputs = ReportInputs.load(jw.expanded)
    section = table2_frame(inputs.rows("importance_correlation"))
    section = section[(section["dataset"] == "sst") & (section["pred"] == "0")].iloc[0]
    frame = fidelity(inputs, entries=[]).frame
    assert row(frame, "sst", "tau_g", "class 0")["ours"] == section["tau_g"]
    assert row(frame, "sst", "sig_frac_loo", "class 0")["ours"] == section["sig_loo"]
    assert row(frame, "sst", "tau_g", "class 0")["published"] == section["paper_tau_g"]


def test_the_ablation_column(jw):
    entry = Ablation(
        id="jw_tau",
        paper="Jain & Wallace (2019)",
        quantity="tau_g",
        select={"dataset": "sst", "detail": "class 1"},
        grid="grids/ablations/jw_tau.yaml",
        where=["dataset=sst"],
        finding="tau_g falls to 0.41 once the vocabulary keeps SST's rare words",
    )
    frame = fidelity(ReportInputs.load(jw.expanded), entries=[entry]).frame
    assert row(frame, "sst", "tau_g", "class 1")["ablation"] == "jw_tau"  # by id; its finding is written once
    assert row(frame, "sst", "sig_frac_g", "class 1")["ablation"] == NO_ABLATION  # outside, nothing tests it
    assert row(frame, "sst", "tau_g", "class 0")["ablation"] == ""  # within
    assert row(frame, "imdb", "tau_g", "class 1")["ablation"] == ""  # not run
    outside = frame[frame["verdict"] == OUTSIDE]
    assert (outside["ablation"] != "").all()


def test_a_grid_with_no_results_is_all_not_run(synthetic_grid):
    grid = synthetic_grid({**JW_GRID, "name": "nothing-yet"})
    result = fidelity(ReportInputs.load(grid.expanded), entries=[])
    assert len(result.frame) == 18 and (result.frame["verdict"] == NOT_RUN).all()
    assert result.sensitivity.empty and result.axes == []
    assert result.counts() == {WITHIN: 0, OUTSIDE: 0, NOT_RUN: 18, UNDEFINED: 0, STALE: 0}


def test_jw_tables_aim_at_their_own_models_only(synthetic_grid):
    """Table 1 is the BiLSTM with learned softmax attention, flat or pair as the task is; Table 2's QA rows
    are pair models. A uniform-trained model, a HAN or a flat model of a pair task aims at neither."""
    spec = {
        "name": "jw-models",
        "grid": [
            {"dataset": ["babi1"], "architecture": ["pair"], "encoder": ["lstm", "average"], "seed": [0]},
            {"dataset": ["babi1"], "architecture": ["pair"], "encoder": ["lstm"], "attention_mode": ["uniform"]},
            {"dataset": ["sst"], "architecture": ["flat", "han"], "encoder": ["lstm"], "seed": [0]},
        ],
        "analyses": {"importance_correlation": {}},
    }
    frame = fidelity(ReportInputs.load(synthetic_grid(spec).expanded), entries=[]).frame
    table1 = frame[frame["quantity"] == "test_performance"]
    assert sorted(zip(table1["dataset"], table1["model"])) == [
        ("babi1", "lstm + additive, pair"),
        ("sst", "lstm + additive"),
    ]
    babi = frame[(frame["dataset"] == "babi1") & (frame["table"] == "Table 2")]
    assert sorted(zip(babi["model"], babi["quantity"])) == [
        ("average + additive, pair", "sig_frac_g"),
        ("average + additive, pair", "tau_g"),
        ("lstm + additive, pair", "sig_frac_g"),
        ("lstm + additive, pair", "sig_frac_loo"),
        ("lstm + additive, pair", "tau_g"),
        ("lstm + additive, pair", "tau_loo"),
    ]
    assert set(babi["detail"]) == {"all classes"}


def test_a_grid_aiming_at_no_published_number(synthetic_grid):
    spec = {"name": "unpublished", "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]}}
    grid = synthetic_grid({**spec, "analyses": {"importance_correlation": {}}})
    assert fidelity(ReportInputs.load(grid.expanded), entries=[]).frame.empty


def embeddings_grid(synthetic_grid):
    """SST BiLSTM cells trained from scratch (class-0 tau_g 0.40) and on word2vec vectors (0.55), one seed each."""
    grid = synthetic_grid(EMBEDDINGS_GRID)
    for cell in grid.cells():
        tau = 0.40 if cell.config.model.embeddings is None else 0.55
        grid.write_rows("importance_correlation", cell, instances(0, [tau] * 4, [0.01] * 4, [0.3] * 4, [0.01] * 4))
    return grid


def test_sensitivity_breaks_a_number_out_by_a_setting_axis(synthetic_grid):
    grid = embeddings_grid(synthetic_grid)
    result = fidelity(ReportInputs.load(grid.expanded), entries=[])
    assert result.axes == ["model.embeddings"]
    # cells of different settings are different models: one row per setting, never pooled as seeds
    for setting, ours in (("model.embeddings null", 0.40), ("model.embeddings word2vec", 0.55)):
        one = row(result.frame, "sst", "tau_g", f"class 0; {setting}")
        assert one["ours"] == pytest.approx(ours) and one["n_seeds"] == 1
    split = result.sensitivity[
        (result.sensitivity["quantity"] == "tau_g") & (result.sensitivity["detail"] == "class 0")
    ]
    assert list(split["axis"]) == ["model.embeddings"] * 2
    assert list(split["value"]) == ["null", "word2vec"]
    assert list(split["ours"]) == pytest.approx([0.40, 0.55])
    assert list(split["verdict"]) == [WITHIN, OUTSIDE]
    assert (split["n_seeds"] == 1).all()
    class1 = result.sensitivity[result.sensitivity["detail"] == "class 1"]
    assert (class1["verdict"] == NOT_RUN).all() and len(class1) == 2 * 4  # aimed at under both values


def test_every_quantity_has_a_rule_with_a_reason(jw):
    frame = fidelity(ReportInputs.load(jw.expanded), entries=[]).frame
    for quantity in frame["quantity"].unique():
        assert rule_for(quantity).reason
    assert all(len(rule.reason) > 40 for rule in TOLERANCES)
    quantities = [q for rule in TOLERANCES for q in rule.quantities]
    assert len(quantities) == len(set(quantities))  # one rule per quantity
    with pytest.raises(KeyError, match="tolerances.py"):
        rule_for("made_up")


def test_the_papers_spread_over_runs_sets_an_accuracy_tolerance():
    assert tolerance_for("accuracy", 0.5, 83.4) == Width(rule_for("accuracy"), pytest.approx(1.0), PAPER_SPREAD)
    assert tolerance_for("accuracy", None, 83.4) == Width(rule_for("accuracy"), 2.0, DEFAULT)
    assert tolerance_for("accuracy", math.nan, 83.4).width == 2.0
    assert tolerance_for("tau_g", 0.5, 0.40).width == 0.07  # J&W's ± is over instances: never used


def test_a_stated_default_is_never_wider_than_the_printed_effect():
    # Vashishth AG News permute -0.9 points: the old 2-point default let +0.44 count as within
    capped = tolerance_for("accuracy_change", None, -0.9)
    assert capped.width == pytest.approx(0.9) and capped.source == CAPPED
    assert verdict_for(0.44, -0.9, capped.width)[1] == OUTSIDE
    assert tolerance_for("accuracy_change", None, -0.0).width == pytest.approx(0.05)  # half the printed 0.1
    assert tolerance_for("tau_dy_x", None, 0.05).width == pytest.approx(0.05)  # Meister's 20News Transformer
    assert tolerance_for("accuracy_change", None, -3.5) == Width(rule_for("accuracy_change"), 2.0, DEFAULT)
    for rule in TOLERANCES:
        for published in (0.0, 0.01, 0.3, 1.0, 5.0, 80.0):
            width = tolerance_for(rule.quantities[0], None, published)
            assert width.width <= max(abs(published), rule.printed_step / 2) + 1e-12


ADVERSARIAL_GRID = {
    "name": "fidelity-jw-adversarial",
    "grid": {"dataset": ["sst", "imdb"], "encoder": ["lstm"], "attention": ["additive"], "seed": [0, 1]},
    "analyses": {"adversarial": {}},
}


def adversarial_rows(seed: int, candidates: bool = True) -> list[dict]:
    """SST, one seed, 4 instances of k = 2 candidates. At eps 0.01 the eps-max JSDs are 0.50, 0.52, 0.54, 0.56
    (+ 0.02 in seed 1): median 0.53 / 0.55. At TVD <= 0.05 the second candidate counts too: 0.66 on every
    instance."""
    shift = 0.02 * seed
    records = []
    for i, jsd in enumerate([0.50 + shift, 0.52 + shift, 0.54 + shift, 0.56 + shift]):
        record = {
            "instance_id": i,
            "length": 8,
            "label": i % 2,
            "pred": i % 2,
            "max_attention": 0.5,
            "jsd_eps_max": jsd,
            "tvd_at_jsd": 0.008,
            "steps_run": 500,
            "n_within_eps": 1,
        }
        if candidates:
            record |= {"candidate_jsd": [jsd, 0.66], "candidate_tvd": [0.008, 0.04]}
        records.append(record)
    return records


def adversarial_grid(synthetic_grid, candidates: bool = True):
    grid = synthetic_grid(ADVERSARIAL_GRID)
    for cell in grid.cells(dataset="sst"):
        grid.write_rows("adversarial", cell, adversarial_rows(cell.config.seed, candidates))
    return grid


def test_figure4_row_with_the_plotting_thresholds_number(synthetic_grid):
    inputs = ReportInputs.load(adversarial_grid(synthetic_grid).expanded)
    frame = fidelity(inputs, entries=[]).frame
    figure4 = row(frame, "sst", "jsd_eps_max_median")
    assert (figure4["paper"], figure4["table"], figure4["model"]) == (
        "Jain & Wallace (2019)",
        "Figure 4",
        "lstm + additive",
    )
    assert figure4["published"] == 0.69 and figure4["ours"] == pytest.approx(0.54)  # medians 0.53 and 0.55
    assert figure4["ours_std"] == pytest.approx(0.02 * math.sqrt(2) / 2) and figure4["n_seeds"] == 2
    assert (figure4["rule"], figure4["tolerance"]) == ("adversary_jsd", 0.05)
    assert figure4["difference"] == pytest.approx(-0.15) and figure4["verdict"] == OUTSIDE
    assert figure4["ablation"] == NO_ABLATION
    assert "not a printed statistic" in figure4["note"]  # the paper's side: read from the text
    assert figure4["note"].endswith("at J&W's plotting threshold TVD ≤ 0.05: 0.660")  # ours: the ablation
    section = figure4_frame(inputs.rows("adversarial")).iloc[0]
    assert figure4["ours"] == section["jsd_eps_max_median"]
    # Fig. 4 shows no IMDB panel: no row for it, while SST BiLSTM is the one number the grid aims at
    assert list(frame.loc[frame["table"] == "Figure 4", "dataset"]) == ["sst"]


def test_figure4_row_from_rows_without_candidate_columns(synthetic_grid):
    frame = fidelity(ReportInputs.load(adversarial_grid(synthetic_grid, candidates=False).expanded), entries=[]).frame
    figure4 = row(frame, "sst", "jsd_eps_max_median")
    assert figure4["ours"] == pytest.approx(0.54) and figure4["verdict"] == OUTSIDE
    assert "TVD ≤ 0.05: not computable (rows lack candidate columns)" in figure4["note"]


def test_figure4_not_run_without_rows(synthetic_grid):
    frame = fidelity(ReportInputs.load(synthetic_grid(ADVERSARIAL_GRID).expanded), entries=[]).frame
    figure4 = row(frame, "sst", "jsd_eps_max_median")
    assert figure4["verdict"] == NOT_RUN and figure4["published"] == 0.69


SS_GRID = {
    "name": "fidelity-ss",
    "grid": {"dataset": ["imdb10"], "architecture": ["han"], "encoder": ["gru"], "attention": ["additive"]},
    "analyses": {"erasure_single": {}},
}


def test_serrano_smith_table2_against_the_closest_corpus(synthetic_grid):
    """S&S's IMDB (Diao et al.) is not gridlab's; imdb10 stands in, with a note. 10 instances with T >= 2:
    both flip x1, only i* x2, only r x1, neither x6 -> 10 / 20 / 10 / 60 % against S&S's 2.2 / 12.2 / 1.4 / 84.2."""
    grid = synthetic_grid(SS_GRID)
    (cell,) = grid.cells()
    flips = [(True, True)] + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 6
    records = [
        {"instance_id": i, "length": 5, "pred": 0, "max_attention": 0.5, "js_top": 0.1, "js_rand": 0.05,
         "delta_js": 0.05, "delta_alpha": 0.1, "flip_top": top, "flip_rand": rand}
        for i, (top, rand) in enumerate(flips)
    ]  # fmt: skip
    grid.write_rows("erasure_single", cell, records)
    frame = fidelity(ReportInputs.load(grid.expanded), entries=[]).frame
    assert sorted(frame["quantity"]) == ["pct_both", "pct_neither", "pct_rand_only", "pct_top_only"]
    assert (frame["paper"] == "Serrano & Smith (2019)").all() and (frame["dataset"] == "imdb10").all()
    assert frame["note"].str.contains("different corpus").all()
    got = frame.set_index("quantity")
    assert got.loc["pct_top_only", "ours"] == pytest.approx(20.0) and got.loc["pct_top_only", "published"] == 12.2
    assert got.loc["pct_rand_only", "ours"] == pytest.approx(10.0)
    assert got.loc["pct_rand_only", "tolerance"] == 1.4  # the default, 3 points, capped at the printed 1.4
    assert got.loc["pct_rand_only", "verdict"] == OUTSIDE  # 10.0 vs 1.4
    assert got.loc["pct_both", "verdict"] == OUTSIDE and got.loc["pct_neither", "verdict"] == OUTSIDE


def test_numbers_on_datasets_gridlab_lacks_are_listed_out_of_reach():
    frame = out_of_reach().query("reason == 'no data'")
    assert not frame["dataset"].isin(["sst", "imdb", "imdb10", "20news", "agnews", "snli"]).any()
    yahoo = frame[(frame["paper"] == "Serrano & Smith (2019)") & (frame["dataset"] == "yahoo")]
    assert dict(zip(yahoo["quantity"], yahoo["published"])) == {
        "pct_both": 0.5,
        "pct_top_only": 8.7,
        "pct_rand_only": 1.3,
        "pct_neither": 89.6,
    }
    assert {"adr_tweets", "diabetes", "anemia", "cnn"} <= set(
        frame.loc[frame["paper"] == "Jain & Wallace (2019)", "dataset"]
    )
    assert "imdb_diao" not in set(frame["dataset"])  # joined to imdb10 as the closest corpus
    assert set(frame.loc[frame["dataset"] == "yahoo", "reason"]) == {"no data"}


def test_numbers_of_models_gridlab_does_not_build_are_listed_out_of_reach():
    frame = out_of_reach()
    unmodelled = frame[frame["reason"] == "no model"]
    # Vashishth's Rocktäschel pair model on SNLI and bAbI 1-3, Luong's decoder on Multi30k: 6 numbers each
    assert unmodelled.groupby(["table", "dataset"]).size().to_dict() == {
        ("Table 2", "babi1"): 6,
        ("Table 2", "babi2"): 6,
        ("Table 2", "babi3"): 6,
        ("Table 2", "snli"): 6,
        ("Table 3", "multi30k"): 6,
    }
    snli = unmodelled[unmodelled["dataset"] == "snli"]
    assert dict(zip(snli["quantity"], snli["published"])).get("accuracy") == 78.1


def test_a_number_copied_over_encoders_is_counted_once():
    # Vashishth's News Commentary rows: Bahdanau's random Train+Infer and Luong's uniform one are both -8.8 BLEU,
    # two numbers; each is copied over the recurrent encoders (lstm, gru) to join, and counted once
    frame = out_of_reach()
    news = frame[frame["dataset"] == "news_commentary"]
    assert len(news[news["published"] == -8.8]) == 2
    assert len(news) == 12 and set(news["reason"]) == {"no data"}  # Bahdanau's 6 and Luong's 6


def test_a_number_printed_for_one_model_is_a_copy_on_the_others(synthetic_grid):
    """J&W print Table 1 once per dataset for the BiLSTM; their experiments use additive attention, so the
    dot-attention twin's row is a copy (printed_model False): an extra measurement, never a verdict."""
    spec = {**JW_GRID, "name": "jw-twins", "grid": {**JW_GRID["grid"], "attention": ["additive", "dot"]}}
    frame = fidelity(ReportInputs.load(synthetic_grid(spec).expanded), entries=[]).frame
    table1 = frame[frame["quantity"] == "test_performance"].set_index(["dataset", "model"])["printed_model"]
    assert table1.to_dict() == {
        ("sst", "lstm + additive"): True,
        ("sst", "lstm + dot"): False,
        ("imdb", "lstm + additive"): True,
        ("imdb", "lstm + dot"): False,
    }
    assert frame.loc[frame["table"] == "Table 2", "printed_model"].all()  # printed per model: no copies


def test_each_row_names_its_cells_and_population(synthetic_grid):
    grid = synthetic_grid({**JW_GRID, "instances": 500, "train": {"max_train": 200}})
    frame = fidelity(ReportInputs.load(grid.expanded), entries=[]).frame
    sst = row(frame, "sst", "tau_g", "class 0")
    assert sst["cells"].split() == sorted(c.id for c in grid.cells(dataset="sst"))  # both seeds' cells
    assert sst["population"] == "training subset of 200; sample of 500 test instances"
    # test accuracy is measured on the whole test split, whatever the analyses' sample
    assert row(frame, "sst", "test_performance")["population"] == "training subset of 200"
    full = synthetic_grid({**JW_GRID, "name": "every-instance", "instances": None})
    assert set(fidelity(ReportInputs.load(full.expanded), entries=[]).frame["population"]) == {FULL}
