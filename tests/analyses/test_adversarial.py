"""`adversarial` (J&W §4.2.2): batched `run` == per-instance `reference` on small perturbed models and on a toy
pair model, the bounds of the columns, an output that ignores attention, seeded and batching/padding
independent rows with early stopping on, and early stopping that saves steps without changing the result."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from gridlab.analyses.adversarial import AdversarialParams
from gridlab.analyses.adversarial import compute as adversarial
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import SharedPass, forward_once, jsd
from gridlab.config.schema import ModelConfig
from gridlab.data.batching import Batch, collate
from gridlab.models.classifier import AttentionClassifier, Encoded

from .conftest import perturbed_model, short_synthetic_rows

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)
FEW = AdversarialParams(k=3, steps=30)  # run vs reference: enough steps to move, cheap for the reference loop
QUICK = adversarial.Convergence(window=10, rtol=1e-2)  # stops some instances within 150 steps
SHARPEN = 30.0
CASES = [
    *itertools.product(["lstm", "cnn", "average"], ["additive", "dot"], ["softmax"]),
    ("lstm", "additive", "sparsemax"),
]  # sparsemax: the model's alpha has zeros


@pytest.fixture(scope="module")
def picked(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """16 test rows of lengths 3-14, the first cut to T = 1 and the second to T = 2."""
    return short_synthetic_rows(tmp_path_factory.mktemp("synthetic"), n_test=16)


def model_for(
    picked: dict, encoder: str, alignment: str, projection: str = "softmax", seed: int = 0
) -> AttentionClassifier:
    """A tiny untrained model with larger weights, so the output moves with attention and eps binds."""
    return perturbed_model(picked["data"], encoder, alignment, projection, seed)


class ToyPair(AttentionClassifier):
    """A pair-task model in miniature: h looked up by token id, a fixed query per instance, and an output
    that mixes context and query, so the query path of decoding and the QA eps are exercised."""

    def __init__(self, vocab: int):
        super().__init__()
        generator = torch.Generator().manual_seed(3)
        self.register_buffer("table", torch.randn(vocab, 4, generator=generator))
        self.register_buffer("scorer", torch.randn(4, generator=generator))
        self.mix = torch.nn.Linear(6, 3)

    def encode(self, batch: Batch, embedded: torch.Tensor | None = None) -> Encoded:
        query = torch.stack([batch.lengths.float() / 10, batch.labels.float()], dim=-1)  # (B, 2)
        return Encoded(self.table[batch.ids], batch.mask, query)

    def attend(self, h, mask, query=None):
        return torch.softmax((h @ self.scorer).masked_fill(~mask, float("-inf")), dim=-1)

    def output(self, context, query):
        return 3.0 * self.mix(torch.cat([context, query], dim=-1))


def select(rows: dict, indices) -> dict:
    return {key: [values[i] for i in indices] for key, values in rows.items()}


def analyse(
    model: AttentionClassifier,
    batch: Batch,
    params: AdversarialParams = FEW,
    cell: str = CELL,
    how=adversarial.run,
    **kwargs,
) -> tuple[dict[str, np.ndarray], SharedPass]:
    shared = forward_once(model, batch)
    with torch.no_grad():  # as a caller may run it: the optimisation turns gradients back on for itself
        return how(AnalysisContext(cell, model, torch.device("cpu"), params), shared, **kwargs), shared


def assert_same(columns: dict[str, np.ndarray], expected: dict[str, np.ndarray], atol: float = 1e-4) -> None:
    assert list(columns) == list(expected) == adversarial.INFO.rows.names
    for name in ("jsd_eps_max", "tvd_at_jsd"):
        np.testing.assert_allclose(columns[name], expected[name], rtol=0, atol=atol, err_msg=name)
    for name in ("steps_run", "n_within_eps"):
        np.testing.assert_array_equal(columns[name], expected[name], err_msg=name)
    for name in ("candidate_jsd", "candidate_tvd"):
        np.testing.assert_allclose(np.stack(columns[name]), np.stack(expected[name]), rtol=0, atol=atol, err_msg=name)
    for chosen, oracle in zip(columns["alpha_eps_max"], expected["alpha_eps_max"]):
        assert (chosen is None) == (oracle is None)
        if chosen is not None:
            np.testing.assert_allclose(chosen, oracle, rtol=0, atol=atol)


def check_invariants(columns: dict[str, np.ndarray], lengths: list[int], params: AdversarialParams, eps: float) -> None:
    assert [columns[f.name].dtype for f in adversarial.INFO.rows] == [
        np.float64,
        np.float64,
        np.int64,
        np.int64,
        object,
        object,
        object,
    ]
    jsd, tvd = columns["jsd_eps_max"], columns["tvd_at_jsd"]
    # the raw candidates reproduce Algorithm 3's selection: the largest JSD among those within eps
    candidate_jsd, candidate_tvd = np.stack(columns["candidate_jsd"]), np.stack(columns["candidate_tvd"])
    assert candidate_jsd.shape == candidate_tvd.shape == (len(lengths), params.k)
    within = candidate_tvd <= eps
    np.testing.assert_array_equal(
        within.sum(-1)[np.asarray(lengths) > 1], columns["n_within_eps"][np.asarray(lengths) > 1]
    )
    selected = np.where(within, candidate_jsd, -1.0).max(-1).clip(min=0.0)
    np.testing.assert_allclose(selected, jsd, rtol=0, atol=1e-12)
    assert ((tvd >= 0) & (tvd <= eps)).all()
    assert ((jsd >= 0) & (jsd <= math.log(2))).all()
    assert ((columns["n_within_eps"] >= 0) & (columns["n_within_eps"] <= params.k)).all()
    assert ((columns["steps_run"] >= 0) & (columns["steps_run"] <= params.steps)).all()
    for b, t in enumerate(lengths):
        chosen = columns["alpha_eps_max"][b]  # the eps-max candidate over the items, or null
        assert (chosen is None) == (t == 1 or columns["n_within_eps"][b] == 0)
        if chosen is not None:
            assert len(chosen) == t and abs(sum(chosen) - 1) < 1e-6
        if t == 1:  # one distribution only
            assert (jsd[b], tvd[b], columns["steps_run"][b], columns["n_within_eps"][b]) == (0, 0, 0, params.k)
        elif columns["n_within_eps"][b] == 0:
            assert jsd[b] == 0 and tvd[b] == 0


@pytest.mark.parametrize(("encoder", "alignment", "projection"), CASES)
def test_run_matches_reference(picked, encoder, alignment, projection):
    model = model_for(picked, encoder, alignment, projection)
    before = [p.clone() for p in model.parameters()]
    batch = collate(picked["rows"])
    columns, shared = analyse(model, batch, convergence=None)
    expected, _ = analyse(model, batch, how=adversarial.reference, convergence=None)
    assert_same(columns, expected)

    lengths = shared.lengths.tolist()
    check_invariants(columns, lengths, FEW, adversarial.EPS_CLASSIFICATION)
    assert (columns["steps_run"][1:] == FEW.steps).all()
    for b, chosen in enumerate(columns["alpha_eps_max"]):  # the weights written are the selected candidate's
        if chosen is not None:
            own = shared.alpha[b][shared.encoded.mask[b]].double()
            assert float(jsd(torch.tensor(chosen, dtype=torch.float64), own)) == pytest.approx(
                columns["jsd_eps_max"][b], abs=1e-6
            )
    # the comparison is about real adversaries, and eps binds: some candidates are out of budget
    assert (columns["jsd_eps_max"] > 0.1).sum() >= len(lengths) // 3
    assert (columns["n_within_eps"][1:] < FEW.k).any()
    # the model is frozen: no gradients accumulate in it and nothing moves
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


def test_pair_model_uses_the_qa_eps_and_matches_reference(picked):
    labels = [i % 3 for i in range(len(picked["rows"]["label"]))]
    rows = dict(picked["rows"], label=labels, query_ids=picked["rows"]["ids"])  # a pair task's batch has a query
    model = ToyPair(len(picked["data"].vocab.itos)).eval()
    batch = collate(rows)
    columns, shared = analyse(model, batch, convergence=None)
    expected, _ = analyse(model, batch, how=adversarial.reference, convergence=None)
    assert_same(columns, expected)
    eps = adversarial.epsilon(FEW, shared)
    assert eps == adversarial.EPS_PAIR == 0.05
    check_invariants(columns, shared.lengths.tolist(), FEW, eps)
    assert adversarial.epsilon(AdversarialParams(eps=0.2), shared) == 0.2
    assert (columns["tvd_at_jsd"] > adversarial.EPS_CLASSIFICATION).any()  # the larger budget is used


def test_reference_stops_by_the_same_rule(picked):
    model = model_for(picked, "cnn", "dot")
    params = AdversarialParams(k=3, steps=150)
    batch = collate(picked["rows"])
    columns, _ = analyse(model, batch, params, convergence=QUICK)
    expected, _ = analyse(model, batch, params, how=adversarial.reference, convergence=QUICK)
    assert_same(columns, expected)
    assert len(set(columns["steps_run"][1:].tolist())) > 1  # instances stopped at different steps


def test_defaults_keep_every_row_in_bounds(picked):
    model = model_for(picked, "lstm", "dot")
    params = AdversarialParams()
    assert (params.k, params.steps, params.lr, params.lam, params.init_scale) == (5, 500, 0.01, 500.0, 3.0)
    columns, shared = analyse(model, collate(picked["rows"]), params)
    assert adversarial.epsilon(params, shared) == adversarial.EPS_CLASSIFICATION == 0.01
    check_invariants(columns, shared.lengths.tolist(), params, 0.01)
    alone, _ = analyse(model, collate(select(picked["rows"], [0])), params)  # only T = 1: nothing to optimise
    assert_same(alone, {name: values[:1] for name, values in columns.items()}, atol=0)


def test_output_that_ignores_attention(picked):
    """Any alpha gives the same output, so nothing holds the adversaries back: they approach the best any
    distribution can do, all mass on the model's least attended position (JSD(e_j, alpha), near ln 2).
    Attention is sharpened as training would: against a uniform alpha that bound is only 0.38 for T = 4."""
    model = model_for(picked, "cnn", "dot")
    with torch.no_grad():
        model.classifier.weight.zero_()  # logits = bias whatever the context
        model.attention.learned_query.mul_(SHARPEN)
    params = AdversarialParams(k=3)
    columns, shared = analyse(model, collate(picked["rows"]), params)
    lengths = shared.lengths.numpy()
    assert (columns["tvd_at_jsd"] == 0).all()
    assert (columns["n_within_eps"] == params.k).all()
    assert (columns["jsd_eps_max"][lengths >= 4] > 0.5).all()
    one_hots = torch.eye(shared.alpha.shape[1])[None]  # (1, T, T)
    bound = jsd(one_hots, shared.alpha[:, None, :]).masked_fill(~shared.encoded.mask, 0.0).amax(-1)  # (B,)
    assert (columns["jsd_eps_max"] >= bound.numpy() - 0.05).all()


def test_rows_are_seeded_and_independent_of_grouping_and_padding(picked):
    """Early stopping on: each instance stops on its own objective, so its row is the same in any batch."""
    rows = picked["rows"]
    model = model_for(picked, "cnn", "dot")
    params = AdversarialParams(k=3, steps=150)
    eight = list(range(1, 9))
    together, _ = analyse(model, collate(select(rows, eight)), params, convergence=QUICK)
    assert len(set(together["steps_run"].tolist())) > 1  # freezing is exercised
    halves = [
        analyse(model, collate(select(rows, half)), params, convergence=QUICK)[0] for half in (eight[:4], eight[4:])
    ]
    assert_same(together, {name: np.concatenate([h[name] for h in halves]) for name in together}, atol=1e-6)
    alone = [analyse(model, collate(select(rows, [i])), params, convergence=QUICK)[0] for i in eight]  # no padding
    assert_same(together, {name: np.concatenate([a[name] for a in alone]) for name in together}, atol=1e-6)

    again, _ = analyse(model_for(picked, "cnn", "dot"), collate(select(rows, eight)), params, convergence=QUICK)
    assert_same(again, together, atol=0)
    # the starting logits are drawn per (cell, instance): another cell starts elsewhere
    other, _ = analyse(model, collate(select(rows, eight)), params, cell="another-cell", convergence=QUICK)
    assert not np.array_equal(other["jsd_eps_max"], together["jsd_eps_max"])


def test_early_stopping_saves_steps_and_keeps_the_result(picked):
    model = model_for(picked, "cnn", "additive")
    params = AdversarialParams(k=3, steps=2000)
    batch = collate(picked["rows"])
    stopped, shared = analyse(model, batch, params)
    full, _ = analyse(model, batch, params, convergence=None)
    steps = stopped["steps_run"][1:]  # row 0 has T = 1
    assert (steps < params.steps).mean() >= 0.5 and steps.mean() < 0.8 * params.steps
    assert (steps % adversarial.CONVERGENCE.window == 0).all()
    np.testing.assert_allclose(stopped["jsd_eps_max"], full["jsd_eps_max"], rtol=0, atol=0.01)
    check_invariants(stopped, shared.lengths.tolist(), params, adversarial.EPS_CLASSIFICATION)


def test_the_grid_sets_the_early_stopping_rule(picked):
    """`stop_window: 0` spends every step on every instance; a coarse rule from the params stops them at its
    own windows, exactly as the same rule passed in code does."""
    model = model_for(picked, "cnn", "additive")
    batch = collate(picked["rows"])
    never, _ = analyse(model, batch, AdversarialParams(k=3, steps=120, stop_window=0))
    assert (never["steps_run"][1:] == 120).all()  # row 0 has T = 1
    coarse = AdversarialParams(k=3, steps=400, stop_window=20, stop_rtol=0.5)
    stopped, _ = analyse(model, batch, coarse)
    assert (stopped["steps_run"][1:] % 20 == 0).all() and (stopped["steps_run"][1:] < 400).all()
    same, _ = analyse(model, batch, coarse, convergence=adversarial.Convergence(window=20, rtol=0.5))
    np.testing.assert_array_equal(stopped["steps_run"], same["steps_run"])


def test_run_matches_reference_over_the_full_budget(picked):
    """J&W's 500 steps: the written-out gradient and the fused AMSGrad follow autograd's trajectory, not only
    its first steps (the hinge could amplify rounding; it does not)."""
    model = model_for(picked, "lstm", "additive")
    batch = collate(select(picked["rows"], [2, 5, 9, 13]))
    params = AdversarialParams(k=5)
    columns, _ = analyse(model, batch, params, convergence=None)
    expected, _ = analyse(model, batch, params, how=adversarial.reference, convergence=None)
    assert_same(columns, expected, atol=1e-3)
    assert (columns["steps_run"] == params.steps).all()


def test_candidates_within_the_tie_tolerance_keep_the_first(picked):
    # Adversaries that saturate end within float rounding of each other; the float maximum picked one of
    # them by the last bits of h. Within CANDIDATE_TIE of the top JSD, the first candidate is kept.
    model = model_for(picked, "cnn", "dot")
    with torch.no_grad():
        model.classifier.weight.zero_()  # every candidate is within eps
    shared = forward_once(model, collate(select(picked["rows"], range(4, 8))))
    t = shared.alpha.shape[1]
    peak = shared.alpha.masked_fill(~shared.encoded.mask, 2.0).argmin(-1)  # each row's least attended item
    logits = torch.zeros(len(peak), 3, t)
    for candidate, height in enumerate((5.0, 5.0 + 2e-5, 0.0)):  # two near one-hots on it, then uniform
        logits[torch.arange(len(peak)), candidate, peak] = height
    logits = logits.masked_fill(~shared.encoded.mask[:, None, :], float("-inf"))
    columns = adversarial._columns(model, shared, logits, 0.01, torch.zeros(len(peak)), 3)
    jsds = np.stack(columns["candidate_jsd"])
    assert (jsds[:, 1] > jsds[:, 0]).all()  # the float maximum would keep the second
    assert (jsds[:, 1] - jsds[:, 0] < adversarial.CANDIDATE_TIE * jsds[:, 1]).all()
    for b, chosen in enumerate(columns["alpha_eps_max"]):
        positions = shared.encoded.mask[b].nonzero()[:, 0]
        first = torch.softmax(logits[b, 0, positions], -1).double()
        np.testing.assert_allclose(chosen, first.numpy(), rtol=0, atol=0)
        reference = adversarial._reference_select(model, shared, b, positions, logits[b][:, positions], 0.01)
        assert reference[0] == pytest.approx(columns["jsd_eps_max"][b], abs=1e-6)
        np.testing.assert_allclose(reference[5], first.numpy(), rtol=0, atol=1e-7)
