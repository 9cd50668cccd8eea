"""The shard runner runs every per-instance analysis on each architecture it applies to: pair models (a
premise and a query) and hierarchical ones (documents as sentences), not only flat ones."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.catalog.analyses import ANALYSES
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import sample_rows
from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.execution.plan import ShardJob
from gridlab.execution.runner import ShardRunner
from gridlab.models.factory import build_model
from gridlab.results.shards import Shard

FAST = {"permutation": {"n": 8}, "erasure_multi": {"exact_max_len": 6}, "adversarial": {"k": 2, "steps": 10}}
INSTANCES = 8


def publish(publish_model, root: Path, cache: Path, config: CellConfig) -> str:
    config = config.model_copy(update={"data": DATASETS[config.dataset].resolve(config.data)})
    data = load_dataset(config.dataset, root, cache, config.data)
    return publish_model(root / "g" / "models", config, data, build_model(config, data).eval())


@pytest.mark.parametrize("architecture,dataset", [("pair", "sick"), ("han", "20news")])
def test_every_applicable_per_instance_analysis_runs(
    architecture: str, dataset: str, data_dir: Path, tmp_path: Path, publish_model
):
    root = tmp_path / "store"
    (root / "g").mkdir(parents=True)
    for item in data_dir.iterdir():  # the store root doubles as the data folder: link the real datasets in
        (root / item.name).symlink_to(item)
    config = CellConfig(
        dataset=dataset,
        encoder="gru",
        architecture=architecture,
        model=ModelConfig(embedding_dim=8, hidden_size=6, attention_size=6),
        data=DataConfig(max_length=80),
    )
    identifier = publish(publish_model, root, tmp_path / "cache", config)
    applicable = [
        a for a, analysis in IMPLEMENTATIONS.items() if analysis.scope == "instance" and ANALYSES[a].applies(config)
    ]
    assert {"importance_correlation", "permutation", "erasure_multi"} <= set(applicable)
    runner = ShardRunner(root / "g", root, tmp_path / "cache", torch.device("cpu"))
    outcome = runner.run(
        ShardJob("g", identifier, Shard(0, 0, INSTANCES, INSTANCES), {a: FAST.get(a, {}) for a in applicable}, 4)
    )
    assert len(outcome.paths) == len(applicable)
    for analysis_id in applicable:
        rows = pd.read_parquet(root / "g" / "analyses" / analysis_id)
        expected = sample_rows(runner.load(identifier).data.splits["test"].num_rows, INSTANCES).tolist()
        assert list(rows.sort_values("instance_id")["instance_id"]) == expected, analysis_id
        assert (rows["architecture"] == architecture).all()


def test_a_per_model_analysis_reports_its_own_time(data_dir: Path, tmp_path: Path, publish_model):
    """`gridlab plan` prices per-model analyses (adversaries, the MLP) by these times: one per analysis."""
    root = tmp_path / "store"
    (root / "g").mkdir(parents=True)
    for item in data_dir.iterdir():
        (root / item.name).symlink_to(item)
    config = CellConfig(dataset="sst", encoder="average", model=ModelConfig(embedding_dim=8, attention_size=6))
    identifier = publish(publish_model, root, tmp_path / "cache", config)
    runner = ShardRunner(root / "g", root, tmp_path / "cache", torch.device("cpu"))
    analyses = {"attention_ablation": {"modes": ["uniform"]}, "permutation": {"n": 4}}
    outcome = runner.run(ShardJob("g", identifier, Shard(0, 0, INSTANCES, INSTANCES), analyses, 4))
    assert set(outcome.model_seconds) == {"attention_ablation"} and outcome.model_seconds["attention_ablation"] > 0
    assert outcome.seconds >= outcome.model_seconds["attention_ablation"]
