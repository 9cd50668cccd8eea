"""The real pretrained model (all-MiniLM-L6-v2, `gridlab[pretrained]`) fine-tuned on a slice of SST on the CPU:
one epoch over 1,000 sentences under BERT's schedule lifts test accuracy from chance to well above it (3.7 min
on 2 busy cores), and
the analyses' shared pass runs on it with word items only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gridlab.analyses.common import forward_once
from gridlab.config.schema import CellConfig, ModelConfig, TrainConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.prepare import load_dataset
from gridlab.models.factory import build_model
from gridlab.training.loop import evaluate, fit

CPU = torch.device("cpu")
TEST_ROWS = 400


@pytest.mark.slow
def test_fine_tuning_all_minilm_on_a_slice_of_sst(shipped_sst: Path, tmp_path: Path):
    torch.set_num_threads(2)
    config = CellConfig(
        dataset="sst",
        encoder="pretrained",
        attention="dot",
        data=DataConfig(vocabulary="all"),  # every split's words, as a grid's pretrained cell reads them
        model=ModelConfig(pretrained="all-minilm-l6-v2", dropout=0.1),
        train=TrainConfig(
            epochs=1,
            batch_size=32,
            lr=5e-5,
            optimizer="adamw",
            warmup=0.1,
            weight_decay=0.01,
            amsgrad=False,
            clip_norm=1.0,
            max_train=1000,
            batching="shuffled",
        ),
    )
    config = config.model_copy(update={"data": DATASETS["sst"].resolve(config.data)})
    data = load_dataset("sst", shipped_sst, tmp_path, config.data)  # the whole release: 1,000 of its sentences
    test = data.splits["test"].slice(0, TEST_ROWS)
    model = build_model(config, data)
    untrained = evaluate(model, test, CPU)["accuracy"]
    fit(model, data, config, CPU)
    accuracy = evaluate(model, test, CPU)["accuracy"]
    # measured 0.772 on 2 busy cores (untrained 0.532); the grid's 2 epochs on all 6,920 sentences reach more
    assert accuracy >= 0.74, (
        f"test accuracy {accuracy:.3f} after one epoch on 1,000 sentences (untrained {untrained:.3f})"
    )

    batch = next(iterate_batches(test, 16))
    shared = forward_once(model.eval(), batch)
    assert torch.equal(shared.encoded.mask, batch.mask)  # every word of a short sentence is an item
    torch.testing.assert_close(shared.alpha.sum(-1), torch.ones(batch.size))
