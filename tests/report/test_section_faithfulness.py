"""The faithfulness section on hand-made rows: the AOPC table per ranking across two seeds (rankings not
computed left out), the agreement table (both directions in its frame, each pair once shown, pairs with a
skipped ranking left out), the heatmap, and what is missing said."""

from __future__ import annotations

import pandas as pd
import pytest

from gridlab.analyses.eraser import SCHEMA as ERASER_SCHEMA
from gridlab.analyses.ranking_agreement import SCHEMA as AGREEMENT_SCHEMA
from gridlab.report.sections.faithfulness import SECTION
from tests.rows import model_axes

AXES = model_axes()


def eraser_rows() -> pd.DataFrame:
    """Seed 0: attention AOPC comprehensiveness 0.2 and 0.4 (mean 0.3), sufficiency 0.1, 0.1; seed 1: 0.5 and
    0.0. gradient only in seed 0 (0.6). Every other ranking null."""
    values = {0: [(0.2, 0.1, 0.6), (0.4, 0.1, 0.6)], 1: [(0.5, 0.0, None)]}
    records = []
    for seed, instances in values.items():
        for i, (comprehensiveness, sufficiency, gradient) in enumerate(instances):
            row: dict = {**AXES, "cell_id": f"c{seed}", "seed": seed, "instance_id": i, "length": 5}
            row.update({name: None for name in ERASER_SCHEMA.names})
            row.update(
                aopc_comprehensiveness_attention=comprehensiveness,
                aopc_sufficiency_attention=sufficiency,
                aopc_comprehensiveness_gradient=gradient,
                aopc_sufficiency_gradient=gradient,
                bins=[0.1, 0.5],
                integrated_gradients_gap=1e-4,
            )
            records.append(row)
    return pd.DataFrame.from_records(records)


def agreement_rows() -> pd.DataFrame:
    """BiLSTM seeds 0 and 1: attention-gradient tau 0.2, 0.4. A Transformer cell also has rollout (tau 0.5
    against attention), which the BiLSTM skips."""
    records = []
    for seed, tau in ((0, 0.2), (1, 0.4)):
        row: dict = {**AXES, "cell_id": f"c{seed}", "seed": seed, "instance_id": 0, "length": 5}
        row.update({name: None for name in AGREEMENT_SCHEMA.names})
        row.update({"tau__attention__gradient": tau, "overlap__attention__gradient": 1.0})
        records.append(row)
    row = {**AXES, "encoder": "transformer", "cell_id": "t0", "seed": 0, "instance_id": 0, "length": 5}
    row.update({name: None for name in AGREEMENT_SCHEMA.names})
    row.update({"tau__attention__gradient": 0.1, "overlap__attention__gradient": 0.5})
    row.update({"tau__attention__attention_rollout": 0.5, "overlap__attention__attention_rollout": 1.0})
    records.append(row)
    return pd.DataFrame.from_records(records)


def test_aopc_and_agreement(fake_inputs):
    output = SECTION.build(fake_inputs({"eraser": eraser_rows(), "ranking_agreement": agreement_rows()}))
    assert [a.id for a in output.artifacts] == ["eraser_aopc", "ranking_agreement", "ranking_agreement_heatmap"]
    aopc = output.artifacts[0].frame
    assert list(aopc["ranking"]) == ["attention", "gradient"]
    attention = aopc.iloc[0]
    assert attention["aopc_comprehensiveness"] == pytest.approx((0.3 + 0.5) / 2)
    assert attention["aopc_sufficiency"] == pytest.approx(0.05)
    assert (attention["n_seeds"], attention["n_instances"]) == (2, 3)
    assert aopc.iloc[1]["aopc_comprehensiveness"] == pytest.approx(0.6)
    assert "completeness gap: mean 0.0001" in output.artifacts[0].caption
    agreement = output.artifacts[1].frame
    lstm = agreement[agreement["encoder"] == "lstm"]
    assert sorted(zip(lstm["first"], lstm["second"])) == [("attention", "gradient"), ("gradient", "attention")]
    assert lstm["tau"].tolist() == pytest.approx([0.3, 0.3])
    transformer = agreement[agreement["encoder"] == "transformer"]
    assert len(transformer) == 4  # both pairs, both directions
    shown = output.artifacts[1].display  # each pair once
    assert sorted(zip(shown["encoder"], shown["first"], shown["second"])) == [
        ("lstm", "attention", "gradient"),
        ("transformer", "attention", "attention_rollout"),
        ("transformer", "attention", "gradient"),
    ]
    assert output.missing == []


def test_missing_rows(fake_inputs):
    output = SECTION.build(fake_inputs({}))
    assert output.artifacts == [] and len(output.missing) == 2
