"""Every analysis that ranks importances gives the same rows however it is computed: with 1 or 2 torch
threads, with the batch's instances in reverse order, split into other batches, each instance alone (no
padding), or beside a long instance (much more padding).

Float kernels can round differently under each of these (here padding and batch shapes do; two threads and
the reversed order leave these tiny models bit for bit alike, and are kept for machines where they do not),
so importances that are mathematically equal (a token repeated in an instance under the order-free
`average` / `noenc` encoders; these rows repeat token 1 up to five times) come out unequal in different ways;
the tie rule of `gridlab.analyses.ranking` must make every rank-derived column come out identical
(`test_without_the_tie_rule_some_rank_changes` checks that the variants do move tied values enough to matter).

Rank-derived columns (taus and their p-values, erasure counts and fractions, indices, flips, AUCs,
precisions) must be exactly equal. Continuous columns (entropies, JS divergences, attention weights, all in
[0, 1]) are compared with an absolute tolerance: FLOAT_ATOL = 1e-6, about 10 float32 ulps and ten times the
largest deviation they show here (9e-8); the entropies of the TVD importances at TVD_ENTROPY_ATOL = 1e-5, as
a TVD is a difference of nearly equal probabilities whose rounding is large next to the TVD itself on these
untrained models (their entropies move by up to 2.6e-6).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from gridlab.analyses import ranking
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.erasure_multi import ErasureMultiParams
from gridlab.analyses.erasure_multi import compute as erasure_multi
from gridlab.analyses.erasure_single import compute as erasure_single
from gridlab.analyses.importance_correlation import compute as importance_correlation
from gridlab.analyses.rationale_recovery import RationaleRecoveryParams
from gridlab.analyses.rationale_recovery import compute as rationale_recovery
from gridlab.analyses.sparsity_importance import SparsityParams
from gridlab.analyses.sparsity_importance import compute as sparsity_importance
from gridlab.catalog.analyses import NoParams, Params
from gridlab.data.batching import collate
from gridlab.models.classifier import AttentionClassifier

from .conftest import perturbed_model, short_synthetic_rows

CELL = "cell-under-test"
COUNT = 12
FLOAT_ATOL = 1e-6
TVD_ENTROPY_ATOL = 1e-5
ENCODERS = ["average", "noenc", "lstm", "cnn"]
RANKING_ANALYSES = {  # every analysis that ranks importances, with its parameters
    importance_correlation.ID: (importance_correlation, NoParams()),
    sparsity_importance.ID: (sparsity_importance, SparsityParams()),
    erasure_multi.ID: (erasure_multi, ErasureMultiParams(exact_max_len=6)),
    erasure_single.ID: (erasure_single, NoParams()),
    rationale_recovery.ID: (rationale_recovery, RationaleRecoveryParams()),
}
CONTINUOUS = {  # columns that are not derived from ranks -> their absolute tolerance
    **{name: FLOAT_ATOL for name in sparsity_importance.INFO.rows.names if name.startswith("entropy")},
    "entropy_dy_x": TVD_ENTROPY_ATOL,
    "entropy_dy_h": TVD_ENTROPY_ATOL,
    **{name: FLOAT_ATOL for name in ("js_top", "js_rand", "delta_js", "delta_alpha")},
}
EVERYONE = list(range(COUNT))
WIDE = COUNT  # the row index of a long instance (every test row's tokens in one), analysed beside the others
VARIANTS = {  # name -> (batches as lists of row indices, torch threads)
    "two_threads": ([EVERYONE], 2),
    "reversed": ([EVERYONE[::-1]], 1),
    "regrouped": ([[5, 0, 9, 3], [11, 1, 2], [4, 10, 6, 7, 8]], 1),
    "alone": ([[i] for i in EVERYONE], 1),
    "padded": ([[WIDE, *EVERYONE[::-1]]], 2),
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The COUNT short rows, and at index WIDE one long instance made of all their tokens."""
    synthetic = short_synthetic_rows(tmp_path_factory.mktemp("rank_invariance"), n_test=COUNT, rationale=True)
    rows = synthetic["rows"]
    wide = {"ids": sum(rows["ids"], []), "label": 0, "instance_id": 10_000, "rationale": sum(rows["rationale"], [])}
    return {**synthetic, "rows": {key: [*values, wide[key]] for key, values in rows.items()}}


@pytest.fixture(scope="module")
def models(synthetic) -> dict[str, AttentionClassifier]:
    built = {}
    for encoder in ENCODERS:
        model = perturbed_model(synthetic["data"], encoder, "additive")
        with torch.no_grad():
            model.classifier.bias.mul_(0.01)  # decisions near the boundary, so that erasures flip some
        built[encoder] = model
    return built


@pytest.fixture(scope="module")
def baseline(synthetic, models) -> dict[tuple[str, str], dict[int, dict]]:
    """(analysis, encoder) -> rows of the whole batch in order, one thread (computed once per pair)."""
    return {
        (analysis, encoder): rows_of(analysis, models[encoder], synthetic["rows"], [EVERYONE], threads=1)
        for analysis in RANKING_ANALYSES
        for encoder in ENCODERS
    }


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def rows_of(analysis: str, model: AttentionClassifier, rows: dict, batches: list[list[int]], threads: int) -> dict:
    """instance_id -> {column: value} of the test rows (not WIDE), the batches run in turn, everything under
    `threads` torch threads."""
    module, params = RANKING_ANALYSES[analysis]
    out: dict[int, dict] = {}
    with torch_threads(threads):
        for batch in batches:
            picked = {key: [values[i] for i in batch] for key, values in rows.items()}
            columns = module.run(context(model, params), forward_once(model, collate(picked)))
            for row, index in enumerate(batch):
                if index != WIDE:
                    out[picked["instance_id"][row]] = {name: values[row] for name, values in columns.items()}
    return out


def context(model: AttentionClassifier, params: Params) -> AnalysisContext:
    return AnalysisContext(CELL, model, torch.device("cpu"), params)


def test_the_rows_repeat_tokens(synthetic):
    # the case the tie rule exists for: a token several times in one instance, so tied importances
    repeated = [len(ids) - len(set(ids)) for ids in synthetic["rows"]["ids"][:COUNT]]
    assert sum(r > 0 for r in repeated) >= 6 and max(repeated) >= 3


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("analysis", RANKING_ANALYSES)
def test_rows_do_not_depend_on_threads_order_or_batching(synthetic, models, baseline, analysis, encoder, variant):
    expected = baseline[analysis, encoder]
    batches, threads = VARIANTS[variant]
    actual = rows_of(analysis, models[encoder], synthetic["rows"], batches, threads)
    assert actual.keys() == expected.keys()
    for instance_id, row in expected.items():
        for name, value in row.items():
            other = actual[instance_id][name]
            if name in CONTINUOUS and value is not None and other is not None:
                assert other == pytest.approx(value, rel=0, abs=CONTINUOUS[name]), (instance_id, name)
            else:
                assert other == value, (instance_id, name)
    ranked = [name for name in next(iter(expected.values())) if name not in CONTINUOUS]
    assert any(row[name] is not None for row in expected.values() for name in ranked), "vacuous: all null"


def test_without_the_tie_rule_some_rank_changes(synthetic, models, baseline, monkeypatch):
    """Guards the test above against being vacuous: with the tolerances at 0 (values ranked as computed) some
    rank-derived column differs between the baseline and a variant, so the variants do move tied values."""
    monkeypatch.setattr(ranking, "RTOL", 0.0)
    monkeypatch.setattr(ranking, "PROBABILITY_RTOL", 0.0)
    changed = set()
    for analysis in (importance_correlation.ID, sparsity_importance.ID):
        for encoder in ("average", "noenc"):
            exact = rows_of(analysis, models[encoder], synthetic["rows"], [EVERYONE], threads=1)
            for variant in ("alone", "padded"):
                other = rows_of(analysis, models[encoder], synthetic["rows"], *VARIANTS[variant])
                changed |= {
                    (analysis, encoder, variant)
                    for instance_id, row in exact.items()
                    for name, value in row.items()
                    if name not in CONTINUOUS and other[instance_id][name] != value
                }
    assert changed, "no variant moved a rank: the invariance test proves nothing on this machine"


def test_the_baseline_is_reproducible(synthetic, models, baseline):
    # the same computation twice gives bit-identical rows: the comparisons above test the variants alone
    for analysis in RANKING_ANALYSES:
        again = rows_of(analysis, models["average"], synthetic["rows"], [EVERYONE], threads=1)
        assert again == baseline[analysis, "average"], analysis


def test_short_synthetic_rows_cut_rationale_with_ids(tmp_path: Path):
    rows = short_synthetic_rows(tmp_path, n_test=3, rationale=True)["rows"]
    assert [len(ids) for ids in rows["ids"][:2]] == [1, 2]
    assert [len(flags) for flags in rows["rationale"]] == [len(ids) for ids in rows["ids"]]
