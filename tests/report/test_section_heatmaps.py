"""The heatmaps section on a tiny published model: the sampled instances follow the rule (largest adversarial
JSD), every token is shown HTML-escaped, the attention shown is the model's on that instance (its `<sos>`/
`<eos>` kept out), and the adversarial attention reproduces the analysis's `jsd_eps_max` row."""

from __future__ import annotations

import html
import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from gridlab.analyses.adversarial import AdversarialParams
from gridlab.analyses.common import forward_once
from gridlab.analyses.importance import leave_one_out
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.execution.plan import ShardJob
from gridlab.execution.runner import ShardRunner
from gridlab.models.factory import build_model
from gridlab.report.artifacts import Fragment
from gridlab.report.inputs import ReportInputs
from gridlab.report.sections import heatmaps
from gridlab.results.shards import Shard
from gridlab.store.layout import GridWorkspace, Results

N = 24
ADVERSARIAL = {"k": 3, "steps": 100}
ODD = '<b>"&'  # a token that must be escaped


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, publish_model) -> SimpleNamespace:
    """A grid folder with one 'trained' tiny LSTM (random weights, sharpened attention) and its adversarial rows."""
    results = tmp_path_factory.mktemp("results")  # the grid file's results_dir; its cache/ holds the dataset
    grid_results, cache, data_dir = results / "g", results / "cache", tmp_path_factory.mktemp("data")
    data_config = DataConfig(synthetic=SyntheticConfig(n_train=60, n_dev=10, n_test=N, min_length=4, max_length=12))
    config = CellConfig(
        dataset="synthetic",
        encoder="lstm",
        model=ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8),
        data=data_config,
    )
    config = config.model_copy(update={"data": DATASETS["synthetic"].resolve(config.data)})
    data = load_dataset("synthetic", data_dir, cache, config.data)
    torch.manual_seed(0)
    model = build_model(config, data).eval()
    with torch.no_grad():
        for p in model.attention.parameters():
            p.mul_(8.0)  # peaked attention
        model.classifier.weight.mul_(20.0)
        model.classifier.bias.sub_(model(next(iterate_batches(data.splits["test"], N))).mean(0))
    identifier = publish_model(grid_results / "models", config, data, model, test_accuracy=0.5)
    runner = ShardRunner(grid_results, data_dir, cache, torch.device("cpu"))
    runner.run(ShardJob("g", identifier, Shard(0, 0, N, N), {"adversarial": ADVERSARIAL, "token_scores": {}}, 8))
    return SimpleNamespace(
        results=results,
        grid_results=grid_results,
        data_dir=data_dir,
        config=config,
        identifier=identifier,
        model=model,
        data=data,
    )


def inputs_for(store: SimpleNamespace, analyses: dict) -> ReportInputs:
    grid = SimpleNamespace(
        file="g.yaml",
        spec=SimpleNamespace(name="g", results_dir=store.results, instances=None, shard_size=N),
        results_dir=store.grid_results,
        results=Results(store.results),
        workspace=GridWorkspace(store.grid_results),
        data_dir=store.data_dir,
        analyses=analyses,
        cells=[SimpleNamespace(id=store.identifier, config=store.config)],
        axis_paths=["dataset"],
    )
    return ReportInputs(grid)


def with_odd_tokens(inputs: ReportInputs) -> ReportInputs:
    """The rows the section reads, with the first item of every instance replaced by ODD."""
    scores = inputs.rows("token_scores")
    scores["items"] = scores["items"].map(lambda items: [ODD, *items[1:]])
    return inputs


def blocks(fragment_html: str) -> dict[int, str]:
    """instance id -> its block of HTML."""
    starts = [
        (m.start(), int(m.group(1)))
        for m in re.finditer(r'<div data-cell="[^"]+" data-instance="(\d+)"', fragment_html)
    ]
    ends = [s for s, _ in starts[1:]] + [len(fragment_html)]
    return {i: fragment_html[s:e] for (s, i), e in zip(starts, ends)}


def line_weights(block: str, line: str) -> list[float]:
    row = re.search(rf'<tr data-line="{line}">(.*?)</tr>', block).group(1)
    return [float(w) for w in re.findall(r'data-w="([^"]+)"', row)]


def line_tokens(block: str, line: str) -> list[str]:
    row = re.search(rf'<tr data-line="{line}">(.*?)</tr>', block).group(1)
    return re.findall(r"<span data-w=[^>]*>(.*?)</span>", row)


def alone(store: SimpleNamespace, instance_id: int):
    """The instance as a batch of its own, and the model's pass over it."""
    batch = next(iterate_batches(store.data.splits["test"].take(pa.array([instance_id])), 1))
    return batch, forward_once(store.model, batch)


def test_heatmaps_of_the_widest_adversarial_gaps(store):
    inputs = with_odd_tokens(inputs_for(store, {"adversarial": AdversarialParams(**ADVERSARIAL)}))
    output = heatmaps.SECTION.build(inputs)
    assert output.missing == []
    (fragment,) = output.artifacts
    assert isinstance(fragment, Fragment)
    rows = inputs.rows("adversarial").sort_values(["jsd_eps_max", "instance_id"], ascending=[False, True])
    expected = [int(i) for i in rows["instance_id"].head(heatmaps.INSTANCES)]
    found = blocks(fragment.html)
    assert list(found) == expected
    assert "<b>" not in fragment.html and html.escape(ODD, quote=True) in fragment.html
    tokens = store.data.splits["test"].column("tokens").to_pylist()
    for instance_id, block in found.items():
        shown = [html.unescape(t) for t in line_tokens(block, "attention")]
        assert shown == [ODD, *tokens[instance_id][1:]]
        for line in ("gradient", "leave_one_out", "adversarial"):
            assert len(line_weights(block, line)) == len(shown)


def test_the_weights_shown_are_the_models(store):
    inputs = inputs_for(store, {"adversarial": AdversarialParams(**ADVERSARIAL)})
    found = blocks(heatmaps.SECTION.build(inputs).artifacts[0].html)
    rows = inputs.rows("adversarial").set_index("instance_id")
    for instance_id, block in found.items():
        batch, shared = alone(store, instance_id)
        mask = shared.encoded.mask[0]
        assert not mask[0] and not mask[int(batch.lengths[0]) - 1]  # <sos>, <eos> get no attention
        n = len(store.data.splits["test"].column("tokens")[instance_id])
        assert int(mask.sum()) == n
        assert line_weights(block, "attention") == pytest.approx(shared.alpha[0][mask].tolist(), abs=1e-6)
        loo = leave_one_out(store.model, batch, shared)[0][mask]
        assert line_weights(block, "leave_one_out") == pytest.approx(loo.tolist(), abs=1e-6)
        adversarial = line_weights(block, "adversarial")
        assert sum(adversarial) == pytest.approx(1.0, abs=1e-5)
        jsd = float(re.search(r"adversarial: JSD ([0-9.]+)", block).group(1))
        assert jsd == pytest.approx(rows.loc[instance_id, "jsd_eps_max"], abs=2e-4)  # printed to 4 decimals


def test_the_adversarial_line_is_the_rows_candidate(store):
    inputs = inputs_for(store, {"adversarial": AdversarialParams(**ADVERSARIAL)})
    rows = inputs.rows("adversarial").set_index("instance_id")
    for instance_id, block in blocks(heatmaps.SECTION.build(inputs).artifacts[0].html).items():
        shown = np.asarray(line_weights(block, "adversarial"))
        np.testing.assert_array_equal(shown, rows.loc[instance_id, "alpha_eps_max"])
        attention = np.asarray(line_weights(block, "attention"))
        middle = (shown + attention) / 2
        divergence = 0.5 * sum(p * math.log(p / m) for p, m in zip(shown, middle) if p > 0) + 0.5 * sum(
            q * math.log(q / m) for q, m in zip(attention, middle) if q > 0
        )
        assert divergence == pytest.approx(rows.loc[instance_id, "jsd_eps_max"], abs=1e-5)


def test_without_an_adversarial_analysis(store):
    output = heatmaps.SECTION.build(inputs_for(store, {}))
    (fragment,) = output.artifacts
    assert 'data-line="adversarial"' not in fragment.html and 'data-line="gradient"' in fragment.html
    assert any("adversarial" in line for line in output.missing)


def test_no_trained_cell(fake_inputs):
    cells = pd.DataFrame(
        columns=[
            "cell_id",
            "dataset",
            "encoder",
            "attention",
            "projection",
            "projection_lambda",
            "architecture",
            "attention_mode",
            "seed",
        ]
    )
    output = heatmaps.SECTION.build(fake_inputs({}, cells))
    assert output.artifacts == [] and "no trained classifier cell" in output.missing[0]


def test_a_heatmap_names_the_classes_as_a_reader_would():
    """SST's files say 0 / 1; the heatmap's label and prediction read negative / positive (`class_names`)."""
    scores = pd.Series(
        {"items": ["a", "fine", "film"], "query": None, "label_name": "1", "pred_name": "0", "confidence": 0.7}
    )
    shown = heatmaps.heatmap({"dataset": "sst"}, 3, scores, None)
    assert (shown.label, shown.pred) == ("positive", "negative")
    unnamed = heatmaps.heatmap({"dataset": "synthetic"}, 3, scores, None)  # no class names: the label as read
    assert (unnamed.label, unnamed.pred) == ("1", "0")
