"""`token_scores`: each row holds the instance's items as written (tokens, a pair task's premise, a HAN's
sentences) and, over them in order, the model's attention, the importances `importance_correlation` ranks,
and one permutation of the attention with the class decoded from it; `run` == `reference` (the importances'
per-instance oracles) on flat, pair and HAN models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once, instance_generator
from gridlab.analyses.importance import gradient_importance, leave_one_out
from gridlab.analyses.ranking import descending_order
from gridlab.analyses.token_scores import compute as token_scores
from gridlab.catalog.analyses import NoParams
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import iterate_batches, split_sentences
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model

from .conftest import perturbed_model

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
DATASET = {"flat": "synthetic", "pair": "sick", "han": "20news"}
COUNT = 6


@pytest.fixture(scope="module")
def datasets(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("token_scores")
    synthetic = DataConfig(synthetic=SyntheticConfig(n_train=60, n_dev=5, n_test=40, min_length=4, max_length=12))
    return {
        "synthetic": load_dataset("synthetic", tmp, tmp / "cache", synthetic),
        "sick": load_dataset("sick", data_dir, tmp / "cache", DataConfig()),
        "20news": load_dataset("20news", data_dir, tmp / "cache", DataConfig(max_length=60)),
    }


def scored(datasets, architecture: str, how=token_scores.run, count: int = COUNT):
    data = datasets[DATASET[architecture]]
    config = CellConfig(dataset=DATASET[architecture], encoder="lstm", architecture=architecture, model=TINY)
    torch.manual_seed(0)
    model = perturbed_model(data, "lstm", "additive") if architecture == "flat" else build_model(config, data).eval()
    test = data.splits["test"]
    batch = next(iterate_batches(test.slice(3, count), count, sentences=architecture == "han"))
    with torch.no_grad():  # peaked attention and decisions near the boundary: a permutation can move them
        for p in model.attention.parameters():
            p.mul_(8.0)
        model.classifier.weight.mul_(20.0)
        model.classifier.bias.sub_(model(batch).mean(0))
    shared = forward_once(model, batch)
    context = AnalysisContext(CELL, model, torch.device("cpu"), NoParams(), None, lambda: None, test, data.label_names)
    return how(context, shared), shared, model, data


@pytest.mark.parametrize("architecture", ["flat", "pair", "han"])
def test_run_matches_reference(datasets, architecture: str):
    columns, *_ = scored(datasets, architecture)
    expected, *_ = scored(datasets, architecture, how=token_scores.reference)
    assert set(columns) == set(expected) == set(token_scores.INFO.rows.names)
    for name in token_scores.INFO.rows.names:
        for ours, oracle in zip(columns[name], expected[name]):
            if isinstance(ours, list) and ours and isinstance(ours[0], float):
                np.testing.assert_allclose(ours, oracle, rtol=1e-4, atol=1e-6, err_msg=name)  # float32
            else:
                assert ours == oracle, name


def test_rows_are_the_instances_items_and_scores(datasets):
    columns, shared, model, data = scored(datasets, "flat")
    tokens = data.splits["test"]["tokens"].to_pylist()
    gradient = gradient_importance(model, shared.batch, shared)
    loo = leave_one_out(model, shared.batch, shared)
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        keep = shared.encoded.mask[b]
        assert columns["items"][b] == tokens[instance_id] and len(columns["alpha"][b]) == len(tokens[instance_id])
        np.testing.assert_array_equal(columns["alpha"][b], shared.alpha[b][keep].double().numpy())
        np.testing.assert_array_equal(columns["gradient"][b], gradient[b][keep].double().numpy())
        np.testing.assert_array_equal(columns["leave_one_out"][b], loo[b][keep].double().numpy())
        pred, label = int(shared.pred[b]), int(shared.batch.labels[b])
        assert columns["confidence"][b] == pytest.approx(float(shared.probs[b, pred]))
        assert (columns["pred_name"][b], columns["label_name"][b]) == (data.label_names[pred], data.label_names[label])
        assert columns["query"][b] is None
        for weights, order in (("alpha", "alpha_order"), ("permuted_alpha", "permuted_order")):
            alone = torch.tensor(columns[weights][b])[None]  # the instance by itself: every slot an item
            expected = descending_order(alone, torch.ones(alone.shape, dtype=torch.bool))[0].tolist()
            assert columns[order][b] == expected


def test_the_permuted_alpha_is_the_annotation_streams_and_its_class_is_decoded(datasets):
    columns, shared, model, _ = scored(datasets, "flat", count=32)
    moved = 0
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        alpha = np.asarray(columns["alpha"][b])
        order = torch.randperm(len(alpha), generator=instance_generator(CELL, "annotate", instance_id)).numpy()
        np.testing.assert_array_equal(columns["permuted_alpha"][b], alpha[order])  # item j gets order[j]'s weight
        full = torch.zeros_like(shared.alpha[b : b + 1])
        full[0, shared.encoded.mask[b]] = torch.as_tensor(alpha[order], dtype=full.dtype)
        with torch.no_grad():
            pred = int(model.decode(shared.encoded.h[b : b + 1], full, None).argmax(-1))
        assert columns["permuted_pred"][b] == pred
        moved += pred != int(shared.pred[b])
    assert moved > 0  # the permuted class is the model's own under the permuted weights, not a copy


def test_pair_rows_carry_the_query(datasets):
    columns, shared, _, data = scored(datasets, "pair")
    test = data.splits["test"]
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        assert columns["query"][b] == " ".join(test["query_tokens"][instance_id].as_py())
        assert columns["items"][b] == test["tokens"][instance_id].as_py()  # the premise: attention is over it


def test_han_items_are_the_batched_sentences(datasets):
    columns, shared, _, data = scored(datasets, "han")
    test, sentences = data.splits["test"], shared.batch.sentences
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        items = columns["items"][b]
        assert " ".join(items) == " ".join(test["tokens"][instance_id].as_py())
        words = [int(sentences.mask[b, k].sum()) for k in range(sentences.ids.shape[1]) if sentences.doc_mask[b, k]]
        assert [len(item.split(" ")) for item in items] == words  # one item per sentence the model attends over
        assert len(columns["alpha"][b]) == len(items) == int(shared.lengths[b])


def test_attention_items_of_a_han_document():
    tokens, starts = ["a", "b", "c", "d", "e"], [0, 2, 2, 4]  # an empty sentence (2, 2) is no item
    assert token_scores.attention_items(tokens, starts) == ["a b", "c d", "e"]
    assert int(split_sentences([[5, 6, 7, 8, 9]], [starts]).doc_mask.sum()) == 3
    assert token_scores.attention_items(tokens, None) == tokens
