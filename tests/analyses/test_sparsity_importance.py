"""`sparsity_importance` (Meister et al. §3–4, App. A): normalised entropy by hand, g_y(x) against finite
differences, D_y(h) against an explicit erase-renormalise-decode, `run` == `reference` on small flat models,
bounds, nulls where T < 2, and rows independent of batch grouping."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once, tvd
from gridlab.analyses.sparsity_importance import SparsityParams
from gridlab.analyses.sparsity_importance import compute as sparsity_importance
from gridlab.analyses.sparsity_importance.compute import (
    erased_alphas,
    input_gradient_norms,
    layer_erasure,
    normalised_entropy,
    representation_erasure,
    sampled_ranks,
    summarize,
)
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.models.factory import build_model

from .conftest import short_synthetic_rows

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
COUNT = 6
SHARPEN = 10.0


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return short_synthetic_rows(tmp_path_factory.mktemp("sparsity"), n_test=COUNT)


def model_of(synthetic: dict, encoder: str, dataset: str = "synthetic", architecture: str = "flat", **cell):
    config = CellConfig(dataset=dataset, encoder=encoder, architecture=architecture, model=TINY, **cell)
    model = build_model(config, synthetic["data"]).eval()
    with torch.no_grad():  # untrained: sharpen attention and output so the measures are not all flat
        for name, parameter in model.attention.named_parameters():
            if name in ("context.weight", "learned_query"):
                parameter.mul_(SHARPEN)
        model.classifier.weight.mul_(SHARPEN)
    return model


def context(
    model, positions: int | None = None, layer: int | None = None, erasure: str = "renormalise"
) -> AnalysisContext:
    params = SparsityParams(gh_x_positions=positions, representation_layer=layer, representation_erasure=erasure)
    return AnalysisContext(CELL, model, torch.device("cpu"), params)


def as_float(values: np.ndarray) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in values], dtype=np.float64)


def assert_columns_close(a: dict, b: dict, atol: float = 1e-5) -> None:
    """Entropies within atol; taus equal (1e-12: scipy's arithmetic on equal ranks). The taus are functions of
    the tie-ranked vectors (`gridlab.analyses.ranking`), so float noise between computations (batched splice,
    reference loop, batch width) cannot move them, not even where deleting either copy of a repeated token
    ("1 1" in these rows) gives mathematically equal outputs."""
    assert set(a) == set(b) == set(sparsity_importance.INFO.rows.names)
    for name, values in a.items():
        assert [v is None for v in values] == [v is None for v in b[name]], name
        tolerance = 1e-12 if name.startswith("tau") else atol
        np.testing.assert_allclose(as_float(values), as_float(b[name]), rtol=0, atol=tolerance, err_msg=name)


# ----- hand cases ----------------------------------------------------------------------------------------


def test_normalised_entropy_hand_cases():
    assert normalised_entropy(np.full(5, 0.2)) == pytest.approx(1.0)
    assert normalised_entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    assert normalised_entropy(np.array([1.0])) == 0.0
    assert normalised_entropy(np.array([0.5, 0.5, 0.0, 0.0])) == pytest.approx(0.5)  # log 2 / log 4


def test_sampled_ranks_every_item_or_evenly_spaced():
    ranks, valid = sampled_ranks(torch.tensor([1, 3, 10]), None)
    assert ranks.tolist() == [list(range(10))] * 3
    assert valid.sum(1).tolist() == [1, 3, 10]
    ranks, valid = sampled_ranks(torch.tensor([1, 3, 4, 10]), 4)  # floor((k + 1/2) n / 4) once n > 4
    assert [r[v].tolist() for r, v in zip(ranks, valid, strict=True)] == [[0], [0, 1, 2], [0, 1, 2, 3], [1, 3, 6, 8]]


def test_erased_alphas_zero_one_weight_and_renormalise():
    alpha = torch.tensor([[0.5, 0.3, 0.2, 0.0], [1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    erased = erased_alphas(alpha, mask)  # (B, T, T)
    torch.testing.assert_close(erased[0, 0], torch.tensor([0.0, 0.6, 0.4, 0.0]))
    torch.testing.assert_close(erased[0, 2], torch.tensor([0.625, 0.375, 0.0, 0.0]))
    assert (erased[1, 0] == 0).all()  # nothing left: the zero context


# ----- identities on a real model -------------------------------------------------------------------------


def test_gradient_norm_matches_finite_differences(synthetic):
    # ||d y / d X_i||_2 with alpha held at the shared pass's value, by central differences in float64
    model = copy.deepcopy(model_of(synthetic, "lstm")).double()
    rows = {k: v[2:4] for k, v in synthetic["rows"].items()}
    batch = collate(rows)
    shared = forward_once(model, batch)
    g = input_gradient_norms(model, batch, shared)
    embedded = model.embed(batch).detach()
    eps = 1e-6
    for b, t in shared.encoded.mask.nonzero().tolist():
        partials = []
        for k in range(embedded.shape[-1]):
            ys = []
            for sign in (1, -1):
                moved = embedded.clone()
                moved[b, t, k] += sign * eps
                with torch.no_grad():
                    encoded = model.encode(batch, embedded=moved)
                    probs = torch.softmax(model.decode(encoded.h, shared.alpha, encoded.query), -1)
                ys.append(float(probs[b, shared.pred[b]]))
            partials.append((ys[0] - ys[1]) / (2 * eps))
        assert float(g[b, t]) == pytest.approx(float(np.linalg.norm(partials)), rel=1e-5, abs=1e-12)


def test_representation_erasure_is_an_explicit_erase_renormalise_decode(synthetic):
    model = model_of(synthetic, "cnn")
    shared = forward_once(model, collate(synthetic["rows"]))
    d = representation_erasure(model, shared)
    b = int(shared.lengths.argmax())
    i = int(shared.encoded.mask[b].nonzero()[2, 0])
    alpha = shared.alpha[b : b + 1].clone()
    alpha[0, i] = 0.0
    alpha = alpha / alpha.sum()
    with torch.no_grad():
        expected = torch.softmax(model.decode(shared.encoded.h[b : b + 1], alpha), -1)[0]
    assert float(d[b, i]) == pytest.approx(float(tvd(expected, shared.probs[b])), abs=1e-6)
    assert (d[~shared.encoded.mask] == 0).all()


# ----- run == reference, bounds, nulls ------------------------------------------------------------------


@pytest.mark.parametrize("encoder", ["lstm", "cnn", "average"])
def test_run_equals_reference_bounds_and_nulls(synthetic, encoder):
    model = model_of(synthetic, encoder)
    shared = forward_once(model, collate(synthetic["rows"]))
    columns = sparsity_importance.run(context(model), shared)
    assert_columns_close(columns, sparsity_importance.reference(context(model), shared))
    defined = (shared.lengths >= 2).tolist()
    assert defined[:2] == [False, True]  # the first instance has T = 1, the second T = 2
    for name, values in columns.items():
        assert values.dtype == object and values.shape == (shared.batch.size,)
        assert [v is not None for v in values] == defined, name
        present = as_float(values[np.array(defined)])
        assert np.isfinite(present).all(), name
        low = -1.0 if name.startswith("tau") else 0.0
        assert ((present >= low) & (present <= 1)).all(), name


@pytest.mark.parametrize("layer", [0, 1])
def test_a_self_attention_layer_as_h_equals_the_reference_and_moves_only_the_h_columns(synthetic, layer):
    # run (each deletion masked out of every key set from the layer on, rows of one call) == reference (each
    # item cut out of the sequence, one instance at a time); only the columns of h move
    model = model_of(synthetic, "transformer").double()
    shared = forward_once(model, collate(synthetic["rows"]))
    columns = sparsity_importance.run(context(model, layer=layer), shared)
    assert_columns_close(columns, sparsity_importance.reference(context(model, layer=layer), shared))
    final = sparsity_importance.run(context(model), shared)
    for name, values in columns.items():
        unchanged = np.array_equal(as_float(values), as_float(final[name]), equal_nan=True)
        assert unchanged != name.endswith(("gy_h", "dy_h", "gh_x")), name


@pytest.mark.parametrize("encoder", ["lstm", "transformer"])
def test_zeroing_h_i_equals_the_reference_and_moves_only_d_y_h(synthetic, encoder):
    # run (every item's score swapped for the zero vector's, one projection and one decode per batch) ==
    # reference (h_i zeroed, the model's own attention and decoder, one instance and item at a time)
    model = model_of(synthetic, encoder, projection="sparsemax").double()
    shared = forward_once(model, collate(synthetic["rows"]))
    columns = sparsity_importance.run(context(model, erasure="zero"), shared)
    assert_columns_close(columns, sparsity_importance.reference(context(model, erasure="zero"), shared))
    renormalised = sparsity_importance.run(context(model), shared)
    for name, values in columns.items():
        unchanged = np.array_equal(as_float(values), as_float(renormalised[name]), equal_nan=True)
        assert unchanged != name.endswith("dy_h"), name


def test_below_the_self_attention_an_item_outside_a_sparse_support_still_matters(synthetic):
    # At the final attention layer an item sparsemax gives no weight is read by nothing: erasing it changes
    # nothing, so all such items tie at 0 with their 0 weight (Kendall's tau near 1 by construction). Deleted
    # from the self-attention stack, the others' representations lose it.
    model = model_of(synthetic, "transformer", projection="sparsemax").double()
    batch = collate(synthetic["rows"])
    shared = forward_once(model, batch)
    outside = shared.encoded.mask & (shared.alpha == 0)
    assert outside.any()
    assert representation_erasure(model, shared)[outside].max() < 1e-15  # renormalising by 1 - 1e-16
    for layer in (0, 1):
        assert layer_erasure(model, batch, shared, layer)[outside].min() > 1e-9


# float64 for the Transformer: untrained, ||LayerNorm(x)|| barely depends on x, so its g_h(x) are ~1e-6 and
# float32 noise of the batch width moves them by 2%
@pytest.mark.parametrize(
    ("encoder", "positions", "layer", "dtype"),
    [("lstm", None, None, torch.float32), ("lstm", 2, None, torch.float32), ("transformer", None, 0, torch.float64)],
)
def test_rows_do_not_depend_on_grouping(synthetic, encoder, positions, layer, dtype):
    model = model_of(synthetic, encoder).to(dtype)
    rows = synthetic["rows"]
    whole = sparsity_importance.run(context(model, positions, layer), forward_once(model, collate(rows)))
    regrouped = {name: [None] * COUNT for name in whole}
    for group in ([4, 1], [0], [5, 2, 3]):  # each group padded to its own width
        picked = {k: [v[i] for i in group] for k, v in rows.items()}
        part = sparsity_importance.run(context(model, positions, layer), forward_once(model, collate(picked)))
        for name, values in part.items():
            for row, b in enumerate(group):
                regrouped[name][b] = values[row]
    assert_columns_close({k: np.array(v, dtype=object) for k, v in regrouped.items()}, whole)


@pytest.mark.parametrize("architecture", ["flat", "pair"])
def test_sampled_positions_equal_the_reference_and_every_position_where_none_is_left_out(
    synthetic, data_dir: Path, tmp_path: Path, architecture: str
):
    # gh_x_positions = N: run == reference averaging over the same N items per instance; at N >= every
    # instance's item count the columns are the unsampled ones bit for bit; below it entropy_gh_x moves
    # (an estimate) and no other column does.
    if architecture == "pair":
        data = load_dataset("sick", data_dir, tmp_path / "cache", DataConfig())
        model = model_of({"data": data}, "lstm", "sick", "pair").double()
        rows = data.splits["test"].slice(0, 4).to_pydict()
    else:
        model, rows = model_of(synthetic, "lstm").double(), synthetic["rows"]
    shared = forward_once(model, collate(rows))
    every = sparsity_importance.run(context(model), shared)
    widest = int(shared.encoded.mask.sum(1).max())
    assert widest > 2
    same = sparsity_importance.run(context(model, widest), shared)
    assert all(np.array_equal(as_float(every[name]), as_float(same[name]), equal_nan=True) for name in every)
    sampled = sparsity_importance.run(context(model, 2), shared)
    assert_columns_close(sampled, sparsity_importance.reference(context(model, 2), shared))
    moved = as_float(sampled["entropy_gh_x"]) != as_float(every["entropy_gh_x"])
    assert moved[shared.encoded.mask.sum(1).cpu().numpy() > 2].all()
    for name in set(every) - {"entropy_gh_x"}:
        assert np.array_equal(as_float(every[name]), as_float(sampled[name]), equal_nan=True), name


def test_summarize_means_defined_values():
    frame = pd.DataFrame({name: [0.2, None, 0.4] for name in sparsity_importance.INFO.rows.names})
    summary = summarize(frame)
    assert set(summary) == {f"{name}_mean" for name in sparsity_importance.INFO.rows.names}
    assert all(value == pytest.approx(0.3) for value in summary.values())


def test_pair_run_equals_reference(data_dir: Path, tmp_path: Path):
    # attention over the premise; the query is a constant of every measure
    data = load_dataset("sick", data_dir, tmp_path / "cache", DataConfig())
    model = model_of({"data": data}, "lstm", "sick", "pair").double()  # small TVDs: float32 noise is ~1e-5 of them
    rows = data.splits["test"].slice(0, 4).to_pydict()
    shared = forward_once(model, collate(rows))
    columns = sparsity_importance.run(context(model), shared)
    assert_columns_close(columns, sparsity_importance.reference(context(model), shared))
    assert all(v is not None for v in columns["entropy_gh_x"])
