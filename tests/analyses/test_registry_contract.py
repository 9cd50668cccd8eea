"""One contract over every implemented analysis (docs/analyses.md): on a tiny model, its schema, no NaN (a missing
value is a null), bounds (TVD in [0, 1], JSD in [0, ln 2], tau in [-1, 1], fractions in (0, 1]), identical
rows for the same seed, and the same rows whether the instances run as 1 shard or as 3; and a summary that
holds only what was measured: asked for a subset of its variants (two rankings, one mode), no entry names
the others, no value is NaN, and no rows give no numbers (not zeros); and a summary whose names are the ones
its declaration lists, each of them there unless the cell cannot measure it."""

from __future__ import annotations

import inspect
import math
import re
import typing
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch

from gridlab.analyses.base import GridAnalysis, InstanceAnalysis, ModelAnalysis
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.catalog.analyses import ANALYSES, RANKINGS, ranking_applies
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.execution.plan import ShardJob
from gridlab.execution.runner import ShardRunner
from gridlab.models.factory import build_model
from gridlab.results.parts import COMMON_SCHEMA, MODEL_COMMON_SCHEMA
from gridlab.results.shards import Shard, plan_shards
from tests.models.conftest import write_tiny_bert

LN2 = math.log(2)
INSTANCES = 30
FAST = {
    "permutation": {"n": 12},
    "erasure_multi": {"exact_max_len": 9},
    "adversarial": {"k": 3, "steps": 30},
    "adversarial_model": {"epochs": 2},
    "diagnostic_mlp": {"epochs": 2, "hidden": 8},
}
PER_INSTANCE = sorted(a for a, analysis in IMPLEMENTATIONS.items() if analysis.scope in ("instance", "grid"))
PER_MODEL = sorted(a for a in IMPLEMENTATIONS if a not in PER_INSTANCE and a != "layer_permutation")
# layer_permutation applies to transformer encoders only: tests/analyses/test_layer_permutation.py


def bounds(column: str) -> tuple[float, float] | None:
    if column.startswith("tvd"):
        return 0.0, 1.0
    if column.startswith(("js_", "jsd")):
        return 0.0, LN2
    if column.startswith("tau"):
        return -1.0, 1.0
    if column.startswith("entropy"):
        return 0.0, 1.0
    if column.startswith(("p_", "frac")):
        return 0.0, 1.0
    if column.startswith("delta_js"):
        return -LN2, LN2
    return None


def tiny_model(encoder: str, folder: Path) -> dict:
    """The cell settings of a tiny model: a BiLSTM, or the pretrained encoder on a tiny random BERT."""
    if encoder == "pretrained":
        return {
            "encoder": "pretrained",
            "attention": "dot",
            "model": ModelConfig(pretrained=str(write_tiny_bert(folder))),
        }
    return {"encoder": encoder, "model": ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)}


@pytest.fixture(scope="module", params=["lstm", "pretrained"])
def trained_store(
    tmp_path_factory: pytest.TempPathFactory, publish_model, request: pytest.FixtureRequest
) -> tuple[Path, Path, str, str]:
    """A grid-results folder holding one 'trained' tiny model (random weights, sharpened so decisions flip)."""
    root = tmp_path_factory.mktemp("grid")
    cache = tmp_path_factory.mktemp("cache")
    data_config = DataConfig(
        synthetic=SyntheticConfig(n_train=100, n_dev=20, n_test=INSTANCES, min_length=4, max_length=12)
    )
    config = CellConfig(dataset="synthetic", data=data_config, **tiny_model(request.param, root / "bert"))
    config = config.model_copy(update={"data": DATASETS["synthetic"].resolve(config.data)})
    data = load_dataset("synthetic", root, cache, config.data)
    model = build_model(config, data).eval()
    with torch.no_grad():
        for p in model.attention.parameters():
            p.mul_(8.0)  # peaked attention, so erasures and permutations matter
        model.classifier.weight.mul_(20.0)
        batch = next(iterate_batches(data.splits["test"], INSTANCES))
        model.classifier.bias.sub_(model(batch).mean(0))  # decisions near the boundary: some of them flip
    identifier = publish_model(root / "models", config, data, model)
    peer_config = config.model_copy(update={"seed": 1})  # seed_variance's peer: the same cell but for its seed
    with torch.no_grad():
        for p in model.attention.parameters():
            p.add_(0.5 * torch.randn_like(p))
    peer = publish_model(root / "models", peer_config, data, model)
    return root, cache, identifier, peer


def run_all(
    store: tuple[Path, Path, str, str],
    out: Path,
    shard_size: int,
    batch_size: int = 6,
    params: dict[str, dict] | None = None,
) -> dict[str, pd.DataFrame]:
    root, cache, identifier, peer = store
    (out / "models").parent.mkdir(parents=True, exist_ok=True)
    if not (out / "models").exists():
        (out / "models").symlink_to(root / "models")
    runner = ShardRunner(out, root, cache, torch.device("cpu"))
    params = FAST if params is None else params
    analyses = {a: params.get(a, {}) for a in PER_INSTANCE}
    for shard in plan_shards(INSTANCES, None, shard_size):
        runner.run(ShardJob("g", identifier, shard, analyses, batch_size, peers=(peer,)))
    runner.run(ShardJob("g", identifier, Shard(0, 0, INSTANCES, INSTANCES), {a: params.get(a, {}) for a in PER_MODEL}))
    frames = {
        a: pd.read_parquet(out / "analyses" / a).sort_values("instance_id").reset_index(drop=True) for a in PER_INSTANCE
    }
    return frames | {a: pd.read_parquet(out / "analyses" / a) for a in PER_MODEL}


@pytest.fixture(scope="module")
def one_shard(trained_store, tmp_path_factory) -> dict[str, pd.DataFrame]:
    return run_all(trained_store, tmp_path_factory.mktemp("one"), shard_size=INSTANCES)


KINDS = {"instance": InstanceAnalysis, "grid": GridAnalysis, "model": ModelAnalysis}


@pytest.mark.parametrize("analysis_id", sorted(IMPLEMENTATIONS))
def test_every_implemented_analysis_keeps_the_contract(analysis_id: str):
    """Bound to its declaration, of the kind its scope says, with the declared parameter class as its type
    parameter, every abstract function bound, and columns of its own."""
    analysis = IMPLEMENTATIONS[analysis_id]
    assert analysis.info is ANALYSES[analysis_id] and analysis.info.id == analysis_id
    assert issubclass(analysis, KINDS[analysis.info.scope]) and not inspect.isabstract(analysis)
    (base,) = [b for b in analysis.__orig_bases__ if typing.get_origin(b) is KINDS[analysis.info.scope]]
    assert typing.get_args(base) == (analysis.info.params,)
    assert isinstance(analysis.schema, pa.Schema) and isinstance(analysis.version, int)
    assert not set(analysis.schema.names) & set(COMMON_SCHEMA.names)


@pytest.mark.parametrize("analysis_id", PER_MODEL)
def test_per_model_schema_and_bounds(one_shard, analysis_id: str):
    frame = one_shard.get(analysis_id) if analysis_id in one_shard else None
    analysis = IMPLEMENTATIONS[analysis_id]
    assert frame is not None and len(frame) >= 1
    assert set(analysis.schema.names) <= set(frame.columns) and "instance_id" not in frame.columns
    assert (frame["analysis_version"] == analysis.version).all()
    if "value" in frame and (frame["metric"] == "accuracy").all():
        assert frame["value"].between(0, 1).all() and frame["delta"].between(-1, 1).all()


@pytest.mark.parametrize("analysis_id", PER_INSTANCE)
def test_schema_values_and_bounds(one_shard, analysis_id: str):
    frame = one_shard[analysis_id]
    analysis = IMPLEMENTATIONS[analysis_id]
    assert len(frame) == INSTANCES and list(frame["instance_id"]) == list(range(INSTANCES))
    assert set(COMMON_SCHEMA.names + analysis.schema.names) <= set(frame.columns)
    assert (frame["analysis_version"] == analysis.version).all()
    for column in analysis.schema.names:
        values = frame[column]
        limits = bounds(column)
        present = values.dropna()
        if limits is not None and len(present):
            low, high = limits
            assert ((present >= low - 1e-9) & (present <= high + 1e-9)).all(), (column, present.describe())
        if column.startswith("frac"):
            assert (present > 0).all()
    assert frame[list(analysis.schema.names)].notna().any().any(), "every value is null: the test is vacuous"


def test_nan_is_never_a_value(trained_store, tmp_path: Path):
    """A missing value is an Arrow null (docs/analyses.md#conventions: e.g. no flip, T = 1), never a NaN that
    averages would eat."""
    run_all(trained_store, tmp_path, shard_size=INSTANCES)
    for analysis_id in PER_INSTANCE + PER_MODEL:
        table = pq.read_table(tmp_path / "analyses" / analysis_id)
        for field in IMPLEMENTATIONS[analysis_id].schema:
            if pa.types.is_floating(field.type):
                assert pc.sum(pc.is_nan(table[field.name])).as_py() in (0, None), (analysis_id, field.name)


def test_same_rows_for_the_same_seed_and_any_sharding(trained_store, one_shard, tmp_path: Path):
    again = run_all(trained_store, tmp_path / "again", shard_size=INSTANCES)
    three = run_all(trained_store, tmp_path / "three", shard_size=12)  # shards of 2 whole batches: 12, 12, 6
    assert len(list((tmp_path / "three" / "analyses" / "permutation").rglob("*.parquet"))) == 3
    for analysis_id, frame in one_shard.items():
        columns = [c for c in frame.columns if c != "cell"]
        pd.testing.assert_frame_equal(frame[columns], again[analysis_id][columns], check_exact=True)
        pd.testing.assert_frame_equal(frame[columns], three[analysis_id][columns], check_exact=True)


# ---- summaries: only what was measured ---------------------------------------------------------------------

ASKED = ["attention", "random"]  # no other ranking's name is a word of these two's summary keys
# Per analysis with variants: a subset of them, and the variants not asked for, which no summary key may name.
SUBSETS: dict[str, tuple[dict, list[str]]] = {
    "erasure_multi": ({"rankings": ASKED, "exact_max_len": 0}, [*RANKINGS[2:], "exact"]),
    "eraser": ({"rankings": ASKED}, list(RANKINGS[2:])),
    "rationale_recovery": ({"rankings": ASKED}, list(RANKINGS[2:])),
    "ranking_agreement": ({"rankings": ASKED}, list(RANKINGS[2:])),
    "attention_ablation": ({"modes": ["uniform"]}, ["random", "permute"]),
    "adversarial_model": ({"epochs": 2, "variants": ["frozen"]}, ["unfrozen"]),
    "diagnostic_mlp": ({"epochs": 2, "hidden": 8, "variants": ["base"]}, ["uniform", "learned"]),
}
assert set(SUBSETS) <= set(PER_INSTANCE) | set(PER_MODEL)


def names(key: str, variant: str) -> bool:
    """Whether a summary key names `variant` as one of its `_`-separated words."""
    return re.search(rf"(^|_){re.escape(variant)}(_|$)", key) is not None


@pytest.fixture(scope="module")
def asked_for_a_subset(trained_store, tmp_path_factory) -> dict[str, pd.DataFrame]:
    params = FAST | {a: FAST.get(a, {}) | subset for a, (subset, _) in SUBSETS.items()}
    return run_all(trained_store, tmp_path_factory.mktemp("subset"), shard_size=INSTANCES, params=params)


@pytest.mark.parametrize("analysis_id", PER_INSTANCE + PER_MODEL)
def test_a_summary_names_only_what_was_asked_for(asked_for_a_subset, analysis_id: str):
    rows = asked_for_a_subset[analysis_id]
    summary = IMPLEMENTATIONS[analysis_id].summarize(rows)
    assert summary, "nothing summarised: the test is vacuous"
    assert all(isinstance(v, float) and not math.isnan(v) for v in summary.values()), summary
    subset, unasked = SUBSETS.get(analysis_id, ({}, []))
    assert not [(k, v) for k in summary for v in unasked if names(k, v)], summary
    for variant in subset.get("rankings", subset.get("modes", subset.get("variants", []))):
        assert any(names(k, variant) for k in summary), (variant, summary)  # what was asked for is there
    if analysis_id == "importance_correlation":  # per predicted class: only the classes predicted
        classes = {int(m.group(1)) for k in summary if (m := re.search(r"_class(\d+)$", k))}
        assert classes == set(rows["pred"].astype(int))


# What a classifier cell of the toy grid cannot measure, besides the rankings not asked for or not applicable
UNMEASURABLE = {"attention_ablation": ["bleu"]}  # a classifier has accuracies, a translation model BLEU


@pytest.mark.parametrize("analysis_id", PER_INSTANCE + PER_MODEL)
def test_a_summary_has_exactly_the_declared_columns(trained_store, one_shard, analysis_id: str):
    """On the tiny rows, every summary name is declared, and every declared name is there but for what this
    cell cannot measure: a ranking not asked for or not applicable to its encoder, another task's metric."""
    info, rows = ANALYSES[analysis_id], one_shard[analysis_id]
    summary = IMPLEMENTATIONS[analysis_id].summarize(rows)
    assert summary and [k for k in summary if not info.summarised(k)] == []
    config = CellConfig(dataset="synthetic", encoder=str(rows["encoder"].iloc[0]))
    asked = getattr(info.params(**FAST.get(analysis_id, {})), "rankings", RANKINGS)
    unmeasurable = [r for r in RANKINGS if r not in asked or not ranking_applies(r, config)]
    unmeasurable += UNMEASURABLE.get(analysis_id, [])
    absent = set(info.summary_columns) - {info.summary_column(k) for k in summary}
    assert sorted(d for d in absent if not any(names(d, word) for word in unmeasurable)) == [], summary
    assert len(absent) < len(info.summary_columns)


@pytest.mark.parametrize("analysis_id", PER_INSTANCE + PER_MODEL)
def test_a_summary_of_a_subset_is_declared(asked_for_a_subset, analysis_id: str):
    summary = IMPLEMENTATIONS[analysis_id].summarize(asked_for_a_subset[analysis_id])
    assert summary and all(ANALYSES[analysis_id].summarised(k) for k in summary), summary


@pytest.mark.parametrize("analysis_id", sorted(IMPLEMENTATIONS))
def test_no_rows_summarise_to_no_numbers(analysis_id: str):
    """An empty cell (every row of its parts removed, a shard of nothing) measured nothing: not zeros."""
    analysis = IMPLEMENTATIONS[analysis_id]
    common = COMMON_SCHEMA if analysis.scope in ("instance", "grid") else MODEL_COMMON_SCHEMA
    empty = pa.unify_schemas([common, analysis.schema]).empty_table().to_pandas()
    assert analysis.summarize(empty) == {}
