"""`importance_correlation` (J&W §4.1, Algorithm 1) and its building blocks in `gridlab.analyses.importance`:
a model that provably ignores one token, the gradient against finite differences, leave-one-out against an
instance rebuilt with `collate`, `run` == `reference` on small real models (flat, pair, HAN), saturated
predictions, bounds, batching / padding / chunking invariance and determinism."""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau
from torch import nn

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once, shared_lstm, tvd
from gridlab.analyses.importance import (
    gradient_importance,
    leave_one_out,
    leave_one_out_probs,
    recurrent,
    reference_gradient_importance,
    reference_leave_one_out,
    tvd_beside,
)
from gridlab.analyses.importance_correlation import compute as importance_correlation
from gridlab.analyses.importance_correlation.compute import kendall
from gridlab.catalog.analyses import NoParams
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import Batch, collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.data.vocab import PAD_ID
from gridlab.models.attention import Attention, AttentionSpec
from gridlab.models.classifier import AttentionClassifier, Encoded
from gridlab.models.factory import build_model

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
ENCODERS = ["lstm", "gru", "cnn", "average", "noenc"]
DATASET = {"flat": "synthetic", "pair": "sick", "han": "20news"}
COUNT = 6  # instances per batch in the real-model tests
SHARPEN = 10.0


@pytest.fixture(scope="module")
def datasets(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("importance")
    synthetic = DataConfig(
        synthetic=SyntheticConfig(n_train=60, n_dev=5, n_test=16, planted=1, distractors=0, min_length=1, max_length=12)
    )
    return {
        "synthetic": load_dataset("synthetic", tmp, tmp / "cache", synthetic),
        "sick": load_dataset("sick", data_dir, tmp / "cache", DataConfig()),
        "20news": load_dataset("20news", data_dir, tmp / "cache", DataConfig(max_length=60)),
    }


def model_of(datasets, architecture: str, encoder: str, alignment: str = "additive", sizes: ModelConfig = TINY):
    dataset = DATASET[architecture]
    config = CellConfig(dataset=dataset, encoder=encoder, attention=alignment, architecture=architecture, model=sizes)
    model = build_model(config, datasets[dataset]).eval()
    with torch.no_grad():  # untrained, alpha is near uniform and the output near constant: sharpen both
        for name, parameter in model.attention.named_parameters():
            if name in ("context.weight", "learned_query"):  # the additive v / the dot-product query
                parameter.mul_(SHARPEN)
        model.classifier.weight.mul_(SHARPEN)
    return model, datasets[dataset]


def rows_of(data, start: int = 0, count: int = COUNT) -> dict:
    return data.splits["test"].slice(start, count).to_pydict()


def batch_of(rows: dict, architecture: str) -> Batch:
    return collate(rows, sentences=architecture == "han")


def context(model) -> AnalysisContext:
    return AnalysisContext(CELL, model, torch.device("cpu"), NoParams())


def as_float(values: np.ndarray) -> np.ndarray:
    """An object column of floats and None -> float64 with NaN for None (for comparisons only)."""
    return np.array([math.nan if v is None else v for v in values], dtype=np.float64)


def assert_columns_close(a: dict, b: dict) -> None:
    """Equal taus and p-values: they are functions of the tie-ranked vectors (`gridlab.analyses.ranking`), which
    agree wherever the importances agree up to float noise, repeated tokens under order-free encoders included
    (1e-12: the only slack is scipy's arithmetic on equal ranks)."""
    assert set(a) == set(b) == set(importance_correlation.INFO.rows.names)
    for name, values in a.items():
        assert [v is None for v in values] == [v is None for v in b[name]], name
        np.testing.assert_allclose(as_float(values), as_float(b[name]), rtol=0, atol=1e-12, err_msg=name)


def assert_importance_close(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5) -> None:
    """Elementwise within rtol of the largest value (the values of an untrained model are small)."""
    assert actual.shape == expected.shape
    scale = float(expected.abs().max()) or 1.0
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * scale)


# ----- a model that ignores one token --------------------------------------------------------------------

IGNORED = 7


class IgnoresToken(AttentionClassifier):
    """noenc with token IGNORED mapped to the zero vector and given attention weight exactly 0 (masked
    in the projection): its embedding never reaches the output, and deleting it leaves every other h, the
    other weights (normalised over the same positions) and so the output unchanged."""

    def __init__(self, vocab: int, dim: int = 6, classes: int = 2):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = nn.Embedding(vocab, dim, padding_idx=PAD_ID)
        self.attention = Attention(AttentionSpec("additive", "softmax"), dim, None, 4)
        self.classifier = nn.Linear(dim, classes)

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        x = self.embed(batch) if embedded is None else embedded
        return Encoded(x * (batch.ids != IGNORED).unsqueeze(-1), batch.mask)

    def attend(self, h, mask, query=None):
        return self.attention(h, mask & (h != 0).any(-1), query)

    def output(self, context, query):
        return self.classifier(context)


def test_an_ignored_token_has_zero_gradient_and_leave_one_out_importance():
    docs = [[4, IGNORED, 5, 6], [IGNORED, 8, 9], [5, 6, IGNORED, IGNORED, 10, 4], [IGNORED, 4]]
    model = IgnoresToken(vocab=12).eval()
    batch = collate({"ids": docs, "label": [0] * len(docs), "instance_id": list(range(len(docs)))})
    shared = forward_once(model, batch)
    g = gradient_importance(model, batch, shared)
    d = leave_one_out(model, batch, shared)
    ignored = batch.ids == IGNORED
    assert (shared.alpha[ignored] == 0).all()
    assert (g[ignored] == 0).all()  # h = 0 * e: the gradient is exactly 0
    assert d[ignored].abs().max() < 1e-7  # same h and weights elsewhere; only float reordering remains
    others = batch.mask & ~ignored
    assert (g[others] > 1e-6).all() and (d[others] > 1e-6).all()  # the other tokens do matter
    assert (g[~batch.mask] == 0).all() and (d[~batch.mask] == 0).all()
    # instance 3 is "IGNORED 4": deleting 4 leaves nothing to attend to, so the zero context
    empty = torch.softmax(model.classifier.bias.detach(), -1)
    assert d[3, 2] == pytest.approx(float(tvd(empty, shared.probs[3])), abs=1e-6)


# ----- hand-derived identities on a real model -----------------------------------------------------------


def test_gradient_is_the_derivative_of_scaling_the_embedding(datasets):
    # g_t = |d/de y(e_t (1 + eps))| at eps = 0, with alpha held at the shared pass's value: the one-hot
    # gradient of J&W. Central differences in float64.
    model, data = model_of(datasets, "flat", "lstm")
    model = model.double()
    batch = batch_of(rows_of(data, count=2), "flat")
    shared = forward_once(model, batch)
    g = gradient_importance(model, batch, shared)
    eps = 1e-6
    embedded = model.embed(batch).detach()
    for b, t in shared.encoded.mask.nonzero().tolist():
        ys = []
        for sign in (1, -1):
            scaled = embedded.clone()
            scaled[b, t] *= 1 + sign * eps
            with torch.no_grad():
                encoded = model.encode(batch, embedded=scaled)
                probs = torch.softmax(model.decode(encoded.h, shared.alpha, encoded.query), -1)
            ys.append(float(probs[b, shared.pred[b]]))
        assert float(g[b, t]) == pytest.approx(abs(ys[0] - ys[1]) / (2 * eps), rel=1e-5, abs=1e-12)


def test_a_changed_model_gets_its_own_projection_table(datasets):
    # The BiLSTM path reads W_ih e from a per-model table: weights changed in place (an optimiser step)
    # must give the gradient of the new weights, as a fresh copy of the changed model computes it.
    model, data = model_of(datasets, "flat", "lstm")
    batch = batch_of(rows_of(data, count=4), "flat")
    before = gradient_importance(model, batch, forward_once(model, batch))
    for weight in (model.embedding.weight, model.encoder.rnn.weight_ih_l0_reverse):
        with torch.no_grad():
            weight.mul_(1.5)
        shared = forward_once(model, batch)
        changed = gradient_importance(model, batch, shared)
        fresh = copy.deepcopy(model)
        assert not torch.allclose(changed, before)
        torch.testing.assert_close(changed, gradient_importance(fresh, batch, forward_once(fresh, batch)))
        before = changed


@pytest.mark.parametrize("architecture", ["flat", "pair"])
def test_the_written_out_bilstm_pass_is_nn_lstms(datasets, architecture):
    # A CPU's shared pass is the written-out scan, an accelerator's nn.LSTM's fused kernel with the gates
    # rebuilt from its states: both must be the same recurrence, and the analyses must not tell them apart.
    model, data = model_of(datasets, architecture, "lstm")
    batch = batch_of(rows_of(data), architecture)
    scanned, fused = forward_once(model, batch, scan=True), forward_once(model, batch, scan=False)
    assert scanned.lstm is not None and fused.lstm is None
    torch.testing.assert_close(scanned.encoded.h, fused.encoded.h, rtol=0, atol=1e-6)
    torch.testing.assert_close(scanned.probs, fused.probs, rtol=0, atol=1e-6)
    rebuilt = shared_lstm(model, fused)
    inside = scanned.lstm.inside.t()[:, None, :, None]  # (Tw, 1, B, 1): steps past a row are never read
    for name in ("gates", "tanh_cells", "states", "cells"):
        ours, theirs = getattr(scanned.lstm, name), getattr(rebuilt, name)
        if name in ("states", "cells"):  # zero before the first step
            ours, theirs = ours[1:], theirs[1:]
        torch.testing.assert_close(ours * inside, theirs * inside, rtol=0, atol=1e-6)
    for analysis in (gradient_importance, leave_one_out):
        torch.testing.assert_close(analysis(model, batch, scanned), analysis(model, batch, fused), rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("encoder", "variant"),
    [("lstm", "jain_wallace"), ("cnn", "jain_wallace"), ("cnn", "serrano_smith"), ("average", "jain_wallace")],
)
def test_leave_one_out_equals_the_instance_rebuilt_without_the_token(datasets, encoder, variant):
    # cnn / average take the local path (h spliced around the gap), lstm re-encodes every shortened row
    model, data = model_of(datasets, "flat", encoder, sizes=TINY.model_copy(update={"cnn_variant": variant}))
    rows = rows_of(data)
    shared = forward_once(model, batch_of(rows, "flat"))
    probs = leave_one_out_probs(model, shared.batch, shared)
    d = leave_one_out(model, shared.batch, shared)
    b = int(np.argmax([len(ids) for ids in rows["ids"]]))
    tokens = rows["ids"][b]
    for t in range(len(tokens)):
        alone = {
            "ids": [tokens[:t] + tokens[t + 1 :]],
            "label": rows["label"][b : b + 1],
            "instance_id": rows["instance_id"][b : b + 1],
        }
        with torch.no_grad():
            expected = torch.softmax(model(collate(alone)), -1)[0]
        torch.testing.assert_close(probs[b, t + 1], expected, rtol=0, atol=1e-6)  # slot t + 1: after <sos>
        assert float(d[b, t + 1]) == pytest.approx(float(tvd(expected, shared.probs[b])), abs=1e-6)


def test_leave_one_out_of_long_rows_rejoins_the_full_pass_within_rounding(datasets, monkeypatch):
    # Rows of 150, 110 and 70 tokens: a resumed run stops once its state is back on the full pass's
    # (`recurrent._Resumed`); the outputs equal the instance rebuilt without the token, and runs did stop.
    model, data = model_of(datasets, "flat", "lstm")
    generator = torch.Generator().manual_seed(0)
    lengths = [150, 110, 70]
    rows = {
        "ids": [torch.randint(4, model.embedding.num_embeddings, (n,), generator=generator).tolist() for n in lengths],
        "label": [0, 1, 0],
        "instance_id": [0, 1, 2],
    }
    stopped_early = []
    resumed_init = recurrent._Resumed.__init__

    def spy(self, direction, rows, gaps, lengths):
        resumed_init(self, direction, rows, gaps, lengths)
        stopped_early.append(int((self.steps[self.rank] < lengths - 1 - gaps).sum()))

    monkeypatch.setattr(recurrent._Resumed, "__init__", spy)
    shared = forward_once(model, batch_of(rows, "flat"))
    probs = leave_one_out_probs(model, shared.batch, shared)
    assert sum(stopped_early) > 0.5 * sum(lengths) * 2  # most of both directions' runs stopped early
    for b, tokens in enumerate(rows["ids"]):
        for t in range(0, len(tokens), 7):
            alone = {"ids": [tokens[:t] + tokens[t + 1 :]], "label": [0], "instance_id": [b]}
            with torch.no_grad():
                expected = torch.softmax(model(collate(alone)), -1)[0]
            torch.testing.assert_close(probs[b, t + 1], expected, rtol=0, atol=1e-6)


def test_kendall_is_scipy_tau_b_and_null_where_undefined():
    a, b = np.array([0.1, 0.4, 0.4, 0.1, 0.0]), np.array([3.0, 1.0, 2.0, 2.0, 0.5])  # ties on both sides
    expected = kendalltau(a, b, variant="b")
    assert kendall(a, b) == pytest.approx((expected.statistic, expected.pvalue))
    assert kendall(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 8.0]))[0] == pytest.approx(1.0)
    assert kendall(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0]))[0] == pytest.approx(-1.0)
    for x, y in (
        ([0.5], [1.0]),
        ([], []),
        ([0.5, 0.5], [1.0, 2.0]),
        ([0.2, 0.8], [1.0, 1.0]),
        ([0.2, 0.8], [1.0, math.nan]),
    ):
        assert kendall(np.array(x), np.array(y)) == (None, None)


# ----- run == reference on small real models -------------------------------------------------------------

CASES = [
    *itertools.product(["flat", "pair"], ENCODERS, ["additive", "dot"]),
    ("han", "lstm", "additive"),
    ("han", "cnn", "dot"),
]


@pytest.mark.parametrize(("architecture", "encoder", "alignment"), CASES)
def test_run_equals_reference_and_bounds(datasets, architecture, encoder, alignment):
    model, data = model_of(datasets, architecture, encoder, alignment)
    shared = forward_once(model, batch_of(rows_of(data), architecture))
    mask = shared.encoded.mask
    g = gradient_importance(model, shared.batch, shared)
    d = leave_one_out(model, shared.batch, shared, chunk_elements=3000)  # several chunks
    assert_importance_close(g, reference_gradient_importance(model, shared))
    # TVDs of float32 outputs: absolute error at the outputs' rounding, whatever the TVD's size
    torch.testing.assert_close(d, reference_leave_one_out(model, shared), rtol=0, atol=1e-6)
    assert (g[~mask] == 0).all() and (d[~mask] == 0).all()
    assert (g >= 0).all() and ((d >= 0) & (d <= 1)).all()
    assert (g[mask] > 0).any() and (d[mask] > 0).any()

    columns = importance_correlation.run(context(model), shared)
    assert_columns_close(columns, importance_correlation.reference(context(model), shared))
    defined = (mask.sum(-1) >= 2).tolist()
    for name, values in columns.items():
        assert values.dtype == object and values.shape == (shared.batch.size,)
        # null exactly where T < 2 (these untrained models give no constant vectors), never NaN
        assert [v is not None for v in values] == defined, name
        present = as_float(values[np.array(defined)])
        assert np.isfinite(present).all(), name
        low = -1.0 if name.startswith("tau") else 0.0
        assert ((present >= low) & (present <= 1)).all(), name


def test_pair_importance_is_over_the_premise_only(datasets):
    model, data = model_of(datasets, "pair", "cnn")
    shared = forward_once(model, batch_of(rows_of(data), "pair"))
    g = gradient_importance(model, shared.batch, shared)
    d = leave_one_out(model, shared.batch, shared)
    assert g.shape == d.shape == shared.batch.ids.shape  # premise slots, not query slots


def test_single_item_instances_are_null_and_their_deletion_is_the_empty_input(datasets):
    model, _ = model_of(datasets, "flat", "gru")
    rows = {"ids": [[5], [5, 6, 7]], "label": [0, 1], "instance_id": [0, 1]}
    shared = forward_once(model, collate(rows))
    columns = importance_correlation.run(context(model), shared)
    assert all(columns[name][0] is None for name in importance_correlation.INFO.rows.names)
    assert all(isinstance(columns[name][1], float) for name in importance_correlation.INFO.rows.names)
    with torch.no_grad():
        empty = torch.softmax(model(collate({"ids": [[]], "label": [0], "instance_id": [0]})), -1)[0]
    d = leave_one_out(model, shared.batch, shared)
    assert float(d[0, 1]) == pytest.approx(float(tvd(empty, shared.probs[0])), abs=1e-6)


def test_uniform_attention_has_no_ranking_to_correlate(datasets):
    data = datasets["synthetic"]
    config = CellConfig(dataset="synthetic", encoder="lstm", attention_mode="uniform", model=TINY)
    model = build_model(config, data).eval()
    shared = forward_once(model, batch_of(rows_of(data), "flat"))
    columns = importance_correlation.run(context(model), shared)
    assert all(v is None for values in columns.values() for v in values)  # alpha is constant: tau-b undefined


# ----- saturated predictions ------------------------------------------------------------------------------


def test_importance_survives_a_prediction_that_rounds_to_one(datasets):
    # margin ~25: y = 1.0 in float32, so autograd through the softmax would drop the 1 - y term and a plain
    # TVD would see only half the change; float64 (1 - y ~ 1e-11) is still exact and is the oracle
    model, data = model_of(datasets, "flat", "lstm")
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([0.0, 25.0]))
    shared = forward_once(model, batch_of(rows_of(data), "flat"))
    assert (shared.probs.max(-1).values == 1.0).all()
    g = gradient_importance(model, shared.batch, shared)
    wide = copy.deepcopy(model).double()
    expected = reference_gradient_importance(wide, forward_once(wide, batch_of(rows_of(data), "flat")))
    assert_importance_close(g.double(), expected, rtol=1e-4)
    assert (g[shared.encoded.mask] > 0).all()
    d = leave_one_out(model, shared.batch, shared)
    assert_importance_close(d.double(), reference_leave_one_out(wide, forward_once(wide, shared.batch)), rtol=1e-3)


def test_tvd_beside_the_dominant_class_is_the_tvd():
    p = torch.softmax(torch.randn(5, 3, 4, generator=torch.Generator().manual_seed(0)), -1)  # (B, T, C)
    q = torch.softmax(torch.randn(5, 1, 4, generator=torch.Generator().manual_seed(1)), -1)  # (B, 1, C)
    torch.testing.assert_close(tvd_beside(p, q, q[:, 0].argmax(-1)), tvd(p, q))
    near_one = torch.tensor([[[1 - 1e-9, 1e-9]]]), torch.tensor([[[1 - 3e-9, 3e-9]]])  # 1 - x rounds to 1
    assert float(tvd_beside(*near_one, torch.tensor([0]))) == pytest.approx(2e-9, rel=1e-6)


# ----- invariance and determinism ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("architecture", "encoder"), [("flat", "lstm"), ("flat", "cnn"), ("pair", "average"), ("han", "gru")]
)
def test_rows_do_not_depend_on_grouping_padding_or_chunking(datasets, architecture, encoder):
    model, data = model_of(datasets, architecture, encoder)
    rows = rows_of(data)
    whole = forward_once(model, batch_of(rows, architecture))
    g = gradient_importance(model, whole.batch, whole)
    d = leave_one_out(model, whole.batch, whole)
    torch.testing.assert_close(leave_one_out(model, whole.batch, whole, chunk_elements=1), d, rtol=0, atol=1e-6)
    columns = importance_correlation.run(context(model), whole)

    regrouped = {name: [] for name in columns}
    for group in ([4, 1], [0], [5, 2, 3]):  # each group padded to its own width
        picked = {k: [v[i] for i in group] for k, v in rows.items()}
        shared = forward_once(model, batch_of(picked, architecture))
        g_part = gradient_importance(model, shared.batch, shared)
        d_part = leave_one_out(model, shared.batch, shared)
        for row, b in enumerate(group):
            width = int(shared.encoded.mask[row].nonzero().max()) + 1
            assert_importance_close(g_part[row, :width], g[b, :width])
            torch.testing.assert_close(d_part[row, :width], d[b, :width], rtol=0, atol=1e-6)
        part = importance_correlation.run(context(model), shared)
        for name, values in part.items():
            regrouped[name].extend(zip(group, values))
    assert_columns_close(
        {name: np.array([v for _, v in sorted(pairs)], dtype=object) for name, pairs in regrouped.items()},
        columns,
    )


def test_deterministic(datasets):
    model, data = model_of(datasets, "flat", "cnn")
    shared = forward_once(model, batch_of(rows_of(data), "flat"))
    first = importance_correlation.run(context(model), shared)
    second = importance_correlation.run(context(model), shared)
    for name in first:
        assert list(first[name]) == list(second[name])


@pytest.mark.parametrize(
    ("encoder", "projection"),
    [("cnn", "sparsemax"), ("average", "entmax15"), ("lstm", "sparsemax"), ("gru", "entmax15")],
)
def test_leave_one_out_under_sparse_projections(datasets, encoder, projection):
    # the local path projects the spliced scores itself and the recurrent path calls `attend` on assembled
    # rows: both must match rebuilding each instance, exact zeros included
    data = datasets["synthetic"]
    config = CellConfig(dataset="synthetic", encoder=encoder, projection=projection, model=TINY)
    model = build_model(config, data).eval()
    with torch.no_grad():
        model.attention.context.weight.mul_(SHARPEN * (5 if projection == "entmax15" else 1))
        model.classifier.weight.mul_(SHARPEN)
    shared = forward_once(model, batch_of(rows_of(data), "flat"))
    assert (shared.alpha[shared.encoded.mask] == 0).any()  # the projection is sparse here
    d = leave_one_out(model, shared.batch, shared, chunk_elements=3000)
    torch.testing.assert_close(d, reference_leave_one_out(model, shared), rtol=0, atol=1e-6)


@pytest.mark.parametrize("encoder", ["lstm", "gru", "cnn", "noenc"])
def test_deleting_either_of_equal_neighbours_ties_exactly(datasets, encoder):
    # the shortened rows are the same sequence: their outputs must tie exactly, as the reference's do, or
    # float noise would order them and move tau-b
    model, _ = model_of(datasets, "flat", encoder)
    docs = [[5, 5, 5, 6, 7, 7, 8], [9, 4, 4], [6, 6]]
    shared = forward_once(model, collate({"ids": docs, "label": [0, 1, 0], "instance_id": [0, 1, 2]}))
    d = leave_one_out(model, shared.batch, shared)
    assert d[0, 1] == d[0, 2] == d[0, 3] and d[0, 5] == d[0, 6] and d[1, 2] == d[1, 3] and d[2, 1] == d[2, 2]
    torch.testing.assert_close(d, reference_leave_one_out(model, shared), rtol=0, atol=1e-6)
    columns = importance_correlation.run(context(model), shared)
    assert_columns_close(columns, importance_correlation.reference(context(model), shared))
