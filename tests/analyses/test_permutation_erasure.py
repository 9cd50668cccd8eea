"""`permutation` (J&W §4.2.1) and `erasure_single` (S&S §4): closed-form cases on a toy decoder whose output
is linear in the context, `run` == `reference` on small real models, bounds, padding and batching
invariance, seeded draws, an output that ignores attention, and T = 1."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.erasure_single import compute as erasure_single
from gridlab.analyses.permutation import PermutationParams
from gridlab.analyses.permutation import compute as permutation
from gridlab.catalog.analyses import NoParams
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import Batch, collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.classifier import AttentionClassifier, Encoded
from gridlab.models.factory import build_model
from gridlab.models.projections import project

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
CASES = list(itertools.product(["lstm", "cnn", "average"], ["additive", "dot"], ["softmax", "sparsemax"]))
SHARPEN = 30.0
N = 40  # permutations in the real-model tests: enough to exercise every path, cheap for the reference loop


class Toy(AttentionClassifier):
    """h_t = (value, score) looked up by token id, alpha = projection of the scores, and output
    p = [1 - c_0, c_0] with c = sum_t alpha_t h_t: linear in the context, so every distance is by hand."""

    def __init__(self, tokens: dict[int, tuple[float, float]], projection: str = "softmax"):
        super().__init__()
        table = torch.zeros(max(tokens) + 1, 2)
        for token, row in tokens.items():
            table[token] = torch.tensor(row)
        self.register_buffer("table", table)
        self.projection = projection

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        return Encoded(self.table[batch.ids], batch.mask)  # (B, T, 2)

    def attend(self, h, mask, query=None):
        return project(h[..., 1], mask, self.projection)

    def output(self, context, query):
        c = context[:, 0]
        return torch.stack([torch.log1p(-c), torch.log(c)], dim=-1)  # softmax gives [1 - c, c]


# token -> (value, score); softmax of the scores log(w) gives the weights w
TOKENS = {
    4: (0.9, math.log(0.8)),
    5: (0.1, math.log(0.2)),  # alpha (0.8, 0.2) on "4 5"
    6: (0.9, 1.0),
    7: (0.1, -1.0),  # sparsemax: alpha (1, 0) on "6 7"
    8: (0.9, math.log(0.5)),
    9: (0.5, math.log(0.3)),
    10: (0.1, math.log(0.2)),
}  # (0.5, 0.3, 0.2)


def toy_pass(docs: list[list[int]], projection: str = "softmax", ids: list[int] | None = None, tokens=TOKENS):
    model = Toy(tokens, projection).eval()
    ids = list(range(len(docs))) if ids is None else ids
    batch = collate({"ids": docs, "label": [0] * len(docs), "instance_id": ids})
    return model, forward_once(model, batch)


def context(model, params=None, cell: str = CELL) -> AnalysisContext:
    return AnalysisContext(cell, model, torch.device("cpu"), params or NoParams())


def js_by_hand(p: float, q: float) -> float:
    """Natural-log JSD of the binary distributions [1 - p, p] and [1 - q, q]."""

    def kl(a, b):
        return sum(x * math.log(x / y) for x, y in zip(a, b) if x > 0)

    pp, qq = (1 - p, p), (1 - q, q)
    m = tuple((x + y) / 2 for x, y in zip(pp, qq))
    return 0.5 * kl(pp, m) + 0.5 * kl(qq, m)


def test_permutation_two_tokens_by_hand():
    # T = 2: a permutation is the identity (TVD 0) or the swap, TVD |alpha_1 - alpha_2| |h_1 - h_2|
    docs = [[4, 5], [5, 4], [4, 4], [6, 7], [4, 5, 5, 4, 5]]  # the last pads the others
    for projection, rows, swap_tvd in (
        ("softmax", [0, 1], 0.6 * 0.8),
        ("softmax", [2], 0.0),
        ("sparsemax", [3], 1.0 * 0.8),
    ):
        model, shared = toy_pass(docs, projection)
        columns = permutation.run(context(model, PermutationParams(n=100)), shared)
        alphas = permutation.permuted_alphas(shared, CELL, 100)  # (B, n, T)
        for b in rows:
            first = int(shared.encoded.mask[b].nonzero()[0])
            swapped = (alphas[b, :, first] != shared.alpha[b, first]).numpy()
            if swap_tvd:
                assert 0 < swapped.sum() < 100  # both kinds were drawn
            expected = np.where(swapped, swap_tvd, 0.0)
            assert columns["tvd_median"][b] == pytest.approx(np.median(expected), abs=1e-6)
            assert columns["tvd_mean"][b] == pytest.approx(expected.mean(), abs=1e-6)
            assert columns["tvd_max"][b] == pytest.approx(expected.max(), abs=1e-6)


def test_sparse_permutations_keep_the_multiset_and_the_padding():
    tokens = {4: (0.9, 1.0), 5: (0.5, 0.5), 6: (0.1, -5.0)}
    _, shared = toy_pass([[4, 6, 5, 6], [6, 4]], "sparsemax", tokens=tokens)
    assert torch.allclose(shared.alpha[0, 1:5], torch.tensor([0.75, 0.0, 0.25, 0.0]))  # exact zeros
    alphas = permutation.permuted_alphas(shared, CELL, 50)  # (B, n, T)
    mask = shared.encoded.mask
    for b in range(2):
        original = shared.alpha[b, mask[b]].sort().values
        assert (alphas[b][:, ~mask[b]] == 0).all()  # padding and markers keep weight 0
        for row in alphas[b][:, mask[b]]:
            assert torch.equal(row.sort().values, original)  # the same values, exactly, moved around
    assert len({tuple(row.tolist()) for row in alphas[0]}) > 1


def test_permutations_are_uniform():
    _, shared = toy_pass([[8, 9, 10]])
    alphas = permutation.permuted_alphas(shared, CELL, 600)[0, :, 1:4]  # (n, 3)
    counts = {}
    for row in alphas.tolist():
        counts[tuple(row)] = counts.get(tuple(row), 0) + 1
    assert len(counts) == 6 and all(60 <= c <= 140 for c in counts.values())  # 100 expected each


def test_erasure_by_hand():
    # alpha (0.5, 0.3, 0.2) on values (0.9, 0.5, 0.1): c = 0.62; erasing i* gives c = 0.34 (a flip),
    # erasing position 1 gives 0.47 / 0.7, position 2 gives 0.6 / 0.8 (no flip)
    after = {0: 0.34, 1: 0.47 / 0.7, 2: 0.6 / 0.8}
    weight = {0: 0.5, 1: 0.3, 2: 0.2}
    model, shared = toy_pass([[8, 9, 10], [10, 8, 9], [4, 5]])
    columns = erasure_single.run(context(model), shared)
    assert columns["top_index"][0] == 0 and columns["top_index"][1] == 1
    for b, order in ((0, [0, 1, 2]), (1, [2, 0, 1])):  # rank -> token slot in `after`
        r = columns["rand_index"][b]
        assert r != columns["top_index"][b] and 0 <= r < 3
        erased = order[r]
        assert columns["js_top"][b] == pytest.approx(js_by_hand(0.62, 0.34), abs=1e-6)
        assert columns["js_rand"][b] == pytest.approx(js_by_hand(0.62, after[erased]), abs=1e-6)
        assert columns["delta_js"][b] == pytest.approx(columns["js_top"][b] - columns["js_rand"][b])
        assert columns["delta_alpha"][b] == pytest.approx(0.5 - weight[erased], abs=1e-6)
        assert columns["flip_top"][b] is True and columns["flip_rand"][b] is False
    # T = 2: r is the other token; alpha (0.8, 0.2), values (0.9, 0.1): c = 0.74 -> 0.1 and 0.9
    assert (columns["top_index"][2], columns["rand_index"][2]) == (0, 1)
    assert columns["js_top"][2] == pytest.approx(js_by_hand(0.74, 0.1), abs=1e-6)
    assert columns["js_rand"][2] == pytest.approx(js_by_hand(0.74, 0.9), abs=1e-6)
    assert (columns["flip_top"][2], columns["flip_rand"][2]) == (True, False)


def test_erasure_random_item_is_uniform_over_the_others():
    docs = [[10, 9, 8, 10, 9]] * 300  # i* is rank 2
    model, shared = toy_pass(docs)
    ranks = np.array(erasure_single.run(context(model), shared)["rand_index"].tolist())
    counts = np.bincount(ranks, minlength=5)
    assert counts[2] == 0 and all(45 <= c <= 105 for c in counts[[0, 1, 3, 4]])  # 75 expected each


def test_erasing_all_mass_uses_the_zero_context():
    model, shared = toy_pass([[6, 7]], "sparsemax")  # alpha (1, 0): erasing i* leaves nothing
    columns = erasure_single.run(context(model), shared)
    # zero context: c = 0, q = [1, 0]; p = [0.1, 0.9]. Erasing the zero weight changes nothing.
    assert columns["js_top"][0] == pytest.approx(js_by_hand(0.9, 0.0), abs=1e-6)
    assert columns["js_rand"][0] == pytest.approx(0.0, abs=1e-7)
    assert (columns["flip_top"][0], columns["flip_rand"][0]) == (True, False)
    assert columns["delta_alpha"][0] == pytest.approx(1.0)


def test_single_token_instances_are_null_for_erasure_and_zero_for_permutation():
    model, shared = toy_pass([[4], [4, 5], [5]])
    columns = erasure_single.run(context(model), shared)
    assert set(columns) == set(erasure_single.INFO.rows.names)
    for name, values in columns.items():
        assert values.dtype == object and values[0] is None and values[2] is None, name
        assert values[1] is not None, name
    assert_rows_close(columns, erasure_single.reference(context(model), shared), atol=1e-6)
    tvds = permutation.run(context(model, PermutationParams(n=10)), shared)
    assert tvds["tvd_max"][0] == 0 and tvds["tvd_max"][2] == 0


# ----- small real models ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("synthetic")
    config = DataConfig(
        synthetic=SyntheticConfig(n_train=60, n_dev=5, n_test=16, planted=1, distractors=0, min_length=1, max_length=12)
    )
    return load_dataset("synthetic", Path(tmp), Path(tmp) / "cache", config)


def real_model(data, encoder: str, alignment: str, projection: str):
    config = CellConfig(
        dataset="synthetic", encoder=encoder, attention=alignment, projection=projection, seed=0, model=TINY
    )
    model = build_model(config, data).eval()
    with torch.no_grad():  # untrained, alpha is near uniform and the head near constant: sharpen both
        for name, parameter in model.attention.named_parameters():
            if name in ("context.weight", "learned_query"):  # the additive v / the dot-product query
                parameter.mul_(SHARPEN)
        model.classifier.weight.mul_(SHARPEN)
        # and put the decision boundary through the test batch's contexts, so that erasures can flip
        shared = pass_of(model, picked(data))
        contexts = torch.einsum("bt,btm->bm", shared.alpha, shared.encoded.h)  # (B, m)
        model.classifier.bias.copy_(-model.classifier.weight @ contexts.mean(0))
    return model


def picked(data, start: int = 0, count: int = 8) -> dict:
    return data.splits["test"].slice(start, count).to_pydict()


def pass_of(model, rows: dict):
    return forward_once(model, collate(rows))


def assert_rows_close(a: dict, b: dict, atol: float) -> None:
    assert set(a) == set(b)
    for name, x in a.items():
        y = b[name]
        assert len(x) == len(y), name
        for u, v in zip(x, y):
            if u is None or v is None:
                assert u is None and v is None, name
            elif isinstance(u, (bool, np.bool_, int, np.integer)):
                assert u == v, name
            else:
                assert u == pytest.approx(v, abs=atol, rel=0), name


def analyses(model, n: int = N, cell: str = CELL):
    return ((permutation, context(model, PermutationParams(n=n), cell)), (erasure_single, context(model, cell=cell)))


@pytest.mark.parametrize(("encoder", "alignment", "projection"), CASES)
def test_run_equals_reference_and_bounds(data, encoder, alignment, projection):
    model = real_model(data, encoder, alignment, projection)
    shared = pass_of(model, picked(data))
    for module, ctx in analyses(model):
        columns = module.run(ctx, shared)
        assert set(columns) == set(module.INFO.rows.names)
        assert all(len(v) == shared.batch.size for v in columns.values())
        assert_rows_close(columns, module.reference(ctx, shared), atol=1e-6)
    tvds = permutation.run(analyses(model)[0][1], shared)
    assert ((tvds["tvd_median"] >= 0) & (tvds["tvd_median"] <= tvds["tvd_max"]) & (tvds["tvd_max"] <= 1)).all()
    assert ((tvds["tvd_mean"] >= 0) & (tvds["tvd_mean"] <= tvds["tvd_max"])).all()
    columns = erasure_single.run(context(model), shared)
    js = np.array([v for name in ("js_top", "js_rand") for v in columns[name] if v is not None])
    assert ((js >= 0) & (js <= math.log(2))).all()


def test_outputs_move_and_decisions_flip(data):
    # guards the comparisons above against a degenerate model whose outputs never move
    model = real_model(data, "lstm", "additive", "sparsemax")
    shared = pass_of(model, picked(data))
    assert permutation.run(analyses(model)[0][1], shared)["tvd_max"].max() > 0.1
    columns = erasure_single.run(context(model), shared)
    assert max(v for v in columns["js_top"] if v is not None) > 1e-3
    assert True in set(columns["flip_top"]) and True in set(columns["flip_rand"])


@pytest.mark.parametrize(
    ("encoder", "alignment", "projection"), [("lstm", "additive", "softmax"), ("cnn", "dot", "sparsemax")]
)
def test_padding_seeds_and_batching_do_not_change_rows(data, encoder, alignment, projection):
    model = real_model(data, encoder, alignment, projection)
    rows = picked(data)
    shared = pass_of(model, rows)
    assert len(set(shared.lengths.tolist())) > 1  # the batch really pads
    for module, ctx in analyses(model):
        whole = module.run(ctx, shared)
        assert_rows_close(whole, module.run(ctx, pass_of(model, rows)), atol=0)  # same seed, same rows
        halves = [module.run(ctx, pass_of(model, picked(data, start, 4))) for start in (0, 4)]
        assert_rows_close(whole, {k: np.concatenate([h[k] for h in halves]) for k in whole}, atol=1e-6)
        for i in range(shared.batch.size):
            alone = module.run(ctx, pass_of(model, {k: v[i : i + 1] for k, v in rows.items()}))
            assert_rows_close({k: v[i : i + 1] for k, v in whole.items()}, alone, atol=1e-6)
    other = permutation.run(analyses(model, cell="another-cell")[0][1], shared)
    assert not np.array_equal(other["tvd_mean"], permutation.run(analyses(model)[0][1], shared)["tvd_mean"])


def test_chunked_decoding_gives_the_same_rows(data, monkeypatch):
    model = real_model(data, "average", "additive", "softmax")
    shared = pass_of(model, picked(data))
    ctx = context(model, PermutationParams(n=N))
    whole = permutation.run(ctx, shared)
    monkeypatch.setattr(permutation, "CHUNK_ELEMENTS", 1)  # one permutation per decoder call
    assert_rows_close(whole, permutation.run(ctx, shared), atol=1e-6)


def test_output_that_ignores_attention(data):
    model = real_model(data, "lstm", "additive", "softmax")
    with torch.no_grad():
        model.classifier.weight.zero_()  # logits = bias whatever the context
    shared = pass_of(model, picked(data))
    tvds = permutation.run(context(model, PermutationParams(n=N)), shared)
    assert (tvds["tvd_max"] == 0).all()
    columns = erasure_single.run(context(model), shared)
    kept = [i for i, v in enumerate(columns["js_top"]) if v is not None]
    assert kept
    for i in kept:
        assert columns["js_top"][i] == 0 and columns["js_rand"][i] == 0
        assert columns["flip_top"][i] is False and columns["flip_rand"][i] is False
