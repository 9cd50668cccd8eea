"""attention_ablation (Vashishth §4.1): accuracies with attention replaced at inference, per model."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest
import torch

from gridlab.analyses.attention_ablation import AttentionAblationParams
from gridlab.analyses.attention_ablation import compute as attention_ablation
from gridlab.analyses.base import AnalysisContext
from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.grid.expand import cell_id
from gridlab.models.factory import build_model
from gridlab.models.seq2seq import Seq2Seq
from gridlab.training.loop import evaluate, fit

CPU = torch.device("cpu")
SMALL = ModelConfig(embedding_dim=16, hidden_size=16, attention_size=16)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("d")
    data = load_dataset("synthetic", root, root / "c", DataConfig(synthetic=SyntheticConfig(n_test=80)))
    config = CellConfig(dataset="synthetic", encoder="average", model=SMALL, train=TrainConfig(epochs=5, lr=0.003))
    model = build_model(config, data)
    fit(model, data, config, CPU)
    return model.eval(), data


def context(model, modes=("uniform", "random", "permute"), han_levels="both") -> AnalysisContext:
    return AnalysisContext("cell", model, CPU, AttentionAblationParams(modes=list(modes), han_levels=han_levels))


def test_batched_accuracies_equal_the_one_by_one_oracle(trained):
    model, data = trained
    rows = attention_ablation.run_model(context(model), data)
    assert rows["mode"] == ["learned", "uniform", "random", "permute"]
    for mode, value, delta in zip(rows["mode"], rows["value"], rows["delta"]):
        assert value == pytest.approx(attention_ablation.reference_accuracy(context(model), data, mode))
        assert delta == pytest.approx(value - rows["value"][0])
    assert rows["value"][0] == pytest.approx(evaluate(model, data.splits["test"], CPU)["accuracy"])
    # on the planted task the decision rests on a few attended words: spreading attention hurts
    assert rows["value"][0] > 0.9 and min(rows["delta"][1:]) < -0.05


def test_a_model_that_ignores_attention_loses_nothing(trained):
    model, data = trained
    blind = build_model(CellConfig(dataset="synthetic", encoder="average", model=SMALL), data).eval()
    with torch.no_grad():
        blind.encoder.projection.weight.zero_()  # every h_t is relu(b): the context is the same for any alpha
    rows = attention_ablation.run_model(context(blind), data)
    assert rows["delta"] == [0.0, 0.0, 0.0, 0.0]


def test_same_rows_for_the_same_cell(trained):
    model, data = trained
    assert attention_ablation.run_model(context(model), data) == attention_ablation.run_model(context(model), data)


@pytest.mark.slow
def test_a_translation_cell_trained_with_uniform_attention_keeps_it_in_its_learned_row(data_dir: Path, tmp_path: Path):
    """Vashishth's Train+Infer number is the `learned` row of a cell trained with uniform attention: the model as
    it was trained, never its untrained learned scores; its own mode is given back. The references here are the
    model's own uniform-attention translations, so the as-trained row scores 100 and any other weights less."""
    data = load_dataset("multi30k", data_dir, tmp_path, DataConfig())
    config = CellConfig(
        dataset="multi30k", encoder="gru", architecture="seq2seq", attention_mode="uniform", model=SMALL
    )
    model = build_model(config, data).eval()
    with torch.no_grad():
        model.attention.context.weight.mul_(50.0)  # learned scores far from uniform, had they been used
        model.output.weight.mul_(10.0)  # confident outputs: the weights decide what is emitted
    test = data.splits["test"].slice(0, 24)
    own = [data.target_vocab.decode(ids) for ids in model.greedy(next(iterate_batches(test, 24)))]
    test = test.set_column(test.schema.get_field_index("target_tokens"), "target_tokens", pa.array(own))
    data = dataclasses.replace(data, splits={**data.splits, "test": test})
    rows = attention_ablation.run_model(context(model, modes=("uniform", "permute")), data)
    assert rows["value"] == pytest.approx([100.0] * 3)  # permuting equal weights changes nothing either
    assert model.attention.mode == "uniform" and model.alpha_override is None
    model.attention.mode = "learned"
    assert attention_ablation.run_model(context(model, modes=("uniform",)), data)["value"][0] < 99.0


@pytest.mark.slow
def test_translation_rows_are_bleu(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = load_dataset("multi30k", data_dir, tmp_path, DataConfig())
    data = dataclasses.replace(data, splits={**data.splits, "test": data.splits["test"].slice(0, 24)})
    config = CellConfig(dataset="multi30k", encoder="gru", architecture="seq2seq", model=SMALL)
    model = build_model(config, data).eval()
    rows = attention_ablation.run_model(context(model), data)
    assert rows["metric"] == ["bleu"] * 4 and all(0.0 <= v <= 100.0 for v in rows["value"])
    assert model.attention.mode == "learned" and model.alpha_override is None  # restored
    searched = []
    original = Seq2Seq.beam

    def recording(self, batch, beam_size, max_len=50):
        searched.append((beam_size, self.attention.mode, self.alpha_override is not None))
        return original(self, batch, beam_size, max_len)

    monkeypatch.setattr(Seq2Seq, "beam", recording)
    beam = AnalysisContext("cell", model, CPU, AttentionAblationParams(beam_size=3))
    rows = attention_ablation.run_model(beam, data)
    assert all(0.0 <= v <= 100.0 for v in rows["value"])
    assert sorted(set(searched)) == [
        (3, "learned", False),
        (3, "learned", True),
        (3, "random", False),
        (3, "uniform", False),
    ]


@pytest.fixture(scope="module")
def han(tmp_path_factory: pytest.TempPathFactory):
    """A HAN trained on the planted task, every document one sentence (as SST's): only the word level can
    matter, so replacing the sentence level alone would change nothing."""
    root = tmp_path_factory.mktemp("han")
    data = load_dataset("synthetic", root, root / "c", DataConfig(synthetic=SyntheticConfig(n_test=80)))
    config = CellConfig(
        dataset="synthetic", encoder="average", architecture="han", model=SMALL, train=TrainConfig(epochs=5, lr=0.003)
    )
    model = build_model(config, data)
    fit(model, data, config, CPU)
    return model.eval(), data


def test_a_han_model_has_its_word_attention_replaced_too(han):
    model, data = han
    rows = attention_ablation.run_model(context(model), data)
    for mode, value in zip(rows["mode"], rows["value"]):  # batched == one document at a time, same draws
        assert value == pytest.approx(attention_ablation.reference_accuracy(context(model), data, mode))
    assert rows["value"][0] > 0.9 and min(rows["delta"][1:]) < -0.05  # one sentence: the words carry it all


def test_a_han_with_only_its_sentence_weights_replaced_keeps_one_sentence_documents(han):
    """One sentence per document: its sentence weight is 1 whatever replaces it, so only the word level could
    move the accuracy, and `han_levels: sentence` keeps the word weights."""
    model, data = han
    rows = attention_ablation.run_model(context(model, han_levels="sentence"), data)
    assert rows["delta"] == [0.0, 0.0, 0.0, 0.0]


def test_uniform_word_weights_average_each_sentences_words(han):
    model, data = han
    batch = next(iterate_batches(data.splits["test"], 8, sentences=True))
    with torch.no_grad():
        words = model.encode_words(batch)
        weights = attention_ablation._word_weights(context(model), batch, "uniform", words)
        encoded = model.encode_sentences(batch, words, weights)
    mask = batch.sentences.mask  # (B, S, W)
    expected = mask / mask.sum(-1, keepdim=True).clamp(min=1)
    assert torch.allclose(encoded.word_alpha, expected.to(encoded.word_alpha.dtype))


def test_uniform_rows_equal_the_model_with_uniform_attention_built_in(han):
    """The word level run once and weighed per mode gives what a model whose two attention layers are uniform
    computes in its own forward pass."""
    model, data = han
    rows = attention_ablation.run_model(context(model, ["uniform"]), data)
    uniform = copy.deepcopy(model)
    uniform.word_attention.mode = uniform.attention.mode = "uniform"
    assert rows["value"][1] == pytest.approx(evaluate(uniform, data.splits["test"], CPU)["accuracy"])
    assert rows["value"][1] != rows["value"][0]


def test_word_attention_mode_as_cell_trains_both_levels_alike(han):
    _, data = han
    uniform = CellConfig(dataset="synthetic", architecture="han", attention_mode="uniform", model=SMALL)
    both = uniform.model_copy(update={"model": SMALL.model_copy(update={"word_attention_mode": "as_cell"})})
    assert build_model(uniform, data).word_attention.mode == "learned"  # the default: only the sentence level
    assert build_model(both, data).word_attention.mode == "uniform"
    learned = CellConfig(dataset="synthetic", architecture="han", model=SMALL)
    explicit = learned.model_copy(update={"model": SMALL.model_copy(update={"word_attention_mode": "learned"})})
    assert cell_id(explicit) == cell_id(learned) != cell_id(both)
