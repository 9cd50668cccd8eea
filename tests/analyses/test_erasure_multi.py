"""`erasure_multi` (S&S §5): batched `run` == per-instance `reference` on small perturbed models, the
invariants of the columns (exact <= every ranking, bounds, nulls), seeded and batching/padding-independent
rows, a hand-built case where one position alone decides, and an output that ignores attention."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import SharedPass, forward_once
from gridlab.analyses.erasure_multi import ErasureMultiParams
from gridlab.analyses.erasure_multi import compute as erasure_multi
from gridlab.config.schema import ModelConfig
from gridlab.data.batching import Batch, collate
from gridlab.models.classifier import AttentionClassifier, Encoded

from .conftest import perturbed_model, short_synthetic_rows

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
LIMIT = 10  # exact search up to T = 10: lengths 11-14 of the data check the nulls above the limit
PARAMS = ErasureMultiParams(exact_max_len=LIMIT)
CASES = list(itertools.product(["lstm", "cnn", "average", "noenc"], ["additive", "dot"], ["softmax", "sparsemax"]))
NAMES = (*erasure_multi.RANKINGS, "exact")


@pytest.fixture(scope="module")
def picked(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """40 test rows of lengths 3-14, the first cut to T = 1 and the second to T = 2."""
    return short_synthetic_rows(tmp_path_factory.mktemp("synthetic"), n_test=40)


def model_for(picked: dict, encoder: str, alignment: str, projection: str, seed: int = 0) -> AttentionClassifier:
    """A tiny untrained model, perturbed so decisions sit near the boundary and erasures flip them: larger
    encoder/classifier weights, mild attention noise (so sparsemax keeps several items), a small bias (so
    the zero context predicts one definite class)."""
    model = perturbed_model(picked["data"], encoder, alignment, projection, seed)
    with torch.no_grad():
        model.classifier.bias.mul_(0.01)
    return model


def select(rows: dict, indices) -> dict:
    return {key: [values[i] for i in indices] for key, values in rows.items()}


def analyse(
    model: AttentionClassifier,
    batch: Batch,
    params: ErasureMultiParams = PARAMS,
    cell: str = CELL,
    how=erasure_multi.run,
) -> tuple[dict[str, np.ndarray], SharedPass]:
    shared = forward_once(model, batch)
    return how(AnalysisContext(cell, model, torch.device("cpu"), params), shared), shared


def as_lists(columns: dict[str, np.ndarray]) -> dict[str, list]:
    return {name: list(values) for name, values in columns.items()}


def check_invariants(columns: dict[str, np.ndarray], lengths: list[int], limit: int) -> None:
    assert list(columns) == erasure_multi.INFO.rows.names
    for name in NAMES:
        for removed, frac, t in zip(columns[f"removed_{name}"], columns[f"frac_{name}"], lengths):
            assert (removed is None) == (frac is None)
            if removed is not None:
                assert isinstance(removed, int) and 1 <= removed <= t and t > 1
                assert frac == removed / t and 0 < frac <= 1
    for b, t in enumerate(lengths):
        exact = columns["removed_exact"][b]
        if t == 1:
            assert all(columns[f"removed_{name}"][b] is None for name in NAMES)
        if t > limit:
            assert exact is None
        for name in erasure_multi.RANKINGS:
            removed = columns[f"removed_{name}"][b]
            if removed is not None and t <= limit:
                # the ranking's first k positions are a flipping set of size k: the minimum is no larger
                assert exact is not None and exact <= removed


@pytest.mark.parametrize(("encoder", "alignment", "projection"), CASES)
def test_run_matches_reference(picked, encoder, alignment, projection):
    model = model_for(picked, encoder, alignment, projection)
    batch = collate(picked["rows"])
    columns, shared = analyse(model, batch)
    expected, _ = analyse(model, batch, how=erasure_multi.reference)
    assert as_lists(columns) == as_lists(expected)

    lengths = shared.lengths.tolist()
    check_invariants(columns, lengths, LIMIT)
    flipping = [any(columns[f"removed_{name}"][b] is not None for name in NAMES) for b in range(len(lengths))]
    assert sum(flipping) >= 0.15 * len(lengths)  # the comparison is about real flips, not all-null columns


@pytest.mark.parametrize("encoder", ["lstm", "transformer"])
def test_the_other_rankings_run_as_the_reference(picked, encoder):
    """Rankings beyond S&S's four (`importance.scores`): the batched erasure equals the per-instance one, and
    rollout/flow are null on the BiLSTM."""
    rankings = ["leave_one_out", "norm_attention", "integrated_gradients", "attention_rollout", "attention_flow"]
    params = ErasureMultiParams(rankings=rankings, exact_max_len=0, ig_steps=8)
    model = model_for(picked, encoder, "dot", "softmax")
    batch = collate(picked["rows"])
    columns, shared = analyse(model, batch, params)
    expected, _ = analyse(model, batch, params, how=erasure_multi.reference)
    assert as_lists(columns) == as_lists(expected)
    flipped = {name: any(v is not None for v in columns[f"removed_{name}"]) for name in rankings}
    assert flipped["leave_one_out"] and flipped["norm_attention"]  # not vacuous
    skipped = not flipped["attention_rollout"] and not flipped["attention_flow"]
    assert skipped == (encoder != "transformer")


def test_flips_cover_the_paths_that_matter(picked):
    """Across the cases: exact sizes of several values, exact strictly below a ranking somewhere (the
    rankings are not optimal), and a flip only at the zero context (k = T) somewhere."""
    exact_sizes, below, at_zero_context = set(), 0, 0
    for case in CASES[:8]:
        columns, shared = analyse(model_for(picked, *case), collate(picked["rows"]))
        lengths = shared.lengths.tolist()
        exact_sizes |= {v for v in columns["removed_exact"] if v is not None}
        for name in erasure_multi.RANKINGS:
            for removed, exact, t in zip(columns[f"removed_{name}"], columns["removed_exact"], lengths):
                below += removed is not None and exact is not None and exact < removed
                at_zero_context += removed == t
    assert len(exact_sizes) >= 4 and below > 0 and at_zero_context > 0


def test_rows_are_seeded_and_independent_of_grouping_and_padding(picked):
    rows = picked["rows"]
    model = model_for(picked, "lstm", "additive", "softmax")
    eight = list(range(2, 10))
    together, _ = analyse(model, collate(select(rows, eight)))
    halves = [analyse(model, collate(select(rows, half)))[0] for half in (eight[:4], eight[4:])]
    assert as_lists(together) == {name: list(halves[0][name]) + list(halves[1][name]) for name in together}
    alone = [analyse(model, collate(select(rows, [i])))[0] for i in eight]  # no padding at all
    assert as_lists(together) == {name: [row[name][0] for row in alone] for name in together}

    again, _ = analyse(model_for(picked, "lstm", "additive", "softmax"), collate(select(rows, eight)))
    assert as_lists(again) == as_lists(together)
    # the random ranking is drawn per (cell, instance): another cell draws other orders
    everything = collate(rows)
    mine, _ = analyse(model, everything)
    other, _ = analyse(model, everything, cell="another-cell")
    assert list(mine["removed_random"]) != list(other["removed_random"])
    assert all(list(mine[f"removed_{n}"]) == list(other[f"removed_{n}"]) for n in NAMES if n != "random")


def test_chunked_decoding_gives_the_same_rows(picked, monkeypatch):
    model = model_for(picked, "noenc", "dot", "softmax")
    batch = collate(select(picked["rows"], range(12)))
    whole, _ = analyse(model, batch)
    monkeypatch.setattr(erasure_multi, "_BLOCK", 64)  # one instance per ranking call, few subsets per call
    chunked, _ = analyse(model, batch)
    assert as_lists(chunked) == as_lists(whole)


@pytest.mark.parametrize(("encoder", "alignment", "projection"), CASES[::3])
def test_suffix_sums_give_the_decoded_rows(picked, monkeypatch, encoder, alignment, projection):
    """A classifier linear in the context takes every k at once from suffix sums; decoding each erased
    weighting through the model (the path of any other output, here in blocks of one instance) agrees."""
    model = model_for(picked, encoder, alignment, projection)
    batch = collate(picked["rows"])
    summed, _ = analyse(model, batch)
    monkeypatch.setattr(erasure_multi, "linear_output", lambda model: None)
    monkeypatch.setattr(erasure_multi, "_BLOCK", 64)
    decoded, _ = analyse(model, batch)
    assert as_lists(decoded) == as_lists(summed)


def test_schema_and_parameters(picked):
    model = model_for(picked, "cnn", "dot", "softmax")
    batch = collate(picked["rows"])
    columns, _ = analyse(model, batch, ErasureMultiParams(rankings=["gradient"], exact_max_len=0))
    table = pa.table({f.name: pa.array(columns[f.name], f.type, from_pandas=False) for f in erasure_multi.INFO.rows})
    assert table.schema == erasure_multi.INFO.rows and table.num_rows == batch.size
    assert table.column("removed_gradient").null_count < batch.size
    unrequested = [name for name in table.column_names if not name.endswith(("_gradient", "measured"))]  # exact: 0
    assert all(table.column(name).null_count == batch.size for name in unrequested)
    lengths = batch.mask.sum(1).tolist()
    assert table.column("measured").to_pylist() == [["gradient"] if t >= 2 else [] for t in lengths]
    full, _ = analyse(model, batch)
    assert list(full["removed_gradient"]) == list(columns["removed_gradient"])
    assert erasure_multi.ID == "erasure_multi" and isinstance(erasure_multi.VERSION, int)


OUTLIER, PLAIN = 7, 5


class Outlier(AttentionClassifier):
    """h_t = (1, 0) for every token but OUTLIER, whose h is (0, 3); scores 2 on the outlier, 0 elsewhere;
    logits = the context. With the outlier attended, c_1 > c_0 (class 1); erasing anything else only raises
    its share; erasing it leaves c = (1, 0) (class 0). So exactly the sets containing the outlier flip."""

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        outlier = (batch.ids == OUTLIER).float()
        h = torch.stack([1.0 - outlier, 3.0 * outlier], dim=-1) * batch.mask[..., None]  # (B, T, 2)
        return Encoded(h, batch.mask)

    def attend(self, h, mask, query=None):
        return torch.softmax((2.0 * (h[..., 1] > 0)).masked_fill(~mask, float("-inf")), dim=-1)

    def output(self, context, query):
        return context


def test_one_position_alone_decides():
    sequences = [
        [PLAIN] * 3 + [OUTLIER] + [PLAIN] * 4,
        [OUTLIER] + [PLAIN] * 4,
        [PLAIN] * 11 + [OUTLIER],
        [PLAIN] * 6,
        [OUTLIER] * 1,
    ]
    batch = collate({"ids": sequences, "label": [0] * 5, "instance_id": [10, 11, 12, 13, 14]})
    columns, shared = analyse(Outlier().eval(), batch, ErasureMultiParams())
    assert shared.pred.tolist() == [1, 1, 1, 0, 1]
    assert as_lists(columns) == as_lists(
        erasure_multi.reference(
            AnalysisContext(CELL, Outlier().eval(), torch.device("cpu"), ErasureMultiParams()), shared
        )
    )
    for b, sequence in enumerate(sequences[:3]):
        for name in ("attention", "gradient", "grad_x_attention", "exact"):
            assert columns[f"removed_{name}"][b] == 1
            assert columns[f"frac_{name}"][b] == 1 / len(sequence)
        # the random ranking flips exactly when its order reaches the outlier
        order = erasure_multi.random_order(CELL, erasure_multi.ID, 10 + b, len(sequence)).tolist()
        assert columns["removed_random"][b] == order.index(sequence.index(OUTLIER)) + 1
    # no outlier: the context stays (1, 0) until the zero vector, which also gives class 0; and T = 1
    assert all(columns[name][b] is None for name in columns if name != "measured" for b in (3, 4))
    assert [list(tried) for tried in columns["measured"]] == [[*erasure_multi.ERASURE_RANKINGS, "exact"]] * 4 + [[]]


def test_the_summary_counts_flips_among_the_instances_tried():
    """ "Never flipped" (the outlier-free instance) is a measured 0; a ranking not requested, `exact` above its
    length limit, and T = 1 are not measured: no entry, and no place in a share's denominator."""
    sequences = [[PLAIN] * 3 + [OUTLIER] + [PLAIN] * 4, [PLAIN] * 11 + [OUTLIER], [PLAIN] * 6, [OUTLIER]]
    batch = collate({"ids": sequences, "label": [0] * 4, "instance_id": [0, 1, 2, 3]})
    params = ErasureMultiParams(rankings=["attention", "random"], exact_max_len=10)  # T = 12 is not searched
    columns, shared = analyse(Outlier().eval(), batch, params)
    rows = pd.DataFrame({**{name: list(values) for name, values in columns.items()}, "length": shared.lengths})
    summary = erasure_multi.summarize(rows)
    assert summary["flipped_attention"] == 2 / 3  # T = 1 is left out
    assert summary["flipped_exact"] == 1 / 2  # over the two instances with 2 <= T <= 10
    assert summary["frac_attention_median"] == pytest.approx(np.median([1 / 8, 1 / 12]))
    named = {name for name in NAMES for key in summary if key in (f"flipped_{name}", f"frac_{name}_median")}
    assert named == {"attention", "random", "exact"}

    never = erasure_multi.summarize(rows.iloc[[2]])  # tried, never flipped: a measured 0, no median
    assert never == {"flipped_attention": 0.0, "flipped_random": 0.0, "flipped_exact": 0.0}
    assert erasure_multi.summarize(rows.iloc[[3]]) == {}  # T = 1: nothing tried
    assert erasure_multi.summarize(rows.iloc[0:0]) == {}


def test_the_summary_of_rows_written_before_measured():
    """A part from before the `measured` column: the rankings with any flip, over T >= 2; no `exact`."""
    sequences = [[PLAIN] * 3 + [OUTLIER] + [PLAIN] * 4, [PLAIN] * 6, [OUTLIER]]
    batch = collate({"ids": sequences, "label": [0] * 3, "instance_id": [0, 1, 2]})
    columns, shared = analyse(Outlier().eval(), batch, ErasureMultiParams(rankings=["attention"], exact_max_len=10))
    rows = pd.DataFrame({**{name: list(values) for name, values in columns.items()}, "length": shared.lengths})
    assert erasure_multi.summarize(rows.assign(measured=None)) == {
        "flipped_attention": 1 / 2,
        "frac_attention_median": 1 / 8,
    }


def test_an_output_that_ignores_attention_never_flips(picked):
    model = model_for(picked, "lstm", "additive", "softmax")
    with torch.no_grad():
        model.classifier.weight.zero_()  # logits = bias, whatever the context
    columns, shared = analyse(model, collate(picked["rows"]), ErasureMultiParams())
    assert all(value is None for name, values in columns.items() if name != "measured" for value in values)
    rows = pd.DataFrame({**{name: list(values) for name, values in columns.items()}, "length": shared.lengths})
    never = {f"flipped_{name}": 0.0 for name in (*erasure_multi.ERASURE_RANKINGS, "exact")}
    assert erasure_multi.summarize(rows) == never  # tried and never flipped: a measured 0, no median


def test_gradient_ranking_is_the_decision_gradient_rescaled(picked):
    """Where float32 does not saturate, the rescaled gradient the ranking uses is d d / d alpha divided by
    d (1 - d): the plain autograd gradient of S&S's decision function, same order."""
    model = model_for(picked, "noenc", "additive", "softmax")
    shared = forward_once(model, collate(picked["rows"]))
    alpha = shared.alpha.clone().requires_grad_(True)
    decision = torch.softmax(model.decode(shared.encoded.h, alpha), dim=-1).amax(-1)  # (B,)
    (plain,) = torch.autograd.grad(decision.sum(), alpha)
    scale = (decision * (1 - decision)).detach()[:, None]  # (B, 1)
    assert scale.min() > 1e-3  # not saturated, so the plain gradient is informative
    torch.testing.assert_close(erasure_multi._decision_gradient(model, shared) * scale, plain, rtol=1e-4, atol=1e-7)
