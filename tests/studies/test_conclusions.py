"""The claims table on hand-made rows: each claim's verdict per condition (holds / partly / reversed / not run),
its overall row, the CSV's columns, the lines that say what would decide a claim, and the report showing the
section first."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from typer.testing import CliRunner

from gridlab.analyses.ranking_agreement import SCHEMA as AGREEMENT_SCHEMA
from gridlab.cli import app
from gridlab.studies.claims import CLAIM_LIST, CLAIMS, HOLDS, NOT_RUN, PARTLY, REVERSED, STALE, VERDICTS
from gridlab.studies.claims.later_papers import tau_column
from gridlab.studies.conclusions import (
    COLUMNS,
    OVERALL,
    claims_frame,
    conclusions_table,
    overall,
    tally,
    undecided,
    write_conclusions,
)
from tests.rows import model_axes

REPO = Path(__file__).resolve().parents[2]
BASE = model_axes()


def axes(seed: int = 0, **overrides) -> dict:
    config = {**BASE, **overrides, "seed": seed}
    name = "-".join(str(config[k]) for k in ("dataset", "encoder", "projection", "architecture", "attention_mode"))
    lam = config["projection_lambda"]
    return {"cell_id": f"{name}-{'' if math.isnan(lam) else lam}-{seed}", **config}


def per_instance(cell: dict, columns: dict[str, list]) -> list[dict]:
    """One row per instance of `cell`: instance i gets the i-th value of every column."""
    n = len(next(iter(columns.values())))
    return [
        {**cell, "instance_id": i, "length": 8, "label": 0, "pred": 0, "max_attention": 0.5}
        | {k: v[i] for k, v in columns.items()}
        for i in range(n)
    ]


def frame(records: list[dict]) -> pd.DataFrame:
    out = pd.DataFrame.from_records(records)
    out["projection_lambda"] = out["projection_lambda"].astype(float)
    return out


def verdicts(inputs, claim: str) -> tuple[list[str], str]:
    """The claim's per-condition verdicts and its overall verdict on these inputs."""
    table = claims_frame({"demo": inputs})
    rows = table[table["claim"] == claim]
    conditions = rows[rows["condition"] != OVERALL]
    return conditions["verdict"].tolist(), rows.loc[rows["condition"] == OVERALL, "verdict"].item()


# ---- J&W -------------------------------------------------------------------------------------------------------


def tau_columns(tau: float) -> dict[str, list]:
    """Three instances of importance_correlation, each with this tau_g and tau_loo."""
    return {"tau_g": [tau] * 3, "p_g": [0.01] * 3, "tau_loo": [tau] * 3, "p_loo": [0.5] * 3}


def correlation(taus: dict[tuple[str, str], float]) -> pd.DataFrame:
    """(dataset, encoder) -> tau_g of every instance, seeds 0 and 1."""
    records = []
    for (dataset, encoder), tau in taus.items():
        for seed in (0, 1):
            cell = axes(seed, dataset=dataset, encoder=encoder)
            records += per_instance(
                cell, {"tau_g": [tau] * 3, "p_g": [0.01] * 3, "tau_loo": [tau] * 3, "p_loo": [0.5] * 3}
            )
    return frame(records)


@pytest.mark.parametrize(
    ("taus", "expected", "expected_overall"),
    [
        ({("sst", "lstm"): 0.2, ("sst", "average"): 0.6}, [HOLDS], HOLDS),
        ({("sst", "lstm"): 0.6, ("sst", "average"): 0.2}, [REVERSED], REVERSED),
        ({("sst", "lstm"): 0.4, ("sst", "average"): 0.4}, [PARTLY], PARTLY),
        (
            {("sst", "lstm"): 0.2, ("sst", "average"): 0.6, ("imdb", "lstm"): 0.6, ("imdb", "average"): 0.2},
            [REVERSED, HOLDS],  # imdb sorts first
            PARTLY,
        ),
    ],
)
def test_weak_correlation_compares_the_bilstm_with_the_average_encoder(fake_inputs, taus, expected, expected_overall):
    inputs = fake_inputs({"importance_correlation": correlation(taus)})
    assert verdicts(inputs, "jw.weak_correlation") == (expected, expected_overall)


def test_weak_correlation_without_an_average_encoder_says_what_would_decide_it(fake_inputs):
    inputs = fake_inputs({"importance_correlation": correlation({("sst", "lstm"): 0.2})})
    table = claims_frame({"demo": inputs})
    assert verdicts(inputs, "jw.weak_correlation") == ([], NOT_RUN)
    line = next(line for line in undecided(table) if line.startswith("jw.weak_correlation"))
    assert "average-encoder cell on the same dataset" in line and "importance_correlation" in line


def test_weak_correlation_condition_names_the_shared_axes_and_seeds(fake_inputs):
    inputs = fake_inputs({"importance_correlation": correlation({("sst", "lstm"): 0.2, ("sst", "average"): 0.6})})
    table = claims_frame({"demo": inputs})
    row = table[(table["claim"] == "jw.weak_correlation") & (table["condition"] != OVERALL)].iloc[0]
    assert row["condition"] == "dataset sst, attention additive, seeds 0,1"
    assert row["value"] == pytest.approx(0.2 - 0.6) and row["seeds"] == 2


def by_seed(analysis_columns, values: dict[int, list[float]], **overrides) -> pd.DataFrame:
    """Rows for seeds 0.. of one configuration: `analysis_columns(value_list)` gives each seed's columns."""
    records = []
    for seed, seed_values in values.items():
        records += per_instance(axes(seed, **overrides), analysis_columns(seed_values))
    return frame(records)


def permutation(values: dict[int, list[float]], **overrides) -> pd.DataFrame:
    return by_seed(lambda v: {"tvd_median": v, "tvd_mean": v, "tvd_max": v}, values, **overrides)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({0: [0.001] * 4, 1: [0.002] * 4}, HOLDS),  # every instance below 0.01 in both seeds
        ({0: [0.3] * 4, 1: [0.2] * 4}, REVERSED),
        ({0: [0.001] * 4, 1: [0.3] * 4}, PARTLY),  # shares 1 and 0: the interval spans 0.5
    ],
)
def test_permutation_share_of_unchanged_outputs(fake_inputs, values, expected):
    assert verdicts(fake_inputs({"permutation": permutation(values)}), "jw.permutation") == ([expected], expected)


def test_permutation_is_judged_on_bilstms_only(fake_inputs):
    inputs = fake_inputs({"permutation": permutation({0: [0.3] * 4}, encoder="cnn")})
    assert verdicts(inputs, "jw.permutation") == ([], NOT_RUN)


def adversarial(values: dict[int, list[float]], **overrides) -> pd.DataFrame:
    return by_seed(lambda v: {"jsd_eps_max": v, "tvd_at_jsd": [0.005] * len(v)}, values, **overrides)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({0: [0.6, 0.65, 0.62], 1: [0.6, 0.64, 0.66]}, HOLDS),
        ({0: [0.1, 0.05, 0.12], 1: [0.1, 0.02, 0.2]}, REVERSED),
        ({0: [0.6, 0.6, 0.6], 1: [0.1, 0.1, 0.1]}, PARTLY),
    ],
)
def test_adversarial_median_against_half_the_bound(fake_inputs, values, expected):
    inputs = fake_inputs({"adversarial": adversarial(values)})
    assert verdicts(inputs, "jw.adversarial") == ([expected], expected)


# ---- S&S -------------------------------------------------------------------------------------------------------


def single_erasure(top: list[bool], rand: list[bool]) -> pd.DataFrame:
    n = len(top)
    columns = {"flip_top": top, "flip_rand": rand, "delta_js": [0.1] * n, "js_top": [0.1] * n, "js_rand": [0.0] * n}
    return by_seed(lambda _: columns, {0: [0.0]})


@pytest.mark.parametrize(
    ("top", "rand", "expected"),
    [
        ([True] * 2 + [False] * 8, [False] * 10, HOLDS),  # i* flips 20%, r never
        ([True] * 6 + [False] * 4, [True] * 10, REVERSED),  # i* flips 60%, only r 40% > only i* 0%
        ([True] * 2 + [False] * 8, [False] * 2 + [True] * 4 + [False] * 4, PARTLY),  # rarely, but r more often
    ],
)
def test_single_erasure(fake_inputs, top, rand, expected):
    inputs = fake_inputs({"erasure_single": single_erasure(top, rand)})
    assert verdicts(inputs, "ss.single_erasure") == ([expected], expected)


def test_single_erasure_within_the_seeds_spread_is_partly(fake_inputs):
    """Only-i* above only-r in the mean (10% vs 0%), but one seed's r flips as often as its i*: the interval of
    the difference contains 0, so the rule cannot say i* flips more often."""
    seeds = {0: ([True] * 2 + [False] * 8, [False] * 10), 1: ([True] + [False] * 9, [True] + [False] * 9)}
    records = []
    for seed, (top, rand) in seeds.items():
        columns = {"flip_top": top, "flip_rand": rand, "delta_js": [0.1] * 10, "js_top": [0.1] * 10}
        records += per_instance(axes(seed), {**columns, "js_rand": [0.0] * 10})
    inputs = fake_inputs({"erasure_single": frame(records)})
    assert verdicts(inputs, "ss.single_erasure") == ([PARTLY], PARTLY)


def erasure_multi(gradient: float, attention: float, random: float) -> pd.DataFrame:
    return erasure_multi_by_seed({seed: (gradient, attention, random) for seed in (0, 1)})


def erasure_multi_by_seed(fractions: dict[int, tuple[float, float, float]]) -> pd.DataFrame:
    """Seed -> the fraction erased before the flip by gradient, attention and random, on three instances."""
    records = []
    for seed, values in fractions.items():
        columns = {
            f"{k}_{r}": [f * (8 if k == "removed" else 1)] * 3
            for r, f in zip(("gradient", "attention", "random"), values)
            for k in ("frac", "removed")
        }
        records += per_instance(axes(seed), columns)
    return frame(records)


RANKINGS = {"erasure_multi": SimpleNamespace(rankings=["attention", "random", "gradient"], exact_max_len=0)}


@pytest.mark.parametrize(
    ("fractions", "expected"),
    [
        ((0.1, 0.3, math.nan), HOLDS),  # random never flips: 1.0, the most items erased
        ((0.6, 0.3, 0.1), REVERSED),
        ((0.1, 0.6, 0.3), PARTLY),
        ((0.3, 0.3, 0.6), PARTLY),  # a tie is not "fewer"
    ],
)
def test_erasure_order(fake_inputs, fractions, expected):
    inputs = fake_inputs({"erasure_multi": erasure_multi(*fractions)}, analyses=RANKINGS)
    assert verdicts(inputs, "ss.erasure_order") == ([expected], expected)


def test_erasure_order_within_the_seeds_spread_is_partly(fake_inputs):
    """gradient 0.30 < attention 0.325 < random 0.8 in the means, but the seeds disagree on gradient against
    attention (0.1 < 0.3, 0.5 > 0.35): their intervals overlap, so the order is not shown."""
    rows = erasure_multi_by_seed({0: (0.1, 0.3, 0.8), 1: (0.5, 0.35, 0.8)})
    inputs = fake_inputs({"erasure_multi": rows}, analyses=RANKINGS)
    assert verdicts(inputs, "ss.erasure_order") == ([PARTLY], PARTLY)


def test_erasure_order_needs_all_three_rankings(fake_inputs):
    requested = {"erasure_multi": SimpleNamespace(rankings=["attention", "random"])}
    inputs = fake_inputs({"erasure_multi": erasure_multi(math.nan, 0.3, 0.6)}, analyses=requested)
    assert verdicts(inputs, "ss.erasure_order") == ([], NOT_RUN)


def test_erasure_order_without_the_grid_s_parameters_reads_the_rankings_off_the_rows(fake_inputs):
    inputs = fake_inputs({"erasure_multi": erasure_multi(0.1, 0.3, 0.6)})
    assert verdicts(inputs, "ss.erasure_order") == ([HOLDS], HOLDS)
    inputs = fake_inputs({"erasure_multi": erasure_multi(0.1, 0.3, math.nan)})  # random null everywhere
    assert verdicts(inputs, "ss.erasure_order") == ([], NOT_RUN)


# ---- W&P -------------------------------------------------------------------------------------------------------


def cells(accuracies: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """(dataset, attention_mode) -> test accuracy per seed."""
    records = [
        {**axes(seed, dataset=dataset, attention_mode=mode), "test_accuracy": accuracy}
        for (dataset, mode), values in accuracies.items()
        for seed, accuracy in enumerate(values)
    ]
    return frame(records)


@pytest.mark.parametrize(
    ("accuracies", "expected", "expected_overall"),
    [
        ({("sst", "learned"): [0.80, 0.82], ("sst", "uniform"): [0.81, 0.81]}, [HOLDS], HOLDS),
        ({("sst", "learned"): [0.80, 0.82], ("sst", "uniform"): [0.50, 0.52]}, [REVERSED], REVERSED),
        ({("sst", "learned"): [0.80], ("sst", "uniform"): [0.50]}, [NOT_RUN], NOT_RUN),  # no interval
        (
            {
                ("imdb", "learned"): [0.80, 0.82],
                ("imdb", "uniform"): [0.5, 0.5],
                ("sst", "learned"): [0.80, 0.82],
                ("sst", "uniform"): [0.81, 0.81],
            },
            [REVERSED, HOLDS],
            PARTLY,
        ),
    ],
)
def test_uniform_baseline(fake_inputs, accuracies, expected, expected_overall):
    inputs = fake_inputs({}, cells=cells(accuracies))
    assert verdicts(inputs, "wp.uniform_baseline") == (expected, expected_overall)


def seed_and_adversarial(seed_jsd: float, adversarial_jsd: float) -> dict[str, pd.DataFrame]:
    def seeds(_):
        return {
            "other_seeds": [1] * 3,
            "peer_cells": ["x"] * 3,
            "jsd_seed_mean": [seed_jsd] * 3,
            "jsd_seed_max": [seed_jsd] * 3,
            "tvd_seed_mean": [0.01] * 3,
        }

    return {
        "seed_variance": by_seed(seeds, {0: [0.0], 1: [0.0]}),
        "adversarial": adversarial({0: [adversarial_jsd] * 3, 1: [adversarial_jsd] * 3}),
    }


@pytest.mark.parametrize(("seed_jsd", "adversarial_jsd", "expected"), [(0.3, 0.1, HOLDS), (0.1, 0.6, REVERSED)])
def test_seed_variance(fake_inputs, seed_jsd, adversarial_jsd, expected):
    inputs = fake_inputs(seed_and_adversarial(seed_jsd, adversarial_jsd))
    assert verdicts(inputs, "wp.seed_variance") == ([expected], expected)


def test_seed_variance_needs_the_seed_rows(fake_inputs):
    inputs = fake_inputs({"adversarial": adversarial({0: [0.5] * 3})})
    assert verdicts(inputs, "wp.seed_variance") == ([], NOT_RUN)


def per_model(variants: dict[str, dict[str, float]], seeds=(0, 1)) -> pd.DataFrame:
    return frame([{**axes(seed), "variant": v, **columns} for seed in seeds for v, columns in variants.items()])


@pytest.mark.parametrize(
    ("base", "uniform", "learned", "expected"),
    [(0.85, 0.80, 0.84, HOLDS), (0.82, 0.80, 0.84, PARTLY), (0.70, 0.80, 0.84, REVERSED)],
)
def test_diagnostic_mlp(fake_inputs, base, uniform, learned, expected):
    mlp = {v: {"accuracy": a, "f1_macro": a} for v, a in (("base", base), ("uniform", uniform), ("learned", learned))}
    inputs = fake_inputs({"diagnostic_mlp": per_model(mlp)})
    assert verdicts(inputs, "wp.diagnostic") == ([expected], expected)


def test_diagnostic_mlp_within_the_seeds_spread_is_partly(fake_inputs):
    """base below uniform in the mean, but the seeds' intervals overlap: no order is shown (the mean alone
    read 'reversed')."""
    accuracies = {
        0: {"base": 0.78, "uniform": 0.80, "learned": 0.80},
        1: {"base": 0.81, "uniform": 0.80, "learned": 0.80},
    }
    rows = [
        {**axes(seed), "variant": v, "accuracy": a, "f1_macro": a}
        for seed, variants in accuracies.items()
        for v, a in variants.items()
    ]
    inputs = fake_inputs({"diagnostic_mlp": frame(rows)})
    assert verdicts(inputs, "wp.diagnostic") == ([PARTLY], PARTLY)


@pytest.mark.parametrize(
    ("base", "adversary", "expected"), [(0.85, 0.60, HOLDS), (0.60, 0.85, REVERSED), (0.85, 0.85, PARTLY)]
)
def test_diagnostic_adversary(fake_inputs, base, adversary, expected):
    mlp = {v: {"accuracy": a, "f1_macro": a} for v, a in (("base", base), ("adversary", adversary))}
    inputs = fake_inputs({"diagnostic_mlp": per_model(mlp)})
    assert verdicts(inputs, "wp.diagnostic_adversary") == ([expected], expected)


def test_diagnostic_adversary_needs_the_adversary_variant(fake_inputs):
    """Rows of a grid that asked for uniform, learned and base only decide wp.diagnostic, not this claim."""
    mlp = {v: {"accuracy": a, "f1_macro": a} for v, a in (("base", 0.85), ("uniform", 0.8), ("learned", 0.84))}
    inputs = fake_inputs({"diagnostic_mlp": per_model(mlp)})
    assert verdicts(inputs, "wp.diagnostic_adversary") == ([], NOT_RUN)


def test_weak_correlation_within_the_seeds_spread_is_partly(fake_inputs):
    records = []
    for seed, (lstm, average) in enumerate([(0.2, 0.1), (0.4, 0.7)]):  # BiLSTM below in the mean, not apart
        for encoder, tau in (("lstm", lstm), ("average", average)):
            records += per_instance(axes(seed, encoder=encoder), tau_columns(tau))
    inputs = fake_inputs({"importance_correlation": frame(records)})
    assert verdicts(inputs, "jw.weak_correlation") == ([PARTLY], PARTLY)


@pytest.mark.parametrize(("trained", "search", "expected"), [(0.2, 0.6, HOLDS), (0.6, 0.2, REVERSED)])
def test_consistent_adversary(fake_inputs, trained, search, expected):
    adversaries = per_model({"unfrozen": {"jsd_mean": trained, "tvd_mean": 0.01}, "frozen": {"jsd_mean": 0.9}})
    inputs = fake_inputs(
        {"adversarial_model": adversaries, "adversarial": adversarial({0: [search] * 3, 1: [search] * 3})}
    )
    assert verdicts(inputs, "wp.consistent_adversary") == ([expected], expected)


def tradeoff(points: dict[float, tuple[float, float]], seed_jsd: float = 0.2, seed_tvd: float = 0.05, spread=0.01):
    """adversary_tradeoff rows (lam -> (JSD, TVD) of the adversary) and seed_variance rows of seeds 0-2, the
    seeds' values shifted by -spread, 0, +spread so that every interval has a width."""
    rows, seeds = [], []
    for seed, shift in enumerate((-spread, 0.0, spread)):
        cell = axes(seed)
        rows += [{**cell, "lam": lam, "jsd_mean": j + shift, "tvd_mean": t + shift} for lam, (j, t) in points.items()]
        seeds += per_instance(
            cell, {"other_seeds": [2] * 3, "jsd_seed_mean": [seed_jsd] * 3, "tvd_seed_mean": [seed_tvd] * 3}
        )
    return {"adversary_tradeoff": frame(rows), "seed_variance": frame(seeds)}


@pytest.mark.parametrize(
    ("points", "expected", "value"),
    [
        ({0.01: (0.1, 0.02), 0.1: (0.5, 0.04)}, HOLDS, 0.3),  # past the seeds' JSD at their TVD
        ({0.01: (0.1, 0.02), 0.1: (0.5, 0.30)}, REVERSED, -0.1),  # past their JSD only at a larger TVD
        ({0.01: (0.1, 0.02), 0.1: (0.2, 0.04)}, PARTLY, 0.0),  # at most as far as a seed's, within its TVD
        ({0.1: (0.6, 0.30)}, REVERSED, math.nan),  # no lam keeps the outputs within the seeds'
    ],
)
def test_adversary_tradeoff(fake_inputs, points, expected, value):
    inputs = fake_inputs(tradeoff(points))
    assert verdicts(inputs, "wp.adversary_tradeoff") == ([expected], expected)
    row = claims_frame({"demo": inputs})
    found = row[(row["claim"] == "wp.adversary_tradeoff") & (row["condition"] != OVERALL)]["value"].item()
    assert found == pytest.approx(value, abs=1e-9, nan_ok=True)


def test_adversary_tradeoff_needs_the_seed_rows(fake_inputs):
    inputs = fake_inputs({"adversary_tradeoff": tradeoff({0.1: (0.5, 0.04)})["adversary_tradeoff"]})
    assert verdicts(inputs, "wp.adversary_tradeoff") == ([], NOT_RUN)


# ---- Vashishth -------------------------------------------------------------------------------------------------


def ablation(architecture: str, learned: list[float], uniform: list[float], metric: str = "accuracy") -> pd.DataFrame:
    """Learned cells with their inference rows, and uniform-trained cells with their own `learned` row."""
    records = []
    for seed, (base, trained) in enumerate(zip(learned, uniform)):
        for mode, value in (("learned", base), ("uniform", base / 2)):
            records.append(
                {**axes(seed, architecture=architecture), "mode": mode, "metric": metric, "value": value}
                | {"delta": value - base, "instances": 10}
            )
        cell = axes(seed, architecture=architecture, attention_mode="uniform")
        records.append({**cell, "mode": "learned", "metric": metric, "value": trained, "delta": 0.0, "instances": 10})
    return frame(records)


@pytest.mark.parametrize(
    ("claim", "architecture", "learned", "uniform", "expected"),
    [
        ("vashishth.single_sequence", "flat", [0.80, 0.82], [0.80, 0.82], HOLDS),  # no change
        ("vashishth.single_sequence", "flat", [0.80, 0.82], [0.79, 0.83], HOLDS),  # within the seeds' interval
        ("vashishth.single_sequence", "flat", [0.80, 0.82], [0.50, 0.51], REVERSED),
        ("vashishth.pair", "pair", [0.75, 0.76], [0.35, 0.34], HOLDS),
        ("vashishth.pair", "pair", [0.75, 0.76], [0.74, 0.78], PARTLY),
        ("vashishth.pair", "pair", [0.75, 0.76], [0.85, 0.87], REVERSED),
        ("vashishth.generation", "seq2seq", [31.0, 31.5], [20.0, 21.0], HOLDS),
    ],
)
def test_vashishth_uniform_train_and_infer(fake_inputs, claim, architecture, learned, uniform, expected):
    metric = "bleu" if architecture == "seq2seq" else "accuracy"
    inputs = fake_inputs({"attention_ablation": ablation(architecture, learned, uniform, metric)})
    assert verdicts(inputs, claim) == ([expected], expected)
    other = {"vashishth.single_sequence", "vashishth.pair", "vashishth.generation"} - {claim}
    for name in other:  # each task type decides its own claim only
        assert verdicts(inputs, name) == ([], NOT_RUN)


def test_vashishth_with_one_seed_is_not_run(fake_inputs):
    inputs = fake_inputs({"attention_ablation": ablation("flat", [0.8], [0.5])})
    assert verdicts(inputs, "vashishth.single_sequence") == ([NOT_RUN], NOT_RUN)


# ---- Meister ---------------------------------------------------------------------------------------------------

TAUS = ("tau_gy_x", "tau_dy_x", "tau_gy_h", "tau_dy_h")


def sparsity(entropy: float, taus: dict[tuple[str, float], float]) -> pd.DataFrame:
    """(projection, lambda) -> tau_gy_x of every instance, two seeds; every cell's entropy_gh_x `entropy`."""
    records = []
    for (projection, lam), tau in taus.items():
        for seed in (0, 1):
            columns = {"entropy_gh_x": [entropy] * 3, **{t: [tau] * 3 for t in TAUS}}
            records += per_instance(axes(seed, projection=projection, projection_lambda=lam), columns)
    return frame(records)


@pytest.mark.parametrize(("entropy", "expected"), [(0.9, HOLDS), (0.1, REVERSED)])
def test_input_vs_intermediate(fake_inputs, entropy, expected):
    inputs = fake_inputs({"sparsity_importance": sparsity(entropy, {("softmax", math.nan): 0.3})})
    assert verdicts(inputs, "meister.input_vs_intermediate") == ([expected], expected)


@pytest.mark.parametrize(
    ("taus", "expected"),
    [
        ({("softmax", math.nan): 0.4, ("sparsemax", math.nan): 0.2}, HOLDS),
        ({("softmax", math.nan): 0.4, ("sparsemax", math.nan): 0.6}, REVERSED),
        ({("softmax", math.nan): 0.4, ("sparsemax", math.nan): 0.2, ("sparsegen", 0.5): 0.6}, PARTLY),
    ],
)
def test_sparsity(fake_inputs, taus, expected):
    inputs = fake_inputs({"sparsity_importance": sparsity(0.9, taus)})
    assert verdicts(inputs, "meister.sparsity") == ([expected], expected)


def test_sparsity_within_the_seeds_spread_is_partly(fake_inputs):
    """sparsemax below softmax in the mean (0.3 against 0.35) but not apart: its seeds give 0.1 and 0.5."""
    records = []
    for seed, (softmax, sparsemax) in enumerate([(0.3, 0.1), (0.4, 0.5)]):
        for projection, tau in (("softmax", softmax), ("sparsemax", sparsemax)):
            columns = {"entropy_gh_x": [0.9] * 3, **{t: [tau] * 3 for t in TAUS}}
            records += per_instance(axes(seed, projection=projection, projection_lambda=math.nan), columns)
    inputs = fake_inputs({"sparsity_importance": frame(records)})
    assert verdicts(inputs, "meister.sparsity") == ([PARTLY], PARTLY)


def test_sparsity_needs_a_softmax_cell(fake_inputs):
    inputs = fake_inputs({"sparsity_importance": sparsity(0.9, {("sparsemax", math.nan): 0.2})})
    assert verdicts(inputs, "meister.sparsity") == ([], NOT_RUN)


# ---- Abnar & Zuidema, Neely et al. -----------------------------------------------------------------------------


def agreement_rows(taus: dict[int, dict[tuple[str, str], float]], **overrides) -> pd.DataFrame:
    """`ranking_agreement` rows of one configuration: seed -> {(R, S): tau of every instance}, three instances
    each; every other pair null, as the analysis writes a pair it did not compute."""
    records = []
    for seed, pairs in taus.items():
        columns: dict[str, list] = {name: [None] * 3 for name in AGREEMENT_SCHEMA.names}
        for (first, second), tau in pairs.items():
            name = tau_column(first, second)
            assert name in AGREEMENT_SCHEMA.names, name
            columns[name] = [tau] * 3
            columns[name.replace("tau__", "overlap__")] = [0.5] * 3
        records += per_instance(axes(seed, **overrides), columns)
    return frame(records)


def flows(attention: float, rollout: float, flow: float | None, shift: float = 0.01) -> dict[int, dict]:
    """Two seeds of a Transformer: attention's, rollout's and flow's tau with leave_one_out and with gradient
    (seed 1 each `shift` higher)."""
    methods = {"attention": attention, "attention_rollout": rollout, "attention_flow": flow}
    return {
        seed: {
            (method, reference): tau + seed * shift
            for method, tau in methods.items()
            if tau is not None
            for reference in ("leave_one_out", "gradient")
        }
        | {("gradient", "leave_one_out"): 0.3}
        for seed in (0, 1)
    }


TRANSFORMER = {"encoder": "transformer", "attention": "dot"}


@pytest.mark.parametrize(
    ("attention", "rollout", "flow", "expected"),
    [
        (0.10, 0.30, 0.25, HOLDS),  # both above raw attention against both references
        (0.10, 0.30, 0.05, PARTLY),  # rollout above, flow below
        (0.30, 0.10, 0.05, REVERSED),  # raw attention above both
        (0.10, 0.30, None, HOLDS),  # no flow rows: rollout alone decides
    ],
)
def test_rollout_and_flow_against_raw_attention(fake_inputs, attention, rollout, flow, expected):
    rows = agreement_rows(flows(attention, rollout, flow), **TRANSFORMER)
    inputs = fake_inputs({"ranking_agreement": rows})
    assert verdicts(inputs, "abnar.rollout_flow") == ([expected], expected)
    finding = CLAIMS["abnar.rollout_flow"].decide(inputs)[0]
    assert finding.value == pytest.approx(min(rollout, flow if flow is not None else rollout) - attention)
    assert finding.detail.endswith("; flow not run") == (flow is None)


def test_rollout_whose_seeds_straddle_raw_attention_is_partly(fake_inputs):
    taus = flows(0.2, 0.0, 0.4, shift=0.0)
    for pair in (("attention_rollout", "leave_one_out"), ("attention_rollout", "gradient")):
        taus[1][pair] = 0.4  # rollout - attention: -0.2 and +0.2 across the seeds
    inputs = fake_inputs({"ranking_agreement": agreement_rows(taus, **TRANSFORMER)})
    assert verdicts(inputs, "abnar.rollout_flow") == ([PARTLY], PARTLY)


def test_rollout_flow_decides_the_pretrained_encoder_and_not_the_bilstm(fake_inputs):
    rows = pd.concat(
        [
            agreement_rows(flows(0.1, 0.3, 0.25), encoder="pretrained", attention="dot"),
            agreement_rows(flows(0.1, None, None), encoder="lstm"),  # rollout and flow do not apply
        ],
        ignore_index=True,
    )
    table = claims_frame({"demo": fake_inputs({"ranking_agreement": rows})})
    decided = table[table["claim"] == "abnar.rollout_flow"]
    assert decided["condition"].tolist() == ["dataset sst, encoder pretrained, attention dot, seeds 0,1", OVERALL]
    assert decided["verdict"].tolist() == [HOLDS, HOLDS]


def test_rollout_flow_without_a_reference_ranking_is_not_run(fake_inputs):
    taus = {s: {p: t for p, t in pairs.items() if "gradient" not in p} for s, pairs in flows(0.1, 0.3, 0.25).items()}
    inputs = fake_inputs({"ranking_agreement": agreement_rows(taus, **TRANSFORMER)})
    assert verdicts(inputs, "abnar.rollout_flow") == ([], NOT_RUN)
    line = next(line for line in undecided(claims_frame({"demo": inputs})) if line.startswith("abnar."))
    assert "`ranking_agreement` rows of a learned-attention transformer or pretrained cell" in line


SHARED_PAIRS = (("attention", "gradient"), ("attention", "leave_one_out"), ("gradient", "leave_one_out"))


def disagreement(pretrained: dict[int, float], bilstm: dict[int, float], dataset: str = "sst") -> pd.DataFrame:
    """Seed -> tau of every shared pair, for a pretrained cell on SST and a BiLSTM on `dataset`. Pairs with
    random, and the pretrained cell's rollout pairs, get 0.9: the statistic must leave them out."""
    ignored = {("attention", "random"): 0.9, ("random", "gradient"): 0.9, ("attention", "attention_rollout"): 0.9}
    return pd.concat(
        [
            agreement_rows(
                {s: dict.fromkeys(SHARED_PAIRS, t) | ignored for s, t in pretrained.items()},
                encoder="pretrained",
                attention="dot",
            ),
            agreement_rows(
                {s: dict.fromkeys(SHARED_PAIRS, t) | {("attention", "random"): 0.9} for s, t in bilstm.items()},
                dataset=dataset,
            ),
        ],
        ignore_index=True,
    )


@pytest.mark.parametrize(
    ("pretrained", "bilstm", "expected"),
    [
        ({0: 0.09, 1: 0.11}, {0: 0.49, 1: 0.51}, HOLDS),  # the transformer's rankings agree less
        ({0: 0.49, 1: 0.51}, {0: 0.09, 1: 0.11}, REVERSED),
        ({0: 0.10, 1: 0.50}, {0: 0.30, 1: 0.32}, PARTLY),  # the seeds' intervals overlap
        ({0: 0.20}, {0: 0.30}, HOLDS),  # one seed each: the means decide
    ],
)
def test_disagreement_compares_the_pretrained_encoder_with_the_bilstm(fake_inputs, pretrained, bilstm, expected):
    inputs = fake_inputs({"ranking_agreement": disagreement(pretrained, bilstm)})
    assert verdicts(inputs, "neely.disagreement") == ([expected], expected)
    finding = CLAIMS["neely.disagreement"].decide(inputs)[0]
    mean = lambda values: sum(values.values()) / len(values)  # noqa: E731
    assert finding.value == pytest.approx(mean(pretrained) - mean(bilstm))  # random and rollout pairs left out
    assert finding.detail.startswith("mean pairwise τ over 3 pairs of rankings")


def test_disagreement_condition_names_each_encoder_s_attention(fake_inputs):
    inputs = fake_inputs({"ranking_agreement": disagreement({0: 0.1, 1: 0.1}, {0: 0.5, 1: 0.5})})
    table = claims_frame({"demo": inputs})
    row = table[(table["claim"] == "neely.disagreement") & (table["condition"] != OVERALL)].iloc[0]
    assert row["condition"] == "dataset sst, pretrained attention dot, lstm attention additive, seeds 0,1"


def test_disagreement_needs_both_encoders_on_one_dataset(fake_inputs):
    inputs = fake_inputs({"ranking_agreement": disagreement({0: 0.1, 1: 0.1}, {0: 0.5, 1: 0.5}, dataset="imdb")})
    assert verdicts(inputs, "neely.disagreement") == ([], NOT_RUN)
    line = next(line for line in undecided(claims_frame({"demo": inputs})) if line.startswith("neely."))
    assert "a learned-attention pretrained cell and a learned-attention lstm cell on the same dataset" in line


# ---- the table -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([HOLDS, HOLDS], HOLDS),
        ([HOLDS, NOT_RUN], HOLDS),
        ([HOLDS, PARTLY], PARTLY),
        ([HOLDS, REVERSED], PARTLY),
        ([PARTLY, REVERSED], REVERSED),
        ([PARTLY], PARTLY),
        ([NOT_RUN], NOT_RUN),
        ([], NOT_RUN),
    ],
)
def test_overall_verdict(conditions, expected):
    assert overall(conditions) == expected


def test_an_empty_grid_lists_every_claim_not_run_with_what_would_decide_it(fake_inputs):
    table = claims_frame({"demo": fake_inputs({})})
    assert table.columns.tolist() == COLUMNS
    assert table["claim"].tolist() == [claim.id for claim in CLAIM_LIST]
    assert (table["condition"] == OVERALL).all() and (table["verdict"] == NOT_RUN).all()
    assert table["value"].isna().all()  # nothing measured: no number
    lines = undecided(table)
    assert len(lines) == len(CLAIM_LIST) == 18
    for claim, line in zip(CLAIM_LIST, lines):
        assert line == f"{claim.id}: not run — needs {claim.needs}"
        assert any(a in line for a in claim.analyses if a != "cells") or "trained cells" in line


def test_the_csv_has_every_condition_and_the_overall_rows_at_full_precision(fake_inputs):
    inputs = fake_inputs({"importance_correlation": correlation({("sst", "lstm"): 0.2, ("sst", "average"): 0.6001})})
    table = conclusions_table(claims_frame({"demo": inputs}))
    written = pd.read_csv(io.StringIO(table.frame.to_csv(index=False)))
    assert written.columns.tolist()[:5] == ["claim", "condition", "statistic", "value", "verdict"]
    assert set(written["verdict"]) <= set(VERDICTS)
    condition = written[(written["claim"] == "jw.weak_correlation") & (written["condition"] != OVERALL)]
    assert condition["value"].item() == pytest.approx(0.2 - 0.6001, abs=1e-12)
    overall_row = written[(written["claim"] == "jw.weak_correlation") & (written["condition"] == OVERALL)]
    assert overall_row["verdict"].item() == HOLDS and overall_row["value"].item() == 1.0
    assert "jw.weak_correlation" not in "\n".join(undecided(table.frame))
    assert table.markdown is not None and "ss.erasure_order: not run — needs `erasure_multi`" in table.markdown


def test_the_tally_counts_each_grids_decided_conditions_and_names_the_reversed():
    def row(grid: str, condition: str, verdict: str) -> dict:
        return {"claim": "jw.weak_correlation", "grid": grid, "condition": condition, "verdict": verdict}

    frame = pd.DataFrame.from_records(
        [
            row("grids/a.yaml", "encoder cnn", HOLDS),
            row("grids/a.yaml", "encoder lstm", REVERSED),
            row("grids/a.yaml", "encoder gru", STALE),  # counted as not run: left out
            row("grids/b.yaml", "encoder lstm", PARTLY),
            row("grids/b.yaml", "encoder cnn", NOT_RUN),
            row("all", OVERALL, PARTLY),
        ]
    )
    table = tally(frame)
    assert table[["grid", "conditions", HOLDS, PARTLY, REVERSED]].values.tolist() == [
        ["grids/a.yaml", 2, 1, 0, 1],
        ["grids/b.yaml", 1, 0, 1, 0],
    ]
    assert table["reversed where"].tolist() == ["encoder lstm", "–"]


def test_every_claim_declares_its_rule():
    expected = {
        "jw.weak_correlation", "jw.permutation", "jw.adversarial", "ss.single_erasure", "ss.erasure_order",
        "wp.uniform_baseline", "wp.seed_variance", "wp.diagnostic", "wp.diagnostic_adversary",
        "wp.consistent_adversary", "wp.adversary_tradeoff",
        "vashishth.single_sequence", "vashishth.pair", "vashishth.generation",
        "meister.input_vs_intermediate", "meister.sparsity", "abnar.rollout_flow", "neely.disagreement",
    }  # fmt: skip
    assert set(CLAIMS) == expected
    for claim in CLAIM_LIST:
        assert claim.statistic and claim.rule and claim.needs and claim.wording and claim.analyses


# ---- the report and the command --------------------------------------------------------------------------------

ENCODERS_GRID = {
    "name": "claims",
    "grid": {"dataset": ["sst"], "encoder": ["lstm", "average"], "attention": ["additive"], "seed": [0, 1]},
    "analyses": {"importance_correlation": {}},
}


def encoders_grid(synthetic_grid):
    """SST, BiLSTM and average encoders, two seeds: the BiLSTM's tau_g 0.2, the average encoder's 0.6."""
    grid = synthetic_grid(ENCODERS_GRID)
    for cell in grid.cells():
        tau = 0.2 if cell.config.encoder == "lstm" else 0.6
        grid.write_rows("importance_correlation", cell, per_instance({}, tau_columns(tau)))
        grid.write_trained(cell, test_accuracy=0.8)
    return grid


def test_the_report_shows_the_claims_first(synthetic_grid, tmp_path):
    from gridlab.studies.report import build_report

    grid = encoders_grid(synthetic_grid)
    summary = build_report(grid.expanded, tmp_path / "report")
    manifest = json.loads((summary.out / "report.json").read_text())
    assert [s["id"] for s in manifest["sections"][:2]] == ["conclusions", "fidelity"]
    assert manifest["sections"][0]["artifacts"] == ["conclusions"]
    page = (summary.out / "index.html").read_text()
    assert page[page.index("<table id=") :].startswith('<table id="conclusions"')
    written = pd.read_csv(summary.out / "conclusions.csv")
    decided = written[written["claim"] == "jw.weak_correlation"]
    assert decided["verdict"].tolist() == [HOLDS, HOLDS]  # sst, seeds 0,1; then the overall row
    assert decided["condition"].tolist() == ["dataset sst, attention additive, seeds 0,1", OVERALL]
    assert decided["value"].iloc[0] == pytest.approx(0.2 - 0.6)
    markdown = (summary.out / "conclusions.md").read_text()
    assert (
        "jw.permutation: not run — needs `permutation` rows of a learned-attention lstm (or pretrained) cell"
        in markdown
    )
    assert summary.conclusions == "1 hold, 0 partly, 0 reversed, 17 not run"


def test_conclusions_command_writes_the_rules_before_the_verdicts(synthetic_grid, tmp_path):
    grid = encoders_grid(synthetic_grid)
    out = tmp_path / "docs" / "conclusions.md"
    result = CliRunner().invoke(app, ["conclusions", str(grid.path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"conclusions: {out} (1 hold, 0 partly, 0 reversed, 17 not run)" in result.output
    text = out.read_text()
    assert f"Generated by `gridlab conclusions {grid.path} --out {out}`" in text
    rules, verdicts_part = text.split("## Verdicts")
    for claim in CLAIM_LIST:
        assert f"### `{claim.id}`" in rules and claim.rule in rules
        assert f"| {claim.id} |" in verdicts_part
    assert "| jw.weak_correlation | dataset sst, attention additive, seeds 0,1 | holds |" in verdicts_part
    assert "- meister.sparsity: not run — needs `sparsity_importance` rows of a softmax cell" in verdicts_part


def test_a_claim_not_run_names_the_grids_that_request_its_analyses(fake_inputs):
    table = claims_frame({"demo": fake_inputs({}, analyses={"permutation": {}, "seed_variance": {}})})
    lines = {line.split(":")[0]: line for line in undecided(table)}
    assert lines["jw.permutation"].endswith("; requested by grid.yaml (its rows: `gridlab launch grid.yaml`)")
    assert "requested by" not in lines["wp.seed_variance"]  # it also reads `adversarial`, which the grid lacks
    assert "requested by" not in lines["jw.adversarial"]


def test_the_committed_document_states_every_rule_as_the_code_does():
    """docs/conclusions.md is regenerated by `gridlab fidelity`, as its first lines say: a rule edited in
    gridlab/studies/claims/ without rerunning it would leave the document judging by words the code no longer uses."""
    text = (REPO / "docs" / "conclusions.md").read_text()
    rules = text.split("## Verdicts")[0]
    for claim in CLAIM_LIST:
        assert f"- **Rule per condition**: {claim.rule}" in rules, claim.id
        assert f"- **Statistic**: {claim.statistic}" in rules, claim.id
    assert "Generated by `gridlab fidelity` from the repository root" in text


def test_a_setting_that_varies_splits_the_conditions(fake_inputs):
    """Cells that differ in `model.embeddings` are different configurations: one condition each, named."""
    rows = pd.concat(
        [
            permutation({0: [0.001] * 4}).assign(**{"model.embeddings": "null"}),
            permutation({0: [0.3] * 4}).assign(**{"model.embeddings": "word2vec", "cell_id": "other"}),
        ],
        ignore_index=True,
    )
    table = claims_frame({"demo": fake_inputs({"permutation": rows})})
    rows = table[table["claim"] == "jw.permutation"]
    assert rows["condition"].tolist() == [
        "dataset sst, encoder lstm, attention additive, model.embeddings null, seeds 0",
        "dataset sst, encoder lstm, attention additive, model.embeddings word2vec, seeds 0",
        OVERALL,
    ]
    assert rows["verdict"].tolist() == [HOLDS, REVERSED, PARTLY]


def test_the_document_names_the_grid_of_each_condition_when_several_decide(synthetic_grid, tmp_path):
    first = encoders_grid(synthetic_grid)
    second = synthetic_grid({**ENCODERS_GRID, "name": "claims-again"})
    for cell in second.cells():
        tau = 0.7 if cell.config.encoder == "lstm" else 0.1  # reversed here
        second.write_rows("importance_correlation", cell, per_instance({}, tau_columns(tau)))
    out = tmp_path / "conclusions.md"
    frame = write_conclusions([first.expanded, second.expanded], out)
    weak = frame[frame["claim"] == "jw.weak_correlation"]
    assert weak["grid"].tolist() == ["claims", "claims-again", "claims, claims-again"]
    assert weak["verdict"].tolist() == [HOLDS, REVERSED, PARTLY]
    text = out.read_text()
    assert f"Generated by `gridlab conclusions {first.path} {second.path} --out {out}`" in text
    assert "| jw.weak_correlation | claims-again | dataset sst, attention additive, seeds 0,1 | reversed |" in text
    assert "| jw.weak_correlation | all | all | partly | 0.500 |" in text


def test_weak_correlation_compares_each_contextual_encoder_with_the_average_one(fake_inputs):
    """With a CNN beside the BiLSTM (J&W's Table 2), each is its own condition, named by its encoder."""
    taus = {("sst", "lstm"): 0.2, ("sst", "cnn"): 0.7, ("sst", "average"): 0.6}
    inputs = fake_inputs({"importance_correlation": correlation(taus)})
    table = claims_frame({"demo": inputs})
    rows = table[(table["claim"] == "jw.weak_correlation") & (table["condition"] != OVERALL)]
    by_condition = dict(zip(rows["condition"], rows["verdict"]))
    assert by_condition == {
        "encoder lstm, dataset sst, attention additive, seeds 0,1": HOLDS,
        "encoder cnn, dataset sst, attention additive, seeds 0,1": REVERSED,
    }
    assert verdicts(inputs, "jw.weak_correlation")[1] == PARTLY
