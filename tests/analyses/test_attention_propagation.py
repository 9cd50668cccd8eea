"""Attention rollout and flow (`importance.propagated_attention`): two known layers worked by hand, padding,
flow != rollout where paths share capacity, norm-based maps worked by hand, and a real Transformer's scores
independent of the batch."""

from __future__ import annotations

import pytest
import torch

from gridlab.analyses.common import forward_once
from gridlab.analyses.importance.propagated_attention import attention_flow, attention_rollout, transformer_maps
from gridlab.config.schema import CellConfig, ModelConfig
from gridlab.data.batching import collate
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model
from gridlab.models.transformer import SelfAttentionLayer, TransformerEncoder

# Layer 1: A = [[.6, .4], [.2, .8]] -> 0.5 A + 0.5 I = [[.8, .2], [.1, .9]]
# Layer 2: A = [[1, 0], [.5, .5]]   -> [[1, 0], [.25, .75]]
FIRST = [[0.6, 0.4], [0.2, 0.8]]
SECOND = [[1.0, 0.0], [0.5, 0.5]]


def padded(layer: list[list[float]]) -> torch.Tensor:
    """(1, 1, 3, 3): the 2 x 2 map plus a padded slot no query attends to (its query row attends anyway)."""
    full = torch.zeros(3, 3, dtype=torch.float64)
    full[:2, :2] = torch.tensor(layer, dtype=torch.float64)
    full[2, :2] = 0.5
    return full[None, None]


MASK = torch.tensor([[True, True, False]])
ALPHA = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)


def test_rollout_of_two_known_layers():
    """R = [[1, 0], [.25, .75]] @ [[.8, .2], [.1, .9]] = [[.8, .2], [.275, .725]]; alpha (.5, .5) reads
    (.5375, .4625); the padded slot scores 0."""
    scores = attention_rollout([padded(FIRST), padded(SECOND)], MASK, ALPHA)
    assert scores[0].tolist() == pytest.approx([0.5375, 0.4625, 0.0], abs=1e-12)


def test_flow_of_one_known_layer_differs_from_rollout():
    """One layer [[.8, .2], [.1, .9]], pooling capacities (.5, .5). From input 0: min(.8, .5) into slot 0 and
    min(.1, .5) into slot 1, 0.6 in all; from input 1: min(.2, .5) + min(.9, .5) = 0.7. Rollout gives
    (.45, .55): the pooling node cannot take more than .5 from either slot, which flow respects."""
    flow = attention_flow([padded(FIRST)], MASK, ALPHA)
    assert flow[0].tolist() == pytest.approx([0.6, 0.7, 0.0], abs=1e-6)
    rollout = attention_rollout([padded(FIRST)], MASK, ALPHA)
    assert rollout[0].tolist() == pytest.approx([0.45, 0.55, 0.0], abs=1e-12)


def test_flow_of_two_known_layers():
    """Layers as above (after the mix). From input 0: L1 slot 0 gets .8, L1 slot 1 gets .1. L2 slot 0 is fed
    only by L1 slot 0 (capacity 1) and passes at most .5 to the output; L1 slot 0's other .3 can reach L2 slot
    1 through capacity .25, and L1 slot 1's .1 through .75: .35 more, under L2 slot 1's .5. Total .85. From
    input 1: L1 slot 0 gets .2, all of it to L2 slot 0 (.2 out); L1 slot 1 gets .9, .75 of it to L2 slot 1,
    capped at .5 out. Total .7. (networkx's maximum_flow_value agrees.)"""
    flow = attention_flow([padded(FIRST), padded(SECOND)], MASK, ALPHA)
    assert flow[0].tolist() == pytest.approx([0.85, 0.7, 0.0], abs=1e-6)


def test_value_norms_per_head():
    """hidden 4, 2 heads of 2; W_O = diag(1, 2, 3, 4), so head 0 reads columns 0-1 and head 1 columns 2-3:
    f_0(v) = (v_0, 2 v_1, 0, 0), f_1(v) = (0, 0, 3 v_0, 4 v_1). Values (3, 2) and (1, 1) give norms
    sqrt(9 + 16) = 5 and 5; (0, 1) and (1, 0) give 2 and 3."""
    layer = SelfAttentionLayer(hidden=4, heads=2)
    with torch.no_grad():
        layer.out.weight.copy_(torch.diag(torch.tensor([1.0, 2.0, 3.0, 4.0])))
    values = torch.tensor([[[3.0, 2.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 0.0]]])[None]  # (1, H, T, 2)
    assert layer.value_norms(values)[0].flatten().tolist() == pytest.approx([5.0, 2.0, 5.0, 3.0])


def test_norm_rollout_of_one_known_layer():
    """One layer, one head, A = [[.6, .4], [.2, .8]], key norms (1, 3) (W_O = I, values (1, 0) and (0, 3)):
    the norm map [[.6, 1.2], [.2, 2.4]], rows normalised [[1/3, 2/3], [1/13, 12/13]], mixed with the residual
    [[2/3, 1/3], [1/26, 25/26]]; read by (.5, .5): ((2/3 + 1/26) / 2, (1/3 + 25/26) / 2). Plain rollout of
    the same attention gives (.45, .55): the large vector of token 1 counts for more."""
    encoder = TransformerEncoder(input_dim=2, hidden=2, layers=1, heads=1)
    with torch.no_grad():
        encoder.layers[0].out.weight.copy_(torch.eye(2))
    encoder.attention_maps = [torch.tensor([[0.6, 0.4], [0.2, 0.8]])[None, None]]
    encoder.attention_values = [torch.tensor([[1.0, 0.0], [0.0, 3.0]])[None, None]]
    norms = encoder.norm_maps()
    assert norms[0][0, 0].flatten().tolist() == pytest.approx([0.6, 1.2, 0.2, 2.4])
    mask, pooled = torch.tensor([[True, True]]), torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    scores = attention_rollout(norms, mask, pooled)
    assert scores[0].tolist() == pytest.approx([(2 / 3 + 1 / 26) / 2, (1 / 3 + 25 / 26) / 2], abs=1e-7)


@pytest.fixture(scope="module")
def transformer(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("propagation")
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=6, min_length=3, max_length=12))
    data = load_dataset("synthetic", tmp, tmp / "cache", config)
    model_config = ModelConfig(embedding_dim=12, hidden_size=8, attention_size=8, transformer_heads=2)
    torch.manual_seed(0)
    model = build_model(CellConfig(dataset="synthetic", encoder="transformer", model=model_config), data).eval()
    rows = data.splits["test"].select(["ids", "label", "instance_id"]).to_pydict()
    return model, rows


def test_a_transformer_scores_do_not_depend_on_the_batch(transformer):
    model, rows = transformer

    def scores(part: slice):
        shared = forward_once(model, collate({k: v[part] for k, v in rows.items()}))
        maps = transformer_maps(model)
        assert maps is not None
        mask, alpha = shared.encoded.mask, shared.alpha.detach()
        rollout, flow = attention_rollout(maps, mask, alpha), attention_flow(maps, mask, alpha)
        assert (rollout[~mask] == 0).all() and (flow[~mask] == 0).all()
        assert (rollout.sum(-1) <= 1 + 1e-6).all()  # the rest reached <sos>/<eos>
        return [r[m] for r, m in zip(rollout, mask)], [f[m] for f, m in zip(flow, mask)]

    whole = scores(slice(None))
    alone = [scores(slice(i, i + 1)) for i in range(len(rows["ids"]))]
    for i, (rollout, flow) in enumerate(alone):
        torch.testing.assert_close(whole[0][i], rollout[0], atol=1e-6, rtol=0)
        torch.testing.assert_close(whole[1][i], flow[0], atol=1e-6, rtol=0)


def test_rollout_does_not_apply_to_a_bilstm(transformer, tmp_path):
    config = DataConfig(synthetic=SyntheticConfig(n_train=20, n_dev=5, n_test=2, min_length=3, max_length=6))
    data = load_dataset("synthetic", tmp_path, tmp_path / "cache", config)
    model = build_model(CellConfig(dataset="synthetic", encoder="lstm"), data)
    assert transformer_maps(model) is None
