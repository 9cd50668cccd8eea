"""The zoo on CUDA (`device: auto` on a GPU trial): same outputs as on CPU, and training steps run there."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gridlab.analyses.common import forward_once
from gridlab.analyses.importance import gradient_importance, leave_one_out
from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.data.synthetic import SyntheticConfig
from gridlab.models.factory import build_model
from gridlab.training.loop import evaluate, fit

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("encoder", ["lstm", "gru", "cnn", "average", "noenc", "transformer"])
@pytest.mark.parametrize("projection", ["softmax", "sparsemax", "entmax15", "sparsegen"])
def test_cuda_matches_cpu_and_trains(tmp_path: Path, encoder: str, projection: str):
    data = load_dataset("synthetic", tmp_path, tmp_path / "c", DataConfig(synthetic=SyntheticConfig(n_train=256)))
    config = CellConfig(
        dataset="synthetic",
        encoder=encoder,
        projection=projection,
        projection_lambda=0.2 if projection == "sparsegen" else None,
        model=ModelConfig(embedding_dim=16, hidden_size=16, attention_size=16),
        train=TrainConfig(epochs=1, batch_size=64),
    )
    model = build_model(config, data).eval()
    batch = next(iterate_batches(data.splits["test"], 32))
    on_cpu = model(batch)
    cuda = torch.device("cuda")
    torch.testing.assert_close(model.to(cuda)(batch.to(cuda)).cpu(), on_cpu, atol=1e-4, rtol=1e-4)
    fit(model, data, config, cuda)
    assert next(model.parameters()).is_cuda
    assert 0.0 <= evaluate(model, data.splits["test"], cuda)["accuracy"] <= 1.0


def test_cuda_bilstm_gradient_and_leave_one_out_match_the_cpu_scan(tmp_path: Path):
    # A CPU's shared pass is the written-out BiLSTM scan; CUDA's is nn.LSTM's fused kernel with the gates
    # rebuilt from its states on first use (analyses/bilstm.py): the analyses must agree across both.
    data = load_dataset("synthetic", tmp_path, tmp_path / "c", DataConfig(synthetic=SyntheticConfig(n_train=64)))
    config = CellConfig(
        dataset="synthetic", encoder="lstm", model=ModelConfig(embedding_dim=16, hidden_size=16, attention_size=16)
    )
    model = build_model(config, data).eval()
    batch = next(iterate_batches(data.splits["test"], 32))
    on_cpu = forward_once(model, batch)
    assert on_cpu.lstm is not None
    expected = (gradient_importance(model, batch, on_cpu), leave_one_out(model, batch, on_cpu))
    cuda = torch.device("cuda")
    model, batch = model.to(cuda), batch.to(cuda)
    shared = forward_once(model, batch)
    assert shared.lstm is None
    for analysis, values in zip((gradient_importance, leave_one_out), expected, strict=True):
        torch.testing.assert_close(analysis(model, batch, shared).cpu(), values, atol=1e-4, rtol=1e-4)
