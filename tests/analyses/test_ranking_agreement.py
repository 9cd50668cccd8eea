"""`ranking_agreement` (docs/analyses.md#ranking_agreement): tau-b and top-k overlap worked by hand, the batched
tau-b equal to scipy's with ties and padding, `run` == `reference` on small real models, rollout skipped
without a Transformer, and `summarize`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import kendalltau

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import SharedPass, forward_once
from gridlab.analyses.ranking_agreement import RankingAgreementParams
from gridlab.analyses.ranking_agreement import compute as ranking_agreement
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.classifier import Encoded
from gridlab.models.factory import build_model

CELL = "cell-under-test"
TINY = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("agreement")
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=8, min_length=3, max_length=12))
    return load_dataset("synthetic", tmp, tmp / "cache", config)


@pytest.fixture(scope="module")
def rows(synthetic) -> dict:
    rows = synthetic.splits["test"].select(["ids", "label", "instance_id"]).to_pydict()
    rows["ids"][0] = rows["ids"][0][:1]  # T = 1: tau undefined, overlap 1
    return rows


def model_of(synthetic, encoder: str):
    torch.manual_seed(0)
    model = build_model(CellConfig(dataset="synthetic", encoder=encoder, model=TINY), synthetic).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    return model


def context(model, **params) -> AnalysisContext:
    return AnalysisContext(CELL, model, torch.device("cpu"), RankingAgreementParams(**params))


def test_tau_b_by_hand_with_ties_and_padding():
    """a = (3, 1, 2), b = (3, 2, 2) and a padded slot. Pairs (0,1): a +, b + (concordant); (0,2): +, + (c);
    (1,2): a -, b tie. C - D = 2; untied pairs: 3 in a, 2 in b: tau-b = 2 / sqrt(6)."""
    a = torch.tensor([[3.0, 1.0, 2.0, 9.0]], dtype=torch.float64)
    b = torch.tensor([[3.0, 2.0, 2.0, -9.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, False]])
    tau = ranking_agreement.batched_tau_b(a, b, mask)
    assert tau.item() == pytest.approx(2 / math.sqrt(6))


def test_batched_tau_b_equals_scipy_on_tied_ranks():
    generator = torch.Generator().manual_seed(3)
    a = torch.randint(0, 4, (40, 15), generator=generator).double()  # many ties
    b = torch.randint(0, 6, (40, 15), generator=generator).double()
    lengths = torch.randint(0, 16, (40,), generator=generator)
    mask = torch.arange(15)[None, :] < lengths[:, None]
    tau = ranking_agreement.batched_tau_b(a, b, mask)
    for i in range(40):
        x, y = a[i][mask[i]].numpy(), b[i][mask[i]].numpy()
        if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
            assert math.isnan(tau[i])
        else:
            assert tau[i].item() == pytest.approx(kendalltau(x, y, variant="b").statistic, abs=1e-12)


def test_top_k_overlap_and_tau_by_hand(synthetic):
    """A stub pass whose items have value norms ||W h_t|| = (1, 1, 4, 4) and alpha = (0.4, 0.3, 0.2, 0.1):
    norm_attention = (0.4, 0.3, 0.8, 0.4). Top-2: attention {0, 1}, norm_attention {2, 0} (0.4 ties 0.4: the
    earlier first): overlap 1/2. Tie ranks (3, 2, 1, 0) and (1, 0, 2, 1): pairs (0,1) concordant, (0,2)
    discordant, (0,3) tied in the second, (1,2) d, (1,3) d, (2,3) c: tau-b = (2 - 3) / sqrt(6 * 5)."""
    model = model_of(synthetic, "noenc")
    w = model.classifier.weight.detach()
    u = w[0] / (w @ w[0]).norm()  # ||W u|| = 1
    h = torch.tensor([1.0, 1.0, 4.0, 4.0])[None, :, None] * u[None, None, :]  # (1, 4, d): ||W h_t|| as above
    alpha = torch.tensor([[0.4, 0.3, 0.2, 0.1]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    probs = torch.tensor([[0.6, 0.4]])
    batch = collate({"ids": [[5, 6, 7, 8]], "label": [0], "instance_id": [0]})
    shared = SharedPass(batch, Encoded(h, mask), alpha, probs.log(), probs, torch.tensor([0]))
    columns = ranking_agreement.run(context(model, rankings=["attention", "norm_attention"], k=2), shared)
    assert columns["overlap__attention__norm_attention"][0] == pytest.approx(0.5)
    assert columns["tau__attention__norm_attention"][0] == pytest.approx(-1 / math.sqrt(30))
    assert columns["tau__attention__gradient"][0] is None  # not asked for


@pytest.mark.parametrize("encoder", ["lstm", "transformer"])
def test_run_equals_the_per_instance_reference(synthetic, rows, encoder):
    model = model_of(synthetic, encoder)
    rankings = ["attention", "random", "gradient", "leave_one_out", "norm_attention", "integrated_gradients"]
    if encoder == "transformer":
        rankings += ["attention_rollout", "attention_flow", "norm_rollout"]
    ctx = context(model, rankings=rankings, ig_steps=8, k=3)
    batch = collate(rows)
    run = ranking_agreement.run(ctx, forward_once(model, batch))
    reference = ranking_agreement.reference(ctx, forward_once(model, batch))
    assert set(run) == set(reference) == set(ranking_agreement.INFO.rows.names)
    for name in ranking_agreement.INFO.rows.names:
        for a, b in zip(run[name], reference[name]):
            assert (a is None) == (b is None), name
            if a is not None:
                assert a == pytest.approx(b, abs=1e-12), name
    assert run["tau__attention__gradient"][0] is None and run["overlap__attention__gradient"][0] == 1.0  # T = 1
    assert run["tau__attention__gradient"][1] is not None
    skipped = run["tau__attention__attention_rollout"]
    assert all(v is None for v in skipped) == (encoder != "transformer")


def test_summarize_averages_each_pair():
    frame = pd.DataFrame({name: [None, None] for name in ranking_agreement.INFO.rows.names})
    frame["tau__attention__gradient"] = [0.5, None]
    frame["overlap__attention__gradient"] = [1.0, 0.0]
    summary = ranking_agreement.summarize(frame)
    assert summary["tau__attention__gradient_mean"] == 0.5
    assert summary["overlap__attention__gradient_mean"] == 0.5
    assert set(summary) == {"tau__attention__gradient_mean", "overlap__attention__gradient_mean"}
